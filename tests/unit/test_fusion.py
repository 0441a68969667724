"""The convex fusion of ``hybrid:`` (min-max and z-score) and the tuning of its weight on
queries the run does not score, checked against ranx's fusion and pytrec_eval."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from ranx import Run, fuse

from pytest_embedbench import Evaluator, ModelSpec, create_provider
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.core.types import Document, Query
from pytest_embedbench.data.datasets import RetrievalDataset
from pytest_embedbench.retrieval.fusion import TuneSettings, convex_fusion, normalise_scores
from tests.helpers import HashingProvider  # noqa: F401  (registers "hashing")

WORDS = [f"{a}{b}" for a in ("zor", "mip", "tal", "ven", "qua") for b in "abcdefgh"]


def _toy(n_docs: int = 120, n_queries: int = 60, seed: int = 0) -> RetrievalDataset:
    """Documents of random words; each query asks for two words of its relevant documents,
    so bm25 finds them and a 16-wide hashing embedding (colliding words) half finds them."""
    rng = random.Random(seed)
    docs = [
        Document(f"d{i:03d}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 30))))
        for i in range(n_docs)
    ]
    queries, qrels = [], {}
    for q in range(n_queries):
        target = docs[rng.randrange(n_docs)]
        words = target.text.split()
        queries.append(Query(f"q{q:02d}", f"{rng.choice(words)} {rng.choice(WORDS)}"))
        other = docs[rng.randrange(n_docs)].id
        qrels[f"q{q:02d}"] = {target.id: 2, other: 1} if other != target.id else {target.id: 2}
    return RetrievalDataset(docs, queries, qrels, name="toy")


HYBRID = "hybrid:hashing:h+bm25"


def _evaluator() -> Evaluator:
    return Evaluator(cache=False, latency_passes=0, seed=0)


def _leg_runs(ds: RetrievalDataset) -> tuple[dict, dict]:
    """Each leg's own top 100 per query (the depth the hybrid fuses), as ranx/trec runs."""
    ev = _evaluator()
    runs = []
    for spec in (ModelSpec("hashing:h", dim=16), ModelSpec("bm25")):
        result = ev.evaluate(spec, ds, k=100)
        runs.append(
            {
                q: dict(zip(result.rankings[q], map(float, result.scores[q]), strict=True))
                for q in result.query_ids
            }
        )
    return runs[0], runs[1]


def _ndcg10(qrels: dict, run: dict) -> dict[str, float]:
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    return {q: v["ndcg_cut_10"] for q, v in ev.evaluate(run).items()}


def _minmax(scores: dict[str, float]) -> dict[str, float]:
    low, high = min(scores.values()), max(scores.values())
    return {d: (s - low) / (high - low) if high > low else 1.0 for d, s in scores.items()}


def _fused(left: dict, right: dict, w: float, queries) -> dict:
    """The paper's ``w * minmax(left) + (1 - w) * minmax(right)``, a document missing from
    a leg counting 0 there (as ranx's wsum, checked against ranx below), its top 100."""
    out = {}
    for q in queries:
        a, b = _minmax(left[q]), _minmax(right[q])
        scores = {d: w * a.get(d, 0.0) + (1 - w) * b.get(d, 0.0) for d in {*a, *b}}
        top = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:100]
        out[q] = dict(top)
    return out


#: the convex weights the tuning tries: 0.0, 0.1, ..., 1.0
GRID = [round(i / 10, 1) for i in range(11)]


def _grid_scores(left: dict, right: dict, qrels: dict, tuning: list[str]) -> list[float]:
    """The oracle of a tuning: for each weight of :data:`GRID`, the two legs' runs fused with
    it and scored by pytrec_eval, the mean nDCG@10 over the ``tuning`` queries."""
    scores = []
    for w in GRID:
        per_query = _ndcg10({q: qrels[q] for q in tuning}, _fused(left, right, w, tuning))
        scores.append(float(np.mean([per_query[q] for q in tuning])))
    return scores


