"""A tiny project for pytester runs: a BEIR dataset, embedbench.yaml and the hashing provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# pytester's in-process runs drop modules first imported inside a run; importing a C extension
# (faiss, bm25s's scipy parts, PyStemmer) again in one process can crash it, so load them here
# (and the document readers: lxml under python-docx; ingest itself, so a test that patches it
# after a pytester run patches the module the loaders use)
_PRELOAD = ("faiss", "bm25s", "Stemmer", "scipy.sparse", "sqlite3", "psutil", "tabulate")
_PRELOAD += ("lxml.etree", "docx", "pypdf", "bs4", "tokenizers")
_PRELOAD += ("pytest_embedbench.ingest", "pytest_embedbench.chunking")
for _name in _PRELOAD:
    try:
        __import__(_name)
    except ImportError:
        pass

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

CONFIG = """
datasets:
  tiny: {path: data/tiny}
models:
  - hashing:h
  - bm25
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    data = pytester.path / "data" / "tiny"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in CORPUS) + "\n")
    (data / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in QUERIES) + "\n")
    (data / "qrels" / "test.tsv").write_text(QRELS)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", embedbench=CONFIG)
    pytester.makeini(
        """
        [pytest]
        embedbench_cache_dir = .cache-embedbench
        embedbench_bootstrap = 2000
        """
    )
    return pytester


#: each behaviour runs serially, and under pytest-xdist with two workers in the full suite (the
#: xdist variants start two workers each, most of the fast suite's time; ``-m "not slow"`` keeps
#: the serial ones, and test_xdist_table_and_json_equal_serial and the killed-worker test keep
#: xdist itself in the fast suite)
MODES = [
    pytest.param([], id="serial"),
    pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow),
]
