"""The gate: one test's per-query scores against its baseline entry (paired bootstrap),
and its latencies against the baseline's (Mann-Whitney U)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.io import missing
from ..evaluation.record import TestRecord, as_record
from ..records.figures import figure
from ..records.querydiff import QueryDiff, failure_lines, query_diff, query_label
from ..records.resultdata import GateDelta, GateOutcome, GateStatus, MetricData, ResultData
from .settings import (
    DEFAULT_FIGURES,
    GATE_ALPHA,
    NOISY_FIGURES,
    FigureRule,
    GateSettings,
    figure_direction,
)
from .store import (
    _PRECISION,
    BaselineEntry,
    as_entry,
    index_figures,
    query_load_figures,
    rerank_figures,
)

__all__ = ["GateOutcome", "GateStatus", "gate"]


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


#: where a record's settings keep one setting: the options the user gave (``options.k1``),
#: and what the loaded provider applied (``applied.options.k1``, ``applied.settings.k1``, the
#: effective value with the provider's default). Preferred first when the values are shown.
_SETTING_PLACES = ("applied.settings.", "applied.options.", "applied.", "options.")


def _setting_name(key: str) -> tuple[str, int]:
    """The setting a flattened key holds (``applied.settings.k1`` -> ``k1``: the name the user
    writes in ``ModelSpec("bm25", k1=1.2)``) and the rank of its place in
    :data:`_SETTING_PLACES` (the keys outside them, ``spec`` and ``k``, come last)."""
    for rank, place in enumerate(_SETTING_PLACES):
        if key.startswith(place):
            return key.removeprefix(place), rank
    return key, len(_SETTING_PLACES)


def _settings_changed(
    old: Mapping[str, Any], new: Mapping[str, Any], *, spec_changed: bool = False
) -> list[str]:
    """Each changed setting once, by the name the user writes, with its effective values:
    ``k1 1.5 -> 1.2`` rather than ``applied.options.k1 'unset' -> 1.2``,
    ``applied.settings.k1 1.5 -> 1.2`` and ``options.k1 'unset' -> 1.2`` for one change. Of
    the places that hold a setting, the one with values on both sides wins (the provider's
    applied value shows the default a new option replaced), then the order of
    :data:`_SETTING_PLACES`. With ``spec_changed`` (its own line names the new spec), the
    spec, provider and model, and the settings only one of the two providers has, are left
    out: only a setting both had and changed is named."""
    leave_out = {"spec", "provider", "model"} if spec_changed else set()
    a, b = _flatten(old), _flatten(new)
    found: dict[str, tuple[int, int, Any, Any]] = {}
    for key in set(a) | set(b):
        before, after = a.get(key, "unset"), b.get(key, "unset")
        if before == after:
            continue
        name, rank = _setting_name(key)
        if name in leave_out or (spec_changed and "unset" in (before, after)):
            continue  # a setting of one provider only: the new spec says it
        candidate = ((before == "unset") + (after == "unset"), rank, before, after)
        if name not in found or candidate[:2] < found[name][:2]:
            found[name] = candidate
    return [f"{name} {v[2]!r} -> {v[3]!r}" for name, v in sorted(found.items())]


def _changes(record: TestRecord, entry: BaselineEntry) -> list[str]:
    """What differs between the baseline's inputs and this run's, naming each change."""
    result = record.result or ResultData()
    changes = []
    if entry.dataset_fingerprint != result.dataset_fingerprint:
        old_parts, new_parts = entry.dataset_parts, record.dataset_parts
        detail = _what_changed(old_parts, new_parts) if old_parts and new_parts else []
        changes.append(
            "the dataset changed: " + "; ".join(detail)
            if detail
            else "the dataset changed (fingerprint "
            f"{str(entry.dataset_fingerprint)[:12]} -> "
            f"{result.dataset_fingerprint[:12]}); re-record to see which part"
        )
    spec_changed = entry.spec != record.spec
    if entry.settings_fingerprint != record.settings_fingerprint:
        old_settings, new_settings = entry.settings, record.settings
        detail = (
            _settings_changed(old_settings, new_settings, spec_changed=spec_changed)
            if old_settings and new_settings
            else []
        )
        if detail:
            changes.append("the settings changed: " + "; ".join(detail))
        elif not (spec_changed and old_settings and new_settings):
            changes.append(
                f"the settings changed (fingerprint {entry.settings_fingerprint} -> "
                f"{record.settings_fingerprint}); re-record to see which"
            )
    revision = result.model_info.get("revision")
    if entry.model_revision != revision:
        changes.append(f"the model revision changed ({entry.model_revision!r} -> {revision!r})")
    if spec_changed:
        changes.append(f"the model spec changed ({entry.spec!r} -> {record.spec!r})")
    base_index = entry.index
    if result.index is not None and base_index is not None and base_index.spec != result.index.spec:
        changes.append(f"the index changed ({base_index.spec!r} -> {result.index.spec!r})")
    base_rerank = entry.rerank
    if result.rerank is not None and base_rerank is not None:
        if base_rerank.spec != result.rerank.spec:
            changes.append(f"the reranker changed ({base_rerank.spec!r} -> {result.rerank.spec!r})")
    return changes


def _query_label(query_id: str, texts: Mapping[str, str] | None, width: int = 50) -> str:
    """``q07 "where is the invoice"``: the id with its text, cut to ``width`` characters."""
    return query_label(query_id, (texts or {}).get(query_id), width)


def gate(
    record: TestRecord | Mapping[str, Any],
    entry: BaselineEntry | Mapping[str, Any] | None,
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
    each named query's text beside its id. ``entry`` may be given as the file's mapping.
    """
    if entry is None:
        return GateOutcome(GateStatus.MISSING)
    record, entry = as_record(record), as_entry(entry)
    outcome = GateOutcome(GateStatus.PASSED)
    outcome.changes.extend(_changes(record, entry))
    result = record.result or ResultData()
    current_pq = result.per_query or {}
    base_pq = entry.per_query
    changed = f"; {'; '.join(outcome.changes)}" if outcome.changes else ""
    for metric in settings.metrics:
        base = base_pq.get(metric)
        current = current_pq.get(metric)
        if base is None or current is None:
            outcome.notes.append(f"{metric}: not in the baseline entry; not gated")
            continue
        shared = sorted(set(base) & set(current))
        if len(shared) < settings.min_shared * len(base):
            outcome.status = GateStatus.STALE
            outcome.failures.append(
                f"the baseline of {record.nodeid} is stale: only {len(shared)} of its "
                f"{len(base)} queries remain{changed}. Re-record it with "
                "--embedbench-update-baseline"
            )
            return outcome
        # the baseline keeps 6 decimals: compare the current run at the same precision
        pairs = _Pairs(metric, shared, current, base, result.strata(shared))
        _metric_gate(pairs, settings, outcome, seed, n_resamples)
        diff = query_diff(
            result,
            entry,
            metric=metric,
            against="baseline",
            nodeid=record.nodeid,
            dataset=record.dataset,
            model=record.model,
            precision=_PRECISION,
            query_texts=query_texts,
        )
        if outcome.queries is None and diff is not None:
            outcome.queries = diff
        if outcome.deltas[metric].regressed or outcome.deltas[metric].inconclusive:
            _report_drop(pairs, settings, outcome, query_texts, diff)
    if settings.latency_p95_pct is not None:
        _latency_gate(record, entry, settings, outcome)
    if entry.figures is None and any("." not in rule.key for rule in settings.figures):
        outcome.notes.append(
            "storage gate: the baseline entry has no storage figures (recorded by an older "
            "version); re-record it with --embedbench-update-baseline to gate them"
        )
    for rule in settings.figures:
        _figure_gate(rule, record, entry, outcome)
    if outcome.failures and outcome.changes:  # once for the test, not once per metric
        outcome.failures.append(
            f"compared with a baseline of other inputs: {'; '.join(outcome.changes)}"
        )
    return outcome


