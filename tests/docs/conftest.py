"""The docs tests' count: how many code blocks of README.md and docs/ ran, by language."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

_PAGES: dict[str, dict[str, Any]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # user_properties travel with the report, so the count is right under pytest-xdist too
    for name, value in report.user_properties:
        if name == "docs_examples" and report.when == "call":
            _PAGES[report.nodeid] = json.loads(value)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _PAGES:
        return
    ran: Counter[str] = Counter()
    compared = shown = 0
    skipped: list[str] = []
    for _nodeid, page in sorted(_PAGES.items()):
        ran.update(page["ran"])
        compared += page["outputs_compared"]
        shown += page["outputs_shown"]
        skipped.extend(f"{page['page']} {reason}" for reason in page["skipped"])
    kinds = ", ".join(f"{n} {language}" for language, n in sorted(ran.items()))
    write = terminalreporter.write_line
    write(
        f"docs examples: {sum(ran.values())} code blocks ran in {len(_PAGES)} pages ({kinds}); "
        f"{compared} outputs compared with what their command printed, {shown} shown only; "
        f"{len(skipped)} skipped"
    )
    for reason in skipped:
        write(f"  skipped {reason}")
