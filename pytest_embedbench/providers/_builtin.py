"""Imports the built-in provider modules so they register; their SDKs load lazily."""

from __future__ import annotations

from . import bedrock, cohere, hf, lexical, ollama, openai, voyage  # noqa: F401
