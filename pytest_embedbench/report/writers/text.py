"""The text of a figure, the one way every text writer (terminal, Markdown) prints it: a value,
a share with its interval, a difference with its interval and verdict, the tie lines of a
recommendation. Formats only: every decision (best, significant, verdict) is the summary's."""

from __future__ import annotations

from ..summary import Recommendation
from ..summary.values import Delta, Value

__all__ = ["delta_text", "number", "pct", "rate_text", "tier_lines"]


def number(value: Value | None, fmt: str = "{:.4f}") -> str:
    """A figure's value, or ``-`` when there is none."""
    return "-" if value is None or value.value is None else fmt.format(value.value)


def delta_text(delta: Delta | None) -> str:
    """``+0.0100 [-0.020, +0.030] better``: a difference, its interval and its verdict."""
    if delta is None or delta.difference is None:
        return "-"
    low = "-" if delta.low is None else f"{delta.low:+.3f}"
    high = "-" if delta.high is None else f"{delta.high:+.3f}"
    text = f"{delta.difference:+.4f} [{low}, {high}]"
    return f"{text} {delta.verdict}" if delta.verdict else text


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * float(value):.2f}%"


def rate_text(value: Value | None) -> str:
    """``1.20% (0.80-1.50%)``; the bare share when there is no interval (older JSON)."""
    if value is None or value.value is None:
        return "-"
    if value.low is None or value.high is None:
        return pct(value.value)
    return f"{pct(value.value)} ({100 * value.low:.2f}-{pct(value.high)})"


def tier_lines(rec: Recommendation) -> list[str]:
    """The models a recommendation counts as equally accurate, and as equally fast."""
    lines = []
    same = [tier for tier in rec.accuracy_tiers if len(tier) > 1]
    if same:
        lines.append(
            "equally accurate (paired nDCG@10 not significant): "
            + "; ".join(" = ".join(tier) for tier in same)
        )
    tied = [tier for tier in rec.speed_tiers if len(tier) > 1]
    if tied:
        lines.append(
            "equally fast (overlapping p95 intervals): " + "; ".join(" = ".join(t) for t in tied)
        )
    return lines
