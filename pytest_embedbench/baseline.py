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
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import read_yaml
from .exceptions import BaselineError, ConfigError, MetricError
from .metrics import parse_metric

if TYPE_CHECKING:
    from .evaluate import RetrievalResult

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
]

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_RULE = re.compile(r"^\s*(>=|<=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_LATENCY = {"p50_ms", "p90_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms", "qps"}
_TIMINGS = {
    "model_load_s",
    "document_embedding_s",
    "index_build_s",
    "query_embedding_s",
    "search_s",
    "encode_s",
    "total_s",
}
_PLAIN = {"peak_rss_mb", "documents_per_s", "cache.hit_rate"}
_SECTIONS = {"defaults", "models", "tests"}


@dataclass(frozen=True)
class Threshold:
    """One rule: ``key op limit`` (e.g. ``ndcg@10 >= 0.6``), with where it was written."""

    key: str
    op: str
    limit: float
    origin: str

    def check(self, value: float) -> bool:
        """Whether ``value`` meets the rule; NaN (not measured, e.g. docs/s on a warm cache)
        passes."""
        return math.isnan(value) or _OPS[self.op](value, self.limit)

    def __str__(self) -> str:
        return f"{self.key} {self.op} {self.limit:g}"


def _check_key(key: str, origin: str) -> str:
    if key.startswith("latency."):
        if key.split(".", 1)[1] not in _LATENCY:
            raise ConfigError(f"{origin}: unknown latency key {key!r}; use {sorted(_LATENCY)}")
        return key
    if key.startswith("timings."):
        if key.split(".", 1)[1] not in _TIMINGS:
            raise ConfigError(f"{origin}: unknown timing key {key!r}; use {sorted(_TIMINGS)}")
        return key
    if key in _PLAIN:
        return key
    try:
        return str(parse_metric(key))
    except MetricError as exc:
        raise ConfigError(
            f"{origin}: threshold key {key!r} is neither a metric ({exc}) nor one of "
            f"{sorted(_PLAIN)}, latency.*, timings.*"
        ) from None


def parse_rule(key: str, rule: Any, origin: str) -> Threshold:
    """``("ndcg@10", ">= 0.6")`` into a Threshold; a bad rule names key, value and the fix."""
    name = _check_key(str(key), origin)
    match = _RULE.match(str(rule)) if isinstance(rule, (str, int, float)) else None
    if not match or isinstance(rule, bool):
        raise ConfigError(
            f'{origin}: threshold {key}: {rule!r} is not a rule; write it as ">= 0.6" or '
            '"<= 100" (quoted, an operator and a number)'
        )
    threshold = Threshold(name, match.group(1), float(match.group(2)), origin)
    _check_possible(threshold, rule)
    return threshold


def _check_possible(threshold: Threshold, rule: Any) -> None:
    """A rule no value can meet (``ndcg@10 >= 1.5``, ``recall@10 < 0``) is a ConfigError: every
    metric and the cache hit rate lie in [0, 1], and nothing measured is negative."""
    bounded = threshold.key == "cache.hit_rate" or "@" in threshold.key
    high = 1.0 if bounded else math.inf
    op, limit = threshold.op, threshold.limit
    impossible = (
        (op == ">=" and limit > high)
        or (op == ">" and limit >= high)
        or (op == "<=" and limit < 0)
        or (op == "<" and limit <= 0)
    )
    if impossible:
        span = "lies in [0, 1]" if bounded else "is never negative"
        raise ConfigError(
            f"{threshold.origin}: threshold {threshold.key}: {rule!r} can never hold: "
            f"{threshold.key} {span}. Write a limit that a result can meet, e.g. "
            f'"{">=" if op in (">=", ">") else "<="} {0.6 if bounded else 100:g}"'
        )


def _rules(block: Any, origin: str) -> dict[str, Threshold]:
    if not isinstance(block, Mapping):
        raise ConfigError(f"{origin}: expected a mapping of key to rule, got {block!r}")
    return {
        t.key: t
        for t in (parse_rule(k, v, f"{origin}.{k}") for k, v in block.items() if k != "models")
    }


@dataclass(frozen=True)
class ThresholdSet:
    """Parsed thresholds, resolved per test and model with :meth:`for_test`."""

    defaults: Mapping[str, Threshold]
    models: Mapping[str, Mapping[str, Threshold]]
    tests: Mapping[str, Mapping[str, Threshold]]
    test_models: Mapping[tuple[str, str], Mapping[str, Threshold]]

    @classmethod
    def empty(cls) -> ThresholdSet:
        return cls({}, {}, {}, {})

    @classmethod
    def parse(cls, raw: Mapping[str, Any], origin: str) -> ThresholdSet:
        unknown = sorted(set(raw) - _SECTIONS)
        if unknown:
            raise ConfigError(
                f"{origin}: unknown threshold section(s) {unknown}; use {sorted(_SECTIONS)}"
            )
        defaults = _rules(raw.get("defaults") or {}, f"{origin}: defaults")
        models = {
            str(m): _rules(block, f"{origin}: models.{m}")
            for m, block in (raw.get("models") or {}).items()
        }
        tests: dict[str, dict[str, Threshold]] = {}
        test_models: dict[tuple[str, str], dict[str, Threshold]] = {}
        for test, block in (raw.get("tests") or {}).items():
            where = f"{origin}: tests.{test}"
            tests[str(test)] = _rules(block, where)
            per_model = block.get("models") if isinstance(block, Mapping) else None
            for m, sub in (per_model or {}).items():
                test_models[(str(test), str(m))] = _rules(sub, f"{where}.models.{m}")
        return cls(defaults, models, tests, test_models)

    def merged(self, other: ThresholdSet) -> ThresholdSet:
        """``other``'s rules over this set's, section by section."""

        def merge(a: Mapping[Any, Mapping[str, Threshold]], b: Mapping[Any, Any]) -> dict:
            out = {key: dict(value) for key, value in a.items()}
            for key, value in b.items():
                out.setdefault(key, {}).update(value)
            return out

        return ThresholdSet(
            {**self.defaults, **other.defaults},
            merge(self.models, other.models),
            merge(self.tests, other.tests),
            merge(self.test_models, other.test_models),
        )

    def for_test(self, test: str, model: str) -> list[Threshold]:
        """The rules that apply to ``test`` (function name) and ``model`` (short name)."""
        rules: dict[str, Threshold] = dict(self.defaults)
        rules.update(self.models.get(model, {}))
        rules.update(self.tests.get(test, {}))
        rules.update(self.test_models.get((test, model), {}))
        return [rules[key] for key in sorted(rules)]


def load_thresholds(path: Path) -> ThresholdSet:
    """Read a thresholds YAML file."""
    raw = read_yaml(path, "thresholds file")
    if raw is None:
        return ThresholdSet.empty()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping with defaults, models or tests")
    return ThresholdSet.parse(raw, str(path))


def value_of(result: RetrievalResult, key: str) -> tuple[float, str]:
    """The value ``key`` names on ``result`` and how to show it (with its interval)."""
    if key.startswith("latency."):
        value = float(getattr(result.latency, key.split(".", 1)[1]))
        return value, f"{value:.4g}"
    if key.startswith("timings."):
        value = float(getattr(result.timings, key.split(".", 1)[1]))
        return value, f"{value:.4g}"
    if key == "peak_rss_mb":
        return result.peak_rss_mb, f"{result.peak_rss_mb:.1f}"
    if key == "documents_per_s":
        return result.documents_per_s, f"{result.documents_per_s:.1f}"
    if key == "cache.hit_rate":
        return result.cache.hit_rate, f"{result.cache.hit_rate:.3f}"
    est = result.metric(key)
    return float(est), f"{float(est):.4f} [{est.low:.4f}, {est.high:.4f}]"


def check_thresholds(result: RetrievalResult, rules: list[Threshold]) -> list[str]:
    """One line per violated rule (empty when all hold)."""
    failures = []
    for rule in rules:
        value, shown = value_of(result, rule.key)
        if not rule.check(value):
            failures.append(
                f"{rule.key} = {shown} is not {rule.op} {rule.limit:g}  ({rule.origin})"
            )
    return failures


# -- baseline files ------------------------------------------------------------------------

BASELINE_SCHEMA = 1
DEFAULT_BASELINE = Path(".embedbench") / "baseline.json"
#: metrics whose per-query scores a baseline entry keeps (the gated ones must be among them)
KEPT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100", "hit@1")
_PRECISION = 6


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, _PRECISION) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v) for v in value]
    return value