@dataclass
class _Pairs:
    """One metric's per-query scores of the shared queries, current and baseline."""

    metric: str
    shared: list[str]
    current: list[float]
    old: list[float]
    #: each shared query's language (None: a dataset in one language)
    strata: list[str] | None

    def __init__(
        self,
        metric: str,
        shared: list[str],
        current: Mapping[str, Any],
        base: Mapping[str, Any],
        strata: list[str] | None = None,
    ) -> None:
        self.metric = metric
        self.shared = shared
        self.strata = strata
        self.current = [round(float(current[q]), _PRECISION) for q in shared]
        self.old = [float(base[q]) for q in shared]


def _metric_gate(
    pairs: _Pairs, settings: GateSettings, outcome: GateOutcome, seed: int, n_resamples: int
) -> None:
    """The paired bootstrap of one metric: its Δ figures go into ``outcome.deltas``.

    On a dataset in several languages (``pairs.strata``) the means are macro averages over
    the languages and the bootstrap resamples within each language (DESIGN: stratified by
    subset); the smallest detectable drop is read from the differences weighted as the macro
    average weighs them."""
    from ..evaluation.stats import (
        excludes_zero,
        macro_mean,
        macro_weighted,
        minimum_detectable_effect,
        paired_bootstrap,
    )

    cur, old, strata = pairs.current, pairs.old, pairs.strata
    diff = paired_bootstrap(
        cur,
        old,
        seed=seed,
        n_resamples=n_resamples,
        name=pairs.metric,
        strata=strata,
        macro=strata is not None,
    )
    if strata is None:
        base_mean, current_mean, spread = sum(old) / len(old), sum(cur) / len(cur), diff.per_query
    else:
        base_mean, current_mean = macro_mean(old, strata), macro_mean(cur, strata)
        spread = macro_weighted(diff.per_query, strata)
    material = -float(diff) > settings.allowed_drop(base_mean)
    regressed = diff.high < 0 and material
    outcome.deltas[pairs.metric] = GateDelta(
        baseline=base_mean,
        current=current_mean,
        difference=float(diff),
        low=diff.low,
        high=diff.high,
        shared_queries=len(pairs.shared),
        significant=excludes_zero(diff.low, diff.high),
        regressed=bool(regressed),
        inconclusive=bool(material and not regressed),
        minimum_detectable=minimum_detectable_effect(spread, alpha=GATE_ALPHA),
    )


