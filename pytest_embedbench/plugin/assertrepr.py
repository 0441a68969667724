"""What pytest prints when an assertion on an :class:`~pytest_embedbench.stats.Estimate` fails.

``assert retrieval.ndcg10 >= 0.6`` failing shows the value, its bootstrap interval and
query count, and the worst queries with their texts; the plugin's
``pytest_assertrepr_compare`` hook hands the comparison here.
"""

from __future__ import annotations

from typing import Any

from ..core.text import inert
from ..evaluation.stats import Estimate

__all__ = ["explain_comparison"]

_OPERATORS = (">=", "<=", ">", "<", "==", "!=")


def explain_comparison(op: str, left: Any, right: Any) -> list[str] | None:
    """The lines explaining ``left op right`` when either side is an Estimate, else None."""
    if op not in _OPERATORS:
        return None
    est, other = (left, right) if isinstance(left, Estimate) else (right, left)
    if not isinstance(est, Estimate):
        return None
    name = est.name or "value"
    lines = [
        f"{name} = {float(est):.4f} {op} {other!r}"
        if est is left
        else f"{other!r} {op} {name} = {float(est):.4f}",
        f"{name} = {float(est):.4f}, {round(est.level * 100)}% bootstrap interval "
        f"[{est.low:.4f}, {est.high:.4f}] over {est.n} queries"
        + (f" ({est.context})" if est.context else ""),
    ]
    worst = est.worst(3)
    if worst:
        texts = est.query_texts or {}
        lines.append(
            "worst queries: "
            + ", ".join(f"{qid}{_quoted(texts.get(qid))} ({value:.4f})" for qid, value in worst)
        )
    # the model, dataset and query ids and texts are the user's data: their controls are shown
    return [inert(line) for line in lines]


def _quoted(text: str | None, width: int = 50) -> str:
    """`` "text"`` cut to ``width`` characters, or nothing when the text is unknown."""
    if not text:
        return ""
    short = text if len(text) <= width else text[: width - 3].rstrip() + "..."
    return f' "{short}"'
