"""Every bad config is refused before any GPU work with one message that names the key
path and what is expected: never a traceback, never a silent pass. Each case is a config
file as a user would write it (read with ncuflow.files.read_config, then load_study)."""

import copy
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_snakemake
from ncuflow.errors import ConfigError
from ncuflow.schema import CONFIG, load
from ncuflow.study.checks import coerce_overrides
from ncuflow.study.config import load_study
from ncuflow.vocab import RESULTS_OWN

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
    # issue 44: ncu.path names a program (on PATH, or by its path), never shell syntax
    ("ncu/path", "", "ncu.path", "'' should be non-empty (expected: the ncu executable: a name"),
    ("ncu/path", "ncu; id", "ncu.path", "'ncu; id' holds characters that are not allowed (expected: the ncu executable"),
    ("ncu/path", "`id`", "ncu.path", "'`id`' holds characters that are not allowed"),
    ("ncu/path", "$(id)/ncu", "ncu.path", "'$(id)/ncu' holds characters that are not allowed"),
    ("ncu/path", "ncu && id", "ncu.path", "'ncu && id' holds characters that are not allowed"),
    ("ncu/path", "ncu | tee x", "ncu.path", "'ncu | tee x' holds characters that are not allowed"),
    ("ncu/path", "ncu > x", "ncu.path", "'ncu > x' holds characters that are not allowed"),
    ("ncu/path", "ncu\nid", "ncu.path", "'ncu\\nid' holds characters that are not allowed"),
    ("ncu/path", "'ncu'", "ncu.path", "\"'ncu'\" holds characters that are not allowed"),
    ("ncu/path", "~/bin/ncu", "ncu.path", "'~/bin/ncu' holds characters that are not allowed"),
    ("ncu/path", "/opt/*/ncu", "ncu.path", "'/opt/*/ncu' holds characters that are not allowed"),
    ("ncu/path", " ncu", "ncu.path", "' ncu' holds characters that are not allowed"),
    ("ncu/path", "ncu ", "ncu.path", "'ncu ' holds characters that are not allowed"),
    ("ncu/path", "x" * 200 + ";", "ncu.path", f"'{'x' * 58}… holds characters that are not allowed"),
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


def _refused(config: dict) -> str:
    with pytest.raises(ConfigError) as error:
        load_study(config)
    return str(error.value)


def _ids(cases: list[tuple]) -> list[str]:
    """Each case's key and value, the same in every process (pytest-xdist's workers compare)."""
    return [
        f"{c[0] if isinstance(c[0], str) else list(c[0])}="
        f"{'deleted' if c[1] is DELETE else repr(str(c[1])[:30])}"[:60]
        for c in cases
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


@pytest.mark.parametrize(("scalars", "where", "message"), SCALARS)
def test_a_scalar_of_the_wrong_kind_is_refused(scalars: dict, where: str, message: str) -> None:
    config = _set(GATHER, "experiments/g/scalars", scalars)
    assert _refused(config) == f"config error at {where}: {message}"


@pytest.mark.parametrize("name", [*RESULTS_OWN, "Devices", "LOGS"])
def test_an_experiment_named_as_the_workflows_own_results_is_refused(name: str) -> None:
    """results/devices/ is the devices rule's folder, results/device.json the device's
    facts: an experiment of such a name would write its folder among them."""
    config = _set(BASE, f"experiments/{name}", BASE["experiments"]["sq"])
    config["kernels_dir"] = str(ROOT / "kernels")
    assert _refused(config) == (
        f"config error at experiments.{name}: the experiment's folder results/{name}/ would "
        "collide with the workflow's own files of that name in results/; expected a name other "
        "than device, devices, ceilings, energy_ceilings, logs, run, report, compare (in any case)"
    )


def test_every_name_the_workflow_gives_under_results_is_refused_as_an_experiment() -> None:
    """Each file or folder the rules and the Snakefile write at the top of results/ (its
    name without suffix), and the schema's description of an experiment name, list them."""
    texts = [(ROOT / "Snakefile").read_text(), *(p.read_text() for p in
             (ROOT / "workflow" / "rules").glob("*.smk"))]  # fmt: skip
    own = {name.split(".")[0] for text in texts
           for name in re.findall(r"results/([^/{\"']+)", text)}  # fmt: skip
    assert {"devices", "device", "ceilings", "logs"} <= own <= set(RESULTS_OWN), own
    names = load(CONFIG)["properties"]["experiments"]["propertyNames"]["description"]
    assert names.endswith(", ".join(RESULTS_OWN))


@pytest.mark.parametrize("path", ["ncu", "ncu-2025.3", "/opt/nvidia/nsight-compute/2025.3.1/ncu",
                                  "./tools/ncu", "../ncu", "/opt/nvidia/nsight compute/ncu",
                                  "/opt/spack/cuda@12.4+x/bin/ncu"])  # fmt: skip
def test_a_name_or_a_path_of_ncu_is_taken(path: str) -> None:
    config = _set(BASE, "ncu/path", path)
    config["kernels_dir"] = str(ROOT / "kernels")
    assert load_study(config).config["ncu"]["path"] == path


def _nested(wrap: Callable[[object], object]) -> object:
    """A value 20,000 levels deep, each level ``wrap`` of the one below."""
    value: object = 1
    for _ in range(20000):
        value = wrap(value)
    return value


@pytest.mark.parametrize(
    ("value", "where"),
    [(_nested(lambda v: {"a": v}), "timing" + ".a" * 31),
     (_nested(lambda v: [v]), "timing" + "[0]" * 31)],
    ids=["mappings", "lists"],
)  # fmt: skip
def test_a_config_nested_thousands_deep_is_refused_with_its_key(value: object, where: str) -> None:
    """A value given by a program or through --config, which no YAML reader bounded: one
    line naming the key where it goes beyond, never a RecursionError."""
    config = _set(BASE, "timing", value)
    assert _refused(config) == (f"config error at {where}: mappings and lists nested deeper than "
                                "32 levels; expected at most 32 (a study needs 7)")  # fmt: skip


def test_a_config_that_holds_itself_is_refused() -> None:
    config = _set(BASE, "timing", {})
    config["timing"]["itself"] = config["timing"]
    assert _refused(config) == ("config error at timing.itself: a value that holds itself nests "
                                "without end; expected mappings and lists that end")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [("[" * 20000 + "]" * 20000, "config error at timing: the --config value is not valid YAML: "
      "mappings and lists nested deeper than 32 levels at line 1, column 33: '[[[[[[[[[[[[[[[["),
     ("{min_repeats: 10", "config error at timing: the --config value is not valid YAML: while "
      "parsing a flow mapping, expected ',' or '}', but got '<stream end>' at line 1, column 17: "
      "'{min_repeats: 10'")],
    ids=["deep", "unclosed"],
)  # fmt: skip
def test_a_config_value_on_the_command_line_that_is_not_yaml_is_refused(
    text: str, message: str
) -> None:
    """Snakemake leaves a --config value it cannot read as YAML as text (thousands of
    brackets too, whose reading ends in its RecursionError): ncuflow reads it for the
    schema, and names the key and the column."""
    with pytest.raises(ConfigError) as error:
        coerce_overrides({"timing": text}, {"timing": text})
    assert str(error.value).startswith(message) and len(str(error.value)) < 300


