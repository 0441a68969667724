"""Threshold and baseline files: read, compare, write.

Thresholds are fixed rules checked after each retrieval test; baselines keep per-query scores
so a later run can be compared query by query with a paired bootstrap (the gate).

The thresholds file format is documented in :mod:`.thresholds`.

The package keeps one module per job: :mod:`.thresholds` (fixed rules), :mod:`.store` (the
baseline file and its typed entries), :mod:`.settings` (gate settings) and :mod:`.compare` (the
gate).
"""

from __future__ import annotations

from .compare import GateOutcome, GateStatus, gate
from .settings import GATE_ALPHA, INCONCLUSIVE, GateConfig, GateSettings
from .store import (
    BASELINE_SCHEMA,
    DEFAULT_BASELINE,
    KEPT_METRICS,
    LOCK_TIMEOUT,
    BaselineEntry,
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
    "BaselineEntry",
    "BaselineFile",
    "BaselineUpdate",
    "GateConfig",
    "GateOutcome",
    "GateSettings",
    "GateStatus",
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
