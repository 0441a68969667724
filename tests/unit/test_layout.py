"""The layers DESIGN.md draws, read from the package's folders.

Each folder at the package root is a floor; the list below names them from the ground up, one
line per folder, and a folder missing from it (or a module at the root beyond ``__init__`` and
at most three others) fails. A module imports only from its own floor and the floors below; no
two modules import each other through any chain (no circle). Every import counts: at the top of
a module, inside a function, or under ``if TYPE_CHECKING:`` (a type a lower module names from a
higher floor is still an arrow up; such a module declares a ``Protocol`` for what it needs).

Function and module lengths are review guidance (docs/ARCHITECTURE.md); the one hard line is
``MAX_LINES`` per module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_embedbench"
NAME = PACKAGE.name

#: the floors, ground first: one folder a floor (docs/ARCHITECTURE.md says what each holds)
FLOORS: tuple[str, ...] = (
    "core",  # types, errors, atomic io, redaction, progress: imports nothing above it
    "records",  # typed records and their serial form, the figure registry
    "data",  # datasets, ingest and document formats, chunking, stress transforms
    "cache",  # the embedding cache: a SQLite index beside append-only segment files
    "retrieval",  # retriever base, dense, exact search, index engines, bm25, pooling
    "models",  # providers (one module per family), the searcher
    "evaluation",  # evaluator, result, metrics, stats, cut-offs, measure, workloads
    "distributed",  # document embedding on Ray, filling the same cache
    "generate",  # eval sets and paraphrases from a chat model
    "baseline",  # thresholds and baselines: read, compare, write
    "report",  # the summary that computes every figure once, and the writers
    "config",  # embedbench.yaml, the option table
    "cli",  # the embedbench command
    "plugin",  # pytest hooks, cases, session, finish, gatekeeper, xdist
)
#: modules the root may hold beside __init__.py (the public API)
ROOT_MODULES: tuple[str, ...] = ()
MAX_ROOT_MODULES = 3
#: no module is longer than this (the issue's bar; 500 is the aim)
MAX_LINES = 800
#: ground modules that import nothing of the package (DESIGN.md)
SELF_CONTAINED = ("core.types", "core.io", "core.yamlfile")
TOP = len(FLOORS)  # the package's __init__ stands above every floor


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)  # "" is the package itself


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def floor_of(module: str) -> int:
    """The floor of ``module``: the index of its top folder in FLOORS (the root is TOP)."""
    if module == "":
        return TOP
    top = module.split(".")[0]
    return FLOORS.index(top) if top in FLOORS else TOP


def floor_name(module: str) -> str:
    floor = floor_of(module)
    return FLOORS[floor] if floor < TOP else "the package root"


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
    assert "plugin.session" in _modules_cache and "evaluation.evaluate" in _modules_cache


def test_every_folder_is_a_floor_and_the_root_holds_little() -> None:
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert sorted(FLOORS) == folders, "folders that are not floors, or floors with no folder"
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert modules == sorted(ROOT_MODULES) and len(modules) <= MAX_ROOT_MODULES


def test_no_module_is_over_the_line_limit() -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in _modules_cache.values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_runs_up_the_floors() -> None:
    offenders = []
    for module, edges in _graph().items():
        for target, line in sorted(edges.items()):
            if floor_of(target) > floor_of(module):
                offenders.append(
                    f"{_where(module, line)} ({floor_name(module)}) imports "
                    f"{target or NAME} ({floor_name(target)})"
                )
    assert not offenders, "imports that run up the layers:\n" + "\n".join(offenders)


def test_the_summary_imports_nothing_of_the_writers() -> None:
    offenders = [
        f"{_where(module, line)} imports {target}"
        for module, edges in _graph().items()
        if module.startswith("report.summary")
        for target, line in edges.items()
        if target.startswith("report.writers")
    ]
    assert not offenders, "the summary computes, the writers format:\n" + "\n".join(offenders)


def test_no_circle() -> None:
    found = circles(_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", SELF_CONTAINED)
def test_the_ground_types_and_io_import_nothing_of_the_package(module: str) -> None:
    edges = _graph()[module]
    assert not edges, f"{module}.py imports {sorted(edges)}"


def test_session_imports_nothing_from_report() -> None:
    edges = _graph()["plugin.session"]
    offenders = [
        f"{_where('plugin.session', line)} {t}"
        for t, line in edges.items()
        if t.startswith("report")
    ]
    assert not offenders, "session.py imports from report/:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    ("module", "source", "caught"),
    [
        (
            "plugin.session",
            "from ..report.summary.run import Summary\n",
            [(1, "report.summary.run")],
        ),
        ("plugin.session", "from .. import records, report\n", [(1, "records"), (1, "report")]),
        (
            "plugin.session",
            "def f():\n    import pytest_embedbench.report.writers.terminal\n",
            [(2, "report.writers.terminal")],
        ),
        (
            "report.summary.run",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from ...plugin.session import S\n",
            [(3, "plugin.session")],
        ),
        ("records.serial", "from .reporting import x\nimport report\n", []),
    ],
)
def test_the_import_reader_catches_each_form(
    module: str, source: str, caught: list[tuple[int, str]]
) -> None:
    assert list(imports_of(module, source, set(_modules_cache))) == caught


def test_a_circle_and_an_arrow_up_are_found() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert circles(graph) == [["a", "b", "c"]]
    assert floor_of("report.html.page") > floor_of("evaluation.evaluate") > floor_of("core.io")
    assert floor_of("cli.generate") > floor_of("generate.run")
    assert floor_of("") == TOP
