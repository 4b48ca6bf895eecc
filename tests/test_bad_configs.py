"""Every bad config is refused before any GPU work with one message that names the key
path and what is expected: never a traceback, never a silent pass. Each case is a config
file as a user would write it (read with ncuflow.files.read_config, then load_study)."""

import copy
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from ncuflow.errors import ConfigError
from ncuflow.files import read_config
from ncuflow.study.config import load_study

BASE = {
    "experiments": {
        "sq": {
            "family": "matmul",
            "sizes": {"M": [64, 1023], "N": "M", "K": "M"},
            "variants": {"naive": {"params": {"BLOCK_X": [16, 32], "BLOCK_Y": [8]}}},
        }
    }
}
GATHER = {
    "kernels_dir": str(ROOT / "tests" / "data" / "kernels"),
    "experiments": {"g": {"family": "gather", "sizes": {"n": 8, "m": 4},
                          "variants": {"numpy_gather": None}}},
}  # fmt: skip
EXP = "experiments.sq"
NAIVE = f"{EXP}.variants.naive"


def _set(config: dict, path: str, value: object) -> dict:
    config = copy.deepcopy(config)
    keys = path.split("/")
    node = config
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    if value is DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return config


DELETE = object()
E, S, V = "experiments", "experiments/sq/sizes", "experiments/sq/variants/naive"
# (where to change the base config, the value, the message's path, what it says)
CHANGES = [
    ("modes", "gpu", "modes", "unknown key 'modes'; valid: mode, capture, max_configurations"),
    ("mode", "GPU", "mode", "'GPU' is not a valid choice; valid: auto, gpu, replay"),
    ("capture", "../x", "capture", "'../x' holds characters that are not allowed"),
    ("capture", "a b", "capture", "'a b' holds characters that are not allowed"),
    ("seed", 1.5, "seed", "1.5 is a float, expected an integer"),
    ("seed", "x", "seed", "'x' is a str, not ['integer', 'null']"),
    ("seed", True, "seed", "True is a bool, not ['integer', 'null']"),
    ("kernels_dir", 3, "kernels_dir", "3 is an int, not ['string', 'null']"),
    ("kernels_dir", "/no/such/folder", "kernels_dir", "/no/such/folder is not a folder"),
    ("max_configurations", 0, "max_configurations", "0 is less than the minimum of 1"),
    ("seed", -1, "seed", "-1 is less than the minimum of 0"),
    ("timing/timeout_s", float("nan"), "timing.timeout_s", "nan is not a finite number"),
    ("timing/budget_s", float("nan"), "timing.budget_s", "nan is not a finite number"),
    ("timing/budget_s", float("inf"), "timing.budget_s", "inf is not a finite number"),
    ("max_jobs_per_variant", 0, "max_jobs_per_variant", "0 is less than the minimum of 1"),
    (f"{S}/M", [64, 1023, 64], f"{EXP}.sizes.M", "64 written twice in [64, 1023, 64]"),
    (f"{V}/params/BLOCK_X", [16, 32, 16], f"{NAIVE}.params.BLOCK_X", "16 written twice"),
    ("configurations_per_job", 0, "configurations_per_job", "0 is less than the minimum of 1"),
    ("configurations_per_job", 2.0, "configurations_per_job", "2.0 is a float, expected an integer"),
    ("experiments", {}, "experiments", "{} should be non-empty"),
    ("experiments", DELETE, "(top level)", "'experiments' is a required property"),
    ("timing/warmup", -1, "timing.warmup", "-1 is less than the minimum of 0"),
    ("timing/warmup", 3.0, "timing.warmup", "3.0 is a float, expected an integer; write 3"),
    ("timing/min_repeats", 0, "timing.min_repeats", "0 is less than the minimum of 1"),
    ("timing/target_ci_pct", 0, "timing.target_ci_pct", "0 is less than or equal to the minimum of 0"),
    ("timing/budget_s", "fast", "timing.budget_s", "'fast' is a str, not number"),
    ("timing/flush_l2", "yes", "timing.flush_l2", "'yes' is a str, not boolean"),
    ("timing/repeats", 20, "timing.repeats", "unknown key 'repeats'; valid: warmup, min_repeats"),
    ("ncu/path", 5, "ncu.path", "5 is an int, not string"),
    ("ncu/sections", ["SpeedOfLite"], "ncu.sections[0]", "unknown section 'SpeedOfLite'"),
    ("ncu/sections", ["SpeedOfLight\nrm -rf /"], "ncu.sections[0]", "holds characters that are not allowed"),
    ("ncu/sections", ["SpeedOfLight$(id)"], "ncu.sections[0]", "holds characters that are not allowed"),
    ("ncu/sections", "SpeedOfLight", "ncu.sections", "'SpeedOfLight' is a str, not array"),
    ("ncu/clock_control", "fast", "ncu.clock_control", "'fast' is not a valid choice; valid: none, base"),
    ("ncu/extra_metrics", ["dram__bytes;id"], "ncu.extra_metrics[0]", "holds characters that are not allowed"),
    ("ncu/extra_metrics", ["a\n"], "ncu.extra_metrics[0]", "holds characters that are not allowed"),
    ("ncu/verbose", True, "ncu.verbose", "unknown key 'verbose'; valid: path, sections"),
    ("device_limits/max_threads_per_block", 0, "device_limits.max_threads_per_block", "0 is less than the minimum of 1"),
    ("device_limits/max_block_dims", [1, 2], "device_limits.max_block_dims", "[1, 2] is too short"),
    ("experiments/a b", BASE["experiments"]["sq"], "experiments", "'a b' holds characters that are not allowed"),
    ("experiments/a;b", BASE["experiments"]["sq"], "experiments", "'a;b' holds characters"),
    ("experiments/x\n", BASE["experiments"]["sq"], "experiments", "'x\\n' holds characters that are not allowed"),
    ("experiments/sq/family", DELETE, EXP, "'family' is a required property"),
    ("experiments/sq/family", "mm", f"{EXP}.family", "unknown family 'mm'; valid: axpy, classifier, conv, histogram, matmul"),
    ("experiments/sq/family", 3, f"{EXP}.family", "3 is an int, not string"),
    ("experiments/sq/extra", 1, f"{EXP}.extra", "unknown key 'extra'; valid: family, sizes, scalars"),
    (f"{S}/K", DELETE, f"{EXP}.sizes", "missing K; the family's dimensions are M, N, K"),
    (f"{S}/L", 3, f"{EXP}.sizes", "unknown L; the family's dimensions are M, N, K"),
    (f"{S}/M", [], f"{EXP}.sizes.M", "[] should be non-empty"),
    (f"{S}/M", 0, f"{EXP}.sizes.M", "0 is less than the minimum of 1 (expected: a positive integer, a list of"),
    (f"{S}/M", [64, 1023.0], f"{EXP}.sizes.M[1]", "1023.0 is a float, expected an integer; write 1023"),
    (f"{S}/M", 1024.5, f"{EXP}.sizes.M", "1024.5 is a float, expected an integer"),
    (f"{S}/N", "M / 3", f"{EXP}.sizes.N", "'M / 3' gives 21.333333333333332 for {'M': 64}"),
    ("experiments/sq/sizes", {"M": 8, "N": "K", "K": "N"}, f"{EXP}.sizes",
     "the tied dimensions N, K refer to each other in a cycle"),
    (f"{S}/N", "X", f"{EXP}.sizes.N", "'X' names X, which is not a dimension"),
    (f"{S}/N", "(M**64)**64", f"{EXP}.sizes.N", "cannot evaluate '(M**64)**64': 64 ** 64 exceeds 2**64"),
    (f"{S}/N", "-" * 40 + "M", f"{EXP}.sizes.N", "is nested deeper than 32 levels"),
    (f"{S}/N", "M" + " + M" * 400, f"{EXP}.sizes.N", "is longer than 1000 characters"),
    (f"{S}/N", "__import__('os')", f"{EXP}.sizes.N", "only these functions may be called"),
    (f"{S}/N", "M.real", f"{EXP}.sizes.N", "Attribute is not allowed"),
    (f"{S}/N", "M if M else 1", f"{EXP}.sizes.N", "IfExp is not allowed"),
    (f"{S}/N", "M +", f"{EXP}.sizes.N", "cannot parse expression 'M +'"),
    (f"{S}/M", 4294967296, f"{EXP}.sizes.M", "4294967296 does not fit the int32 that family matmul"),
    ("experiments/sq/sizes", [{"M": 8, "N": "M", "K": "M"}, {"M": 8, "N": "M"}], f"{EXP}.sizes[1]", "missing K"),
    ("experiments/sq/variants", {}, f"{EXP}.variants", "{} should be non-empty"),
    ("experiments/sq/variants/naiv", None, f"{EXP}.variants.naiv", "unknown variant 'naiv' of family matmul"),
    (f"{V}/params/TILE", [16], f"{NAIVE}.params.TILE", "unknown parameter 'TILE' of variant naive; valid: BLOCK_X, BLOCK_Y"),
    (f"{V}/params/BLOCK_X", 32.0, f"{NAIVE}.params.BLOCK_X", "32.0 is a float, expected an integer; write 32"),
    (f"{V}/params/BLOCK_X", "32", f"{NAIVE}.params.BLOCK_X", "'32' is a str, not integer or array"),
    (f"{V}/params/BLOCK_X", [], f"{NAIVE}.params.BLOCK_X", "[] should be non-empty"),
    (f"{V}/restrictions", ["BLOCK_X >= 64, BLOCK_Y >= 64"], f"{NAIVE}.restrictions[0]", "is not a condition (a comma makes a tuple"),
    (f"{V}/restrictions", ["BLOCK_X"], f"{NAIVE}.restrictions[0]", "'BLOCK_X' is not a condition"),
    (f"{V}/restrictions", ["BLOCK_X * 2"], f"{NAIVE}.restrictions[0]", "'BLOCK_X * 2' is not a condition"),
    (f"{V}/restrictions", ["TILE > 4"], f"{NAIVE}.restrictions[0]", "'TILE > 4' uses unknown name(s) TILE"),
    (f"{V}/restrictions", ["BLOCK_X >= 64 and"], f"{NAIVE}.restrictions[0]", "cannot parse expression"),
    (f"{V}/restrictions", "BLOCK_X > 4", f"{NAIVE}.restrictions", "'BLOCK_X > 4' is a str, not array"),
    (f"{V}/restrictions", ["((((2**64)**64)**64)**64)**64 > 0"], f"{NAIVE}.params",
     "every one of the 4 combinations fails: cannot evaluate"),
    (f"{V}/params/BLOCK_X", [4096], f"{NAIVE}.params", "every one of the 2 combinations fails: block 4096×8×1"),
    (f"{V}/params", {"BLOCK_X": list(range(1, 600)), "BLOCK_Y": list(range(1, 100))}, "experiments",
     "asks for 118,602 configurations, more than max_configurations (100,000)"),
    (f"{V}/dtype", "float16", f"{NAIVE}.dtype", "variant naive does not accept dtype 'float16'; it accepts float32"),
    (f"{V}/dtype", 16, f"{NAIVE}.dtype", "16 is an int, not string"),
    # issue 27's second set: every meaningless value refused before any GPU work
    ("ncu/chunk_size", 0, "ncu.chunk_size", "0 is less than the minimum of 1"),
    ("ncu/chunk_size", 1.5, "ncu.chunk_size", "1.5 is a float, expected an integer"),
    ("ncu/explain", "sometimes", "ncu.explain", "'sometimes' is not a valid choice; valid: best, all, none"),
    ("ncu/explain_sections", ["SourceCounter"], "ncu.explain_sections[0]", "unknown section 'SourceCounter'"),
    ("ncu/explain_sections", "WarpStateStats", "ncu.explain_sections", "'WarpStateStats' is a str, not array"),
    ("ncu/clock_control", None, "ncu.clock_control", "None is not a valid choice; valid: none, base"),
    ("timing/max_repeats", 5, "timing.max_repeats", "5 is below min_repeats (20); expected an integer >= min_repeats"),
    ("timing/timeout_floor_s", -1, "timing.timeout_floor_s", "-1 is less than or equal to the minimum of 0"),
    ("timing/timeout_s", float("inf"), "timing.timeout_s", "inf is not a finite number"),
    ("timing/target_ci_pct", float("nan"), "timing.target_ci_pct", "nan is not a finite number"),
    ("device_limits/max_smem_per_block_optin", -1, "device_limits.max_smem_per_block_optin",
     "-1 is less than the minimum of 0"),
    ("device_limits/warp_size", 0, "device_limits.warp_size", "unknown key 'warp_size'"),
    ("mode", None, "mode", "None is not a valid choice; valid: auto, gpu, replay"),
    ("capture", "", "capture", "'' holds characters that are not allowed"),
    ("capture", ".", "capture", "'.' holds characters that are not allowed"),
    ("capture", "..", "capture", "'..' holds characters that are not allowed"),
    (f"{S}/M", -64, f"{EXP}.sizes.M", "-64 is less than the minimum of 1 (expected: a positive integer"),
    (f"{S}/M", True, f"{EXP}.sizes.M", "True is a bool, not integer or array or string"),
    (f"{S}/N", "M // 0", f"{EXP}.sizes.N", "cannot evaluate 'M // 0': integer division or modulo by zero"),
    (f"{S}/N", "M % 0", f"{EXP}.sizes.N", "cannot evaluate 'M % 0': integer modulo by zero"),
    (f"{V}/params/BLOCK_X", float("nan"), f"{NAIVE}.params.BLOCK_X", "nan is not a finite number"),
    (f"{V}/params/BLOCK_X", [True], f"{NAIVE}.params.BLOCK_X[0]", "True is a bool, not integer"),
    (f"{V}/restrictions", ["BLOCK_X / 0 > 1"], f"{NAIVE}.params",
     "every one of the 4 combinations fails: cannot evaluate 'BLOCK_X / 0 > 1': division by zero"),
    (f"{V}/dtype", None, f"{NAIVE}.dtype", "None is a NoneType, not string"),
    (V, "fast", NAIVE, "'fast' is a str, not null or object"),
    ("experiments/sq/variants", ["naive"], f"{EXP}.variants", "['naive'] is a list, not object"),
    ("experiments/sq", "matmul", EXP, "'matmul' is a str, not object"),
    ("experiments/sq/sizes", "M=64", f"{EXP}.sizes", "'M=64' is a str, not object or array"),
    # an experiment's questions (answered at the end of summary.md)
    ("experiments/sq/questions", [{"ask": "x", "speedup": ["naive", "tiled"]}],
     f"{EXP}.questions[0].speedup", "'tiled' is not a variant of this experiment; valid: naive"),
    ("experiments/sq/questions", [{"ask": "x", "best": "naive", "bound": "naive"}],
     f"{EXP}.questions[0]", "give exactly one of speedup, best, bound, throughput (found best, "),
    ("experiments/sq/questions", [{"ask": "x"}], f"{EXP}.questions[0]",
     "give exactly one of speedup, best, bound, throughput (found none)"),
    ("experiments/sq/questions", [{"ask": "x", "speedup": ["naive"]}],
     f"{EXP}.questions[0].speedup", "speedup names two variants, [A, B]"),
    ("experiments/sq/questions", [{"ask": "x", "best": "naive", "at": {"Q": 4}}],
     f"{EXP}.questions[0].at.Q", "not a dimension or scalar of the family; valid: M, N, K"),
    ("experiments/sq/questions", [{"ask": "x", "best": "naive", "at": {"M": "big"}}],
     f"{EXP}.questions[0].at.M", "'big' is a str, not number"),
    ("experiments/sq/questions", [{"best": "naive"}], f"{EXP}.questions[0]", "ask"),
    ("experiments/sq/questions", [{"ask": "x", "best": "naive", "why": 1}],
     f"{EXP}.questions[0].why", "unknown key 'why'; valid: ask, speedup"),
]  # fmt: skip
SCALARS = [
    ({"beta": 1.0}, "experiments.g.scalars.beta", "unknown scalar 'beta' of family gather; valid: alpha"),
    ({"alpha": "x"}, "experiments.g.scalars.alpha", "'x' is a str, not number or array"),
    ({"alpha": True}, "experiments.g.scalars.alpha", "True is a bool, not number or array"),
    ({"alpha": float("nan")}, "experiments.g.scalars.alpha", "nan is not a finite number"),
]  # fmt: skip
# Keys written twice, which YAML would otherwise drop in silence.
DUPLICATES = [
    ("mode: replay\nmode: gpu\nexperiments: {}\n", "mode", "written twice", "(lines 1 and 2)"),
    ("experiments:\n  sq:\n    family: matmul\n    sizes: {M: 8, N: M, K: M}\n    variants:\n"
     "      naive:\n      naive: {params: {BLOCK_X: 8}}\n",
     "experiments.sq.variants.naive", "written twice", "(lines 6 and 7)"),
    ("experiments:\n  sq:\n    family: matmul\n    sizes: {M: 8, M: 16, N: M, K: M}\n"
     "    variants: {naive: }\n", "experiments.sq.sizes.M", "written twice", "(lines 4 and 4)"),
]  # fmt: skip


