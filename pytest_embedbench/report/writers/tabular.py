"""The CSV files of a run, formatted from its :class:`~..summary.Summary`.

``results.csv`` (a row per test, every figure) and ``queries.csv`` (a row per model and query)
read the summary's records, the JSON report's ``tests``; ``stress.csv``, ``cutoffs.csv`` and
``gates.csv`` the summary's stress points, cut-off levels and gate outcomes, with the figures the
terminal shows; ``cutoff_scores.csv`` the held-out score histograms the cut-offs are cut from
(the HTML report's cut-off pictures, a row per model and bin, with the summary's shares). Each
file has its header even without rows, and every cell goes through :func:`csv_cell`. A saved
JSON report gives the same files as the run itself (``embedbench report r.json --csv out``).
``results.csv``'s figure columns are the figure registry's
(:data:`~pytest_embedbench.records.figures.FIGURES`), as the Markdown's (:mod:`.markdown`) and
the HTML report's resource tables are, so adding a figure touches one place. Usage::

    summary = Summary.from_json(report)
    write_csv(Path("out"), summary)              # results, queries, stress, cutoffs, ..., gates
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.io import atomic_write_text
from ...core.redaction import _secret_env_values, redact
from ...core.text import inert
from ...evaluation.record import TestRecord
from ...records.figures import FIGURES
from ..summary import Summary, summary_of
from ..summary.columns import metric_names
from ..summary.cutoffs import score_bins
from ..summary.stress import ChunkPoint, NoisePoint
from ..summary.values import Value
from .index_tables import (
    index_columns,
    index_csv_rows,
    load_columns,
    load_csv_rows,
    query_load_columns,
    query_load_csv_rows,
)
from .language_tables import language_columns, language_csv_rows
from .stage_tables import (
    stage_columns,
    stage_csv_rows,
    stage_query_columns,
    stage_query_rows,
)

__all__ = [
    "CSV_FILES",
    "INDEX_CSV",
    "JUDGE_CSV",
    "LOAD_CSV",
    "QUERY_LOAD_CSV",
    "STAGE_CSV",
    "STAGE_QUERY_CSV",
    "csv_cell",
    "cutoff_columns",
    "cutoff_csv_rows",
    "gate_columns",
    "gate_csv_rows",
    "judge_columns",
    "judge_csv_rows",
    "query_columns",
    "query_rows",
    "result_columns",
    "result_rows",
    "score_columns",
    "score_csv_rows",
    "stress_columns",
    "stress_csv_rows",
    "write_csv",
]

#: written beside :data:`CSV_FILES` when a test had an index axis (``indexes=``)
INDEX_CSV = "indexes.csv"
#: written beside :data:`CSV_FILES` when a dataset had several languages (``languages:``)
LANGUAGE_CSV = "languages.csv"
#: written beside :data:`CSV_FILES` when a test had a reranking axis (``rerankers=``): a row
#: per reranked test and metric, and the queries each reranker hurt most
STAGE_CSV = "stages.csv"
STAGE_QUERY_CSV = "stage_queries.csv"
#: written beside :data:`CSV_FILES` when a test had an LLM judge (``--embedbench-judge``)
JUDGE_CSV = "judge.csv"
#: written beside it when the index axis ran under load (``--embedbench-concurrency``)
LOAD_CSV = "index_load.csv"
#: written when a provider's query embedding ran under load (a loopback server)
QUERY_LOAD_CSV = "query_load.csv"
#: the files ``--embedbench-csv`` writes into its folder
CSV_FILES = (
    "results.csv",
    "queries.csv",
    "stress.csv",
    "cutoffs.csv",
    "cutoff_scores.csv",
    "gates.csv",
)


def _records(source: Summary | Mapping[str, Any]) -> list[TestRecord]:
    """The run's test records, by node id."""
    summary, _ = summary_of(source)
    return sorted(summary.records, key=lambda r: r.nodeid)


def result_columns(metrics: Sequence[str]) -> list[str]:
    """The columns of ``results.csv`` for a run with ``metrics`` (its header, rows or none)."""
    per_metric = [f"{name}{end}" for name in metrics for end in ("", "_low", "_high")]
    return [
        *("test", "dataset", "model", "spec", "status", "queries", "documents"),
        *per_metric,
        *(figure.key for figure in FIGURES),
        *("vram_source", "tokens_estimated", "baseline_status", "error"),
    ]