def _signed(change: float) -> str:
    """A per-query change as the gate shows it: three decimals, more for a change they would
    show as 0.000."""
    return f"{change:+.3f}" if abs(change) >= 0.0005 else f"{change:+.1e}"


def _lost_most(pairs: _Pairs, query_texts: Mapping[str, str] | None, count: int = 3) -> str:
    """``; lost most: q07 "..." (-1.000), ...``: the ``count`` queries that lost the most,
    only queries whose score fell (empty when none did)."""
    losses = sorted(
        (c - o, q) for q, c, o in zip(pairs.shared, pairs.current, pairs.old, strict=True) if c < o
    )[:count]
    if not losses:
        return ""
    return "; lost most: " + ", ".join(
        f"{_query_label(q, query_texts)} ({_signed(x)})" for x, q in losses
    )


def _report_drop(
    pairs: _Pairs,
    settings: GateSettings,
    outcome: GateOutcome,
    query_texts: Mapping[str, str] | None,
    diff: QueryDiff | None = None,
) -> None:
    """The failure or warning line of a material drop (regressed or inconclusive). What
    changed in the inputs is not repeated here: :func:`gate` adds it once for the test.

    A failure lists, on the lines under it, the per-query counts and the most degraded queries
    with what they lost (``diff``: the :class:`~..report.querydiff.QueryDiff` of this metric);
    a warning, which passes, names the queries that lost most on its one line."""
    metric, d = pairs.metric, outcome.deltas[pairs.metric]
    n = len(pairs.shared)
    lost = _lost_most(pairs, query_texts)
    block = "".join(f"\n    {line}" for line in failure_lines(diff)) if diff is not None else ""
    figures = (
        f"baseline {d.baseline:.4f}, current {d.current:.4f}, difference "
        f"{d.difference:+.4f} [{d.low:+.4f}, {d.high:+.4f}] (95% paired bootstrap over "
        f"{n} shared queries; tolerance {settings.describe_tolerance()})"
    )
    if d.regressed:
        outcome.status = GateStatus.REGRESSED
        outcome.failures.append(f"{metric} regressed: {figures}{block or lost}")
        return
    line = (
        f"{metric} inconclusive: {figures}: the drop is beyond the tolerance but not "
        f"significant; the smallest drop these {n} queries can detect is about "
        f"{d.minimum_detectable:.4f} (80% power, alpha {GATE_ALPHA:g}){lost}. Add queries "
        "to the eval set, or re-record the baseline with --embedbench-update-baseline if the "
        "change is intended"
    )
    if outcome.status is GateStatus.PASSED:
        outcome.status = GateStatus.INCONCLUSIVE
    if settings.inconclusive == "fail":
        outcome.failures.append(line + " (gate: inconclusive: fail)" + block)
    else:
        outcome.warnings.append(line)


