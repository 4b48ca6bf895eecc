"""The code stays ruff-clean and the Snakemake files snakefmt-formatted."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SNAKEMAKE_FILES = ["Snakefile", *map(str, sorted((ROOT / "workflow" / "rules").glob("*.smk")))]


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["snakefmt", "--check", *SNAKEMAKE_FILES],
    ],
    ids=["ruff-check", "ruff-format", "snakefmt"],
)
def test_style(command: list[str]) -> None:
    # the tool beside this Python (a venv that is not activated), else on PATH
    beside = Path(sys.executable).parent / command[0]
    tool = str(beside) if beside.exists() else shutil.which(command[0])
    if tool is None:
        pytest.skip(f"{command[0]} is not installed")
    proc = subprocess.run([tool, *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
