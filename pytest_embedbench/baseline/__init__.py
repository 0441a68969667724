"""Threshold and baseline files: read, compare, write.

Thresholds are fixed rules checked after each retrieval test; baselines keep per-query scores
so a later run can be compared query by query with a paired bootstrap (the gate).

A thresholds file (``--embedbench-thresholds``, or the ``thresholds`` key of
``embedbench.yaml``)::

    defaults:                       # every retrieval test
      ndcg@10: ">= 0.5"
      latency.p95_ms: "<= 200"
    models:                         # by model short name
      bm25: {ndcg@10: ">= 0.4"}
    tests:                          # by test function name
      test_support_search:
        recall@10: ">= 0.7"
        models:
          all-MiniLM-L6-v2: {ndcg@10: ">= 0.6"}

More specific entries replace less specific ones for the same key (defaults < models < tests <
tests.models). Keys are metric names (``ndcg@10``), ``latency.<p50_ms|p90_ms|p95_ms|p99_ms|
mean_ms|max_ms|qps>``, ``peak_rss_mb``, ``documents_per_s``, ``cache.hit_rate`` and
``timings.<stage>_s``.

The package keeps one module per job: :mod:`.thresholds` (fixed rules), :mod:`.store` (the
baseline file and its entries), :mod:`.settings` (gate settings) and :mod:`.compare` (the gate).
"""

from __future__ import annotations

from .compare import GateOutcome, gate
from .settings import GATE_ALPHA, INCONCLUSIVE, GateConfig, GateSettings
from .store import (
    BASELINE_SCHEMA,
    DEFAULT_BASELINE,
    KEPT_METRICS,
    LOCK_TIMEOUT,
    BaselineFile,
    BaselineUpdate,
    entry_from_record,
    entry_problem,
)
from .thresholds import (
    Threshold,
    ThresholdSet,
    check_thresholds,
    load_thresholds,
    parse_rule,
    value_of,
)

__all__ = [
    "BaselineFile",
    "BaselineUpdate",
    "GateConfig",
    "GateOutcome",
    "GateSettings",
    "Threshold",
    "ThresholdSet",
    "check_thresholds",
    "entry_from_record",
    "gate",
    "load_thresholds",
    "BASELINE_SCHEMA",
    "DEFAULT_BASELINE",
    "GATE_ALPHA",
    "INCONCLUSIVE",
    "KEPT_METRICS",
    "LOCK_TIMEOUT",
    "entry_problem",
    "parse_rule",
    "value_of",
]
