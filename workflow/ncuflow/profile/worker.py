"""The profile worker (``python -m ncuflow.profile.worker PLAN MEASURE [CONFIG ...]``): the
process ncu profiles. It launches each configuration that ran to the end once (module
load and library set-up first, outside the range), then once inside an NVTX range named
after its configuration id, which is how the report's kernels map back to configurations.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..gpu import cupy
from ..measure.build import build_launcher
from ..measure.problem import by_size, inputs_seed, problem_for
from ..plan import Plan, profiled_ids, read_records
from ..spec import load_variant
from ..vocab import nvtx_name


def worker_command(plan: Path, measure: Path, only: Sequence[str] = ()) -> list[str]:
    """The command ncu runs: the worker over ``plan``'s configurations in ``only``."""
    return [sys.executable, "-m", "ncuflow.profile.worker", str(plan), str(measure), *only]


def profile_worker(plan_path: Path, measure_path: Path, only: Sequence[str]) -> int:
    """Each ok configuration once, inside its NVTX range; ``only`` restricts it to some
    configurations (a chunk, or the benchmark's one-per-process loop)."""
    cp = cupy()
    from cupy.cuda import nvtx

    plan = Plan.load(plan_path)
    family, variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
    profiled = set(profiled_ids(read_records(measure_path), variant.profiled))
    rows = [row for row in plan.configs if row.config_id in profiled]
    if only:
        rows = [row for row in rows if row.config_id in only]
    seed = inputs_seed(plan)
    for group in by_size(rows):
        problem = problem_for(plan, family, variant, group[0], seed, checked=False)
        for row in group:
            launcher = build_launcher(family, variant, row, problem)
            launcher.launch()  # module load and library set-up stay outside the range
            cp.cuda.runtime.deviceSynchronize()
            nvtx.RangePush(nvtx_name(row.config_id))
            launcher.launch()
            nvtx.RangePop()
            cp.cuda.runtime.deviceSynchronize()
        del problem
    return 0


if __name__ == "__main__":  # ncu runs it: python -m ncuflow.profile.worker PLAN MEASURE [ID ...]
    sys.exit(profile_worker(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]))
