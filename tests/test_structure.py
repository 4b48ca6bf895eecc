"""The shape of the package (docs/design.md): a small shared base that imports nothing
above it, one folder per stage, no import cycle, no module over 450 lines, a function over
80 lines says why in its docstring; and tests that use the public names only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "workflow" / "ncuflow"
# The shared base: modules at the package root that stages build on.
BASE = {"vocab", "errors", "files", "schema", "plan", "limits", "ncu", "gpu", "expr", "metrics",
        "breakdown", "console", "tf32", "reference", "runlog", "runlock", "children",
        "nvrtc", "nvml", "slurm_profile"}  # fmt: skip
STAGES = {"spec", "study", "search", "measure", "profile", "analyze", "device", "report", "capture",
          "runners", "check", "compile"}  # fmt: skip
MAX_LINES, MAX_FUNCTION_LINES = 450, 80


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports, those for type checkers only (under ``if
    TYPE_CHECKING:``) included: a circle of types is still one a reader must untangle."""
    tree = ast.parse(path.read_text())
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom | ast.Import):
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
            continue
        base = package[: len(package) - node.level + 1] if node.level else []
        target = ".".join([*base, *([node.module] if node.module else [])])
        for alias in node.names:
            found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_base_imports_nothing_above_it() -> None:
    graph = _graph()
    for module in BASE:
        above = {m for m in graph[f"ncuflow.{module}"] if m.split(".")[1] not in BASE}
        assert not above, (module, above)


def test_every_module_is_in_the_base_or_a_stage_folder() -> None:
    top = {name.split(".")[1] for name in _modules() if "." in name}
    entry_points = {"cli", "__main__", "api"}  # the command line, and ncuflow.run
    assert top <= BASE | STAGES | entry_points, top - BASE - STAGES


def test_no_module_is_long_and_a_long_function_says_why() -> None:
    long_functions = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) <= MAX_LINES, path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and not ast.get_docstring(node):
                    long_functions.append(f"{path.name}:{node.name} ({lines} lines)")
    assert not long_functions


def test_tests_use_public_names_only() -> None:
    """No test imports, patches or calls a name of ncuflow that starts with an underscore."""
    private = re.compile(
        r"from ncuflow[\w.]* import [^\n]*\b_[A-Za-z]\w*"  # from ncuflow.x import _name
        r"|ncuflow[\w.]*\._[a-z]\w*"  # ncuflow.x._name
        r"|setattr\(\s*[a-z]\w*,\s*['\"]_"  # monkeypatch.setattr(module, "_name", ...)
    )
    found = [f"{path.name}: {m.group(0)}" for path in sorted((ROOT / "tests").glob("*.py"))
             if path.name != Path(__file__).name
             for m in private.finditer(path.read_text())]  # fmt: skip
    assert not found, found
