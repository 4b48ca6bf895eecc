import copy
import json
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, minimal_config
from ncuflow.errors import ConfigError, NcuflowError
from ncuflow.files import compose_yaml, load_yaml, read_config
from ncuflow.study.config import load_study, part_plan
from ncuflow.vocab import PENDING, SKIPPED


def test_defaults_are_filled_in() -> None:
    study = load_study(minimal_config())
    assert study.config["mode"] == "auto"
    assert study.config["timing"] == {
        "warmup": 3,
        "min_repeats": 20,
        "max_repeats": 2000,
        "target_ci_pct": 1.0,
        "budget_s": 2.0,
        "timeout_s": None,
        "timeout_floor_s": 60,
        "flush_l2": True,
    }
    assert "SpeedOfLight_RooflineChart" in study.config["ncu"]["sections"]
    assert study.config["ncu"]["clock_control"] == "none"
    assert study.config["ncu"]["chunk_size"] == 64 and study.config["ncu"]["variants_per_job"] == 16
    assert study.config["max_configurations"] == 100_000
    assert study.count() == (4, 4)


def test_plan_carries_what_the_gpu_stages_need() -> None:
    study = load_study(minimal_config())
    plan = study.plan("sq", "naive")
    assert plan.variant == "naive" and plan.family == "matmul"
    assert len(plan.configs) == 4 and plan.timing.min_repeats == 20
    assert len(plan.family_fingerprint) == 16


def test_a_variant_is_split_into_jobs_of_at_most_so_many_configurations() -> None:
    config = minimal_config(variants={"smem_tiled": {"params": {"TILE": [8, 16, 64]}}},
                            sizes={"M": [64, 1023, 2049], "N": "M", "K": "M"})  # fmt: skip
    config["configurations_per_job"] = 2
    study = load_study(config)
    plans = [study.plan("sq", "smem_tiled", part) for part in study.parts("sq", "smem_tiled")]
    whole = study.plan("sq", "smem_tiled").configs
    pending = [row for row in whole if row.pending]
    assert study.count() == (9, 6) and study.parts("sq", "smem_tiled") == ["p0", "p1", "p2"]
    assert [[r.config_id for r in plan.pending] for plan in plans] == [
        [r.config_id for r in pending[i : i + 2]] for i in (0, 2, 4)]  # fmt: skip
    # the parts, in order, are the grid in its order; TILE=64 (4096 threads), last in the
    # grid, is skipped, in the last part
    assert tuple(row for plan in plans for row in plan.configs) == whole
    assert [r.status for r in plans[2].configs] == [PENDING] * 2 + [SKIPPED] * 3
    config["configurations_per_job"] = 100
    assert load_study(config).parts("sq", "smem_tiled") == ["p0"]
    config["configurations_per_job"], config["max_jobs_per_variant"] = 1, 2
    assert load_study(config).parts("sq", "smem_tiled") == ["p0", "p1"]  # 3 each


def test_a_job_expands_its_own_part_from_the_variants_plan(tmp_path: Path) -> None:
    """The main process writes one small plan per variant (the grid as the config gave it
    and where each part starts); each job's plan.json, expanded from it, is the part the
    study holds; a kernel edited after planning is refused, not measured as planned."""
    config = minimal_config(variants={"smem_tiled": {"params": {"TILE": [8, 16, 64]}}},
                            sizes={"M": [64, 1023, 2049], "N": "M", "K": "M"})  # fmt: skip
    config["configurations_per_job"] = 2
    study = load_study(config)
    path = Path(study.plan_file("sq", "smem_tiled", folder=tmp_path))
    assert len(path.read_text()) < 4000  # the grid, not its rows
    for part in study.parts("sq", "smem_tiled"):
        assert part_plan(path, part) == study.plan("sq", "smem_tiled", part)
    with pytest.raises(NcuflowError, match=r"part 'p3' is not one of p0 \.\.\. p2"):
        part_plan(path, "p3")
    edited = json.loads(path.read_text())
    edited["plan"]["family_fingerprint"] = "0" * 16  # planned against other sources
    path.write_text(json.dumps(edited))
    with pytest.raises(NcuflowError, match="sources of family matmul changed since this study"):
        part_plan(path, "p0")


def _with(config: dict, path: str, value: object) -> dict:
    config = copy.deepcopy(config)
    node = config
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return config


