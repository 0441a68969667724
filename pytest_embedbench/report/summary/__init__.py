"""The typed Summary of a run, computed once; imports nothing of the writers.

run (the :class:`Summary` and its JSON form, :func:`build_summary`, :func:`summarize`), rows
(records folded into one row per dataset and model, each row's figures), datasets (a dataset's
table: model rows with their best-in-column marks), comparisons (every paired difference as a
Delta: against the reference model, against the baseline, per query), gates (the baseline
gate's outcomes), notices (the lines under the tables), recommend (tiers and picks), values
(Value, Delta and the one rule for best, significant and verdict), columns (the columns a table
shows, read from the figure registry), stress (stress grids, cut-offs and their score
histograms), indexes (index rows), state (what a summary reads of a run).
"""

from .comparisons import comparisons, query_diffs
from .datasets import DatasetSummary, ModelSummary
from .gates import Gate, GateMetric
from .notices import baseline_notices, busy_notes, orphaned_entries
from .recommend import ModelRow, Pick, Recommendation, Scores, recommendations
from .rows import latency_basis, model_rows
from .run import SUMMARY_VERSION, Summary, Totals, build_summary, summarize, summary_of
from .values import Delta, Value

__all__ = [
    "SUMMARY_VERSION",
    "DatasetSummary",
    "Delta",
    "Gate",
    "GateMetric",
    "ModelRow",
    "ModelSummary",
    "Pick",
    "Recommendation",
    "Scores",
    "Summary",
    "Totals",
    "Value",
    "baseline_notices",
    "build_summary",
    "busy_notes",
    "comparisons",
    "latency_basis",
    "model_rows",
    "orphaned_entries",
    "query_diffs",
    "recommendations",
    "summarize",
    "summary_of",
]
