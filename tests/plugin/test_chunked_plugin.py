"""Chunked datasets through real pytest runs (issue 12 parts 3-5): chunking from
embedbench.yaml, the marker's override, a changed chunking named by the baseline gate, eval-set
problems named by file and line before any model loads, and each retrieved document's winning
chunk in the JSON report. BM25 only, and the real chunker (chunking.py)."""

from __future__ import annotations

import json

import pytest

from .conftest import CONFTEST, MODES, bench_module

#: six manuals of four paragraphs each; every paragraph has a word of its own
TOPICS = ["printer", "scanner", "router", "camera", "speaker", "monitor"]
ASPECTS = [
    ("setup", "Unpack the {t} and connect the cable. Setup takes about ten minutes in all."),
    ("cleaning", "Wipe the {t} with a dry cloth. Cleaning once a month keeps it working well."),
    ("warranty", "The {t} warranty lasts two years. Keep the receipt to claim the warranty."),
    ("firmware", "Update the {t} firmware from the settings page. Firmware updates fix bugs."),
]

CONFIG = """
datasets:
  manuals:
    path: docs
    evalset: evalset.jsonl
    chunking: {strategy: recursive, size: 120, overlap: 10, unit: chars, min_chunk_chars: 20}
models: [bm25]
k: [1, 3, 5]
"""

TESTS = """
import pytest

@pytest.mark.embedbench(dataset="manuals")
def test_yaml(retrieval):
    assert retrieval.chunking.size == 120
    assert len(retrieval.chunks) > 6                  # chunks were searched ...
    assert all(len(ids) == 5 for ids in retrieval.rankings.values())   # ... documents ranked
    assert retrieval.recall(5) >= 0.5

@pytest.mark.embedbench(dataset="manuals", chunking={"size": 300, "overlap": 0})
def test_marker_override(retrieval):
    assert retrieval.chunking.size == 300 and retrieval.chunking.strategy == "recursive"

@pytest.mark.embedbench(dataset="manuals", chunking=None)
def test_whole_documents(retrieval):
    assert retrieval.chunking is None and retrieval.winning_chunks is None
"""


def write_manuals(pytester: pytest.Pytester, config: str = CONFIG) -> None:
    docs = pytester.path / "docs"
    docs.mkdir(exist_ok=True)
    lines = []
    for topic in TOPICS:
        paragraphs = [f"# The {topic} manual"] + [text.format(t=topic) for _, text in ASPECTS]
        (docs / f"{topic}.md").write_text("\n\n".join(paragraphs) + "\n")
        for aspect, _ in ASPECTS[1:3]:
            lines.append({"query": f"{topic} {aspect}", "relevant_doc_ids": [f"{topic}.md"]})
    (pytester.path / "evalset.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    pytester.makefile(".yaml", embedbench=config)


@pytest.fixture
def manuals(pytester: pytest.Pytester) -> pytest.Pytester:
    write_manuals(pytester)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(
        "[pytest]\nembedbench_cache_dir = .cache-embedbench\nembedbench_bootstrap = 500\n"
    )
    return pytester


@pytest.mark.parametrize("mode", MODES)
def test_yaml_chunking_the_marker_override_and_the_winning_chunks(
    manuals: pytest.Pytester, mode: list[str]
) -> None:
    manuals.makepyfile(test_manuals=TESTS)
    result = manuals.runpytest("--embedbench-json", "r.json", *mode)
    result.assert_outcomes(passed=3)
    report = json.loads((manuals.path / "r.json").read_text())
    tests = {t["test"]: t for t in report["tests"]}
    yaml_result = tests["test_yaml"]["result"]
    assert yaml_result["documents"] == 6
    assert yaml_result["chunking"]["size"] == 120 and yaml_result["chunking"]["chunks"] > 6
    assert tests["test_marker_override"]["result"]["chunking"]["size"] == 300
    assert "chunking" not in tests["test_whole_documents"]["result"]
    assert "winning_chunks" not in tests["test_whole_documents"]["result"]
    # three datasets to the gate: the chunking is part of each one's fingerprint
    fingerprints = {t["result"]["dataset_fingerprint"] for t in tests.values()}
    assert len(fingerprints) == 3
    # per query: each retrieved document with the chunk that won it, its span in the document
    texts = {f"{t}.md": (manuals.path / "docs" / f"{t}.md").read_text() for t in TOPICS}
    for rows in yaml_result["winning_chunks"].values():
        assert len(rows) == 5 and len({r["doc_id"] for r in rows}) == 5
        for row in rows:
            assert row["chunk_id"].startswith(row["doc_id"] + "#")
            assert 0 <= row["start"] < row["end"] <= len(texts[row["doc_id"]])
            # and the start of its text, on one line, for the reports' per-query diffs
            span = " ".join(texts[row["doc_id"]][row["start"] : row["end"]].split())
            assert row["text"] and span.startswith(row["text"].removesuffix("…"))
        scores = [row["score"] for row in rows]
        assert scores == sorted(scores, reverse=True)


def test_a_bad_marker_chunking_is_a_collection_error(manuals: pytest.Pytester) -> None:
    manuals.makepyfile(test_bad=bench_module('dataset="manuals", chunking={"size": "big"}'))
    result = manuals.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*test_bad.py: @pytest.mark.embedbench chunking.size: 'big' must be a whole number "
            ">= 1 (the most characters a chunk holds), e.g. size: 800*"
        ]
    )


