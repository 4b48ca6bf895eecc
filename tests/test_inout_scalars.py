"""In-place tensors and swept scalars, on the CPU: the bundled axpy family (y ← a·x + y,
y an inout) measured for real by its host variant with the scalar a swept, and the
declarations and config values that are refused, each with its file and key."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from ncuflow.analyze.collect import collect
from ncuflow.analyze.derive import config_metrics
from ncuflow.errors import ConfigError
from ncuflow.measure.build import build_launcher
from ncuflow.measure.problem import problem_for
from ncuflow.measure.stage import measure_plan
from ncuflow.measure.worker import measure_config
from ncuflow.report.summary import summarize
from ncuflow.spec import SpecError, load_family
from ncuflow.study.config import load_study

KERNELS = ROOT / "kernels"


def _study(kernels: Path = KERNELS, **experiment: object) -> dict:
    base = {
        "family": "axpy",
        "sizes": {"n": [1000, 4099]},
        "scalars": {"a": [2.0, -0.5]},
        "variants": {"numpy_axpy": None, "naive": {"params": {"BLOCK": [128, 256]}}},
    }
    base.update(experiment)
    return {"kernels_dir": str(kernels), "seed": 5,
            "timing": {"min_repeats": 6, "max_repeats": 30, "budget_s": 0.2},
            "experiments": {"axpy": base}}  # fmt: skip


@pytest.fixture
def axpy_copy(tmp_path: Path) -> Path:
    shutil.copytree(KERNELS / "axpy", tmp_path / "kernels" / "axpy")
    return tmp_path / "kernels"


def test_a_swept_scalar_makes_a_configuration_of_each_value() -> None:
    study = load_study(_study())
    rows = study.experiments["axpy"].rows("naive")
    assert [r.config_id for r in rows] == [
        "BLOCK=128_n=1000_a=2.0", "BLOCK=128_n=1000_a=-0.5", "BLOCK=128_n=4099_a=2.0",
        "BLOCK=128_n=4099_a=-0.5", "BLOCK=256_n=1000_a=2.0", "BLOCK=256_n=1000_a=-0.5",
        "BLOCK=256_n=4099_a=2.0", "BLOCK=256_n=4099_a=-0.5"]  # fmt: skip
    plan = study.plan("axpy", "naive")
    assert plan.scalars == {} and rows[1].scalars == {"a": -0.5}
    assert len({plan.fingerprint(r) for r in rows}) == 8
    # x read once, y read and written once
    assert all(r.min_bytes == 12 * r.dims["n"] and r.flops == 2 * r.dims["n"] for r in rows)
    one = load_study(_study(scalars={"a": 2.0})).plan("axpy", "naive")
    assert one.scalars == {"a": 2.0} and one.configs[0].config_id == "BLOCK=128_n=1000"
    assert one.configs[0].scalars is None


def test_an_inout_is_restored_before_every_launch_and_checked(tmp_path: Path) -> None:
    """Timed repeats each start from y's drawn values: after dozens of them y still holds
    a·x + y once, which the check compares with the reference."""
    study = load_study(_study())
    plan = study.plan("axpy", "numpy_axpy")
    family = load_family(KERNELS, "axpy")
    variant = family.variant("numpy_axpy")
    row = plan.configs[1]
    problem = problem_for(plan, family, variant, row, seed=5)
    drawn = problem.initial["y"].copy()
    record = measure_config(family, variant, row, problem, plan.timing, None)
    assert record.status == "ok" and record.repeats >= 6, record.error
    assert np.array_equal(problem.initial["y"], drawn)  # the drawn values are never written
    assert np.allclose(problem.outputs["y"], np.float32(-0.5) * problem.inputs["x"] + drawn)
    assert problem.check().ok
    launcher = build_launcher(family, variant, row, problem)
    launcher.launch()  # a second update without the reset: y is no longer a·x + y
    assert not problem.check().ok
    launcher.reset()
    launcher.launch()
    assert problem.check().ok


def test_the_host_variant_is_measured_and_collected_per_value(tmp_path: Path) -> None:
    study = load_study(_study(variants={"numpy_axpy": None}))
    plan, out = tmp_path / "plan.json", tmp_path / "measure.json"
    plan.write_text(study.plan("axpy", "numpy_axpy").to_json())
    measure_plan(plan, out, lambda line: None)
    records = json.loads(out.read_text())
    assert list(records) == ["n=1000_a=2.0", "n=1000_a=-0.5", "n=4099_a=2.0", "n=4099_a=-0.5"]
    assert all(r["status"] == "ok" and r["rel_error"] < 1e-6 for r in records.values()), records
    metrics = tmp_path / "metrics.parquet"
    config_metrics(pd.DataFrame(columns=["config_id", "kernel_id", "kernel_name", "metric",
                                         "unit", "value"])).to_parquet(metrics)  # fmt: skip
    device = tmp_path / "device.json"
    device.write_text(json.dumps({"name": "cpu"}))
    table = collect("axpy", [(plan, out, metrics)], device, tmp_path / "table.parquet")
    assert table["a"].tolist() == [2.0, -0.5, 2.0, -0.5]
    best = summarize(table, load_family(KERNELS, "axpy"))
    assert sorted(zip(best["n"], best["a"], strict=True)) == [
        (1000, -0.5), (1000, 2.0), (4099, -0.5), (4099, 2.0)]  # fmt: skip


def test_a_kernel_that_ignores_the_inouts_values_is_a_wrong_result(
    tmp_path: Path, axpy_copy: Path
) -> None:
    module = axpy_copy / "axpy" / "family.py"
    module.write_text(module.read_text().replace("    y += a * x\n", "    y[...] = a * x\n"))
    study = load_study(_study(axpy_copy, variants={"numpy_axpy": None}))
    plan, out = tmp_path / "plan.json", tmp_path / "measure.json"
    plan.write_text(study.plan("axpy", "numpy_axpy").to_json())
    measure_plan(plan, out, lambda line: None)
    for record in json.loads(out.read_text()).values():
        assert record["status"] == "wrong_result"
        assert record["error"].startswith("relative error")
        assert record["error"].endswith("of y exceeds 1e-06")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("inouts:\n  y:", "outputs:\n  y: n\ninouts:\n  y:",
         "inouts.y is declared twice; a tensor that kernels read and write in place is "
         "declared once, under inouts"),
        ("inouts:\n  y: {shape: n, check: {rel_fro: 1.0e-6}}", "inouts:\n  n: n",
         "inouts.n is a dimension"),
        ("inouts:\n  y: {shape: n, check: {rel_fro: 1.0e-6}}", "",
         "the family writes nothing; declare its outputs"),
        ("  y: {shape: n, check", "  y: {shape: n, memory: host, check",
         "inouts.y.memory: unknown key 'memory'; valid: shape, dtype, draw, check"),
    ],
)  # fmt: skip
def test_bad_inouts_are_named(axpy_copy: Path, old: str, new: str, message: str) -> None:
    path = axpy_copy / "axpy" / "family.yaml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        load_family(axpy_copy, "axpy")


@pytest.mark.parametrize(
    ("scalars", "where", "message"),
    [
        ({"a": [2.0, 2.0]}, "experiments.axpy.scalars.a", "2.0 written twice in [2.0, 2.0]"),
        ({"a": [1.0, ".nan"]}, "experiments.axpy.scalars.a[1]", None),
        ({"a": []}, "experiments.axpy.scalars.a", None),
    ],
)  # fmt: skip
def test_bad_swept_scalars_are_named(scalars: dict, where: str, message: str | None) -> None:
    if scalars["a"] and scalars["a"][-1] == ".nan":
        scalars = {"a": [1.0, float("nan")]}
    with pytest.raises(ConfigError) as error:
        load_study(_study(scalars=scalars))
    assert str(error.value).startswith(f"config error at {where}: "), str(error.value)
    if message:
        assert message in str(error.value)
