"""One :class:`Tokenizer` for a lexical index: documents and queries go through the same object.

A tokeniser turns a text into its terms in two steps: :meth:`~Tokenizer.split` cuts texts into
words (segmentation, case folding, anything that needs the word's context), and
:meth:`~Tokenizer.terms` maps words to terms one word at a time (stemming, stop words: a word's
term depends on the word alone). An index looks each distinct word of its corpus up once, not
once per occurrence (stemming a corpus word by word would cost as much as the rest of indexing);
a query takes both steps through :meth:`~Tokenizer.tokenize`, so its terms are the ones its
index counted. :attr:`~Tokenizer.fingerprint` names the tokenisation, the same string for the
same settings in every process: an index or a cache keyed by it never mixes two tokenisations.

:class:`WordTokenizer` is bm25s's tokenisation, the default of ``bm25``: lower case, words of
two or more word characters (bm25s's and scikit-learn's pattern), bm25s's stop-word lists
(English by default; a name, a list, or None), the rest stemmed by PyStemmer (Snowball; English
by default, None for none). Its terms are the strings ``bm25s.tokenize(texts, stopwords=...,
stemmer=..., return_ids=False)`` gives (tests/unit/test_lexical_tokens.py).

Usage::

    tokenizer = WordTokenizer(stopwords="en", stemmer="english")
    tokenizer.tokenize(["The cats sat", "running"])  # [["cat", "sat"], ["run"]]
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ...core.exceptions import ConfigError, MissingExtraError

__all__ = ["TOKEN_PATTERN", "Tokenizer", "WordTokenizer", "make_stemmer", "require_bm25s"]

#: a word: two or more word characters (bm25s's default ``token_pattern``, scikit-learn's
#: ``CountVectorizer``'s)
TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def require_bm25s() -> Any:
    """The bm25s module, or a MissingExtraError that names the pip command."""
    try:
        import bm25s
    except ImportError:
        raise MissingExtraError(
            "provider 'bm25' needs the bm25s package: pip install 'pytest-embedbench[bm25]'"
        ) from None
    return bm25s


def make_stemmer(language: str | None) -> Any:
    """A PyStemmer stemmer for ``language`` (None: no stemming)."""
    if not language:
        return None
    try:
        import Stemmer
    except ImportError:
        raise MissingExtraError(
            f"bm25 stemmer={language!r} needs PyStemmer: pip install 'pytest-embedbench[bm25]' "
            "(or pass stemmer=None)"
        ) from None
    try:
        return Stemmer.Stemmer(language)
    except KeyError:
        raise ConfigError(
            f"bm25 stemmer {language!r} is not known to PyStemmer; known: "
            f"{sorted(Stemmer.algorithms())}"
        ) from None


@runtime_checkable
class Tokenizer(Protocol):
    """Texts to terms, the same for the documents an index counts and the queries it scores."""

    @property
    def fingerprint(self) -> str:
        """The tokenisation's stable name: equal settings, equal strings, in every process."""
        ...

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words, in order."""
        ...

    def terms(self, words: Sequence[str]) -> list[str | None]:
        """Each word's term (None: the word is dropped, a stop word); a function of the word
        alone, so an index may look each distinct word up once."""
        ...

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms, in order: :meth:`split`, then :meth:`terms`, the dropped words
        left out. A tokeniser that subclasses this protocol inherits this definition."""
        out = []
        for words in self.split(texts):
            out.append([term for term in self.terms(words) if term is not None])
        return out


class WordTokenizer(Tokenizer):
    """bm25s's words: lower case, :data:`TOKEN_PATTERN`, stop words dropped, PyStemmer stems."""

    def __init__(
        self, *, stopwords: str | Sequence[str] | None = "en", stemmer: str | None = "english"
    ) -> None:
        bm25s = require_bm25s()
        #: the settings as given (messages, fingerprint)
        self.stopwords = stopwords
        self.stemmer = stemmer
        self._stemmer = make_stemmer(stemmer)
        # bm25s's stop-word lists by name ("en", "german" ...; a list as it is), through its
        # public Tokenizer: a name it does not know is its ValueError, as in bm25s.tokenize
        given = [] if stopwords is None else stopwords
        self._stop = frozenset(bm25s.tokenization.Tokenizer(stopwords=given).stopwords)
        self._split = re.compile(TOKEN_PATTERN).findall

    @property
    def fingerprint(self) -> str:
        stop = hashlib.sha256("\n".join(sorted(self._stop)).encode("utf-8")).hexdigest()[:16]
        return f"words:{TOKEN_PATTERN}:stopwords={stop}:stemmer={self.stemmer or ''}"

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        return list(map(self._split, map(str.lower, texts)))

    def terms(self, words: Sequence[str]) -> list[str | None]:
        stems = self._stemmer.stemWords(words) if self._stemmer is not None else words
        stop = self._stop
        return [None if word in stop else stem for word, stem in zip(words, stems, strict=True)]

    def __repr__(self) -> str:
        return f"WordTokenizer(stopwords={self.stopwords!r}, stemmer={self.stemmer!r})"