@pytest.mark.slow  # ranx compiles its fusion with numba on first use (half a minute)
def test_minmax_convex_fusion_equals_ranx_wsum() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        ids_a = [f"d{i}" for i in rng.choice(40, size=15, replace=False)]
        ids_b = [f"d{i}" for i in rng.choice(40, size=15, replace=False)]
        sa, sb = sorted(rng.normal(size=15), reverse=True), sorted(rng.random(15) * 9, reverse=True)
        w = float(rng.random())
        ids, scores = convex_fusion([(ids_a, sa), (ids_b, sb)], weights=(w, 1 - w), norm="minmax")
        want = fuse(
            [
                Run({"q": dict(zip(ids_a, sa, strict=True))}),
                Run({"q": dict(zip(ids_b, sb, strict=True))}),
            ],
            norm="min-max",
            method="wsum",
            params={"weights": [w, 1 - w]},
        ).to_dict()["q"]
        assert set(ids) == set(want)
        assert scores == pytest.approx([want[d] for d in ids], abs=1e-12)
        # best first, ties by document id descending
        assert [
            (-s, tuple(-ord(c) for c in d)) for d, s in zip(ids, scores, strict=True)
        ] == sorted((-s, tuple(-ord(c) for c in d)) for d, s in zip(ids, scores, strict=True))


def test_zscore_fusion_gives_a_missing_document_the_legs_lowest_z() -> None:
    a = (["d1", "d2", "d3"], [3.0, 2.0, 1.0])
    b = (["d2", "d4"], [10.0, 5.0])
    ids, scores = convex_fusion([a, b], weights=(0.6, 0.4), norm="zscore")
    za = (np.array(a[1]) - np.mean(a[1])) / np.std(a[1])
    zb = (np.array(b[1]) - np.mean(b[1])) / np.std(b[1])
    want = {
        "d1": 0.6 * za[0] + 0.4 * zb.min(),
        "d2": 0.6 * za[1] + 0.4 * zb[0],
        "d3": 0.6 * za[2] + 0.4 * zb.min(),
        "d4": 0.6 * za.min() + 0.4 * zb[1],
    }
    assert ids == sorted(want, key=lambda d: (want[d], d), reverse=True)
    assert scores == pytest.approx([want[d] for d in ids], abs=1e-12)


