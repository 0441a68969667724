"""Needle haystacks in Chinese (issue 44): a haystack of N tokens written without spaces has
about N tokens in the tokenizer that sized it, and in the model-free CJK-aware count."""

from __future__ import annotations

import re

import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.core.scripts import HAN, estimate_tokens
from pytest_embedbench.data.chunking import load_tokenizer
from pytest_embedbench.data.stress.needle import needle_dataset


@pytest.mark.parametrize(("length", "depth"), [(512, 0.0), (1024, 0.5), (2048, 1.0)])
def test_a_chinese_haystack_of_n_tokens_has_about_n_tokens(length: int, depth: float) -> None:
    minilm = load_tokenizer("all-MiniLM-L6-v2")
    point = needle_dataset(length, depth, seed=0, haystacks=4, language="zh")
    for doc, query in zip(point.dataset.documents, point.dataset.queries, strict=True):
        assert " " not in doc.text and not re.search("[A-Za-z]", doc.text)
        assert len(HAN.findall(doc.text)) > 0.8 * len(doc.text)
        counted = len(minilm.encode(doc.text, add_special_tokens=False).ids)
        assert length <= counted <= 1.02 * length + 20, counted
        assert abs(estimate_tokens(doc.text) - length) <= 0.02 * length + 20
        # the question's key (colour + animal) is in its haystack's needle and in no other
        key = query.text.split("金库")[0]
        assert [key in d.text for d in point.dataset.documents].count(True) == 1
        assert key in doc.text and query.text.endswith("？")
    # the filler stops at the first sentence (about 20 tokens) past the length
    assert length <= point.info["tokens"] <= 1.02 * length + 20
    assert point.dataset.name.endswith("-zh")
    if depth == 0.0:  # the needle first
        assert point.info["needle_token"] == 0
        assert all(
            d.text.startswith(q.text.split("金库")[0])
            for d, q in zip(point.dataset.documents, point.dataset.queries, strict=True)
        )


def test_a_haystack_language_that_is_not_written_is_named() -> None:
    with pytest.raises(ConfigError, match=r"needle language 'fr'.*\['en', 'zh'\]"):
        needle_dataset(512, 0.5, language="fr")
