"""The code stays ruff-clean and the Snakemake files snakefmt-formatted."""

import shutil
import subprocess

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
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed")
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
