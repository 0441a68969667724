"""The ``embedbench`` fixture's object: ad-hoc evaluations and paired comparisons in a test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config.project import Options
from ..evaluation.evaluate import RetrievalResult
from ..evaluation.stats import Comparison, compare_scores, holm
from .session import EmbedBenchSession

__all__ = ["EmbedBenchHandle"]


class EmbedBenchHandle:
    """The ``embedbench`` fixture: ad-hoc evaluations and comparisons inside a test.

    Usage::

        def test_prefix_helps(embedbench):
            plain = embedbench.evaluate("hf:intfloat/e5-small-v2", "support")
            prefixed = embedbench.evaluate(ModelSpec("hf:intfloat/e5-small-v2", name="e5-p",
                                                     query_prefix="query: "), "support")
            assert prefixed.compare(plain, "ndcg@10").low > 0
    """

    def __init__(self, session: EmbedBenchSession, test_path: Path) -> None:
        self._session = session
        self._test_path = test_path
        self.comparisons: list[Comparison] = []

    @property
    def options(self) -> Options:
        return self._session.options

    def evaluate(self, model: Any, dataset: Any, *, k: Any = None) -> RetrievalResult:
        """Evaluate ``model`` on ``dataset`` (a configured name, a path or a dataset)."""
        return self._session.evaluate(model, dataset, k=k, test_path=self._test_path)

    def compare(
        self,
        a: RetrievalResult,
        b: RetrievalResult,
        metric: str = "ndcg@10",
        *,
        test: str = "bootstrap",
    ) -> Comparison:
        """``a - b`` on the queries both share: the paired bootstrap interval and a p-value
        (``test``: "bootstrap", "t" or "randomization", seeded with ``--embedbench-seed``).

        Every comparison made through this fixture in one test is one family: each one's
        ``p_holm`` is its Holm-adjusted p-value over all of them, updated as more are made.
        """
        mine, theirs = a.paired_scores(b, metric)
        options = self._session.options
        comparison = compare_scores(
            mine,
            theirs,
            test=test,
            seed=options.seed,
            n_resamples=options.bootstrap,
            name=f"{metric} {a.name} - {b.name}",
            strata=a.paired_strata(b),
        )
        self.comparisons.append(comparison)
        for made, adjusted in zip(
            self.comparisons, holm([c.p_value for c in self.comparisons]), strict=True
        ):
            made.p_holm = adjusted
        return comparison
