"""The search stage (rule ``search``): one round's proposals, from the rounds before.

Round r reads every configuration the earlier rounds measured (their parts' plan.json and
measure.json; with overlap, those before round r - 1, whose proposals it reads as in
flight), asks the strategy for up to ``batch`` new ones per problem size within the
budget (search.strategy), and splits them over the round's measure jobs
(study.rounds): ``round<r>.json``. ``plan_round`` is the pure part, which the simulation
(search.simulate) runs on a capture's records instead of a GPU's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..files import atomic_write, read_json
from ..plan import ConfigRow, Plan, read_records
from ..spec import load_variant
from ..study.config import variant_grid
from ..study.expand import VariantGrid
from ..study.rounds import SearchSettings, every_proposal
from ..vocab import OK
from .space import Point, Space, least_time_ms
from .strategy import propose

Measured = Sequence[tuple[ConfigRow, float | None]]  # each configuration measured, its time


def spaces_of(grids: Mapping[str, VariantGrid]) -> list[Space]:
    """One space per problem the grids share (every variant of an experiment has them)."""
    first = next(iter(grids.values()))
    return [Space(grids, j) for j in range(len(first.problems))]


def plan_round(
    spaces: Sequence[Space],
    settings: SearchSettings,
    round_index: int,
    measured: Measured,
    ceilings: Mapping[str, Any],
    compute: Mapping[str, tuple[str, ...]],
    spent_s: float = 0.0,
    in_flight: Sequence[Point] = (),
) -> dict[str, Any]:
    """A round's proposals: per problem, up to ``batch`` configurations within the budget
    (none once ``spent_s``, the search's seconds so far, reach its ``budget_s``), neither
    measured nor ``in_flight`` (proposed by the round before and not yet measured), split
    over the round's measure jobs (``parts``: part -> variant -> grid positions), and what
    each problem's search stands at (``problems``)."""
    out_of_time = settings.budget_s is not None and spent_s >= settings.budget_s
    shards: list[dict[str, list[int]]] = [{} for _ in range(settings.jobs_per_round)]
    problems, dealt = [], 0
    for space in spaces:
        rows = [(row, t) for row, t in measured if space.holds(row)]
        seen: dict[Point, float | None] = {}
        history = []
        for row, time_ms in rows:
            point, values = space.point_of(row)
            seen[point] = time_ms
            history.append((values, time_ms))
        flying = {p: space.point_of(space.row(p))[1] for p in in_flight if space.owns(p)}
        times = [t for t in seen.values() if t is not None]
        best = min(times, default=None)

        def usable(point: Point, space: Space = space, best: float | None = best) -> str:
            row = space.row(point)
            if not row.pending:
                return f"ruled out: {row.error}"
            if settings.prune == "none" or best is None:
                return ""
            least = least_time_ms(row, compute[point.variant], ceilings)
            return f"roofline: at least {least:.4g} ms" if least >= best else ""

        left = settings.budget - len(seen) - len(flying)
        want = 0 if out_of_time else max(0, min(settings.batch, left))
        seed = settings.seed * 100_003 + round_index
        chosen, skipped = propose(space, settings.strategy, seed, history, seen, want, usable,
                                  flying)  # fmt: skip
        for point in chosen:  # dealt in turn over the jobs, every problem's with the rest
            shard = shards[dealt % settings.jobs_per_round]
            shard.setdefault(point.variant, []).append(point.position)
            dealt += 1
        dims, scalars = next(iter(space.grids.values())).problems[space.problem]
        problems.append({"dims": dims, **({"scalars": scalars} if scalars else {}),
                         "space": space.size, "measured": len(seen), "failed": len(seen) -
                         len(times), "in_flight": len(flying), "best_ms": best,
                         "proposed": len(chosen),
                         "skipped": dict(sorted(skipped.items()))})  # fmt: skip
    first = round_index * settings.jobs_per_round
    return {"round": round_index, "search": settings.to_json(), "problems": problems,
            "parts": {f"p{first + s}": shard for s, shard in enumerate(shards)}}  # fmt: skip


def search_stage(
    settings: SearchSettings,
    round_index: int,
    variant_plans: Sequence[Path],
    earlier: Sequence[tuple[Path, Path]],
    ceilings_path: Path,
    out: Path,
    log: Callable[[str], None],
    captured: Path | None = None,
    first: Path | None = None,
    in_flight: Path | None = None,
) -> None:
    """Round ``round_index`` of a search: ``earlier``, (plan.json, measure.json) of each
    part the rounds before measured; ``first``, round 0's file, which says when the search
    began (its time budget counts from there); ``in_flight``, the round file being measured
    meanwhile (with overlap); the proposals go to ``out``. In a replay, the round
    the capture holds (``captured``) is given back as it was, where the search's settings
    are the capture's: a sampler's last bits differ between machines (numpy's builds),
    which may turn a near tie, so a replay never proposes where the capture says what the
    GPU run proposed."""
    if captured is not None and captured.is_file():
        kept = read_json(captured, "a capture's search round")
        if SearchSettings.from_round(kept.get("search", {})) == settings:
            atomic_write(out, json.dumps(kept, indent=1))
            log(f"round {round_index} replayed from {captured}")
            return
        log(f"{captured} was proposed with other settings ({kept.get('search')}): proposing")
    started = time.perf_counter()
    grids = {}
    compute = {}
    for path in variant_plans:
        whole, grid = variant_grid(path)
        header = whole.plan
        grids[header.variant] = grid
        compute[header.variant] = load_variant(Path(header.kernels_dir), header.family,
                                               header.variant)[1].compute  # fmt: skip
    measured = []
    for plan_path, measure_path in earlier:
        records = read_records(measure_path)
        for row in Plan.load(plan_path).pending:
            record = records[row.config_id]
            measured.append((row, record.time_ms if record.status == OK else None))
    ceilings = read_json(ceilings_path, "the device's ceilings") if ceilings_path else {}
    began = read_json(first, "a search's first round")["began"] if first else time.time()
    spent_s = time.time() - began
    flying = [Point(*taken) for taken in every_proposal(in_flight)] if in_flight else []
    proposals = plan_round(spaces_of(grids), settings, round_index, measured, ceilings, compute,
                           spent_s, flying)  # fmt: skip
    atomic_write(out, json.dumps({**proposals, "began": began, "spent_s": spent_s}, indent=1))
    if settings.budget_s is not None and spent_s >= settings.budget_s:
        log(f"round {round_index}: the time budget ({settings.budget_s} s) is spent "
            f"({spent_s:.0f} s since round 0): nothing proposed")  # fmt: skip
    for problem in proposals["problems"]:
        shown = ", ".join(f"{k} {v}" for k, v in problem["skipped"].items()) or "nothing"
        log(f"round {round_index}, {problem['dims']}: {problem['measured']} of "
            f"{problem['space']} measured (best {problem['best_ms']} ms), "
            f"{problem['in_flight']} in flight; {problem['proposed']} proposed; "
            f"skipped: {shown}")  # fmt: skip
    log(f"proposed in {time.perf_counter() - started:.1f} s")
