"""Loopback servers for each provider's wire format, and an environment with no real keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .servers import (
    BedrockServer,
    CohereServer,
    FakeEmbeddingServer,
    OllamaServer,
    OpenAIServer,
    VoyageServer,
)

KEYS = {
    "OPENAI_API_KEY": "sk-test-SECRETKEY-openai-0001",
    "COHERE_API_KEY": "co-test-SECRETKEY-cohere-0002",
    "VOYAGE_API_KEY": "pa-test-SECRETKEY-voyage-0003",
    "AWS_ACCESS_KEY_ID": "AKIDTESTSECRETKEY0004",
    "AWS_SECRET_ACCESS_KEY": "aws-test-SECRETKEY-secret-0005",
}


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No key from the machine leaks in; boto3 never looks for instance credentials (that would
    reach a non-loopback address)."""
    for var in (
        *KEYS,
        "CO_API_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "OPENAI_BASE_URL",
        "OLLAMA_HOST",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for var, value in KEYS.items():
        monkeypatch.setenv(var, value)
    return KEYS


def server_fixture(server_type: type[FakeEmbeddingServer], **options: Any) -> Any:
    """A fixture that serves ``server_type(**options)`` on 127.0.0.1 for the length of a test."""

    @pytest.fixture
    def serve() -> Iterator[FakeEmbeddingServer]:
        with server_type(**options) as server:
            yield server

    return serve


openai_server = server_fixture(OpenAIServer, dim=16)
cohere_server = server_fixture(CohereServer, dim=16)
voyage_server = server_fixture(VoyageServer, dim=16)
ollama_server = server_fixture(OllamaServer, dim=16, context_words=40)
bedrock_server = server_fixture(BedrockServer, dim=16)