def entry_from_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline entry of one retrieval test's record (see ``session.record``)."""
    result = record["result"]
    per_query = result.get("per_query", {})
    entry: dict[str, Any] = _round(
        {
            "model": record["model"],
            "spec": record["spec"],
            "dataset": record["dataset"],
            "dataset_fingerprint": result["dataset_fingerprint"],
            "settings_fingerprint": record.get("settings_fingerprint"),
            "model_revision": result.get("model_info", {}).get("revision"),
            "machine_fingerprint": record.get("machine_fingerprint"),
            "queries": result["queries"],
            "metrics": {
                name: {k: v for k, v in est.items() if k in ("value", "low", "high", "n")}
                for name, est in sorted(result["metrics"].items())
            },
            "latency": {
                k: result["latency"][k]
                for k in ("p50_ms", "p95_ms", "p99_ms", "per_query_ms")
                if k in result["latency"]
            },
            "per_query": {m: per_query[m] for m in KEPT_METRICS if m in per_query},
        }
    )
    # what the fingerprints summarise, so a later run can name what changed (absent: not known)
    for key in ("settings", "dataset_parts"):
        if record.get(key) is not None:
            entry[key] = _round(record[key])
    return entry


#: how long an update waits for another run's write of the same baseline
LOCK_TIMEOUT = 120.0
_NUMBER = (int, float)


