"""A tiny project for pytester runs: a BEIR dataset, embedbench.yaml and the hashing provider."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

CORPUS = [
    {"_id": "d1", "title": "Password reset", "text": "Reset your password from the login page."},
    {"_id": "d2", "title": "Invoices", "text": "Invoices are emailed every month as PDF."},
    {"_id": "d3", "title": "Export", "text": "Export workspace data as CSV from settings."},
    {"_id": "d4", "title": "Billing card", "text": "Change the card used for billing payments."},
    {"_id": "d5", "title": "Mobile", "text": "The mobile app syncs pages for offline reading."},
    {"_id": "d6", "title": "API limits", "text": "The API allows 600 requests per minute."},
]
QUERIES = [
    {"_id": "q1", "text": "how do I reset my password", "metadata": {"answer": "SECRET-ANSWER"}},
    {"_id": "q2", "text": "export data csv"},
    {"_id": "q3", "text": "monthly invoices pdf"},
    {"_id": "q4", "text": "rate limit of the api requests"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td3\t1\nq3\td2\t2\nq3\td4\t1\nq4\td6\t1\n"

CONFTEST = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from tests.helpers import HashingProvider  # registers the "hashing" provider
"""

#: a reranker of the tests' own, registered as a user's conftest would: ``reversed`` scores
#: the first stage upside down, its first candidate lowest
REVERSED = """
from pytest_embedbench.retrieval.rerank import Reranker, register_reranker


@register_reranker
class Reversed(Reranker):
    name = "reversed"

    def score(self, query, documents):
        return [float(i) for i in range(len(documents))]
"""

CONFIG = """
datasets:
  tiny: {path: data/tiny}
models:
  - hashing:h
  - bm25
"""


def write_beir(folder: Path, corpus: list[dict], queries: list[dict], qrels: str) -> None:
    """A BEIR dataset folder: ``corpus.jsonl`` and ``queries.jsonl`` (one record a line) and
    ``qrels/test.tsv`` (``qrels`` as given, its header included)."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n")
    (folder / "qrels" / "test.tsv").write_text(qrels)


def write_dataset(folder: Path, ds: Any) -> None:
    """A loaded or built ``RetrievalDataset`` written back as a BEIR folder (its documents,
    queries and graded qrels)."""
    write_beir(
        folder,
        [{"_id": d.id, "title": "", "text": d.text} for d in ds.documents],
        [{"_id": q.id, "text": q.text} for q in ds.queries],
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{g}\n" for q, judged in ds.qrels.items() for d, g in judged.items()),
    )


def write_tiny(pytester: pytest.Pytester) -> None:
    """The tiny dataset under ``data/tiny`` and the conftest that registers ``hashing``."""
    write_beir(pytester.path / "data" / "tiny", CORPUS, QUERIES, QRELS)
    pytester.makeconftest(CONFTEST)


def bench_module(marker: str, body: str = "pass", *, name: str = "test_search") -> str:
    """The source of a test module holding one benchmark test, ``name``, marked
    ``@pytest.mark.embedbench(<marker>)``; ``body`` is its body (one line)."""
    return f"import pytest\n\n\n{_bench_test(name, marker, body)}"


def bench_tests(**markers: str) -> str:
    """The source of a test module of benchmark tests that only pass, one a ``name=marker``."""
    tests = [_bench_test(name, marker, "pass") for name, marker in markers.items()]
    return "import pytest\n\n\n" + "\n\n".join(tests)


def _bench_test(name: str, marker: str, body: str) -> str:
    return f"@pytest.mark.embedbench({marker})\ndef {name}(retrieval):\n    {body}\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_tiny(pytester)
    pytester.makefile(".yaml", embedbench=CONFIG)
    set_ini(pytester)
    return pytester


def run_expecting(
    pytester: pytest.Pytester, *args: str, lines: list[str], **outcomes: int
) -> pytest.RunResult:
    """``pytester.runpytest(*args)``, checked: these ``outcomes`` (``passed=2``) and these
    ``lines`` in its output, in order (fnmatch patterns)."""
    result = pytester.runpytest(*args)
    result.assert_outcomes(**outcomes)
    result.stdout.fnmatch_lines(lines)
    return result


def run_refused(pytester: pytest.Pytester, *args: str, lines: list[str]) -> pytest.RunResult:
    """``pytester.runpytest(*args)``, checked: a usage error (exit status 4) and these ``lines``
    on stderr, in order (fnmatch patterns)."""
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(lines)
    return result


def run_size_limited(folder: Path, limit: int, *args: str) -> tuple[int, str]:
    """``python -m pytest -p no:cacheprovider --embedbench-no-cache *args`` in ``folder``, in a
    fresh process whose files the kernel lets grow to ``limit`` bytes and no further
    (RLIMIT_FSIZE: every write past it fails with EFBIG; Python ignores SIGXFSZ): the stand-in
    for a full disk where no tmpfs can be mounted. Its exit status and output (stderr merged
    into stdout); a run that hangs fails the test after 180 s with its output."""
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--embedbench-no-cache"]
    try:
        done = subprocess.run(
            [*command, *args],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=limited,
            timeout=180,
            check=False,
        )
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the run hung (killed after 180 s); its output:\n{hung.output}")
    return done.returncode, done.stdout


def fill(folder: Path, chunk: int) -> None:
    """Grow a filler file in ``folder`` (a small tmpfs), ``chunk`` bytes a write, until the
    kernel says ENOSPC."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * chunk)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def write_config(pytester: pytest.Pytester, text: str) -> None:
    """The project's embedbench.yaml: the tiny dataset, then ``text`` (YAML of other keys)."""
    pytester.makefile(".yaml", embedbench="datasets:\n  tiny: {path: data/tiny}\n" + text)


