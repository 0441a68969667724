"""The ground floor's data types: :class:`Document`, :class:`Query` and :class:`Chunk`.

Everything that reads, splits, embeds or scores text passes these three, so they live below all
of it and import nothing of the package: a loader, a chunker, a provider or a generator imports
them from here without pulling in any of the others. The public homes stay
:mod:`pytest_embedbench.datasets` (``Document``, ``Query``) and :mod:`pytest_embedbench.chunking`
(``Chunk``), which re-export them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Chunk", "Document", "Query"]


@dataclass(frozen=True)
class Document:
    """One document of a corpus.

    ``origin`` says where it was read ("corpus.jsonl line 3") and is not part of its identity.
    """

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    origin: str | None = field(default=None, compare=False)
    #: the language of the corpus it belongs to, in a dataset in several languages (each
    #: language's queries search only their own language's documents); None: one corpus
    language: str | None = None

    @property
    def embed_text(self) -> str:
        """The text a retriever sees: title, a space, then text, stripped (as BEIR and MTEB)."""
        return f"{self.title} {self.text}".strip()


@dataclass(frozen=True)
class Query:
    """One query. ``metadata`` is kept for reports and never shown to a retriever."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    origin: str | None = field(default=None, compare=False)
    #: its language ("zh"), in a dataset whose metrics are reported per language with their
    #: macro average; None: a dataset in one language
    language: str | None = None


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document: ``text == document.text[start:end]``."""

    doc_id: str
    id: str
    text: str
    start: int
    end: int
    page: str | None = None  # the printed label of the PDF page the chunk starts on
