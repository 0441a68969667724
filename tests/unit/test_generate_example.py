"""The generated eval set of ``examples/generated``, written by a real small model
(SmolLM2-135M-Instruct under llama-cpp-python's server; examples/generated/README.md says how to
re-record it), stays fresh and consistent offline; and the filters catch the mistakes small
models make, through a loopback Ollama whose scripted, deterministic answerer makes them (the
docs pages use that answerer too)."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.core.yamlfile import read_yaml
from pytest_embedbench.data.datasets import load_dataset
from pytest_embedbench.data.ingest import load_documents
from pytest_embedbench.generate import (
    dataset_generation,
    evalset_fingerprint,
    evalset_text,
    generate_evalset,
    sidecar_path,
)

from ..providers.servers import OllamaChatServer, chat_passage

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "generated"
NAME = "support-generated"

_STOP = frozenset(
    "a an and are as at be by can for from has have how if in into is it its of on or our "
    "that the their then there these this to was we what when which who will with you your "
    "lumio also any each more not only other than they all one use used".split()
)
_WORD = re.compile(r"[a-z][a-z0-9-]{2,}")


def _heading(passage: str, doc_id: str) -> str:
    for line in passage.splitlines():
        line = line.strip()
        if line.startswith("#"):
            return line.lstrip("#").strip().lower()
    return Path(doc_id).stem.replace("-", " ")


def scripted_answer(body: Any) -> str:
    """What a small, obliging model might say for a chunk: a question from its heading (the
    same for every chunk of a document without one: near-duplicates), one from its commonest
    words, and, decided by a hash of the chunk, prose instead of JSON on the first attempt, a
    'this passage' question, a missing '?' or a 'summarize' request."""
    passage = chat_passage(body)
    prompt = next(m["content"] for m in body["messages"] if "<<<" in m.get("content", ""))
    doc_id = prompt.split("Passage (from ", 1)[1].split("):", 1)[0]
    h = int(hashlib.sha256(passage.encode()).hexdigest(), 16)
    retry = len(body["messages"]) > 2
    if h % 7 == 0 and not retry:
        return "Sure! Here are two questions you could ask about this section of the docs."
    heading = _heading(passage, doc_id)
    words = [w for w in _WORD.findall(passage.lower()) if w not in _STOP]
    common = [w for w, _ in Counter(words).most_common(3)]
    first = f"How does Lumio handle {heading}?"
    second = f"What does Lumio say about {common[0]}, {common[1]} and {common[2]}?"
    if h % 5 == 0:
        second = f"What does this passage say about {common[0]}?"
    elif h % 5 == 1:
        second = second.rstrip("?")
    elif h % 5 == 2:
        second = f"Summarize the {heading} section?"
    answer = passage.split("\n")[-1][:80]
    return json.dumps({"questions": [{"question": q, "answer": answer} for q in (first, second)]})


def scripted_generation() -> Any:
    """The example's settings, generated through a loopback Ollama whose scripted answerer
    makes the mistakes small models make (the docs' pages use the same answerer)."""
    config = EXAMPLE / "embedbench.yaml"
    raw = read_yaml(config, "config file", ConfigError)
    settings, docs = dataset_generation(
        raw["datasets"][NAME], name=NAME, where=f"{config}: datasets.{NAME}", base=EXAMPLE
    )
    documents = load_documents(docs)
    scripted = {**settings.__dict__, "model": "llama3.2", "retry_backoff_s": 0.0}
    with OllamaChatServer(answerer=scripted_answer) as server:
        return generate_evalset(documents, type(settings)(**{**scripted, "host": server.url}))


def test_the_filters_catch_a_small_models_usual_mistakes() -> None:
    report = scripted_generation().report
    assert report.bad_answers["invalid_json"] >= 1
    # (a heading two documents share: a question of several documents, every copy rejected)
    for reason in (
        "duplicate",
        "duplicate_across_documents",
        "refers_to_source",
        "no_question_mark",
        "generic",
    ):
        assert report.rejected[reason] >= 1, reason
    assert report.kept >= 30


def test_the_recorded_set_is_fresh_and_what_the_filters_kept() -> None:
    """examples/generated was written by a real model (SmolLM2-135M, README.md): it is fresh
    for its settings and documents (so ``pytest examples`` reuses it offline, no server), its
    counts add up, and every recorded question passes the filters that kept it."""
    from pytest_embedbench.generate.filters import _heuristic_reason

    config = EXAMPLE / "embedbench.yaml"
    raw = read_yaml(config, "config file", ConfigError)
    settings, docs = dataset_generation(
        raw["datasets"][NAME], name=NAME, where=f"{config}: datasets.{NAME}", base=EXAMPLE
    )
    recorded = EXAMPLE / "evalset.jsonl"
    meta = json.loads(sidecar_path(recorded).read_text(encoding="utf-8"))
    assert meta["fingerprint"] == evalset_fingerprint(load_documents(docs), settings)
    report = meta["report"]
    rows = [json.loads(line) for line in recorded.read_text(encoding="utf-8").splitlines()]
    assert report["model"] == "smollm2" and report["provider"] == "openai"
    assert report["structured_output"] == "json_object"  # llama.cpp's server refused json_schema
    assert len(rows) == report["kept"] >= 10
    assert report["kept"] + sum(report["rejected"].values()) == report["candidates"]
    assert report["host"].startswith("http://127.0.0.1:")
    assert recorded.read_text(encoding="utf-8") == evalset_text(rows)
    for row in rows:
        assert _heuristic_reason(row["query"], settings) is None, row["query"]
        assert row["generator"]["model"] == "smollm2"
        assert (EXAMPLE.parent / "support" / "docs" / row["relevant_doc_ids"][0]).is_file()


def test_recorded_example_set_runs_as_a_benchmark() -> None:
    from pytest_embedbench import Evaluator

    ds = load_dataset(EXAMPLE / "evalset.jsonl", docs=REPO / "examples" / "support" / "docs")
    assert ds.queries[0].id == "q0001"
    pytest.importorskip("bm25s")
    result = Evaluator(cache=False, latency_passes=0).evaluate("bm25", ds)
    assert result.ndcg10 >= 0.5
