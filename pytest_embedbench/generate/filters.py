"""The filters a returned question passes (:data:`~.report.REJECT_REASONS`, in that order):
heuristics on its words, the answerability, round-trip and margin judge, near-duplicates
across the whole set; then, among the questions that passed every filter, the per-chunk cap.

The cap comes last so that the counts say what the filters found: a model that writes five
questions where two were asked has its bad ones counted by reason, and only good questions
beyond the two are counted as ``extra``.

Why ``rapidfuzz`` for the near-duplicate filter: see the package docstring.

Questions in Chinese, Japanese, Korean and Thai (the language of a question is the one its script
says, :func:`~..retrieval.lexical.languages.script_language`) are read by that language's
analyser, the ones ``bm25`` segments with (:mod:`.languages`, the extras ``[zh]``, ``[ja]``,
``[ko]``, ``[th]``): see :func:`_reading`. Every other question goes the English way, unchanged.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .settings import GenerationError, GenerationSettings, import_extra

if TYPE_CHECKING:
    from ..core.types import Chunk
    from .report import GenerationReport

_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

_SOURCE_NOUNS = (
    r"passage|document|text|excerpt|article|paragraph|context|chunk|snippet|extract|"
    r"author|writer|reading"
)
_REFERS_TO_SOURCE = re.compile(
    rf"\b(?:(?:this|that|the|above|given|provided|following|same)\s+(?:{_SOURCE_NOUNS})s?\b"
    r"|according to (?:it|this|the (?:passage|text|document|author))"
    r"|(?:mentioned|described|discussed|stated) (?:above|here|in it)"
    r"|in (?:this|the) (?:section|passage)\b)",
    re.IGNORECASE,
)
_GENERIC = re.compile(
    r"^(?:please\s+|can you\s+|could you\s+)?"
    r"(?:summari[sz]e|sum up|give (?:me )?(?:a |an )?(?:summary|overview)|"
    r"provide (?:a |an )?(?:summary|overview)|describe (?:this|it|the content)|"
    r"what(?:'s| is) (?:this|it) (?:all )?about|what (?:is|are) the (?:main|key|central) "
    r"(?:point|idea|topic|theme|takeaway|message|argument)s?\b|"
    r"what (?:is|was) the (?:topic|purpose|subject|gist)\b|"
    r"what does (?:this|it) (?:say|describe|discuss|cover|explain|talk about)|"
    r"what (?:can|do) (?:we|you|i) learn\b|what information is (?:given|provided)\b)",
    re.IGNORECASE,
)
_STOP_WORDS = frozenset(
    """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else
    ever every few for from further get gets got had has have having he her here hers him his
    how i if in into is it its itself just let like may me might more most much must my no nor
    not now of off on once one only or other our out over own per same shall she should so some
    such than that the their them then there these they thing things this those through to too
    under until up upon us use used using very was way we were what whatever when where whether
    which while who whom whose why will with within without would yes yet you your
    """.split()
)


def _question_words(question: str) -> list[str]:
    return _WORDS.findall(question)


#: JSON or markup in a question's text: braces, a key's quote and colon, an
#: escaped character, a chat template's special token. A small model held to a schema can run
#: a question into the next object (``"What is ...?}, {"``): a question no user would type
_MARKUP = re.compile(r'[{}]|"\s*[:,]|\\[nt"\\]|<\|[^|>]*\|>|</?[a-z]+>')


#: what ends a question: '?' and its forms in other scripts: full-width (Chinese, Japanese,
#: Korean), small and vertical, Arabic, Ethiopic, and Greek's own question mark U+037E (which
#: looks like ';': an ASCII ';' ends a clause in every other language, so it is not one)
QUESTION_MARKS = ("?", "\uff1f", "\ufe56", "\ufe16", "\u061f", "\u1367", "\u037e")


def _heuristic_reason(question: str, settings: GenerationSettings) -> str | None:
    """The first heuristic filter ``question`` fails, or None."""
    if _MARKUP.search(question):
        return "markup"
    if not question.rstrip().endswith(QUESTION_MARKS):
        return "no_question_mark"
    if (language := _language(question)) != "en":
        return _segmented_reason(question, language, settings)
    words = _question_words(question)
    if len(words) < settings.min_question_words:
        return "too_short"
    if len(words) > settings.max_question_words:
        return "too_long"
    if _REFERS_TO_SOURCE.search(question):
        return "refers_to_source"
    if _GENERIC.search(question.strip()):
        return "generic"
    content = [w for w in words if w.casefold() not in _STOP_WORDS and (len(w) > 2 or w.isdigit())]
    if not content:
        return "no_content_words"
    return None


# ---------------------------------------------------------------------------------------------
# Chinese, Japanese, Korean and Thai: the same filters, with each language's words
#
# A question in these scripts has no spaces between words (Korean has spaces between phrases
# that carry their particles and endings), so its words are its analyser's: jieba (the text
# folded to simplified characters by OpenCC first), SudachiPy (mode B), kiwipiepy and
# pythainlp's newmm, the ones bm25 segments with. A word count counts every word, particles
# and endings too, as English counts "do", "I" and "my": "如何重置我的密码？" is 5 words, like
# "How do I reset my password?". The English stop words do not apply to them: each language
# has its own (below), and a Latin word inside such a question is an English stop word or not.


@dataclass(frozen=True)
class _Rules:
    """What refers to the source, and what is generic, in one language: patterns matched on the
    question's words run together (:attr:`_Reading.text`), a match starting and ending at
    word boundaries (so 本文, "this text", is not found inside 日本文化)."""

    name: str  # the language's name, for messages
    packages: str  # what its analyser needs, for the missing-extra message
    refers: re.Pattern[str]
    generic: re.Pattern[str]


_RULES: dict[str, _Rules] = {
    # Chinese, matched on the text folded to simplified characters
    "zh": _Rules(
        "Chinese",
        "jieba and opencc-python-reimplemented",
        re.compile(
            r"(?:这|该|本|此|以上|以下|上述|下述|前述|所给|给定|给出的)(?:一)?"
            r"(?:篇|段|份|个|则|节|部分|些)?"
            r"(?:文章|文本|文字|段落|文档|材料|短文|章节|内容|摘录|节选|片段|资料|文段|语段|段话)"
            r"|本文|原文|上文|下文|文中|作者|笔者"
            r"|根据(?:文章|文本|材料|资料|上文|本文|原文)"
        ),
        re.compile(
            r"^(?:请|麻烦)?(?:你)?(?:总结|概括|归纳|概述|简述|摘要|简要介绍)"
            r"|(?:讲|说|写|讲述|谈|介绍)(?:了|的是)?什么|(?:是)?关于什么"
            r"|主要(?:内容|讲|说|讲述|观点|意思|思想)|中心思想|大意|主旨"
            r"|(?:要点|重点|主题)(?:是什么|有哪些)"
        ),
    ),
    "ja": _Rules(
        "Japanese",
        "SudachiPy and sudachidict-core",
        re.compile(
            r"(?:この|その|本|上記の?|以下の|前記の?|当該の?|与えられた|次の)"
            r"(?:文章|文書|記事|段落|テキスト|資料|本文|一節|箇所|抜粋|パッセージ|文|節|内容)"
            r"|本文|文中|筆者|著者|作者|上記"
        ),
        re.compile(
            r"^(?:要約|概要|要点)(?:を|して|は)|(?:要約|まとめ)(?:して|てください)"
            r"|何について(?:書か|述べ|説明|話|の|です)"
            r"|(?:主な|主要な)(?:内容|ポイント|論点|テーマ|要点)"
            r"|(?:要旨|趣旨|主題|テーマ|要点)は何|何が書かれ|何を(?:言っ|述べ|説明し)"
        ),
    ),
    # Korean, matched on the words run together: 이 글은 -> 이글은
    "ko": _Rules(
        "Korean",
        "kiwipiepy and kiwipiepy_model",
        re.compile(
            r"(?:이|위|본|해당|다음|앞|주어진|제시된)"
            r"(?:글|문서|기사|단락|문단|텍스트|지문|본문|구절|발췌문|자료|문장)"
            r"|저자|필자|작성자|글쓴이"
        ),
        re.compile(
            r"^(?:요약|정리)|(?:무엇|뭐)에(?:관한|대한|관하|대하)"
            r"|(?:주요|핵심)(?:내용|요점|주제|논점|포인트)"
            r"|(?:주제|요점|요지)(?:은|는)?(?:무엇|뭐)|무엇을(?:말하|설명하|다루)"
        ),
    ),
    "th": _Rules(
        "Thai",
        "pythainlp",
        re.compile(
            r"(?:บทความ|ข้อความ|เอกสาร|ย่อหน้า|เนื้อหา|ข้อเขียน|บทอ่าน)"
            r"(?:นี้|ข้างต้น|ดังกล่าว|ที่ให้มา|ที่กำหนด)"
            r"|ผู้เขียน|ผู้แต่ง|(?:ตาม|ใน|จาก)(?:บทความ|ข้อความ|เอกสาร|ย่อหน้า)"
        ),
        re.compile(
            r"^(?:โปรด|ช่วย|กรุณา)?สรุป|เกี่ยวกับอะไร|(?:ใจความ|ประเด็น|เนื้อหา|สาระ)(?:หลัก|สำคัญ)"
            r"|(?:พูดถึง|กล่าวถึง)อะไร|มีเนื้อหาอะไร|หัวข้อ(?:หลัก)?คืออะไร"
        ),
    ),
}

#: Chinese words that carry no subject of their own (simplified: the text is folded first):
#: particles, pronouns, question words, auxiliaries, measure words, the commonest verbs
_ZH_STOP_WORDS = frozenset(
    """
    的 地 得 了 着 过 是 在 和 与 及 或 或者 并 而 而且 但 但是 也 都 就 还 又 才 很 最 更 再
    不 没 没有 有 会 能 能够 可以 可能 应该 应当 要 需要 想 吗 呢 吧 啊 呀 么 嘛 把 被 让 给 对
    从 向 到 于 以 为 为了 由 用 按 跟 这 那 这个 那个 这些 那些 这里 那里 这是 那是 这样 那样
    此 其 之 该 我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 大家 什么 什么样 是什么
    怎么 怎样 怎么样 如何 为什么 为何 哪 哪个 哪些 哪里 哪儿 谁 何 何时 多少 几 多 多久 是否
    是不是 能否 可否 请问 请 问 一 一个 个 些 一些 种 等 时 时候 里 中 上 下 做 进行 呢 如果
    """.split()
)
#: Japanese: morphemes of these parts of speech carry meaning, unless their second level is
#: 非自立可能 (the light verbs and nouns: する, いる, ある, こと, もの) or their normalised
#: form is below (question words a noun's class holds)
_JA_CONTENT = frozenset({"名詞", "動詞", "形容詞", "形状詞"})
_JA_STOP_WORDS = frozenset({"何", "何処", "何時", "誰", "幾つ", "幾ら", "事", "物", "為", "様"})
#: Korean: Kiwi's tags of words that carry meaning (nouns, verbs, adjectives, roots, foreign
#: words, hanja, numbers), unless the morpheme is a light verb or a question word below
_KO_CONTENT = frozenset({"NNG", "NNP", "VV", "VA", "XR", "SL", "SH", "SN"})
_KO_STOP_WORDS = frozenset(
    {"하", "되", "있", "없", "이", "아니", "같", "어떻", "어떠", "그렇", "이렇", "저렇", "않"}
)
#: Kiwi's tags of punctuation and symbols: not words
_KO_SYMBOLS = ("SF", "SP", "SS", "SE", "SO", "SW")


@dataclass(frozen=True)
class _Reading:
    """A question as its language's analyser reads it."""

    #: every word, particles and endings too (punctuation not): the word count
    words: tuple[str, ...]
    #: the words that carry meaning: no_content_words when there is none
    content: tuple[str, ...]
    #: the words run together, lower-cased (Chinese folded to simplified characters): what the
    #: patterns and the near-duplicate filter read
    text: str
    #: the offsets in ``text`` where a word starts or ends
    bounds: frozenset[int]


