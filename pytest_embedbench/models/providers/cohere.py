"""``cohere:`` Cohere Embed through the v2 client.

Queries are sent with ``input_type="search_query"``, documents with ``"search_document"``;
float embeddings. Options: ``truncate`` (``"END"``; ``"START"`` or ``"NONE"``),
``output_dimension`` (embed-v4), ``base_url``, ``api_key`` (else ``COHERE_API_KEY`` or
``CO_API_KEY``), plus the common ones; at most 96 texts a request.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...core.exceptions import ConfigError
from .base import EmbeddingProvider, Kind
from .registry import register_provider

INPUT_TYPES = {"query": "search_query", "document": "search_document"}


@register_provider
class CohereProvider(EmbeddingProvider):
    """``cohere:embed-v4.0``, ``cohere:embed-english-v3.0`` ..."""

    name = "cohere"
    extra = "cohere"
    sdk_module = "cohere"
    hosted = True
    max_batch_size = 96
    default_batch_size = 96
    key_env = ("COHERE_API_KEY", "CO_API_KEY")
    option_names: ClassVar[frozenset[str]] = frozenset(
        {"truncate", "output_dimension", "base_url", "api_key"}
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        truncate = str(self.options.get("truncate", "END")).upper()
        if truncate not in ("NONE", "START", "END"):
            raise ConfigError(f"cohere truncate={truncate!r}: use 'NONE', 'START' or 'END'")
        self.truncate = truncate

    def load(self) -> None:
        cohere = self.sdk()
        kwargs: dict[str, Any] = {"api_key": self.api_key(), "timeout": self.timeout}
        if self.options.get("base_url"):
            kwargs["base_url"] = self.options["base_url"]
        try:
            self._client = cohere.ClientV2(max_retries=0, **kwargs)
        except TypeError:  # older clients take no max_retries
            self._client = cohere.ClientV2(**kwargs)
        self.info.update(base_url=self.options.get("base_url"), truncate=self.truncate)

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns["input_types"] = INPUT_TYPES
        ns["truncate"] = self.truncate
        return ns

    def embed_batch(self, texts: list[str], *, kind: Kind) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "texts": texts,
            "input_type": INPUT_TYPES[kind],
            "embedding_types": ["float"],
            "truncate": self.truncate,
        }
        if self.options.get("output_dimension") is not None:
            kwargs["output_dimension"] = int(self.options["output_dimension"])
        response = self._client.embed(**kwargs)
        return response.embeddings.float_
