"""The lines a run prints under its tables: what the user should know about the baseline,
ending with what to do next (:func:`baseline_notices`, with the entries whose test is gone:
:func:`orphaned_entries`), and a warning when the machine was busy while queries were timed
(:func:`busy_notes`), the weight a hybrid tuned with the queries it was tuned on
(:func:`fusion_notes`), and where the judgments have holes (:func:`judged_notes`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...evaluation.record import TestRecord, as_record
from ...records.figures import JUDGED, JUDGED_FLOOR
from ...records.resultdata import ResultData
from .indexes import function_id
from .rows import timed
from .state import RunState

__all__ = [
    "baseline_notices",
    "busy_notes",
    "fusion_notes",
    "judge_notes",
    "judged_notes",
    "orphaned_entries",
]


def baseline_notices(
    session: RunState, records: Sequence[TestRecord], orphans: Sequence[str]
) -> list[str]:
    """What the user should know about the baseline, ending with what to do next."""
    # a test the gate did not see (no baseline outcome) has nothing to say here
    outcomes = [
        (r.nodeid, r.baseline) for r in records if r.result is not None and r.baseline is not None
    ]
    lines: list[str] = []
    for nodeid, outcome in outcomes:  # changed inputs are always worth a line
        if outcome.changes and outcome.status != "missing":
            if outcome.failures:  # its failure says what changed: once is enough
                lines.append(
                    f"{nodeid}: gated against a baseline of other inputs; what changed is in "
                    "its failure above"
                )
                continue
            lines.append(
                f"{nodeid}: compared with a baseline of other inputs: " + "; ".join(outcome.changes)
            )
    for nodeid, outcome in outcomes:
        lines.extend(f"{nodeid}: {w} (a warning: the test passed)" for w in outcome.warnings)
    missing = [o for _, o in outcomes if o.status == "missing"]
    if session.options.update_baseline is None and missing:
        lines.append(_missing_line(len(missing), session.baseline.path))
    lines.extend(sorted({n for _, o in outcomes for n in o.notes}))
    if orphans:
        lines.append(
            f"{len(orphans)} baseline entr{'y belongs' if len(orphans) == 1 else 'ies belong'}"
            " to tests that no longer exist: "
            + ", ".join(orphans[:10])
            + (" ..." if len(orphans) > 10 else "")
        )
    return lines


def _missing_line(count: int, path: Any) -> str:
    them = "them" if count != 1 else "it"
    looked = (
        f"no entry for {them} in {path}"
        if path.is_file()
        else f"looked for {path}, which does not exist"
    )
    return (
        f"{count} test{'s have' if count != 1 else ' has'} no baseline ({looked}); re-run with "
        f"--embedbench-update-baseline to record {them}"
    )


def orphaned_entries(session: RunState) -> list[str]:
    """Baseline entries whose test function is gone: its file is missing, or the file was
    collected without that function.

    Parametrisation is ignored: an entry of a model left out by ``--embedbench-models``
    (or of a test deselected by ``-k``/``-m``) still has its function, so it is no orphan.
    """
    collected = {function_id(session.baseline_key(nodeid)) for nodeid in session.collected}
    files = {key.split("::", 1)[0] for key in collected}
    orphans = []
    for key in sorted(session.baseline.entries):
        path = key.split("::", 1)[0]
        if not (session.project_dir / path).exists():
            orphans.append(key)
        elif path in files and function_id(key) not in collected:
            orphans.append(key)
    return orphans


def busy_notes(records: Iterable[TestRecord | Mapping[str, Any]]) -> list[str]:
    """A warning when other processes kept the CPUs busy while queries were timed; none for a
    result that timed no query (``--embedbench-latency-passes 0``: it has no latency to doubt,
    its load covers the scored pass only)."""
    busy: dict[str, Mapping[str, Any]] = {}
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        result = record.result or ResultData()
        if timed(result.latency) is None:
            continue  # nothing was timed
        load = result.environment.get("load") or {}
        if load.get("busy"):
            busy.setdefault(record.model, load)
    if not busy:
        return []
    worst = max(busy.values(), key=lambda load: load.get("others_cpus") or 0.0)
    detail = []
    if worst.get("others_cpus") is not None:
        detail.append(
            f"other processes kept {worst['others_cpus']:.1f} of {worst['cpus']} CPUs busy"
        )
    if worst.get("loadavg_before"):
        detail.append(f"load average {worst['loadavg_before'][0]:.1f}")
    return [
        f"embedbench: the machine was busy while the queries of {', '.join(sorted(busy))} were "
        f"timed ({'; '.join(detail)}): their latencies are unreliable. For stable timings run "
        "on an idle machine with OMP_NUM_THREADS set and one pytest worker (docs/caching-and-"
        "timings.md, 'Stable timings')."
    ]


def fusion_notes(records: Iterable[TestRecord | Mapping[str, Any]]) -> list[str]:
    """One line per hybrid whose fusion weight was tuned: the weight, where it was tuned, its
    score there, and that the figures beside it were scored on the other queries only."""
    lines = []
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        result = record.result or ResultData()
        fusion = result.model_info.get("fusion")
        if not isinstance(fusion, Mapping) or not isinstance(fusion.get("tuned"), Mapping):
            continue
        tuned = fusion["tuned"]
        weights = tuned.get("weights") or []
        how = fusion.get("fusion", "fusion")
        if how == "convex":
            how = f"convex fusion ({fusion.get('norm', 'minmax')})"
        lines.append(
            f"{record.nodeid}: {how} weights {_weights(weights)} tuned on {tuned.get('on')} "
            f"({tuned.get('metric')} {_number(tuned.get('score'))} there); its figures are "
            f"scored on the {tuned.get('held_out_queries')} other queries only"
        )
    return lines


def _weights(weights: Sequence[Any]) -> str:
    return "/".join(_number(w) for w in weights) or "?"


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) else "?"


def judged_notes(datasets: Iterable[Any]) -> list[str]:
    """A line per dataset (a :class:`~.datasets.DatasetSummary`) where a model's judged@10 is
    below :data:`~pytest_embedbench.records.figures.JUDGED_FLOOR`: its metrics count every
    unjudged document as not relevant, so they may understate a model that finds relevant
    documents nobody judged."""
    lines = []
    for dataset in datasets:
        if not dataset.holes:
            continue
        shares = []
        for model in dataset.models:
            value = model.figures.get(JUDGED.key)
            if model.model in dataset.holes and value is not None and value.value is not None:
                shares.append(f"{model.model} {JUDGED.text(value.value)}")
        lines.append(
            f"dataset {dataset.name!r}: {JUDGED.key} is below {JUDGED_FLOOR:g} "
            f"({', '.join(shares)}): the qrels judge too little of the top 10, and every "
            "unjudged document counts as not relevant, so the metrics may understate "
            "unjudged but relevant results; condensed_ndcg@10 scores the judged documents "
            "alone, and an LLM judge (--embedbench-judge) can grade the rest"
        )
    return lines


def _share(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "?"


def _kappa_text(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "undefined"


def judge_notes(records: Iterable[TestRecord | Mapping[str, Any]]) -> list[str]:
    """What the LLM judge added to each test, in one line: judged@k before and after, nDCG@10
    on the human grades beside nDCG@10 on human + LLM grades (with the number of LLM grades),
    the agreement on the human pairs (and whether it is too low to trust), the requests per
    query, what was replayed, the cost (or that no price is set), the failures with the
    server's words, and why the judge stopped when it did (the official metrics stand)."""
    lines = []
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        judge = (record.result or ResultData()).judge
        if judge is None:
            continue
        official = (record.result or ResultData()).metrics.get("ndcg@10")
        filled = judge.metrics.get("ndcg@10")
        agree = judge.agreement
        parts = [
            f"judged@{judge.depth} {_share(judge.judged_before)} -> {_share(judge.judged_after)}",
        ]
        if official is not None and filled is not None:
            parts.append(
                f"ndcg@10 {_share(official.value)} (human) / {_share(filled.value)} (human + "
                f"{judge.llm_grades} LLM grades)"
            )
        # the confusion counts, human grade / judge grade: "0/0 x3, 1/2 x1"
        confusion = ", ".join(
            f"{key.replace('human ', '').replace(' / judge ', '/')} x{count}"
            for key, count in agree.confusion.items()
        )
        parts.append(
            f"kappa {_kappa_text(agree.kappa_binary)} binary, "
            f"{_kappa_text(agree.kappa_graded)} graded on {agree.pairs} human pairs"
            + (f" (human/judge grades: {confusion})" if confusion else "")
            + (": low agreement, do not trust these grades on this data" if agree.low else "")
        )
        if judge.cost_usd is not None:
            cost = f"cost ${judge.cost_usd:.4f} ({judge.tokens} tokens)"
        else:  # no price: the tokens are known, what they cost is not
            cost = (
                f"cost unknown ({judge.tokens} tokens; no price set: judge: "
                "{price_per_1m_tokens: USD})"
            )
        parts.append(
            f"{judge.requests} requests ({_share(judge.requests_per_query)} per query), "
            f"{judge.replayed} verdicts replayed from {judge.file}, {cost}"
        )
        if judge.failures:
            said = "; ".join(f"{k!r} x{v}" for k, v in judge.server_errors.items())
            answers = "; ".join(repr(a) for a in judge.no_grade_answers)
            parts.append(
                "not graded: "
                + ", ".join(f"{n} {reason}" for reason, n in judge.failures.items())
                + (f" (the server said: {said})" if said else "")
                + (f" (answers without a grade: {answers})" if answers else "")
            )
        if judge.ungraded:
            parts.append(
                f"{judge.ungraded} pairs without a grade in the judgments file (an answer "
                "without one, a refusal): counted unjudged, not asked again (delete their '-' "
                "lines to ask again)"
            )
        if judge.error:
            parts.append(
                f"the judge stopped: {judge.error}; the official metrics stand, and the "
                f"{judge.asked} verdicts it gave were kept"
            )
        lines.append(f"{record.nodeid}: LLM judge {judge.model}: " + "; ".join(parts))
    return lines
