"""The profile worker (``python -m ncuflow.profile.worker WORKLIST``): the process ncu
profiles. The work list (profile.members) names, for each measure job of a chunk, its plan,
its records and the configurations to launch. Each runs once (module load and library
set-up first, outside the range), then once inside an NVTX range named after its target id
(``<variant>.<part>.<config_id>``), which is how the report's kernels map back to jobs and
configurations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..gpu import cupy
from ..measure.build import build_launcher
from ..measure.problem import by_size, inputs_seed, problem_for
from ..plan import Plan, profiled_ids, read_records
from ..spec import load_variant
from ..vocab import nvtx_name, target_id


def worker_command(worklist: Path) -> list[str]:
    """The command ncu runs: the worker over a chunk's work list."""
    return [sys.executable, "-m", "ncuflow.profile.worker", str(worklist)]


def launch_member(plan_path: Path, measure_path: Path, member: str, ids: list[str]) -> None:
    """Each of ``ids`` that ran to the end once, inside its NVTX range."""
    cp = cupy()
    from cupy.cuda import nvtx

    plan = Plan.load(plan_path)
    family, variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
    profiled = set(profiled_ids(read_records(measure_path), variant.profiled)) & set(ids)
    rows = [row for row in plan.configs if row.config_id in profiled]
    seed = inputs_seed(plan)
    for group in by_size(rows):
        problem = problem_for(plan, family, variant, group[0], seed, checked=False)
        for row in group:
            launcher = build_launcher(family, variant, row, problem)
            launcher.reset()
            launcher.launch()  # module load and library set-up stay outside the range
            launcher.reset()  # inouts as the timed launches saw them, outside the range too
            cp.cuda.runtime.deviceSynchronize()
            nvtx.RangePush(nvtx_name(target_id(member, row.config_id)))
            launcher.launch()
            nvtx.RangePop()
            cp.cuda.runtime.deviceSynchronize()
        del problem


def profile_worker(worklist: Path) -> int:
    for entry in json.loads(worklist.read_text()):
        launch_member(Path(entry["plan"]), Path(entry["measure"]), entry["member"], entry["ids"])
    return 0


if __name__ == "__main__":  # ncu runs it: python -m ncuflow.profile.worker WORKLIST
    sys.exit(profile_worker(Path(sys.argv[1])))
