"""A :class:`~.tokenize.Tokenizer` per language, and :func:`make_tokenizer`, which picks one.

bm25's words are whitespace-and-punctuation words (:class:`~.tokenize.WordTokenizer`): right for
English and the other languages whose script puts spaces between words, wrong for Chinese,
Japanese and Thai (a sentence is one "word") and weak for Korean (a word carries its particles
and endings). Each tokeniser here segments one of them with the analyser that language's search
engines use, then keeps the words that carry meaning:

- ``zh``: jieba's words (its dictionary and HMM), the text folded from traditional to simplified
  characters by OpenCC first (``t2s``; ``fold=False`` keeps the characters as written): jieba's
  dictionary is simplified, and a query and a passage written in the two scripts then share
  their words.
- ``ja``: SudachiPy (sudachidict-core, split mode B: between the short units of A and the
  compounds of C), each morpheme's normalised form (``normalized_form``: 附属 for 付属,
  the dictionary form of a verb); particles, auxiliary verbs and symbols dropped, as Lucene's
  Kuromoji analyser drops them by default.
- ``ko``: kiwipiepy's morphemes; particles (``J*``), endings (``E*``), derivational affixes
  (``XPN``, ``XS*``) and punctuation dropped, as Lucene's Nori analyser drops them by default.
- ``th``: pythainlp's ``newmm`` words (maximal matching over its dictionary).
- the Latin-script (and Cyrillic) languages of bm25s's stop-word lists: bm25s's words, that
  language's stop words and Snowball stemmer (``en`` is bm25's default, unchanged).
- ``subword``: a model tokenizer's subword tokens (:mod:`.subword`), for a language with no
  segmenter here.
- ``auto``: each text's language from its script (:func:`script_language`), so a corpus that
  mixes scripts is segmented text by text; the library of a script is loaded when a text in it
  first comes. A text in a script whose words bm25s's word pattern cannot find whole and that
  has no segmenter here (:data:`~...core.scripts.SUBWORD_SCRIPT`: Devanagari, Bengali, Tamil,
  Telugu and the other Brahmic scripts, Lao, Khmer, Myanmar, Tibetan) goes to ``subword``
  when a model's tokenizer is at hand (the ``tokenizer`` option, or a hybrid's dense leg's
  tokenizer.json); the other texts (Latin, Cyrillic, Greek, Arabic, Hebrew ...: words between
  spaces) to the words. Without a model's tokenizer those texts stay on the words: the default
  subword tokenizer, MiniLM's, is English-centric and turns 89-97% of the Telugu, Kannada,
  Malayalam, Punjabi, Khmer and Myanmar characters of Django's messages into [UNK] (nDCG@10
  0.00-0.04 there, where the word path's fragments, runs of letters between vowel signs,
  score 0.41-0.50), and helps Hindi and Bengali only modestly (0.31 -> 0.38 on the term sets).

Every tokeniser lower-cases, drops the pieces without a letter or digit (punctuation, spaces),
and names itself by a :attr:`~.tokenize.Tokenizer.fingerprint` that holds its library's version
and its options, so an index (and anything keyed by it) never mixes two tokenisations. Each
library is an extra (``[zh]``, ``[ja]``, ``[ko]``, ``[th]``, ``[cjk]`` for all); a missing one is
a :class:`~...core.exceptions.MissingExtraError` that names the pip command.

Usage::

    tokenizer = make_tokenizer("zh")  # jieba with traditional -> simplified folding
    tokenizer.tokenize(["我來到北京清華大學"])  # [["我", "来到", "北京", "清华大学"]]
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...core.exceptions import ConfigError, MissingExtraError
from ...core.scripts import SEGMENTED_SCRIPT, SUBWORD_SCRIPT, script_language
from .subword import SubwordTokenizer
from .tokenize import Tokenizer, WordTokenizer

__all__ = [
    "LANGUAGES",
    "SEGMENTED",
    "WORD_LANGUAGES",
    "AutoTokenizer",
    "ChineseTokenizer",
    "JapaneseTokenizer",
    "KoreanTokenizer",
    "ThaiTokenizer",
    "make_tokenizer",
    "script_language",
]

#: a language written with spaces between words -> (bm25s's stop-word list, PyStemmer's
#: stemmer): the languages that have both
WORD_LANGUAGES: dict[str, tuple[str, str]] = {
    "da": ("da", "danish"),
    "de": ("de", "german"),
    "en": ("en", "english"),
    "es": ("es", "spanish"),
    "fr": ("fr", "french"),
    "it": ("it", "italian"),
    "nl": ("nl", "dutch"),
    "no": ("no", "norwegian"),
    "pt": ("pt", "portuguese"),
    "ru": ("ru", "russian"),
    "sv": ("sv", "swedish"),
    "tr": ("tr", "turkish"),
}

#: a piece of text that counts as a word: it holds a letter or a digit
_HAS_WORD = re.compile(r"[^\W_]").search
#: a character of a script that :class:`AutoTokenizer` segments (not a word-language word)
_SEGMENTED_SCRIPT = SEGMENTED_SCRIPT.search
#: a word character (the words' pattern holds two or more)
_ANY_WORD = re.compile(r"\w").search
#: a character of a script that :class:`AutoTokenizer` sends to its subword tokenizer
_SUBWORD_SCRIPT = SUBWORD_SCRIPT.search


def _version(distribution: str) -> str:
    """An installed distribution's version ("missing" when it is not installed)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def _require(module: str, *, language: str, package: str) -> Any:
    """``module`` imported, or the MissingExtraError that names ``language``'s extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"bm25 language={language!r} needs the {package} package: "
            f"pip install 'pytest-embedbench[{language}]'"
        ) from None


#: what ends a word inside a segmenter's piece: white space and ASCII punctuation but the
#: underscore (a word character to bm25s's words too)
_BREAK = re.compile(r"[\s!-/:-@\[-^`{-~]+")


def _words(pieces: Sequence[str]) -> list[str]:
    """The segmenter's pieces as words: each cut at white space and ASCII punctuation (a
    segmenter keeps ``%(name)s`` or ``e-mail`` whole), lower-cased, the parts without a letter
    or digit left out."""
    out: list[str] = []
    for piece in pieces:
        if _BREAK.search(piece):
            out.extend(part.lower() for part in _BREAK.split(piece) if _HAS_WORD(part))
        elif _HAS_WORD(piece):
            out.append(piece.lower())
    return out


class _SegmentingTokenizer(Tokenizer):
    """A tokeniser whose :meth:`split` does all the work (segmentation needs each word's
    context), so :meth:`terms` keeps every word as it is."""

    #: the language code, the first field of the fingerprint, and the segmenter's name
    language = ""
    library = ""

    @property
    def fingerprint(self) -> str:
        return self.identity()

    @classmethod
    def identity(cls, *, fold: bool = True) -> str:
        """The fingerprint of this class's tokeniser with these options, read from the
        installed versions without loading the library (``fold``: ``zh``'s alone)."""
        raise NotImplementedError

    def terms(self, words: Sequence[str]) -> list[str | None]:
        return list(words)


def _open_cc(config: str) -> Callable[[str], str]:
    """OpenCC's converter ``config`` (``t2s``), from opencc-python-reimplemented or OpenCC's
    own binding (both install the module ``opencc`` and know ``t2s``)."""
    opencc = _require("opencc", language="zh", package="opencc-python-reimplemented")
    convert: Callable[[str], str] = opencc.OpenCC(config).convert
    return convert


def _opencc_version() -> str:
    found = _version("opencc-python-reimplemented")
    return (
        f"opencc-python-reimplemented={found}"
        if found != "missing"
        else (f"opencc={_version('opencc')}")
    )


# The analysers' dictionaries and models load once a process (jieba ~1 s, Kiwi ~3-5 s): every
# bm25 model of a run shares them (they are only read once loaded); a Sudachi tokenizer, which
# keeps state between calls, is one per tokeniser over the shared dictionary.


@functools.cache
def _jieba(jieba: Any) -> Any:
    """A jieba tokenizer of its own, not jieba's global one (whose dictionary a user may
    change), its dictionary loaded with jieba's "Building prefix dict" lines kept quiet."""
    tokenizer = jieba.Tokenizer()
    logger = logging.getLogger("jieba")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        tokenizer.initialize()
    finally:
        logger.setLevel(level)
    return tokenizer


@functools.cache
def _sudachi_dictionary() -> Any:
    sudachipy = _require("sudachipy", language="ja", package="SudachiPy")
    try:
        return sudachipy.Dictionary(dict="core")
    except Exception as exc:  # sudachidict-core missing, or its file unreadable
        raise MissingExtraError(
            f"bm25 language='ja' needs SudachiPy's dictionary sudachidict-core ({exc}): "
            "pip install 'pytest-embedbench[ja]'"
        ) from None


@functools.cache
def _kiwi() -> Any:
    kiwipiepy = _require("kiwipiepy", language="ko", package="kiwipiepy")
    try:
        kiwi = kiwipiepy.Kiwi()
    except Exception as exc:  # kiwipiepy_model (its model files) missing
        raise MissingExtraError(
            f"bm25 language='ko' needs kiwipiepy's model kiwipiepy_model ({exc}): "
            "pip install 'pytest-embedbench[ko]'"
        ) from None
    # Kiwi reads its model on the first analysis (seconds): at load, not in the first index
    kiwi.tokenize("한국어")
    return kiwi


class ChineseTokenizer(_SegmentingTokenizer):
    """jieba's words of each text, folded from traditional to simplified by OpenCC first."""

    language = "zh"
    library = "jieba"

    def __init__(self, *, fold: bool = True) -> None:
        if not isinstance(fold, bool):
            raise ConfigError(
                f"bm25 fold={fold!r}: use true (fold traditional to simplified) or false"
            )
        jieba = _require("jieba", language="zh", package="jieba")
        self.fold = fold
        self._fold = _open_cc("t2s") if fold else None
        self._jieba = _jieba(jieba)

    @property
    def fingerprint(self) -> str:
        return self.identity(fold=self.fold)

    @classmethod
    def identity(cls, *, fold: bool = True) -> str:
        fold_name = f"fold=t2s:{_opencc_version()}" if fold else "fold=none"
        return f"zh:jieba={_version('jieba')}:hmm:{fold_name}"

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        cut, fold = self._jieba.lcut, self._fold
        if fold is None:
            return [_words(cut(text)) for text in texts]
        return [_words(cut(fold(text))) for text in texts]

    def __repr__(self) -> str:
        return f"ChineseTokenizer(fold={self.fold!r})"


#: Sudachi's part-of-speech classes left out (Lucene Kuromoji's default stop tags: particles,
#: auxiliary verbs, symbols and spaces)
JA_DROPPED = frozenset({"助詞", "助動詞", "補助記号", "記号", "空白"})
#: Sudachi refuses an input over 49,149 bytes; a text is analysed in pieces of at most this
#: many characters (4 bytes each at worst), cut at a line or sentence end where there is one
JA_PIECE = 12_000


def _ja_pieces(text: str) -> list[str]:
    """``text`` in pieces of at most :data:`JA_PIECE` characters, cut after the last line
    break or 。 of each piece where there is one."""
    pieces = []
    while len(text) > JA_PIECE:
        head = text[:JA_PIECE]
        cut = max(head.rfind("\n"), head.rfind("。"))
        end = cut + 1 if cut > 0 else JA_PIECE
        pieces.append(text[:end])
        text = text[end:]
    pieces.append(text)
    return pieces


class JapaneseTokenizer(_SegmentingTokenizer):
    """SudachiPy's morphemes (sudachidict-core, mode B), each as its normalised form, without
    particles, auxiliary verbs and symbols."""

    language = "ja"
    library = "SudachiPy"
    mode = "B"

    def __init__(self) -> None:
        dictionary = _sudachi_dictionary()
        # SudachiPy 0.7 names it tokenizer() (create() warns there); 0.6 has create() alone
        make = getattr(dictionary, "tokenizer", None) or dictionary.create
        self._tokenizer = make(mode=self.mode)

    @classmethod
    def identity(cls, *, fold: bool = True) -> str:
        return (
            f"ja:sudachipy={_version('sudachipy')}:sudachidict-core="
            f"{_version('sudachidict-core')}:mode={cls.mode}:normalized:drop={sorted(JA_DROPPED)}"
        )

    def morphemes(self, text: str) -> Iterator[Any]:
        """Every Sudachi morpheme of ``text``, particles and symbols included, piece by piece
        (the filters of generated questions count them all)."""
        tokenize = self._tokenizer.tokenize
        for piece in _ja_pieces(text):
            yield from tokenize(piece)

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        out = []
        for text in texts:
            words = [
                m.normalized_form()
                for m in self.morphemes(text)
                if m.part_of_speech()[0] not in JA_DROPPED
            ]
            out.append(_words(words))
        return out

    def __repr__(self) -> str:
        return "JapaneseTokenizer()"


#: kiwipiepy's tags left out (Lucene Nori's default stop tags, in Kiwi's tag set): particles,
#: endings, derivational prefixes and suffixes, punctuation and symbols (SL: a foreign word,
#: SH: Hanja, SN: a number are kept)
KO_DROPPED_PREFIXES = ("J", "E", "XS", "XPN", "SF", "SP", "SS", "SE", "SO", "SW", "W_")


class KoreanTokenizer(_SegmentingTokenizer):
    """kiwipiepy's morphemes, without particles, endings, affixes and symbols."""

    language = "ko"
    library = "kiwipiepy"

    def __init__(self) -> None:
        self.kiwi = _kiwi()

    @classmethod
    def identity(cls, *, fold: bool = True) -> str:
        return (
            f"ko:kiwipiepy={_version('kiwipiepy')}:kiwipiepy_model="
            f"{_version('kiwipiepy_model')}:drop={list(KO_DROPPED_PREFIXES)}"
        )

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        if not texts:
            return []
        # a list of texts: Kiwi analyses them on its threads, results in the texts' order; one
        # text (a query) as a string, without the threads' hand-over
        analysed = (
            [self.kiwi.tokenize(texts[0])] if len(texts) == 1 else self.kiwi.tokenize(list(texts))
        )
        return [
            _words([t.form for t in tokens if not t.tag.startswith(KO_DROPPED_PREFIXES)])
            for tokens in analysed
        ]

    def __repr__(self) -> str:
        return "KoreanTokenizer()"


class ThaiTokenizer(_SegmentingTokenizer):
    """pythainlp's ``newmm`` words."""

    language = "th"
    library = "pythainlp"

    def __init__(self) -> None:
        tokenize = _require("pythainlp.tokenize", language="th", package="pythainlp")
        self._segment = tokenize.word_tokenize

    @classmethod
    def identity(cls, *, fold: bool = True) -> str:
        return f"th:pythainlp={_version('pythainlp')}:newmm"

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        segment = self._segment
        return [_words(segment(text, engine="newmm", keep_whitespace=False)) for text in texts]

    def __repr__(self) -> str:
        return "ThaiTokenizer()"


#: the segmented languages: code -> the tokeniser's class
SEGMENTED: dict[str, type[_SegmentingTokenizer]] = {
    "ja": JapaneseTokenizer,
    "ko": KoreanTokenizer,
    "th": ThaiTokenizer,
    "zh": ChineseTokenizer,
}


class AutoTokenizer(Tokenizer):
    """Each text through the tokeniser of its script's language (:func:`script_language`); a
    text of a :data:`~...core.scripts.SUBWORD_SCRIPT` script (and none of the segmented ones)
    through ``subword`` where one is given; the other texts through ``words`` (English by
    default). A segmented language's library, and the subword tokenizer, are loaded when a
    text that needs it first comes.

    A word's term is one function of the word, whichever text it came from: a word with a
    character of a segmented or a subword script is kept as it is (the subword tokenizer's
    unknown token and punctuation pieces dropped), any other word (English, or a Latin word
    inside a Chinese text) goes through ``words``' stemmer and stop words."""

    def __init__(
        self,
        *,
        words: WordTokenizer | None = None,
        fold: bool = True,
        subword: SubwordTokenizer | None = None,
    ) -> None:
        if not isinstance(fold, bool):
            raise ConfigError(
                f"bm25 fold={fold!r}: use true (fold traditional to simplified) or false"
            )
        self.words = words if words is not None else WordTokenizer()
        self.fold = fold
        #: the tokenizer of the texts in a script with no segmenter (None: they go to words)
        self.subword = subword
        self._segmenters: dict[str, Tokenizer] = {}

    def _segmenter(self, language: str, text: str) -> Tokenizer:
        if language == "subword" and self.subword is not None:
            return self.subword
        if language not in self._segmenters:
            try:
                if language == "zh":
                    self._segmenters[language] = ChineseTokenizer(fold=self.fold)
                else:
                    self._segmenters[language] = SEGMENTED[language]()
            except MissingExtraError as exc:
                raise MissingExtraError(
                    f"bm25 language='auto' read a text in {language!r} ({text[:30]!r}): {exc}"
                ) from None
        return self._segmenters[language]

    @property
    def fingerprint(self) -> str:
        # every language's, loaded or not: the texts to come may bring any of them
        parts = [self.words.fingerprint]
        parts += [SEGMENTED[code].identity(fold=self.fold) for code in sorted(SEGMENTED)]
        if self.subword is not None:  # without one, the key of auto before subword routing
            parts.append(self.subword.fingerprint)
        return "auto[" + "|".join(parts) + "]"

    def route(self, text: str) -> str:
        """Where ``text`` goes: its segmented language (``ja``, ``ko``, ``th``, ``zh``),
        ``subword`` (where there is a subword tokenizer), or ``en`` (the words)."""
        language = script_language(text)
        if language == "en" and self.subword is not None and _SUBWORD_SCRIPT(text):
            return "subword"
        return language

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        by_language: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            by_language.setdefault(self.route(text), []).append(i)
        out: list[list[str]] = [[] for _ in texts]
        for language, positions in sorted(by_language.items()):
            group = [texts[i] for i in positions]
            tokenizer = self.words if language == "en" else self._segmenter(language, group[0])
            for i, words in zip(positions, tokenizer.split(group), strict=True):
                out[i] = words
        return out

    def terms(self, words: Sequence[str]) -> list[str | None]:
        out: list[str | None] = list(words)
        # the subword tokenizer's unknown token: only its texts bring it (loaded by then)
        subword = self.subword
        unknown = subword.unknown if subword is not None and subword.loaded else None
        plain = []
        for i, word in enumerate(words):
            if word == unknown:
                out[i] = None
            elif subword is not None and _SUBWORD_SCRIPT(word):
                out[i] = word if _HAS_WORD(word) else None
            elif _SEGMENTED_SCRIPT(word):
                continue
            elif _ANY_WORD(word):
                plain.append(i)
            else:  # a punctuation piece of the subword tokenizer
                out[i] = None
        if plain:
            for i, term in zip(plain, self.words.terms([words[i] for i in plain]), strict=True):
                out[i] = term
        return out

    def __repr__(self) -> str:
        return f"AutoTokenizer(words={self.words!r}, fold={self.fold!r}, subword={self.subword!r})"


#: a language code (``hi``, ``bn``, ``pt-BR``): an unknown one is a language with no segmenter
_LANGUAGE_CODE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*").fullmatch
#: the option a subword tokenizer serves, in a missing-package error
_NEEDED = {"subword": "bm25 language='subword'", "auto": "bm25 language='auto'"}

#: every value of the ``language`` option (``subword``: a model tokenizer's subword tokens,
#: the fallback for a language with no segmenter here)
LANGUAGES = (*sorted({*WORD_LANGUAGES, *SEGMENTED}), "auto", "subword")


def make_tokenizer(
    language: str | None = None,
    *,
    stopwords: Any = ...,
    stemmer: Any = ...,
    fold: Any = ...,
    tokenizer: Any = ...,
    model_tokenizer: str | Path | None = None,
) -> Tokenizer:
    """The tokeniser of bm25's options: ``language`` (None: English, bm25's default),
    ``stopwords`` and ``stemmer`` (a word language's, unless given), ``fold`` (``zh`` and
    ``auto``: traditional to simplified, default true), ``tokenizer`` (``subword``, and
    ``auto``'s texts that go to subword: the model tokenizer). Without ``tokenizer``, the
    subword tokenizer is ``model_tokenizer`` (the tokenizer.json of the model bm25 is fused
    with, on a hybrid's lexical leg) where given, else MiniLM's. An option that does not apply
    to the language is an error that names it, as is an unknown language."""
    given = {
        name: value
        for name, value in (
            ("stopwords", stopwords),
            ("stemmer", stemmer),
            ("fold", fold),
            ("tokenizer", tokenizer),
        )
        if value is not ...
    }
    code = "en" if language is None else language
    if not isinstance(code, str) or code.lower() not in LANGUAGES:
        unsupported = isinstance(code, str) and _LANGUAGE_CODE(code) is not None
        raise ConfigError(
            f"bm25 language={language!r} is not known; use one of {list(LANGUAGES)} "
            "(auto: each text's language from its script; subword: a model tokenizer's "
            "subword tokens, for a language with no segmenter here)"
            + (
                f": bm25 has no segmenter, stemmer or stop words for {code!r}, so use "
                "language: subword (with tokenizer: a multilingual model's tokenizer.json) "
                "or language: auto (which sends a text of a script with no segmenter to "
                "subword)"
                if unsupported
                else ""
            )
        )
    code = code.lower()
    if code in ("subword", "auto") and "tokenizer" in given:
        subword = SubwordTokenizer(
            given["tokenizer"], origin="given", load=code == "subword", needed_by=_NEEDED[code]
        )
    elif code in ("subword", "auto") and model_tokenizer is not None:
        subword = SubwordTokenizer(
            model_tokenizer, origin="model", load=code == "subword", needed_by=_NEEDED[code]
        )
    if code == "subword":
        wrong = sorted(set(given) - {"tokenizer"})
        if wrong:
            raise ConfigError(
                f"bm25 option{'s' if len(wrong) > 1 else ''} {', '.join(wrong)} do not apply "
                "to language 'subword' (its terms are the tokenizer's subword tokens): remove "
                f"{'them' if len(wrong) > 1 else 'it'}"
            )
        if "tokenizer" in given or model_tokenizer is not None:
            return subword
        return SubwordTokenizer()
    if "tokenizer" in given and code != "auto":
        raise ConfigError(
            f"bm25 option tokenizer applies to language 'subword' or 'auto', not {code!r}: "
            "remove it, or set language: subword"
        )
    if code in WORD_LANGUAGES or code == "auto":
        default_stop, default_stem = WORD_LANGUAGES["en" if code == "auto" else code]
        words = WordTokenizer(
            stopwords=given.get("stopwords", default_stop),
            stemmer=given.get("stemmer", default_stem),
        )
        if code == "auto":
            chosen = "tokenizer" in given or model_tokenizer is not None
            return AutoTokenizer(
                words=words, fold=given.get("fold", True), subword=subword if chosen else None
            )
        if "fold" in given:
            raise ConfigError(
                f"bm25 option fold applies to language 'zh' or 'auto', not {code!r}: remove it"
            )
        return words
    wrong = sorted(set(given) - ({"fold"} if code == "zh" else set()))
    if wrong:
        raise ConfigError(
            f"bm25 option{'s' if len(wrong) > 1 else ''} {', '.join(wrong)} do not apply to "
            f"language {code!r} (its words come from {SEGMENTED[code].library}, with no "
            "stemmer or stop-word list): remove "
            f"{'them' if len(wrong) > 1 else 'it'}"
        )
    if code == "zh":
        return ChineseTokenizer(fold=given.get("fold", True))
    return SEGMENTED[code]()
