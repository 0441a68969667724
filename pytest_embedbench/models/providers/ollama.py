"""``ollama:`` models served by a local Ollama, through the ``ollama`` client.

Options: ``host`` (else ``OLLAMA_HOST``, else ``http://127.0.0.1:11434``), ``keep_alive``
(how long the server keeps the model loaded, e.g. ``"10m"``), ``dimensions``, plus the common
ones; 64 texts a request by default. Texts go with ``truncate=False``: when the server refuses a
text as longer than the model's context, the batch goes again text by text and a refused text is
cut until it fits (``provider.info["cut_texts"]`` counts them). The memory column shows the
model's resident size from ``/api/ps``, since the model lives in the server.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from ...core.exceptions import ProviderError
from .base import EmbeddingProvider, Kind
from .registry import register_provider
from .retry import RetryDecision

DEFAULT_HOST = "http://127.0.0.1:11434"
_TOO_LONG = ("context length", "input length", "too long")


@register_provider
class OllamaProvider(EmbeddingProvider):
    """``ollama:nomic-embed-text`` and any embedding model pulled into Ollama."""

    name = "ollama"
    extra = "ollama"
    sdk_module = "ollama"
    default_batch_size = 64
    option_names: ClassVar[frozenset[str]] = frozenset({"host", "keep_alive", "dimensions"})

    def __init__(self, model: str = "", **options: Any) -> None:
        options.setdefault("max_retries", 2)  # a busy server may drop a connection
        super().__init__(model, **options)
        self.host = str(self.options.get("host") or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST)
        if "://" not in self.host:
            self.host = f"http://{self.host}"

    def load(self) -> None:
        ollama = self.sdk()
        self._ollama = ollama
        self._client = ollama.Client(host=self.host, timeout=self.timeout)
        try:
            self._client.show(self.model)
        except ollama.ResponseError as exc:
            if getattr(exc, "status_code", None) == 404:
                raise ProviderError(self._missing_model()) from None
            raise ProviderError(f"ollama at {self.host}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - httpx's connection errors and the like
            raise ProviderError(self._unreachable(exc)) from None
        self.info.update(host=self.host, cut_texts=0)

    def _missing_model(self) -> str:
        return (
            f"ollama model {self.model!r} is not available at {self.host}: "
            f"run `ollama pull {self.model}`"
        )

    def _unreachable(self, exc: BaseException) -> str:
        return (
            f"cannot reach Ollama at {self.host} ({type(exc).__name__}): start it with "
            "`ollama serve`, or set the host option / OLLAMA_HOST"
        )

    def is_free(self) -> bool:
        """Free on this machine's Ollama; a remote server is someone's bill."""
        from urllib.parse import urlsplit

        local = urlsplit(self.host).hostname in ("localhost", "127.0.0.1", "::1", "0.0.0.0")
        return local and super().is_free()

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns["host_independent"] = True  # the same model gives the same vectors on any host
        return ns

    def _embed(self, texts: list[str]) -> list[list[float]]:
        kwargs: dict[str, Any] = {"model": self.model, "input": texts, "truncate": False}
        if self.options.get("keep_alive") is not None:
            kwargs["keep_alive"] = self.options["keep_alive"]
        if self.options.get("dimensions") is not None:
            kwargs["dimensions"] = int(self.options["dimensions"])
        return list(self._client.embed(**kwargs).embeddings)

    def _too_long(self, exc: BaseException) -> bool:
        return isinstance(exc, self._ollama.ResponseError) and any(
            marker in str(exc).lower() for marker in _TOO_LONG
        )

    def embed_batch(self, texts: list[str], *, kind: Kind) -> Any:
        try:
            return self._embed(texts)
        except Exception as exc:
            if not self._too_long(exc):
                raise
        # one text in the batch is over the context: go text by text, cutting refused ones
        out = []
        for text in texts:
            current = text
            while True:
                try:
                    out.extend(self._embed([current]))
                    break
                except Exception as exc:
                    if not self._too_long(exc) or len(current) <= 1:
                        raise
                    current = current[: max(1, int(len(current) * 0.75))]
            if current is not text:
                self.info["cut_texts"] = self.info.get("cut_texts", 0) + 1
        return out

    def classify_error(self, exc: BaseException) -> RetryDecision | None:
        if isinstance(exc, self._ollama.ResponseError) and getattr(exc, "status_code", 0) == 404:
            return None
        return super().classify_error(exc)

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, self._ollama.ResponseError):
            if getattr(exc, "status_code", None) == 404:
                return self._missing_model()
            return f"HTTP {exc.status_code}: ollama: {exc.error}"
        names = {cls.__name__ for cls in type(exc).__mro__}
        if names & {"ConnectError", "ConnectionError", "ConnectTimeout"}:
            return self._unreachable(exc)
        return super().describe_error(exc)

    def vram_peak_mb(self) -> tuple[float | None, str | None]:
        """The model's VRAM as the server's ``/api/ps`` reports it (a resident size, not a
        sampled peak)."""
        vram = self.info.get("vram_mb")
        return (float(vram), "ollama /api/ps") if vram is not None else (None, None)

    def after_run(self) -> None:
        """Record the model's resident size from ``/api/ps`` (the server holds the model)."""
        try:
            for entry in self._client.ps().models:
                if entry.model in (self.model, f"{self.model}:latest") or entry.name == self.model:
                    self.info["resident_mb"] = round(entry.size / (1024 * 1024), 1)
                    self.info["vram_mb"] = round((entry.size_vram or 0) / (1024 * 1024), 1)
                    break
        except Exception:  # noqa: BLE001 - an optional figure: leave it out
            pass
