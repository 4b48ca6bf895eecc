"""Where a capture holds each configuration a plan asks for: replay by configuration.

A capture keeps its records per experiment and variant. A study of one's own names its
experiments as it likes, so a configuration is looked for first in the folder of the
plan's own experiment, then in the same variant's folder of every other experiment of the
capture over the same family (its plan.json says which): a configuration is the same
measurement wherever a capture took it (its id holds its tunables and sizes). What no
folder holds is named, with the closest configurations the capture does have.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import NcuflowError
from ..files import read_json
from ..plan import Plan, Record, read_records
from ..vocab import MEASURE, PLAN
from .folder import DAMAGED

# The most pending configurations a study may have for its replay to be checked while
# planning (expanding more would slow every dry run; their jobs name what is missing).
REPLAY_CHECKED = 20_000


def variant_folders(capture: Path, plan: Plan) -> list[Path]:
    """The capture's folders of ``plan``'s variant that may hold its configurations: its own
    experiment's first, then those of other experiments over the same family."""
    own = capture / plan.experiment / plan.variant
    others = []
    for folder in sorted(capture.glob(f"*/{plan.variant}")):
        plan_file = folder / PLAN
        if folder == own or not plan_file.is_file():
            continue
        if read_json(plan_file, "a capture's plan", DAMAGED).get("family") == plan.family:
            others.append(folder)
    return [own, *others]


def locate(
    capture: Path, plan: Plan, ids: Iterable[str]
) -> tuple[dict[str, Path], dict[str, Record]]:
    """(the folder holding each of ``ids`` that the capture has, its record there)."""
    wanted, where, records = list(ids), {}, {}
    for folder in variant_folders(capture, plan):
        source = folder / MEASURE
        if not source.is_file() or len(where) == len(wanted):
            continue
        captured = read_records(source, DAMAGED)
        for config in wanted:
            if config not in where and config in captured:
                where[config], records[config] = folder, captured[config]
    return where, records


def _closest(config: str, captured: Iterable[str], most: int = 3) -> list[str]:
    """The captured configuration ids sharing the most ``name=value`` parts with ``config``."""
    parts = set(config.split("_"))
    scored = sorted(captured, key=lambda c: (-len(parts & set(c.split("_"))), c))
    return scored[:most]


def missing_message(capture: Path, plan: Plan, missing: list[str], what: str) -> str:
    """One line naming what the capture lacks, where it looked, and what it has nearby."""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    folders = variant_folders(capture, plan)
    captured = {c for f in folders if (f / MEASURE).is_file()
                for c in read_records(f / MEASURE, DAMAGED)}  # fmt: skip
    looked = ", ".join(f"{f.parent.name}/{f.name}" for f in folders if f.is_dir())
    looked = (f"looked in {looked}" if looked
              else f"it holds no variant {plan.variant} of family {plan.family}")  # fmt: skip
    near = _closest(missing[0], captured)
    hint = f"; closest it has: {', '.join(near)}" if near else ""
    # a new family or size has no record anywhere: what can be done without a GPU, too
    return (f"capture {capture.name} has no {what} of configuration(s) {shown} "
            f"(experiments.{plan.experiment}.variants.{plan.variant}; {looked}"
            f"{hint}). Replay never invents a result: remove them from the config, or "
            "measure them on a GPU machine (docs/guide.md: replay and captures). Without a "
            "GPU, check their kernels with --config mode=check (or ncuflow check <config "
            "file>), and dry-run them as a GPU machine would with -n --config "
            "mode=gpu")  # fmt: skip


def require(
    capture: Path, plan: Plan, ids: list[str], what: str
) -> tuple[dict[str, Path], dict[str, Record]]:
    """(the folder of each of ``ids``, its record there), or one error naming those the
    capture lacks."""
    where, records = locate(capture, plan, ids)
    missing = [c for c in ids if c not in where]
    if missing:
        raise NcuflowError(missing_message(capture, plan, missing, what))
    return where, records


def unreplayable(capture: Path, plans: Iterable[Plan]) -> str:
    """The first of ``plans`` (a study's, each with its pending configurations) whose
    configurations the capture lacks, as one line ('' where it holds them all): said while
    planning, before any job starts."""
    for plan in plans:
        try:
            require(capture, plan, [row.config_id for row in plan.pending], "timing record")
        except NcuflowError as exc:
            return str(exc)
    return ""
