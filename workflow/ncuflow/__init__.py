"""ncuflow: verify, time and profile CUDA kernel variants under Nsight Compute.

Each stage of the Snakemake workflow is a module here with plain functions:
spec (kernel families and variants), expr (safe expressions), config (validation),
expand (configurations), vocab (statuses and NVTX names every stage shares), problem
(inputs drawn, outputs poisoned and checked against the reference), harness (compile,
launch, time; GPU or host) with timing (adaptive repeats), profile (ncu), ncu_rep (the
report at full precision), metrics (the registry of counters, ceilings and columns),
derive (registry columns per configuration), analysis (roofs and the bound rule),
ceilings (measured ceilings), collect, plots, summary (the seeds' tables), device, replay,
results (reading a run back) and compare (two runs, configuration by configuration).

In a notebook::

    import ncuflow
    table = ncuflow.load("results")              # every experiment's table, one DataFrame
    long = ncuflow.load("results", metrics=True)  # every ncu metric of every kernel
    ncuflow.compare("resources/captures/h100-sxm", "results")  # (per configuration, only one side)
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "compare", "load", "tables"]


def __getattr__(name: str) -> Any:
    """The public API, imported when first used: worker processes that import the package
    for one stage do not pay for pandas and matplotlib."""
    if name in {"load", "tables"}:
        from . import results

        return getattr(results, name)
    if name == "compare":
        from .compare import compare

        return compare
    raise AttributeError(f"module 'ncuflow' has no attribute {name!r}")
