"""Paired comparisons of two models, and a documents folder as one language, on a dataset in
three languages through a real pytest run (issue 44): the project of
tests/plugin/test_languages_plugin.py (English, Chinese and Japanese span sets from Django's
translations, named under ``languages:``).

- ``embedbench.compare(a, b)`` and the summary's comparisons against the reference model are
  the macro averages' differences, their intervals and p-values resampled (or sign-flipped)
  within each language and Holm-adjusted over the family: each recomputed here, written out.
- A ``languages:`` entry that is a documents folder with its eval set reads as the same
  language as the BEIR folder of the same texts: the same row, query for query.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.plugin.conftest import CONFTEST, set_ini, write_dataset
from tests.plugin.test_languages_plugin import LOCALES, PER_LANGUAGE, RESAMPLES
from tests.unit.test_bm25_language import messages, span_set

pytest.importorskip("django")
pytest.importorskip("bm25s")
pytest.importorskip("jieba")
pytest.importorskip("opencc")
pytest.importorskip("sudachipy")

MODELS = """
import json
import pytest
from pytest_embedbench import ModelSpec

MODELS = [
    ModelSpec("bm25", name="plain"),
    ModelSpec("bm25", name="seg", language="auto"),
    ModelSpec("bm25", name="seg-k1", language="auto", k1=0.9),
]


@pytest.mark.embedbench(dataset="django", models=MODELS)
def test_models(retrieval):
    pass


def test_pairs(embedbench):
    plain, seg, seg_k1 = (embedbench.evaluate(m, "django") for m in MODELS)
    made = [embedbench.compare(seg, plain), embedbench.compare(seg_k1, plain)]
    with open("pairs.json", "w") as out:  # no benchmark test: not in the JSON report
        json.dump({
            "pairs": [[float(c), c.low, c.high, c.p_value, c.p_holm, c.test] for c in made],
            "scores": {r.name: dict(zip(r.query_ids, r.per_query("ndcg@10").tolist()))
                       for r in (plain, seg, seg_k1)},
            "languages": dict(zip(seg.query_ids, seg.query_languages)),
        }, out)
"""


def stratified_means(values: np.ndarray, strata: list[str], seed: int, n: int) -> np.ndarray:
    """Each resample's macro mean: per resample, each language (sorted) draws its own queries
    with replacement from one seeded generator; the mean of the languages' means."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(strata)
    languages = sorted(set(strata))
    total = np.zeros(n)
    for language in languages:
        members = np.flatnonzero(labels == language)
        idx = rng.integers(0, len(members), size=(n, len(members)))
        total += values[members[idx]].mean(axis=1)
    return total / len(languages)


def macro(values: np.ndarray, strata: list[str]) -> float:
    labels = np.asarray(strata)
    return float(np.mean([values[labels == s].mean() for s in sorted(set(strata))]))


def holm2(p: list[float]) -> list[float]:
    """Holm's adjustment of two p-values, written out."""
    first, second = sorted(range(2), key=lambda i: p[i])
    out = [0.0, 0.0]
    out[first] = min(1.0, 2 * p[first])
    out[second] = min(1.0, max(out[first], p[second]))
    return out


def project(pytester: pytest.Pytester, ja: str = "data/ja") -> None:
    for language, locale in LOCALES.items():
        texts = sorted(set(messages(locale).values()))[:PER_LANGUAGE]
        write_dataset(pytester.path / "data" / language, span_set(texts, language))
    pytester.makeconftest(CONFTEST)
    entries = {lang: f"data/{lang}" for lang in LOCALES} | {"ja": ja}
    pytester.makefile(
        ".yaml",
        embedbench="datasets:\n  django:\n    languages:\n"
        + "".join(f"      {lang}: {path}\n" for lang, path in entries.items()),
    )
    set_ini(pytester)