def add_to_conftest(pytester: pytest.Pytester, source: str) -> None:
    """``source`` (hooks, a provider) appended to the project's conftest.py."""
    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + source)


def set_ini(pytester: pytest.Pytester, *lines: str) -> None:
    """The project's ini file: the cache folder, 2,000 bootstrap resamples (fast, and enough
    for the tiny dataset), then ``lines`` (``"key = value"``)."""
    keys = ["embedbench_cache_dir = .cache-embedbench", "embedbench_bootstrap = 2000", *lines]
    pytester.makeini("[pytest]\n" + "".join(f"{line}\n" for line in keys))


#: each behaviour runs serially, and under pytest-xdist with two workers in the full suite (the
#: xdist variants start two workers each, most of the fast suite's time; ``-m "not slow"`` keeps
#: the serial ones, and test_xdist_table_and_json_equal_serial and the killed-worker test keep
#: xdist itself in the fast suite)
MODES = [
    pytest.param([], id="serial"),
    pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow),
]


#: the words of the topics dataset: document i holds its own rare word, query i asks for it
TOPIC_WORDS = [f"{a}{b}" for a in ("zor", "mip", "tal", "ven", "qua", "lek") for b in "abcdefghij"]


def make_dataset(pytester: pytest.Pytester, n_queries: int = 60) -> None:
    """60 documents, each with its own rare word; query i asks for document i's word."""
    corpus = [
        {"_id": f"d{i:02d}", "title": "", "text": f"notes about {w} and the {w} procedure"}
        for i, w in enumerate(TOPIC_WORDS)
    ]
    queries = [
        {"_id": f"q{i:02d}", "text": f"where is {w} explained"} for i, w in enumerate(TOPIC_WORDS)
    ]
    qrels = "".join(f"q{i:02d}\td{i:02d}\t1\n" for i in range(n_queries))
    write_beir(
        pytester.path / "data" / "topics", corpus, queries, "query-id\tcorpus-id\tscore\n" + qrels
    )


@pytest.fixture
def gated(pytester: pytest.Pytester) -> pytest.Pytester:
    """The topics dataset (60 queries) and the hashing provider: where a gate has room to tell
    a weak model from a strong one."""
    make_dataset(pytester)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", embedbench="datasets:\n  topics: {path: data/topics}\n")
    pytester.makeini("[pytest]\nembedbench_cache_dir = .cache-embedbench\n")
    return pytester


#: the thinned dataset (:func:`thinned`): a seeded half of each query's judgments removed
WORDS = [f"{a}{b}" for a in ("zor", "mip", "tal", "ven") for b in "abcdefghij"]


def thinned_dataset(folder: Path, seed: int = 7, n_queries: int = 8) -> dict[str, dict[str, int]]:
    """40 documents that share words with 8 queries (the first ``n_queries`` kept); each query
    judges 8 documents (grades 0 to 2), then loses a seeded half of its judgments. The thinned
    qrels are written and returned."""
    rng = np.random.default_rng(seed)
    corpus = [
        {"_id": f"d{i:02d}", "title": "", "text": " ".join(rng.choice(WORDS, 6))} for i in range(40)
    ]
    queries = [{"_id": f"q{i}", "text": " ".join(rng.choice(WORDS, 3))} for i in range(8)]
    queries = queries[:n_queries]
    qrels: dict[str, dict[str, int]] = {}
    for q in queries:
        judged = rng.choice(40, 8, replace=False)
        full = {f"d{j:02d}": int(rng.integers(0, 3)) for j in judged}
        kept = rng.choice(sorted(full), len(full) // 2, replace=False)  # a seeded half
        qrels[q["_id"]] = {d: full[d] for d in sorted(kept)}
    lines = "".join(f"{q}\t{d}\t{g}\n" for q, j in qrels.items() for d, g in j.items())
    write_beir(folder, corpus, queries, "query-id\tcorpus-id\tscore\n" + lines)
    return qrels


@pytest.fixture
def thinned(pytester: pytest.Pytester) -> dict[str, dict[str, int]]:
    write_tiny(pytester)  # the conftest
    qrels = thinned_dataset(pytester.path / "data" / "thin")
    pytester.makefile(".yaml", embedbench="datasets:\n  thin: {path: data/thin}\n")
    set_ini(pytester)
    return qrels


#: a bm25 benchmark test on the thinned dataset at k=10 (``extra``: more marker arguments)
BENCH = """
import pytest

@pytest.mark.embedbench(models=["bm25"], dataset="thin", k=[10]{extra})
def test_search(retrieval):
    {body}
"""
