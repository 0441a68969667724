"""An index's queries under concurrent load (issue 45): the levels, the seeded request order
(the same at every level and for the same seed), the request and time bounds, and the figures
each level reports."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pytest_embedbench.retrieval.exact import ExactIndex
from pytest_embedbench.retrieval.indexes import measure_load


class Recorded:
    """The real exact index, recording which query vector each request sent (threads too)."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.index = ExactIndex(vectors, [f"d{i}" for i in range(len(vectors))])
        self.sent: list[int] = []
        self.threads: set[int] = set()
        self._lock = threading.Lock()

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            # each query vector i is the document vector i: its first exact hit tells which
            self.threads.add(threading.get_ident())
        found = self.index.search(queries, k)
        with self._lock:
            self.sent.append(int(found[0][0, 0]))
        return found


def _vectors(n: int = 40, dim: int = 16) -> np.ndarray:
    x = np.random.default_rng(0).normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_each_level_sends_the_requests_in_one_seeded_order() -> None:
    x = _vectors()
    one = Recorded(x)
    levels = measure_load(one, x, 5, (1, 4), seed=7, requests=100)
    assert [level.concurrency for level in levels] == [1, 4]
    assert all(level.requests == 100 for level in levels)
    # the warm-up, then 100 requests a level; one thread sends them in the seeded order
    first = one.sent[1:101]
    assert sorted(set(first)) == list(range(40))  # every query vector at least once
    again = Recorded(x)
    measure_load(again, x, 5, (1,), seed=7, requests=100)
    assert again.sent[1:] == first
    other = Recorded(x)
    measure_load(other, x, 5, (1,), seed=8, requests=100)
    assert other.sent[1:] != first
    # four threads take the same requests (in the order each finishes)
    assert sorted(one.sent[101:]) == sorted(first) and len(one.threads) >= 2


def test_a_level_reports_its_rate_and_latency_percentiles() -> None:
    x = _vectors()
    (level,) = measure_load(Recorded(x), x, 5, (2,), requests=60)
    assert level.requests == 60 and level.seconds > 0
    assert level.qps == pytest.approx(60 / level.seconds)
    assert 0 < level.p50_ms <= level.p95_ms <= level.p99_ms


def test_a_level_stops_at_its_time_bound_and_fewer_queries_than_requests_send_each() -> None:
    x = _vectors()
    (stopped,) = measure_load(Recorded(x), x, 5, (3,), requests=10_000, seconds=0.0)
    assert stopped.requests < 10_000
    (small,) = measure_load(Recorded(x), x, 5, (1,), requests=10)
    assert small.requests == len(x)  # every query vector at least once
    assert measure_load(Recorded(x), x, 5, ()) == ()
    assert measure_load(Recorded(x), x[:0], 5, (1,)) == ()


def test_a_level_is_a_threshold_and_gate_key_only_when_named() -> None:
    from pytest_embedbench.baseline.settings import DEFAULT_FIGURES, figure_direction, index_key
    from pytest_embedbench.baseline.thresholds import parse_rule
    from pytest_embedbench.core.exceptions import ConfigError
    from pytest_embedbench.records.figures import figure

    qps, p99 = figure("index.load.c4.qps"), figure("index.load.c16.p99_ms")
    assert qps is not None and qps.noisy and figure_direction("index.load.c4.qps")
    assert p99 is not None and p99.noisy and not figure_direction("index.load.c16.p99_ms")
    assert index_key("index.load.c04.qps") == "index.load.c4.qps"
    assert figure("index.load.c0.qps") is None and figure("index.load.c4.qpz") is None
    assert parse_rule("index.load.c4.qps", ">= 100", "t").key == "index.load.c4.qps"
    with pytest.raises(ConfigError, match=r"index.load.c<N>.<qps\|p50_ms\|p95_ms\|p99_ms>"):
        parse_rule("index.load.c4.qpz", ">= 1", "t")
    assert not any(key.startswith("index.load.") for key, _ in DEFAULT_FIGURES)


def test_a_query_load_level_is_gated_only_when_named_and_on_the_baselines_machine() -> None:
    from pytest_embedbench.baseline import GateConfig, entry_from_record, gate
    from pytest_embedbench.records.figures import figure
    from tests.unit.test_baseline import record, scores

    qps = figure("query_load.c4.qps")
    assert qps is not None and qps.noisy and qps.higher_is_better
    assert figure("query_load.c0.qps") is None and figure("query_load.c4.qpz") is None

    def loaded(rate: float, machine: str = "m1") -> dict:
        found = record(scores(20, 0), machine=machine)
        level = {"concurrency": 4, "requests": 1000, "seconds": 1000 / rate, "qps": rate}
        found["result"]["query_load"] = [level | {"p50_ms": 2, "p95_ms": 4, "p99_ms": 8}]
        return found

    entry = entry_from_record(loaded(400.0))
    assert entry.figures is not None and entry.figures["query_load.c4.qps"] == 400.0
    named = GateConfig.parse({"figures": {"query_load.c04.qps": "20%"}}, "gate").defaults
    assert [r.key for r in named.figures if r.key.startswith("query_load.")] == [
        "query_load.c4.qps"
    ]
    fell = gate(loaded(200.0), entry, named)
    assert fell.status == "regressed"
    assert any("query_load.c4.qps regressed: baseline 400, current 200" in f for f in fell.failures)
    assert gate(loaded(380.0), entry, named).status == "passed"  # within 20%
    elsewhere = gate(loaded(200.0, machine="m2"), entry, named)
    assert elsewhere.status == "passed"
    assert "query_load.c4.qps gate skipped: this machine differs from the baseline's" in (
        elsewhere.notes
    )
    assert gate(loaded(200.0), entry, GateConfig.parse({}, "gate").defaults).status == "passed"
