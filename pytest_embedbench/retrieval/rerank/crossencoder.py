"""``hf-ce:``: a sentence-transformers ``CrossEncoder`` that reads each (query, document) pair
and scores it, from a local folder (``hf-ce:/models/my-ce``) or, online, a hub name.

Options: ``batch_size`` (pairs per forward pass, default 32), ``max_length`` (tokens a pair is
cut to), ``device`` (default CPU). The document text is its ``embed_text`` (title, then text),
as the first stage saw it. Local: free; tokens are the pairs' tokens as the model's tokenizer
counts them (with truncation, as the model reads them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ...core.exceptions import MissingExtraError, RerankerError
from ...core.types import Document
from .base import Reranker
from .registry import register_reranker

__all__ = ["CrossEncoderReranker"]


@register_reranker
class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder (``hf-ce:/path``)."""

    name = "hf-ce"
    options_taken: ClassVar[frozenset[str]] = frozenset({"batch_size", "max_length", "device"})

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.batch_size = int(self.options.get("batch_size", 32))
        self.max_length = self.options.get("max_length")
        self._model: Any = None

    def load(self) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise MissingExtraError(
                "reranker 'hf-ce' needs sentence-transformers: pip install 'pytest-embedbench[st]'"
            ) from exc
        local = Path(self.model).expanduser()
        if self.model.startswith(("/", ".", "~")) and not local.is_dir():
            raise RerankerError(
                f"reranker 'hf-ce:{self.model}': no folder {str(local)!r}; give the folder a "
                "CrossEncoder was saved to (CrossEncoder.save_pretrained), e.g. "
                "'hf-ce:/models/my-ce@100'"
            )
        kwargs: dict[str, Any] = {"device": self.options.get("device", "cpu")}
        if self.max_length is not None:
            kwargs["max_length"] = int(self.max_length)
        try:
            self._model = CrossEncoder(str(local) if local.is_dir() else self.model, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the hub client and transformers raise many
            raise RerankerError(
                f"reranker 'hf-ce:{self.model}' could not be loaded ({type(exc).__name__}: "
                f"{exc}); give a local CrossEncoder folder, e.g. 'hf-ce:/models/my-ce@100'"
            ) from None
        self.info = {"weights": str(local) if local.is_dir() else self.model}

    def score(self, query: str, documents: Sequence[Document]) -> Sequence[float]:
        if not documents:
            return []
        pairs = [(query, d.embed_text) for d in documents]
        scores = self._model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return np.asarray(scores, dtype=np.float64).reshape(len(pairs), -1)[:, 0].tolist()

    def count_tokens(self, query: str, documents: Sequence[Document]) -> int | None:
        tokenizer = getattr(self._model, "tokenizer", None)
        if tokenizer is None or not documents:
            return None if tokenizer is None else 0
        limit = getattr(self._model, "max_seq_length", None)
        encoded = tokenizer(
            [query] * len(documents),
            [d.embed_text for d in documents],
            truncation=True,
            max_length=limit,
        )
        return int(sum(len(ids) for ids in encoded["input_ids"]))
