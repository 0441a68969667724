"""Loopback servers for each provider's wire format, and an environment with no real keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .servers import BedrockServer, CohereServer, OllamaServer, OpenAIServer, VoyageServer

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


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(dim=16) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def cohere_server() -> Iterator[CohereServer]:
    with CohereServer(dim=16) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def voyage_server() -> Iterator[VoyageServer]:
    with VoyageServer(dim=16) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def ollama_server() -> Iterator[OllamaServer]:
    with OllamaServer(dim=16, context_words=40) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def bedrock_server() -> Iterator[BedrockServer]:
    with BedrockServer(dim=16) as server:
        yield server  # type: ignore[misc]
