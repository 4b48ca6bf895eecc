"""The functions a family's files name in family.py, checked while a study is planned: the
reference, the draw and check functions and every library a variant calls exist, are
callable and take what the harness passes them. A misspelt name, a syntax error or a
missing family.py is one message before any GPU work, not a failed job."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import SpecError
from .family import Family
from .model import Variant

# What the harness passes each of the family's own functions, by name (measure.problem).
DRAW_NAMES = ("dims", "rng")
CHECK_NAMES = ("outputs", "reference", "dims", "inputs", "scalars")


def _imported(family: Family) -> None:
    path = family.folder / "family.py"
    if not path.is_file():
        raise SpecError(f"{path}: no such file; a family's family.py holds its reference "
                        f"({family.reference!r})")  # fmt: skip
    try:
        family.module  # noqa: B018 (imported once, here)
    except SyntaxError as exc:
        raise SpecError(f"{path}:{exc.lineno}: {exc.msg}") from None
    except Exception as exc:  # whatever its own code raises while it is imported
        raise SpecError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from None


def _takes(fn: Callable[..., Any], names: Iterable[str], role: str, family: Family) -> None:
    """``fn`` (the family's ``role``) asks for no parameter the harness does not pass."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature: taken as it is
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    given = set(names)
    missing = [n for n, p in params.items() if n not in given and p.default is p.empty
               and p.kind is not inspect.Parameter.VAR_POSITIONAL]  # fmt: skip
    if missing:
        raise SpecError(
            f"{family.folder / 'family.py'}: {role} {fn.__name__} asks for "
            f"{', '.join(missing)}, which the harness does not pass; it passes "
            f"{', '.join(sorted(given))}"
        )


def _binds(fn: Callable[..., Any], variant: Variant, args: int, family: Family) -> None:
    """A library call, ``fn(*args, **tunables)``, binds to ``fn``'s parameters."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*range(args), **dict.fromkeys(variant.params, 0))
    except TypeError as exc:
        raise SpecError(
            f"{family.folder / 'family.py'}: {fn.__name__} is called by variant "
            f"{variant.name} with {args} arguments and its tunables "
            f"({', '.join(variant.params) or 'none'}): {exc}"
        ) from None


def check_functions(family: Family, variants: Iterable[Variant]) -> None:
    """Import family.py and check every function ``family`` and ``variants`` name."""
    _imported(family)
    values = [*family.drawn, *family.dims, *family.scalars]
    roles = [("reference", family.reference, values),
             ("draw function", family.draw_function, DRAW_NAMES),
             ("check function", family.check_function, CHECK_NAMES)]  # fmt: skip
    for role, name, given in roles:
        if name:
            _takes(_named(family, name, f"the family's {role}"), given, role, family)
    for variant in variants:
        for launch in variant.launches:
            if launch.library:
                fn = _named(family, launch.library, f"a library launch of variant {variant.name}")
                args = len(launch.args) if launch.args is not None else len(family.args)
                _binds(fn, variant, args, family)


def _named(family: Family, name: str, what: str) -> Callable[..., Any]:
    fn = getattr(family.module, name, None)
    if not callable(fn):
        functions = sorted(n for n, v in vars(family.module).items()
                           if inspect.isfunction(v) and not n.startswith("_"))  # fmt: skip
        raise SpecError(f"{family.folder / 'family.py'}: has no function {name!r} ({what}); "
                        f"its functions: {', '.join(functions) or 'none'}")  # fmt: skip
    return fn
