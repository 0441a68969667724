"""The tables of a run, one per dataset: a :class:`DatasetSummary` of :class:`ModelSummary`
rows, each with its figures (the best of each column marked by the one rule,
:func:`~.values.best_marks`), its differences to the baseline and to the reference model, and
the dataset's recommendation (:func:`dataset_summary`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...records.figures import FIGURES, JUDGED, JUDGED_FLOOR
from .columns import direction, metric_names
from .comparisons import baseline_delta, versus_delta
from .recommend import ModelRow, Recommendation, recommendation_of
from .rows import figures_of, latency_basis
from .values import Delta, Value, best_marks

__all__ = ["DatasetSummary", "ModelSummary", "dataset_summary"]


@dataclass(frozen=True)
class ModelSummary:
    """One model on one dataset: the tests that used it folded into one table row.

    ``figures`` holds every metric the run computed and every figure of the registry
    (:data:`~pytest_embedbench.records.figures.FIGURES`) it measured (absent: no value), each
    marked when it is the best of its column.
    """

    model: str
    spec: str
    status: str
    error: str | None = None
    tests: int = 0
    figures: dict[str, Value] = field(default_factory=dict)
    #: how the VRAM figure was measured (torch, Ollama), when there is one
    vram_source: str | None = None
    #: the nDCG@10 difference to the baseline entry, when the gate compared one
    baseline: Delta | None = None
    #: the nDCG@10 difference to the reference model, when compared
    versus: Delta | None = None
    is_reference: bool = False


@dataclass(frozen=True)
class DatasetSummary:
    """The table of one dataset: a row per model, sorted by name."""

    name: str
    models: tuple[ModelSummary, ...]
    queries: int | None = None
    documents: int | None = None
    #: every metric any model computed, by family then cut-off
    metrics: tuple[str, ...] = ()
    #: the model the others were compared with (None: no comparison on this dataset)
    reference: str | None = None
    #: what the latency figures were measured over (None: nothing timed)
    latency_basis: str | None = None
    recommendation: Recommendation | None = None
    #: the models whose judged@10 is below :data:`~pytest_embedbench.records.figures.
    #: JUDGED_FLOOR` (sorted): the headline tables add the judged@10 column, and the notices
    #: say the metrics may understate unjudged but relevant documents
    holes: tuple[str, ...] = ()
    #: a dataset in several languages: what its metrics are (the macro average over them),
    #: said under its table; None for a dataset in one language
    metrics_basis: str | None = None

    @property
    def with_baseline(self) -> bool:
        return any(m.baseline is not None for m in self.models)

    @property
    def compared(self) -> tuple[ModelSummary, ...]:
        """The models with a paired comparison to the reference."""
        return tuple(m for m in self.models if m.versus is not None)

    @property
    def shown_recommendation(self) -> Recommendation | None:
        """The recommendation a report shows: only a choice among two models or more is one."""
        return self.recommendation if len(self.models) > 1 else None


def dataset_summary(
    name: str,
    rows: Sequence[ModelRow],
    versus: Mapping[str, Delta | Mapping[str, Any] | None],
    reference: str | None,
    rec: Mapping[str, Any] | None,
) -> DatasetSummary:
    """The table of one dataset: its rows with their figures, the best of each column marked,
    each model's difference to the baseline and to the ``reference`` (``versus``: by model, as
    :func:`~.comparisons.comparisons` builds them or a saved report keeps them) and the
    recommendation (``rec``: :func:`~.recommend.recommend`'s picks)."""
    results = [r.result for r in rows]
    metrics = metric_names(results)
    values = [figures_of(r.result, metrics) for r in rows]
    keys = [*metrics, *(f.key for f in FIGURES)]
    for key in keys:  # the best of each column, the one rule (values.best_marks)
        column = [(v.get(key) or Value(None)).value for v in values]
        for found, best in zip(values, best_marks(column, direction(key)), strict=True):
            if best:
                found[key] = dataclasses.replace(found[key], best=True)
    first = next((r for r in results if r), None)
    compared_with = reference if versus else None
    models = tuple(
        ModelSummary(
            model=row.model,
            spec=row.spec,
            status=row.status,
            error=row.error,
            tests=row.tests,
            figures=figures,
            vram_source=row.result.resources.vram_source if row.result is not None else None,
            baseline=baseline_delta(row.baseline),
            versus=versus_delta(versus.get(row.model)),
            is_reference=compared_with is not None and row.model == compared_with,
        )
        for row, figures in zip(rows, values, strict=True)
    )
    holes = tuple(sorted(m.model for m in models if _judged_below_floor(m)))
    return DatasetSummary(
        name=name,
        holes=holes,
        models=models,
        queries=first.queries if first else None,
        documents=first.documents if first else None,
        metrics=tuple(metrics),
        reference=compared_with,
        latency_basis=latency_basis(rows),
        recommendation=recommendation_of(rec),
        metrics_basis=_metrics_basis(results),
    )


def _metrics_basis(results: Sequence[Any]) -> str | None:
    """``macro average over 3 languages (en, ja, zh) ...`` when the dataset has languages."""
    languages = sorted({lang for r in results if r is not None for lang in r.languages or ()})
    if not languages:
        return None
    return (
        f"metrics are the macro average over {len(languages)} languages "
        f"({', '.join(languages)}): the mean of the languages' means, each resampled within "
        "its language; the languages table shows each one"
    )


def _judged_below_floor(model: ModelSummary) -> bool:
    """Whether ``model``'s judged@10 is below the floor the reports warn at."""
    value = (model.figures.get(JUDGED.key) or Value(None)).value
    return value is not None and value < JUDGED_FLOOR
