"""Each variant of a study checked without a GPU: every tunable set compiled with NVRTC
for the target architecture (as the GPU path compiles it), the family's inputs drawn and
its reference computed with NumPy at the smallest size, and a host variant run and
checked for real. Planning the study has already imported family.py, bound every function
it names and evaluated every expression of the grid. One line per variant."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..compile.cubins import compile_options, nvrtc_options
from ..errors import NcuflowError
from ..measure.problem import Problem, inputs_seed
from ..measure.worker import measure_config, missing_modules
from ..nvrtc import INSTALL, CompileFailed, bindings, compile_cubin
from ..plan import ConfigRow, Plan
from ..spec.model import Variant
from ..study.config import Study
from ..vocab import OK

TARGET = "sm_90"  # the H100's: what a variant without an arch of its own is compiled for


@dataclass(frozen=True)
class Checked:
    """One variant's check: whether it passed, and what was done or what is wrong."""

    experiment: str
    variant: str
    ok: bool
    said: str

    def line(self) -> str:
        return f"{self.experiment}/{self.variant}: {'ok' if self.ok else 'WRONG'}: {self.said}"


def check_study(study: Study, arch: str = TARGET) -> Iterator[Checked]:
    """Each variant of each experiment, in the study's order."""
    for experiment, variant in study.jobs():
        try:
            ok, said = _check(study.plan(experiment, variant), study, arch)
        except NcuflowError as exc:
            ok, said = False, str(exc)
        yield Checked(experiment, variant, ok, said)


def print_check(study: Study, arch: str = TARGET) -> int:
    """Check every variant, one line each on the terminal as it is done; how many are
    wrong (``ncuflow check``, and a run with ``mode: check``)."""
    wrong = 0
    for checked in check_study(study, arch):
        print(f"ncuflow check: {checked.line()}", flush=True)
        wrong += not checked.ok
    return wrong


def _compiled(plan: Plan, variant: Variant, study: Study, arch: str) -> str:
    """Every distinct tunable set (and dtype) of the plan compiled: what was done, or the
    first refusal as an error."""
    if bindings() is None:
        return f"not compiled (NVRTC's Python bindings are not installed: {INSTALL})"
    family = study.experiments[plan.experiment].family
    sets: dict[tuple[str, ...], ConfigRow] = {}
    for row in plan.pending:
        options = compile_options(family, variant, row.params, (row.dtype, row.out_dtype))
        sets.setdefault(nvrtc_options(options, variant, arch), row)
    for options, row in sets.items():
        try:
            compile_cubin(variant.source, variant.path.name, options)
        except CompileFailed as exc:
            shown = "\n".join(str(exc).splitlines()[:6])
            raise NcuflowError(f"{row.config_id} does not compile for {variant.arch or arch} "
                               f"with NVRTC:\n{shown}") from None  # fmt: skip
    return f"{len(sets)} tunable set(s) compiled for {variant.arch or arch}"


def _check(plan: Plan, study: Study, arch: str) -> tuple[bool, str]:
    family = study.experiments[plan.experiment].family
    variant = family.variant(plan.variant)
    if not plan.pending:
        return True, "nothing to run: every configuration is skipped"
    missing = missing_modules(variant)
    if missing:
        return True, f"not checked here: it requires {', '.join(missing)}, which this machine lacks"
    done = [_compiled(plan, variant, study, arch)] if variant.is_cuda else []
    row = min(plan.pending, key=lambda r: (math.prod(r.dims.values()), r.config_id))
    size = ", ".join(f"{k}={v}" for k, v in row.dims.items())
    try:
        problem = Problem(family, variant, row.dims, plan.scalars_of(row), inputs_seed(plan),
                          (row.dtype, row.out_dtype), np)  # fmt: skip
    except ImportError as exc:  # pinned host memory wants CUDA
        return True, "; ".join([*done, f"inputs not drawn here ({exc})"])
    done.append(f"inputs drawn and the reference computed at {size}")
    if variant.runs_on == "cpu":  # needs no CUDA: run it and check it for real
        timing = dataclasses.replace(plan.timing, warmup=1, min_repeats=3, max_repeats=3)
        record = measure_config(family, variant, row, problem, timing, None)
        if record.status != OK:
            return False, f"{row.config_id}: {record.status}: {record.error}"
        done.append(f"run on the host and checked at {size} ({record.time_ms:.3g} ms)")
    return True, "; ".join(done)