def query_columns(metrics: Sequence[str], *, languages: bool = False) -> list[str]:
    """The columns of ``queries.csv`` for a run with ``metrics`` (its header, rows or none);
    ``languages``: a dataset of the run has several, so each row names its query's."""
    return [
        *("test", "dataset", "model", "query_id", "query"),
        *(("language",) if languages else ()),
        *metrics,
        *("latency_ms", "retrieved", "relevant"),
    ]


def result_rows(source: Summary | Mapping[str, Any]) -> list[dict[str, Any]]:
    """``results.csv``: one row per test (and so per model), every summary figure."""
    records = _records(source)
    metrics = metric_names([r.result for r in records])
    rows = []
    for record in records:
        result = record.result
        row: dict[str, Any] = {
            "test": record.nodeid,
            "dataset": record.dataset,
            "model": record.model,
            "spec": record.spec,
            "status": record.status.value,
            "queries": result.queries if result is not None else None,
            "documents": result.documents if result is not None else None,
        }
        for name in metrics:
            entry = result.metrics.get(name) if result is not None else None
            row[name] = entry.value if entry is not None else None
            row[f"{name}_low"] = entry.low if entry is not None else None
            row[f"{name}_high"] = entry.high if entry is not None else None
        for figure in FIGURES:
            row[figure.key] = figure.get(result)
        row["vram_source"] = result.resources.vram_source if result is not None else None
        row["tokens_estimated"] = result.tokens.estimated if result is not None else None
        row["baseline_status"] = record.baseline.status if record.baseline is not None else None
        row["error"] = record.error
        rows.append(row)
    return rows


def query_rows(source: Summary | Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """``queries.csv``: one row per test's model and query (a test's own queries in query id
    order): its language (a dataset in several languages), its metrics, latency, retrieved
    and relevant ids (space-free ids joined by ``|``)."""
    records = _records(source)
    # every row has every column (a test with other cut-offs leaves its cells empty)
    names = metric_names([r.result for r in records])
    for record in records:
        result = record.result
        if result is None:
            continue
        per_query = result.per_query or {}
        texts = result.query_texts or {}
        # the record keeps latencies by query id (an older one: a list in the dataset's query
        # order, read in the order of its query texts; without them, no latency column)
        by_id = result.latency.by_query(list(texts))
        retrieved, relevant = result.retrieved or {}, result.relevant or {}
        languages = result.query_languages or {}
        for qid in sorted(next(iter(per_query.values()), {})):
            row: dict[str, Any] = {
                "test": record.nodeid,
                "dataset": record.dataset,
                "model": record.model,
                "query_id": qid,
                "query": texts.get(qid),
                "language": languages.get(qid),
            }
            for name in names:
                row[name] = (per_query.get(name) or {}).get(qid)
            row["latency_ms"] = by_id.get(qid)
            row["retrieved"] = "|".join(retrieved.get(qid) or ())
            row["relevant"] = "|".join(sorted(relevant.get(qid) or {}))
            yield row


#: what a spreadsheet reads as the start of a formula (OWASP, "CSV Injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any, secrets: list[str] | None = None) -> str:
    """One CSV cell, the one way this project writes a cell: None empty, floats as ``repr``
    (they read back bit for bit), ints as digits, secrets redacted (``secrets``: the values to
    mask, default the environment's), and a text cell beginning with ``=``, ``+``, ``-``,
    ``@``, tab or CR prefixed with ``'`` (OWASP's rule against formula injection: a spreadsheet
    shows it as text and runs nothing). Numbers stay numbers, negative ones unprefixed. A
    control character other than tab, newline and CR (ESC, BEL, C1) is shown as ``\\xNN``
    (:func:`~pytest_embedbench.core.text.inert`: ``cat`` of the file runs nothing)."""
    if value is None:
        return ""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    text = redact(repr(value) if isinstance(value, float) else str(value), secrets)
    text = inert(text, keep="\t\n\r")  # CSV quotes these: a reader takes them back whole
    if not number and text.startswith(_FORMULA_START):
        return "'" + text
    return text


def _csv_line(cells: Sequence[str]) -> str:
    """One CSV line (RFC 4180 quoting, ``\n`` line end): a cell holding a comma, a quote, a CR
    or a LF is quoted. The csv module quotes only the line end's characters, so with ``\n`` it
    writes a CR bare, and a reader (Excel, csv.reader) breaks the row there."""
    return (
        ",".join(
            '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\r\n') else cell
            for cell in cells
        )
        + "\n"
    )