def _figure_values(
    key: str, result: ResultData, entry: BaselineEntry
) -> tuple[Any, Any, str | None]:
    """A gate figure's baseline and current values, or why it is not compared."""
    if key.startswith(("lift.", "rerank.")):
        if result.rerank is None:
            return None, None, ""  # no reranker: nothing to say
        if entry.rerank is None:
            return None, None, "the baseline entry has no reranking figures"
        base = entry.rerank.lift.get(key.removeprefix("lift."))
        if key.startswith("rerank."):
            base = getattr(entry.rerank, key.removeprefix("rerank."), None)
        return base, rerank_figures(result).get(key), None
    if key.startswith("query_load."):
        if not result.query_load:
            return None, None, ""  # no query embedding under load: nothing to say
        return (entry.figures or {}).get(key), query_load_figures(result).get(key), None
    if not key.startswith("index."):
        if entry.figures is None:
            return None, None, ""  # said once for the test
        return entry.figures.get(key), result.storage.get(key), None
    if result.index is None:
        return None, None, ""  # no index axis: nothing to say
    if entry.index is None:
        return None, None, "the baseline entry has no index figures"
    name = key.removeprefix("index.")
    return entry.index.figures.get(name), index_figures(result).get(name), None


def _figure_gate(
    rule: FigureRule, record: TestRecord, entry: BaselineEntry, outcome: GateOutcome
) -> None:
    """One storage, indexing or index-axis figure against the baseline's value: worse by more
    than the rule's tolerance is a regression (sizes and times may not grow, rates, neighbour
    recall and the delta against exact may not fall). Timings and rates (``docs_per_s``,
    ``index.qps`` ...) are compared only on the baseline's machine."""
    key = rule.key
    base, current, why = _figure_values(key, record.result or ResultData(), entry)
    if why == "":
        return
    if isinstance(base, MetricData):  # a lift: its value against the baseline's interval
        _lift_gate(rule, base, current, outcome)
        return
    if why is None and missing(base) and missing(current):
        if rule.key not in dict(DEFAULT_FIGURES):  # named by the user: say it did nothing
            outcome.notes.append(
                f"{key} gate skipped: measured in neither this run nor the "
                "baseline (a cut-off the test lacks, or a model without it)"
            )
        return  # a default measured in neither (a lexical model's cache_mb): nothing to say
    if why is None and (missing(base) or missing(current)):
        why = "not measured in " + ("the baseline" if missing(base) else "this run")
    found = figure(key)
    if why is None and (key in NOISY_FIGURES or (found is not None and found.noisy)):
        if entry.machine_fingerprint != record.machine_fingerprint:
            why = "this machine differs from the baseline's"
    if why is not None:
        outcome.notes.append(f"{key} gate skipped: {why}")
        return
    base, current = float(base), float(current)
    higher = figure_direction(key)
    worse = (base - current) if higher else (current - base)
    regressed = worse > rule.allowed(base) + 1e-12
    outcome.deltas[key] = GateDelta(baseline=base, current=current, regressed=regressed)
    if not regressed:
        return
    outcome.status = GateStatus.REGRESSED
    change = current - base
    pct = f", {change / abs(base):+.1%}" if base else ""
    way = "fell" if higher else "grew"
    outcome.failures.append(
        f"{key} regressed: baseline {_figure_text(base)}, current {_figure_text(current)} "
        f"({change:+.4g}{pct}): it {way} by more than the tolerance {rule.describe()} "
        f"({'higher' if higher else 'lower'} is better). Fix the cause, or if the change is "
        f"intended re-record the baseline with --embedbench-update-baseline, or set "
        f"gate: figures: {{{key}: ...}} in embedbench.yaml (null stops gating it)"
    )


