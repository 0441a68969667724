"""Every code block of README.md and docs/*.md runs (issue 32), page by page, in a folder that
holds the README's three-file project; the count is printed at the end of the run.

See runner.py for what each language's block must do. A page that runs a real model or pytest
sessions is slow (the fast suite, ``-m "not slow"``, leaves it out).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, which pytest itself needs there
    import tomli as tomllib

pytest.importorskip("sybil", reason="Sybil is not installed: pip install -e '.[dev]'")

from ..helpers import run_module
from .runner import blocks, run_page, same_shape, subprocess_env  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"

#: pages whose blocks are not examples: the architecture page draws the layout in plain fences
NOT_EXAMPLES = {"ARCHITECTURE.md": "diagrams of the package layout, not examples"}


def _pages() -> list[Path]:
    return [README] + sorted(p for p in DOCS.glob("*.md") if p.name not in NOT_EXAMPLES)


def _is_slow(page: Path) -> bool:
    """A page that starts pytest sessions or loads a real model."""
    return any(
        language == "bash" or (language == "python" and "hf:" in source)
        for _, language, source in blocks(page)
    )


def _param(page: Path) -> object:
    marks = [pytest.mark.slow] if _is_slow(page) else []
    return pytest.param(page, id=str(page.relative_to(REPO)), marks=marks)


def _is_pytest_run(language: str, source: str) -> bool:
    return language == "bash" and re.search(r"^\s*pytest\b", source, re.M) is not None


@pytest.fixture(scope="session")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's three-file project, made by the README's own blocks: those of its section
    "Your own project in three files" up to the first pytest command."""
    folder = tmp_path_factory.mktemp("quickstart")
    text = README.read_text(encoding="utf-8")
    start = text[: text.index("## Your own project in three files")].count("\n") + 1
    run_page(README, folder, folder / ".no-cache", start=start, stop=_is_pytest_run)
    assert (folder / "embedbench.yaml").is_file() and (folder / "handbook").is_dir()
    return folder


@pytest.mark.parametrize("page", [_param(p) for p in _pages()])
def test_every_block_of_the_page_runs(
    page: Path,
    tmp_path: Path,
    quickstart: Path,
    monkeypatch: pytest.MonkeyPatch,
    record_property: pytest.RecordProperty,
) -> None:
    from pytest_embedbench.models.providers.registry import PROVIDERS

    sandbox = tmp_path / "project"
    if page == README:  # the README starts from an empty folder, as a reader does
        sandbox.mkdir()
    else:
        shutil.copytree(quickstart, sandbox)
    # a cache of the page's own: its first run is cold, as the outputs shown are
    cache = tmp_path / "cache"
    monkeypatch.chdir(sandbox)
    monkeypatch.setenv("EMBEDBENCH_CACHE_DIR", str(cache))
    providers = dict(PROVIDERS)  # a page may register a provider: not for the other tests
    try:
        run = run_page(page, sandbox, cache)
    finally:
        PROVIDERS.clear()
        PROVIDERS.update(providers)
    summary = run.summary()
    assert sum(summary["ran"].values()) + len(summary["skipped"]) > 0, "a page without examples"
    record_property("docs_examples", json.dumps({"page": page.name, **summary}))


