"""Stable measurements: latency over repeated passes, p95 intervals and ties in the
recommendation, the conditions of a measurement, and what each model adds to memory."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import (
    ConfigError,
    Evaluator,
    ModelSpec,
    load_dataset,
    register_provider,
)
from pytest_embedbench.baseline.thresholds import ThresholdSet, check_thresholds
from pytest_embedbench.config.options import Options
from pytest_embedbench.evaluation.measure import (
    DEFAULT_LATENCY_PASSES,
    DEFAULT_LATENCY_SAMPLE,
    MAX_TIMED_SEARCHES,
    THREAD_ENV_VARS,
    LatencyStats,
    LoadMonitor,
    latency_passes,
    latency_sample,
    quantile_interval,
    share_cores,
)
from pytest_embedbench.report.summary.recommend import recommend, speed_tiers
from pytest_embedbench.report.writers.json_report import build_report
from pytest_embedbench.report.writers.terminal import busy_notes, render_tables

from ..conftest import write_jsonl
from ..helpers import HashingProvider

# -- latency over passes --------------------------------------------------------------------


def test_per_query_latency_is_the_median_over_passes() -> None:
    seconds = [[0.001, 0.002, 0.900], [0.001, 0.700, 0.003], [0.002, 0.002, 0.003]]
    stats = LatencyStats.from_seconds(seconds)
    assert stats.passes == 3 and stats.n == 3
    np.testing.assert_allclose(stats.per_query_ms, [1.0, 2.0, 3.0])
    assert stats.max_ms == pytest.approx(3.0)  # no single slow pass reaches the figures
    single = LatencyStats.from_seconds([0.001, 0.002])
    assert single.passes == 1 and single.per_query_ms.tolist() == [1.0, 2.0]
    assert LatencyStats.from_seconds(np.empty((3, 0))).n == 0


def test_passes_are_capped_for_large_query_sets() -> None:
    assert latency_passes(3, 300) == 3
    assert latency_passes(3, MAX_TIMED_SEARCHES // 2) == 2
    assert latency_passes(5, MAX_TIMED_SEARCHES * 4) == 1
    assert latency_passes(1, 10) == 1


class _Clock:
    """A fake perf_counter: every reading advances it 1 ms; a stall adds a whole second."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


CLOCK = _Clock()


class StallingProvider(HashingProvider):
    """Stalls (on the fake clock) the second time it embeds a query alone: one pass is slow."""

    name = "stalling"

    def load(self) -> None:
        super().load()
        self.query_calls: dict[str, int] = {}
        self.alone: dict[str, int] = {}

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        if kind == "query":
            for text in texts:
                self.query_calls[text] = self.query_calls.get(text, 0) + 1
            if len(texts) == 1:  # a timed search (or the warm-up), not the scored batch
                self.alone[texts[0]] = self.alone.get(texts[0], 0) + 1
                if self.alone[texts[0]] == 2:  # q1's warm-up was the first: its pass 1 stalls
                    CLOCK.now += 1.0
        return super().embed_batch(texts, kind=kind)


register_provider(StallingProvider)


@pytest.mark.parametrize("passes", [1, 3])
def test_a_stalled_pass_does_not_reach_the_latency(
    beir_folder: Path, monkeypatch: pytest.MonkeyPatch, passes: int
) -> None:
    monkeypatch.setattr(time, "perf_counter", CLOCK)
    ev = Evaluator(cache=False, latency_passes=passes)
    result = ev.evaluate("stalling:s", beir_folder)
    provider = ev.provider("stalling:s")
    # the scored batch, a warm-up, then every query once per pass (two queries: all sampled)
    assert provider.query_calls == {  # type: ignore[attr-defined]
        "how to reset password": 1 + 1 + passes,
        "download my data as csv": 1 + passes,
    }
    assert result.latency.passes == passes
    assert result.rankings["q1"][0] == "d1"
    stalled_ms = result.to_dict(per_query=True)["latency"]["per_query_ms"]["q1"]
    if passes == 1:
        assert stalled_ms >= 1000  # a single pass keeps the stall
    else:
        assert stalled_ms < 100  # the median of three drops it (fake clock: 1 ms a reading)