def _csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """The CSV file: the header row (always, even with no rows), then one line per row."""
    secrets = _secret_env_values()
    lines = [_csv_line([csv_cell(name, secrets) for name in columns])]
    lines += [_csv_line([csv_cell(row.get(name), secrets) for name in columns]) for row in rows]
    return "".join(lines)


def _value_cells(prefix: str, value: Value | None) -> dict[str, Any]:
    """``{prefix, prefix_low, prefix_high}`` of a figure (empty cells when it has none)."""
    if value is None:
        return {prefix: None, f"{prefix}_low": None, f"{prefix}_high": None}
    return {prefix: value.value, f"{prefix}_low": value.low, f"{prefix}_high": value.high}


def stress_columns() -> list[str]:
    """The columns of ``stress.csv``."""
    return [
        *("dataset", "model", "kind", "workload", "chunk_tokens", "seeds", "depth", "length"),
        *("metric", "clean", "clean_low", "clean_high", "value", "value_low", "value_high"),
        *("delta", "delta_low", "delta_high", "verdict", "chance", "cut", "status", "test"),
    ]


def stress_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``stress.csv``: one row per stress point, the figures of the terminal's stress tables:
    a chunk size or a noise workload with its clean and stressed nDCG@10 and their paired
    difference; a needle point with its hit@1."""
    rows: list[dict[str, Any]] = []
    for section in summary.stress:
        paired: list[tuple[str, ChunkPoint | NoisePoint, dict[str, int]]] = [
            ("chunk-size", p, {"chunk_tokens": p.size}) for p in section.chunks
        ]
        paired += [("noise", p, {"seeds": p.seeds}) for p in section.noise]
        for kind, point, extra in paired:
            delta = point.delta
            rows.append(
                {
                    "dataset": section.dataset,
                    "model": point.model,
                    "kind": kind,
                    "workload": point.workload,
                    **extra,
                    "metric": delta.metric if delta is not None else "ndcg@10",
                    **_value_cells("clean", point.clean),
                    **_value_cells("value", point.stressed),
                    "delta": delta.difference if delta else None,
                    "delta_low": delta.low if delta else None,
                    "delta_high": delta.high if delta else None,
                    "verdict": delta.verdict if delta else None,
                    "status": point.status,
                    "test": point.nodeid,
                }
            )
        for grid in section.needles:
            for cell in grid.cells:
                rows.append(
                    {
                        "dataset": section.dataset,
                        "model": grid.model,
                        "kind": "needle",
                        "workload": cell.workload,
                        "depth": cell.depth,
                        "length": cell.length,
                        "metric": "hit@1",
                        **_value_cells("value", cell.hit1),
                        "chance": grid.chance,
                        "cut": cell.cut,
                        "status": cell.status,
                    }
                )
    return rows


def cutoff_columns() -> list[str]:
    """The columns of ``cutoffs.csv``."""
    return [
        *("dataset", "model", "level", "threshold", "target", "expected_low", "expected_high"),
        *("keeps_relevant", "keeps_relevant_low", "keeps_relevant_high"),
        *("lets_random", "lets_random_low", "lets_random_high"),
        *("keeps_queries", "keeps_queries_low", "keeps_queries_high"),
        *("outside_expected", "short_of_target", "relevant_share", "calibration_queries"),
        *("heldout_queries", "meaningful", "reason", "guarantee"),
    ]


def cutoff_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``cutoffs.csv``: one row per model and level (shares as fractions, with their 95%
    intervals); a model without a meaningful cut-off has one row with the reason."""
    rows: list[dict[str, Any]] = []
    for section in summary.cutoffs:
        for model in section.models:
            shared = {
                "dataset": section.dataset,
                "model": model.model,
                "relevant_share": model.relevant_share,
                "calibration_queries": model.calibration_queries,
                "heldout_queries": model.heldout_queries,
                "meaningful": model.meaningful,
                "reason": model.reason or None,
                "guarantee": model.guarantee or None,
            }
            if not model.rows:
                rows.append(shared)
            for row in model.rows:
                expected = row.expected_random
                rows.append(
                    {
                        **shared,
                        "level": row.level,
                        "threshold": row.threshold,
                        "target": row.target,
                        "expected_low": expected.low if expected else None,
                        "expected_high": expected.high if expected else None,
                        **_value_cells("keeps_relevant", row.keeps_relevant),
                        **_value_cells("lets_random", row.lets_random),
                        **_value_cells("keeps_queries", row.keeps_queries),
                        "outside_expected": row.outside_expected,
                        "short_of_target": row.short_of_target,
                    }
                )
    return rows


