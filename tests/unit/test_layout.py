"""The size figures of issue #10 ("One record, one summary"), over the whole package: no
function over 60 lines (from its ``def`` line to its last line, docstring included:
``end_lineno - lineno + 1``), no module over 500 lines, ``session.py`` under 350 lines and importing
nothing from ``report/``. Each failure names every offender as ``file:line`` with its length."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_embedbench"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500
MAX_SESSION_LINES = 349  # under 350


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{line}"


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_the_package_is_found() -> None:
    assert (PACKAGE / "session.py").is_file() and len(_modules()) > 10


def test_no_function_is_over_60_lines() -> None:
    offenders = []
    for path in _modules():
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    offenders.append(f"{_where(path, node.lineno)} {node.name}: {length} lines")
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(offenders)


def test_no_module_is_over_500_lines() -> None:
    offenders = []
    for path in _modules():
        length = len(path.read_text(encoding="utf-8").splitlines())
        if length > MAX_MODULE_LINES:
            offenders.append(f"{_where(path, 1)}: {length} lines")
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(offenders)


def test_session_is_under_350_lines() -> None:
    path = PACKAGE / "session.py"
    length = len(path.read_text(encoding="utf-8").splitlines())
    assert length <= MAX_SESSION_LINES, f"{_where(path, 1)}: {length} lines (must be under 350)"


def _report_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) for each import in ``source``, a module at the package root, top level or
    inside a function, that reaches ``pytest_embedbench.report``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative to the package root, where session.py sits
                base = f"pytest_embedbench.{base}" if base else "pytest_embedbench"
            names = [base] if node.module else [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name == "pytest_embedbench.report" or name.startswith("pytest_embedbench.report."):
                found.append((node.lineno, name))
    return found


def test_session_imports_nothing_from_report() -> None:
    path = PACKAGE / "session.py"
    offenders = [
        f"{_where(path, line)} {name}"
        for line, name in _report_imports(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "session.py imports from report/:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("from .report.summary import Summary\n", [(1, "pytest_embedbench.report.summary")]),
        ("from . import records, report\n", [(1, "pytest_embedbench.report")]),
        (
            "def f():\n    import pytest_embedbench.report.terminal\n",
            [(2, "pytest_embedbench.report.terminal")],
        ),
        ("from .reporting import x\nfrom .records import TestRecord\nimport report\n", []),
    ],
)
def test_the_report_import_check_catches_each_form(
    source: str, caught: list[tuple[int, str]]
) -> None:
    assert _report_imports(source) == caught