def test_latency_passes_is_validated() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match=r"latency_passes=.*: give an integer >= 1, or 0"):
            Evaluator(cache=False, latency_passes=bad)  # type: ignore[arg-type]


class BatchRecordingProvider(HashingProvider):
    """Records the query texts of every embed call."""

    name = "batchrec"

    def load(self) -> None:
        super().load()
        self.query_batches: list[list[str]] = []

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        if kind == "query":
            self.query_batches.append(list(texts))
        return super().embed_batch(texts, kind=kind)


register_provider(BatchRecordingProvider)


def test_zero_latency_passes_embeds_the_queries_in_one_batch(beir_folder: Path) -> None:
    timed = Evaluator(cache=False, latency_passes=1).evaluate("batchrec:b", beir_folder)
    ev = Evaluator(cache=False, latency_passes=0)
    untimed = ev.evaluate("batchrec:b", beir_folder)
    provider = ev.provider("batchrec:b")
    # no warm-up, no timed pass: every query once, in one batch, as a bare script does
    (batch,) = provider.query_batches  # type: ignore[attr-defined]
    assert sorted(batch) == sorted(q.text for q in load_dataset(beir_folder).queries)
    assert untimed.rankings == timed.rankings and untimed.scores == timed.scores
    assert float(untimed.ndcg10) == float(timed.ndcg10)
    assert untimed.latency.n == 0 and untimed.latency.passes == 0
    assert math.isnan(untimed.latency.p95_ms) and math.isnan(untimed.cold_query_ms)
    assert untimed.timings.query_embedding_s > 0
    # a latency rule cannot pass on a run that timed nothing, and says how to fix it
    rules = ThresholdSet.parse({"defaults": {"latency.p95_ms": "<= 1000"}}, "limits.yaml")
    (failure,) = check_thresholds(untimed, rules.for_test("t", "b"))
    assert "not measured" in failure and "--embedbench-latency-passes" in failure
    assert check_thresholds(timed, rules.for_test("t", "b")) == []


# -- latency on a seeded sample, scoring from one batched pass ----------------------------------


def test_the_sample_is_seeded_in_query_order_and_zero_means_every_query() -> None:
    first = latency_sample(50, 300, seed=0)
    assert first.tolist() == latency_sample(50, 300, seed=0).tolist()  # same seed, same sample
    assert first.tolist() != latency_sample(50, 300, seed=1).tolist()  # another seed, another
    assert len(set(first.tolist())) == 50 and first.tolist() == sorted(first.tolist())
    assert 0 <= first.min() and first.max() < 300
    assert latency_sample(0, 7, seed=0).tolist() == list(range(7))  # 0: every query
    assert latency_sample(50, 7, seed=0).tolist() == list(range(7))  # fewer queries than 50
    assert latency_sample(50, 0, seed=0).tolist() == []
    # the plugin's default is the evaluator's, and 50 x 3 passes stays far under the cap
    assert Options().latency_sample == DEFAULT_LATENCY_SAMPLE == Evaluator().latency_sample
    assert latency_passes(DEFAULT_LATENCY_PASSES, DEFAULT_LATENCY_SAMPLE) == 3


@pytest.fixture
def many_queries(tmp_path: Path) -> Path:
    """A BEIR folder of 12 documents and 30 judged queries (q00..q29), each naming a document."""
    root = tmp_path / "many"
    words = ["password", "invoice", "export", "billing", "login", "csv", "card", "team"]
    words += ["delete", "profile", "email", "refund"]
    docs = [{"_id": f"d{i:02d}", "title": w, "text": f"all about {w}"} for i, w in enumerate(words)]
    write_jsonl(root / "corpus.jsonl", docs)
    queries = [{"_id": f"q{i:02d}", "text": f"{words[i % 12]} question {i}"} for i in range(30)]
    write_jsonl(root / "queries.jsonl", queries)
    (root / "qrels").mkdir()
    rows = "".join(f"q{i:02d}\td{i % 12:02d}\t1\n" for i in range(30))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return root


