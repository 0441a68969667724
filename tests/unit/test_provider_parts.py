"""The parts providers are built from: spec fingerprints, the registry, retry, the base's
neutral defaults, and the Searcher."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_embedbench import (
    PROVIDERS,
    ConfigError,
    EmbeddingProvider,
    ModelSpec,
    ProviderError,
    Searcher,
    UnknownProviderError,
    create_provider,
    register_provider,
)
from pytest_embedbench.models.providers import provider_class, spec_fingerprint
from pytest_embedbench.models.providers.retry import (
    RetryDecision,
    RetryPolicy,
    default_retry_decision,
    retry_after_of,
    status_of,
)
from pytest_embedbench.models.providers.spec import fingerprint, number_options, stable_json

# -- spec fingerprints ----------------------------------------------------------------------


def test_spec_fingerprint_is_pinned_and_ignores_what_never_changes_numbers() -> None:
    spec = ModelSpec("hf:intfloat/e5-small-v2", name="e5", query_prefix="query: ", batch_size=8)
    # the value the pre-split code gave: baselines written before keep matching
    assert spec_fingerprint(spec, (1, 10, 100)) == "dca53fc8f206cce5"
    # neither the display name nor batch size, keys or retries change numbers
    same = ModelSpec(
        "hf:intfloat/e5-small-v2", query_prefix="query: ", api_key="sk-x", max_retries=9
    )
    assert spec_fingerprint(same, [1, 10, 100]) == "dca53fc8f206cce5"
    # a prefix, the spec or the cut-offs do
    assert spec_fingerprint(ModelSpec("hf:intfloat/e5-small-v2"), (1, 10, 100)) != (
        "dca53fc8f206cce5"
    )
    assert spec_fingerprint(spec, (10, 100)) != "dca53fc8f206cce5"


def test_fingerprint_helpers_are_order_independent() -> None:
    assert stable_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    assert len(fingerprint("x")) == 16 and len(fingerprint("x", 12)) == 12
    assert number_options({"timeout": 5, "k1": 1.2, "api_key": "s", "b": 0.7}) == {
        "b": 0.7,
        "k1": 1.2,
    }
    assert list(number_options({"z": 1, "a": 2})) == ["a", "z"]


def test_namespace_key_is_pinned() -> None:
    # the cache namespace of the pre-split code: caches filled before stay valid
    assert create_provider(ModelSpec("bm25", k1=1.2)).namespace_key() == "bm25::86200cdffd937701"


def test_spec_repr_hides_secrets() -> None:
    text = repr(ModelSpec("openai:text-embedding-3-small", api_key="sk-secret", dimensions=256))
    assert "sk-secret" not in text and "api_key='***'" in text and "dimensions=256" in text


# -- registry -------------------------------------------------------------------------------


def test_registry_suggests_the_nearest_name() -> None:
    with pytest.raises(UnknownProviderError, match=r"'bm52'.*'bm25'") as info:
        provider_class("bm52")
    assert "Known providers: [" in str(info.value)
    assert provider_class("bm25") is PROVIDERS["bm25"]


def test_register_provider_needs_a_plain_name() -> None:
    class Nameless(EmbeddingProvider):
        def load(self) -> None: ...

        def embed_batch(self, texts: list[str], *, kind: Any) -> Any: ...

    with pytest.raises(ConfigError, match="needs a 'name' without ':'"):
        register_provider(Nameless)
    Nameless.name = "a:b"
    with pytest.raises(ConfigError, match="needs a 'name' without ':'"):
        register_provider(Nameless)


# -- retry ----------------------------------------------------------------------------------


class _HTTPError(Exception):
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.response = type("R", (), {"status_code": status, "headers": headers or {}})()


class APITimeoutError(Exception):
    """Named like the OpenAI SDK's timeout, and related to no built-in class."""


def test_status_and_retry_after_are_read_whatever_the_sdk_calls_them() -> None:
    assert status_of(_HTTPError(503)) == 503
    err = Exception()
    err.status_code = 429  # type: ignore[attr-defined]
    assert status_of(err) == 429
    botocore_like = Exception()
    botocore_like.response = {  # type: ignore[attr-defined]
        "ResponseMetadata": {"HTTPStatusCode": 503, "HTTPHeaders": {"retry-after": "2"}}
    }
    assert status_of(botocore_like) == 503 and retry_after_of(botocore_like) == 2.0
    assert status_of(ValueError("x")) is None
    assert retry_after_of(_HTTPError(429, {"Retry-After": "1.5"})) == 1.5
    assert retry_after_of(_HTTPError(429, {"retry-after": "-3"})) == 0.0
    assert retry_after_of(_HTTPError(429, {"retry-after": "soon"})) is None


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        (_HTTPError(429), True),
        (_HTTPError(408), True),
        (_HTTPError(500), True),
        (_HTTPError(599), True),
        (_HTTPError(400), False),
        (_HTTPError(401), False),
        (_HTTPError(404), False),
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (APITimeoutError(), True),
        (ValueError("bad input"), False),
    ],
)
def test_default_retry_decision(exc: BaseException, retried: bool) -> None:
    assert (default_retry_decision(exc) is not None) is retried


def test_retry_after_wins_over_backoff() -> None:
    decision = default_retry_decision(_HTTPError(429, {"retry-after": "7"}))
    assert decision == RetryDecision(7.0)
    assert RetryPolicy(max_retries=3, backoff=0.5).delay(decision, 0) == 7.0


