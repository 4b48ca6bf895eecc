"""The measuring worker (``python -m ncuflow.measure.worker WORKLIST JOURNAL``): a process
that compiles, checks and times every pending configuration of the plans its work list
names (the measure jobs of a batch, in order) that has no record in the journal yet,
appending each record, under its target id, as it is made.

It runs apart from the stage (measure.stage), which restarts it when a kernel takes the
CUDA context down (the worker then exits with ``EXIT_CONTEXT_LOST``) or kills it when a
configuration outlives its time limit.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from ..gpu import cuda_errors, cupy, gpu_properties, measured_on
from ..nvml import ClockWatch, PowerWatch
from ..plan import ConfigRow, Plan, Record, Timing, unfinished
from ..runlog import add_time
from ..spec import Family, Variant, load_variant
from ..vocab import COMPILE_ERROR, LAUNCH_ERROR, OK, SKIPPED, WRONG_RESULT, target_id
from . import journal
from .build import LaunchRefused, timed_build
from .clock import Gate, l2_flush, time_config
from .energy import gpu_energy, host_energy
from .journal import EXIT_CONTEXT_LOST
from .problem import Problem, Work, by_problem, fresh_seed, inputs_seed
from .timing import TimingPolicy, with_round

_TMP_SOURCE = re.compile(r"\S*/tmp[^\s:]*\.cu")


def _errors(
    variant: Variant,
) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(errors of building a launcher, errors of running it): CUDA's for a GPU variant;
    a host variant's exceptions are bugs that stop the worker with their traceback."""
    if variant.runs_on == "cpu":
        return (), ()
    from cupy.cuda.compiler import CompileException

    cuda = cuda_errors()
    return (CompileException, *cuda), cuda


def _synchronize(variant: Variant) -> None:
    if variant.runs_on == "gpu":
        cupy().cuda.runtime.deviceSynchronize()


def context_alive() -> bool:
    """Whether this process's CUDA context still works after a failed launch."""
    cp = cupy()
    try:
        cp.cuda.runtime.deviceSynchronize()
        probe = cp.ones(1, dtype=cp.float32)
        return float(probe.sum()) == 1.0
    except cuda_errors():
        return False


def measure_config(
    family: Family,
    variant: Variant,
    row: ConfigRow,
    problem: Problem,
    timing: Timing,
    flush: Callable[[], None] | None,
    gate: Gate | None = None,
    phases: dict[str, float] | None = None,
    notes: set[str] | None = None,
    watch: ClockWatch | None = None,
    power: PowerWatch | None = None,
) -> Record:
    """Compile, check (poisoned outputs against the reference), then time one configuration;
    the seconds each took go into ``phases`` (build: loading the compile stage's cubin and
    binding arguments; compile where CuPy compiled instead, and why into ``notes``; first
    launch: the checked one, with its module load, a library's set-up, Triton's JIT; check:
    the comparison; timing; energy, where timing.energy_s asks for it and it checked)."""
    phases = {} if phases is None else phases
    build_errors, run_errors = _errors(variant)
    try:
        launcher = timed_build(family, variant, row, problem, phases,
                               set() if notes is None else notes)  # fmt: skip
    except LaunchRefused as exc:
        return Record.failed(LAUNCH_ERROR, str(exc))
    except build_errors as exc:  # a kernel name missing from the cubin too
        return Record.failed(COMPILE_ERROR, _TMP_SOURCE.sub(variant.path.name, str(exc)).strip())
    record = Record(OK, **launcher.attributes)
    try:
        with add_time(phases, "first launch"):
            problem.poison()
            launcher.launch()
            _synchronize(variant)
    except run_errors as exc:
        return record.updated(status=LAUNCH_ERROR, error=f"checked launch failed: {exc}")
    with add_time(phases, "check"):
        outcome = problem.check()
    record = record.updated(rel_error=outcome.rel_error, max_abs_error=outcome.max_abs_error)
    if not outcome.ok:  # timed and profiled all the same, but never "best"
        record = record.updated(status=WRONG_RESULT, error=outcome.message)
    try:
        with add_time(phases, "timing"):
            timed = time_config(launcher, TimingPolicy.from_timing(timing), flush, gate,
                                watch=watch)  # fmt: skip
    except run_errors as exc:
        return record.updated(status=LAUNCH_ERROR, error=f"timed launch failed: {exc}")
    record = record.updated(**timed)
    if timing.energy_s is None or record.status != OK:
        return record
    try:
        with add_time(phases, "energy"):
            if launcher.on_host:
                energy = host_energy(launcher.launch, timing.energy_s)
            else:
                most = watch.max_mhz if watch else gpu_properties()["sm_clock_max_mhz"]
                # the worker's one watch (a new one would warm the GPU up again)
                energy = gpu_energy(launcher.launch, launcher.gated, timing.energy_s,
                                    timed["time_ms"], power or PowerWatch(), most)  # fmt: skip
    except run_errors as exc:
        return record.updated(status=LAUNCH_ERROR, error=f"launch for energy failed: {exc}")
    return record.updated(**energy, energy_wall_s=phases["energy"])


def missing_modules(variant: Variant) -> list[str]:
    """The Python modules a variant requires that this machine lacks."""
    return [m for m in variant.requires if importlib.util.find_spec(m) is None]


