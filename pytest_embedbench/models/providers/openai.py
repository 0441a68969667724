"""``openai:`` OpenAI embeddings and OpenAI-compatible servers (vLLM, LM Studio, gateways).

Options: ``dimensions`` (text-embedding-3 models), ``base_url`` (or ``OPENAI_BASE_URL``) for a
compatible server, ``api_key`` (else ``OPENAI_API_KEY``; a ``base_url`` server may need none),
``organization``, plus the common ``batch_size`` (at most 2,048 inputs a request),
``max_concurrency``, ``max_retries``, ``timeout``. Tokens are counted with tiktoken when its
encoding can be loaded, else estimated.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from ...core.exceptions import MissingKeyError
from .base import EmbeddingProvider, Kind
from .registry import register_provider


@register_provider
class OpenAIProvider(EmbeddingProvider):
    """``openai:text-embedding-3-small`` and friends."""

    name = "openai"
    extra = "openai"
    sdk_module = "openai"
    hosted = True
    max_batch_size = 2048
    default_batch_size = 256
    key_env = ("OPENAI_API_KEY",)
    option_names: ClassVar[frozenset[str]] = frozenset(
        {"dimensions", "base_url", "api_key", "organization"}
    )

    def load(self) -> None:
        openai = self.sdk()
        base_url = self.options.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        try:
            key = self.api_key()
        except MissingKeyError:
            if not base_url:
                raise
            key = "unused"  # compatible servers often take no key
        self._client = openai.OpenAI(
            api_key=key,
            base_url=base_url,
            organization=self.options.get("organization"),
            max_retries=0,  # the base class retries, counts and honours Retry-After
            timeout=self.timeout,
        )
        self.info.update(base_url=base_url, dimensions=self.options.get("dimensions"))

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns["base_url"] = self.options.get("base_url")
        return ns

    def embed_batch(self, texts: list[str], *, kind: Kind) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": texts,
            "encoding_format": "float",
        }
        if self.options.get("dimensions") is not None:
            kwargs["dimensions"] = int(self.options["dimensions"])
        response = self._client.embeddings.create(**kwargs)
        return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]

    def count_tokens(self, texts: Sequence[str]) -> tuple[int, bool]:
        """Exact with tiktoken for OpenAI's models; estimated when the encoding is missing
        (tiktoken downloads it on first use) or the model is not OpenAI's."""
        try:
            import tiktoken

            try:
                encoding = tiktoken.encoding_for_model(self.model)
                exact = True
            except KeyError:
                encoding = tiktoken.get_encoding("cl100k_base")
                exact = False
            return sum(len(encoding.encode(t, disallowed_special=())) for t in texts), not exact
        except Exception:  # noqa: BLE001 - no tiktoken or no encoding offline: estimate
            return super().count_tokens(texts)
