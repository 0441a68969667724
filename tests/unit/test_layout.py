"""The layers DESIGN.md draws, checked for every module of the package.

Four floors, data flowing down: the **ground** (no floor below it), the **engine**, the
**outputs** (reports, baselines, the command line and the files the user keeps) and the
**pytest layer**. A module imports only from its own floor and the floors below; no two modules
import each other through any chain (no circle). Every import counts: at the top of a module,
inside a function, or under ``if TYPE_CHECKING:`` (a type an engine module names from the pytest
layer is still an arrow up; such a module declares a ``Protocol`` for what it needs instead).

Function and module lengths are review guidance (docs/ARCHITECTURE.md), not a test.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_embedbench"
NAME = PACKAGE.name

GROUND, ENGINE, OUTPUTS, PYTEST = 1, 2, 3, 4
FLOOR_NAMES = {GROUND: "ground", ENGINE: "engine", OUTPUTS: "outputs", PYTEST: "pytest layer"}

#: module (or package, with everything inside it) -> floor; the longest match decides, and a
#: module no entry matches is on the engine floor
FLOORS: dict[str, int] = {
    # ground: imports nothing above it (types and _io import nothing of the package at all)
    "types": GROUND,
    "_io": GROUND,
    "exceptions": GROUND,
    "optionspec": GROUND,
    "redaction": GROUND,
    "progressbar": GROUND,
    "hookspec": GROUND,
    "_exit": GROUND,
    "netprobe": GROUND,
    # outputs: reports, baselines, the command line, the files the user keeps
    "report": OUTPUTS,
    "baseline": OUTPUTS,
    "cli": OUTPUTS,
    "generate.cli": OUTPUTS,
    "stress.cli": OUTPUTS,
    "distributed.cli": OUTPUTS,
    "config": OUTPUTS,
    "options": OUTPUTS,
    # the pytest layer: hooks, collection, the session
    "plugin": PYTEST,
    "cases": PYTEST,
    "session": PYTEST,
    "finish": PYTEST,
    "gatekeeper": PYTEST,
    "_xdist": PYTEST,
    "handle": PYTEST,
    "assertrepr": PYTEST,
}
#: ground modules that import nothing of the package (DESIGN.md)
SELF_CONTAINED = ("types", "_io")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)  # "" is the package itself


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def floor_of(module: str) -> int:
    best, floor = -1, ENGINE
    for prefix, level in FLOORS.items():
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
            best, floor = len(prefix), level
    return floor


def imports_of(module: str, source: str, known: set[str]) -> Iterator[tuple[int, str]]:
    """(line, module of the package) for each import in ``source``, wherever it stands:
    ``from .x import y`` names ``x.y`` when that is a module, else ``x``."""
    is_package = module == "" or _modules_cache[module].name == "__init__.py"
    here = module.split(".") if module else []
    base_parts = here if is_package else here[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            elif node.module == NAME or (node.module or "").startswith(NAME + "."):
                base = (node.module or "").removeprefix(NAME).lstrip(".")
            else:
                continue
            found = False
            for alias in node.names:
                child = f"{base}.{alias.name}" if base else alias.name
                if child in known:
                    found = True
                    yield node.lineno, child
            if not found or (node.module and base in known):
                if base in known:
                    yield node.lineno, base
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == NAME or alias.name.startswith(NAME + "."):
                    name = alias.name.removeprefix(NAME).lstrip(".")
                    if name in known:
                        yield node.lineno, name


_modules_cache = _modules()


def _graph() -> dict[str, dict[str, int]]:
    known = set(_modules_cache)
    graph: dict[str, dict[str, int]] = {}
    for module, path in _modules_cache.items():
        edges: dict[str, int] = {}
        for line, target in imports_of(module, path.read_text(encoding="utf-8"), known):
            if target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def _where(module: str, line: int) -> str:
    path = _modules_cache[module]
    return f"{path.relative_to(PACKAGE.parent)}:{line}"


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_is_found() -> None:
    assert "session" in _modules_cache and "report.summary" in _modules_cache


def test_no_import_runs_up_the_floors() -> None:
    offenders = []
    for module, edges in _graph().items():
        for target, line in sorted(edges.items()):
            if floor_of(target) > floor_of(module):
                offenders.append(
                    f"{_where(module, line)} ({FLOOR_NAMES[floor_of(module)]}) imports "
                    f"{target or NAME} ({FLOOR_NAMES[floor_of(target)]})"
                )
    assert not offenders, "imports that run up the layers:\n" + "\n".join(offenders)


def test_no_circle() -> None:
    found = circles(_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", SELF_CONTAINED)
def test_the_ground_types_and_io_import_nothing_of_the_package(module: str) -> None:
    edges = _graph()[module]
    assert not edges, f"{module}.py imports {sorted(edges)}"


def test_session_imports_nothing_from_report() -> None:
    edges = _graph()["session"]
    offenders = [
        f"{_where('session', line)} {t}" for t, line in edges.items() if t.startswith("report")
    ]
    assert not offenders, "session.py imports from report/:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    ("module", "source", "caught"),
    [
        ("session", "from .report.summary import Summary\n", [(1, "report.summary")]),
        ("session", "from . import records, report\n", [(1, "records"), (1, "report")]),
        (
            "session",
            "def f():\n    import pytest_embedbench.report.terminal\n",
            [(2, "report.terminal")],
        ),
        (
            "report.summary",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..session import S\n",
            [(3, "session")],
        ),
        ("records", "from .reporting import x\nimport report\n", []),
    ],
)
def test_the_import_reader_catches_each_form(
    module: str, source: str, caught: list[tuple[int, str]]
) -> None:
    assert list(imports_of(module, source, set(_modules_cache))) == caught


def test_a_circle_and_an_arrow_up_are_found() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert circles(graph) == [["a", "b", "c"]]
    assert floor_of("report.html.page") == OUTPUTS and floor_of("evaluate") == ENGINE
    assert floor_of("generate.cli") == OUTPUTS and floor_of("generate.run") == ENGINE
