"""What may be written or shown: :func:`redact` replaces the values of secret-named keys, the
values of secret-named environment variables wherever they appear, and the secrets inside URLs
(:func:`mask_url_secrets`: user info, and every query value). The reports (JSON, HTML, CSV,
Markdown) and the records a baseline keeps go through it.

Usage::

    mask_url_secrets("http://admin:pw@gpu:8000/v1?key=abc&v=2")
    # 'http://***@gpu:8000/v1?key=***&v=***'
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["mask_url_secrets", "redact", "secret_key"]

#: "dsn": a database connection string may carry its password as ``password=...`` (pgvector's
#: ``dsn:``, and the variable its ``dsn_env:`` names), which no URL rule would find
_SECRET_WORDS = ("key", "token", "secret", "password", "credential", "dsn")
#: parts of key names that contain a secret word but name no secret: chunking's tokenizer,
#: token counts and prices (``tokens``, ``max_tokens``, ``price_per_1m_tokens``)
_NOT_SECRET_PARTS = ("tokenizer", "tokens")

#: ``scheme://userinfo@``: the user info (a user and password, or a token) is masked whole
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@]+@")
#: the query of a URL (``?`` after ``scheme://host...``, up to whitespace or ``#``)
_URL_QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#]*\?)([^\s#\"'<>]*)")


def secret_key(key: Any) -> bool:
    """Whether a mapping key names a secret (``api_key``, ``token``, ``password`` ...)."""
    name = str(key).lower()
    for part in _NOT_SECRET_PARTS:
        name = name.replace(part, "")
    return any(w in name for w in _SECRET_WORDS)


def _secret_env_values() -> list[str]:
    """Values of environment variables named like secrets (OPENAI_API_KEY, HF_TOKEN ...),
    longest first, so a key pasted anywhere else is found too."""
    values = {
        v
        for k, v in os.environ.items()
        if any(w in k.lower() for w in _SECRET_WORDS) and len(v.strip()) >= 8
    }
    return sorted(values, key=len, reverse=True)


def _mask_query(match: re.Match[str]) -> str:
    pairs = match.group(2).split("&")
    masked = [f"{p.partition('=')[0]}=***" if "=" in p else "***" for p in pairs if p]
    return match.group(1) + "&".join(masked)


def mask_url_secrets(text: str) -> str:
    """``text`` with the user info and the query values of every URL in it masked."""
    if "://" not in text:
        return text
    return _URL_QUERY.sub(_mask_query, _URL_USERINFO.sub(r"\1***@", text))


def redact(value: Any, _secrets: list[str] | None = None) -> Any:
    """A copy of ``value`` with every secret-looking key's value replaced, every value of a
    secret-named environment variable masked wherever it appears, and the secrets of URLs
    masked (:func:`mask_url_secrets`)."""
    secrets = _secret_env_values() if _secrets is None else _secrets
    if isinstance(value, Mapping):
        return {str(k): "***" if secret_key(k) else redact(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, secrets) for v in value]
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "***")
        value = mask_url_secrets(value)
    return value
