"""An experiment's questions (``questions:`` in a study file): what the report a study
follows asked of its measurements, each to be answered from the table in a generated
sentence at the end of summary.md (report/questions.py).

Four kinds, each naming variants of the experiment and, with ``at``, the problem (sizes,
scalars) it is asked at; without ``at`` it is asked at every problem the table has:

- ``speedup: [A, B]``: how many times as fast A's best configuration is as B's;
- ``best: A``: A's best configuration (its tunables) and its time;
- ``bound: A``: what bounds A's best configuration (the bound rule, and ncu's verdict);
- ``throughput: A``: A's best throughput and its share of the library baseline.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ConfigError

KINDS = ("speedup", "best", "bound", "throughput")


@dataclass(frozen=True)
class Question:
    ask: str  # what is asked: the subject of the answer's sentence
    kind: str  # one of KINDS
    variants: tuple[str, ...]  # speedup: (A, B); the other kinds: (A,)
    at: dict[str, int | float] = field(default_factory=dict)  # problem columns held fixed
    report: str | None = None  # what the report found, quoted beside the answer


def parse_questions(
    raw: Sequence[Mapping[str, Any]] | None, variants: Iterable[str], problem: Sequence[str],
    experiment: str,
) -> tuple[Question, ...]:  # fmt: skip
    """The questions of an experiment (its key in the config), each checked against its
    variants and problem columns (the schema has checked their shape): a wrong name is
    refused with its key."""
    questions, variants = [], list(variants)
    for i, data in enumerate(raw or []):
        at_key = f"{experiment}.questions[{i}]"
        kinds = [k for k in KINDS if k in data]
        if len(kinds) != 1:
            raise ConfigError(at_key, f"give exactly one of {', '.join(KINDS)} (found "
                                      f"{', '.join(kinds) or 'none'})")  # fmt: skip
        kind = kinds[0]
        named = data[kind]
        names = tuple(named) if isinstance(named, list) else (named,)
        if len(names) != (2 if kind == "speedup" else 1):
            raise ConfigError(f"{at_key}.{kind}", "speedup names two variants, [A, B] (how "
                              "many times as fast A is as B); the other kinds one")  # fmt: skip
        for name in names:
            if name not in variants:
                raise ConfigError(f"{at_key}.{kind}", f"{name!r} is not a variant of this "
                                  f"experiment; valid: {', '.join(variants)}")  # fmt: skip
        at = dict(data.get("at") or {})
        for column in at:
            if column not in problem:
                raise ConfigError(f"{at_key}.at.{column}", f"not a dimension or scalar of "
                                  f"the family; valid: {', '.join(problem)}")  # fmt: skip
        questions.append(Question(ask=data["ask"], kind=kind, variants=names, at=at,
                                  report=data.get("report")))  # fmt: skip
    return tuple(questions)


def questions_json(questions: Sequence[Question]) -> str:
    """The questions as one JSON argument of the summary stage's command line."""
    return json.dumps([asdict(q) for q in questions], sort_keys=True)


def questions_from_json(text: str) -> tuple[Question, ...]:
    return tuple(Question(**{**q, "variants": tuple(q["variants"])}) for q in json.loads(text))
