"""The profile worker (``python -m ncuflow.profile.worker WORKLIST``): the process ncu
profiles. The work list (profile.members) names, for each measure job of a chunk, its plan,
its records and the configurations to launch. Each runs once (module load and library
set-up first, outside the range), then once inside an NVTX range named after its target id
(``<variant>.<part>.<config_id>``), which is how the report's kernels map back to jobs and
configurations. Configurations of one problem, whatever their variant, share its inputs
(measure.problem.by_problem). At its end it says where its time went (start, inputs, builds, warm-up
launches, and the profiled launches, which hold ncu's replay passes).

A worker started while the chunk before it is still profiled (profile.stage, a job of
several threads) is given a gate: it reads its work list and imports the Python modules its
variants require (PyTorch takes seconds), then waits for the gate file before anything
touches the GPU, so that nothing of it runs beside the other chunk's replay; its own last
launch done, it opens the next chunk's gate.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

from ..gpu import cupy
from ..measure.build import timed_build
from ..measure.problem import Work, by_problem, fresh_seed, inputs_seed
from ..plan import Plan, profiled_ids, read_records
from ..runlog import add_time, process_started
from ..spec import load_variant
from ..vocab import nvtx_name, target_id

WARM_UPS_NAMED = 3  # the variants whose warm-up launches took longest, named in the log
GATE_POLL_S = 0.01


def worker_command(worklist: Path, after: Path | None = None,
                   then: Path | None = None) -> list[str]:  # fmt: skip
    """The command ncu runs: the worker over a chunk's work list; where given, it waits for
    the file ``after`` before it touches the GPU and creates ``then`` when it is done."""
    gates = [str(p) if p else "-" for p in (after, then)] if after or then else []
    return [sys.executable, "-m", "ncuflow.profile.worker", str(worklist), *gates]


def import_required(works: list[Work]) -> None:
    """The modules the chunk's variants require, imported before the gate: their imports
    need no GPU. One that fails is left for the launch to report."""
    for name in dict.fromkeys(m for w in works for m in w.variant.requires):
        try:
            importlib.import_module(name)
        except ImportError:
            continue


def wait_for(gate: Path) -> None:
    while not gate.exists():
        time.sleep(GATE_POLL_S)


def chunk_works(entries: list[dict]) -> list[Work]:
    """The configurations a chunk's work list names that ran to the end when measured, with
    one seed for the plans that name none (so that variants share inputs)."""
    fresh, works = fresh_seed(), []
    for entry in entries:
        plan = Plan.load(Path(entry["plan"]))
        family, variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
        records = read_records(Path(entry["measure"]))
        profiled = set(profiled_ids(records, variant.profiled)) & set(entry["ids"])
        seed = inputs_seed(plan, fresh)
        works += [Work(plan, family, variant, entry["member"], row, seed)
                  for row in plan.configs if row.config_id in profiled]  # fmt: skip
    return works


def launch(works: list[Work], phases: dict[str, float], notes: set[str],
           warm_ups: dict[str, float]) -> None:  # fmt: skip
    """Each configuration once (module load and library set-up, outside every range), then
    once inside its NVTX range, problem by problem; the seconds each step took go into
    ``phases``, but each variant's warm-up seconds into ``warm_ups``, why a build was
    compiled here into ``notes``."""
    cp = cupy()
    from cupy.cuda import nvtx

    for group in by_problem(works):
        with add_time(phases, "inputs"):
            problem = group[0].problem(checked=False)
        for work in group:
            launcher = timed_build(work.family, work.variant, work.row,
                                   problem, phases, notes)  # fmt: skip
            with add_time(warm_ups, work.variant.name):
                launcher.reset()
                launcher.launch()  # module load and library set-up stay outside the range
                launcher.reset()  # inouts as the timed launches saw them, outside the range
                cp.cuda.runtime.deviceSynchronize()
            with add_time(phases, "profiled"):
                nvtx.RangePush(nvtx_name(target_id(work.member, work.row.config_id)))
                launcher.launch()
                nvtx.RangePop()
                cp.cuda.runtime.deviceSynchronize()
        del problem


def profile_worker(worklist: Path, after: Path | None = None, then: Path | None = None) -> int:
    phases = {"start": time.time() - process_started()}  # the interpreter, imports, CuPy
    works, notes, warm_ups = chunk_works(json.loads(worklist.read_text())), set(), {}
    if after is not None:
        with add_time(phases, "imports"):
            import_required(works)
        with add_time(phases, "waited"):
            wait_for(after)
    launch(works, phases, notes, warm_ups)
    if then is not None:  # the GPU is the next chunk's; ncu still writes this one's report
        then.touch()
    phases["warm-up"] = sum(warm_ups.values())
    spent = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items())
    # under ncu a library's first call (Triton's, cuDNN's) is most of a chunk's fixed cost
    slowest = sorted(warm_ups.items(), key=lambda item: -item[1])[:WARM_UPS_NAMED]
    warmest = [f"longest warm-ups: {', '.join(f'{n} {s:.1f} s' for n, s in slowest)}"
               ] if slowest else []  # fmt: skip
    print(f"where the profiled process's time went ({len(works)} configurations): {spent}",
          *warmest, *sorted(notes), sep="\n", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":  # ncu runs it: python -m ncuflow.profile.worker WORKLIST [AFTER THEN]
    gates = [None if a == "-" else Path(a) for a in sys.argv[2:4]]
    sys.exit(profile_worker(Path(sys.argv[1]), *gates))
