"""Needle in a haystack: seeded haystacks at token lengths, the needle at its depth, and the
physics of a 256-token model (found in its first 256 tokens, chance beyond)."""

from __future__ import annotations

import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.data.chunking import load_tokenizer
from pytest_embedbench.data.stress.needle import needle_dataset, parse_length
from pytest_embedbench.evaluation.workloads import parse_workloads

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


def tokens(text: str) -> int:
    return len(load_tokenizer("all-MiniLM-L6-v2").encode(text, add_special_tokens=False).ids)


def test_lengths_depths_and_questions() -> None:
    start = needle_dataset("2k", 0.0, seed=1, haystacks=4, max_seq_length=256)
    end = needle_dataset("2k", 1.0, seed=1, haystacks=4, max_seq_length=256)
    for point, where in ((start, "start"), (end, "end")):
        ds = point.dataset
        assert len(ds.documents) == len(ds.queries) == 4
        for doc, query in zip(ds.documents, ds.queries, strict=True):
            assert dict(ds.qrels[query.id]) == {doc.id: 1}  # the others are its distractors
            key = query.text.removeprefix("What is the access code of the ").removesuffix(" vault?")
            needle = next(s for s in doc.text.split(". ") if key in s)
            assert (doc.text.startswith(needle)) == (where == "start")
            assert doc.text.rstrip(".").endswith(needle.rstrip(".")) == (where == "end")
            assert 2048 <= tokens(doc.text) <= 2048 + 40  # filler to the length, whole sentences
    assert start.info["cut"] is False and end.info["cut"] is True
    assert needle_dataset("2k", 0.0, seed=1, haystacks=4).info["cut"] is None  # no limit given


def test_same_seed_same_haystacks() -> None:
    a = needle_dataset(512, 0.5, seed=3, haystacks=3)
    assert (
        a.dataset.fingerprint == needle_dataset(512, 0.5, seed=3, haystacks=3).dataset.fingerprint
    )
    assert (
        a.dataset.fingerprint != needle_dataset(512, 0.5, seed=4, haystacks=3).dataset.fingerprint
    )


@pytest.mark.parametrize("bad", ["0", "x", "8", -3])
def test_bad_lengths(bad: object) -> None:
    with pytest.raises(ConfigError, match="needle length"):
        parse_length(bad)  # type: ignore[arg-type]


def test_marker_strings_become_points() -> None:
    points = parse_workloads(["needle:2k,8k@0,0.5,1", "noise:typo*10", "noise:truncate:0.25"])
    assert [p.id for p in points] == [
        "needle-2k-d0",
        "needle-2k-d50",
        "needle-2k-d100",
        "needle-8k-d0",
        "needle-8k-d50",
        "needle-8k-d100",
        "typo-x10",
        "truncate-25",
    ]
    assert points[4].param("length") == 8192 and points[4].param("depth") == 0.5
    assert points[6].seeds == tuple(range(10))


@pytest.mark.slow
def test_minilm_finds_needles_in_its_first_256_tokens_only() -> None:
    pytest.importorskip("sentence_transformers")
    from pytest_embedbench import Evaluator
    from pytest_embedbench.evaluation.workloads import evaluate_workload

    ev = Evaluator(cache=False, latency_passes=0, n_resamples=200)
    hits = {}
    for point in parse_workloads(["needle:2k,8k@0", "needle:8k@0.5,1"]):
        result = evaluate_workload(ev, MINILM, None, point, k=(1, 10))
        hits[point.id] = (float(result.hit(1)), result.info["cut"])
    # depth 0: the needle is in the 256 tokens MiniLM reads
    assert hits["needle-2k-d0"][0] >= 0.8 and hits["needle-2k-d0"][1] is False
    assert hits["needle-8k-d0"][0] >= 0.8 and hits["needle-8k-d0"][1] is False
    # past them: chance (1 in 10 haystacks), and the point says the needle was cut off
    for ident in ("needle-8k-d50", "needle-8k-d100"):
        assert hits[ident][0] <= 0.3, hits
        assert hits[ident][1] is True


def test_depths_of_one_length_share_their_haystacks() -> None:
    a = needle_dataset(512, 0.0, seed=2, haystacks=3).dataset
    b = needle_dataset(512, 1.0, seed=2, haystacks=3).dataset
    assert [q.text for q in a.queries] == [q.text for q in b.queries]
    for x, y in zip(a.documents, b.documents, strict=True):
        assert sorted(x.text.split()) == sorted(y.text.split())  # the same words, moved
