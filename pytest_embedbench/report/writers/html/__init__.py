"""The HTML report (``--embedbench-html=PATH``, ``embedbench report r.json -o report.html``).

:func:`render_html` reads the JSON report dict only, so a saved run renders byte for byte as
the run itself did: no clock, no environment lookups besides masking secret values, sorted
keys, fixed number formats. The page is one file: inline CSS and inline SVG charts written
here (no script, no charting library: a library would add hundreds of kilobytes, or a browser
or a runtime, to draw four kinds of bars and points), a Content-Security-Policy that forbids
every remote load, readable without JavaScript and printable. Usage::

    html = render_html(json.loads(Path("report.json").read_text()), priority="speed")

Every piece of user text (model names, query texts, ids, errors, configuration) goes through
:func:`html.escape`; the configuration and the environment are shown redacted as the JSON
report redacts them.

Layout: ``render`` assembles the page from ``sections`` (header cards, one section per
dataset, gate, stress, environment), which draw with ``tables`` (accuracy, figures,
comparisons), ``charts`` (inline SVG), ``queries`` (the per-query drill-down); ``page``
holds the part collector and the number formats, ``assets`` the CSS and the CSP.
"""

from .assets import CSP
from .render import render_html

__all__ = ["CSP", "render_html"]
