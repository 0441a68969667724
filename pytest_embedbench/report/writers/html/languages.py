"""The per-language section: per dataset in several languages, each model's row per language
with its metrics and intervals, then its macro average (bold). Every figure is the
summary's."""

from __future__ import annotations

from ....records.figures import MACRO
from ...summary import Summary
from ...summary.languages import LanguageSection
from ..index_tables import metric_label
from ..language_tables import LANGUAGE_LEGEND
from .page import _dataset_heading, _Page
from .stress import _value


def _languages(page: _Page, summary: Summary) -> None:
    """The languages section (nothing when no dataset had several languages)."""
    if not summary.languages:
        return
    page.add('<section id="languages"><h2>Languages</h2>\n')
    for section in summary.languages:
        languages = page.esc(", ".join(section.languages))
        _dataset_heading(page, "lang", section.dataset, f": {languages}")
        _table(page, section)
    page.add(f'<p class="muted">{page.esc(LANGUAGE_LEGEND)}.</p>\n</section>\n')


def _table(page: _Page, section: LanguageSection) -> None:
    page.add(
        '<div class="wide"><table class="stress"><tr><th>model</th><th class="t">language</th>'
        "<th>queries</th><th>documents</th>"
        + "".join(f"<th>{page.esc(metric_label(m))}</th>" for m in section.metrics)
        + '<th class="t">status</th></tr>\n'
    )
    for r in section.rows:
        macro = r.language == MACRO
        open_, close = ("<b>", "</b>") if macro else ("", "")
        page.add(
            f'<tr><td><code title="{page.esc(r.nodeid)}">{page.esc(r.model)}</code></td>'
            f'<td class="t">{open_}{page.esc(r.language)}{close}</td>'
            f"<td>{r.queries}</td><td>{r.documents}</td>"
            + "".join(f"<td>{open_}{_value(r.figures.get(m))}{close}</td>" for m in section.metrics)
            + f'<td class="t {page.esc(r.status)}">{page.esc(r.status)}</td></tr>\n'
        )
    page.add("</table></div>\n")
