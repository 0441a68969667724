"""``hf-ce:``: a sentence-transformers ``CrossEncoder`` that reads each (query, document) pair
and scores it, from a local folder (``hf-ce:/models/my-ce``) or, online, a hub name.

Options: ``batch_size`` (pairs per forward pass, default 32), ``max_length`` (tokens a pair is
cut to), ``device`` (default CPU), ``label`` (a model with several labels: the index or name of
the label to rank by; its softmax probability is the score; a model with several labels and no
``label`` is an error, never a silent first label). The document text is its ``embed_text``
(title, then text), as the first stage saw it. Local: free; tokens are the pairs' tokens as the
model's tokenizer counts them (with truncation, as the model reads them).
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
    options_taken: ClassVar[frozenset[str]] = frozenset(
        {"batch_size", "max_length", "device", "label"}
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.batch_size = int(self.options.get("batch_size", 32))
        self.max_length = self.options.get("max_length")
        self._model: Any = None
        #: the column of a model with several labels that is the score (None: one label)
        self._label: int | None = None

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
        self._label = self._chosen_label()
        self.info = {"weights": str(local) if local.is_dir() else self.model}
        if self._label is not None:
            self.info["label"] = self._label_names().get(self._label, str(self._label))

    def _label_names(self) -> dict[int, str]:
        found = getattr(getattr(self._model, "config", None), "id2label", None) or {}
        return {int(i): str(name) for i, name in found.items()}

    def _chosen_label(self) -> int | None:
        """The label a model with several labels ranks by (the ``label`` option: an index or
        a name); None for a model with one label. Several labels and no ``label``: an error,
        as is a ``label`` the model does not have."""
        count = int(getattr(self._model, "num_labels", 1) or 1)
        names = self._label_names()
        listing = ", ".join(f"{i}: {names.get(i, str(i))!r}" for i in range(count))
        spec = f"hf-ce:{self.model}"
        wanted = self.options.get("label")
        if wanted is None:
            if count == 1:
                return None
            raise RerankerError(
                f"reranker {spec!r} has {count} labels ({listing}), and a reranker needs one "
                "relevance score per (query, document) pair: choose the label to rank by with "
                "the option label (its index or name, e.g. providers: {hf-ce: {label: 1}} in "
                "embedbench.yaml; its softmax probability is the score), or give a "
                "CrossEncoder with one label (num_labels=1)"
            )
        if isinstance(wanted, int) and not isinstance(wanted, bool) and 0 <= wanted < count:
            chosen: int | None = wanted
        else:
            chosen = next((i for i, name in names.items() if name == wanted), None)
        if chosen is None:
            raise RerankerError(
                f"reranker {spec!r}: label={wanted!r} is none of its {count} labels "
                f"({listing}); give one of their indexes or names"
            )
        return None if count == 1 else chosen

    def score(self, query: str, documents: Sequence[Document]) -> Sequence[float]:
        if not documents:
            return []
        pairs = [(query, d.embed_text) for d in documents]
        scores = self._model.predict(
            pairs,
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            apply_softmax=self._label is not None,  # several labels: the chosen one's probability
        )
        table = np.asarray(scores, dtype=np.float64).reshape(len(pairs), -1)
        return table[:, self._label or 0].tolist()

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
