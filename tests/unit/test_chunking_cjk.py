"""Chunking text without spaces: a Chinese document (Django's own Chinese translations, from the
django wheel) chunked by tokens gives chunks of the asked size, cut at sentence ends, with no
text lost; Japanese keeps a kana and its voiced sound mark together (issue 44)."""

from __future__ import annotations

import statistics

import pytest

from pytest_embedbench.core.scripts import weighted_length
from pytest_embedbench.data.chunking import chunk_documents, load_tokenizer
from pytest_embedbench.data.datasets.core import Document
from tests.unit.test_bm25_language import messages

pytest.importorskip("django")

SIZE, OVERLAP = 64, 8


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    return load_tokenizer("all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def chinese() -> Document:
    """Django's Chinese sentences (the translations that end with 。), run together as Chinese
    is written: no space between them (those without a Latin word or a placeholder)."""
    found = set(messages("zh_Hans").values())
    sentences = sorted(t for t in found if t.endswith("。") and " " not in t)
    text = "".join(sentences)
    assert len(sentences) > 40 and len(text) > 1500
    return Document("zh", text)


def tokens(tokenizer, text: str) -> int:  # type: ignore[no-untyped-def]
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize("strategy", ["fixed", "sentence", "recursive"])
def test_a_chinese_document_chunked_by_tokens_gives_chunks_of_the_asked_size(
    minilm, chinese: Document, strategy: str
) -> None:  # type: ignore[no-untyped-def]
    chunks = chunk_documents(
        [chinese], strategy=strategy, size=SIZE, overlap=OVERLAP, unit="tokens", tokenizer=minilm
    )
    counts = [tokens(minilm, c.text) for c in chunks]
    assert max(counts) <= SIZE
    # the asked size, not a few "words": the chunks bar the last hold most of 64 tokens
    assert statistics.median(counts[:-1]) >= 0.85 * SIZE, counts
    assert sum(counts) >= tokens(minilm, chinese.text)  # every token in a chunk (overlap aside)
    covered = set()
    for c in chunks:
        assert chinese.text[c.start : c.end] == c.text
        covered.update(range(c.start, c.end))
    lost = "".join(ch for i, ch in enumerate(chinese.text) if i not in covered)
    # at most one short tail (under min_chunk_chars, Han counted three) is dropped
    assert weighted_length(lost) < 80, lost


def test_sentence_and_recursive_chunks_end_at_chinese_sentence_ends(
    minilm, chinese: Document
) -> None:  # type: ignore[no-untyped-def]
    for strategy in ("sentence", "recursive"):
        chunks = chunk_documents(
            [chinese],
            strategy=strategy,
            size=SIZE,
            overlap=OVERLAP,
            unit="tokens",
            tokenizer=minilm,
        )
        ends = [c.text[-1] for c in chunks]
        # a sentence longer than the chunk is cut inside; the others end at their 。
        assert ends.count("。") >= 0.6 * len(ends), (strategy, ends)


def test_a_chinese_paragraph_is_no_short_chunk_beside_english_ones() -> None:
    # 53 Han characters and CJK commas weigh 159 against min_chunk_chars 80: kept; counted as 53
    # characters it was "short", had no room in either neighbour and was dropped
    english = "Export all the data of a workspace as CSV from the settings page of its admin site."
    chinese = (
        "数据导出功能可以把工作区的数据保存为表格文件，"
        "也可以在设置页面中选择导出的字段、格式和编码方式以及文件名。"
    )
    text = f"{english}\n\n{chinese}\n\n{english}"
    chunks = chunk_documents([Document("d", text)], strategy="recursive", size=100, overlap=0)
    assert [c.text for c in chunks] == [english, chinese, english]


def test_a_kana_keeps_its_voiced_sound_mark() -> None:
    text = "か\u3099" * 30  # か + the combining voiced sound mark: が written in two code points
    chunks = chunk_documents(
        [Document("ja", text)], strategy="recursive", size=9, overlap=0, min_chunk_chars=0
    )
    assert all(c.start % 2 == 0 and c.end % 2 == 0 for c in chunks)
    assert "".join(c.text for c in chunks) == text