def _is_number(value: Any) -> bool:
    return isinstance(value, _NUMBER) and not isinstance(value, bool) and math.isfinite(value)


def entry_problem(entry: Any) -> str | None:
    """What is wrong with a baseline entry's structure (None when the gate can read it).

    Only the parts the gate reads are checked; fields it does not know are left alone.
    """
    if not isinstance(entry, Mapping):
        return f"it is a {type(entry).__name__}, not a mapping"
    for key in ("metrics", "latency", "per_query"):
        if key in entry and not isinstance(entry[key], Mapping):
            return f"{key!r} is a {type(entry[key]).__name__}, not a mapping"
    for key, value in (entry.get("latency") or {}).items():
        if key == "per_query_ms":  # the per-query latencies the distribution test reads
            values = list(value.values()) if isinstance(value, Mapping) else value
            if not isinstance(values, list) or not all(_is_number(v) for v in values):
                return f"latency['per_query_ms'] is {value!r:.80}, not a list of numbers"
        elif value is not None and not _is_number(value):
            return f"latency[{key!r}] is {value!r}, not a number"
    for metric, scores in (entry.get("per_query") or {}).items():
        if not isinstance(scores, Mapping):
            return (
                f"per_query[{metric!r}] is a {type(scores).__name__}, not a mapping of query id "
                "to score"
            )
        for query, score in scores.items():
            if not _is_number(score):
                return f"per_query[{metric!r}][{query!r}] is {score!r}, not a number"
    return None


@dataclass
class BaselineUpdate:
    """What :meth:`BaselineFile.update` did: counts and lines for the summary."""

    added: int = 0
    replaced: int = 0
    notes: list[str] = field(default_factory=list)


