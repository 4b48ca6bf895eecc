"""On the GPU (pytest -m gpu): a sweep of a kernel that faults, hangs, writes NaN or asks
for shared memory the device refuses (tests/data/kernels/faulty, FAULT 1 to 4), beside
the same kernel done right (FAULT 0), under timing and under ncu. Every good
configuration is measured and profiled, every bad one recorded with its status, and the
sweep ends within a bound: each of the two hanging configurations costs TIMEOUT_S."""

import dataclasses
import json
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, measure_study
from ncuflow.profile.members import Member
from ncuflow.profile.stage import profile_stage
from ncuflow.study.config import load_study

pytestmark = pytest.mark.gpu

KERNELS = ROOT / "tests" / "data" / "kernels"
TIMEOUT_S = 20.0
BOUND_S = 120.0 + 2 * TIMEOUT_S  # start-up and compilation, and the hang's one limit twice
# FAULT: 0 none, 1 out of bounds, 2 hang, 3 NaN, 4 shared memory the device refuses
EXPECTED = {0: "ok", 1: "launch_error", 2: "timeout", 3: "wrong_result", 4: "launch_error"}
EXPERIMENTS = {"f": {"family": "faulty", "sizes": {"n": [4096, 4099]},
                     "variants": {"faults": {"params": {"FAULT": list(EXPECTED)}}}}}  # fmt: skip
# the declared limit lets the oversized request through to the device, which refuses it
LIMITS = {"max_smem_per_block_optin": 4 << 20}


def test_a_faulty_sweep_ends_with_every_status_right(tmp_path: Path) -> None:
    started = time.monotonic()
    timing = {"timeout_s": TIMEOUT_S}
    found = measure_study(tmp_path, KERNELS, EXPERIMENTS, 5, timing=timing, device_limits=LIMITS)
    found = found["faults"]
    elapsed = time.monotonic() - started
    for config_id, record in found.items():
        fault = int(config_id.split("_")[0].removeprefix("FAULT="))
        assert record["status"] == EXPECTED[fault], (config_id, record["error"])
    nan = next(r for c, r in found.items() if c.startswith("FAULT=3_"))
    assert "are NaN or Inf written by the kernel" in nan["error"] and nan["time_ms"] > 0
    assert elapsed < BOUND_S, f"the sweep took {elapsed:.0f} s"
    study = load_study({"kernels_dir": str(KERNELS), "device_limits": LIMITS,
                        "experiments": EXPERIMENTS})  # fmt: skip
    settings = dataclasses.replace(study.ncu, chunk_size=2)
    out = tmp_path / "ncu_long.parquet"
    member = Member(tmp_path / "f.faults.plan.json", tmp_path / "f.faults.measure.json", tmp_path)
    profile_stage([member], tmp_path / "chunks", settings, lambda line: None)
    assert json.loads((tmp_path / "profile_errors.json").read_text()) == {}
    profiled = set(pd.read_parquet(out)["config_id"])  # what ran to the end, the NaN writer too
    assert profiled == {c for c, r in found.items() if r["status"] in ("ok", "wrong_result")}
