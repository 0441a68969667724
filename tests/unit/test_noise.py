"""Query noise: one eligible word, one edit; seeded per query; other kinds keep the words."""

from __future__ import annotations

import re

import pytest

from pytest_embedbench.core.exceptions import ConfigError, StressUnavailableError
from pytest_embedbench.data.datasets import Query, RetrievalDataset
from pytest_embedbench.data.stress.noise import (
    STOPWORDS,
    TYPO_OPS,
    noisy_dataset,
    parse_noise,
    perturb,
    query_rng,
)

QUERIES = [
    "how do I reset my password",
    "export workspace data as CSV from settings",
    "What is the rate limit of the API?",
    "Vitamin D deficiency increases the risk of multiple sclerosis",
    "is it ok",
    "ALL CAPS QUERY ABOUT BILLING",
]


def damerau(a: str, b: str) -> int:
    """Optimal string alignment distance (one transposition counts as one edit)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]+|[\W\d_]+", text)


@pytest.mark.parametrize("op", sorted(TYPO_OPS))
@pytest.mark.parametrize("word", ["password", "CSV", "Vitamin", "sclerosis", "all", "letter"])
def test_each_typo_op_is_one_edit(op: str, word: str) -> None:
    for seed in range(30):
        changed = TYPO_OPS[op](word, query_rng(seed, "typo", word))
        assert changed != word
        assert damerau(changed, word) == 1, (op, word, changed)


@pytest.mark.parametrize("text", QUERIES)
def test_typo_changes_exactly_one_eligible_word_by_one_edit(text: str) -> None:
    eligible = [
        w for w in re.findall(r"[^\W\d_]+", text) if len(w) >= 3 and w.lower() not in STOPWORDS
    ]
    for seed in range(50):
        noisy = perturb(Query("q", text), "typo", seed)
        if not eligible:
            assert noisy == text  # nothing to change: stopwords and short words stay
            continue
        assert damerau(noisy, text) == 1
        before, after = text.split(), noisy.split()
        assert len(before) == len(after)  # a letter edit never merges or splits words
        diff = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        assert len(diff) == 1
        old, new = diff[0]
        core = re.sub(r"[\W\d_]+", "", old)
        assert core in eligible, (text, noisy)
        assert damerau(old, new) == 1


def test_stopwords_and_short_words_are_never_touched() -> None:
    text = "is it on the web or an app"  # 'web' and 'app' are the only eligible words
    for seed in range(200):
        noisy = perturb(Query("q", text), "typo", seed).split()
        for a, b in zip(text.split(), noisy, strict=True):
            if a not in ("web", "app"):
                assert a == b
    assert perturb("what is it to me", "typo", 1) == "what is it to me"


@pytest.mark.parametrize("kind", ["typo", "case", "shuffle", "truncate:0.5"])
def test_same_seed_same_query_other_seeds_differ(kind: str) -> None:
    q = Query("q7", "Vitamin D deficiency increases the risk of multiple sclerosis")
    first = [perturb(q, kind, seed) for seed in range(10)]
    assert first == [perturb(q, kind, seed) for seed in range(10)]
    if kind != "truncate:0.5":  # truncation keeps the leading words whatever the seed
        assert len(set(first)) > 1
    # the draw is per query id: the same text under another id draws differently
    other = [perturb(Query("q8", q.text), kind, seed) for seed in range(10)]
    if kind not in ("truncate:0.5", "case"):
        assert other != first


def test_seed_is_stable_across_processes() -> None:
    # SHA-256 of (seed, kind, id), not hash(): a fixed value in every process
    assert perturb(Query("q1", "how do I reset my password"), "typo", 0) == perturb(
        Query("q1", "how do I reset my password"), "typo", 0
    )
    assert int(query_rng(0, "typo", "q1").integers(1 << 30)) == int(
        query_rng(0, "typo", "q1").integers(1 << 30)
    )


def test_case_truncate_shuffle() -> None:
    text = "Export workspace data as CSV"
    assert perturb(text, "case", 0).lower() == text.lower()
    assert perturb(text, "case", 0) != text
    assert perturb(text, "truncate:0.5", 0) == "Export workspace data"
    assert perturb(text, "truncate:0.2", 0) == "Export"
    assert perturb("one", "truncate:0.1", 0) == "one"
    shuffled = perturb(text, "shuffle", 0)
    assert shuffled != text and sorted(shuffled.split()) == sorted(text.split())


def test_paraphrase_needs_a_chat_model() -> None:
    with pytest.raises(StressUnavailableError, match="paraphraser"):
        perturb("reset password", "paraphrase", 0)
    assert perturb("reset password", "paraphrase", 0, paraphraser=str.upper) == "RESET PASSWORD"


@pytest.mark.parametrize("bad", ["typos", "truncate:2", "truncate:x", "case:1", "truncate:0", 3])
def test_bad_kinds_name_the_fix(bad: object) -> None:
    with pytest.raises(ConfigError):
        parse_noise(bad)  # type: ignore[arg-type]


def test_noisy_dataset_keeps_documents_qrels_and_ids() -> None:
    ds = RetrievalDataset.from_dicts(
        {"d1": "Reset a password.", "d2": "Invoices as PDF."},
        {"q1": "how do I reset my password", "q2": "monthly invoices pdf"},
        {"q1": {"d1": 1}, "q2": {"d2": 2}},
        name="tiny",
    )
    noisy = noisy_dataset(ds, "typo", seed=3)
    assert noisy.documents == ds.documents
    assert {q: dict(j) for q, j in noisy.qrels.items()} == {q: dict(j) for q, j in ds.qrels.items()}
    assert [q.id for q in noisy.queries] == [q.id for q in ds.queries]
    assert [q.text for q in noisy.queries] != [q.text for q in ds.queries]
    assert noisy.fingerprint == noisy_dataset(ds, "typo", seed=3).fingerprint
    assert noisy.fingerprint != noisy_dataset(ds, "typo", seed=4).fingerprint
