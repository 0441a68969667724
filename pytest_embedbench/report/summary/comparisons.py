"""The paired differences of a run, each built once as a :class:`~.values.Delta`: every model
against the reference model (:func:`comparisons`: randomization tests, Holm-adjusted), a gated
test against its baseline entry (:func:`baseline_delta`), and the per-query diffs of both
(:func:`query_diffs`). :func:`versus_delta` and :func:`comparison_entry` read and write a
comparison's JSON form (the report's ``comparisons``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...evaluation.record import TestRecord
from ...records.querydiff import QueryDiff, query_diff
from ...records.resultdata import GateDelta
from .recommend import ModelRow
from .rows import model_rows
from .values import Delta, bootstrap_delta, decided, finite, p_significant

__all__ = [
    "baseline_delta",
    "comparison_entry",
    "comparisons",
    "query_diffs",
    "versus_delta",
]


def comparisons(
    rows: Mapping[str, Sequence[ModelRow]],
    reference: str | None,
    *,
    seed: int,
    n_resamples: int,
) -> dict[str, dict[str, Delta]]:
    """Per dataset, each model's paired nDCG@10 difference to the reference model, a
    :class:`~.values.Delta` built from its :class:`~pytest_embedbench.stats.Comparison`.

    Randomization-test p-values, Holm-adjusted across the models of one dataset; each delta's
    ``significant`` is :meth:`Comparison.significant
    <pytest_embedbench.stats.Comparison.significant>`.
    """
    out: dict[str, dict[str, Delta]] = {}
    if reference is None:
        return out
    for dataset, found in rows.items():
        ref = next((r for r in found if r.model == reference and r.result), None)
        if ref is None or ref.result is None or not ref.result.scores("ndcg@10"):
            continue  # no reference here, or a run without k=10
        out[dataset] = _compare_with(ref, found, reference, seed, n_resamples)
    return out


def _compare_with(
    ref: ModelRow, rows: Sequence[ModelRow], reference: str, seed: int, n_resamples: int
) -> dict[str, Delta]:
    from ...evaluation.stats import compare_scores, holm

    assert ref.result is not None
    ref_scores = ref.result.scores("ndcg@10")
    found = []
    for row in rows:
        if row is ref or row.result is None:
            continue
        scores = row.result.scores("ndcg@10")
        shared = sorted(set(scores) & set(ref_scores))
        if not shared:
            continue
        comparison = compare_scores(
            [scores[q] for q in shared],
            [ref_scores[q] for q in shared],
            test="randomization",
            seed=seed,
            n_resamples=n_resamples,
            name=f"ndcg@10 {row.model} - {reference}",
            # a dataset in several languages: the macro averages' difference, resampled
            # within each language
            strata=row.result.strata(shared),
        )
        found.append((row.model, comparison))
    adjusted = holm([c.p_value for _, c in found])
    out: dict[str, Delta] = {}
    for (model, comparison), p_holm in zip(found, adjusted, strict=True):
        comparison.p_holm = p_holm
        out[model] = decided(
            float(comparison),
            comparison.low,
            comparison.high,
            significant=bool(comparison.significant()),
            n=comparison.n,
            p_value=finite(comparison.p_value),
            p_holm=finite(p_holm),
            test=comparison.test,
            against=reference,
            metric="ndcg@10",
        )
    return out


def baseline_delta(entry: GateDelta | None, metric: str = "ndcg@10") -> Delta | None:
    """A gate's difference entry (of ``metric``) as a :class:`~.values.Delta`: its
    significance is the gate's (the paired bootstrap interval excludes 0; an entry without the
    flag is decided by that rule here)."""
    if entry is None:
        return None
    return bootstrap_delta(
        entry.difference,
        entry.low,
        entry.high,
        n=entry.shared_queries,
        against="baseline",
        metric=metric,
        significant=entry.significant,
        regressed=bool(entry.regressed),
        inconclusive=bool(entry.inconclusive),
    )


def versus_delta(entry: Delta | Mapping[str, Any] | None) -> Delta | None:
    """A paired comparison: a :class:`~.values.Delta` of :func:`comparisons` as it is, or its
    JSON form (:func:`comparison_entry`, a saved report's ``comparisons``) read back; an entry
    of an older report, without ``significant``, is decided by Comparison.significant itself."""
    if isinstance(entry, Delta):
        return entry
    if not entry:
        return None
    p_value, p_holm = finite(entry.get("p_value")), finite(entry.get("p_holm"))
    significant = entry.get("significant")
    if significant is None:
        significant = p_significant(p_value, p_holm)
    return decided(
        entry.get("difference"),
        entry.get("low"),
        entry.get("high"),
        significant=bool(significant),
        n=entry.get("n"),
        p_value=p_value,
        p_holm=p_holm,
        test=str(entry.get("test") or ""),
        against=str(entry.get("reference") or ""),
        metric=str(entry.get("metric") or "ndcg@10"),
    )


def comparison_entry(delta: Delta) -> dict[str, Any]:
    """A paired comparison as the JSON report's ``comparisons`` keep it."""
    return {
        "difference": delta.difference,
        "low": delta.low,
        "high": delta.high,
        "n": delta.n,
        "p_value": delta.p_value,
        "p_holm": delta.p_holm,
        "test": delta.test,
        "reference": delta.against,
        "metric": delta.metric,
        "significant": delta.significant,
    }


def query_diffs(records: Sequence[TestRecord], reference: str | None) -> tuple[QueryDiff, ...]:
    """Per dataset, each gated test's queries against its baseline entry (the diff the gate
    computed, kept in the record) and each model's against the ``reference`` model on
    nDCG@10 (the metric of the paired comparisons), computed here."""
    out: list[QueryDiff] = []
    for record in records:
        if record.baseline is not None and record.baseline.queries is not None:
            out.append(record.baseline.queries)
    if reference is not None:
        for dataset, rows in model_rows(records).items():
            ref = next((r for r in rows if r.model == reference and r.result), None)
            if ref is None:
                continue
            for row in rows:
                if row is ref or row.result is None:
                    continue
                nodeid = next((r.nodeid for r in records if r.result is row.result), row.model)
                diff = query_diff(
                    row.result,
                    ref.result,
                    metric="ndcg@10",
                    against=reference,
                    nodeid=nodeid,
                    dataset=dataset,
                    model=row.model,
                )
                if diff is not None:
                    out.append(diff)
    return tuple(sorted(out, key=lambda d: (d.dataset, not d.against_baseline, d.nodeid, d.model)))
