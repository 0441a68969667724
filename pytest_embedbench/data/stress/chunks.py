"""Chunk-size sensitivity: the same documents re-chunked at each size, scored by document.

How much quality does 128 vs 256 vs 512 vs 1024 token chunking cost? Each point re-chunks the
dataset's documents at one size (the chunker of :mod:`~pytest_embedbench.chunking`, scored by
document through max-pooling as every chunked run is) and is compared, query by query, with the
dataset as configured (its own chunking, or whole documents).

Sizes are tokens. A dataset chunked in tokens keeps its tokenizer (None: each model's own);
otherwise they are counted with all-MiniLM-L6-v2's tokenizer, so a lexical model can run the
sweep too. The strategy and the overlap's share of the size are the configured chunking's (the
defaults' when the dataset is not chunked).

Usage::

    from pytest_embedbench.data.stress.chunks import chunk_size_dataset
    evaluate("bm25", chunk_size_dataset(dataset, 256)).compare(evaluate("bm25", dataset))
"""

from __future__ import annotations

from dataclasses import replace

from ...core.exceptions import ConfigError
from ..chunking import ChunkingSettings
from ..datasets import RetrievalDataset

__all__ = ["DEFAULT_TOKENIZER", "chunk_size_dataset", "parse_size"]

#: counts the tokens of a sweep over a dataset not chunked in tokens
DEFAULT_TOKENIZER = "all-MiniLM-L6-v2"


def parse_size(text: str | int) -> int:
    """``"256"`` -> 256 tokens (at least 8)."""
    try:
        size = int(str(text).strip())
    except ValueError:
        size = 0
    if size < 8:
        raise ConfigError(f"chunk size {text!r}: give a token count of at least 8, e.g. 256")
    return size


def chunk_size_dataset(dataset: RetrievalDataset, size: int) -> RetrievalDataset:
    """``dataset`` with its documents chunked at ``size`` tokens (see the module doc)."""
    base = dataset.chunking or ChunkingSettings()
    tokenizer = base.tokenizer if base.unit == "tokens" else DEFAULT_TOKENIZER
    overlap = min(size - 1, round(base.overlap / base.size * size))
    settings = replace(base, size=int(size), overlap=overlap, unit="tokens", tokenizer=tokenizer)
    out = dataset.with_chunking(settings)
    out.name = f"{dataset.name}~chunk-{size}"
    return out