def _timed(result_dict: dict) -> list[str]:
    return list(result_dict["latency"]["per_query_ms"])


def test_the_default_scores_one_batch_and_times_a_seeded_sample(many_queries: Path) -> None:
    ev = Evaluator(cache=False, latency_sample=5)
    result = ev.evaluate("batchrec:b", many_queries)
    provider = ev.provider("batchrec:b")
    texts = {q.id: q.text for q in load_dataset(many_queries).queries}
    # the scored pass: every query in one batch; then a warm-up and 3 passes over 5 queries
    scored, *alone = provider.query_batches  # type: ignore[attr-defined]
    assert sorted(scored) == sorted(texts.values())
    assert all(len(batch) == 1 for batch in alone)
    assert len(alone) == 1 + DEFAULT_LATENCY_PASSES * 5
    sample = [f"q{i:02d}" for i in latency_sample(5, 30, seed=0)]
    assert result.latency.query_ids == tuple(sample) and result.latency.n == 5
    assert [batch[0] for batch in alone[1:]] == [texts[q] for q in sample] * 3
    summary = result.to_dict(per_query=True)
    assert _timed(summary) == sample  # the timed ids, in query order
    assert summary["latency"]["n"] == 5 and summary["latency"]["queries"] == 30
    assert summary["latency"]["passes"] == DEFAULT_LATENCY_PASSES
    assert result.to_dict()["latency"]["queries"] == 30
    # the same seed times the same queries, byte for byte; another seed other queries
    again = Evaluator(cache=False, latency_sample=5).evaluate("batchrec:b", many_queries)
    assert _timed(again.to_dict(per_query=True)) == sample
    other = Evaluator(cache=False, latency_sample=5, seed=1).evaluate("batchrec:b", many_queries)
    assert _timed(other.to_dict(per_query=True)) != sample
    # the rankings that count are those of the untimed, batched run
    untimed = Evaluator(cache=False, latency_passes=0).evaluate("batchrec:b", many_queries)
    assert result.rankings == untimed.rankings and result.scores == untimed.scores
    assert result.per_query("ndcg@10").tolist() == untimed.per_query("ndcg@10").tolist()
    assert float(result.ndcg10) == float(untimed.ndcg10)
    assert untimed.to_dict(per_query=True)["latency"]["per_query_ms"] == {}
    assert untimed.to_dict()["latency"]["queries"] == 30


def test_latency_sample_zero_times_every_query(many_queries: Path) -> None:
    ev = Evaluator(cache=False, latency_sample=0, latency_passes=2)
    result = ev.evaluate("batchrec:b", many_queries)
    _, *alone = ev.provider("batchrec:b").query_batches  # type: ignore[attr-defined]
    assert len(alone) == 1 + 2 * 30
    every = [f"q{i:02d}" for i in range(30)]
    assert _timed(result.to_dict(per_query=True)) == every
    assert result.latency.n == result.latency.queries == 30 and result.latency.passes == 2
    # the default sample of 50 is every query of a smaller set
    assert Evaluator(cache=False).evaluate("hashing:h", many_queries).latency.n == 30


def test_latency_sample_is_validated() -> None:
    for bad in (-1, 2.5, True, "50"):
        with pytest.raises(
            ConfigError,
            match=r"latency_sample=.*: give the number of queries to time, an integer >= 1 "
            r"\(default 50\), or 0 to time every query",
        ):
            Evaluator(cache=False, latency_sample=bad)  # type: ignore[arg-type]


# -- intervals and ties in the recommendation --------------------------------------------------


def test_order_statistic_interval() -> None:
    values = np.arange(1, 301, dtype=float)
    low, high = quantile_interval(values, 95)
    assert low < np.percentile(values, 95) < high
    assert (low, high) == quantile_interval(values[::-1], 95)  # order does not matter
    # too few values to bound p95 from above: the observed maximum
    assert quantile_interval([1.0, 2.0, 3.0], 95)[1] == 3.0
    # coverage of the true p95 of an exponential, on seeded samples
    rng = np.random.default_rng(0)
    true = -np.log(0.05)
    hits = sum(
        low <= true <= high
        for low, high in (quantile_interval(rng.exponential(size=100), 95) for _ in range(400))
    )
    assert hits / 400 >= 0.93


