"""On the GPU (pytest -m gpu, run on the GPU machine): every variant against the float64
reference at divisible and non-divisible sizes, faulty kernels caught, one ncu process."""

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from ncuflow.config import load_study
from ncuflow.ncu_csv import config_metrics, read_long
from ncuflow.profile import profile_stage

pytestmark = pytest.mark.gpu

_HEAD = """/*---
kernel: {name}
params: {{BAD: 1}}
block: 16, 16
grid: ceil_div(N, 16), ceil_div(M, 16)
---*/
#ifndef BAD
#define BAD 1
#endif
extern "C" __global__ void {name}(const float* A, const float* B, float* C, int M, int N, int K) {{
  const int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
"""
_LOOP = (
    "  for (int k = 0; k < K - {skip}; ++k) acc += A[(size_t)row*K + k] * B[(size_t)k*N + col];\n"
)
_STORE = "  C[(size_t)row * N + col{offset}] = acc;\n}}\n"
# Each breaks in its own way when BAD is 1 and is a correct kernel when BAD is 0.
FAULTY = {
    "wrong": _LOOP.format(skip="BAD") + _STORE.format(offset=""),
    "unwritten": "  if (BAD && row == M - 1) return;\n"
    + _LOOP.format(skip=0)
    + _STORE.format(offset=""),
    "fault": _LOOP.format(skip=0) + _STORE.format(offset=" + (BAD ? (size_t)1 << 40 : 0)"),
    "broken": "  this is not CUDA;\n}\n",
}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kernels")
    shutil.copytree(ROOT / "kernels" / "matmul", folder / "matmul")
    for name, body in FAULTY.items():
        (folder / "matmul" / f"{name}.cu").write_text(_HEAD.format(name=f"matmul_{name}") + body)
    return folder


def _measure(tmp_path: Path, kernels: Path, experiments: dict) -> dict[str, dict]:
    """Every (experiment, variant) through the measure stage; records by variant."""
    from ncuflow.harness import measure_stage

    config = {"kernels_dir": str(kernels), "timing": {"warmup": 1, "repeats": 5},
              "experiments": experiments}  # fmt: skip
    study = load_study(config)
    found: dict[str, dict] = {}
    for experiment, variant in study.jobs():
        plan = tmp_path / f"{experiment}.{variant}.plan.json"
        plan.write_text(study.plan_json(experiment, variant))
        out = tmp_path / f"{experiment}.{variant}.measure.json"
        measure_stage(plan, out, lambda line: None)
        found.setdefault(variant, {}).update(json.loads(out.read_text()))
    return found


LADDER = {
    "naive": {"params": {"BLOCK_X": [8, 32], "BLOCK_Y": [4, 16]}},
    "smem_tiled": {"params": {"TILE": [8, 16, 32]}},
    "cublas_fp32": None,
}


def test_every_variant_matches_the_reference(tmp_path: Path, kernels: Path) -> None:
    experiments = {
        "square": {"family": "matmul", "sizes": {"M": [64, 1023, 1025, 2049], "N": "M",
                                                 "K": "M"}, "variants": LADDER},
        "rectangular": {"family": "matmul", "sizes": {"M": 300, "N": 517, "K": 129},
                        "variants": LADDER},
    }  # fmt: skip
    found = _measure(tmp_path, kernels, experiments)
    assert set(found) == set(LADDER)
    for variant, records in found.items():
        assert len(records) == {"naive": 20, "smem_tiled": 15, "cublas_fp32": 5}[variant]
        for config_id, record in records.items():
            assert record["status"] == "ok", (config_id, record["error"])
            assert record["rel_error"] < 1e-5, config_id
            assert len(record["times_ms"]) == 5 and record["time_ms"] > 0


def test_faulty_kernels_are_caught_and_the_sweep_goes_on(tmp_path: Path, kernels: Path) -> None:
    variants = {name: {"params": {"BAD": [1, 0]}} for name in FAULTY}
    experiments = {"faulty": {"family": "matmul", "sizes": {"M": [256, 257], "N": "M", "K": "M"},
                              "variants": variants}}  # fmt: skip
    found = _measure(tmp_path, kernels, experiments)

    def status(variant: str, bad: int) -> set[str]:
        return {r["status"] for c, r in found[variant].items() if c.startswith(f"BAD={bad}_")}

    assert status("wrong", 1) == {"wrong_result"}
    assert all("relative error" in r["error"] for r in found["wrong"].values() if r["error"])
    assert status("unwritten", 1) == {"wrong_result"}
    assert any("never written" in r["error"] for r in found["unwritten"].values())
    assert status("fault", 1) == {"launch_error"}
    assert status("broken", 1) == status("broken", 0) == {"compile_error"}
    assert all(re.search(r"broken\.cu.*error", r["error"], re.S) for r in found["broken"].values())
    for variant in ("wrong", "unwritten", "fault"):  # the same kernels, correct with BAD=0
        assert status(variant, 0) == {"ok"}, found[variant]


def test_one_ncu_process_profiles_every_ok_configuration(tmp_path: Path, kernels: Path) -> None:
    experiments = {"p": {"family": "matmul", "sizes": {"M": [128, 257], "N": "M", "K": "M"},
                         "variants": {"naive": {"params": {"BLOCK_X": [16, 32]}}}}}  # fmt: skip
    found = _measure(tmp_path, kernels, experiments)["naive"]
    plan, measure = tmp_path / "p.naive.plan.json", tmp_path / "p.naive.measure.json"
    csv_path, report = tmp_path / "raw.csv", tmp_path / "profile.ncu-rep"
    study = load_study({"kernels_dir": str(kernels), "experiments": experiments})
    ncu = study.config["ncu"]
    profile_stage(plan, measure, csv_path, report, ncu["path"], ncu["sections"],
                  ncu["clock_control"], [], lambda line: None)  # fmt: skip
    assert report.stat().st_size > 0
    metrics = config_metrics(read_long(csv_path))
    assert sorted(metrics["config_id"]) == sorted(found)
    for row in metrics.itertuples():
        m = int(re.search(r"_M=(\d+)", row.config_id).group(1))
        assert row.flops_counted == 2 * m**3