def score_columns() -> list[str]:
    """The columns of ``cutoff_scores.csv``."""
    return [
        *("dataset", "model", "half", "bin", "score_low", "score_high"),
        *("relevant", "random", "relevant_share", "random_share", "cutoffs"),
        *("relevant_pairs", "random_pairs", "relevant_unscored", "random_unscored"),
    ]


def score_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``cutoff_scores.csv``: one row per model and bin of the held-out score histograms the
    cut-offs are cut from (the pairs of each kind and their shares; ``cutoffs``: the levels
    whose threshold lies in the bin, joined by ``|``; their thresholds are in
    ``cutoffs.csv``); the pair totals and
    the pairs the retriever did not return (in no bin) repeat on each of a model's rows."""
    rows: list[dict[str, Any]] = []
    for section in summary.cutoffs:
        for model in section.models:
            dist = model.distribution
            if dist is None:
                continue
            shared = {
                "relevant_pairs": dist.relevant_pairs,
                "random_pairs": dist.random_pairs,
                "relevant_unscored": dist.relevant_unscored,
                "random_unscored": dist.random_unscored,
            }
            for b in score_bins(model):
                rows.append(
                    {
                        "dataset": section.dataset,
                        "model": model.model,
                        "half": dist.half,
                        "bin": b.index,
                        "score_low": b.low,
                        "score_high": b.high,
                        "relevant": b.relevant,
                        "random": b.random,
                        "relevant_share": b.relevant_share,
                        "random_share": b.random_share,
                        "cutoffs": "|".join(level for level, _ in b.levels) or None,
                        **shared,
                    }
                )
    return rows


def gate_columns() -> list[str]:
    """The columns of ``gates.csv``."""
    return [
        *("test", "status", "metric", "baseline", "current", "difference", "low", "high"),
        *("p_value", "verdict", "failures", "warnings"),
    ]


def gate_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``gates.csv``: one row per gated test and compared figure."""
    rows: list[dict[str, Any]] = []
    for gate in summary.gates:
        shared = {
            "test": gate.nodeid,
            "status": gate.status,
            "failures": " | ".join(gate.failures) or None,
            "warnings": " | ".join(gate.warnings) or None,
        }
        if not gate.metrics:
            rows.append(shared)
        for m in gate.metrics:
            rows.append(
                {
                    **shared,
                    "metric": m.metric,
                    "baseline": m.baseline,
                    "current": m.current,
                    "difference": m.delta.difference if m.delta else None,
                    "low": m.delta.low if m.delta else None,
                    "high": m.delta.high if m.delta else None,
                    "p_value": m.p_value,
                    "verdict": m.delta.verdict
                    if m.delta
                    else ("regressed" if m.regressed else None),
                }
            )
    return rows


#: ``judge.csv``'s columns before the metrics on human + LLM grades
_JUDGE_COLUMNS = (
    *("test", "dataset", "model", "judge_model", "judge_id", "server_model", "depth"),
    *("holes", "llm_grades", "judged_before", "judged_after"),
    *("kappa_binary", "kappa_graded", "agreement_pairs", "agreement_low", "confusion"),
    *("asked", "replayed", "ungraded", "requests", "requests_per_query", "tokens"),
    *("price_known", "cost_usd", "failures", "error", "file"),
)


def _judge_metrics(records: Sequence[TestRecord]) -> list[str]:
    """The metrics on human + LLM grades that the run's judges computed (sorted)."""
    found = {n for r in records if r.result and r.result.judge for n in r.result.judge.metrics}
    return sorted(found)


def judge_columns(metrics: Sequence[str]) -> list[str]:
    """The columns of ``judge.csv``: the judge's figures, then each metric on human + LLM
    grades (``llm.ndcg@10``, ``_low``, ``_high``)."""
    per_metric = [f"llm.{name}{end}" for name in metrics for end in ("", "_low", "_high")]
    return [*_JUDGE_COLUMNS, *per_metric]


