"""ncuflow: verify, time and profile CUDA kernel variants under Nsight Compute.

The package is a small shared base (vocab, errors, files, schema, plan, limits, ncu, gpu, nvml,
expr, metrics, reference, console, tf32) and one folder per stage, named as the workflow's
rules are: spec (kernel families and variants), study (the config and its expansion into
plans), measure, profile, analyze (derive, the bound rule, collect), device (facts and
ceilings), report (figures, summary, compare), with capture (the replay format) and
runners (the GPU and the replay implementation of the GPU stages). docs/design.md draws
the map.

In a notebook::

    import ncuflow
    table = ncuflow.run("config.yaml", cores=4)  # the study run through Snakemake, its table
    table = ncuflow.load("results")              # every experiment's table, one DataFrame
    long = ncuflow.load("results", metrics=True)  # every ncu metric of every kernel
    ncuflow.compare("resources/captures/h100-sxm", "results")  # (per configuration, only one side)
"""

from __future__ import annotations

from typing import Any

from .vocab import VERSION as __version__

__all__ = ["__version__", "compare", "load", "run", "tables"]


def __getattr__(name: str) -> Any:
    """The public API, imported when first used: worker processes that import the package
    for one stage do not pay for pandas and matplotlib."""
    if name in {"load", "tables"}:
        from .report import results

        return getattr(results, name)
    if name == "compare":
        from .report.compare import compare

        return compare
    if name == "run":
        from .api import run

        return run
    raise AttributeError(f"module 'ncuflow' has no attribute {name!r}")
