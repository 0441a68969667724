"""Each provider through its real SDK against a loopback server speaking its wire format."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pytest_embedbench import (
    MissingKeyError,
    ModelSpec,
    ProviderError,
    RetrievalDataset,
    create_provider,
    evaluate,
)

from .servers import Behaviour, FakeEmbeddingServer

TEXTS = [
    "reset a forgotten password",
    "export the workspace as csv",
    "monthly invoices arrive by email",
    "rate limits of the public api",
    "offline sync on the mobile app",
    "single sign on with saml",
    "webhook signatures and retries",
]

# name -> (server fixture, spec, options from the server, documents per request limit)
TARGETS: dict[str, tuple[str, str, Callable[[FakeEmbeddingServer], dict[str, Any]]]] = {
    "openai": (
        "openai_server",
        "openai:text-embedding-3-small",
        lambda s: {"base_url": f"{s.url}/v1"},
    ),
    "cohere": ("cohere_server", "cohere:embed-english-v3.0", lambda s: {"base_url": s.url}),
    "voyage": ("voyage_server", "voyage:voyage-3.5", lambda s: {"base_url": f"{s.url}/v1"}),
    "ollama": ("ollama_server", "ollama:nomic-embed-text", lambda s: {"host": s.url}),
    "bedrock-titan": (
        "bedrock_server",
        "bedrock:amazon.titan-embed-text-v2:0",
        lambda s: {"endpoint_url": s.url, "region": "us-east-1"},
    ),
    "bedrock-cohere": (
        "bedrock_server",
        "bedrock:cohere.embed-english-v3",
        lambda s: {"endpoint_url": s.url, "region": "us-east-1"},
    ),
}


@pytest.fixture(params=sorted(TARGETS))
def target(request: pytest.FixtureRequest, keys: dict[str, str]):
    fixture, spec, options = TARGETS[request.param]
    server = request.getfixturevalue(fixture)

    def make(**extra: Any):
        opts = {"backoff": 0.0, **options(server), **extra}
        if request.param == "bedrock-titan":
            opts.pop("batch_size", None)
        return create_provider(ModelSpec(spec, **opts))

    return request.param, server, make


def expected(provider: Any, server: FakeEmbeddingServer, text: str, kind: str) -> np.ndarray:
    vec = np.asarray(server.vector(provider.prepare(text, kind)), dtype=np.float32)
    return vec / np.linalg.norm(vec)


def test_success_with_batching(target) -> None:
    name, server, make = target
    provider = make(batch_size=3)
    vectors = provider.embed(TEXTS, kind="document")
    assert vectors.shape == (7, 16)
    for text, row in zip(TEXTS, vectors, strict=True):
        np.testing.assert_allclose(row, expected(provider, server, text, "document"), rtol=1e-5)
    per_request = 1 if name == "bedrock-titan" else 3
    assert server.embed_calls == math.ceil(7 / per_request)
    assert provider.calls == {"requests": server.embed_calls, "retries": 0, "failed": 0}


def test_concurrent_batches_keep_their_order(target) -> None:
    name, server, make = target
    provider = make(batch_size=2, max_concurrency=4)
    texts = [f"{t} number {i}" for i, t in enumerate(TEXTS * 3)]
    vectors = provider.embed(texts, kind="query")
    for text, row in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(row, expected(provider, server, text, "query"), rtol=1e-5)


def test_429_then_success_is_retried_and_counted(target) -> None:
    name, server, make = target
    provider = make(batch_size=3)
    provider.ensure_loaded()
    server.script(Behaviour(status=429, retry_after="0"), "ok")
    vectors = provider.embed(TEXTS[:3], kind="document")
    assert vectors.shape[0] == 3
    assert provider.calls["retries"] == 1
    expected_calls = 4 if name == "bedrock-titan" else 2  # Titan: one text a request
    assert server.embed_calls == expected_calls


def test_5xx_until_retries_run_out(target) -> None:
    name, server, make = target
    provider = make(max_retries=2)
    provider.ensure_loaded()
    server.script("503", "503", "503", "503")
    with pytest.raises(ProviderError) as info:
        provider.embed(TEXTS[:1], kind="query")
    message = str(info.value)
    assert f"provider '{provider.name}' model '{provider.model}' batch 0:" in message
    assert "503" in message and "after 3 attempts" in message
    assert server.embed_calls == 3 and provider.calls["retries"] == 2


def test_malformed_json_is_a_clear_error(target) -> None:
    name, server, make = target
    provider = make(max_retries=3)
    provider.ensure_loaded()
    server.script("malformed")
    with pytest.raises(ProviderError, match=rf"provider '{provider.name}' model .* batch 0"):
        provider.embed(TEXTS[:1], kind="document")
    assert server.embed_calls == 1  # a malformed answer is not retried


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("nan", r"non-finite values \(NaN or inf\)"),
        ("wrong_dim", r"dimension"),
        ("fewer", r"expected \d embeddings|KeyError|embedding"),
    ],
)
def test_bad_vectors_are_provider_errors(target, behaviour: str, message: str) -> None:
    name, server, make = target
    provider = make(batch_size=2)
    provider.ensure_loaded()
    if name == "bedrock-titan" and behaviour == "wrong_dim":
        server.script("ok", "wrong_dim")  # one text a request: the second disagrees
    else:
        server.script(behaviour)
    with pytest.raises(ProviderError, match=message) as info:
        provider.embed(TEXTS[:2], kind="document")
    assert f"provider '{provider.name}'" in str(info.value)


def test_timeouts_are_retried_then_reported(target) -> None:
    name, server, make = target
    provider = make(timeout=0.3, max_retries=1)
    provider.ensure_loaded()
    server.script(
        Behaviour(kind="hang", hang_seconds=2.0), Behaviour(kind="hang", hang_seconds=2.0)
    )
    with pytest.raises(ProviderError, match=r"after 2 attempts") as info:
        provider.embed(TEXTS[:1], kind="query")
    assert "imeout" in str(info.value) or "timed out" in str(info.value)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = {
        "openai:text-embedding-3-small": "OPENAI_API_KEY",
        "cohere:embed-english-v3.0": "COHERE_API_KEY or CO_API_KEY",
        "voyage:voyage-3.5": "VOYAGE_API_KEY",
        "bedrock:cohere.embed-english-v3": "AWS_ACCESS_KEY_ID",
    }
    for spec, variable in cases.items():
        with pytest.raises(MissingKeyError, match=variable):
            create_provider(spec).ensure_loaded()


def test_input_types_and_options_reach_the_servers(
    keys, cohere_server, voyage_server, bedrock_server, openai_server
) -> None:
    cohere = create_provider(
        ModelSpec("cohere:embed-english-v3.0", base_url=cohere_server.url, truncate="start")
    )
    cohere.embed(["a document"], kind="document")
    cohere.embed(["a question"], kind="query")
    bodies = [r.body for r in cohere_server.embed_requests]
    assert [b["input_type"] for b in bodies] == ["search_document", "search_query"]
    assert bodies[0]["embedding_types"] == ["float"] and bodies[0]["truncate"] == "START"
    assert cohere_server.last_request.headers["authorization"] == f"Bearer {keys['COHERE_API_KEY']}"

    voyage = create_provider(
        ModelSpec("voyage:voyage-3.5", base_url=f"{voyage_server.url}/v1", output_dimension=8)
    )
    assert voyage.embed(["doc"], kind="document").shape == (1, 8)
    voyage.embed(["q"], kind="query")
    bodies = [r.body for r in voyage_server.embed_requests]
    assert [b["input_type"] for b in bodies] == ["document", "query"]
    assert bodies[0]["output_dimension"] == 8

    titan = create_provider(
        ModelSpec(
            "bedrock:amazon.titan-embed-text-v2:0",
            endpoint_url=bedrock_server.url,
            region="eu-west-1",
            dimensions=256,
        )
    )
    assert titan.embed(["one text"], kind="document").shape == (1, 256)
    body = bedrock_server.last_request.body
    assert body == {"inputText": "one text", "normalize": True, "dimensions": 256}
    assert bedrock_server.last_request.path.startswith("/model/amazon.titan-embed-text-v2")
    cohere_bedrock = create_provider(
        ModelSpec("bedrock:cohere.embed-english-v3", endpoint_url=bedrock_server.url)
    )
    cohere_bedrock.embed(["x" * 3000], kind="query")
    body = bedrock_server.last_request.body
    assert body["input_type"] == "search_query" and body["truncate"] == "END"
    assert len(body["texts"][0]) == 2048  # v3 on Bedrock refuses more: cut first

    openai = create_provider(
        ModelSpec(
            "openai:text-embedding-3-large", base_url=f"{openai_server.url}/v1", dimensions=12
        )
    )
    assert openai.embed(["a"], kind="query").shape == (1, 12)
    body = openai_server.last_request.body
    assert body["dimensions"] == 12 and body["encoding_format"] == "float"
    assert openai_server.last_request.headers["authorization"] == f"Bearer {keys['OPENAI_API_KEY']}"


def test_catalogue_prompts_reach_ollama_and_user_options_win(ollama_server) -> None:
    nomic = create_provider(ModelSpec("ollama:nomic-embed-text", host=ollama_server.url))
    nomic.embed(["where is the invoice"], kind="query")
    nomic.embed(["invoices are emailed"], kind="document")
    inputs = [r.body["input"] for r in ollama_server.embed_requests]
    assert inputs == [
        ["search_query: where is the invoice"],
        ["search_document: invoices are emailed"],
    ]
    assert all(r.body["truncate"] is False for r in ollama_server.embed_requests)
    plain = create_provider(
        ModelSpec("ollama:nomic-embed-text", host=ollama_server.url, query_prefix="")
    )
    plain.embed(["bare"], kind="query")
    assert ollama_server.last_request.body["input"] == ["bare"]


def test_ollama_too_long_text_is_cut_until_it_fits(ollama_server) -> None:
    provider = create_provider(ModelSpec("ollama:all-minilm", host=ollama_server.url, batch_size=8))
    long_text = " ".join(f"word{i}" for i in range(100))  # the server's context is 40 words
    vectors = provider.embed(["short one", long_text, "short two"], kind="document")
    assert vectors.shape == (3, 16)
    assert provider.info["cut_texts"] == 1
    accepted = [r.body["input"] for r in ollama_server.embed_requests][-1]
    assert len(accepted) == 1 and len(accepted[0].split()) <= 40
    # the short texts went again one by one after the batch was refused
    singles = [r.body["input"] for r in ollama_server.embed_requests if len(r.body["input"]) == 1]
    assert ["short one"] in singles and ["short two"] in singles


def test_ollama_missing_model_and_unreachable_host(ollama_server) -> None:
    with pytest.raises(ProviderError, match=r"run `ollama pull nope-embed`"):
        create_provider(ModelSpec("ollama:nope-embed", host=ollama_server.url)).ensure_loaded()
    with pytest.raises(
        ProviderError, match=r"cannot reach Ollama at http://127.0.0.1:9 .*ollama serve"
    ):
        create_provider(ModelSpec("ollama:all-minilm", host="127.0.0.1:9")).ensure_loaded()


def test_ollama_resident_size_is_the_memory_figure(ollama_server) -> None:
    ds = RetrievalDataset.from_dicts(
        {f"d{i}": t for i, t in enumerate(TEXTS)}, {"q1": "forgotten password"}, {"q1": {"d0": 1}}
    )
    result = evaluate(ModelSpec("ollama:all-minilm", host=ollama_server.url), ds, cache=False)
    assert result.model_info["resident_mb"] > 0
    assert result.peak_rss_mb == result.model_info["resident_mb"]
    assert result.process_peak_rss_mb > 10
    assert result.rankings["q1"][0] == "d0"


def test_tokens_cost_and_no_key_in_errors(keys, openai_server) -> None:
    ds = RetrievalDataset.from_dicts(
        {f"d{i}": t for i, t in enumerate(TEXTS)}, {"q1": "forgotten password"}, {"q1": {"d0": 1}}
    )
    spec = ModelSpec("openai:text-embedding-3-small", base_url=f"{openai_server.url}/v1")
    result = evaluate(spec, ds, cache=False)
    tokens = result.tokens
    assert tokens["documents"] > 0 and tokens["queries"] > 0
    price = result.cost["price_per_1m_tokens"]
    assert price == 0.02
    assert result.cost["usd"] == pytest.approx(
        (tokens["documents"] + tokens["queries"]) * 0.02 / 1e6
    )
    priced = evaluate(ModelSpec(spec, price_per_1m_tokens=1.0), ds, cache=False)
    assert priced.cost["usd"] == pytest.approx((tokens["documents"] + tokens["queries"]) / 1e6)
    provider = create_provider(spec)
    provider.ensure_loaded()
    assert keys["OPENAI_API_KEY"] not in provider.scrub(f"echo {keys['OPENAI_API_KEY']} back")
    assert keys["OPENAI_API_KEY"] not in repr(ModelSpec(spec, api_key=keys["OPENAI_API_KEY"]))
