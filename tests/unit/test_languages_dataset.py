"""Datasets in several languages (issue 44): merged corpora, a language per query, their
errors, and the macro average with its stratified bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import Document, Query, RetrievalDataset, load_dataset
from pytest_embedbench.core.exceptions import DatasetError
from pytest_embedbench.data.datasets import merge_languages
from pytest_embedbench.evaluation.evaluate import Evaluator
from pytest_embedbench.evaluation.stats import bootstrap, compare_scores, macro_mean


def one(language: str, texts: list[str]) -> RetrievalDataset:
    corpus = {f"d{i}": t for i, t in enumerate(texts)}
    queries = {f"q{i}": t.split()[0] for i, t in enumerate(texts)}
    return RetrievalDataset.from_dicts(
        corpus, queries, {f"q{i}": {f"d{i}": 1} for i in range(len(texts))}, name=language
    )


EN = ["alpha apples grow", "beta bananas ripen", "gamma grapes hang"]
FR = ["delta dattes mûrissent", "epsilon épinards poussent"]


def test_merged_ids_are_prefixed_and_each_language_searches_its_own_corpus() -> None:
    # the same document ids in both languages stay two documents
    ds = merge_languages({"en": one("en", EN), "fr": one("fr", FR)}, name="two")
    assert ds.languages == ("en", "fr")
    assert ds.separate_corpora
    assert {d.id for d in ds.documents} >= {"en:d0", "fr:d0"}
    fr = ds.language_part("fr")
    assert [d.id for d in fr.documents] == ["fr:d0", "fr:d1"]
    result = Evaluator(cache=False, n_resamples=500).evaluate("bm25", ds)
    assert all(doc.startswith("fr:") for q in fr.queries for doc in result.rankings[q.id])
    parts = result.by_language
    assert float(result.ndcg10) == pytest.approx(
        (float(parts["en"].ndcg10) + float(parts["fr"].ndcg10)) / 2
    )
    assert parts["fr"].ndcg10.n == 2
    with pytest.raises(DatasetError, match=r"no language 'de'; its languages are \['en', 'fr'\]"):
        ds.language_part("de")


def test_a_language_per_query_over_one_corpus(tmp_path: Path) -> None:
    """An eval set's ``language`` per line: one corpus searched by all, reported per
    language with the macro average."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in [("a.md", "alpha apples grow"), ("b.md", "beta bananas ripen")]:
        (docs / name).write_text(text)
    lines = [
        {"query": "apples", "relevant_doc_ids": ["a.md"], "language": "en"},
        {"query": "bananas", "relevant_doc_ids": ["b.md"], "language": "en"},
        {"query": "alpha", "relevant_doc_ids": ["a.md"], "language": "fr"},
    ]
    (tmp_path / "evalset.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ds = load_dataset(tmp_path)
    assert ds.languages == ("en", "fr") and not ds.separate_corpora
    result = Evaluator(cache=False, n_resamples=500).evaluate("bm25", ds)
    en, fr = result.by_language["en"], result.by_language["fr"]
    assert en.n_documents == fr.n_documents == 2
    assert float(result.mrr10) == pytest.approx((float(en.mrr10) + float(fr.mrr10)) / 2)


def test_a_bad_language_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha")
    line = {"query": "alpha", "relevant_doc_ids": ["a.md"], "language": "English"}
    (tmp_path / "evalset.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(DatasetError, match=r"evalset.jsonl line 1: 'language': language "):
        load_dataset(tmp_path)


def test_languages_all_or_none_and_judged_documents_in_the_query_language() -> None:
    docs = [Document("d1", "alpha", language="en"), Document("d2", "beta", language="fr")]
    with pytest.raises(DatasetError, match=r"query 'q2' has no language while 1 other"):
        RetrievalDataset(
            docs,
            [Query("q1", "alpha", language="en"), Query("q2", "beta")],
            {"q1": {"d1": 1}, "q2": {"d2": 1}},
        )
    with pytest.raises(DatasetError, match=r"query 'q1' \(en\) judges document 'd2' \(fr\)"):
        RetrievalDataset(
            docs,
            [Query("q1", "alpha", language="en"), Query("q2", "beta", language="fr")],
            {"q1": {"d2": 1}, "q2": {"d2": 1}},
        )
    with pytest.raises(DatasetError, match=r"languages needs two or more languages"):
        merge_languages({"en": one("en", EN)})


def test_the_macro_interval_resamples_within_each_language() -> None:
    values = np.array([1.0, 0.0, 1.0, 0.5, 0.25, 0.0, 1.0])
    strata = ["en", "en", "zh", "zh", "zh", "zh", "ja"]
    est = bootstrap(values, strata=strata, macro=True, seed=3, n_resamples=400)
    assert float(est) == pytest.approx(np.mean([0.5, 0.4375, 1.0]))
    assert float(est) == macro_mean(values, strata)
    # written out: each language in sorted order draws its own queries from one generator
    rng = np.random.default_rng(3)
    labels = np.asarray(strata)
    total = np.zeros(400)
    for language in sorted(set(strata)):
        members = np.flatnonzero(labels == language)
        total += values[members[rng.integers(0, len(members), (400, len(members)))]].mean(1)
    assert est.interval == pytest.approx(tuple(np.quantile(total / 3, [0.025, 0.975])), abs=1e-12)
    # a language of one query never varies: the interval is narrower than unstratified
    plain = bootstrap(values, seed=3, n_resamples=400)
    assert est.high - est.low < plain.high - plain.low
    # the paired comparison's difference is the macro averages' difference
    other = values[::-1].copy()
    c = compare_scores(values, other, strata=strata, test="randomization", n_resamples=400)
    assert float(c) == pytest.approx(macro_mean(values, strata) - macro_mean(other, strata))


def test_a_per_language_threshold_key_is_checked() -> None:
    from pytest_embedbench.baseline.thresholds import parse_rule
    from pytest_embedbench.core.exceptions import ConfigError

    assert parse_rule("by_language.zh.ndcg@10", ">= 0.5", "t.yaml").key == "by_language.zh.ndcg@10"
    with pytest.raises(ConfigError, match=r"t.yaml: threshold key 'by_language.Chinese.ndcg@10'"):
        parse_rule("by_language.Chinese.ndcg@10", ">= 0.5", "t.yaml")
    with pytest.raises(ConfigError, match=r"write by_language.<language>.<metric>"):
        parse_rule("by_language.zh.ndgc@10", ">= 0.5", "t.yaml")