def _language(question: str) -> str:
    """``question``'s language by its script: ``en`` (the English filters) unless it holds
    Chinese, Japanese, Korean or Thai characters."""
    from ..retrieval.lexical.languages import script_language

    return script_language(question)


def _english_stop(word: str) -> bool:
    return word.casefold() in _STOP_WORDS


def _word_analyser(
    tokenizer: Any, stop: frozenset[str]
) -> Callable[[str], tuple[list[str], list[bool]]]:
    """An analyser of a language whose tokenizer splits a text into words (zh, th): a word
    carries meaning unless it is a stop word of the language or of English."""

    def analyse(text: str) -> tuple[list[str], list[bool]]:
        words = tokenizer.split([text])[0]
        return words, [w not in stop and not _english_stop(w) for w in words]

    return analyse


@functools.cache
def _analyser(language: str) -> Callable[[str], tuple[list[str], list[bool]]]:
    """``language``'s analyser: a question -> (its words, which of them carry meaning), loaded
    once a process (the dictionaries bm25's tokenisers load, shared with them)."""
    from ..retrieval.lexical import languages

    if language == "zh":
        return _word_analyser(languages.ChineseTokenizer(fold=True), _ZH_STOP_WORDS)
    if language == "th":
        th = languages.ThaiTokenizer()
        from pythainlp.corpus import thai_stopwords

        # pythainlp's list, and the question particles it leaves out
        stop = frozenset(thai_stopwords()) | {"ไหม", "มั้ย", "หรือ", "หรือไม่", "กี่", "ยังไง"}
        return _word_analyser(th, stop)
    if language == "ja":
        ja = languages.JapaneseTokenizer()

        def japanese(text: str) -> tuple[list[str], list[bool]]:
            words, content = [], []
            for m in ja.morphemes(text):
                pos = m.part_of_speech()
                if pos[0] in ("補助記号", "記号", "空白"):
                    continue
                words.append(m.surface().lower())
                content.append(
                    pos[0] in _JA_CONTENT
                    and pos[1] != "非自立可能"
                    and m.normalized_form() not in _JA_STOP_WORDS
                    and not _english_stop(m.surface())
                )
            return words, content

        return japanese
    kiwi = languages.KoreanTokenizer().kiwi  # Kiwi itself: the filters read every morpheme

    def korean(text: str) -> tuple[list[str], list[bool]]:
        words, content, end = [], [], 0
        for token in kiwi.tokenize(text):
            tag = token.tag.split("-")[0]  # VA-I: an irregular adjective
            # a contracted morpheme shares its syllable (인가 is 이 + ㄴ가): each word is the
            # text it adds, so the words run together are the text without its spaces
            surface = text[max(token.start, end) : token.start + token.len]
            end = max(end, token.start + token.len)
            if tag.startswith(_KO_SYMBOLS) or not surface:
                continue
            words.append(surface.lower())
            content.append(
                tag in _KO_CONTENT
                and token.form not in _KO_STOP_WORDS
                and not _english_stop(surface)
            )
        return words, content

    return korean