def _refused(config: dict) -> str:
    with pytest.raises(ConfigError) as error:
        load_study(config)
    return str(error.value)


def _ids(cases: list[tuple]) -> list[str]:
    return [
        f"{c[0] if isinstance(c[0], str) else list(c[0])}={str(c[1])[:30]!r}"[:60] for c in cases
    ]


@pytest.mark.parametrize(("change", "value", "where", "message"), CHANGES, ids=_ids(CHANGES))
def test_a_bad_config_is_refused_with_its_path(
    change: str, value: object, where: str, message: str
) -> None:
    config = _set(BASE, change, value)
    config.setdefault("kernels_dir", str(ROOT / "kernels"))
    text = _refused(config)
    assert text.startswith(f"config error at {where}: "), text
    assert message in text, text


# (a config file's text, the path of the message, what it says)
FILES = [
    ("mode: !!python/name:os.system ''\nexperiments: {}\n", "(top level)",
     "could not determine a constructor for the tag 'tag:yaml.org,2002:python/name:os.system'"),
    ("experiments:\n  ~:\n    family: matmul\n", "experiments.~",
     "the key '~' (line 2 of {path}) is read by YAML as None, not a name; quote it: '~'"),
    ("experiments:\n  yes:\n    family: matmul\n", "experiments.yes",
     "the key 'yes' (line 2 of {path}) is read by YAML as True, not a name; quote it: 'yes'"),
    ("1: 2\n", "1", "the key '1' (line 1 of {path}) is read by YAML as 1, not a name"),
    ("? [a, b]\n: 1\n", "(top level)", "a key at line 1 of {path} is a list or mapping"),
    ("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(6)),
     "(top level)", "stands for more than 1,000,000 values once its aliases (*name) are"),
    ("__use_yte__: true\nexperiments: {}\n", "__use_yte__",
     "{path} asks Snakemake to evaluate it as a YTE template (Python expressions, already run"),
    ("", "(top level)", "{path} holds no mapping of keys"),
    ("- a\n- b\n", "(top level)", "{path} holds no mapping of keys"),
    ("experiments: {sq: {family: matmul\n", "(top level)",
     "{path} is not valid YAML: while parsing a flow mapping"),
    ("mode: gpu\n\tcapture: x\n", "(top level)", "found character '\\t' that cannot start any token"),
    ("mode: 'gpu\n", "(top level)", "{path} is not valid YAML: while scanning a quoted scalar"),
    ("experiments:\n  on:\n    family: matmul\n", "experiments.on",
     "the key 'on' (line 2 of {path}) is read by YAML as True, not a name; quote it: 'on'"),
    ("experiments:\n  3.5:\n    family: matmul\n", "experiments.3.5",
     "the key '3.5' (line 2 of {path}) is read by YAML as 3.5, not a name"),
    ("experiments: !!set {a, b}\n", "experiments",
     "{path}: YAML reads this value as a set (a tag such as !!set or !!binary, or a date)"),
    ("seed: 2026-11-26\nexperiments: {}\n", "seed", "{path}: YAML reads this value as a date"),
    ("mode: !!binary aGVsbG8=\nexperiments: {}\n", "mode", "YAML reads this value as a bytes"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "where", "message"), FILES, ids=[f[2][:30] for f in FILES])
