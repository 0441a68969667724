"""``voyage:`` Voyage AI embeddings through ``voyageai``.

Queries go with ``input_type="query"``, documents with ``"document"``. Options:
``output_dimension``, ``truncation`` (True), ``base_url``, ``api_key`` (else
``VOYAGE_API_KEY``), plus the common ones; at most 128 texts a request by default.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .base import EmbeddingProvider, Kind
from .registry import register_provider


@register_provider
class VoyageProvider(EmbeddingProvider):
    """``voyage:voyage-3.5`` and friends."""

    name = "voyage"
    extra = "voyage"
    sdk_module = "voyageai"
    hosted = True
    max_batch_size = 1000
    default_batch_size = 128
    key_env = ("VOYAGE_API_KEY",)
    option_names: ClassVar[frozenset[str]] = frozenset(
        {"output_dimension", "truncation", "base_url", "api_key"}
    )

    def load(self) -> None:
        voyageai = self.sdk()
        self._client = voyageai.Client(
            api_key=self.api_key(),
            max_retries=0,
            timeout=self.timeout,
            base_url=self.options.get("base_url"),
        )
        self.info.update(base_url=self.options.get("base_url"))

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns["input_types"] = {"query": "query", "document": "document"}
        return ns

    def embed_batch(self, texts: list[str], *, kind: Kind) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input_type": kind,
            "truncation": bool(self.options.get("truncation", True)),
        }
        if self.options.get("output_dimension") is not None:
            kwargs["output_dimension"] = int(self.options["output_dimension"])
        return self._client.embed(texts, **kwargs).embeddings
