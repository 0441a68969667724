"""Shared fixtures: tiny datasets written to tmp_path, the SciFact folder, real providers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# pytester's in-process runs drop the modules first imported inside a run, so the next run
# imports them again: a C extension imported twice in one process can crash it (faiss, bm25s's
# scipy parts, PyStemmer), and the pure-Python ones cost seconds per run (scipy.stats is about
# 400 modules; pytest re-applies assertion rewriting to hypothesis, a pytest plugin's package).
# Importing them here, once, keeps them across runs.
_PRELOAD = (
    "faiss",
    "bm25s",
    "Stemmer",
    "scipy.sparse",
    "scipy.stats",
    "sqlite3",
    "psutil",
    "tabulate",
    "filelock",
    "cpuinfo",
    "hypothesis.internal.observability",
    "gzip",
    "multiprocessing",
    # the document readers (lxml under python-docx)
    "lxml.etree",
    "docx",
    "pypdf",
    "bs4",
    "tokenizers",
    # psycopg's C extension keeps the error classes of the first import: a second import's
    # psycopg.Error would not catch what it raises
    "psycopg",
    "pgvector.psycopg",
)
for _name in _PRELOAD:
    try:
        __import__(_name)
    except ImportError:
        pass


def _preload_package() -> None:
    """Every module of the plugin (the providers are imported lazily, by the registry)."""
    import importlib
    import pkgutil

    import pytest_embedbench

    for info in pkgutil.walk_packages(pytest_embedbench.__path__, "pytest_embedbench."):
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional provider's client is not installed
            pass


_preload_package()

REPO = Path(__file__).resolve().parent.parent


#: third-party pytest plugins the suite's own pytest runs (pytester's, xdist's workers, the
#: subprocess runs) have no use for, and that cost most of a fresh process's start: langsmith's
#: (installed with voyageai, through langchain) imports its client, hypothesis's imports
#: hypothesis; together about two thirds of the CPU of a two-worker xdist run of a trivial test
QUIET_PLUGINS = "-p no:langsmith_plugin -p no:hypothesispytest"


def _quiet_runs() -> None:
    """The suite's pytest runs start without :data:`QUIET_PLUGINS` (the variable every pytest
    process reads, and that its children inherit); this session loaded them already."""
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    if QUIET_PLUGINS not in addopts:
        os.environ["PYTEST_ADDOPTS"] = f"{addopts} {QUIET_PLUGINS}".strip()


_quiet_runs()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose runs start without :data:`QUIET_PLUGINS` too (pytester removes
    PYTEST_ADDOPTS from the environment of its runs)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", QUIET_PLUGINS)
    return pytester


def pytest_configure(config: pytest.Config) -> None:
    """EMBEDBENCH_DURATIONS=N (set by .ci/run) lists the N slowest phases at the end, as
    ``--durations=N`` would, so CI's log says where its time went while it runs the README's
    command unchanged; taken out of the environment so the suite's own pytest runs don't list
    theirs."""
    wanted = os.environ.pop("EMBEDBENCH_DURATIONS", "")
    if wanted.isdigit() and not config.option.durations:
        config.option.durations = int(wanted)


SCIFACT = Path(os.environ.get("EMBEDBENCH_SCIFACT", REPO.parent / "shared" / "data" / "scifact"))


@pytest.fixture(autouse=True)
def _not_in_a_github_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's own pytest runs never append to the job summary of a GitHub Actions job
    that runs the suite (the plugin appends to $GITHUB_STEP_SUMMARY when it is set)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="session")
def scifact_path() -> Path:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact not found at {SCIFACT} (set EMBEDBENCH_SCIFACT)")
    return SCIFACT


@pytest.fixture(scope="session")
def scifact_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for every full-SciFact test: the corpus is embedded once a run."""
    return tmp_path_factory.mktemp("scifact-cache")


def write_jsonl(path: Path, rows: list[dict], *, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        for row in rows:
            fh.write(json.dumps(row) + newline)
    return path


@pytest.fixture
def beir_folder(tmp_path: Path) -> Path:
    """A four-document BEIR folder with CRLF lines and a qrels header."""
    root = tmp_path / "tiny-beir"
    write_jsonl(
        root / "corpus.jsonl",
        [
            {"_id": "d1", "title": "Password reset", "text": "Reset your password from login."},
            {"_id": "d2", "title": "", "text": "Invoices are emailed every month."},
            {"_id": "d3", "title": "Export", "text": "Export data as CSV from settings."},
            {"_id": "d4", "title": "Billing", "text": "Change the card used for billing."},
        ],
        newline="\r\n",
    )
    write_jsonl(
        root / "queries.jsonl",
        [
            {"_id": "q1", "text": "how to reset password", "metadata": {"answer": "d1"}},
            {"_id": "q2", "text": "download my data as csv", "metadata": {}},
            {"_id": "q3", "text": "an unjudged query"},
        ],
        newline="\r\n",
    )
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_bytes(
        b"query-id\tcorpus-id\tscore\r\nq1\td1\t2\r\nq1\td4\t0\r\nq2\td3\t1\r\n"
    )
    return root


from .helpers import HashingProvider  # noqa: E402,F401  (registers "hashing")