def test_a_config_file_yaml_reads_otherwise_is_refused(tmp_path: Path, text: str, where: str,
                                                       message: str) -> None:  # fmt: skip
    """Tags ncuflow never reads, keys that YAML turns into booleans, nulls or numbers, and
    aliases that expand to billions of values: one message, in a fraction of a second."""
    path = tmp_path / "study.yaml"
    path.write_text(text)
    started = time.perf_counter()
    with pytest.raises(ConfigError) as error:
        read_config(path)
    assert time.perf_counter() - started < 5
    assert str(error.value).startswith(f"config error at {where}: "), str(error.value)
    assert message.format(path=path) in str(error.value)


@pytest.mark.parametrize(("scalars", "where", "message"), SCALARS)
def test_a_scalar_of_the_wrong_kind_is_refused(scalars: dict, where: str, message: str) -> None:
    config = _set(GATHER, "experiments/g/scalars", scalars)
    assert _refused(config) == f"config error at {where}: {message}"


@pytest.mark.parametrize(("text", "where", "message", "lines"), DUPLICATES)
def test_a_key_written_twice_is_refused(tmp_path: Path, text: str, where: str, message: str,
                                        lines: str) -> None:  # fmt: skip
    path = tmp_path / "study.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        read_config(path)
    assert str(error.value).startswith(f"config error at {where}: {message} in {path} {lines}")


