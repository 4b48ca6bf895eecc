import os
import stat
from pathlib import Path

import pytest

from ncuflow.errors import NcuflowError
from ncuflow.profile import COUNT_METRICS, PERMISSION_HELP, find_ncu, ncu_command, run_ncu


def test_one_command_profiles_every_configuration_range() -> None:
    command = ncu_command(
        "ncu", Path("out/profile"), ["SpeedOfLight", "Occupancy"], "none", ["sm__x.sum"],
        ["python", "-m", "ncuflow.harness", "profile-worker", "plan.json", "measure.json"],
    )  # fmt: skip
    text = " ".join(command)
    assert "--nvtx --nvtx-include regex:ncuflow_.*/" in text
    assert "--clock-control none" in text and "-o out/profile" in text
    assert "--section SpeedOfLight --section Occupancy" in text
    metrics = command[command.index("--metrics") + 1].split(",")
    assert metrics == [*COUNT_METRICS, "sm__x.sum"]
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
