"""Scripts of a text: which writing system it uses, and counts that fit a script without spaces.

Chinese and Japanese put no space between words, Thai none between the words of a phrase: a
count of whitespace words makes a whole sentence one "word". Two things here avoid that, for
every floor above (chunking, stress transforms, token estimates, bm25's ``auto`` language):

- :func:`script_language`: the language a text's script points to (``ja``, ``ko``, ``th``,
  ``zh``, else ``en``);
- :func:`estimate_tokens`: a model-free token count in which each Han, kana, Hangul or Thai
  character is one token (what a subword tokenizer gives those scripts, within a factor of about
  1.5: BERT's tokenizers split Han and kana into characters; OpenAI's cl100k and
  multilingual-e5's SentencePiece give about a token a character for Chinese, Korean and Thai),
  and each other run of letters and digits, or each punctuation mark, is one token (the word
  count it always was for English).

Usage::

    script_language("如何重置我的密码")   # 'zh'
    estimate_tokens("如何重置我的密码？")  # 9: eight characters and the question mark
    estimate_tokens("reset my password")  # 3
"""

from __future__ import annotations

import re

__all__ = [
    "HAN",
    "HANGUL",
    "KANA",
    "SEGMENTED_SCRIPT",
    "SPACELESS",
    "SUBWORD_SCRIPT",
    "THAI",
    "WIDE",
    "WIDE_WEIGHT",
    "estimate_tokens",
    "script_language",
    "token_spans",
    "weighted_length",
]

# the blocks of each script (their letters; punctuation apart)
_KANA_RANGES = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL_RANGES = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
_THAI_RANGES = "\u0e00-\u0e7f"
_HAN_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"

KANA = re.compile(f"[{_KANA_RANGES}]")
HANGUL = re.compile(f"[{_HANGUL_RANGES}]")
THAI = re.compile(f"[{_THAI_RANGES}]")
HAN = re.compile(f"[{_HAN_RANGES}]")
#: a character of a script that counts as a token on its own (Han, kana, Hangul, Thai)
SEGMENTED_SCRIPT = re.compile(f"[{_KANA_RANGES}{_HANGUL_RANGES}{_THAI_RANGES}{_HAN_RANGES}]")

#: a character of a script whose words bm25s's word pattern (``\w\w+``) does not find, with no
#: segmenter here: the Brahmic scripts of India and Sri Lanka (Devanagari, Bengali, Gurmukhi,
#: Gujarati, Oriya, Tamil, Telugu, Kannada, Malayalam, Sinhala), Tibetan, Myanmar and Khmer
#: write their vowels as combining marks, which Python's ``\w`` does not match ("भाषा" is
#: भ ा ष ा, no two word characters in a row: no word), and Lao, Khmer and Myanmar put no
#: space between words. Arabic, Hebrew, Greek, Cyrillic, Georgian, Armenian and Ethiopic words
#: are runs of letters between spaces, which the word pattern finds whole, so they stay on
#: the word path
SUBWORD_SCRIPT = re.compile(
    "[\u0900-\u0dff\u0e80-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff"
    "\ua8e0-\ua8ff\ua9e0-\ua9ff\uaa60-\uaa7f]"
)

#: the characters of scripts written without spaces between words, one unit each where a text
#: is cut or edited (Han, kana, and the CJK punctuation, full-width forms and half-width kana
#: around them); Hangul is written with spaces between words and Thai with spaces between
#: phrases, so their words stay whole
SPACELESS = re.compile(f"[\u3001-\u303f{_KANA_RANGES}{_HAN_RANGES}\uff01-\uffef]")

#: the characters that :func:`weighted_length` counts as :data:`WIDE_WEIGHT`: Han, kana, Hangul
#: syllables and jamo, CJK punctuation and full-width forms (the wide characters of Unicode's
#: East Asian Width, UAX #11)
WIDE = re.compile(f"[\u3001-\u303f{_KANA_RANGES}{_HANGUL_RANGES}{_HAN_RANGES}\uff01-\uffef]")
#: what a wide character weighs in :func:`weighted_length`: a Chinese word averages 1.6
#: characters where an English one takes 5.7 with its space, and a subword tokenizer gives a
#: Han character about a token where English takes 4 to 5 characters a token; 3 (the
#: character's UTF-8 bytes) stays on the short side of both
WIDE_WEIGHT = 3

#: a token of :func:`estimate_tokens`: a character of a segmented script, a run of other word
#: characters, or one punctuation mark
_TOKEN = re.compile(
    f"[{_KANA_RANGES}{_HANGUL_RANGES}{_THAI_RANGES}{_HAN_RANGES}]"
    f"|[^\\W{_KANA_RANGES}{_HANGUL_RANGES}{_THAI_RANGES}{_HAN_RANGES}]+"
    "|[^\\w\\s]"
)


def script_language(text: str) -> str:
    """The language of ``text``'s script: ``ja`` where it has kana; else the most frequent of
    Hangul (``ko``), Thai (``th``) and Han (``zh``) characters (a tie in that order); ``en``
    where it has none of them."""
    if KANA.search(text):
        return "ja"
    counts = [(len(p.findall(text)), code) for p, code in ((HANGUL, "ko"), (THAI, "th"))]
    counts.append((len(HAN.findall(text)), "zh"))
    best = max(counts, key=lambda c: c[0])  # the first of the largest: the order above
    return best[1] if best[0] else "en"


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` without a tokenizer: one per Han, kana, Hangul or Thai character, per
    run of other letters and digits, and per punctuation mark (see the module doc)."""
    return len(_TOKEN.findall(text))


def token_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each token :func:`estimate_tokens` counts, in order."""
    return [m.span() for m in _TOKEN.finditer(text)]


def weighted_length(text: str) -> int:
    """``len(text)`` with each wide character (:data:`WIDE`: Han, kana, Hangul) counted as
    :data:`WIDE_WEIGHT` characters: a length in which a Chinese, Japanese or Korean text
    measures about what the English text of the same content does (chunking's
    ``min_chunk_chars`` is measured so)."""
    return len(text) + (WIDE_WEIGHT - 1) * len(WIDE.findall(text))
