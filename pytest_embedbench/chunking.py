"""Splitting documents into chunks: :func:`chunk_documents` (issue 12).

Contract (the rest of the engine relies on it):

- every :class:`Chunk` satisfies ``document.text[chunk.start:chunk.end] == chunk.text``;
- chunk ids are ``f"{doc_id}#{n}"`` with ``n`` counting from 0 within the document, in order;
- a token-sized chunk never exceeds ``size`` tokens in the tokenizer that counted it;
- the same documents and settings give the same chunks (no randomness).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from .datasets.core import Document

__all__ = ["Chunk", "ChunkingSettings", "chunk_documents"]

Strategy = Literal["fixed", "sentence", "recursive"]
Unit = Literal["chars", "tokens"]


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document: ``text == document.text[start:end]``."""

    doc_id: str
    id: str
    text: str
    start: int
    end: int
    page: str | None = None  # the printed label of the PDF page the chunk starts on


@dataclass(frozen=True)
class ChunkingSettings:
    """What ``chunking:`` in embedbench.yaml (or the marker's ``chunking=``) says."""

    strategy: Strategy = "recursive"
    size: int = 800
    overlap: int = 120
    unit: Unit = "chars"
    min_chunk_chars: int = 80
    tokenizer: str | None = None  # a tokenizer.json path or name, for unit="tokens"

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain data (for fingerprints and reports)."""
        return {
            "strategy": self.strategy,
            "size": self.size,
            "overlap": self.overlap,
            "unit": self.unit,
            "min_chunk_chars": self.min_chunk_chars,
            "tokenizer": self.tokenizer,
        }


def chunk_documents(
    documents: Iterable[Document],
    *,
    strategy: Strategy = "recursive",
    size: int = 800,
    overlap: int = 120,
    unit: Unit = "chars",
    tokenizer: Any = None,
    min_chunk_chars: int = 80,
) -> list[Chunk]:
    """Split ``documents`` into chunks, in document order then position order."""
    raise NotImplementedError("issue 12: chunking is being built")
