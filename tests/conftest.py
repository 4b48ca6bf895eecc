"""Shared fixtures. GPU tests carry @pytest.mark.gpu and skip themselves where there is no
CUDA device with CuPy and ncu (CI); run them on the GPU machine with `pytest -m gpu`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
# worker processes (the harness, ncu's target) import ncuflow too
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(ROOT / "workflow"), os.environ.get("PYTHONPATH")])
)

from ncuflow.device import cuda_device  # noqa: E402

CAPTURE = ROOT / "resources" / "captures" / "h100-sxm"
# What a copy of the workflow needs to run somewhere else.
WORKFLOW_PARTS = ("Snakefile", "config.yaml", "workflow", "kernels", "resources", "profiles",
                  "experiments")  # fmt: skip


def _gpu_missing() -> str:
    name, why = cuda_device()
    if name is None:
        return why
    return "" if shutil.which("ncu") else "ncu is not on PATH"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    why = _gpu_missing()
    if why:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=f"needs a GPU: {why}"))


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """The workflow copied into a temporary folder, to run Snakemake there."""
    for part in WORKFLOW_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tmp_path / part)
    return tmp_path


def minimal_config(**experiment: object) -> dict:
    """A one-experiment config over the matmul family; keyword arguments override its keys."""
    base = {
        "family": "matmul",
        "sizes": {"M": [64, 1023], "N": "M", "K": "M"},
        "variants": {"naive": {"params": {"BLOCK_X": [16, 32], "BLOCK_Y": [8]}}},
    }
    base.update(experiment)
    return {"kernels_dir": str(ROOT / "kernels"), "experiments": {"sq": base}}