def test_there_are_sixty_bad_configs_at_least() -> None:
    assert len(CHANGES) + len(SCALARS) >= 60  # and test_config_files.py's files


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
    proc = run_snakemake(workflow_copy, "--cores", "1", "--config", "mode=replay")
    assert proc.returncode == 1
    assert "config error at ncu.path: 'ncu; touch pwned' holds characters" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(workflow_copy.glob("pwned*")) and not (workflow_copy / "results").exists()


def test_a_nested_value_on_the_command_line_is_read_as_the_schema_wants(
    workflow_copy: Path,
) -> None:
    """Snakemake gives --config timing='{min_repeats: 10}' as the text '10': it is the
    integer 10 (the README's own example), and a value that is no integer is still refused
    in one line."""

    def dry_run(*config: str) -> subprocess.CompletedProcess:
        return run_snakemake(workflow_copy, "-n", "--cores", "1", "--config", "mode=replay",
                             *config)  # fmt: skip

    assert dry_run("timing={min_repeats: 10, budget_s: 0.5}").returncode == 0
    refused = dry_run("timing={min_repeats: ten}")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "config error at timing.min_repeats: 'ten' is a str, not integer" in refused.stderr


def test_a_config_value_is_an_argument_never_shell_text(workflow_copy: Path) -> None:
    """ncu.path with a space (a folder's name may hold one; shell syntax is refused): in
    replay it is passed along as one argument, and the study completes."""
    config = _set(BASE, "ncu/path", "/opt/nvidia/nsight compute/ncu")
    ladder = config["experiments"].pop("sq")  # the capture's experiment, to replay it
    ladder["sizes"] = {"M": 1024, "N": "M", "K": "M"}
    ladder["variants"] = {"naive": {"params": {"BLOCK_X": 32, "BLOCK_Y": 16}}}
    config["experiments"]["matmul_ladder"] = ladder
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump({**config, "mode": "replay"}))
    proc = run_snakemake(workflow_copy, "--cores", "2", "results/matmul_ladder/table.parquet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (workflow_copy / "results" / "matmul_ladder" / "table.parquet").is_file()


def test_every_word_of_a_stage_command_is_quoted() -> None:
    import shlex

    from ncuflow.cli import command_line

    words = ["a b", "$(touch pwned)", "x; rm -rf /", "`id`", "c\nd", "'q'"]
    line = command_line("measure", words[0], [words[1], [words[2]]], *words[3:])
    split = shlex.split(line)
    assert split[split.index("ncuflow") + 1 :] == ["measure", *words]
