"""Scoring by document on chunked datasets: max-pooling, the deeper search, the tie rule,
parity with pytrec_eval on the pooled run, and the embedding cache reusing unchanged chunks.

The chunker here is a stand-in (one chunk per blank-line paragraph, the offsets exact), so
these tests check the scoring whatever chunking.py's strategies do; the plugin tests run the
real chunker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

import tests.helpers  # noqa: F401 - registers the "hashing" provider
from pytest_embedbench import Evaluator
from pytest_embedbench.core.exceptions import ConfigError, DatasetError
from pytest_embedbench.data import chunking as chunking_module
from pytest_embedbench.data.chunking import Chunk, ChunkingSettings
from pytest_embedbench.data.datasets import Document, Query, RetrievalDataset
from pytest_embedbench.models.providers import Retriever
from pytest_embedbench.retrieval.pooling import PooledRetriever, first_depth, pool, settled

pytrec_eval = pytest.importorskip("pytrec_eval")


def paragraph_chunks(documents: Iterable[Document], **settings: Any) -> list[Chunk]:
    """One chunk per paragraph (blank-line separated) of at least ``min_chunk_chars``."""
    out = []
    for doc in documents:
        n = 0
        for match in re.finditer(r"[^\n]+(?:\n[^\n]+)*", doc.text):
            if len(match.group()) < settings.get("min_chunk_chars", 0):
                continue
            out.append(Chunk(doc.id, f"{doc.id}#{n}", match.group(), match.start(), match.end()))
            n += 1
    return out


@pytest.fixture
def paragraphs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunking_module, "chunk_documents", paragraph_chunks)


class ListRetriever(Retriever):
    """Chunks with fixed scores, ranked score desc then chunk id desc (the index's rule);
    records the depth of every call."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.ranked = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        self.ids = tuple(scores)
        self.calls: list[int] = []

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        self.calls.append(k)
        top = self.ranked[:k]
        return [c for c, _ in top], [s for _, s in top]


def chunks_of(scores: dict[str, float]) -> list[Chunk]:
    return [Chunk(cid.split("#")[0], cid, "x", 0, 1) for cid in scores]


# -- pooling ---------------------------------------------------------------------------------


def test_pool_takes_each_documents_best_chunk() -> None:
    doc_of = {"a#0": "a", "a#1": "a", "b#0": "b", "c#0": "c"}
    ids, scores, won = pool(["a#1", "b#0", "a#0", "c#0"], [0.9, 0.8, 0.7, 0.1], doc_of, 2)
    assert (ids, scores, won) == (["a", "b"], [0.9, 0.8], ["a#1", "b#0"])


def test_pool_breaks_document_ties_by_id_descending_and_keeps_the_first_tied_chunk() -> None:
    doc_of = {"a#0": "a", "a#1": "a", "b#0": "b"}
    ids, scores, won = pool(["a#1", "a#0", "b#0"], [0.5, 0.5, 0.5], doc_of, 3)
    assert ids == ["b", "a"] and scores == [0.5, 0.5]
    assert won == ["b#0", "a#1"]  # of a's tied chunks, the one ranked first


def test_settled_needs_k_documents_and_a_strictly_lower_last_chunk() -> None:
    assert settled([0.9, 0.5], [0.9, 0.5], 2) is False  # a left-out chunk could tie 0.5
    assert settled([0.9, 0.5, 0.4], [0.9, 0.5], 2) is True
    assert settled([0.9, 0.8], [0.9], 2) is False


def test_search_goes_deeper_until_k_distinct_documents() -> None:
    # document a owns the six best chunks: ten chunks deep finds only two documents
    scores = {f"a#{i}": 1.0 - i / 100 for i in range(6)}
    scores.update({"b#0": 0.5, "c#0": 0.4, "d#0": 0.3, "e#0": 0.2})
    inner = ListRetriever(scores)
    pooled = PooledRetriever(inner, chunks_of(scores))
    assert first_depth(3, 10, 5) == 6
    ids, values, won = pooled.search_pooled("q", 3)
    assert ids == ["a", "b", "c"] and values == [1.0, 0.5, 0.4]
    assert won == ["a#0", "b#0", "c#0"]
    assert inner.calls == [6, 10]  # doubled, capped at the corpus
    assert pooled.depths == [10]


@pytest.mark.parametrize("model", ["hashing:h", "bm25", "hybrid:hashing:h+bm25"])
def test_a_deeper_search_embeds_the_query_once(model: str) -> None:
    from pytest_embedbench.models.providers import create_provider

    # document a's six chunks all match the query: two documents need a deeper search
    chunks = [Chunk("a", f"a#{i}", f"alpha alpha note {i}", 0, 1) for i in range(6)]
    chunks += [Chunk(f"d{i}", f"d{i}#0", f"alpha other text {i}", 0, 1) for i in range(10)]
    provider = create_provider(model)
    provider.ensure_loaded()
    inner = provider.build([Document(c.id, c.text) for c in chunks])
    calls: list[int] = []
    search_encoded = inner.search_encoded

    def counted(query: Any, k: int) -> tuple[list[str], list[float]]:
        calls.append(k)
        return search_encoded(query, k)

    inner.search_encoded = counted  # type: ignore[method-assign]
    dense = next(
        (p for p in [provider, *getattr(provider, "legs", [])] if hasattr(p, "seen")), None
    )
    seen_before = len(dense.seen) if dense is not None else 0
    ids, _, _ = PooledRetriever(inner, chunks).search_pooled("alpha alpha", 2)
    assert ids[0] == "a" and len(ids) == 2
    assert len(calls) >= 2  # it went deeper ...
    if dense is not None:  # ... and embedded the query once
        assert dense.seen[seen_before:] == ["alpha alpha"]


def test_a_tie_at_the_cut_searches_deeper_so_document_ids_decide() -> None:
    # chunk ids tie-break 'a#1' > 'a#0' > 'a!#0', documents 'a!' > 'a': a search that
    # stopped at two chunks would rank 'a' first
    scores = {"a#0": 0.5, "a#1": 0.5, "a!#0": 0.5}
    inner = ListRetriever(scores)
    ids, values, won = PooledRetriever(inner, chunks_of(scores)).search_pooled("q", 1)
    assert inner.calls == [2, 3]
    assert (ids, values, won) == (["a!"], [0.5], ["a!#0"])


def test_a_corpus_with_fewer_documents_than_k_returns_them_all() -> None:
    scores = {"a#0": 0.9, "a#1": 0.8, "b#0": 0.1}
    ids, _, _ = PooledRetriever(ListRetriever(scores), chunks_of(scores)).search_pooled("q", 10)
    assert ids == ["a", "b"]


# -- through the Evaluator --------------------------------------------------------------------

PARAGRAPHS = [
    "Reset your password from the login page.",
    "Invoices are emailed every month as PDF files.",
    "Export workspace data as CSV from the settings page.",
    "Change the card used for billing payments.",
    "The mobile app syncs pages for offline reading.",
    "The API allows six hundred requests per minute.",
    "Contact support from the help menu.",  # repeated in several documents: tied chunks
]


def chunked_dataset(n_docs: int = 14, *, seed: int = 0) -> RetrievalDataset:
    import numpy as np

    rng = np.random.default_rng(seed)
    documents = []
    for i in range(n_docs):
        picked = rng.choice(len(PARAGRAPHS), size=int(rng.integers(1, 5)), replace=False)
        text = "\n\n".join(f"{PARAGRAPHS[p]} Section {i}." for p in picked)
        if i % 3 == 0:
            text += "\n\n" + PARAGRAPHS[-1]  # identical text: identical scores
        documents.append(Document(f"doc-{i:02d}" if i % 2 else f"d{i}", text))
    queries = [
        Query("q1", "reset password login"),
        Query("q2", "export csv settings"),
        Query("q3", "contact support help"),
        Query("q4", "api requests per minute"),
        Query("q5", "monthly invoices pdf"),
    ]
    ids = [d.id for d in documents]
    qrels = {
        q.id: {ids[(3 * j) % n_docs]: 2, ids[(3 * j + 5) % n_docs]: 1}
        for j, q in enumerate(queries)
    }
    return RetrievalDataset(
        documents, queries, qrels, name="chunked", chunking=ChunkingSettings(min_chunk_chars=10)
    )


def full_pooled_run(result: Any, ds: RetrievalDataset, provider: Any) -> dict:
    """Every document's max chunk score for every query, searched over all chunks at once."""
    inner = provider.build([Document(c.id, c.text) for c in result.chunks.values()])
    run = {}
    for query in ds.queries:
        ids, scores = inner.search(query.text, len(result.chunks))
        best: dict[str, float] = {}
        for cid, score in zip(ids, scores, strict=True):
            did = result.chunks[cid].doc_id
            best[did] = max(best.get(did, -1e9), score)
        run[query.id] = best
    return run


def test_metrics_equal_pytrec_eval_on_the_pooled_run(paragraphs: None, tmp_path: Path) -> None:
    for seed in range(4):
        ds = chunked_dataset(seed=seed)
        ev = Evaluator(cache=tmp_path / "cache", k=(1, 3, 5, 10), n_resamples=200)
        result = ev.evaluate("hashing:h", ds)
        assert len(result.chunks) > len(ds.documents)  # really chunked
        assert all(len(set(r)) == len(r) for r in result.rankings.values())
        run = full_pooled_run(result, ds, ev.provider("hashing:h"))
        trec = pytrec_eval.RelevanceEvaluator(
            result.qrels, {"ndcg_cut.1,3,5,10", "recall.1,3,5,10", "P.1,3,5,10"}
        ).evaluate(run)
        for k in (1, 3, 5, 10):
            for ours, theirs in (("ndcg", "ndcg_cut"), ("recall", "recall"), ("precision", "P")):
                got = dict(zip(result.query_ids, result.per_query(f"{ours}@{k}"), strict=True))
                for qid in result.query_ids:
                    assert got[qid] == trec[qid][f"{theirs}_{k}"], (seed, ours, k, qid)


def test_the_ranking_is_the_brute_force_max_pool(paragraphs: None) -> None:
    ds = chunked_dataset(seed=7)
    ev = Evaluator(cache=False, k=(5,), n_resamples=200)
    result = ev.evaluate("hashing:h", ds)
    run = full_pooled_run(result, ds, ev.provider("hashing:h"))
    for qid, ids in result.rankings.items():
        expected = sorted(run[qid].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:5]
        assert list(zip(ids, result.scores[qid], strict=True)) == expected
        # each winning chunk belongs to its document and scores what the document scores
        for did, cid in zip(ids, result.winning_chunks[qid], strict=True):
            assert result.chunks[cid].doc_id == did


def test_result_keeps_the_winning_chunk_of_each_document(paragraphs: None) -> None:
    ds = chunked_dataset()
    result = Evaluator(cache=False, k=(1, 3), n_resamples=200).evaluate("bm25", ds)
    detail = result.to_dict(per_query=True)
    assert detail["documents"] == len(ds.documents)
    assert detail["chunking"]["chunks"] == len(result.chunks)
    assert detail["chunking"]["strategy"] == "recursive"
    rows = detail["winning_chunks"]["q1"]
    assert len(rows) == 3
    for row in rows:
        chunk = result.chunks[row["chunk_id"]]
        text = ds.document(row["doc_id"]).text
        assert text[row["start"] : row["end"]] == chunk.text
    assert "winning_chunks" not in result.to_dict()  # per-query detail only


def test_an_untimed_chunked_run_keeps_rankings_and_winning_chunks(paragraphs: None) -> None:
    ds = chunked_dataset()
    timed = Evaluator(cache=False, k=(1, 3), n_resamples=200).evaluate("hashing:h", ds)
    untimed = Evaluator(cache=False, k=(1, 3), n_resamples=200, latency_passes=0).evaluate(
        "hashing:h", ds
    )
    assert untimed.rankings == timed.rankings and untimed.scores == timed.scores
    assert untimed.winning_chunks == timed.winning_chunks and untimed.latency.n == 0
    # the timed run times its sample (every query of so small a set) after the scored pass
    assert timed.latency.query_ids == tuple(q.id for q in ds.queries)
    assert timed.latency.n == timed.latency.queries == len(ds.queries)


def test_bm25_and_hybrid_score_documents_on_a_chunked_dataset(paragraphs: None) -> None:
    ds = chunked_dataset()
    ev = Evaluator(cache=False, k=(1, 5), n_resamples=200)
    for model in ("bm25", "hybrid:hashing:h+bm25"):
        result = ev.evaluate(model, ds)
        doc_ids = {d.id for d in ds.documents}
        for ids in result.rankings.values():
            assert len(ids) == 5 and len(set(ids)) == 5 and set(ids) <= doc_ids
        assert result.winning_chunks is not None


def test_unchanged_chunks_come_from_the_cache(paragraphs: None, tmp_path: Path) -> None:
    ds = chunked_dataset()
    first = Evaluator(cache=tmp_path / "cache", n_resamples=200).evaluate("hashing:h", ds)
    n_chunks = len(first.chunks)
    assert first.cache.misses == n_chunks
    # one paragraph of one document changes: only that chunk is embedded again
    docs = list(ds.documents)
    changed = docs[4]
    docs[4] = Document(changed.id, changed.text.replace("Section 4.", "Section four."))
    assert docs[4].text.count("Section four.") == changed.text.count("Section 4.") >= 1
    edited = RetrievalDataset(docs, ds.queries, ds.qrels, chunking=ds.chunking)
    second = Evaluator(cache=tmp_path / "cache", n_resamples=200).evaluate("hashing:h", edited)
    assert second.cache.misses == changed.text.count("Section 4.")
    assert second.cache.hits == n_chunks - second.cache.misses
    assert second.dataset_fingerprint != first.dataset_fingerprint


def test_chunking_settings_are_part_of_the_fingerprint() -> None:
    ds = chunked_dataset()
    other = ds.with_chunking(ChunkingSettings(size=256, min_chunk_chars=10))
    whole = ds.with_chunking(None)
    assert len({ds.fingerprint, other.fingerprint, whole.fingerprint}) == 3
    assert ds.chunking == ChunkingSettings(min_chunk_chars=10)  # left as it was


def test_a_judged_document_without_chunks_names_the_evalset_line(
    paragraphs: None, tmp_path: Path
) -> None:
    ds = chunked_dataset()
    docs = list(ds.documents)
    short = docs[0]
    docs[0] = Document(short.id, "Too short.")
    origins = {
        (qid, did): f"evalset.jsonl line {i + 1}"
        for i, (qid, judged) in enumerate(ds.qrels.items())
        for did in judged
    }
    bad = RetrievalDataset(
        docs,
        ds.queries,
        ds.qrels,
        name="chunked",
        chunking=ChunkingSettings(min_chunk_chars=30),
        qrels_origins=origins,
    )
    loaded: list[str] = []
    ev = Evaluator(cache=False, n_resamples=200)
    ev.provider = lambda spec: loaded.append(spec) or None  # type: ignore[method-assign]
    with pytest.raises(DatasetError) as info:
        ev.evaluate("hashing:h", bad)
    assert not loaded  # checked before any model loads
    lines = [origins[(q, d)] for q, judged in ds.qrels.items() for d in judged if d == short.id]
    message = str(info.value)
    for line in lines:
        assert (
            f"{line}: document {short.id!r} yields no chunk (its text is 10 characters, "
            "chunking min_chunk_chars is 30)" in message
        )


def test_tokens_without_a_tokenizer_on_a_model_without_one_says_how_to_name_one(
    paragraphs: None,
) -> None:
    ds = chunked_dataset().with_chunking(ChunkingSettings(unit="tokens", size=64, overlap=8))
    with pytest.raises(ConfigError, match="chunking unit 'tokens' needs a tokenizer"):
        Evaluator(cache=False, n_resamples=200).evaluate("bm25", ds)


def test_a_tokenizer_file_counts_by_content_not_path(tmp_path: Path) -> None:
    ds = chunked_dataset()
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "tokenizer.json").write_text('{"model": "x"}')
    (tmp_path / "c" / "tokenizer.json").write_text('{"model": "y"}')

    def with_file(folder: str) -> str:
        path = str(tmp_path / folder / "tokenizer.json")
        return ds.with_chunking(ChunkingSettings(unit="tokens", tokenizer=path)).fingerprint

    assert with_file("a") == with_file("b")  # a moved project keeps its fingerprint
    assert with_file("a") != with_file("c")  # an edited tokenizer is another dataset