def _row(model: str, ndcg: float, latencies_ms: np.ndarray, spec: str = "hf:x") -> dict:
    latency = LatencyStats.from_seconds(latencies_ms / 1000.0).to_dict()
    return {
        "model": model,
        "spec": spec,
        "status": "passed",
        "result": {
            "metrics": {"ndcg@10": {"value": ndcg, "low": ndcg, "high": ndcg}},
            "latency": latency,
            "cost": {},
            "queries": len(latencies_ms),
            "documents": 1000,
        },
    }


def _run(seed: int) -> list[dict]:
    """One run: two dense models with the same latency distribution, and a fast bm25."""
    rng = np.random.default_rng(seed)
    return [
        _row("dense-a", 0.700, rng.lognormal(np.log(20), 0.3, 100)),
        _row("dense-b", 0.6999, rng.lognormal(np.log(20), 0.3, 100)),
        _row("bm25", 0.600, rng.lognormal(np.log(0.2), 0.3, 100), spec="bm25"),
    ]


def test_balanced_pick_does_not_follow_latency_noise() -> None:
    first, second = _run(1), _run(4)

    def p95(rows: list[dict], model: str) -> float:
        return next(r for r in rows if r["model"] == model)["result"]["latency"]["p95_ms"]

    # the precondition: noise alone swaps which dense model has the lower p95
    assert (p95(first, "dense-a") < p95(first, "dense-b")) != (
        p95(second, "dense-a") < p95(second, "dense-b")
    )
    picks = [recommend(rows)["picks"]["balanced"]["model"] for rows in (first, second)]
    assert picks == ["dense-a", "dense-a"]  # tied on speed, so accuracy decides, every run
    for rows in (first, second):
        rec = recommend(rows)
        assert rec["speed_tiers"] == [
            ["bm25"],
            sorted(["dense-a", "dense-b"], key=lambda m: p95(rows, m)),
        ]
        assert rec["components"]["dense-a"]["speed"] == rec["components"]["dense-b"]["speed"]
        assert rec["components"]["bm25"]["speed"] == 1.0
        assert rec["picks"]["speed"]["model"] == "bm25"
    records = [{"nodeid": f"t[{row['model']}]", "dataset": "d", **row} for row in first]
    table = render_tables(records, recommendations={"d": recommend(first)})
    assert any(
        "equally fast (overlapping p95 intervals): dense-a = dense-b" in line for line in table
    )


def test_separated_latencies_are_not_ties() -> None:
    fast = np.full(50, 5.0) + np.linspace(0, 1, 50)
    slow = np.full(50, 50.0) + np.linspace(0, 1, 50)
    rows = [_row("slow", 0.7, slow), _row("fast", 0.7, fast)]
    assert speed_tiers(rows) == [["fast"], ["slow"]]
    # without per-query latencies (an old record) the point p95 is the interval
    for row in rows:
        del row["result"]["latency"]["p95_interval_ms"]
    assert speed_tiers(rows) == [["fast"], ["slow"]]


# -- the conditions of a measurement ---------------------------------------------------------


