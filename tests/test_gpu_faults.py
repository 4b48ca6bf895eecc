"""On the GPU (pytest -m gpu): a sweep of kernels that fault, hang, write NaN or ask for
shared memory the device refuses (tests/data/kernels/faulty, BAD = 1), beside the same
kernels done right (BAD = 0) and a good one, under timing and under ncu. Every good
configuration is measured and profiled, every bad one recorded with its status, and the
sweep ends within a bound: five configurations of at most TIMEOUT_S each can hang."""

import json
import time
from pathlib import Path

import pytest

from conftest import ROOT, measure_study
from ncuflow.config import load_study
from ncuflow.profile import NcuSettings, profile_stage

pytestmark = pytest.mark.gpu

KERNELS = ROOT / "tests" / "data" / "kernels"
TIMEOUT_S = 20.0
BOUND_S = 120.0 + 2 * TIMEOUT_S  # start-up and compilation, and the hang's one limit twice
EXPECTED = {"good": "ok", "oob": "launch_error", "spin": "timeout", "nan": "wrong_result",
            "smem": "launch_error"}  # fmt: skip
EXPERIMENTS = {"f": {"family": "faulty", "sizes": {"n": [4096, 4099]},
                     "variants": {v: {"params": {"BAD": [1, 0]}} for v in EXPECTED}}}  # fmt: skip
# the declared limit lets the oversized request through to the device, which refuses it
LIMITS = {"max_smem_per_block_optin": 4 << 20}


def test_a_faulty_sweep_ends_with_every_status_right(tmp_path: Path) -> None:
    started = time.monotonic()
    found = measure_study(tmp_path, KERNELS, EXPERIMENTS, repeats=5,
                          timing={"timeout_s": TIMEOUT_S}, device_limits=LIMITS)  # fmt: skip
    elapsed = time.monotonic() - started
    for variant, bad in EXPECTED.items():
        records = found[variant]
        for config_id, record in records.items():
            want = bad if config_id.startswith("BAD=1_") else "ok"
            assert record["status"] == want, (variant, config_id, record["error"])
    nan = next(r for c, r in found["nan"].items() if c.startswith("BAD=1_"))
    assert "are NaN or Inf written by the kernel" in nan["error"] and nan["time_ms"] > 0
    assert elapsed < BOUND_S, f"the sweep took {elapsed:.0f} s"
    study = load_study({"kernels_dir": str(KERNELS), "device_limits": LIMITS,
                        "experiments": EXPERIMENTS})  # fmt: skip
    ncu = study.config["ncu"]
    settings = NcuSettings(ncu["path"], tuple(ncu["sections"]), ncu["clock_control"], (), 2)
    for variant in EXPECTED:
        out = tmp_path / variant / "ncu_long.parquet"
        out.parent.mkdir()
        profile_stage(tmp_path / f"f.{variant}.plan.json", tmp_path / f"f.{variant}.measure.json",
                      out, out.with_name("raw.csv"), settings, lambda line: None)  # fmt: skip
        assert json.loads(out.with_name("profile_errors.json").read_text()) == {}, variant