def test_constant_and_nonfinite_scores() -> None:
    values, floor = normalise_scores([2.0, 2.0], "minmax")
    assert values.tolist() == [1.0, 1.0] and floor == 0.0
    values, floor = normalise_scores([2.0, 2.0], "zscore")
    assert values.tolist() == [0.0, 0.0] and floor == 0.0
    with pytest.raises(ValueError, match="needs finite scores.*fusion: rrf"):
        convex_fusion([(["d1", "d2"], [1.0, float("nan")])], weights=(1.0,))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"fusion": "sum"}, r"hybrid fusion='sum': use rrf .* or convex"),
        ({"fusion": "convex", "norm": "l2"}, r"hybrid norm='l2': use minmax or zscore"),
        ({"norm": "zscore"}, r"only the convex fusion normalises scores; add fusion: convex"),
        ({"tune": "dev", "weights": [1, 1]}, r"give weights or tune, not both"),
        ({"tune": {"share": 0.2, "split": "dev"}}, r"exactly one of split .* or share"),
        ({"tune": {"shares": 0.2}}, r"unknown key 'shares'; known keys: split, share"),
        ({"tune": 1.5}, r"share=1.5: must be between 0 and 1"),
        ({"tune": {"share": 0.2, "grid": [0.5, 2]}}, r"grid: 2 is not a weight between 0 and 1"),
        ({"tune": {"share": 0.2, "grid": 1}}, r"grid=1: give at least 2 points"),
        ({"tune": {"share": 0.2, "seed": "x"}}, r"seed='x': give an integer"),
        ({"tune": ["dev"]}, r"tune=\['dev'\]: give a split name"),
    ],
)
def test_bad_fusion_options_name_the_option_and_the_fix(options: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        create_provider(ModelSpec("hybrid:bm25+bm25", **options))


def test_tune_settings_forms() -> None:
    assert TuneSettings.parse(None) is None and TuneSettings.parse(False) is None
    assert TuneSettings.parse("dev").split == "dev"
    assert TuneSettings.parse(0.25).share == 0.25
    assert TuneSettings.parse({"share": 0.2, "grid": 5}).grid == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert TuneSettings.parse({"share": 0.2}).grid[::5] == (0.0, 0.5, 1.0)


def test_tuned_weight_is_the_grid_best_on_the_tuning_queries_and_scored_on_the_others() -> None:
    ds = _toy()
    spec = ModelSpec(HYBRID, fusion="convex", left={"dim": 16}, tune={"share": 0.3, "seed": 7})
    result = _evaluator().evaluate(spec, ds)
    tuned = result.model_info["fusion"]["tuned"]
    held_out = set(result.query_ids)
    tuning = [q.id for q in ds.queries if q.id not in held_out]
    assert len(tuning) == tuned["tuning_queries"] == 18 and len(held_out) == 42
    assert tuned["on"] == "a seeded 0.3 share of the queries (18 of 60 queries)"
    assert tuned["seed"] == 7

    # the oracle: each leg alone, fused for every weight, scored by pytrec_eval
    left, right = _leg_runs(ds)
    qrels = {q: dict(j) for q, j in ds.qrels.items()}
    scores = _grid_scores(left, right, qrels, tuning)
    assert tuned["grid_scores"] == pytest.approx(scores, abs=1e-12)
    assert len(set(np.round(scores, 9))) > 2  # the weight matters on this set
    best = GRID[int(np.argmax(scores))]
    assert tuned["weight"] == best and result.model_info["fusion"]["weights"] == [best, 1 - best]

    # the figure is the tuned fusion on the held-out queries only
    scored = sorted(held_out)
    want = _ndcg10({q: qrels[q] for q in scored}, _fused(left, right, best, scored))
    assert float(result.ndcg10) == pytest.approx(np.mean([want[q] for q in scored]), abs=1e-9)
    assert result.ndcg10.n == 42


def test_the_same_seed_tunes_alike_and_another_seed_holds_out_other_queries() -> None:
    ds = _toy()

    def run(seed: int):
        spec = ModelSpec(
            HYBRID, fusion="convex", left={"dim": 16}, tune={"share": 0.3, "seed": seed}
        )
        return _evaluator().evaluate(spec, ds)

    a, b, c = run(1), run(1), run(2)
    assert a.query_ids == b.query_ids and a.model_info["fusion"] == b.model_info["fusion"]
    assert a.query_ids != c.query_ids


def test_rrf_weights_tune_too() -> None:
    spec = ModelSpec(HYBRID, left={"dim": 16}, tune={"share": 0.5, "grid": [0.2, 0.8]})
    result = _evaluator().evaluate(spec, _toy())
    info = result.model_info["fusion"]
    assert info["fusion"] == "rrf" and info["tuned"]["grid"] == [0.2, 0.8]
    assert info["weights"][0] in (0.2, 0.8) and len(result.query_ids) == 30


def _beir(folder: Path, ds: RetrievalDataset, splits: dict[str, list[str]]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d.id, "title": "", "text": d.text}) + "\n" for d in ds.documents)
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q.id, "text": q.text}) + "\n" for q in ds.queries)
    )
    for split, ids in splits.items():
        lines = "".join(f"{q}\t{d}\t{g}\n" for q in ids for d, g in ds.qrels[q].items())
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + lines)
    return folder


