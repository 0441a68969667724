"""The documentation site builds with ``mkdocs build --strict`` (issue 32): a broken link, an
anchor that does not exist or a page left out of the navigation fails the suite, offline."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ..helpers import run_module

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[dev]'")
pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[dev]'")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return run_module(
        "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site), env=env, timeout=300
    )


def _copy(tmp_path: Path) -> Path:
    """The site's sources in a folder of their own, to break them there."""
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path / "mkdocs.yml"


def test_the_site_builds_strict(tmp_path: Path) -> None:
    done = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "getting-started" / "index.html").is_file()
    # nothing fetched when the site is viewed: no web fonts (theme.font: false)
    html = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in html and "fonts.gstatic.com" not in html


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, dict):
            return [p for value in nav.values() for p in pages(value)]
        return [p for item in nav for p in pages(item)] if isinstance(nav, list) else []

    listed = pages(config["nav"])
    assert sorted(listed) == sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert config["theme"]["font"] is False  # Material would load Google Fonts


@pytest.mark.parametrize(
    "broken, says",
    [
        ("[a page](no-such-page.md)", "no-such-page.md"),
        pytest.param(  # a second full build: the full suite
            "[an anchor](writing-tests.md#no-such-section)",
            "#no-such-section",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_broken_link_fails_the_build(tmp_path: Path, broken: str, says: str) -> None:
    config = _copy(tmp_path)
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n{broken}\n", encoding="utf-8")
    done = _build(config, tmp_path / "site")
    assert done.returncode != 0
    assert says in done.stdout + done.stderr


def test_a_page_left_out_of_the_navigation_fails_the_build(tmp_path: Path) -> None:
    config = _copy(tmp_path)
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    done = _build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "orphan.md" in done.stdout + done.stderr