def test_thread_settings_and_load_are_recorded(
    beir_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    result = Evaluator(cache=False, latency_passes=2).evaluate("hashing:h", beir_folder)
    env = result.to_dict()["environment"]
    assert env["threads"]["env"]["OMP_NUM_THREADS"] == "1"
    assert env["threads"]["cpu_count"] >= 1
    assert set(env["load"]) >= {"others_cpus", "loadavg_before", "loadavg_after", "busy"}
    report = build_report([], configuration={}, rootdir=beir_folder)
    assert report["machine"]["threads"]["env"]["OMP_NUM_THREADS"] == "1"
    assert "load_average" in report["machine"]


@pytest.fixture
def no_thread_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No thread-pool variable set (an outer xdist worker sets them), torch's count restored."""
    import torch

    for name in THREAD_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    yield monkeypatch
    torch.set_num_threads(before)


def test_share_cores_caps_each_workers_pools(no_thread_env: pytest.MonkeyPatch) -> None:
    import torch

    cpus = len(os.sched_getaffinity(0))
    torch.set_num_threads(cpus)
    share = share_cores(2)
    assert share == max(1, cpus // 2)
    assert os.environ["OMP_NUM_THREADS"] == os.environ["OPENBLAS_NUM_THREADS"] == str(share)
    assert torch.get_num_threads() == share  # torch is imported already: capped directly
    assert share_cores(1) is None  # now the variables are set: left as they are


def test_share_cores_never_raises_and_leaves_a_users_choice(
    no_thread_env: pytest.MonkeyPatch,
) -> None:
    import torch

    torch.set_num_threads(1)
    assert share_cores(1) == len(os.sched_getaffinity(0))
    assert torch.get_num_threads() == 1  # a conftest's smaller choice stays
    for name in THREAD_ENV_VARS:
        no_thread_env.delenv(name, raising=False)
    no_thread_env.setenv("MKL_NUM_THREADS", "3")
    assert share_cores(4) is None
    assert "OMP_NUM_THREADS" not in os.environ


def test_busy_rule_and_note() -> None:
    monitor = LoadMonitor()
    monitor.cpus, monitor.others_cpus = 2, 1.2
    assert monitor.busy
    monitor.others_cpus = 0.1
    assert not monitor.busy
    busy_load = {"busy": True, "others_cpus": 1.2, "cpus": 2, "loadavg_before": [3.5, 2, 1]}
    timed = {"latency": {"n": 30, "queries": 30, "passes": 1}}
    records = [
        {"nodeid": "t[a]", "model": "a", "result": {"environment": {"load": busy_load}, **timed}},
        {"nodeid": "t[b]", "model": "b", "result": {"environment": {"load": {"busy": False}}}},
    ]
    (note,) = busy_notes(records)
    assert "queries of a were timed" in note and "1.2 of 2 CPUs" in note
    assert "OMP_NUM_THREADS" in note
    assert busy_notes(records[1:]) == []


# -- memory ---------------------------------------------------------------------------------------


class BallastProvider(HashingProvider):
    """A hashing model that holds ``ballast_mb`` of resident memory once loaded, as weights do."""

    name = "ballast"
    option_names = HashingProvider.option_names | {"ballast_mb"}

    def load(self) -> None:
        super().load()
        size = int(self.options.get("ballast_mb", 0)) * 1024 * 1024
        self.weights = np.ones(size // 8)  # written, so resident


register_provider(BallastProvider)


@pytest.mark.slow  # loads real models: the full suite
def test_memory_is_what_each_model_adds(beir_folder: Path) -> None:
    pytest.importorskip("bm25s")
    ev = Evaluator(cache=False, latency_passes=1)
    big = ev.evaluate(ModelSpec("ballast:big", ballast_mb=400), beir_folder)
    bm25 = ev.evaluate("bm25", beir_folder)
    # the big model's load happened inside its evaluation, and its weights stay resident
    assert big.added_rss_mb >= 350
    assert bm25.process_peak_rss_mb >= bm25.start_rss_mb >= 350
    # bm25 adds a small part of what the process holds, not the big model's weights
    assert bm25.added_rss_mb < 0.25 * bm25.process_peak_rss_mb
    assert bm25.added_rss_mb < big.added_rss_mb / 4
    summary = bm25.to_dict()
    assert summary["added_rss_mb"] == bm25.added_rss_mb
    assert summary["process_peak_rss_mb"] == bm25.process_peak_rss_mb
    # the table's memory column shows what each model added
    records = [
        {"nodeid": f"t[{r.name}]", "dataset": "d", "model": r.name, "result": r.to_dict()}
        for r in (big, bm25)
    ]
    table = "\n".join(render_tables(records))
    assert "+RSS MB" in table
    bm25_line = next(line for line in table.splitlines() if line.startswith("bm25"))
    assert f"{bm25.added_rss_mb:.0f}" in bm25_line.split()
    assert f"{bm25.process_peak_rss_mb:.0f}" not in bm25_line.split()
