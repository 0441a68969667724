"""Gate settings: which metrics a baseline gates and how much of a drop it tolerates, by
default, per model and per test (the ``gate`` key of embedbench.yaml and the marker)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.exceptions import ConfigError
from ..core.names import check_keys
from ..evaluation.metrics import parse_metric
from ..records.figures import INDEX_FIGURES, NOISY, RERANK_GATED, STORAGE, figure, gate_keys
from .store import KEPT_METRICS

__all__ = [
    "DEFAULT_FIGURES",
    "GATE_ALPHA",
    "INCONCLUSIVE",
    "FigureRule",
    "GateConfig",
    "GateSettings",
    "figure_direction",
]

_GATE_KEYS = {
    "metrics",
    "tolerance",
    "inconclusive",
    "latency_p95_pct",
    "latency_floor_ms",
    "min_shared",
    "figures",
    "models",
    "tests",
}
#: what an inconclusive gate does: print a warning (the test passes) or fail the test
INCONCLUSIVE = ("warn", "fail")
#: the gate's significance level (its paired bootstrap interval is the 95% one)
GATE_ALPHA = 0.05
#: the figures a baseline gates unless told otherwise: the deterministic ones (sizes, the
#: index's neighbour recall and its delta against exact); timings and rates are gated only
#: when named (``gate: figures:``), since they vary from run to run
DEFAULT_FIGURES: tuple[tuple[str, Any], ...] = (
    ("bytes_per_doc", "5%"),
    ("index_mb", "5%"),
    ("cache_mb", "5%"),
    ("index.bytes", "5%"),
    ("index.neighbour_recall@10", 0.01),
    ("index.delta.ndcg@10", 0.01),
    # a reranked test: its lift may not fall below the baseline's 95% interval
    ("lift.ndcg@10", 0.0),
)
#: the gated figures that are timings or rates: compared only on the baseline's machine
#: (the registry's noisy figures)
NOISY_FIGURES = NOISY
#: the index axis's plain figures, by their name after ``index.``
_INDEX_PLAIN = tuple(f.key.removeprefix("index.") for f in INDEX_FIGURES)


def checked_index_key(key: str, where: str) -> str | None:
    """:func:`index_key`, a bad metric after ``index.delta.`` a :class:`ConfigError` that
    starts with ``where`` (the file and key)."""
    from ..core.exceptions import MetricError

    try:
        return index_key(key)
    except MetricError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def index_key(key: str) -> str | None:
    """``key`` (``index.<name>``) in its one spelling: ``index.qps`` and the other plain
    figures, ``index.neighbour_recall@K`` (K >= 1), ``index.delta.<metric>``; None when it names
    no index figure. A bad metric after ``index.delta.`` raises :class:`MetricError`."""
    name = key.split(".", 1)[1]
    if name in _INDEX_PLAIN:
        return key
    base, _, depth = name.partition("@")
    if base == "neighbour_recall" and depth.isdigit() and int(depth) >= 1:
        return f"index.neighbour_recall@{int(depth)}"
    if name.startswith("delta."):
        return f"index.delta.{parse_metric(name.split('.', 1)[1])}"
    if name.startswith("load.c") and figure(key) is not None:  # index.load.c4.qps
        level, _, which = name.removeprefix("load.c").partition(".")
        return f"index.load.c{int(level)}.{which}"
    return None


def figure_direction(key: str) -> bool:
    """Whether a higher value of gate figure ``key`` is better (rates, neighbour recall, the
    delta against exact) or worse (sizes, times), as the figure registry says."""
    found = figure(key)
    return bool(found is not None and found.higher_is_better)


def _figure_key(key: Any, origin: str) -> str:
    """A gate figure key checked: a storage figure, ``index.<bytes|build_s|qps|p50_ms|
    p95_ms>``, ``index.neighbour_recall@K`` or ``index.delta.<metric>``."""
    from ..core.exceptions import did_you_mean

    text = str(key)
    if text in STORAGE or text in RERANK_GATED:
        return text
    if text.startswith("lift."):
        from ..core.exceptions import MetricError

        try:
            return f"lift.{parse_metric(text.split('.', 1)[1])}"
        except MetricError as exc:
            raise ConfigError(f"{origin}.figures.{text}: {exc}; write e.g. lift.ndcg@10") from None
    if text.startswith("index."):
        found = checked_index_key(text, f"{origin}.figures.{text}")
        if found is not None:
            return found
    if text.startswith("query_load.c") and figure(text) is not None:  # query_load.c4.qps
        level, _, which = text.removeprefix("query_load.c").partition(".")
        return f"query_load.c{int(level)}.{which}"
    known = [*gate_keys(), "index.neighbour_recall@10", "lift.ndcg@10"]
    raise ConfigError(
        f"{origin}.figures: unknown figure {text!r}{did_you_mean(text, known) or '.'} Gate "
        f"figures: {list(STORAGE)}, {[f.key for f in INDEX_FIGURES]}, "
        "index.neighbour_recall@K, index.delta.<metric> (e.g. index.delta.ndcg@10) and "
        "index.load.c<N>.<qps|p50_ms|p95_ms|p99_ms> and query_load.c<N>.<...> (with "
        "--embedbench-concurrency); with "
        f"rerankers=, lift.<metric> (e.g. lift.ndcg@10) and {list(RERANK_GATED)}"
    )


@dataclass(frozen=True)
class FigureRule:
    """One gated figure (``bytes_per_doc``, ``index.neighbour_recall@10`` ...) and how much
    worse than the baseline it may get: ``tolerance`` absolute, or a share of the baseline
    value when ``relative``."""

    key: str
    tolerance: float
    relative: bool

    def allowed(self, baseline_value: float) -> float:
        return self.tolerance * abs(baseline_value) if self.relative else self.tolerance

    def describe(self) -> str:
        return (
            f"{self.tolerance * 100:g}% of the baseline" if self.relative else f"{self.tolerance:g}"
        )


def _default_figures() -> tuple[FigureRule, ...]:
    return tuple(FigureRule(k, *_parse_tolerance(t, "gate")) for k, t in DEFAULT_FIGURES)


def _parse_figures(raw: Any, base: tuple[FigureRule, ...], origin: str) -> tuple[FigureRule, ...]:
    """``figures:``: figure key -> tolerance (``"5%"`` or an absolute ``0.01``), over
    ``base``'s; ``null`` (or ``off``) stops gating that figure."""
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{origin}.figures: {raw!r} must be a mapping of figure to tolerance, e.g. "
            '{bytes_per_doc: "5%", index.neighbour_recall@10: 0.01, docs_per_s: "30%"}'
        )
    rules = {rule.key: rule for rule in base}
    for key, tol in raw.items():
        name = _figure_key(key, origin)
        if tol is None or tol is False or tol == "off":
            rules.pop(name, None)
            continue
        tolerance, relative = _parse_tolerance(tol, f"{origin}.figures.{key}")
        rules[name] = FigureRule(name, tolerance, relative)
    return tuple(rules[k] for k in sorted(rules))


