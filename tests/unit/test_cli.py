"""The ``embedbench`` console command."""

from __future__ import annotations

import json
import subprocess
import sys

from pytest_embedbench.cli import main


def test_providers_table(capsys) -> None:
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    for name in ("bedrock", "bm25", "cohere", "hf", "hybrid", "ollama", "openai", "voyage"):
        assert f"\n{name} " in out
    assert "OPENAI_API_KEY" in out and "COHERE_API_KEY" in out and "VOYAGE_API_KEY" in out
    assert "List prices in USD per million tokens, as read on 20" in out
    assert "openai:text-embedding-3-small" in out and "0.020" in out


def test_providers_json_through_the_console_script() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_embedbench.cli", "providers", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(proc.stdout)
    providers = {p["provider"]: p for p in data["providers"]}
    assert providers["voyage"]["key_variables"] == ["VOYAGE_API_KEY"]
    assert providers["openai"]["install"] == "pip install 'pytest-embedbench[openai]'"
    assert providers["bm25"]["kind"] == "ranking"
    models = {(m["provider"], m["model"]): m for m in data["models"]}
    e5 = models[("hf", "intfloat/e5-small-v2")]
    assert (e5["query_prompt"], e5["document_prompt"]) == ("query: ", "passage: ")
    gemma = models[("ollama", "embeddinggemma")]
    assert gemma["query_prompt"] == "task: search result | query: "
    assert gemma["document_prompt"] == "title: none | text: "
    assert models[("openai", "text-embedding-3-large")]["price_per_1m_tokens"] == 0.13
    assert data["prices_as_of"]