def test_there_are_sixty_bad_configs_at_least() -> None:
    assert len(CHANGES) + len(SCALARS) + len(DUPLICATES) + len(FILES) >= 60


def test_the_limit_can_be_raised() -> None:
    config = _set(BASE, f"{V}/params/BLOCK_X", list(range(1, 600)))
    config.update(kernels_dir=str(ROOT / "kernels"), max_configurations=1000)
    assert "max_configurations: 1198" in _refused(config)
    config["max_configurations"] = 2000
    assert load_study(config).count()[0] == 2 * 599


def test_through_snakemake_one_line_and_no_file_behind(tmp_path: Path, workflow_copy: Path) -> None:
    """A value that a shell would run reaches no shell: the run is refused before any job,
    and nothing is written."""
    config = _set(BASE, "ncu/path", "ncu; touch pwned")
    config["ncu"]["sections"] = ["SpeedOfLight`touch pwned2`"]
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--config",
                           "mode=replay"], cwd=workflow_copy, capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 1
    assert (
        "config error at ncu.sections[0]: 'SpeedOfLight`touch pwned2`' holds characters"
        in proc.stderr
    )
    assert "Traceback" not in proc.stderr
    assert not list(workflow_copy.glob("pwned*")) and not (workflow_copy / "results").exists()


