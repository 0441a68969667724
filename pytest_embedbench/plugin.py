"""The pytest plugin (entry point ``pytest11: embedbench``).

It stays thin: it registers the ``embedbench`` marker so suites that already use it collect
under ``--strict-markers``. Fixtures, options and the summary table build on the engine in
:mod:`pytest_embedbench.evaluate`.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "embedbench(models=None, dataset=None, k=None, **options): "
        "evaluate retrieval models on a dataset (pytest-embedbench)",
    )