@dataclass(frozen=True)
class GateSettings:
    """Which metrics are gated and how much of a drop is tolerated.

    ``tolerance`` is absolute (``0.01``) or relative to the baseline value (``"2%"``).
    ``inconclusive`` decides what a drop beyond the tolerance that is not significant does:
    ``"warn"`` (the default: the test passes and the terminal says so) or ``"fail"``.
    ``latency_p95_pct`` turns on the latency gate: p95 may not rise more than that percentage
    and more than ``latency_floor_ms`` milliseconds, and the per-query latencies must be
    significantly slower (compared only when the machine matches the baseline's).
    ``figures`` are the storage, indexing and index-axis figures gated against the baseline's
    values (:data:`DEFAULT_FIGURES` unless told otherwise).
    """

    metrics: tuple[str, ...] = ("ndcg@10", "recall@100")
    tolerance: float = 0.01
    relative: bool = False
    inconclusive: str = "warn"
    latency_p95_pct: float | None = None
    latency_floor_ms: float = 2.0
    min_shared: float = 0.5
    figures: tuple[FigureRule, ...] = field(default_factory=_default_figures)

    def allowed_drop(self, baseline_value: float) -> float:
        return self.tolerance * abs(baseline_value) if self.relative else self.tolerance

    def describe_tolerance(self) -> str:
        return (
            f"{self.tolerance * 100:g}% of the baseline" if self.relative else f"{self.tolerance:g}"
        )


def _parse_metrics(raw: Any, origin: str) -> tuple[str, ...]:
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
    return tuple(parsed)


def _parse_tolerance(tol: Any, origin: str) -> tuple[float, bool]:
    """``0.01`` (absolute) or ``"2%"`` (relative): the tolerance and whether it is relative."""
    values: dict[str, Any] = {}
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
    return values["tolerance"], values["relative"]


def _parse_gate_block(block: Mapping[str, Any], base: GateSettings, origin: str) -> GateSettings:
    check_keys(block, _GATE_KEYS, f"{origin}: unknown gate key(s)", "use")
    values: dict[str, Any] = {
        "metrics": base.metrics,
        "tolerance": base.tolerance,
        "relative": base.relative,
        "inconclusive": base.inconclusive,
        "latency_p95_pct": base.latency_p95_pct,
        "latency_floor_ms": base.latency_floor_ms,
        "min_shared": base.min_shared,
        "figures": base.figures,
    }
    if "metrics" in block:
        values["metrics"] = _parse_metrics(block["metrics"], origin)
    if "tolerance" in block:
        values["tolerance"], values["relative"] = _parse_tolerance(block["tolerance"], origin)
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
    if "figures" in block:
        values["figures"] = _parse_figures(block["figures"], base.figures, origin)
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