def test_a_nested_value_on_the_command_line_is_read_as_the_schema_wants(
    workflow_copy: Path,
) -> None:
    """Snakemake gives --config timing='{min_repeats: 10}' as the text '10': it is the
    integer 10 (the README's own example), and a value that is no integer is still refused
    in one line."""

    def dry_run(*config: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                               "--config", "mode=replay", *config], cwd=workflow_copy,
                              capture_output=True, text=True)  # fmt: skip

    assert dry_run("timing={min_repeats: 10, budget_s: 0.5}").returncode == 0
    refused = dry_run("timing={min_repeats: ten}")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "config error at timing.min_repeats: 'ten' is a str, not integer" in refused.stderr


def test_a_config_value_is_an_argument_never_shell_text(workflow_copy: Path) -> None:
    """ncu.path with shell syntax and a space: in replay it is passed along as a plain
    argument, nothing runs, and the study completes."""
    config = _set(BASE, "ncu/path", "/opt/nvidia/nsight compute/ncu $(touch pwned); touch pwned2")
    ladder = config["experiments"].pop("sq")  # the capture's experiment, to replay it
    ladder["sizes"] = {"M": 1024, "N": "M", "K": "M"}
    ladder["variants"] = {"naive": {"params": {"BLOCK_X": 32, "BLOCK_Y": 16}}}
    config["experiments"]["matmul_ladder"] = ladder
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump({**config, "mode": "replay"}))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=workflow_copy,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not list(workflow_copy.rglob("pwned*"))
    assert (workflow_copy / "results" / "matmul_ladder" / "table.parquet").is_file()


def test_every_word_of_a_stage_command_is_quoted() -> None:
    import shlex

    from ncuflow.cli import command_line

    words = ["a b", "$(touch pwned)", "x; rm -rf /", "`id`", "c\nd", "'q'"]
    line = command_line("measure", words[0], [words[1], [words[2]]], *words[3:])
    split = shlex.split(line)
    assert split[split.index("ncuflow") + 1 :] == ["measure", *words]