def _reading(question: str, language: str) -> _Reading:
    """``question`` read by ``language``'s analyser; a missing analyser is a GenerationError
    naming its extra."""
    from ..core.exceptions import MissingExtraError

    try:
        analyse = _analyser(language)
    except (MissingExtraError, ImportError):
        rules = _RULES[language]
        raise GenerationError(
            f"the question filters read {rules.name} questions ({question[:40]!r}) with "
            f"{rules.packages}, which are not installed: pip install "
            f"'pytest-embedbench[{language}]' ('pytest-embedbench[cjk]' for all four languages)"
        ) from None
    # NFKC: full-width letters and digits as ASCII; Thai only composed (NFKC splits ำ in two)
    words, content = analyse(unicodedata.normalize("NFC" if language == "th" else "NFKC", question))
    bounds, offset = {0}, 0
    for word in words:
        offset += len(word)
        bounds.add(offset)
    return _Reading(
        tuple(words),
        tuple(w for w, keep in zip(words, content, strict=True) if keep),
        "".join(words),
        frozenset(bounds),
    )


def _found(pattern: re.Pattern[str], reading: _Reading) -> bool:
    """Whether ``pattern`` matches ``reading``'s text from a word's start to a word's end."""
    for start in sorted(reading.bounds):
        match = pattern.match(reading.text, start)
        if match and match.end() in reading.bounds and match.end() > start:
            return True
    return False