def judge_csv_rows(source: Summary | Mapping[str, Any]) -> list[dict[str, Any]]:
    """``judge.csv``: one row per test that had an LLM judge, the figures the notes and the
    JSON report's ``tests[].result.judge`` give (``cost_usd`` empty when no price is set:
    ``price_known`` false; ``confusion`` and ``failures`` as ``key: count`` joined by ``|``)."""
    records = _records(source)
    metrics = _judge_metrics(records)
    rows = []
    for record in records:
        judge = record.result.judge if record.result is not None else None
        if judge is None:
            continue
        agreement = judge.agreement
        row: dict[str, Any] = {
            "test": record.nodeid,
            "dataset": record.dataset,
            "model": record.model,
            "judge_model": redact(judge.model),
            "judge_id": judge.judge_id,
            "server_model": "|".join(judge.server_model),
            "agreement_pairs": agreement.pairs,
            "agreement_low": agreement.low,
            "kappa_binary": agreement.kappa_binary,
            "kappa_graded": agreement.kappa_graded,
            "confusion": "|".join(f"{k}: {v}" for k, v in agreement.confusion.items()),
            "failures": "|".join(f"{k}: {v}" for k, v in judge.failures.items()),
            "error": redact(judge.error) if judge.error else None,
        }
        for name in _JUDGE_COLUMNS:
            if name not in row and name in type(judge).__dataclass_fields__:
                row[name] = getattr(judge, name)
        for name in metrics:
            entry = judge.metrics.get(name)
            row[f"llm.{name}"] = entry.value if entry is not None else None
            row[f"llm.{name}_low"] = entry.low if entry is not None else None
            row[f"llm.{name}_high"] = entry.high if entry is not None else None
        rows.append(row)
    return rows


def write_csv(folder: Path, source: Summary | Mapping[str, Any]) -> list[Path]:
    """Write :data:`CSV_FILES` into ``folder`` (each atomically, each with its header even
    without rows) from a :class:`Summary` or a JSON report dict; their paths."""
    summary, _ = summary_of(source)
    metrics = metric_names([r.result for r in _records(summary)])
    tables = {
        "results.csv": (result_columns(metrics), result_rows(summary)),
        "queries.csv": (
            query_columns(metrics, languages=bool(summary.languages)),
            list(query_rows(summary)),
        ),
        "stress.csv": (stress_columns(), stress_csv_rows(summary)),
        "cutoffs.csv": (cutoff_columns(), cutoff_csv_rows(summary)),
        "cutoff_scores.csv": (score_columns(), score_csv_rows(summary)),
        "gates.csv": (gate_columns(), gate_csv_rows(summary)),
    }
    names = list(CSV_FILES)
    if summary.indexes:  # the index axis's file, only where a test had indexes=
        tables[INDEX_CSV] = (index_columns(), index_csv_rows(summary.indexes))
        names.append(INDEX_CSV)
        loaded = load_csv_rows(summary.indexes)
        if loaded:  # and the levels under load, only with --embedbench-concurrency
            tables[LOAD_CSV] = (load_columns(), loaded)
            names.append(LOAD_CSV)
    judged = judge_csv_rows(summary)
    if judged:  # the judge's file, only where a test had an LLM judge
        tables[JUDGE_CSV] = (judge_columns(_judge_metrics(_records(summary))), judged)
        names.append(JUDGE_CSV)
    if summary.query_load:  # the providers' query embedding under load, only where measured
        tables[QUERY_LOAD_CSV] = (query_load_columns(), query_load_csv_rows(summary.query_load))
        names.append(QUERY_LOAD_CSV)
    if summary.languages:  # the per-language file, only where a dataset had languages
        tables[LANGUAGE_CSV] = (language_columns(), language_csv_rows(summary.languages))
        names.append(LANGUAGE_CSV)
    if summary.stages:  # the two stages' files, only where a test had rerankers=
        tables[STAGE_CSV] = (stage_columns(), stage_csv_rows(summary.stages))
        tables[STAGE_QUERY_CSV] = (stage_query_columns(), stage_query_rows(summary.stages))
        names += [STAGE_CSV, STAGE_QUERY_CSV]
    written = []
    for name in names:
        columns, rows = tables[name]
        path = folder / name
        atomic_write_text(path, _csv_text(columns, rows))
        written.append(path)
    return written
