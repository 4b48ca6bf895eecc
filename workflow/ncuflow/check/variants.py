"""Each variant of a study checked without a GPU: every tunable set compiled with NVRTC
for the target architecture (as the GPU path compiles it, on every core, into the compile
stage's cache of this folder, which a check again and a run here reuse), the family's
inputs drawn and its reference computed with NumPy at the smallest size, and a host
variant run and checked for real. Planning the study has already imported family.py, bound
every function it names and evaluated every expression of the grid.

One line per variant, with one of three words: ``ok`` (all of the above done and passed),
``not checked`` (a part of it this machine cannot do: a library call on the GPU, a module
or NVRTC it lacks) or ``WRONG`` (what failed); then one line counting each."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..compile.ptxas import report_path, spilled_bytes
from ..compile.stage import Build, compile_all, variant_builds
from ..errors import NcuflowError
from ..measure.problem import Problem, inputs_seed
from ..measure.worker import measure_config, missing_modules
from ..nvrtc import INSTALL, CompileFailed, bindings, compile_cubin, version
from ..plan import Plan
from ..spec.model import Variant
from ..study.config import Study
from ..vocab import CUBINS, OK

SAMPLE = 16  # configurations of a search's space checked: a space may hold millions
TARGET = "sm_90"  # the H100's: what a variant without an arch of its own is compiled for
# What a variant's line says it is: checked and right, not (fully) checked here, or wrong.
PASSED, NOT_CHECKED, WRONG = "ok", "not checked", "WRONG"
STATUSES = (PASSED, NOT_CHECKED, WRONG)


@dataclass(frozen=True)
class Checked:
    """One variant's check: its status (one of STATUSES), and what was done or what is
    wrong."""

    experiment: str
    variant: str
    status: str
    said: str

    def line(self) -> str:
        return f"{self.experiment}/{self.variant}: {self.status}: {self.said}"


def check_study(study: Study, arch: str = TARGET, workers: int = 1,
                say: Callable[[str], None] = print) -> Iterator[Checked]:  # fmt: skip
    """Each variant of each experiment, in the study's order: of a search's space, a sample
    of what can run (the search proposes from all of it). Every CUDA build is compiled
    first, on ``workers`` processes (_compile_ahead, which ``say``s so)."""
    planned: list[tuple[str, str, Plan | str, str, dict[str, Build]]] = []
    for experiment, variant in study.jobs():
        try:
            plan, sampled = _plan(study, experiment, variant)
            planned.append((experiment, variant, plan, sampled, _builds(study, plan, arch)))
        except NcuflowError as exc:  # no plan: why, on the variant's line
            planned.append((experiment, variant, str(exc), "", {}))
    _compile_ahead([b for *_, builds in planned for b in builds.values()], workers, say)
    for experiment, variant, plan, sampled, builds in planned:
        try:
            if not isinstance(plan, Plan):
                raise NcuflowError(plan)
            status, said = _check(plan, study, arch, builds)
        except NcuflowError as exc:
            status, said = WRONG, str(exc)
        yield Checked(experiment, variant, status, sampled + said)


def _plan(study: Study, experiment: str, variant: str) -> tuple[Plan, str]:
    """The plan checked, and what it samples of a search's space ("" for a grid)."""
    exp = study.experiments[experiment]
    if not exp.search.searches:
        return study.plan(experiment, variant), ""
    pending = exp.scans[variant].pending
    taken = sorted(random.Random(0).sample(list(pending), min(SAMPLE, len(pending))))
    plan = study.variant_plan(experiment, variant).plan.with_configs(
        [exp.grids[variant].row_at(p) for p in taken])  # fmt: skip
    return plan, f"a search's sample of {len(taken)} of its {len(pending)}: "


def study_builds(study: Study, arch: str = TARGET) -> list[Build]:
    """Every CUDA build a check of ``study`` compiles."""
    plans = [_plan(study, e, v)[0] for e, v in study.jobs()]
    return [b for plan in plans for b in _builds(study, plan, arch).values()]


def _builds(study: Study, plan: Plan, arch: str) -> dict[str, Build]:
    """A plan's CUDA builds by build key, named as the compile stage names them in its
    cache (CUBINS, in this folder); none where the variant is no CUDA or cannot be built
    here."""
    family = study.experiments[plan.experiment].family
    variant = family.variant(plan.variant)
    if not variant.is_cuda or bindings() is None or missing_modules(variant):
        return {}
    return variant_builds(family, variant, plan.pending, arch, version(), Path(CUBINS))


def _compile_ahead(builds: list[Build], workers: int, say: Callable[[str], None]) -> None:
    """Every build the compile stage's cache lacks, compiled into it on ``workers``
    processes: the check finds them there, a check again compiles only what changed, and a
    run in this folder (on a GPU of the check's architecture) compiles none of them again.
    What NVRTC refuses is left to the check, which compiles it again to say why; where the
    cache cannot be written, each variant compiles on its own."""
    work = {b.path: b for b in builds if not _reported(Path(b.path))}
    if not work:
        return
    say(f"ncuflow check: compiling {len(work)} build(s) on {workers} process(es) into "
        f"{CUBINS}/ ({len(set(b.path for b in builds)) - len(work)} there already)")  # fmt: skip
    try:
        Path(CUBINS).mkdir(parents=True, exist_ok=True)
        compile_all(list(work.values()), workers)
    except (NcuflowError, OSError) as exc:
        say(f"ncuflow check: compiling ahead failed ({exc}): each variant compiles on its own")


