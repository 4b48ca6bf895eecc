"""Readers of the values a family or variant declares: expressions, conditions, launch
geometry, tolerances, checks, draws, tensors and scalars. Each names the file and key of
a value that is wrong, and what is expected."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from .. import schema
from ..errors import ConfigError, SpecError
from ..expr import Expr, ExprError
from .model import (
    CHECK_KINDS,
    DRAWS,
    DTYPE_BYTES,
    FLOAT_DTYPES,
    FLOAT_MAX,
    Check,
    Tensor,
)

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def expr(where: str, value: Any) -> Expr:
    try:
        return Expr(value)
    except ExprError as exc:
        raise SpecError(f"{where}: {exc}") from None


def single(where: str, value: Any) -> Expr:
    """An expression of one number (a count, a model, bytes of shared memory), never a
    tuple, which a comma makes."""
    parsed = expr(where, value)
    if len(parsed.split()) > 1:
        raise SpecError(f"{where}: {parsed.text!r} is {len(parsed.split())} expressions (a comma "
                        "makes a tuple); expected one number")  # fmt: skip
    return parsed


def condition(where: str, value: Any) -> Expr:
    """A restriction: one condition (a comparison, and/or/not), never a bare number or a
    tuple, which would always hold."""
    parsed = expr(where, value)
    if not parsed.is_condition:
        hint = " (a comma makes a tuple: join conditions with 'and')" if "," in parsed.text else ""
        raise SpecError(
            f"{where}: {parsed.text!r} is not a condition{hint}; expected a comparison such as "
            "'TILE >= 8', or conditions joined by and, or, not"
        )
    return parsed


def expr_list(where: str, value: Any) -> tuple[Expr, ...]:
    """'BX, BY' or a YAML list of expressions, as a tuple of expressions."""
    items = value if isinstance(value, list) else [value]
    return tuple(e for item in items for e in expr(where, str(item)).split())


def geometry(where: str, value: Any) -> tuple[Expr, ...]:
    exprs = expr_list(where, value)
    if not 1 <= len(exprs) <= 3:
        raise SpecError(f"{where}: needs 1 to 3 expressions (x, y, z), got {len(exprs)}")
    return exprs


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: int | float) -> bool:
    """Neither NaN nor infinite (YAML reads .nan and .inf as floats), nor an integer too
    large for a float."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _tolerance(where: str, value: Any, expected: str = "a number") -> float:
    """One tolerance: a finite number, 0 or more (a NaN, infinite or negative one would
    decide every check alike)."""
    if not _number(value):
        raise SpecError(f"{where}: expected {expected}, got {value!r}")
    if not (_finite(value) and value >= 0):
        raise SpecError(f"{where}: {value!r} is not a tolerance; expected a finite number, "
                        "0 or more")  # fmt: skip
    return float(value)


def per_dtype(where: str, value: Any) -> dict[str, float] | float:
    """A tolerance: one number for every dtype, or a mapping dtype → number."""
    if not isinstance(value, dict):
        return _tolerance(where, value, "a number or a mapping of dtype to number")
    unknown = set(value) - set(DTYPE_BYTES)
    if unknown:
        raise SpecError(f"{where}: unknown dtype(s) {', '.join(sorted(map(str, unknown)))}")
    return {str(k): _tolerance(f"{where}.{k}", v) for k, v in value.items()}


def dtype_range(dtype: str) -> tuple[int | float, int | float]:
    """The least and the largest finite value a ``dtype`` holds."""
    if dtype in FLOAT_DTYPES:
        return -FLOAT_MAX[dtype], FLOAT_MAX[dtype]
    bits = 8 * DTYPE_BYTES[dtype]
    return (
        (0, 2**bits - 1) if dtype.startswith("uint") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    )


def check_of(where: str, value: Any) -> Check:
    if value == "exact":
        return Check("exact")
    if not isinstance(value, dict) or len(value) != 1:
        raise SpecError(
            f"{where}: expected exact, {{rel_fro: tolerance}} or {{max_abs: tolerance}}, "
            f"got {value!r}"
        )
    ((kind, tolerance),) = value.items()
    if kind not in CHECK_KINDS or kind == "exact":
        raise SpecError(f"{where}: unknown check {kind!r}; valid: exact, rel_fro, max_abs")
    return Check(kind, per_dtype(f"{where}.{kind}", tolerance))