def _lift_gate(rule: FigureRule, base: MetricData, current: Any, outcome: GateOutcome) -> None:
    """``lift.<metric>``: the reranker's lift over its first stage may not fall below the 95%
    paired interval the baseline recorded for it (minus the rule's tolerance): a lift that
    dropped out of what the baseline's queries could tell apart from its value regressed,
    as a metric's significant drop does."""
    key = rule.key
    value, low = _finite_value(base.value), _finite_value(base.low)
    if value is None or low is None or missing(current):
        what = "the baseline" if value is None or low is None else "this run"
        outcome.notes.append(f"{key} gate skipped: not measured in {what}")
        return
    current = float(current)
    floor = low - rule.allowed(value)
    regressed = current < floor - 1e-12
    outcome.deltas[key] = GateDelta(
        baseline=value,
        current=current,
        difference=current - value,
        regressed=regressed,
    )
    if not regressed:
        return
    outcome.status = GateStatus.REGRESSED
    high = _finite_value(base.high)
    interval = f"[{low:+.4f}, {high:+.4f}]" if high is not None else f"low {low:+.4f}"
    slack = f" minus the tolerance {rule.describe()}" if rule.tolerance else ""
    outcome.failures.append(
        f"{key} regressed: the reranker's lift over its first stage is {current:+.4f}, below "
        f"the baseline's {value:+.4f} {interval} (its 95% paired interval{slack}). Fix the "
        "reranker or its depth, or if the change is intended re-record the baseline with "
        f"--embedbench-update-baseline, or set gate: figures: {{{key}: ...}} in "
        "embedbench.yaml (null stops gating it)"
    )


def _finite_value(value: Any) -> float | None:
    return None if missing(value) else float(value)


def _figure_text(value: float) -> str:
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.6g}"


def _not_timed(p95: Any) -> bool:
    return isinstance(p95, float) and math.isnan(p95)


def _latency_gate(
    record: TestRecord,
    entry: BaselineEntry,
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
    base_lat = entry.latency
    cur_lat = (record.result or ResultData()).latency
    base_p95, cur_p95 = base_lat.p95_ms, cur_lat.p95_ms
    if base_p95 is None or cur_p95 is None or _not_timed(base_p95) or _not_timed(cur_p95):
        outcome.notes.append(
            "latency gate: no p95 to compare (a run with latency_passes=0 times no query)"
        )
        return
    if entry.machine_fingerprint != record.machine_fingerprint:
        outcome.notes.append("latency gate skipped: this machine differs from the baseline's")
        return
    pct, floor = settings.latency_p95_pct or 0.0, settings.latency_floor_ms
    rise = cur_p95 - base_p95
    material = cur_p95 > base_p95 * (1 + pct / 100.0) and rise > floor
    base_ms = _latency_values(base_lat.per_query_ms)
    cur_ms = _latency_values(cur_lat.per_query_ms)
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
    outcome.deltas["latency.p95_ms"] = GateDelta(
        baseline=base_p95,
        current=cur_p95,
        p_value=p_value,
        regressed=bool(material and significant),
    )
    if material and significant:
        outcome.status = GateStatus.REGRESSED
        outcome.failures.append(
            f"latency.p95_ms regressed: baseline {base_p95:.2f} ms, current {cur_p95:.2f} ms, "
            f"more than {pct:g}% and {floor:g} ms slower ({test})"
        )


def _latency_values(per_query_ms: Any) -> list[float]:
    """The per-query latencies of a result or entry: by query id (the timed sample) or, as
    older versions recorded them, a list in query order; empty when there are none."""
    if isinstance(per_query_ms, Mapping):
        return [float(v) for v in per_query_ms.values()]
    return [float(v) for v in per_query_ms or ()]
