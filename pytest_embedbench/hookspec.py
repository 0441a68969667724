"""Hooks for users and other plugins (``pytest_embedbench_*``)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(firstresult=True)
def pytest_embedbench_generate_json(
    config: pytest.Config, records: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Build the JSON report from the run's records; the first non-None result is used.

    Example ``conftest.py`` that writes a smaller report::

        def pytest_embedbench_generate_json(config, records):
            return {"schema_version": 1, "tests": [
                {"model": r["model"], "ndcg@10": r["result"]["metrics"]["ndcg@10"]["value"]}
                for r in records if r["result"]
            ]}
    """


@pytest.hookspec
def pytest_embedbench_update_json(config: pytest.Config, report: dict[str, Any]) -> None:
    """Change the report in place before it is written.

    Example ``conftest.py``::

        def pytest_embedbench_update_json(config, report):
            report["run_id"] = os.environ.get("CI_PIPELINE_ID")
    """
