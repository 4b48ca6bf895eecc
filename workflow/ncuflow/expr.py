"""Safe arithmetic expressions for restrictions, launch geometry and analytic counts.

An expression is parsed once with :mod:`ast`; only numbers, names, arithmetic,
comparisons, boolean logic, tuples and the functions in ``FUNCTIONS`` are accepted. The
checked tree is then rewritten once into a Python function of the names' values, whose
every arithmetic step goes through a function that bounds its result, and which sees no
builtins: a sweep of a million configurations evaluates its restrictions and geometry
about ten times faster than by walking the tree each time. No text is ever evaluated.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from .errors import NcuflowError

Number = int | float | bool


class ExprError(NcuflowError):
    """An expression that is not allowed or cannot be evaluated."""


def _ceil_div(a: Number, b: Number) -> int:
    if b == 0:
        raise ZeroDivisionError("ceil_div by zero")
    return -(-int(a) // int(b))


def _round_up(a: Number, b: Number) -> int:
    return _ceil_div(a, b) * int(b)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil_div": _ceil_div,
    "round_up": _round_up,
    "log2": math.log2,
}

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Not: operator.not_,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
# 2**64 is the largest power any tile or size formula needs; a bigger exponent is a mistake
# (or an attempt to make the evaluator allocate a huge integer). Every intermediate value
# is bounded too, so no expression runs long or grows without bound, and so is its nesting
# and its length.
_MAX_EXPONENT = 64
_MAX_MAGNITUDE = 2**64
_MAX_DEPTH = 32
_MAX_LENGTH = 1000
# What a restriction may be: a condition, never a number or a tuple that is always true.
_CONDITIONS = (ast.Compare, ast.BoolOp)


def _depth(node: ast.AST) -> int:
    """How deeply a parsed expression nests (iteratively: no recursion limit to hit)."""
    deepest, pending = 0, [(node, 1)]
    while pending:
        current, depth = pending.pop()
        deepest = max(deepest, depth)
        pending += [(child, depth + 1) for child in ast.iter_child_nodes(current)]
    return deepest


def _bounded(value: Any) -> Any:
    try:
        if -_MAX_MAGNITUDE <= value <= _MAX_MAGNITUDE:  # the common case: one test
            return value
    except TypeError:  # not a number (a tuple)
        return value
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and abs(value) > _MAX_MAGNITUDE
    ):
        raise ValueError(f"a value exceeds 2**64 ({value:.3g})")
    return value  # NaN


class Expr:
    """A parsed expression; ``names`` are its free variables."""

    def __init__(self, text: str | int | float) -> None:
        self.text = str(text).strip()
        self._root, self.names, self._function = _parsed(self.text)

    @property
    def is_condition(self) -> bool:
        """A comparison, ``and``/``or``/``not`` of conditions, or True/False."""
        root = self._root
        if isinstance(root, ast.UnaryOp) and isinstance(root.op, ast.Not):
            return True
        if isinstance(root, ast.Constant):
            return isinstance(root.value, bool)
        return isinstance(root, _CONDITIONS)

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def split(self) -> tuple[Expr, ...]:
        """The elements of a tuple expression ('BX, BY'), or the expression itself."""
        if isinstance(self._root, ast.Tuple):
            return tuple(Expr(ast.unparse(e)) for e in self._root.elts)
        return (self,)

    def __call__(self, env: Mapping[str, Number]) -> Any:
        try:
            return self._function(env)
        except KeyError:
            missing = sorted(self.names - env.keys())
            if not missing:
                raise
            known = ", ".join(sorted(env)) or "none"
            raise ExprError(
                f"{self.text!r} uses unknown name(s) {', '.join(missing)}; known: {known}"
            ) from None
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            raise ExprError(f"cannot evaluate {self.text!r}: {exc}") from None


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> tuple[ast.AST, frozenset[str], Callable[[Mapping[str, Number]], Any]]:
    """An expression's checked tree, its names and its function, made once per text and
    process: a family's expressions repeat across its variants, and every process that loads
    a family reads them all (an error is raised again each time, never kept)."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    if len(text) > _MAX_LENGTH:
        raise ExprError(f"expression {shown!r} is longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        # YAML splits a flow list ([a, b]) at every comma, a call's own ones too
        cut = text.count("(") != text.count(")")
        hint = ("; it looks cut at a comma: YAML splits a [...] list at every comma, so "
                "quote an expression that holds one ('min(a, b)')") if cut else ""  # fmt: skip
        raise ExprError(f"cannot parse expression {shown!r}: {exc.msg}{hint}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"expression {shown!r} is nested too deeply") from None
    if _depth(tree.body) > _MAX_DEPTH:
        raise ExprError(f"expression {shown!r} is nested deeper than {_MAX_DEPTH} levels")
    return tree.body, frozenset(_names(text, tree.body)), _compile(text)


def _names(text: str, node: ast.AST) -> set[str]:
    """Reject anything that is not arithmetic; return the names used."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool | int | float):
            return set()
        raise ExprError(f"{text!r}: only numbers are allowed, not {node.value!r}")
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise ExprError(f"{text!r}: function {node.id} must be called")
        return {node.id}
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _names(text, node.left) | _names(text, node.right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _names(text, node.operand)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_names(text, v) for v in node.values))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        return set().union(_names(text, node.left), *(_names(text, c) for c in node.comparators))
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(text, e) for e in node.elts))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            allowed = ", ".join(sorted(FUNCTIONS))
            raise ExprError(f"{text!r}: only these functions may be called: {allowed}")
        if node.keywords:
            raise ExprError(f"{text!r}: keyword arguments are not allowed")
        return set().union(*(_names(text, a) for a in node.args))
    raise ExprError(
        f"{text!r}: {type(node).__name__} is not allowed; use numbers, names, "
        "+ - * / // % **, comparisons, and/or/not, and " + ", ".join(sorted(FUNCTIONS))
    )


def _power(left: Any, right: Any) -> Any:
    if abs(right) > _MAX_EXPONENT:
        raise ValueError(f"exponent {right} is larger than {_MAX_EXPONENT}")
    if abs(left) > 1 and abs(right) * math.log2(abs(left)) > 65:
        raise ValueError(f"{left} ** {right} exceeds 2**64")
    return _bounded(left**right)


# What the rewritten tree may call, by name: the bound on every arithmetic result, the
# checked power, the functions, and bool() (and/or give a bool, as a condition must).
_HELPERS: dict[str, Callable[..., Any]] = {
    "_bounded": _bounded,
    "_power": _power,
    "bool": bool,
    **{f"_fn_{name}": fn for name, fn in FUNCTIONS.items()},
}
_ENV = "_env"


class _Lower(ast.NodeTransformer):
    """The checked tree as plain Python over ``_env``: names become lookups, every
    arithmetic result is bounded, powers and functions are calls of _HELPERS, and/or a
    short-circuit that yields a bool."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Subscript(ast.Name(_ENV, ast.Load()), ast.Constant(node.id), ast.Load())

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return ast.Call(ast.Name("_power", ast.Load()), [node.left, node.right], [])
        return ast.Call(ast.Name("_bounded", ast.Load()), [node], [])

    def visit_Call(self, node: ast.Call) -> ast.AST:
        assert isinstance(node.func, ast.Name)
        helper = ast.Name(f"_fn_{node.func.id}", ast.Load())
        return ast.Call(helper, [self.visit(a) for a in node.args], [])

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        return ast.Call(ast.Name("bool", ast.Load()), [node], [])


def _compile(text: str) -> Callable[[Mapping[str, Number]], Any]:
    body = _Lower().visit(ast.parse(text, mode="eval").body)  # a tree of its own: 10x a copy
    args = ast.arguments(posonlyargs=[], args=[ast.arg(_ENV)], kwonlyargs=[], kw_defaults=[],
                         defaults=[])  # fmt: skip
    tree = ast.fix_missing_locations(ast.Expression(ast.Lambda(args, body)))
    scope = {"__builtins__": {}, **_HELPERS}
    return eval(compile(tree, f"<expression {text[:60]!r}>", "eval"), scope)