@pytest.mark.slow
def test_the_readme_opening_example_runs(tmp_path: Path) -> None:
    """The README's first example, as written, on the bundled support documentation (the
    dataset it names), prints the table the README shows under it."""
    pytest.importorskip("sentence_transformers")
    readme = blocks(README)
    (_, language, test), (_, shown_language, shown) = readme[0], readme[1]
    assert (language, shown_language) == ("python", "text") and 'dataset="support"' in test
    shutil.copytree(REPO / "examples" / "support", tmp_path / "support")
    (tmp_path / "embedbench.yaml").write_text("datasets:\n  support: {path: support}\n")
    (tmp_path / "test_support.py").write_text(test, encoding="utf-8")
    env = subprocess_env(tmp_path, tmp_path / "cache")
    done = run_module("pytest", "-p", "no:cacheprovider", cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    same_shape(shown, done.stdout, "README.md, the opening example")


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move reference material to docs/"


def test_the_readme_runs_what_ci_runs() -> None:
    """The README's contributor commands are the ones .ci/run runs, in the same order, and its
    install line installs what .ci/run installs."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    ci_runs = re.findall(r"^(python -m pytest\b.*)$", ci, re.M)
    shown = [
        line.split("#")[0].strip()
        for _, language, source in blocks(README)
        if language == "bash"
        for line in source.splitlines()
        if line.startswith("python -m pytest")
    ]
    assert shown == ci_runs
    ci_extras = re.search(r'pip install --quiet -e "(\.\[[\w,]+\])"', ci)
    assert ci_extras is not None
    assert f'pip install -e "{ci_extras[1]}"' in readme


def test_the_home_page_and_getting_started_show_the_readme_example() -> None:
    """docs/getting-started.md repeats the README's three files and its baseline in CI block
    for block, and docs/index.md its opening example, so the site cannot drift from it."""
    readme = [(language, source) for _, language, source in blocks(README)]
    first = next(i for i, (_, s) in enumerate(readme) if s.startswith("embedbench.yaml\n"))
    last = next(i for i, (_, s) in enumerate(readme) if "GITHUB_STEP_SUMMARY" in s)
    shown = readme[first : last + 1]
    page = [(language, source) for _, language, source in blocks(DOCS / "getting-started.md")]
    at = page.index(shown[0])
    assert page[at : at + len(shown)] == shown
    index = [(language, source) for _, language, source in blocks(DOCS / "index.md")]
    assert index[0] == readme[0]


def test_every_extra_named_in_the_docs_exists() -> None:
    extras = set(
        tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    for page in [README, *DOCS.glob("*.md")]:
        for named in re.findall(r"pytest-embedbench\[([\w,]+)\]", page.read_text("utf-8")):
            assert set(named.split(",")) <= extras, (page.name, named)


# ---- a broken example fails the test -----------------------------------------------------

#: a page with one broken block, and what the failure says
BROKEN = {
    "python": ("```python\nassert 1 + 1 == 3\n```\n", "AssertionError"),
    "bash": ("```bash\nfalse\n```\n", "page.md, line 5: exit status 1, not 0"),
    "bash-status": ("```bash\ntrue   # exit status 1\n```\n", "exit status 0, not 1"),
    "output": (
        "```bash\necho one table\n```\n\n```text\ntwo tables\n```\n",
        "page.md, line 9: the output shown has a line the command did not print",
    ),
    "yaml": ("```yaml\nkey: [unclosed\n```\n", "page.md, line 5: not valid YAML"),
    "config": ("```yaml\ndatasets: {d: {path: x}}\nmodels: [bm25]\nk: []\n```\n", "k: []"),
    "file-config": (
        "```yaml\n# embedbench.yaml\ndatasets: {d: {path: x, chunk: 1}}\n```\n",
        "did you mean 'chunking'?",
    ),
    "json": ('```json\n{"a": 1,}\n```\n', "page.md, line 5: JSON line 1"),
    "toml": ("```toml\n[x\n```\n", "page.md, line 5: not valid TOML"),
    "ini": ("```ini\nno section\n```\n", "page.md, line 5: not a valid ini file"),
    "language": ("```\nno language\n```\n", "a ```(no language) block"),
    "expect-error": (
        "<!-- expect-error: ConfigError -->\n```python\nx = 1\n```\n",
        "the page says this block raises ConfigError; it did not",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_example_fails(kind: str, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    block, says = BROKEN[kind]
    page.write_text(f"# A page\n\nText.\n\n{block}", encoding="utf-8")
    (tmp_path / "sandbox").mkdir()
    with pytest.raises(Exception) as failed:
        run_page(page, tmp_path / "sandbox", tmp_path / "cache")
    assert says in failed.exconly()


def test_a_skipped_example_is_counted_with_its_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        '<!-- skip: next "needs a GPU" -->\n```python\nraise SystemExit\n```\n\n'
        "```python\nx = 1\n```\n\n```bash\necho a b\n```\n\n```text\na b\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "sandbox").mkdir()
    run = run_page(page, tmp_path / "sandbox", tmp_path / "cache")
    assert run.summary() == {
        "ran": {"bash": 1, "python": 1},
        "outputs_compared": 1,
        "outputs_shown": 0,
        "skipped": ["line 2: needs a GPU"],
    }
