"""A round's proposals, from Optuna's samplers through its ask-and-tell interface.

Each round builds a fresh Optuna study from what the rounds before measured (each
configuration's time; a failed one, pruned) and asks it for the round's configurations,
its sampler seeded by the search's seed and the round: the same seed and the same times
give the same proposals, on any machine, and a resumed search proposes what it would have.
Proposals still being measured (the round before's, where rounds overlap) are running
trials, which the constant liar takes as bad, as in any parallel Optuna study. Nothing is
measured twice: a proposal already measured is told its time again and asked anew; one a
restriction or a device limit rules out, or the roofline bound skips, is told pruned
(worse than any measured, to a model-based sampler) and never measured. A sampler that
keeps proposing what was seen gives way to random configurations not yet seen: asking
costs time that grows with the trials (about 10 ms each at a thousand), and a converged
sampler mostly repeats itself.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .space import VARIANT, Point, Space

TRIES = 4  # asks per configuration wanted before random ones not yet seen fill the round
# (4 finds the best as soon as 20 did in benchmarks/search.py; docs/results.md, Search)
DRAWS = 200  # random positions drawn per configuration wanted, for those


def _sampler(strategy: str, seed: int, conditional: bool) -> Any:
    import optuna

    if strategy == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    # the tunables depend on each other (a tile, its threads' share): modelled jointly
    return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=conditional,
                                      constant_liar=True)  # fmt: skip


def _distributions(space: Space) -> dict[str, Any]:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    out: dict[str, Any] = {}
    if len(space.grids) > 1:
        out[VARIANT] = CategoricalDistribution(list(space.grids))
    for variant, axes in space.axes.items():
        for param, values, _ in axes:
            out[space.key(variant, param)] = IntDistribution(0, len(values) - 1)
    return out


def _ask(trial: Any, space: Space) -> Point:
    names = list(space.grids)
    variant = trial.suggest_categorical(VARIANT, names) if len(names) > 1 else names[0]
    chosen = {space.key(variant, param): trial.suggest_int(space.key(variant, param), 0,
                                                           len(values) - 1)
              for param, values, _ in space.axes[variant]}  # fmt: skip
    return Point(variant, space.position(variant, chosen))


def propose(
    space: Space,
    strategy: str,
    seed: int,
    history: Sequence[tuple[dict[str, Any], float | None]],
    seen: dict[Point, float | None],
    want: int,
    usable: Callable[[Point], str],
    in_flight: Mapping[Point, dict[str, Any]] | None = None,
) -> tuple[list[Point], Counter[str]]:
    """Up to ``want`` configurations neither in ``seen`` (each measured point, its time or
    None where it failed) nor ``in_flight`` (each point being measured, the sampler's
    values of it); ``history``: the sampler's values of each measured point and its time;
    ``usable``: why a point must not be measured ('' where it may). Returns the proposals
    and how many asks went where (kinds of skip: the text before ': ')."""
    import optuna
    from optuna.trial import TrialState, create_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize",
                                sampler=_sampler(strategy, seed, len(space.grids) > 1))  # fmt: skip
    every = _distributions(space)
    for values, time_ms in history:
        told = {"value": time_ms} if time_ms is not None else {"state": TrialState.PRUNED}
        study.add_trial(create_trial(params=values, **told,
                                     distributions={k: every[k] for k in values}))  # fmt: skip
    for values in (in_flight or {}).values():
        study.add_trial(create_trial(params=values, state=TrialState.RUNNING,
                                     distributions={k: every[k] for k in values}))  # fmt: skip
    chosen: list[Point] = []
    skipped: Counter[str] = Counter()
    taken = set(seen) | set(in_flight or {})
    for _ in range(TRIES * want):
        if len(chosen) == want:
            break
        trial = study.ask()
        point = _ask(trial, space)
        if point in taken:
            skipped["seen"] += 1
            if point in seen:  # measured: told again; in flight or proposed now: left running
                known = seen[point]
                study.tell(trial, known, state=None if known is not None else TrialState.PRUNED)
            continue
        reason = usable(point)
        if reason:
            skipped[reason.split(":", 1)[0]] += 1
            study.tell(trial, state=TrialState.PRUNED)
            taken.add(point)
            continue
        chosen.append(point)
        taken.add(point)
    filled = _unseen(space, random.Random(seed), taken, want - len(chosen), usable, skipped)
    if filled:
        skipped["random, the sampler repeating itself"] += len(filled)
    return chosen + filled, skipped


def _unseen(space: Space, rng: random.Random, taken: set[Point], want: int,
            usable: Callable[[Point], str], skipped: Counter[str]) -> list[Point]:  # fmt: skip
    """Up to ``want`` random points not in ``taken`` that may be measured."""
    found: list[Point] = []
    names = list(space.grids)
    for _ in range(DRAWS * max(want, 0)):
        if len(found) == want:
            break
        variant = rng.choice(names)
        grid = space.grids[variant]
        point = Point(variant, rng.randrange(grid.size // len(grid.problems)) *
                      len(grid.problems) + space.problem)  # fmt: skip
        if point in taken:
            continue
        taken.add(point)
        reason = usable(point)
        if reason:
            skipped[reason.split(":", 1)[0]] += 1
            continue
        found.append(point)
    return found
