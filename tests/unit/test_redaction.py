"""What reports and baselines may keep: secret-named keys, secret environment values and the
secrets inside URLs are masked; counts and prices named with "tokens" are not secrets."""

from __future__ import annotations

import pytest

from pytest_embedbench.core.redaction import mask_url_secrets, redact, secret_key


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("http://admin:hunter2@gpu:8000/v1", "http://***@gpu:8000/v1"),
        ("https://TOKEN123@host/x", "https://***@host/x"),
        ("http://h/v1?key=QSECRET&v=2", "http://h/v1?key=***&v=***"),
        ("http://h/v1?QSECRET#frag", "http://h/v1?***#frag"),
        (
            "ProviderError: POST http://a:pw1@h:1/v1/embeddings?t=z failed",
            "ProviderError: POST http://***@h:1/v1/embeddings?t=*** failed",
        ),
        ("http://gpu-box:11434/api", "http://gpu-box:11434/api"),  # nothing secret
        ("a@b.com and no URL ?x=1", "a@b.com and no URL ?x=1"),
    ],
)
def test_url_secrets_are_masked(text: str, masked: str) -> None:
    assert mask_url_secrets(text) == masked


def test_secret_keys_and_the_names_that_are_not_secrets() -> None:
    for key in ("api_key", "OPENAI_API_KEY", "token", "hf_token", "aws_secret", "password"):
        assert secret_key(key), key
    for key in ("tokens", "max_tokens", "price_per_1m_tokens", "tokenizer", "base_url", "k1"):
        assert not secret_key(key), key


def test_redact_walks_mappings_and_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXAMPLE_API_KEY", "sk-from-the-environment")
    value = {
        "api_key": "sk-1",
        "price_per_1m_tokens": 0.02,
        "options": [{"base_url": "http://u:pw@h/v1"}, "key sk-from-the-environment pasted"],
    }
    assert redact(value) == {
        "api_key": "***",
        "price_per_1m_tokens": 0.02,
        "options": [{"base_url": "http://***@h/v1"}, "key *** pasted"],
    }