def _segmented_reason(question: str, language: str, settings: GenerationSettings) -> str | None:
    """:func:`_heuristic_reason` after the question mark, for a Chinese, Japanese, Korean or
    Thai question: the same filters in the same order, with its language's words."""
    reading = _reading(question, language)
    if len(reading.words) < settings.min_question_words:
        return "too_short"
    if len(reading.words) > settings.max_question_words:
        return "too_long"
    rules = _RULES[language]
    if _REFERS_TO_SOURCE.search(question) or _found(rules.refers, reading):
        return "refers_to_source"
    if _GENERIC.search(question.strip()) or _found(rules.generic, reading):
        return "generic"
    if not reading.content:
        return "no_content_words"
    return None


def _duplicate_key(question: str) -> str:
    """What the near-duplicate filter compares: an English question case-folded with its white
    space collapsed; a Chinese, Japanese, Korean or Thai one as its words run together
    (NFKC-normalised, Chinese folded to simplified characters, punctuation and spaces left
    out), so "如何重置密码?" and "如何重置密碼？" are one question."""
    language = _language(question)
    if language == "en":
        return " ".join(question.casefold().split())
    return _reading(question, language).text


#: the reasons :class:`_Pool` decides (every other reason is decided question by question)
DUPLICATE, ACROSS_DOCUMENTS, EXTRA = "duplicate", "duplicate_across_documents", "extra"


