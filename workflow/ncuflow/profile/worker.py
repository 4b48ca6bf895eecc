"""The profile worker (``python -m ncuflow.profile.worker WORKLIST``): the process ncu
profiles. The work list (profile.members) names, for each measure job of a chunk, its plan,
its records and the configurations to launch. Each runs once (module load and library
set-up first, outside the range), then once inside an NVTX range named after its target id
(``<variant>.<part>.<config_id>``), which is how the report's kernels map back to jobs and
configurations. At its end it says where its time went (start, inputs, builds, warm-up
launches, and the profiled launches, which hold ncu's replay passes).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..gpu import cupy
from ..measure.build import timed_build
from ..measure.problem import by_size, inputs_seed, problem_for
from ..plan import Plan, profiled_ids, read_records
from ..runlog import add_time, process_started
from ..spec import load_variant
from ..vocab import nvtx_name, target_id


def worker_command(worklist: Path) -> list[str]:
    """The command ncu runs: the worker over a chunk's work list."""
    return [sys.executable, "-m", "ncuflow.profile.worker", str(worklist)]


def launch_member(
    plan_path: Path,
    measure_path: Path,
    member: str,
    ids: list[str],
    phases: dict[str, float],
    notes: set[str],
) -> None:
    """Each of ``ids`` that ran to the end once, inside its NVTX range; the seconds each
    step took go into ``phases``, why a build was compiled here into ``notes``."""
    cp = cupy()
    from cupy.cuda import nvtx

    plan = Plan.load(plan_path)
    family, variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
    profiled = set(profiled_ids(read_records(measure_path), variant.profiled)) & set(ids)
    rows = [row for row in plan.configs if row.config_id in profiled]
    seed = inputs_seed(plan)
    for group in by_size(rows):
        with add_time(phases, "inputs"):
            problem = problem_for(plan, family, variant, group[0], seed, checked=False)
        for row in group:
            launcher = timed_build(family, variant, row, problem, phases, notes)
            with add_time(phases, "warm-up"):
                launcher.reset()
                launcher.launch()  # module load and library set-up stay outside the range
                launcher.reset()  # inouts as the timed launches saw them, outside the range
                cp.cuda.runtime.deviceSynchronize()
            with add_time(phases, "profiled"):
                nvtx.RangePush(nvtx_name(target_id(member, row.config_id)))
                launcher.launch()
                nvtx.RangePop()
                cp.cuda.runtime.deviceSynchronize()
        del problem


def profile_worker(worklist: Path) -> int:
    phases = {"start": time.time() - process_started()}  # the interpreter, imports, CuPy
    entries, notes = json.loads(worklist.read_text()), set()
    for entry in entries:
        launch_member(Path(entry["plan"]), Path(entry["measure"]), entry["member"], entry["ids"],
                      phases, notes)  # fmt: skip
    count = sum(len(entry["ids"]) for entry in entries)
    spent = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items())
    print(f"where the profiled process's time went ({count} configurations): {spent}",
          *sorted(notes), sep="\n", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":  # ncu runs it: python -m ncuflow.profile.worker WORKLIST
    sys.exit(profile_worker(Path(sys.argv[1])))