def test_paired_comparisons_resample_within_each_language(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makepyfile(test_models=MODELS)
    result = pytester.runpytest(
        "--embedbench-json=r.json",
        "--embedbench-reference=plain",
        f"--embedbench-bootstrap={RESAMPLES}",
    )
    result.assert_outcomes(passed=4)
    report = json.loads((pytester.path / "r.json").read_text())
    props = json.loads((pytester.path / "pairs.json").read_text())
    scores, languages = props["scores"], props["languages"]
    assert sorted(set(languages.values())) == ["en", "ja", "zh"]

    # embedbench.compare: the paired bootstrap in the results' query order
    p_values = []
    for (difference, low, high, p, _, test), name in zip(
        props["pairs"], ["seg", "seg-k1"], strict=True
    ):
        assert test == "bootstrap"
        order = list(languages)
        diff = np.array([scores[name][q] - scores["plain"][q] for q in order])
        strata = [languages[q] for q in order]
        point = macro(diff, strata)
        assert difference == pytest.approx(point, abs=1e-12)
        assert point != pytest.approx(diff.mean(), abs=1e-6)  # the languages' sizes differ
        means = stratified_means(diff, strata, seed=0, n=RESAMPLES)
        assert (low, high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)
        hits = int((np.abs(means - point) >= abs(point)).sum())
        assert p == pytest.approx((hits + 1) / (RESAMPLES + 1), abs=1e-12)
        p_values.append(p)
    assert [pair[4] for pair in props["pairs"]] == pytest.approx(holm2(p_values), abs=1e-12)

    # the summary's comparisons against the reference: the same interval, in sorted query
    # order, and Fisher's sign-flip test over each query's difference weighed as the macro
    # average weighs it; Holm over the two models of the dataset
    compared = report["comparisons"]["django"]
    assert set(compared) == {"seg", "seg-k1"}
    summary_p = []
    for name in ("seg", "seg-k1"):
        entry = compared[name]
        shared = sorted(scores[name])
        diff = np.array([scores[name][q] - scores["plain"][q] for q in shared])
        strata = [languages[q] for q in shared]
        assert entry["test"] == "randomization" and entry["reference"] == "plain"
        assert entry["difference"] == pytest.approx(macro(diff, strata), abs=1e-12)
        means = stratified_means(diff, strata, seed=0, n=RESAMPLES)
        bounds = tuple(np.quantile(means, [0.025, 0.975]))
        assert (entry["low"], entry["high"]) == pytest.approx(bounds, abs=1e-12)
        labels = np.asarray(strata)
        sizes = np.array([int((labels == s).sum()) for s in strata])
        weighted = diff * len(diff) / (3 * sizes)
        signs = np.random.default_rng(0).integers(0, 2, size=(RESAMPLES, len(diff))) * 2 - 1
        observed = abs(weighted.mean())
        hits = int(
            (np.abs((signs * weighted).mean(axis=1)) >= observed * (1 - 1e-14) - 1e-15).sum()
        )
        assert entry["p_value"] == pytest.approx((hits + 1) / (RESAMPLES + 1), abs=1e-12)
        summary_p.append(entry["p_value"])
    assert [compared[n]["p_holm"] for n in ("seg", "seg-k1")] == pytest.approx(
        holm2(summary_p), abs=1e-12
    )


TEST = """
import pytest

@pytest.mark.embedbench(dataset="django", models=["bm25"])
def test_rows(retrieval):
    pass
"""


def test_a_language_that_is_a_documents_folder_with_its_eval_set(
    pytester: pytest.Pytester,
) -> None:
    """``ja: {path: ja-docs, evalset: ja-evalset.jsonl}``: the Japanese texts as files, one
    a document, the eval set naming them; the row equals the BEIR folder's of the same texts."""
    texts = sorted(set(messages("ja").values()))[:PER_LANGUAGE]
    spans = span_set(texts, "ja")
    # an eval set may not ask one text twice (two short messages give the same part)
    first: dict[str, str] = {}
    for q in spans.queries:
        first.setdefault(q.text, q.id)
    kept = set(first.values())
    ds = type(spans)(
        spans.documents,
        [q for q in spans.queries if q.id in kept],
        {q: judged for q, judged in spans.qrels.items() if q in kept},
        name="ja",
    )
    docs = pytester.path / "ja-docs"
    docs.mkdir()
    for d in ds.documents:
        (docs / f"{d.id}.txt").write_text(d.text + "\n", encoding="utf-8")
    lines = [
        {
            "query_id": q.id,
            "query": q.text,
            "relevant_doc_ids": [f"{d}.txt" for d in ds.qrels[q.id]],
        }
        for q in ds.queries
    ]
    (pytester.path / "ja-evalset.jsonl").write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
    )
    project(pytester)  # the BEIR folders first: the reference run
    write_dataset(pytester.path / "data" / "ja", ds)
    pytester.makepyfile(test_rows=TEST)
    pytester.runpytest("--embedbench-json=beir.json").assert_outcomes(passed=1)
    project(pytester, ja="{path: ja-docs, evalset: ja-evalset.jsonl}")
    write_dataset(pytester.path / "data" / "ja", ds)
    result = pytester.runpytest("--embedbench-json=docs.json")
    result.assert_outcomes(passed=1)
    runs = {}
    for name in ("beir", "docs"):
        (test,) = json.loads((pytester.path / f"{name}.json").read_text())["tests"]
        runs[name] = test["result"]
    data = runs["docs"]
    assert len(ds.queries) < len(spans.queries)  # a repeat was there
    assert sorted(data["languages"]) == ["en", "ja", "zh"]
    ja = data["languages"]["ja"]
    assert ja["documents"] == PER_LANGUAGE and ja["queries"] == len(ds.queries)
    # ids carry the language; a document's is its file name
    assert all(
        doc.startswith("ja:") and doc.endswith(".txt")
        for qid, top in data["retrieved"].items()
        if qid.startswith("ja:")
        for doc in top
    )
    # the same texts as the BEIR folder's: the same scores, query for query, and macro
    beir = runs["beir"]
    assert data["per_query"]["ndcg@10"] == pytest.approx(beir["per_query"]["ndcg@10"], abs=1e-12)
    assert ja["metrics"]["ndcg@10"] == beir["languages"]["ja"]["metrics"]["ndcg@10"]
    assert data["metrics"]["ndcg@10"]["value"] == beir["metrics"]["ndcg@10"]["value"]