@dataclass
class _Candidate:
    """A question that passed the filters of its own words and the judge, with its place."""

    chunk: int  # the chunk's place in the sample: the cap is per chunk
    doc_id: str
    source_chunk_id: str
    question: str
    answer: str
    seed: int
    #: None while kept; DUPLICATE or ACROSS_DOCUMENTS once a near-duplicate is found
    status: str | None = None


class _Pool:
    """Near-duplicates across the whole set, then the per-chunk cap.

    Near-duplicates are rapidfuzz's ``fuzz.ratio`` on case-folded, whitespace-collapsed texts,
    at or above the threshold (0..1). A question asked of chunks of *different documents* (a
    generic one, "What are the long-term health effects of dietary fiber?") has no one
    document for an answer, so every copy is rejected (``duplicate_across_documents``), the
    first one too, even when it came chunks earlier. A question asked again of the same
    document (overlapping chunks) keeps its first copy (``duplicate``). Then each chunk keeps
    its first ``questions_per_chunk`` questions that are left, in the model's order; the
    rest are ``extra``.
    """

    def __init__(self, threshold: float, per_chunk: int) -> None:
        import_extra("rapidfuzz", "the near-duplicate filter needs rapidfuzz")
        from rapidfuzz import fuzz, process

        self._fuzz, self._process = fuzz, process
        self.cutoff = threshold * 100.0
        self.per_chunk = per_chunk
        self.keys: list[str] = []
        self.entries: list[_Candidate] = []

    @staticmethod
    def key(question: str) -> str:
        return _duplicate_key(question)

    def add(self, candidate: _Candidate) -> None:
        """Compare ``candidate`` with every question before it, and keep it in the pool: a
        later copy may still be found."""
        key = self.key(candidate.question)
        found = self._process.extract(
            key, self.keys, scorer=self._fuzz.ratio, score_cutoff=self.cutoff, limit=None
        )
        matches = [self.entries[index] for _, _, index in found]
        if any(m.doc_id != candidate.doc_id or m.status == ACROSS_DOCUMENTS for m in matches):
            for match in matches:
                match.status = ACROSS_DOCUMENTS
            candidate.status = ACROSS_DOCUMENTS
        elif matches:
            candidate.status = DUPLICATE
        self.keys.append(key)
        self.entries.append(candidate)

    def kept(self) -> tuple[list[_Candidate], int]:
        """The questions kept, in corpus order, and how many the cap dropped."""
        out: list[_Candidate] = []
        taken: dict[int, int] = {}
        dropped = 0
        for entry in self.entries:
            if entry.status is not None:
                continue
            if taken.get(entry.chunk, 0) >= self.per_chunk:
                dropped += 1
                continue
            taken[entry.chunk] = taken.get(entry.chunk, 0) + 1
            out.append(entry)
        return out, dropped

    def tally(self, report: GenerationReport) -> list[_Candidate]:
        """Put the pool's counts in ``report`` (a later copy can change an earlier verdict, so
        they are counted afresh); the questions kept."""
        kept, dropped = self.kept()
        statuses = [e.status for e in self.entries]
        for reason, n in (
            (DUPLICATE, statuses.count(DUPLICATE)),
            (ACROSS_DOCUMENTS, statuses.count(ACROSS_DOCUMENTS)),
            (EXTRA, dropped),
        ):
            report.rejected[reason] = n
        report.rejected = +report.rejected  # drop zero counts
        report.kept = len(kept)
        return kept


