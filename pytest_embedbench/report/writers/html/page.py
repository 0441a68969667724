"""The part collector every section writes into, and the shared number and text formats."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from ....core.redaction import _secret_env_values, redact
from ....core.text import inert


def _f(value: Any, fmt: str = "{:.4f}", missing: str = "-") -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return missing
    if math.isnan(value):
        return missing
    if not math.isfinite(value):
        return "inf"
    return fmt.format(value)


def _c(x: float) -> str:
    """An SVG coordinate: two decimals, so output never depends on float noise."""
    return f"{x:.2f}"


class _Page:
    """Collects the page's parts; ``esc`` masks secret values, shows control characters
    (:func:`~pytest_embedbench.core.text.inert`) and escapes the text."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.secrets = _secret_env_values()

    def esc(self, value: Any) -> str:
        return html.escape(inert(redact(str(value), self.secrets)), quote=True)

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)


def _anchor(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name)


def _dataset_heading(page: _Page, prefix: str, dataset: str, more: str = "") -> None:
    """A section's heading for one of its datasets, its anchor ``prefix-dataset`` (``more``:
    markup after the name)."""
    page.add(f'<h3 id="{prefix}-{_anchor(dataset)}">On {page.esc(dataset)}{more}</h3>\n')


class _PerDataset(Protocol):
    @property
    def dataset(self) -> str: ...


_S = TypeVar("_S", bound=_PerDataset)


def _dataset_sections(
    page: _Page,
    ids: tuple[str, str],
    title: str,
    sections: Sequence[_S],
    write: Callable[[_Page, _S], None],
    legend: str,
) -> None:
    """A section of a part per dataset (nothing when there is none): its ``<h2>``, each
    dataset's heading and what ``write`` writes of it, then the legend. ``ids``: the
    section's anchor and the prefix of its datasets' ones."""
    if not sections:
        return
    page.add(f'<section id="{ids[0]}"><h2>{title}</h2>\n')
    for section in sections:
        _dataset_heading(page, ids[1], section.dataset)
        write(page, section)
    page.add(f'<p class="muted">{page.esc(legend)}.</p>\n</section>\n')


def _short(text: str, width: int = 18) -> str:
    """``text`` in at most ``width`` characters, cut in the middle (``all-Mini…L6-v2``): names
    that share a start (``model-a-v1``, ``model-a-v2``) stay told apart by their ends."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _num(value: Any, default: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return float(default)