def retime(work: Work, problem: Problem, record: Record, flush: Callable[[], None] | None,
           gate: Gate | None, watch: ClockWatch | None) -> Record:  # fmt: skip
    """One more round of timing of a configuration timed before (timing.rounds): built
    again (the cubin loaded anew; not checked again), timed as the first round was, and the
    round added to its record; a launch that fails now makes it a launch error, its earlier
    rounds kept."""
    build_errors, run_errors = _errors(work.variant)
    round_number = record.rounds_timed + 1
    try:
        launcher = timed_build(work.family, work.variant, work.row, problem, {}, set())
        launcher.reset()  # one untimed launch: the module's load, a library's set-up
        launcher.launch()
        _synchronize(work.variant)
        timed = time_config(launcher, TimingPolicy.from_timing(work.plan.timing), flush, gate,
                            watch=watch)  # fmt: skip
    except (LaunchRefused, *build_errors, *run_errors) as exc:
        return record.updated(status=LAUNCH_ERROR, error=f"round {round_number} failed: {exc}")
    merged = {**timed, **with_round(record.times_ms or [], record.round_repeats,
                                    timed["times_ms"])}  # fmt: skip
    # what any round said stays said: its note, that it was unstable, that it throttled
    merged["time_note"] = "; ".join(dict.fromkeys(filter(None, [record.time_note,
                                                                timed["time_note"]])))  # fmt: skip
    merged["time_unstable"] = bool(record.time_unstable or timed["time_unstable"])
    if "time_throttled" in timed:
        merged["time_throttled"] = bool(record.time_throttled or timed["time_throttled"])
    return record.updated(**merged)


def measure_worker(worklist: Path, journal_path: Path) -> int:
    """Measure every pending configuration of the work list's plans that has no record in
    the journal yet, and time once more each whose record has fewer rounds than its timing
    asks; append each record, under its target id, as it is made. One round per process:
    the stage starts a fresh worker for the next (measure.stage), so each round has its own
    process, context and allocations, and every configuration of the job is timed in a
    round before any in the next (rounds interleave). Configurations of one problem
    (Work.problem_key) go together, whatever their variant: inputs and the reference once
    per problem."""
    done, _ = journal.read(journal_path)
    fresh, works = fresh_seed(), []
    for entry in json.loads(worklist.read_text()):
        plan = Plan.load(Path(entry["plan"]))
        family, variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
        member, rounds = entry["member"], plan.timing.round_count
        todo = [row for row in plan.pending
                if unfinished(done.get(target_id(member, row.config_id)), rounds)]  # fmt: skip
        if todo and not _skipped_for_modules(plan, variant, todo, entry["member"], journal_path):
            seed = inputs_seed(plan, fresh)
            for row in todo:  # a later round times on the inputs of the first (its seed)
                earlier = done.get(target_id(member, row.config_id))
                first = earlier.seed if earlier is not None and earlier.seed is not None else seed
                works.append(Work(plan, family, variant, member, row, first))
    first_gpu = next((w for w in works if w.variant.runs_on == "gpu"), None)
    timers: tuple[Callable[[], None] | None, Gate | None] = (None, None)  # L2 flush, gate
    watch = None  # the SM clock and throttling while each GPU configuration is timed
    power = None  # NVML's energy and power while one runs back to back (timing.energy_s)
    if first_gpu is not None:
        timers = (l2_flush() if first_gpu.plan.timing.flush_l2 else None), Gate()
        watch = ClockWatch(gpu_properties()["sm_clock_max_mhz"])
        power = PowerWatch()
    devices = {on: measured_on(on) for on in {w.variant.runs_on for w in works}}
    for group in by_problem(works):
        drawn: dict[str, float] = {}
        # the inputs and the reference, once per problem (no reference where every
        # configuration of it is only timed again)
        checked = any(target_id(w.member, w.row.config_id) not in done for w in group)
        with add_time(drawn, "inputs"):
            problem = group[0].problem(checked)
        for work in group:
            plan, variant = work.plan, work.variant
            flush, gate = timers if variant.runs_on == "gpu" else (None, None)
            target = target_id(work.member, work.row.config_id)
            journal.started(journal_path, target)
            phases, drawn, notes = dict(drawn), {}, set()  # a problem's first carries its inputs
            if target in done:  # timed in an earlier round (process): one round more
                record = retime(work, problem, done[target], flush, gate, watch)
            else:
                record = measure_config(work.family, variant, work.row, problem, plan.timing,
                                        flush, gate, phases, notes, watch, power)  # fmt: skip
                record = record.updated(seed=work.seed, fingerprint=plan.fingerprint(work.row),
                                        device=devices[variant.runs_on])  # fmt: skip
            journal.finished(journal_path, target, record, phases, notes)
            if record.status == LAUNCH_ERROR and not context_alive():
                return EXIT_CONTEXT_LOST
        del problem
    return 0


def _skipped_for_modules(
    plan: Plan, variant: Variant, todo: list[ConfigRow], member: str, journal_path: Path
) -> bool:
    """Whether the variant requires Python modules this machine lacks; if so, each of its
    configurations in ``todo`` is recorded as skipped."""
    missing = missing_modules(variant)
    if missing:  # decided where the job runs: a vendor library may be on the GPU machine only
        reason = (f"variant {variant.name} requires {', '.join(missing)}, which this machine "
                  "does not have; it is skipped, never faked")  # fmt: skip
        for row in todo:
            journal.finished(journal_path, target_id(member, row.config_id),
                             Record.failed(SKIPPED, reason, plan.fingerprint(row)))  # fmt: skip
    return bool(missing)


if __name__ == "__main__":  # measure.stage starts it: python -m ncuflow.measure.worker WORK JOURNAL
    sys.exit(measure_worker(Path(sys.argv[1]), Path(sys.argv[2])))
