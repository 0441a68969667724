"""An editable install (``pip install -e .``, the README's install from a checkout) leaves the
package where pytest can mark it for assertion rewriting before the plugin's entry point
imports it.

pytest marks a plugin's package for rewriting by finding it on ``sys.path`` (PathFinder); behind
setuptools' import finder (its default editable mode for a flat layout) it finds nothing, so the
package is imported unmarked, and an in-process pytest started later (pytester), once the
checkout is on ``sys.path``, warns "Module already imported so cannot be rewritten;
pytest_embedbench" (issue 28, item 9).
"""

from __future__ import annotations

import importlib.machinery
import shutil
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_editable_install_puts_the_checkout_on_sys_path(tmp_path: Path) -> None:
    build_meta = pytest.importorskip("setuptools.build_meta")
    project = tmp_path / "checkout"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    shutil.copytree(
        REPO / "pytest_embedbench",
        project / "pytest_embedbench",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    out = tmp_path / "wheel"
    out.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)  # the PEP 517 hooks run in the project's folder
        wheel = out / build_meta.build_editable(str(out))
    with zipfile.ZipFile(wheel) as zf:
        pth = [n for n in zf.namelist() if n.endswith(".pth")]
        assert len(pth) == 1, zf.namelist()
        lines = [line for line in zf.read(pth[0]).decode().splitlines() if line.strip()]
        finders = [n for n in zf.namelist() if n.endswith("_finder.py")]
    # a path, not "import __editable___..._finder; ...install()"
    assert not finders and not any(line.startswith("import") for line in lines), lines
    assert [Path(line).resolve() for line in lines] == [project.resolve()]
    # what pytest's _mark_plugins_for_rewrite does for an editable plugin: a PathFinder lookup
    spec = importlib.machinery.PathFinder.find_spec("pytest_embedbench", lines)
    assert spec is not None and spec.origin is not None
    assert Path(spec.origin) == project / "pytest_embedbench" / "__init__.py"
