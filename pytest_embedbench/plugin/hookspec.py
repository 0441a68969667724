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


@pytest.hookspec(firstresult=True)
def pytest_embedbench_paraphraser(config: pytest.Config) -> Any:
    """The chat model that rewrites queries for ``noise:paraphrase`` stress points: a callable
    ``paraphrase(text) -> text``; the first non-None result is used. With none, the chat
    model of embedbench.yaml's ``paraphrase:`` rewrites them (cached, bad paraphrases rejected
    and counted); without that either, paraphrase points skip and say why. Asked once per run,
    when the first paraphrase point runs.

    Example ``conftest.py`` with a local Ollama chat model::

        import ollama

        def pytest_embedbench_paraphraser(config):
            client = ollama.Client(host="http://127.0.0.1:11434")

            def paraphrase(text):
                reply = client.chat(model="llama3.2", options={"temperature": 0, "seed": 0},
                                    messages=[{"role": "user", "content":
                                               f"Rewrite this search query in other words. "
                                               f"Reply with the query only.\n\n{text}"}])
                return reply["message"]["content"].strip()

            return paraphrase
    """