def test_tuning_on_a_dev_split_scores_every_test_query(tmp_path: Path) -> None:
    ds = _toy()
    ids = [q.id for q in ds.queries]
    # q00-q04 are judged in both splits: the scored run leaves them out
    root = _beir(tmp_path / "toy", ds, {"dev": ids[:20], "test": ids[:5] + ids[20:]})
    spec = ModelSpec(HYBRID, fusion="convex", norm="zscore", left={"dim": 16}, tune="dev")
    result = _evaluator().evaluate(spec, root)
    tuned = result.model_info["fusion"]["tuned"]
    assert tuned["on"] == "the 'dev' split (20 queries)" and tuned["seed"] is None
    assert result.query_ids == tuple(ids[20:])
    assert tuned["held_out_queries"] == 40


def test_tuning_errors_name_the_option_and_the_fix(tmp_path: Path) -> None:
    ds = _toy(n_queries=4)
    ev = _evaluator()
    with pytest.raises(ConfigError, match=r"needs a BEIR folder .* tune: \{share: 0.2\}"):
        ev.evaluate(ModelSpec(HYBRID, tune="dev"), ds)
    root = _beir(tmp_path / "toy", ds, {"test": [q.id for q in ds.queries]})
    with pytest.raises(ConfigError, match=r"qrels/dev.tsv does not exist \(splits there: test\)"):
        ev.evaluate(ModelSpec(HYBRID, tune="dev"), root)
    with pytest.raises(
        ConfigError, match=r"share=0.1 of 4 queries picks 0: .* between 0.25 and 0.75"
    ):
        ev.evaluate(ModelSpec(HYBRID, tune=0.1), ds)
    with pytest.raises(ConfigError, match=r"tune metric='ndgc@10'"):
        ev.evaluate(ModelSpec(HYBRID, tune={"share": 0.5, "metric": "ndgc@10"}), ds)
    both = _beir(
        tmp_path / "same",
        ds,
        {"test": [q.id for q in ds.queries], "dev": [q.id for q in ds.queries]},
    )
    with pytest.raises(ConfigError, match=r"its queries are every test query"):
        ev.evaluate(ModelSpec(HYBRID, tune="dev"), both)


@pytest.mark.slow
def test_tuned_convex_hybrid_on_scifact_equals_its_legs_fused_directly(
    scifact_path: Path, scifact_cache: Path
) -> None:
    """MiniLM + bm25 on SciFact (150 of its test queries, 1,500 other documents), the convex
    weight tuned on a seeded fifth of the queries: the weight is the grid's best there, and the
    figure on the other 120 equals the two legs' own top 100 fused with it and scored by
    pytrec_eval."""
    pytest.importorskip("sentence_transformers")
    from pytest_embedbench import load_dataset

    ds = load_dataset(scifact_path).subset(n_queries=150, n_distractors=1500, seed=0)
    minilm = "hf:sentence-transformers/all-MiniLM-L6-v2"
    ev = Evaluator(cache=scifact_cache, latency_passes=0, seed=0)
    spec = ModelSpec(f"hybrid:{minilm}+bm25", fusion="convex", tune={"share": 0.2})
    result = ev.evaluate(spec, ds)
    tuned = result.model_info["fusion"]["tuned"]
    assert (tuned["tuning_queries"], len(result.query_ids)) == (30, 120)
    legs = [ev.evaluate(leg, ds, k=100) for leg in (minilm, "bm25")]
    left, right = (
        {q: dict(zip(r.rankings[q], map(float, r.scores[q]), strict=True)) for q in r.query_ids}
        for r in legs
    )
    qrels = {q: dict(j) for q, j in legs[0].qrels.items()}
    tuning = [q for q in legs[0].query_ids if q not in set(result.query_ids)]
    scores = _grid_scores(left, right, qrels, tuning)
    assert tuned["grid_scores"] == pytest.approx(scores, abs=1e-12)
    best = GRID[int(np.argmax(scores))]
    assert tuned["weight"] == best
    scored = list(result.query_ids)
    want = _ndcg10({q: qrels[q] for q in scored}, _fused(left, right, best, scored))
    assert float(result.ndcg10) == pytest.approx(np.mean([want[q] for q in scored]), abs=1e-9)
