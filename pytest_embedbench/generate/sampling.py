"""Which chunks questions are asked for, and each chunk's seed."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.scripts import weighted_length

if TYPE_CHECKING:
    from ..core.types import Chunk
    from .settings import GenerationSettings


def _chunk_seed(seed: int, chunk_id: str) -> int:
    """A per-chunk seed from the run seed and the chunk id: stable when the sample changes."""
    digest = hashlib.sha256(f"{seed}\x00{chunk_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def sample_chunks(chunks: Sequence[Chunk], settings: GenerationSettings) -> list[Chunk]:
    """The chunks questions are asked for: at least ``min_chunk_chars`` characters, then a
    seeded sample of ``max_chunks`` of them, in corpus order. A Han, kana or Hangul character
    counts as :data:`~..core.scripts.WIDE_WEIGHT` characters (``weighted_length``, as
    chunking's ``min_chunk_chars``): a Chinese chunk holds about as much as an English one of
    three times its characters, and would otherwise be left out as short."""
    eligible = [c for c in chunks if weighted_length(c.text.strip()) >= settings.min_chunk_chars]
    if settings.max_chunks is None or len(eligible) <= settings.max_chunks:
        return eligible
    picked = set(random.Random(settings.seed).sample(range(len(eligible)), settings.max_chunks))
    return [c for i, c in enumerate(eligible) if i in picked]
