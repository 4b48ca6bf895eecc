import os
import stat
from pathlib import Path

import pytest

from ncuflow.errors import NcuflowError
from ncuflow.metrics import required_metrics
from ncuflow.profile import (
    PERMISSION_HELP,
    available_metrics,
    find_ncu,
    ncu_command,
    run_ncu,
)


def test_one_command_profiles_every_configuration_range() -> None:
    command = ncu_command(
        "ncu", Path("out/profile"), ["SpeedOfLight", "Occupancy"], "none",
        [*required_metrics(), "sm__x.sum"],
        ["python", "-m", "ncuflow.harness", "profile-worker", "plan.json", "measure.json"],
    )  # fmt: skip
    text = " ".join(command)
    assert "--nvtx --nvtx-include regex:ncuflow_.*/" in text
    assert "--clock-control none" in text and "-o out/profile" in text
    assert "--section SpeedOfLight --section Occupancy" in text
    metrics = command[command.index("--metrics") + 1].split(",")
    assert metrics == [*required_metrics(), "sm__x.sum"]
    # the registry's counters: FLOPs by precision, the hierarchical levels, the dense peaks
    for metric in ("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
                   "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
                   "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained",
                   "lts__lts2xbar_cycles_active.sum",
                   "l1tex__lsu_writeback_active_mem_lgds.sum",
                   "lts__t_sectors_srcunit_tex_op_write.sum"):  # fmt: skip
        assert metric in metrics
    assert command[-6:] == ["python", "-m", "ncuflow.harness", "profile-worker", "plan.json",
                            "measure.json"]  # fmt: skip


def test_missing_ncu_says_how_to_point_at_it() -> None:
    with pytest.raises(
        NcuflowError, match=r"no such program is on PATH.*set ncu.path in config.yaml"
    ):
        find_ncu("no-such-ncu-anywhere")


def _fake_ncu(tmp_path: Path, output: str, code: int) -> str:
    path = tmp_path / "ncu"
    path.write_text(f"#!/bin/sh\necho '{output}'\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_counter_permission_error_explains_the_fix(tmp_path: Path) -> None:
    ncu = _fake_ncu(tmp_path, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", 1)
    with pytest.raises(NcuflowError) as info:
        run_ncu([ncu], lambda line: None)
    assert str(info.value) == PERMISSION_HELP
    assert "NVreg_RestrictProfilingToAdminUsers=0" in PERMISSION_HELP


def test_ncu_failure_shows_ncu_errors(tmp_path: Path) -> None:
    ncu = _fake_ncu(tmp_path, "==ERROR== Failed to find metric sm__nope", 1)
    logged: list[str] = []
    with pytest.raises(NcuflowError, match=r"exit code 1\):\n==ERROR== Failed to find metric"):
        run_ncu([ncu], logged.append)
    assert logged == ["==ERROR== Failed to find metric sm__nope"]


def test_ncu_success_returns_seconds(tmp_path: Path) -> None:
    assert run_ncu([_fake_ncu(tmp_path, "==PROF== Report: x", 0)], lambda line: None) >= 0
    assert os.access(tmp_path / "ncu", os.X_OK)


def test_metrics_this_gpu_lacks_are_not_asked_for(tmp_path: Path) -> None:
    # what `ncu --query-metrics` prints: a header, then one base metric per line
    listing = "Device NVIDIA A100\\nMetric Name  Metric Description\\n" + "\\n".join(
        f"{m}  some words" for m in ("dram__bytes", "sm__cycles_elapsed")
    )
    path = tmp_path / "ncu"
    path.write_text(f"#!/bin/sh\nprintf '{listing}\\n'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    logged: list[str] = []
    wanted = ["dram__bytes.sum", "sm__cycles_elapsed.avg.per_second",
              "sm__ops_path_tensor_src_fp8.sum", "launch__waves_per_multiprocessor"]  # fmt: skip
    kept = available_metrics(str(path), wanted, logged.append)
    assert kept == ["dram__bytes.sum", "sm__cycles_elapsed.avg.per_second",
                    "launch__waves_per_multiprocessor"]  # fmt: skip
    assert "sm__ops_path_tensor_src_fp8.sum" in logged[0]