class BaselineFile:
    """A schema-versioned JSON file of baseline entries keyed by test node id.

    Reading never raises on bad content: what is wrong with the whole file is in ``problem``
    (each gated test fails with it), a damaged entry is in ``damaged`` (only its test fails),
    and ``--embedbench-update-baseline`` repairs both through :meth:`update`, unless the file
    was written by a newer pytest-embedbench or cannot be read (``replaceable`` is False).
    """

    def __init__(self, path: Path, entries: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (entries or {}).items()}
        #: node id -> what is wrong with its entry; the raw entry is kept in ``_raw_damaged``
        self.damaged: dict[str, str] = {}
        self._raw_damaged: dict[str, Any] = {}
        #: what is wrong with the file as a whole (None when it was read)
        self.problem: str | None = None
        #: whether an update may rewrite a file with a problem (not a newer or unreadable one)
        self.replaceable = True

    @property
    def lock_path(self) -> Path:
        return self.path.parent / f".{self.path.name}.lock"

    @classmethod
    def load(cls, path: Path) -> BaselineFile:
        """Read ``path`` (an absent file is an empty baseline); bad content is recorded in
        ``problem`` and ``damaged`` with the fix, never raised."""
        found = cls(path)
        fix = "re-run with --embedbench-update-baseline to replace it"
        try:
            if not path.is_file():
                return found
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            found.problem = f"{path}: cannot be read ({_reason(exc)}); fix its permissions"
            found.replaceable = False
            return found
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            found.problem = (
                f"{path} line {exc.lineno}: not valid JSON ({exc.msg}); fix it, or {fix} "
                "(the old file is kept as a backup)"
            )
            return found
        if not isinstance(raw, Mapping) or "schema_version" not in raw:
            found.problem = (
                f"{path}: not an embedbench baseline (no schema_version); {fix} "
                "(valid entries are kept, the old file as a backup)"
            )
            raw = raw if isinstance(raw, Mapping) else {}
        else:
            version = raw["schema_version"]
            known = isinstance(version, int) and not isinstance(version, bool)
            if known and version > BASELINE_SCHEMA:
                found.problem = (
                    f"{path}: schema_version {version!r} was written by a newer "
                    f"pytest-embedbench (this one reads schema {BASELINE_SCHEMA}); upgrade it "
                    "(pip install -U pytest-embedbench), or record into another file with "
                    "--embedbench-baseline=PATH"
                )
                found.replaceable = False
                return found
            if version != BASELINE_SCHEMA or not known:
                found.problem = (
                    f"{path}: schema_version {version!r} is not a schema this "
                    f"pytest-embedbench reads (it reads {BASELINE_SCHEMA}); {fix} as schema "
                    f"{BASELINE_SCHEMA} (valid entries are kept, the old file as a backup)"
                )
        entries = raw.get("entries", {})
        if not isinstance(entries, Mapping):
            found.problem = (
                f"{path}: 'entries' is a {type(entries).__name__}, not a mapping of test id to "
                f"entry; {fix} (the old file is kept as a backup)"
            )
            return found
        for nodeid, entry in entries.items():
            wrong = entry_problem(entry)
            if wrong is None:
                found.entries[str(nodeid)] = dict(entry)
            else:
                found.damaged[str(nodeid)] = (
                    f"{path}: the baseline entry {nodeid!r} is damaged: {wrong}; re-record it "
                    "with --embedbench-update-baseline"
                )
                found._raw_damaged[str(nodeid)] = entry
        return found

    def write(self) -> None:
        """Write atomically, keys sorted, floats at fixed precision (damaged entries that
        were not replaced are kept as they were)."""
        from .report.json_report import atomic_write_json

        entries: dict[str, Any] = {**self._raw_damaged, **self.entries}
        atomic_write_json(
            self.path,
            {"schema_version": BASELINE_SCHEMA, "entries": dict(sorted(entries.items()))},
        )

    def update(
        self,
        entries: Mapping[str, Mapping[str, Any]],
        *,
        replace: bool = True,
        timeout: float = LOCK_TIMEOUT,
    ) -> BaselineUpdate:
        """Merge ``entries`` into the file as it is on disk now, under a file lock.

        Lock, re-read, put ``entries`` over what is there (``replace=False`` only adds missing
        ones; a damaged entry is always replaced), write atomically, unlock: runs that update
        one baseline at the same time each keep their entries. A file with a problem is
        rewritten (its old content copied to a backup first) unless it is newer or unreadable,
        which raises :class:`BaselineError`. ``OSError`` (read-only folder, full disk) is
        raised as is, with the file on disk unchanged.
        """
        from filelock import FileLock, Timeout

        if not entries and not self.path.exists():
            return BaselineUpdate()  # nothing to record and nothing to repair: no folder, no lock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.lock_path), timeout=timeout)
        try:
            lock.acquire()
        except Timeout:
            raise BaselineError(
                f"{self.path}: another run held its lock {self.lock_path.name} for {timeout:g} "
                "s; nothing was written. Re-run the update when that run has finished"
            ) from None
        try:
            current = BaselineFile.load(self.path)
            if current.problem and not current.replaceable:
                raise BaselineError(f"{current.problem}; nothing was written")
            done = current._merge(entries, replace=replace)
        finally:
            lock.release()
        self.entries, self.damaged = current.entries, current.damaged
        self._raw_damaged, self.problem = current._raw_damaged, None
        return done

    def _merge(self, entries: Mapping[str, Mapping[str, Any]], *, replace: bool) -> BaselineUpdate:
        """Put ``entries`` over this (freshly read) file's and write it when anything changed."""
        done = BaselineUpdate()
        kept = len(self.entries)
        repaired = []
        for nodeid, entry in sorted(entries.items()):
            if nodeid in self.damaged:
                repaired.append(nodeid)
                del self.damaged[nodeid], self._raw_damaged[nodeid]
                done.replaced += 1
            elif nodeid in self.entries:
                if not replace:
                    continue
                done.replaced += 1
            else:
                done.added += 1
            self.entries[nodeid] = dict(entry)
        if not (done.added or done.replaced or self.problem):
            return done
        if self.problem or repaired:
            backup = self._backup()
            saved = f"; the old file is saved as {backup}" if backup else ""
            if self.problem:
                done.notes.append(
                    f"baseline {self.path}: replaced its bad content ({self.problem}); kept "
                    f"{kept} valid entr{'y' if kept == 1 else 'ies'}{saved}"
                )
            if repaired:
                done.notes.append(
                    f"baseline {self.path}: re-recorded {len(repaired)} damaged "
                    f"entr{'y' if len(repaired) == 1 else 'ies'} ({', '.join(repaired)}){saved}"
                )
        self.write()
        if self.damaged:
            done.notes.append(
                f"baseline {self.path}: {len(self.damaged)} damaged "
                f"entr{'y was' if len(self.damaged) == 1 else 'ies were'} kept as they are "
                f"(their tests did not run): {', '.join(sorted(self.damaged))}"
            )
        return done

    def _backup(self) -> Path | None:
        """Copy the file as it is to ``<name>.bad-<time>`` before it is rewritten."""
        import shutil
        import time

        if not self.path.is_file():
            return None
        backup = self.path.with_name(
            f"{self.path.name}.bad-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        )
        shutil.copy2(self.path, backup)
        return backup


def _reason(exc: BaseException) -> str:
    """An OS error as its reason ("Permission denied"), other errors as their message."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


# -- the gate ------------------------------------------------------------------------------

_GATE_KEYS = {
    "metrics",
    "tolerance",
    "inconclusive",
    "latency_p95_pct",
    "latency_floor_ms",
    "min_shared",
    "models",
    "tests",
}
#: what an inconclusive gate does: print a warning (the test passes) or fail the test
INCONCLUSIVE = ("warn", "fail")
#: the gate's significance level (its paired bootstrap interval is the 95% one)
GATE_ALPHA = 0.05


@dataclass(frozen=True)
class GateSettings:
    """Which metrics are gated and how much of a drop is tolerated.

    ``tolerance`` is absolute (``0.01``) or relative to the baseline value (``"2%"``).
    ``inconclusive`` decides what a drop beyond the tolerance that is not significant does:
    ``"warn"`` (the default: the test passes and the terminal says so) or ``"fail"``.
    ``latency_p95_pct`` turns on the latency gate: p95 may not rise more than that percentage
    and more than ``latency_floor_ms`` milliseconds, and the per-query latencies must be
    significantly slower (compared only when the machine matches the baseline's).
    """

    metrics: tuple[str, ...] = ("ndcg@10", "recall@100")
    tolerance: float = 0.01
    relative: bool = False
    inconclusive: str = "warn"
    latency_p95_pct: float | None = None
    latency_floor_ms: float = 2.0
    min_shared: float = 0.5

    def allowed_drop(self, baseline_value: float) -> float:
        return self.tolerance * abs(baseline_value) if self.relative else self.tolerance

    def describe_tolerance(self) -> str:
        return (
            f"{self.tolerance * 100:g}% of the baseline" if self.relative else f"{self.tolerance:g}"
        )


def _parse_gate_block(block: Mapping[str, Any], base: GateSettings, origin: str) -> GateSettings:
    unknown = sorted(set(block) - _GATE_KEYS)
    if unknown:
        raise ConfigError(f"{origin}: unknown gate key(s) {unknown}; use {sorted(_GATE_KEYS)}")
    values: dict[str, Any] = {
        "metrics": base.metrics,
        "tolerance": base.tolerance,
        "relative": base.relative,
        "inconclusive": base.inconclusive,
        "latency_p95_pct": base.latency_p95_pct,
        "latency_floor_ms": base.latency_floor_ms,
        "min_shared": base.min_shared,
    }
    if "metrics" in block:
        raw = block["metrics"]
        names = [raw] if isinstance(raw, str) else raw
        if not isinstance(names, list) or not names:
            raise ConfigError(f"{origin}.metrics: {raw!r} must be a list such as [ndcg@10]")
        parsed = []
        for name in names:
            metric = str(parse_metric(name))
            if metric not in KEPT_METRICS:
                raise ConfigError(
                    f"{origin}.metrics: {name!r} cannot be gated; baselines keep per-query "
                    f"scores of {list(KEPT_METRICS)}"
                )
            parsed.append(metric)
        values["metrics"] = tuple(parsed)
    if "tolerance" in block:
        tol = block["tolerance"]
        text = str(tol).strip()
        try:
            if isinstance(tol, str) and text.endswith("%"):
                values["tolerance"], values["relative"] = float(text[:-1]) / 100.0, True
            elif isinstance(tol, (int, float)) and not isinstance(tol, bool):
                values["tolerance"], values["relative"] = float(tol), False
            else:
                raise ValueError
        except ValueError:
            raise ConfigError(
                f"{origin}.tolerance: {tol!r}: give an absolute drop such as 0.01 or a "
                'relative one such as "2%"'
            ) from None
        if values["tolerance"] < 0:
            raise ConfigError(f"{origin}.tolerance: {tol!r} must not be negative")
    if "latency_p95_pct" in block:
        pct = block["latency_p95_pct"]
        if pct is not None and (
            isinstance(pct, bool) or not isinstance(pct, (int, float)) or pct < 0
        ):
            raise ConfigError(f"{origin}.latency_p95_pct: {pct!r} must be a percentage >= 0")
        values["latency_p95_pct"] = None if pct is None else float(pct)
    if "latency_floor_ms" in block:
        floor = block["latency_floor_ms"]
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not floor >= 0:
            raise ConfigError(
                f"{origin}.latency_floor_ms: {floor!r} must be a number of milliseconds >= 0 "
                "(a rise below it never fails, e.g. 2)"
            )
        values["latency_floor_ms"] = float(floor)
    if "inconclusive" in block:
        choice = block["inconclusive"]
        if choice not in INCONCLUSIVE:
            raise ConfigError(
                f"{origin}.inconclusive: {choice!r} is not one of {list(INCONCLUSIVE)}; use "
                "warn (print it, the test passes) or fail (the test fails)"
            )
        values["inconclusive"] = choice
    if "min_shared" in block:
        share = block["min_shared"]
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise ConfigError(f"{origin}.min_shared: {share!r} must lie in (0, 1]")
        values["min_shared"] = float(share)
    return GateSettings(**values)


@dataclass(frozen=True)
class GateConfig:
    """Gate settings by default, per model short name and per test function name."""

    defaults: GateSettings = GateSettings()
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    tests: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    origin: str = "gate"

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, origin: str) -> GateConfig:
        if not raw:
            return cls(origin=origin)
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{origin}: expected a mapping (metrics, tolerance, models, tests)")
        defaults = _parse_gate_block(raw, GateSettings(), origin)
        models = dict(raw.get("models") or {})
        tests = dict(raw.get("tests") or {})
        for section, blocks in (("models", models), ("tests", tests)):  # check now, not mid-run
            for name, block in blocks.items():
                if not isinstance(block, Mapping):
                    raise ConfigError(f"{origin}.{section}.{name}: expected a mapping")
                _parse_gate_block(block, defaults, f"{origin}.{section}.{name}")
        return cls(defaults, models, tests, origin)

    def for_test(
        self, test: str, model: str, marker: Mapping[str, Any] | None = None
    ) -> GateSettings:
        settings = self.defaults
        if model in self.models:
            settings = _parse_gate_block(
                self.models[model], settings, f"{self.origin}.models.{model}"
            )
        if test in self.tests:
            settings = _parse_gate_block(self.tests[test], settings, f"{self.origin}.tests.{test}")
        if marker:
            settings = _parse_gate_block(marker, settings, "embedbench marker gate")
        return settings


@dataclass
class GateOutcome:
    """What the gate found for one test: its status, the failure lines and Δ figures.

    ``warnings`` are lines the terminal prints although the test passes (an inconclusive drop
    under ``inconclusive: warn``); ``changes`` name what differs from the baseline's inputs.
    """

    status: str  # "missing", "passed", "inconclusive", "regressed", "stale"
    failures: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    deltas: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "failures": self.failures,
            "warnings": self.warnings,
            "changes": self.changes,
            "deltas": self.deltas,
            "notes": self.notes,
        }


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"options": {"k1": 1.2}}`` as ``{"options.k1": 1.2}`` (lists stay whole)."""
    if not isinstance(value, Mapping):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key in sorted(value, key=str):
        out.update(_flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
    return out


def _what_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``key old -> new`` for every flattened key whose value differs (absent: ``unset``)."""
    a, b = _flatten(old), _flatten(new)
    return [
        f"{key} {a.get(key, 'unset')!r} -> {b.get(key, 'unset')!r}"
        for key in sorted(set(a) | set(b))
        if a.get(key, "unset") != b.get(key, "unset")
    ]


def _changes(record: Mapping[str, Any], entry: Mapping[str, Any]) -> list[str]:
    """What differs between the baseline's inputs and this run's, naming each change."""
    result = record["result"]
    changes = []
    if entry.get("dataset_fingerprint") != result["dataset_fingerprint"]:
        old_parts, new_parts = entry.get("dataset_parts"), record.get("dataset_parts")
        detail = _what_changed(old_parts, new_parts) if old_parts and new_parts else []
        changes.append(
            "the dataset changed: " + "; ".join(detail)
            if detail
            else "the dataset changed (fingerprint "
            f"{str(entry.get('dataset_fingerprint'))[:12]} -> "
            f"{str(result['dataset_fingerprint'])[:12]}); re-record to see which part"
        )
    if entry.get("settings_fingerprint") != record.get("settings_fingerprint"):
        old_settings, new_settings = entry.get("settings"), record.get("settings")
        detail = _what_changed(old_settings, new_settings) if old_settings and new_settings else []
        changes.append(
            "the settings changed: " + "; ".join(detail)
            if detail
            else f"the settings changed (fingerprint {entry.get('settings_fingerprint')} -> "
            f"{record.get('settings_fingerprint')}); re-record to see which"
        )
    revision = result.get("model_info", {}).get("revision")
    if entry.get("model_revision") != revision:
        changes.append(
            f"the model revision changed ({entry.get('model_revision')!r} -> {revision!r})"
        )
    if entry.get("spec") != record["spec"]:
        changes.append(f"the model spec changed ({entry.get('spec')!r} -> {record['spec']!r})")
    return changes


def _query_label(query_id: str, texts: Mapping[str, str] | None, width: int = 50) -> str:
    """``q07 "where is the invoice"``: the id with its text, cut to ``width`` characters."""
    text = (texts or {}).get(query_id)
    if text is None:
        return query_id
    flat = " ".join(str(text).split())
    if len(flat) > width:
        flat = flat[: width - 3].rstrip() + "..."
    return f"{query_id} {json.dumps(flat, ensure_ascii=False)}"


def gate(
    record: Mapping[str, Any],
    entry: Mapping[str, Any] | None,
    settings: GateSettings,
    *,
    seed: int = 0,
    n_resamples: int = 10_000,
    query_texts: Mapping[str, str] | None = None,
) -> GateOutcome:
    """Compare a test's current per-query scores with its baseline entry (paired bootstrap).

    A drop is a regression when it is significant (the 95% interval of current - baseline lies
    below 0) and material (the point drop exceeds the tolerance). A material drop that is not
    significant is *inconclusive*: the eval set is too small or too noisy to tell, and the
    outcome names the smallest drop it could detect (:func:`~.stats.minimum_detectable_effect`)
    and either warns or fails (``settings.inconclusive``). ``query_texts`` (id -> text) puts
    each named query's text beside its id.
    """
    from .stats import minimum_detectable_effect, paired_bootstrap

    if entry is None:
        return GateOutcome("missing")
    result = record["result"]
    outcome = GateOutcome("passed")
    outcome.changes.extend(_changes(record, entry))
    current_pq = result.get("per_query", {})
    base_pq = entry.get("per_query", {})
    changed = f"; {'; '.join(outcome.changes)}" if outcome.changes else ""
    for metric in settings.metrics:
        base = base_pq.get(metric)
        current = current_pq.get(metric)
        if base is None or current is None:
            outcome.notes.append(f"{metric}: not in the baseline entry; not gated")
            continue
        shared = sorted(set(base) & set(current))
        if len(shared) < settings.min_shared * len(base):
            outcome.status = "stale"
            outcome.failures.append(
                f"the baseline of {record['nodeid']} is stale: only {len(shared)} of its "
                f"{len(base)} queries remain{changed}. Re-record it with "
                "--embedbench-update-baseline"
            )
            return outcome
        # the baseline keeps 6 decimals: compare the current run at the same precision
        cur = [round(float(current[q]), _PRECISION) for q in shared]
        old = [float(base[q]) for q in shared]
        diff = paired_bootstrap(cur, old, seed=seed, n_resamples=n_resamples, name=metric)
        base_mean = sum(old) / len(old)
        cur_mean = sum(cur) / len(cur)
        allowed = settings.allowed_drop(base_mean)
        material = -float(diff) > allowed
        regressed = diff.high < 0 and material
        inconclusive = material and not regressed
        mde = minimum_detectable_effect(diff.per_query, alpha=GATE_ALPHA)
        outcome.deltas[metric] = {
            "baseline": base_mean,
            "current": cur_mean,
            "difference": float(diff),
            "low": diff.low,
            "high": diff.high,
            "shared_queries": len(shared),
            "significant": diff.high < 0 or diff.low > 0,
            "regressed": regressed,
            "inconclusive": inconclusive,
            "minimum_detectable": mde,
        }
        if not material:
            continue
        losses = sorted(
            ((c - o, q) for q, c, o in zip(shared, cur, old, strict=True)), key=lambda x: x
        )[:3]
        lost = ", ".join(f"{_query_label(q, query_texts)} ({d:+.3f})" for d, q in losses)
        figures = (
            f"baseline {base_mean:.4f}, current {cur_mean:.4f}, difference {float(diff):+.4f} "
            f"[{diff.low:+.4f}, {diff.high:+.4f}] (95% paired bootstrap over {len(shared)} "
            f"shared queries; tolerance {settings.describe_tolerance()})"
        )
        if regressed:
            outcome.status = "regressed"
            outcome.failures.append(f"{metric} regressed: {figures}; lost most: {lost}{changed}")
            continue
        line = (
            f"{metric} inconclusive: {figures}: the drop is beyond the tolerance but not "
            f"significant; the smallest drop these {len(shared)} queries can detect is about "
            f"{mde:.4f} (80% power, alpha {GATE_ALPHA:g}); lost most: {lost}{changed}. Add "
            "queries to the eval set, or re-record the baseline with "
            "--embedbench-update-baseline if the change is intended"
        )
        if outcome.status == "passed":
            outcome.status = "inconclusive"
        if settings.inconclusive == "fail":
            outcome.failures.append(line + " (gate: inconclusive: fail)")
        else:
            outcome.warnings.append(line)
    if settings.latency_p95_pct is not None:
        _latency_gate(record, entry, settings, outcome)
    return outcome


def _latency_gate(
    record: Mapping[str, Any],
    entry: Mapping[str, Any],
    settings: GateSettings,
    outcome: GateOutcome,
) -> None:
    """p95 latency: a regression needs a rise beyond the percentage *and* the absolute floor,
    *and* per-query latencies that are significantly slower than the baseline's.

    Significance is a one-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``,
    ``alternative="greater"``) of this run's per-query latencies against the baseline's, at
    :data:`GATE_ALPHA`: it compares the distributions, not two noisy percentiles. An entry
    recorded without per-query latencies falls back to the p95 rule with the floor, and says so.
    """
    base_lat = entry.get("latency", {}) or {}
    cur_lat = record["result"].get("latency", {}) or {}
    base_p95, cur_p95 = base_lat.get("p95_ms"), cur_lat.get("p95_ms")
    if base_p95 is None or cur_p95 is None:
        outcome.notes.append("latency gate: no p95 to compare")
        return
    if entry.get("machine_fingerprint") != record.get("machine_fingerprint"):
        outcome.notes.append("latency gate skipped: this machine differs from the baseline's")
        return
    pct, floor = settings.latency_p95_pct or 0.0, settings.latency_floor_ms
    rise = cur_p95 - base_p95
    material = cur_p95 > base_p95 * (1 + pct / 100.0) and rise > floor
    base_ms, cur_ms = base_lat.get("per_query_ms"), cur_lat.get("per_query_ms")
    p_value: float | None = None
    if base_ms and cur_ms:
        from scipy.stats import mannwhitneyu

        p_value = float(mannwhitneyu(cur_ms, base_ms, alternative="greater").pvalue)
        significant = p_value < GATE_ALPHA
        test = (
            f"one-sided Mann-Whitney U p={p_value:.3g} over {len(cur_ms)} and "
            f"{len(base_ms)} queries"
        )
    else:
        significant = True
        test = "p95 only"
        outcome.notes.append(
            "latency gate: the baseline entry has no per-query latencies (recorded by an older "
            f"version), so only p95 was compared, with the {floor:g} ms floor; re-record it "
            "with --embedbench-update-baseline to compare distributions"
        )
    outcome.deltas["latency.p95_ms"] = {
        "baseline": base_p95,
        "current": cur_p95,
        "p_value": p_value,
        "regressed": material and significant,
    }
    if material and significant:
        outcome.status = "regressed"
        outcome.failures.append(
            f"latency.p95_ms regressed: baseline {base_p95:.2f} ms, current {cur_p95:.2f} ms, "
            f"more than {pct:g}% and {floor:g} ms slower ({test})"
        )