def test_tokens_without_a_tokenizer_on_bm25_is_a_collection_error(
    manuals: pytest.Pytester,
) -> None:
    write_manuals(manuals, CONFIG.replace("unit: chars", "unit: tokens"))
    manuals.makepyfile(test_manuals=TESTS)
    result = manuals.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*embedbench.yaml: datasets.manuals.chunking: unit 'tokens' with no tokenizer "
            "counts in the model's own tokens, and 'bm25' (bm25) has no tokenizer of its own; "
            "name one with chunking.tokenizer*"
        ]
    )


def test_a_changed_chunking_is_named_by_the_gate(manuals: pytest.Pytester) -> None:
    manuals.makepyfile(test_manuals=bench_module('dataset="manuals"', name="test_yaml"))
    manuals.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    write_manuals(manuals, CONFIG.replace("size: 120", "size: 100"))
    result = manuals.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_manuals.py::test_yaml?bm25?: compared with a baseline of other inputs: the "
            "dataset changed: chunking.size 120 -> 100*"
        ]
    )


BOOM = (
    CONFTEST
    + """
from pytest_embedbench import EmbeddingProvider, register_provider

class Boom(EmbeddingProvider):
    name = "boom"

    def load(self):
        raise RuntimeError("THE MODEL LOADED")

register_provider(Boom)
"""
)

ONE_TEST = """
import pytest

@pytest.mark.embedbench(dataset="manuals", models=["boom:x", "bm25"])
def test_search(retrieval):
    pass
"""


def test_evalset_problems_name_file_and_line_before_a_model_loads(
    pytester: pytest.Pytester,
) -> None:
    write_manuals(pytester)
    pytester.makeconftest(BOOM)
    pytester.makeini("[pytest]\nembedbench_cache_dir = .cache-embedbench\n")
    evalset = pytester.path / "evalset.jsonl"
    lines = evalset.read_text().splitlines()
    # line 3 judges a document that is not there; line 5 an HTML page that has no text
    lines[2] = json.dumps({"query": "toaster crumbs", "relevant_doc_ids": ["toaster.md"]})
    lines[4] = json.dumps({"query": "about", "relevant_doc_ids": ["about.html"]})
    evalset.write_text("\n".join(lines) + "\n")
    (pytester.path / "docs" / "about.html").write_text(
        "<html><head><title>About</title><script>x()</script></head><body></body></html>"
    )
    pytester.makepyfile(test_manuals=ONE_TEST)
    result = pytester.runpytest("-W", "ignore::pytest.PytestWarning")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "THE MODEL LOADED" not in out
    assert f"{evalset} line 3: document 'toaster.md' is not in {pytester.path / 'docs'}" in out
    lines[2] = json.dumps({"query": "printer setup", "relevant_doc_ids": ["printer.md"]})
    evalset.write_text("\n".join(lines) + "\n")
    result = pytester.runpytest("-W", "ignore::pytest.PytestWarning")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "THE MODEL LOADED" not in out
    assert (
        f"{evalset} line 5: document 'about.html' is in {pytester.path / 'docs'} but gave no "
        "text" in out
    )
