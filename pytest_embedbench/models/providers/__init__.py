"""Providers: the model spec, the registry, retry, the embedding base; one module per family.

Where things live:

* :mod:`.spec`: :class:`ModelSpec`, :func:`split_hybrid` and the fingerprint helpers.
* :mod:`.registry`: ``PROVIDERS``, :func:`register_provider`, :func:`create_provider`.
* :mod:`.retry`: which SDK errors are retried and how long to wait.
* :mod:`.base`: :class:`Provider`, :class:`EmbeddingProvider`, :class:`RankingProvider`.
* :mod:`.retriever` and :mod:`.dense`: what ``build`` returns, and the embed-and-index path.
* ``hf``, ``ollama``, ``openai``, ``cohere``, ``voyage``, ``bedrock``, ``lexical``: one module
  per family, each registering its classes on import.
"""

from __future__ import annotations

from ...retrieval.base import BuildStats, Retriever
from .base import EmbeddingProvider, Provider, RankingProvider, require_extra
from .registry import PROVIDERS, create_provider, provider_class, register_provider
from .spec import ModelSpec, spec_fingerprint, split_hybrid

__all__ = [
    "PROVIDERS",
    "BuildStats",
    "EmbeddingProvider",
    "ModelSpec",
    "Provider",
    "RankingProvider",
    "Retriever",
    "create_provider",
    "provider_class",
    "register_provider",
    "require_extra",
    "spec_fingerprint",
    "split_hybrid",
]