BASE = minimal_config()
BAD = [
    (
        "experiments.sq.family",
        "mm",
        "experiments.sq.family: unknown family 'mm'; valid: axpy, classifier, conv, histogram, "
        "matmul",
    ),
    (
        "experiments.sq.variants",
        {"naiv": None},
        "experiments.sq.variants.naiv: unknown variant 'naiv' of family matmul; valid: ",
    ),
    (
        "experiments.sq.variants",
        {"naive": {"params": {"TILE": [16]}}},
        "params.TILE: unknown parameter 'TILE' of variant naive; valid: BLOCK_X, BLOCK_Y",
    ),
    ("experiments.sq.sizes.M", [64, -5], "sizes.M[1]: -5 is less than the minimum of 1"),
    ("experiments.sq.sizes.M", [64, 2.5], "sizes.M[1]: 2.5 is a float, expected an integer"),
    (
        "experiments.sq.sizes.M",
        0,
        "sizes.M: 0 is less than the minimum of 1 (expected: a positive integer",
    ),
    ("experiments.sq.sizes.M", True, "sizes.M: True is a bool, not integer or array or string"),
    ("experiments.sq.sizes.N", "M - 64", "sizes.N: 'M - 64' gives 0"),
    (
        "experiments.sq.variants",
        {"smem_tiled": {"params": {"TILE": [64, 128]}}},
        "variants.smem_tiled.params: every one of the 4 combinations fails",
    ),
    (
        "experiments.sq.variants",
        {"smem_tiled": {"params": {"TILE": "16"}}},
        "params.TILE: '16' is a str, not integer or array (expected: an integer or a non-empty "
        "list of integers)",
    ),
    ("mode", "fast", "mode: 'fast' is not a valid choice; valid: auto, gpu, replay, check"),
    ("timing", {"min_repeats": 0}, "timing.min_repeats: 0 is less than the minimum of 1"),
    ("timing", {"target_ci_pct": 0}, "timing.target_ci_pct: 0 is less than or equal to the min"),
    ("timing", {"max_repeats": 10}, "timing.max_repeats: 10 is below min_repeats (20)"),
    (
        "timing",
        {"repeats": 10},
        "timing.repeats: unknown key 'repeats'; valid: warmup, min_repeats, max_repeats",
    ),
    ("seed", "abc", "seed: 'abc' is a str, not ['integer', 'null']"),
    ("experiment", {}, "experiment: unknown key 'experiment'; valid: mode, capture"),
    ("experiments", {}, "experiments: {} should be non-empty"),
    ("kernels_dir", "nowhere", "kernels_dir: nowhere is not a folder"),
    (
        "experiments.sq.variants",
        {"naive": {"restrictions": ["__import__('os')"]}},
        "naive.restrictions[0]: \"__import__('os')\": only these functions may be called",
    ),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[b[2][:40] for b in BAD])
def test_bad_config_gets_one_message_with_path_and_choices(
    path: str, value: object, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_study(_with(BASE, path, value))
    assert message in str(info.value)
    assert str(info.value).startswith("config error at ")


def test_a_host_variant_holds_no_gpu() -> None:
    study = load_study(read_config(ROOT / "config.yaml"), ROOT)
    assert study.gpus("matmul_ladder", "cpu_blas") == 0  # runs beside the GPU jobs
    assert study.gpus("matmul_ladder", "naive") == study.gpus("conv", "cudnn") == 1


def _nodes(node: yaml.Node) -> list[tuple[str, int, str]]:
    """Each node of a composed YAML text: its tag, line and (a scalar's) value."""
    found, pending = [], [node]
    while pending:
        current = pending.pop()
        value = current.value if isinstance(current, yaml.ScalarNode) else ""
        found.append((current.tag, current.start_mark.line, value))
        if isinstance(current, yaml.MappingNode):
            pending += [child for pair in current.value for child in pair]
        elif isinstance(current, yaml.SequenceNode):
            pending += current.value
    return found


def test_the_fast_yaml_parser_reads_every_yaml_file_as_pyyaml_does() -> None:
    """libyaml's parser (where PyYAML has it) gives the values, tags and lines of the pure
    Python one for every YAML file of the repository; a text it refuses, the same error."""
    paths = [*ROOT.glob("*.yaml"), *ROOT.glob("experiments/*.yaml"),
             *ROOT.glob("benchmarks/*.yaml"), *ROOT.glob("kernels/*/family.yaml"),
             *ROOT.glob("workflow/schemas/*.yaml")]  # fmt: skip
    assert len(paths) > 10
    for path in paths:
        text = path.read_text()
        assert load_yaml(text) == yaml.safe_load(text), path
        assert _nodes(compose_yaml(text)) == _nodes(yaml.compose(text, Loader=yaml.SafeLoader))
    with pytest.raises(yaml.YAMLError, match="while parsing a flow mapping"):
        load_yaml("a: {b: 1\n")
