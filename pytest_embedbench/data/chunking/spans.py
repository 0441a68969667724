"""Splitting one document's text into ``(start, end)`` spans: words and their boundary levels,
the ``fixed``/``sentence``/``recursive`` splitters, the re-count and re-cut of token-sized
chunks, and the merging of short chunks (the strategies are described in the package
docstring)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from ...core.exceptions import ConfigError
from ...core.scripts import SPACELESS, WIDE, WIDE_WEIGHT
from .tokens import _Counter

_SPACE_CODES = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)
#: the code points of :data:`~...core.scripts.SPACELESS` (Han, kana, CJK punctuation and
#: full-width forms), as sorted (first, last) ranges: each such character is a word of its own
_SPACELESS_RANGES = np.array(
    [
        [ord(a), ord(b)]
        for a, b in re.findall(r"(.)-(.)", SPACELESS.pattern.strip("[]"), flags=re.DOTALL)
    ],
    dtype=np.uint32,
)
#: a combining mark a kana may carry (the voiced sound marks): it stays with its character
_KANA_MARKS = np.array([0x3099, 0x309A], dtype=np.uint32)
# each gap pattern ends where the whitespace run ends: at the start of the next word
_SENTENCE_GAP = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u2019\u201d)\]\u00bb]*\s+")
#: a sentence end of Chinese and Japanese, where no space follows: 。！？ and the closing
#: brackets and quotes after them (「」『』（）【】)
_CJK_SENTENCE_GAP = re.compile(r"[\u3002\uff01\uff1f][\u300d\u300f\u3011\uff09\u201d\u2019]*\s*")
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


def _spaceless(codes: np.ndarray) -> np.ndarray:
    """Which code points are of a script written without spaces (:data:`_SPACELESS_RANGES`)."""
    at = np.searchsorted(_SPACELESS_RANGES[:, 0], codes, side="right") - 1
    return (at >= 0) & (codes <= _SPACELESS_RANGES[np.maximum(at, 0), 1])


def _words(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Words: non-whitespace runs, and each Han or kana character (or CJK punctuation mark) on
    its own, since Chinese and Japanese put no space between words; their starts, their ends
    and the level of the boundary before each (the first word's is a paragraph's). One regex
    pass per level, no loop over words."""
    # whitespace as re's \s sees it (str.isspace), over the code points at once
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    word = np.ones(len(codes) + 2, dtype=bool)
    word[1:-1] = ~np.isin(codes, _SPACE_CODES, kind="table")
    word[0] = word[-1] = False
    edges = np.flatnonzero(word[1:] != word[:-1])
    starts, ends = edges[0::2].astype(np.int64), edges[1::2].astype(np.int64)
    sentence_ends: tuple[tuple[int, re.Pattern[str]], ...] = ((_SENTENCE, _SENTENCE_GAP),)
    if SPACELESS.search(text):
        starts, ends = _split_spaceless(codes, word[1:-1])
        sentence_ends = ((_SENTENCE, _SENTENCE_GAP), (_SENTENCE, _CJK_SENTENCE_GAP))
    levels = np.full(len(starts), _WORD, dtype=np.int8)
    # weaker first, so a stronger boundary at the same word overwrites it
    for level, pattern in (
        *sentence_ends,
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


def _split_spaceless(codes: np.ndarray, word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The words' starts and ends when a word also starts at, and ends after, each character
    of :data:`_SPACELESS_RANGES` (a voiced sound mark stays with its kana)."""
    mark = np.isin(codes, _KANA_MARKS)
    solo = _spaceless(codes) & ~mark
    # a cut between i and i + 1: white space on either side, a solo character after, or one
    # before that is not followed by its mark
    cut = ~word[:-1] | ~word[1:] | solo[1:] | (solo[:-1] & ~mark[1:])
    first = word.copy()
    first[1:] &= cut
    last = word.copy()
    last[:-1] &= cut
    return np.flatnonzero(first).astype(np.int64), np.flatnonzero(last).astype(np.int64) + 1


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


def _length(text: str) -> Callable[[int, int], int]:
    """The length of ``text[a:b]`` that ``min_chunk_chars`` measures: characters, a Han, kana
    or Hangul character counted as :data:`~...core.scripts.WIDE_WEIGHT` (so a chunk of 64
    Chinese characters is no "short" chunk beside 80 characters of English)."""
    wide = [m.start() for m in WIDE.finditer(text)]
    if not wide:
        return lambda a, b: b - a
    at = np.asarray(wide, dtype=np.int64)

    def length(a: int, b: int) -> int:
        inside = int(np.searchsorted(at, b) - np.searchsorted(at, a))
        return b - a + (WIDE_WEIGHT - 1) * inside

    return length


def _drop_short(
    spans: list[tuple[int, int]],
    min_chars: int,
    fits: Callable[[int, int], bool],
    length: Callable[[int, int], int] = lambda a, b: b - a,
) -> list[tuple[int, int]]:
    """Short chunks (``length`` under ``min_chars``) merged into a neighbour that has room, else
    dropped; never all of them."""
    if not min_chars or all(length(a, b) >= min_chars for a, b in spans):
        return spans
    kept: list[tuple[int, int]] = []
    pending = list(spans)
    for n, (a, b) in enumerate(pending):
        if length(a, b) >= min_chars:
            kept.append((a, b))
        elif kept and fits(kept[-1][0], max(b, kept[-1][1])):
            kept[-1] = (kept[-1][0], max(b, kept[-1][1]))
        elif n + 1 < len(pending) and fits(a, pending[n + 1][1]):
            pending[n + 1] = (a, pending[n + 1][1])
    return kept or spans