def test_backoff_doubles_with_seeded_jitter_and_a_cap() -> None:
    policy = RetryPolicy(max_retries=20, backoff=0.5)
    delays = [policy.delay(RetryDecision(), attempt) for attempt in range(8)]
    for attempt, delay in enumerate(delays):
        base = min(30.0, 0.5 * 2**attempt)
        assert 0.5 * base <= delay < 1.5 * base
    again = RetryPolicy(max_retries=20, backoff=0.5)
    assert [again.delay(RetryDecision(), a) for a in range(8)] == delays  # same seed, same sleeps
    assert policy.delay(RetryDecision(), 30) < 45.0  # capped at 30 s times the jitter


def test_gives_up_after_max_retries_or_on_a_permanent_error() -> None:
    policy = RetryPolicy(max_retries=2, backoff=0.0)
    assert not policy.gives_up(RetryDecision(), 0)
    assert not policy.gives_up(RetryDecision(), 1)
    assert policy.gives_up(RetryDecision(), 2)
    assert policy.gives_up(None, 0)


class _Flaky(EmbeddingProvider):
    """Fails its first ``failures`` requests with ``error``, then embeds."""

    name = "flaky-test"
    hosted = True
    option_names = frozenset({"api_key"})

    def __init__(self, model: str = "m", *, error: BaseException, failures: int, **opts: Any):
        super().__init__(model, **opts)
        self.error = error
        self.failures = failures

    def load(self) -> None:
        self.dimension = 2

    def embed_batch(self, texts: list[str], *, kind: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise self.error
        return [[1.0, float(len(t))] for t in texts]


def test_embedding_provider_retries_then_counts_calls() -> None:
    provider = _Flaky(error=_HTTPError(503), failures=2, backoff=0.0)
    assert provider.embed(["ab"], kind="query").shape == (1, 2)
    assert provider.calls == {"requests": 3, "retries": 2, "failed": 0}


def test_embedding_provider_gives_up_with_a_message_and_scrubs_the_key() -> None:
    error = _HTTPError(500)
    error.args = ("server said sk-123",)
    provider = _Flaky(error=error, failures=10, backoff=0.0, max_retries=1, api_key="sk-123")
    assert provider.api_key() == "sk-123"  # remembered, so it is scrubbed from messages
    with pytest.raises(ProviderError, match=r"batch 0: HTTP 500: .* after 2 attempts") as info:
        provider.embed(["ab"], kind="document")
    assert "sk-123" not in str(info.value) and "***" in str(info.value)
    assert provider.calls == {"requests": 2, "retries": 1, "failed": 1}
    permanent = _Flaky(error=_HTTPError(400), failures=1, backoff=0.0)
    with pytest.raises(ProviderError, match=r"HTTP 400") as info:
        permanent.embed(["ab"], kind="query")
    assert "attempts" not in str(info.value)
    assert permanent.calls == {"requests": 1, "retries": 0, "failed": 1}


# -- neutral defaults and the Searcher --------------------------------------------------------


def test_a_ranker_has_neutral_token_price_and_call_defaults() -> None:
    provider = create_provider("bm25")
    assert provider.prepare("text", "query") == "text"
    assert provider.count_tokens(["a b c"]) is None
    assert provider.price_per_1m_tokens() is None
    assert provider.calls == {}
    assert provider.is_free()


def test_searcher_over_a_built_index() -> None:
    pytest.importorskip("bm25s")
    from pytest_embedbench import Document

    provider = create_provider("bm25")
    provider.ensure_loaded()
    docs = [Document("d1", "the cat sat"), Document("d2", "a dog ran far")]
    searcher = Searcher(ModelSpec("bm25", name="lexical"), provider, provider.build(docs))
    hits = searcher.search("dog", 2)
    assert searcher.name == "lexical"
    assert hits[0][0] == "d2" and all(isinstance(score, float) for _, score in hits)
    assert np.isfinite([score for _, score in hits]).all()


@pytest.mark.parametrize(
    ("spec", "module", "extra"),
    [
        ("openai:text-embedding-3-small", "openai", "openai"),
        ("cohere:embed-english-v3.0", "cohere", "cohere"),
        ("ollama:nomic-embed-text", "ollama", "ollama"),
        ("voyage:voyage-3.5", "voyageai", "voyage"),
        ("bedrock:amazon.titan-embed-text-v2:0", "boto3", "bedrock"),
        ("hf:sentence-transformers/all-MiniLM-L6-v2", "sentence_transformers", "st"),
    ],
)
def test_a_missing_sdk_names_the_provider_and_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, spec: str, module: str, extra: str
) -> None:
    """Each provider loads its SDK through Provider.sdk (its sdk_module and extra)."""
    import sys

    from pytest_embedbench.core.exceptions import MissingExtraError

    monkeypatch.setitem(sys.modules, module, None)  # its import fails, as when not installed
    provider = create_provider(spec)
    with pytest.raises(MissingExtraError) as caught:
        provider.load()
    name = spec.split(":")[0]
    assert str(caught.value).startswith(f"provider {name!r} needs the {module} package (")
    assert str(caught.value).endswith(f"): pip install 'pytest-embedbench[{extra}]'")
