"""The evaluator end to end: metrics equal score_run, the cache, timings, failures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import (
    Document,
    EmbeddingCache,
    Estimate,
    Evaluator,
    MetricError,
    ModelSpec,
    ProviderError,
    Query,
    RetrievalDataset,
    RetrievalResult,
    evaluate,
    load_dataset,
    score_run,
)
from pytest_embedbench.models.providers import register_provider
from pytest_embedbench.retrieval.dense import QUERY_NAMESPACE_SUFFIX

from ..helpers import HashingProvider


def test_result_metrics_equal_score_run_on_the_same_run(beir_folder: Path, tmp_path: Path) -> None:
    result = evaluate("hashing:h", beir_folder, cache=tmp_path / "cache", k=(1, 3, 10))
    assert isinstance(result, RetrievalResult)
    assert result.query_ids == ("q1", "q2")
    expected = score_run(result.qrels, result.run, ["ndcg@3", "mrr@10", "recall@1", "map@10"])
    for name, per_query in expected.items():
        np.testing.assert_allclose(result.per_query(name), list(per_query.values()), atol=1e-12)
    assert isinstance(result.ndcg10, Estimate)
    assert result.ndcg10.n == 2 and result.ndcg10.low <= result.ndcg10 <= result.ndcg10.high
    assert result.metric("ndcg@10") is result.ndcg10  # memoised
    assert set(result.metrics()) >= {"ndcg@1", "recall@10", "hit@3", "precision@10"}
    with pytest.raises(MetricError, match=r"retrieved only the top 10.*k including 100"):
        result.recall(100)


def test_query_metadata_is_never_shown(beir_folder: Path) -> None:
    ev = Evaluator(cache=False)
    ev.evaluate("hashing:h", beir_folder)
    seen = ev.provider("hashing:h").seen  # type: ignore[attr-defined]
    assert "how to reset password" in seen
    assert not any("answer" in text or "metadata" in text for text in seen)


def test_second_run_embeds_no_document_and_no_scored_query(
    beir_folder: Path, tmp_path: Path
) -> None:
    cold = evaluate("hashing:h", beir_folder, cache=tmp_path)
    assert (cold.cache.hits, cold.cache.misses) == (0, 4)
    assert (cold.query_cache.hits, cold.query_cache.misses) == (0, 2)
    ev = Evaluator(cache=tmp_path)
    warm = ev.evaluate("hashing:h", beir_folder)
    assert (warm.cache.hits, warm.cache.misses) == (4, 0)
    assert warm.cache.hit_rate == 1.0
    assert (warm.query_cache.hits, warm.query_cache.misses) == (2, 0)
    assert warm.to_dict()["query_cache"] == {"hits": 2, "misses": 0, "hit_rate": 1.0}
    # only the latency sample reached the model, never the cache: the untimed warm-up and the
    # two sampled queries once per timed pass
    seen = ev.provider("hashing:h").seen  # type: ignore[attr-defined]
    assert len(seen) == 1 + 2 * ev.latency_passes
    assert set(seen) == {"how to reset password", "download my data as csv"}
    assert warm.latency.n == 2
    assert warm.run == cold.run and warm.scores == cold.scores
    # another namespace (a prefix changes vectors) misses
    other = evaluate(ModelSpec("hashing:h", document_prefix="doc: "), beir_folder, cache=tmp_path)
    assert other.cache.misses == 4 and other.query_cache.misses == 2


def test_a_rerun_without_latency_embeds_nothing(beir_folder: Path, tmp_path: Path) -> None:
    evaluate("hashing:h", beir_folder, cache=tmp_path)
    ev = Evaluator(cache=tmp_path, latency_passes=0)
    warm = ev.evaluate("hashing:h", beir_folder)
    assert ev.provider("hashing:h").seen == []  # type: ignore[attr-defined]
    assert (warm.cache.misses, warm.query_cache.misses) == (0, 0)


def test_only_changed_query_texts_are_embedded(beir_folder: Path, tmp_path: Path) -> None:
    evaluate("hashing:h", beir_folder, cache=tmp_path, latency_passes=0)
    ds = load_dataset(beir_folder)
    queries = [ds.queries[0], Query(ds.queries[1].id, "export csv data")]
    edited = RetrievalDataset(ds.documents, queries, ds.qrels, name=ds.name)
    ev = Evaluator(cache=tmp_path, latency_passes=0)
    warm = ev.evaluate("hashing:h", edited)
    assert ev.provider("hashing:h").seen == ["export csv data"]  # type: ignore[attr-defined]
    assert (warm.query_cache.hits, warm.query_cache.misses) == (1, 1)
    # a query prefix is part of the text sent: every query misses, no document does
    prefixed = evaluate(ModelSpec("hashing:h", query_prefix="query: "), beir_folder, cache=tmp_path)
    assert (prefixed.query_cache.misses, prefixed.cache.misses) == (2, 4)


class KindHashing(HashingProvider):
    """Embeds one text differently as a query and as a document (like an API's input type,
    with no prefix), so a cache that let the two kinds share an entry would change scores."""

    name = "kind-hashing"

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        out = super().embed_batch(texts, kind=kind)
        if kind == "query":
            out[:, 0] += 5.0
        return out


register_provider(KindHashing)


def test_query_and_document_vectors_of_one_text_never_share_an_entry(
    beir_folder: Path, tmp_path: Path
) -> None:
    ds = load_dataset(beir_folder)
    # each query's text is also a document's: the same cache key within a namespace
    documents = [*ds.documents, *(Document(f"t{q.id}", q.text) for q in ds.queries)]
    twins = RetrievalDataset(documents, ds.queries, ds.qrels, name=ds.name)
    fresh = evaluate("kind-hashing:h", twins, cache=False, latency_passes=0)
    evaluate("kind-hashing:h", twins, cache=tmp_path, latency_passes=0)
    warm = evaluate("kind-hashing:h", twins, cache=tmp_path, latency_passes=0)
    assert (warm.cache.misses, warm.query_cache.misses) == (0, 0)
    assert warm.scores == fresh.scores and warm.run == fresh.run
    cache = EmbeddingCache.open(tmp_path)
    assert cache is not None
    namespace = Evaluator(cache=False).provider("kind-hashing:h").namespace_key()
    assert cache.count(namespace) == len(twins.documents)
    assert cache.count(namespace + QUERY_NAMESPACE_SUFFIX) == len(twins.queries)


def test_timings_latency_and_memory(beir_folder: Path) -> None:
    result = evaluate("hashing:h", beir_folder, cache=False)
    lat = result.latency
    assert lat.n == 2 and 0 < lat.p50_ms <= lat.p95_ms <= lat.p99_ms <= lat.max_ms
    assert lat.qps > 0
    t = result.timings
    assert t.total_s >= t.document_embedding_s + t.query_embedding_s + t.search_s
    assert t.encode_s > 0 and result.documents_per_s > 0
    assert result.peak_rss_mb > 10
    summary = result.to_dict(per_query=True)
    assert summary["metrics"]["ndcg@10"]["value"] == float(result.ndcg10)
    assert set(summary["per_query"]["ndcg@10"]) == {"q1", "q2"}


def test_bm25_and_hybrid_on_a_folder(beir_folder: Path) -> None:
    pytest.importorskip("bm25s")
    ev = Evaluator(cache=False)
    bm25 = ev.evaluate("bm25", beir_folder)
    assert bm25.rankings["q1"][0] == "d1" and bm25.rankings["q2"][0] == "d3"
    hybrid = ev.evaluate(ModelSpec("hybrid:hashing:h+bm25", rrf_k=60), beir_folder)
    assert hybrid.name == "hybrid-h+bm25"
    assert float(hybrid.mrr10) == pytest.approx(1.0)
    assert bm25.compare(hybrid, "ndcg@10") == pytest.approx(float(bm25.ndcg10 - hybrid.ndcg10))


def test_a_failing_model_raises_provider_error(beir_folder: Path) -> None:
    with pytest.raises(ProviderError, match="non-finite"):
        evaluate(ModelSpec("hashing:h", poison="nan"), beir_folder, cache=False)


def test_bad_k(beir_folder: Path) -> None:
    with pytest.raises(Exception, match="cut-offs must be integers >= 1"):
        evaluate("hashing:h", beir_folder, k=(0, 10), cache=False)


@pytest.fixture(scope="module")
def scifact_subset(scifact_path: Path):
    return load_dataset(scifact_path).subset(n_queries=40, n_distractors=400, seed=0)


@pytest.mark.slow
def test_minilm_on_scifact_subset_equals_pytrec_eval(scifact_subset, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    result = evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", scifact_subset, cache=tmp_path)
    measures = {"ndcg_cut.10", "recall.100", "P.5", "success.1"}
    trec = pytrec_eval.RelevanceEvaluator(result.qrels, measures).evaluate(result.run)
    for ours, theirs in [
        ("ndcg@10", "ndcg_cut_10"),
        ("recall@100", "recall_100"),
        ("precision@5", "P_5"),
        ("hit@1", "success_1"),
    ]:
        expected = [trec.get(q, {}).get(theirs, 0.0) for q in result.query_ids]
        np.testing.assert_allclose(result.per_query(ours), expected, atol=1e-12, err_msg=ours)
    # a real model on real data: far better than chance on 440 documents
    assert result.ndcg10 > 0.5


@pytest.mark.slow  # real SciFact data: the full suite
def test_bm25_on_scifact_matches_bm25s_itself(scifact_path: Path) -> None:
    bm25s = pytest.importorskip("bm25s")
    stemmer_mod = pytest.importorskip("Stemmer")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ds = load_dataset(scifact_path)
    ours = evaluate("bm25", ds, cache=False)
    # bm25s's own pipeline, same settings: lucene, k1=1.5, b=0.75, English stopwords + stemmer
    stemmer = stemmer_mod.Stemmer("english")
    tokens = bm25s.tokenize(
        [d.embed_text for d in ds.documents], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(tokens, show_progress=False)
    queries = bm25s.tokenize(
        [q.text for q in ds.queries], stopwords="en", stemmer=stemmer, show_progress=False
    )
    docs, scores = retriever.retrieve(queries, k=100, show_progress=False)
    run = {
        q.id: {ds.documents[j].id: float(s) for j, s in zip(docs[i], scores[i], strict=True)}
        for i, q in enumerate(ds.queries)
    }
    trec = pytrec_eval.RelevanceEvaluator(ours.qrels, {"ndcg_cut.10"}).evaluate(run)
    theirs = float(np.mean([trec[q]["ndcg_cut_10"] for q in ours.query_ids]))
    assert abs(float(ours.ndcg10) - theirs) <= 0.01
    assert float(ours.ndcg10) == pytest.approx(0.686, abs=0.005)


@pytest.mark.slow
def test_minilm_on_full_scifact_reproduces_mteb(scifact_path: Path, scifact_cache: Path) -> None:
    pytest.importorskip("sentence_transformers")
    result = evaluate(
        "hf:sentence-transformers/all-MiniLM-L6-v2", scifact_path, cache=scifact_cache
    )
    assert len(result.query_ids) == 300 and result.n_documents == 5183
    assert abs(float(result.ndcg10) - 0.64508) <= 0.002, result.ndcg10


def test_evaluate_reranked_checks_its_spec_and_depth() -> None:
    """The library call names the fix for what the session never hands it: ``none`` (the first
    stage alone), a depth deeper than the first stage retrieved, cut-offs past the depth; a
    reranked result is paired with the first stage it was given."""
    from pytest_embedbench.core.exceptions import ConfigError
    from pytest_embedbench.evaluation.reranked import evaluate_reranked
    from pytest_embedbench.retrieval.rerank import parse_rerankers

    ds = RetrievalDataset.from_dicts(
        {f"d{i}": f"document {i} about topic {i % 3}" for i in range(12)},
        {"q1": "topic 1", "q2": "topic 2"},
        {"q1": {"d1": 1}, "q2": {"d2": 1}},
    )
    ev = Evaluator(cache=False, seed=0, n_resamples=200)
    stage1 = ev.evaluate("bm25", ds, k=(1, 10))
    none, deep = parse_rerankers(["none", "hashing:h@20"], "here")
    with pytest.raises(ConfigError, match="'none' is the first stage alone: nothing to rerank"):
        evaluate_reranked(ev, stage1, ds, none, k=(1, 10))
    with pytest.raises(ConfigError, match="reranks the top 20, but the first stage retrieved 10"):
        evaluate_reranked(ev, stage1, ds, deep, k=(1, 10))
    (shallow,) = parse_rerankers(["hashing:h@5"], "here")
    with pytest.raises(ConfigError, match=r"give a depth >= 10 \('hashing:h@10'\)"):
        evaluate_reranked(ev, stage1, ds, shallow, k=(1, 10))
    (spec,) = parse_rerankers(["hashing:h@10"], "here")
    reranked = evaluate_reranked(ev, stage1, ds, spec, k=(1, 10))
    assert reranked.stage1 is stage1 and reranked.rerank is not None
    assert reranked.rerank.depth == 10
    paired = reranked.per_query("ndcg@10") - stage1.per_query("ndcg@10")
    assert float(reranked.lift("ndcg@10")) == pytest.approx(float(paired.mean()), abs=1e-12)