def draw_of(where: str, value: Any, dtype: str | None) -> tuple[str, tuple[float, float]] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise SpecError(f"{where}: expected one of {', '.join(DRAWS)} with [a, b], got {value!r}")
    ((kind, bounds),) = value.items()
    if kind not in DRAWS:
        raise SpecError(f"{where}: unknown draw {kind!r}; valid: {', '.join(DRAWS)}")
    if not isinstance(bounds, list) or len(bounds) != 2 or not all(map(_number, bounds)):
        raise SpecError(f"{where}.{kind}: expected two numbers [a, b], got {bounds!r}")
    if not all(map(_finite, bounds)):
        raise SpecError(f"{where}.{kind}: expected two finite numbers [a, b], got {bounds!r}")
    lo, hi = float(bounds[0]), float(bounds[1])
    if kind == "normal" and hi <= 0:
        raise SpecError(f"{where}.normal: [mean, std] needs std > 0, got {bounds!r}")
    if kind != "normal" and not lo < hi:
        raise SpecError(f"{where}.{kind}: [lo, hi] needs lo < hi, got {bounds!r}")
    if kind == "integers" and not all(float(b).is_integer() for b in bounds):
        raise SpecError(f"{where}.integers: bounds must be integers, got {bounds!r}")
    if kind == "integers" and lo == 0 and hi == 1:
        raise SpecError(f"{where}.integers: [0, 1] draws only zeros (hi is exclusive)")
    if dtype is not None and dtype not in FLOAT_DTYPES and kind != "integers":
        raise SpecError(f"{where}: an {dtype} tensor is drawn with integers: [lo, hi]")
    if dtype is not None:  # a declared dtype must hold what is drawn (a normal draw: its mean)
        least, most = dtype_range(dtype)
        drawn = (lo, lo) if kind == "normal" else (lo, hi - 1 if kind == "integers" else hi)
        if not least <= drawn[0] <= drawn[1] <= most:
            raise SpecError(f"{where}.{kind}: {bounds!r} draws values that {dtype} does not "
                            f"hold; expected values from {least} to {most}")  # fmt: skip
    return kind, (lo, hi)


def tensor_of(where: str, name: str, value: Any, output: bool, inout: bool = False) -> Tensor:
    """A tensor (or scratch buffer): a bare shape, or its declaration (whose keys and
    their types the schema has checked); an ``inout`` one is an output that is drawn."""
    if not IDENTIFIER.match(name):
        raise SpecError(f"{where}: tensor name {name!r} must be an identifier")
    data = value if isinstance(value, dict) else {"shape": value}
    if "shape" not in data:
        raise SpecError(f"{where}: needs 'shape' (expressions over the dimensions)")
    dtype = data.get("dtype")
    return Tensor(
        name=name,
        shape=expr_list(f"{where}.shape", data["shape"]),
        output=output,
        dtype=dtype,
        draw=draw_of(f"{where}.draw", data.get("draw"), dtype),
        memory=data.get("memory", "device"),
        check=check_of(f"{where}.check", data["check"]) if "check" in data else None,
        inout=inout,
    )


def scalar_value(where: str, dtype: str, value: Any) -> int | float:
    """``value`` checked against ``dtype``: an integer for integer dtypes, a number for
    floating ones (an error names what was given and what is expected)."""
    if not _number(value):
        raise SpecError(
            f"{where}: {value!r} is a {type(value).__name__}, expected a {dtype} number"
        )
    if not _finite(value):
        raise SpecError(f"{where}: {value!r} is not a finite number, expected a {dtype} number")
    floating = dtype in FLOAT_DTYPES
    if not floating and isinstance(value, float) and not value.is_integer():
        raise SpecError(f"{where}: {value!r} is not an integer, expected a {dtype} number")
    lo, hi = dtype_range(dtype)
    if not lo <= value <= hi:
        raise SpecError(f"{where}: {value!r} does not fit {dtype} ({lo} to {hi})")
    return float(value) if floating else int(value)


def named_map(path: Path, data: Any, key: str) -> dict[str, Any]:
    """A mapping of names (``scalars``, ``figures``...), empty where the key is absent."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: {key} must be a mapping of names")
    return {str(k): v for k, v in data.items()}


def validated(path: Path, data: dict[str, Any], schema_file: Path) -> dict[str, Any]:
    """``data`` (the mapping read from ``path``) checked against a schema, its defaults
    filled in; an error names the file and the key."""
    try:
        return schema.validate(data, schema_file)
    except ConfigError as exc:
        where = "" if exc.path == "(top level)" else f"{exc.path}: "
        raise SpecError(f"{path}: {where}{exc.problem}") from None
