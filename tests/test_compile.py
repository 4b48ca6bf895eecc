"""Every CUDA variant compiles for sm_90 with nvcc, at its defaults and at up to two other
parameter sets that the repository's configs run, without register spills."""

import itertools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from ncuflow.config import load_study
from ncuflow.spec import available_families, load_family

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
CONFIGS = [ROOT / "config.yaml", *sorted((ROOT / "experiments").glob("*.yaml")),
           *sorted((ROOT / "benchmarks").glob("*.yaml"))]  # fmt: skip


def _used_params() -> dict[tuple[str, str], list[dict[str, int]]]:
    """Distinct parameter sets of pending configurations, per (family, variant)."""
    used: dict[tuple[str, str], list[dict[str, int]]] = {}
    for path in CONFIGS:
        config = yaml.safe_load(path.read_text())
        config["kernels_dir"] = str(ROOT / "kernels")
        for experiment in load_study(config).experiments.values():
            for variant, rows in experiment.configs.items():
                seen = used.setdefault((experiment.family.name, variant), [])
                for row in rows:
                    if row["status"] == "pending" and row["params"] not in seen:
                        seen.append(row["params"])
    return used


def _cases() -> list[tuple[str, str, dict[str, int]]]:
    used = _used_params()
    cases = []
    for family_name in available_families(ROOT / "kernels"):
        family = load_family(ROOT / "kernels", family_name)
        for name, variant in family.variants.items():
            if not variant.is_cuda:
                continue
            others = [p for p in used.get((family_name, name), []) if p != variant.params]
            for params in itertools.islice([{}, *others], 3):
                cases.append((family_name, name, params))
    return cases


@pytest.mark.parametrize(
    ("family_name", "variant_name", "params"),
    _cases(),
    ids=lambda v: "_".join(f"{k}={x}" for k, x in v.items()) or "defaults"
    if isinstance(v, dict) else v,
)  # fmt: skip
def test_variant_compiles_for_sm90(
    tmp_path: Path, family_name: str, variant_name: str, params: dict[str, int]
) -> None:
    variant = load_family(ROOT / "kernels", family_name).variants[variant_name]
    defines = [f"-D{k}={v}" for k, v in params.items()]
    command = [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", *defines,
               "-o", str(tmp_path / "k.cubin"), str(variant.path)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"Compiling entry function '{variant.kernel}'" in proc.stderr
    spills = re.findall(r"(\d+) bytes spill stores", proc.stderr)
    assert spills and all(s == "0" for s in spills), proc.stderr
