import pytest

from ncuflow.expr import Expr, ExprError


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("2 * M * N * K", {"M": 3, "N": 4, "K": 5}, 120),
        ("TILE * TILE <= 1024", {"TILE": 32}, True),
        ("TILE * TILE <= 1024", {"TILE": 33}, False),
        ("8 <= TILE <= 32", {"TILE": 16}, True),
        ("8 <= TILE <= 32", {"TILE": 64}, False),
        ("TA % TB == 0 and not TB > TA", {"TA": 64, "TB": 8}, True),
        ("TA % TB == 0 or TB == 1", {"TA": 63, "TB": 8}, False),
        ("ceil_div(N, 16)", {"N": 1025}, 65),
        ("round_up(N, 16)", {"N": 1025}, 1040),
        ("min(BM, M) + max(1, 2) + abs(-3)", {"BM": 128, "M": 64}, 69),
        ("2 ** 10 // 3 - -1", {}, 342),
        ("(M * K + K * N) * in_bytes", {"M": 2, "N": 3, "K": 4, "in_bytes": 4}, 80),
    ],
)
def test_evaluates_arithmetic_and_comparisons(text: str, env: dict, expected: object) -> None:
    assert Expr(text)(env) == expected


def test_names_are_the_free_variables() -> None:
    assert Expr("ceil_div(N, BX) * BY + 1").names == {"N", "BX", "BY"}


def test_tuple_splits_into_elements() -> None:
    parts = Expr("ceil_div(N, BX), ceil_div(M, BY)").split()
    assert [p.text for p in parts] == ["ceil_div(N, BX)", "ceil_div(M, BY)"]
    assert Expr("BX").split()[0].text == "BX"


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "open('x')",
        "M.__class__",
        "[M for M in range(3)]",
        "lambda: 1",
        "A[0]",
        "'text'",
        "min(M, key=abs)",
        "f(M)",
        "M if N else K",
        "min",
        "{1: 2}",
    ],
)
def test_rejects_anything_but_arithmetic(text: str) -> None:
    with pytest.raises(ExprError):
        Expr(text)


def test_rejects_syntax_errors_with_the_text() -> None:
    with pytest.raises(ExprError, match="cannot parse expression 'M \\*'"):
        Expr("M *")


def test_unknown_name_at_evaluation_names_it_and_the_known_ones() -> None:
    with pytest.raises(ExprError, match=r"unknown name\(s\) TILEE; known: M, TILE"):
        Expr("TILEE * 2")({"M": 1, "TILE": 2})


@pytest.mark.parametrize("text", ["2 ** 1000000", "M / 0", "ceil_div(M, 0)"])
def test_evaluation_errors_are_expr_errors(text: str) -> None:
    with pytest.raises(ExprError, match="cannot evaluate"):
        Expr(text)({"M": 4})
