"""Query noise: typos, case, truncation, word shuffle and paraphrase, seeded per query.

A noisy dataset keeps the documents, qrels and query ids of the clean one and changes only the
query texts, so the stressed run pairs query by query with the clean run (paired bootstrap).

Typos follow Zhuang and Zuccon ("Dealing with Typos for BERT-based Passage Retrieval and
Ranking", EMNLP 2021) and the CharacterBERT-DR typo queries (Zhuang and Zuccon, SIGIR 2022):
one word of at least three letters that is not a stopword gets one edit, chosen among
deleting a letter, swapping two neighbouring letters, inserting a letter, substituting a letter
and replacing a letter with a neighbour on a QWERTY keyboard.

A query in Chinese, Japanese, Korean or Thai (:func:`~...core.scripts.script_language`) has no
letters to mistype and, but for Korean, no spaces between its words: its typo is one edit of
one character of its script (delete it, swap it with a neighbour, type it twice, or put a
neighbouring character of the same script and kind in its place: for Hangul, the syllable with
the next final consonant; for Han, the next character of the same radical), and ``truncate``
keeps the first fraction of its characters (each Latin word or punctuation mark inside it one
unit, as :func:`~...core.scripts.estimate_tokens` counts), not of its whitespace words (one,
for a sentence without spaces, which truncation then left whole). English queries are
perturbed as before.

Every draw takes a seed derived from ``(seed, kind, query id)`` with SHA-256 (never Python's
``hash()``, which changes between processes), so a query's noise does not depend on which other
queries are in the set or on their order.

Usage::

    from pytest_embedbench.data.stress.noise import noisy_dataset, perturb
    perturb("how do I reset my password", "typo", seed=0)    # 'how do I rest my password'
    noisy = noisy_dataset(dataset, "truncate:0.5", seed=0)     # same ids, half the words
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ...core.exceptions import ConfigError, StressUnavailableError
from ...core.scripts import SEGMENTED_SCRIPT, script_language, token_spans
from ...core.types import Query
from ..datasets import RetrievalDataset

__all__ = [
    "NOISE",
    "STOPWORDS",
    "CHAR_TYPO_OPS",
    "TYPO_OPS",
    "NoiseKind",
    "Paraphraser",
    "eligible_words",
    "noisy_dataset",
    "parse_noise",
    "perturb",
    "query_rng",
]

#: a chat model that rewrites one query: ``paraphraser(text) -> text``
Paraphraser = Callable[[str], str]

#: English function words a typo never touches (NLTK's list, less the contractions)
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with you your yours yourself yourselves""".split()
)

#: keys next to each key on a US QWERTY keyboard (same row and the rows above and below)
_QWERTY = {
    "q": "wa",
    "w": "qeas",
    "e": "wrsd",
    "r": "etdf",
    "t": "ryfg",
    "y": "tugh",
    "u": "yihj",
    "i": "uojk",
    "o": "ipkl",
    "p": "ol",
    "a": "qwsz",
    "s": "weadzx",
    "d": "erfsxc",
    "f": "rtdgcv",
    "g": "tyfhvb",
    "h": "yugjbn",
    "j": "uihknm",
    "k": "iojlm",
    "l": "opk",
    "z": "asx",
    "x": "zsdc",
    "c": "xdfv",
    "v": "cfgb",
    "b": "vghn",
    "n": "bhjm",
    "m": "njk",
}
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: the languages written without spaces between words: truncated by characters
_SPACELESS_LANGUAGES = frozenset({"ja", "th", "zh"})
#: a word, for typos: a run of letters (digits and punctuation split words)
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class NoiseKind:
    """A parsed noise name: ``typo``, ``case``, ``truncate:0.5``, ``shuffle``, ``paraphrase``."""

    name: str
    #: truncate's fraction of words kept (None for the other kinds)
    fraction: float | None = None

    def __str__(self) -> str:
        return self.name if self.fraction is None else f"{self.name}:{self.fraction:g}"

    @property
    def id(self) -> str:
        """A pytest id part: ``typo``, ``truncate-50`` (percent of words kept)."""
        if self.fraction is None:
            return self.name
        return f"{self.name}-{round(self.fraction * 100):d}"