class _Judge:
    """The answerability and round-trip filters, with an embedding model (a model spec)."""

    def __init__(self, spec: str, chunks: Sequence[Chunk], settings: GenerationSettings) -> None:
        import numpy as np

        from ..models.providers import EmbeddingProvider, ModelSpec, create_provider

        self._np = np
        self.spec = spec
        provider = create_provider(ModelSpec.coerce(spec))
        if not isinstance(provider, EmbeddingProvider):
            raise GenerationError(
                f"embedding model {spec!r} is not an embedding model; the answerability filter "
                "compares vectors: name a dense model (hf:..., ollama:..., openai:...)"
            )
        provider.ensure_loaded()
        self.provider = provider
        self.settings = settings
        self.chunk_index = {c.id: i for i, c in enumerate(chunks)}
        self.doc_of = np.array([c.doc_id for c in chunks], dtype=object)
        self.matrix = provider.embed([c.text for c in chunks], kind="document")

    def reasons(self, questions: Sequence[str], chunk: Chunk) -> list[str | None]:
        """For each question: None (kept), ``"unanswerable"``, ``"round_trip"`` or
        ``"low_margin"``.

        Documents rank by their best chunk (max-pooling, as the benchmark ranks them). The
        margin is the source document's score minus the best score of any other document:
        a question several documents answer about equally well (a generic one) has its
        source in the top ``round_trip_k`` by chance, and a margin below ``min_margin``
        (in the judge model's similarity units) says so.
        """
        np = self._np
        if not questions:
            return []
        vectors = self.provider.embed(list(questions), kind="query")
        scores = vectors.astype(np.float64) @ self.matrix.astype(np.float64).T
        own = self.chunk_index[chunk.id]
        min_margin = self.settings.min_margin
        out: list[str | None] = []
        for row in scores:
            if row[own] < self.settings.min_similarity:
                out.append("unanswerable")
                continue
            best: dict[str, float] = {}  # a document ranks by its best chunk
            for doc, score in zip(self.doc_of, row, strict=True):
                if score > best.get(doc, -math.inf):
                    best[doc] = float(score)
            ranked = sorted(best.items(), key=lambda kv: (-kv[1], _desc(kv[0])))
            top = {doc for doc, _ in ranked[: self.settings.round_trip_k]}
            if chunk.doc_id not in top:
                out.append("round_trip")
                continue
            other = max((v for doc, v in best.items() if doc != chunk.doc_id), default=-math.inf)
            margin = best[chunk.doc_id] - other
            out.append("low_margin" if min_margin is not None and margin < min_margin else None)
        return out


def _desc(text: str) -> tuple[int, ...]:
    """A key that sorts strings in descending order (the ranking tie rule: id descending)."""
    return tuple(-ord(c) for c in text) + (1,)


def _judged(
    questions: Sequence[tuple[str, str]],
    chunk: Chunk,
    settings: GenerationSettings,
    report: GenerationReport,
    judge: _Judge | None,
) -> list[tuple[str, str]]:
    """The questions of one chunk that pass the filters of their own words and the judge,
    every one of them (the cap comes after the duplicates: :class:`_Pool`); each rejected
    question is counted under the first filter it fails."""
    report.candidates += len(questions)
    passed: list[tuple[str, str]] = []
    for question, answer in questions:
        reason = _heuristic_reason(question, settings)
        if reason:
            report.rejected[reason] += 1
        else:
            passed.append((question, answer))
    if judge is not None and passed:
        verdicts = judge.reasons([q for q, _ in passed], chunk)
        for reason in verdicts:
            if reason:
                report.rejected[reason] += 1
        passed = [qa for qa, reason in zip(passed, verdicts, strict=True) if reason is None]
    return passed


def _rows(kept: Sequence[_Candidate]) -> list[dict[str, Any]]:
    """The kept questions as the rows :func:`~.evalset.evalset_rows` numbers."""
    return [
        {
            "query": c.question,
            "relevant_doc_ids": [c.doc_id],
            "answer": c.answer,
            "source_chunk_id": c.source_chunk_id,
            "seed": c.seed,
        }
        for c in kept
    ]
