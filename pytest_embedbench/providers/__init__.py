"""Providers: the base contract, the registry, and one module per provider family."""

from __future__ import annotations

from .base import (
    PROVIDERS,
    EmbeddingProvider,
    ModelSpec,
    Provider,
    RankingProvider,
    Retriever,
    create_provider,
    provider_class,
    register_provider,
    require_extra,
)

__all__ = [
    "PROVIDERS",
    "EmbeddingProvider",
    "ModelSpec",
    "Provider",
    "RankingProvider",
    "Retriever",
    "create_provider",
    "provider_class",
    "register_provider",
    "require_extra",
]