def parse_noise(kind: str | NoiseKind) -> NoiseKind:
    """``"truncate:0.5"`` -> NoiseKind("truncate", 0.5); an unknown name lists the known ones."""
    if isinstance(kind, NoiseKind):
        return kind
    if not isinstance(kind, str):
        raise ConfigError(f"noise kind {kind!r}: give a name such as 'typo' or 'truncate:0.5'")
    name, sep, arg = kind.strip().partition(":")
    if name not in NOISE:
        raise ConfigError(f"noise kind {name!r} is unknown; known: {sorted(NOISE)}")
    if name == "truncate":
        try:
            fraction = float(arg) if sep else 0.5
        except ValueError:
            fraction = math.nan
        if not 0.0 < fraction < 1.0:
            raise ConfigError(
                f"noise {kind!r}: truncate keeps a fraction of the words strictly between 0 "
                "and 1, e.g. 'truncate:0.5'"
            )
        return NoiseKind(name, fraction)
    if sep:
        raise ConfigError(f"noise {kind!r}: {name!r} takes no parameter; write {name!r}")
    return NoiseKind(name)


def query_rng(seed: int, kind: str, query_id: str) -> np.random.Generator:
    """The generator of one query's noise: seeded from SHA-256 of (seed, kind, query id)."""
    digest = hashlib.sha256(f"{int(seed)}\0{kind}\0{query_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def eligible_words(text: str) -> list[tuple[int, int]]:
    """Spans of the words a typo may change: three letters or more, not a stopword."""
    return [
        m.span()
        for m in _WORD.finditer(text)
        if len(m.group()) >= 3 and m.group().lower() not in STOPWORDS
    ]


# -- typo operations: each returns the word with exactly one edit -------------------------------


def _match_case(letter: str, like: str) -> str:
    return letter.upper() if like.isupper() else letter


def _delete(word: str, rng: np.random.Generator) -> str:
    i = int(rng.integers(len(word)))
    return word[:i] + word[i + 1 :]


def _swap(word: str, rng: np.random.Generator) -> str:
    # only neighbours that differ: swapping "ll" would change nothing
    spots = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
    if not spots:
        return _substitute(word, rng)
    i = spots[int(rng.integers(len(spots)))]
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _insert(word: str, rng: np.random.Generator) -> str:
    i = int(rng.integers(len(word) + 1))
    letter = _LETTERS[int(rng.integers(len(_LETTERS)))]
    return word[:i] + _match_case(letter, word[min(i, len(word) - 1)]) + word[i:]


def _substitute(word: str, rng: np.random.Generator) -> str:
    i = int(rng.integers(len(word)))
    choices = [c for c in _LETTERS if c != word[i].lower()]
    letter = choices[int(rng.integers(len(choices)))]
    return word[:i] + _match_case(letter, word[i]) + word[i + 1 :]


def _keyboard(word: str, rng: np.random.Generator) -> str:
    spots = [i for i, c in enumerate(word) if c.lower() in _QWERTY]
    if not spots:  # no Latin letter: a plain substitution
        return _substitute(word, rng)
    i = spots[int(rng.integers(len(spots)))]
    near = _QWERTY[word[i].lower()]
    letter = near[int(rng.integers(len(near)))]
    return word[:i] + _match_case(letter, word[i]) + word[i + 1 :]


#: the typo operations, by name (Zhuang and Zuccon 2021, section 3)
TYPO_OPS: dict[str, Callable[[str, np.random.Generator], str]] = {
    "delete": _delete,
    "swap": _swap,
    "insert": _insert,
    "substitute": _substitute,
    "keyboard": _keyboard,
}


# -- the typo of a query in a script without letters to mistype: one edit of one character -----


def _same_kind(char: str, other: str) -> bool:
    """Whether ``other`` is an assigned character of ``char``'s script and general category
    (a Thai consonant for a consonant, a tone mark for a tone mark)."""
    return bool(SEGMENTED_SCRIPT.match(other)) and (
        unicodedata.category(other) == unicodedata.category(char) != "Cn"
    )


def _char_substitute(text: str, i: int, rng: np.random.Generator) -> str:
    char = text[i]
    near = [
        chr(ord(char) + step)
        for step in (-2, -1, 1, 2)
        if 0 <= ord(char) + step < 0x110000 and _same_kind(char, chr(ord(char) + step))
    ]
    if not near:
        return text[:i] + text[i + 1 :]  # a character with no neighbour of its kind: deleted
    return text[:i] + near[int(rng.integers(len(near)))] + text[i + 1 :]


def _char_swap(text: str, i: int, rng: np.random.Generator) -> str:
    spots = [
        j
        for j in (i - 1, i)
        if 0 <= j < len(text) - 1
        and text[j] != text[j + 1]
        and SEGMENTED_SCRIPT.match(text[j])
        and SEGMENTED_SCRIPT.match(text[j + 1])
    ]
    if not spots:
        return _char_substitute(text, i, rng)
    j = spots[int(rng.integers(len(spots)))]
    return text[:j] + text[j + 1] + text[j] + text[j + 2 :]


#: the character typo operations, by name: each edits the character at ``i`` of the text
CHAR_TYPO_OPS: dict[str, Callable[[str, int, np.random.Generator], str]] = {
    "delete": lambda text, i, rng: text[:i] + text[i + 1 :],
    "double": lambda text, i, rng: text[: i + 1] + text[i:],
    "substitute": _char_substitute,
    "swap": _char_swap,
}


def _char_typo(text: str, rng: np.random.Generator) -> str:
    spots = [m.start() for m in SEGMENTED_SCRIPT.finditer(text)]
    if len(spots) < 2:
        return text  # one character: a typo would leave nothing or another query
    i = spots[int(rng.integers(len(spots)))]
    op = sorted(CHAR_TYPO_OPS)[int(rng.integers(len(CHAR_TYPO_OPS)))]
    return CHAR_TYPO_OPS[op](text, i, rng)


def _typo(text: str, kind: NoiseKind, rng: np.random.Generator) -> str:
    if script_language(text) != "en":
        return _char_typo(text, rng)
    spans = eligible_words(text)
    if not spans:
        return text  # nothing eligible ("what is it"): the query stays as it is
    start, end = spans[int(rng.integers(len(spans)))]
    op = sorted(TYPO_OPS)[int(rng.integers(len(TYPO_OPS)))]
    return text[:start] + TYPO_OPS[op](text[start:end], rng) + text[end:]


def _case(text: str, kind: NoiseKind, rng: np.random.Generator) -> str:
    """Upper, lower or title case, drawn per query among those that change the text."""
    variants = [v for v in (text.upper(), text.lower(), text.title()) if v != text]
    if not variants:
        return text
    return variants[int(rng.integers(len(variants)))]


def _truncate(text: str, kind: NoiseKind, rng: np.random.Generator) -> str:
    """The first ``ceil(fraction * words)`` words (at least one); the seed plays no part. A
    Chinese, Japanese or Thai query (written without spaces between words) is cut after the
    first ``ceil(fraction * units)`` of its characters, each Latin word or punctuation mark in
    it one unit (a combining mark kept with its character)."""
    if script_language(text) in _SPACELESS_LANGUAGES:
        units = token_spans(text)
        keep = max(1, math.ceil((kind.fraction or 0.5) * len(units)))
        if not units:
            return text
        end = units[keep - 1][1]
        while end < len(text) and unicodedata.category(text[end]).startswith("M"):
            end += 1  # a mark (a Thai vowel or tone mark) stays with its character
        return text[:end]
    words = text.split()
    keep = max(1, math.ceil((kind.fraction or 0.5) * len(words)))
    return " ".join(words[:keep])


def _shuffle(text: str, kind: NoiseKind, rng: np.random.Generator) -> str:
    """The words in a random order (another order than the original when there is one)."""
    words = text.split()
    if len(set(words)) < 2:
        return text
    for _ in range(16):
        order = rng.permutation(len(words))
        shuffled = [words[i] for i in order]
        if shuffled != words:
            return " ".join(shuffled)
    return " ".join(words[1:] + words[:1])  # sixteen identity draws: rotate instead


def _paraphrase(text: str, kind: NoiseKind, rng: np.random.Generator) -> str:
    raise AssertionError("paraphrase is handled by perturb")  # pragma: no cover


#: noise kinds by name: ``fn(text, kind, rng) -> text``
NOISE: dict[str, Callable[[str, NoiseKind, np.random.Generator], str]] = {
    "typo": _typo,
    "case": _case,
    "truncate": _truncate,
    "shuffle": _shuffle,
    "paraphrase": _paraphrase,
}

_NO_PARAPHRASER = (
    "noise 'paraphrase' needs a chat model to rewrite the queries and none is configured: "
    "name one in embedbench.yaml (paraphrase: {model: openai:NAME, host: BASE_URL}, or an "
    "Ollama model), implement the pytest_embedbench_paraphraser hook in conftest.py (or pass "
    "paraphraser=callable(text) -> text from Python), or leave paraphrase out of the workloads"
)


def perturb(
    query: Query | str,
    kind: str | NoiseKind,
    seed: int = 0,
    *,
    paraphraser: Paraphraser | None = None,
) -> str:
    """The text of ``query`` with noise ``kind``, the same for the same (seed, kind, query id).

    ``query`` is a :class:`~pytest_embedbench.datasets.Query` (its id seeds the draw) or a
    string (the text is its own id). ``paraphrase`` calls ``paraphraser(text)`` (a
    :class:`~pytest_embedbench.generate.paraphrase.ChatParaphraser`'s ``paraphrase(text,
    answer=...)``, with the query's ``answer``, so that a paraphrase copying it is rejected) and
    raises :class:`~pytest_embedbench.exceptions.StressUnavailableError` without one.
    """
    parsed = parse_noise(kind)
    qid, text = (query.id, query.text) if isinstance(query, Query) else (str(query), str(query))
    if parsed.name == "paraphrase":
        if paraphraser is None:
            raise StressUnavailableError(_NO_PARAPHRASER)
        with_answer = getattr(paraphraser, "paraphrase", None)
        if callable(with_answer) and isinstance(query, Query):  # a ChatParaphraser
            answer = query.metadata.get("answer") if query.metadata else None
            rewritten = with_answer(text, answer=answer if isinstance(answer, str) else None)
        else:
            rewritten = paraphraser(text)
        return rewritten if isinstance(rewritten, str) and rewritten.strip() else text
    return NOISE[parsed.name](text, parsed, query_rng(seed, str(parsed), qid))


def noisy_dataset(
    dataset: RetrievalDataset,
    kind: str | NoiseKind,
    seed: int = 0,
    *,
    paraphraser: Paraphraser | None = None,
) -> RetrievalDataset:
    """``dataset`` with every query's text perturbed; documents, qrels and query ids kept.

    Usage::

        noisy = noisy_dataset(load_dataset("../shared/data/scifact"), "typo", seed=3)
        evaluate("bm25", noisy).compare(evaluate("bm25", clean), "ndcg@10")
    """
    parsed = parse_noise(kind)
    queries = [
        Query(q.id, perturb(q, parsed, seed, paraphraser=paraphraser), q.metadata, q.origin)
        for q in dataset.queries
    ]
    return RetrievalDataset(
        dataset.documents,
        queries,
        _plain(dataset.qrels),
        name=f"{dataset.name}~{parsed}#{seed}",
        source=dataset.source,
    )


def _plain(qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    return {qid: dict(judged) for qid, judged in qrels.items()}