def summary(counts: Counter[str]) -> str:
    """The last line: how many variants are ok, not checked and wrong."""
    total = sum(counts.values())
    line = f"{total} variant(s): " + ", ".join(f"{counts[s]} {s.lower()}" for s in STATUSES)
    if counts[NOT_CHECKED]:  # no failure, and no pass either: said so
        line += (" (not checked: this machine cannot run them, as each line says; a run on a "
                 "GPU checks them)")  # fmt: skip
    return line


def print_check(study: Study, arch: str = TARGET, workers: int | None = None) -> int:
    """Check every variant (compiling on ``workers`` processes, by default a core each that
    this process may use), one line each on the terminal as it is done, then the counts;
    how many are wrong (``ncuflow check``, and a run with ``mode: check``). A variant not
    checked is no failure, and is never counted as ok. Progress goes to stderr."""
    counts: Counter[str] = Counter()
    workers = workers or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                          else os.cpu_count() or 1)  # fmt: skip
    progress = functools.partial(print, file=sys.stderr, flush=True)
    for checked in check_study(study, arch, workers, progress):
        print(f"ncuflow check: {checked.line()}", flush=True)
        counts[checked.status] += 1
    print(f"ncuflow check: {summary(counts)}", flush=True)
    return counts[WRONG]


def _reported(cubin: Path) -> bool:
    """Whether the cache holds a build and ptxas's report of it (not a cache from before
    the reports were kept)."""
    return cubin.is_file() and report_path(cubin).is_file()


def _compiled(variant: Variant, arch: str, builds: dict[str, Build]) -> str:
    """Every distinct tunable set (and dtype) of the plan compiled (in the cache, or here
    under the variant's own file name, which NVRTC's messages then name): what was done,
    with the builds that spill registers, or the first refusal as an error, naming the
    first configuration of that build."""
    spills: dict[str, int] = {}
    for build in builds.values():
        row = build.row.config_id if build.row else variant.name
        if _reported(Path(build.path)):
            spills[row] = spilled_bytes(report_path(Path(build.path)).read_text())
            continue
        try:
            spills[row] = spilled_bytes(
                compile_cubin(build.source, variant.path.name, build.options).log
            )
        except CompileFailed as exc:
            shown = "\n".join(str(exc).splitlines()[:6])
            raise NcuflowError(f"{row} does not compile for {variant.arch or arch} with "
                               f"NVRTC:\n{shown}") from None  # fmt: skip
    said = f"{len(builds)} tunable set(s) compiled for {variant.arch or arch}"
    spilling = {row: n for row, n in spills.items() if n}
    if spilling:  # slower, not wrong: local memory stands in for the registers
        worst = max(spilling, key=spilling.__getitem__)
        said += (f", {len(spilling)} of them spilling registers (ptxas: up to "
                 f"{spilling[worst]} bytes of spill stores, at {worst})")  # fmt: skip
    return said


def _check(plan: Plan, study: Study, arch: str, builds: dict[str, Build]) -> tuple[str, str]:
    """(status, what was done): NOT_CHECKED where a part of the check cannot run here, its
    reason first."""
    family = study.experiments[plan.experiment].family
    variant = family.variant(plan.variant)
    missing = missing_modules(variant)
    if missing:
        return NOT_CHECKED, f"it requires {', '.join(missing)}, which this machine lacks"
    status, done = PASSED, []
    if variant.is_cuda and bindings() is None:
        status = NOT_CHECKED
        done.append(f"not compiled: NVRTC's Python bindings are not installed ({INSTALL})")
    elif variant.is_cuda:
        done.append(_compiled(variant, arch, builds))
    elif variant.runs_on == "gpu":
        status = NOT_CHECKED
        done.append("its library calls run only on a GPU")
    row = min(plan.pending, key=lambda r: (math.prod(r.dims.values()), r.config_id))
    size = ", ".join(f"{k}={v}" for k, v in row.dims.items())
    try:
        problem = Problem(family, variant, row.dims, plan.scalars_of(row), inputs_seed(plan),
                          (row.dtype, row.out_dtype), np)  # fmt: skip
    except ImportError as exc:  # pinned host memory wants CUDA
        return NOT_CHECKED, "; ".join([*done, f"inputs not drawn here ({exc})"])
    done.append(f"inputs drawn and the reference computed at {size}")
    if variant.runs_on == "cpu":  # needs no CUDA: run it and check it for real
        timing = dataclasses.replace(plan.timing, warmup=1, min_repeats=3, max_repeats=3)
        record = measure_config(family, variant, row, problem, timing, None)
        if record.status != OK:
            return WRONG, f"{row.config_id}: {record.status}: {record.error}"
        done.append(f"run on the host and checked at {size} ({record.time_ms:.3g} ms)")
    return status, "; ".join(done)
