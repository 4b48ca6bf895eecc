"""The CUDA builds the tests compile, compiled once per test session into one cache of the
compile stage's kind (cubins and ptxas's reports), on every core: every CUDA variant at its
defaults and at up to two other parameter sets the configs run (tests/test_compile.py), and
every build of the studies tests/test_check.py checks whole (CHECKED). Most builds are
both; each was compiled twice before."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from types import SimpleNamespace

import yaml

from conftest import ROOT, made_once
from ncuflow.check.variants import TARGET, study_builds
from ncuflow.compile.stage import Build, compile_all, variant_builds
from ncuflow.files import read_config
from ncuflow.nvrtc import version
from ncuflow.spec import available_families, load_family
from ncuflow.study.config import load_study

# (the 100,000- and 1,000,000-configuration dry-run studies are for planning, not running;
# the search of 129,600 positions runs variants the others run)
PLANNING_ONLY = ("dry_run_100k.yaml", "dry_run_1m.yaml", "warptile_search.yaml")
CONFIGS = [c for c in [ROOT / "config.yaml", *sorted((ROOT / "experiments").glob("*.yaml")),
                       *sorted((ROOT / "benchmarks").glob("*.yaml"))]
           if c.name not in PLANNING_ONLY]  # fmt: skip
# The studies tests/test_check.py checks whole, and how many variants each has.
CHECKED = {"config.yaml": 32, "experiments/transfer.yaml": 2, "experiments/transpose.yaml": 3,
           "experiments/verdicts.yaml": 7, "experiments/axpy.yaml": 5}  # fmt: skip


def _used_params() -> dict[tuple[str, str], list[dict[str, int]]]:
    """The first few distinct parameter sets of pending configurations, per (family,
    variant), in the configs' order (a search's space: its first positions that run)."""
    used: dict[tuple[str, str], list[dict[str, int]]] = {}
    for path in CONFIGS:
        config = yaml.safe_load(path.read_text())
        config["kernels_dir"] = str(ROOT / "kernels")
        for experiment in load_study(config).experiments.values():
            for variant in experiment.variants:
                seen = used.setdefault((experiment.family.name, variant), [])
                grid = experiment.grids[variant]
                for position in experiment.scans[variant].pending:
                    if len(seen) >= 3:
                        break
                    row = grid.row_at(position)
                    if row.params not in seen:
                        seen.append(row.params)
    return used


def compile_cases() -> list[tuple[Path, str, str, dict[str, int]]]:
    """Each CUDA variant of the bundled families at its defaults and at up to two other
    parameter sets the configs run; those of the test tree's families at their defaults."""
    used = _used_params()
    cases = []
    for kernels in (ROOT / "kernels", ROOT / "tests" / "data" / "kernels"):
        for family_name in available_families(kernels):
            family = load_family(kernels, family_name)
            for name, variant in family.variants.items():
                if not variant.is_cuda:
                    continue
                others = [p for p in used.get((family_name, name), []) if p != variant.params]
                for params in itertools.islice([{}, *others], 3):
                    cases.append((kernels, family_name, name, params))
    return cases


def case_build(kernels: Path, family_name: str, variant_name: str, params: dict[str, int],
               cache: Path) -> Build:  # fmt: skip
    """A case's build as the compile stage makes it for sm_90, in ``cache``."""
    family = load_family(kernels, family_name)
    variant = family.variants[variant_name]
    dtype, out_dtype = variant.dtypes()
    row = SimpleNamespace(params={**variant.params, **params}, dtype=dtype, out_dtype=out_dtype,
                          config_id=f"{variant_name} {params or 'defaults'}")  # fmt: skip
    (build,) = variant_builds(family, variant, [row], TARGET, version(), cache).values()
    return build


def bundled_cubins() -> Path:
    """The cache (a folder of cubins and ptxas's reports), made once per session: a build
    NVRTC refuses is missing from it (its test compiles it again, for NVRTC's log)."""

    def make(folder: Path) -> None:
        cache = folder / "cubins"
        cache.mkdir()
        builds = {b.path: b for b in (case_build(*case, cache) for case in compile_cases())}
        for study in CHECKED:
            loaded = load_study(read_config(ROOT / study), (ROOT / study).parent)
            for build in study_builds(loaded):  # named as the check names them: rebased
                path = str(cache / Path(build.path).name)
                builds[path] = build._replace(path=path)
        compile_all(list(builds.values()), len(os.sched_getaffinity(0)))

    return made_once("bundled-cubins", make) / "cubins"
