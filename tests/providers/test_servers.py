"""The fake embedding servers in :mod:`tests.providers.servers`, driven through the real SDKs.

Each SDK test is skipped when its SDK is not installed (they are optional extras).  Nothing is
monkeypatched: the clients talk HTTP to a server on 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from .conftest import server_fixture
from .servers import (
    BedrockServer,
    Behaviour,
    CohereServer,
    FakeEmbeddingServer,
    OllamaServer,
    OpenAIServer,
    VoyageServer,
    hashed_vector,
)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _post(url: str, payload: object) -> tuple[int, dict[str, str], bytes]:
    """A plain POST (no SDK): status, lower-case headers, body."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                (response.read()),
            )
    except urllib.error.HTTPError as err:
        with err:
            return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def assert_sent(server: FakeEmbeddingServer, path: str, api_key: str, body: object) -> None:
    """The last request ``server`` took went to ``path``, with ``api_key`` as its bearer token,
    and its JSON body was ``body``."""
    recorded = server.last_request
    assert recorded.path == path
    assert recorded.headers["authorization"] == f"Bearer {api_key}"
    assert recorded.body == body


def sdk_fixture(module: str) -> Any:
    """A fixture that imports the SDK ``module``, skipping the test where it is not installed."""

    @pytest.fixture
    def sdk() -> ModuleType:
        return pytest.importorskip(module)

    return sdk


# ---------------------------------------------------------------------------------------------
# The servers themselves (no SDK)
# ---------------------------------------------------------------------------------------------


def test_vector_is_deterministic_bag_of_words() -> None:
    server = OpenAIServer(dim=32)
    a = server.vector("Reset your password!")
    assert a == server.vector("reset YOUR password") == hashed_vector("reset your password", 32)
    assert len(a) == 32 and a[-1] >= 0.01 and sum(a) == pytest.approx(3.01)
    assert server.vector("", dim=4) == [0.0, 0.0, 0.0, 0.01]
    near = _cosine(server.vector("reset the password"), server.vector("password reset help"))
    far = _cosine(server.vector("reset the password"), server.vector("invoices every month"))
    assert near > far


def test_behaviour_short_forms() -> None:
    assert Behaviour.parse("429") == Behaviour(status=429) == Behaviour(status=429, kind="status")
    assert Behaviour.parse("hang:0.25") == Behaviour(kind="hang", hang_seconds=0.25)
    assert Behaviour.parse(" NaN ").kind == "nan"
    with pytest.raises(ValueError):
        Behaviour.parse("explode")
    with pytest.raises(ValueError):
        Behaviour(status=200)


def test_lifecycle_and_loopback_binding() -> None:
    server = OpenAIServer()
    with pytest.raises(RuntimeError):
        _ = server.url
    with server:
        assert server.url.startswith("http://127.0.0.1:")
        status, _, _ = _post(server.url + "/v1/embeddings", {"model": "x", "input": "a"})
        assert status == 404
    with pytest.raises(RuntimeError):
        _ = server.url


def test_records_every_request_and_counts_embed_calls() -> None:
    with OllamaServer() as server:
        status, _, _ = _post(server.url + "/api/show", {"model": "all-minilm"})
        assert status == 200
        server.script("500")
        status, _, body = _post(server.url + "/api/embed", {"model": "all-minilm", "input": "x"})
        assert status == 500 and json.loads(body) == {"error": "Internal server error."}
        assert [r.path for r in server.requests] == ["/api/show", "/api/embed"]
        assert [r.embed for r in server.requests] == [False, True]
        assert server.embed_calls == 1 and server.pending == 0
        assert server.last_request.body == {"model": "all-minilm", "input": "x"}
        assert server.last_request.headers["content-type"] == "application/json"
        server.reset()
        assert server.requests == [] and server.embed_calls == 0


def test_nan_is_a_bare_json_token_and_malformed_is_not_json() -> None:
    with OpenAIServer(dim=4) as server:
        server.script("nan", "malformed", Behaviour(status=503, retry_after="7"))
        payload = {"model": "text-embedding-3-small", "input": ["a", "b"]}
        _, _, body = _post(server.url + "/v1/embeddings", payload)
        assert b'"embedding": [NaN, ' in body
        assert math.isnan(json.loads(body)["data"][0]["embedding"][0])
        status, _, body = _post(server.url + "/v1/embeddings", payload)
        assert status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(body)
        status, headers, body = _post(server.url + "/v1/embeddings", payload)
        assert status == 503 and headers["retry-after"] == "7"
        assert json.loads(body)["error"]["type"] == "server_error"


# ---------------------------------------------------------------------------------------------
# OpenAI
# ---------------------------------------------------------------------------------------------

OPENAI_MODEL = "text-embedding-3-small"


openai_sdk = sdk_fixture("openai")


openai_server = server_fixture(OpenAIServer)


@pytest.fixture
def openai_client(openai_sdk: ModuleType, openai_server: OpenAIServer) -> Iterator[Any]:
    client = openai_sdk.OpenAI(base_url=openai_server.url + "/v1", api_key="sk-test", max_retries=0)
    yield client
    client.close()


def test_openai_default_is_base64_and_decoded(
    openai_client: Any, openai_server: OpenAIServer
) -> None:
    texts = ["Hello world", "password reset"]
    result = openai_client.embeddings.create(model=OPENAI_MODEL, input=texts)
    body = openai_server.last_request.body
    # The SDK asks for base64 when the caller does not choose, then decodes float32 itself.
    assert body == {"model": OPENAI_MODEL, "input": texts, "encoding_format": "base64"}
    assert openai_server.last_request.headers["authorization"] == "Bearer sk-test"
    assert [d.index for d in result.data] == [0, 1]
    for item, text in zip(result.data, texts, strict=True):
        assert item.embedding == pytest.approx(openai_server.vector(text), rel=1e-6)
    assert result.usage.prompt_tokens == result.usage.total_tokens == 4
    assert result.model == OPENAI_MODEL


def test_openai_float_with_dimensions_and_tokens(
    openai_client: Any, openai_server: OpenAIServer
) -> None:
    result = openai_client.embeddings.create(
        model=OPENAI_MODEL, input=["a b c"], encoding_format="float", dimensions=8
    )
    assert openai_server.last_request.body["dimensions"] == 8
    assert result.data[0].embedding == openai_server.vector("a b c", dim=8)
    tokens = openai_client.embeddings.create(
        model=OPENAI_MODEL, input=[[1, 2, 3], [4]], encoding_format="float"
    )
    assert len(tokens.data) == 2 and tokens.usage.prompt_tokens == 4


def test_openai_explicit_base64_is_returned_undecoded(
    openai_client: Any, openai_server: OpenAIServer
) -> None:
    result = openai_client.embeddings.create(
        model=OPENAI_MODEL, input="hello", encoding_format="base64"
    )
    raw = result.data[0].embedding
    assert isinstance(raw, str)  # the SDK only decodes base64 it asked for itself
    values = struct.unpack(f"<{openai_server.dim}f", base64.b64decode(raw))
    assert list(values) == pytest.approx(openai_server.vector("hello"), rel=1e-6)


def test_openai_429_carries_status_and_retry_after(
    openai_sdk: ModuleType, openai_client: Any, openai_server: OpenAIServer
) -> None:
    openai_server.script(Behaviour(status=429, retry_after="0"))
    with pytest.raises(openai_sdk.RateLimitError) as info:
        openai_client.embeddings.create(model=OPENAI_MODEL, input="x")
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "0"
    assert info.value.body["code"] == "rate_limit_exceeded"
    assert openai_server.embed_calls == 1  # max_retries=0: no retry


@pytest.mark.parametrize("status", [408, 500, 503])
def test_openai_other_statuses(
    openai_sdk: ModuleType, openai_client: Any, openai_server: OpenAIServer, status: int
) -> None:
    openai_server.script(str(status))
    with pytest.raises(openai_sdk.APIStatusError) as info:
        openai_client.embeddings.create(model=OPENAI_MODEL, input="x")
    assert info.value.status_code == status


def test_openai_unknown_model_is_404(
    openai_sdk: ModuleType, openai_client: Any, openai_server: OpenAIServer
) -> None:
    with pytest.raises(openai_sdk.NotFoundError) as info:
        openai_client.embeddings.create(model="text-embedding-9", input="x")
    assert info.value.body["code"] == "model_not_found"
    assert "text-embedding-9" in info.value.body["message"]


def test_openai_sdk_retries_by_default(openai_sdk: ModuleType, openai_server: OpenAIServer) -> None:
    openai_server.script(
        Behaviour(status=429, retry_after="0.01"), Behaviour(status=503, retry_after="0.01")
    )
    with openai_sdk.OpenAI(base_url=openai_server.url + "/v1", api_key="sk-test") as client:
        result = client.embeddings.create(model=OPENAI_MODEL, input="x")
    assert len(result.data) == 1 and openai_server.embed_calls == 3
    assert [r.headers["x-stainless-retry-count"] for r in openai_server.requests] == ["0", "1", "2"]


def test_openai_malformed_raises(openai_client: Any, openai_server: OpenAIServer) -> None:
    openai_server.script("malformed")
    # The SDK does not wrap it: the JSON parser's error comes through as is.
    with pytest.raises(json.JSONDecodeError):
        openai_client.embeddings.create(model=OPENAI_MODEL, input="x")


def test_openai_passes_bad_data_through(openai_client: Any, openai_server: OpenAIServer) -> None:
    openai_server.script("nan", "nan", "wrong_dim", "fewer")
    texts = ["a", "b"]
    floats = openai_client.embeddings.create(
        model=OPENAI_MODEL, input=texts, encoding_format="float"
    )
    assert math.isnan(floats.data[0].embedding[0])
    decoded = openai_client.embeddings.create(model=OPENAI_MODEL, input=texts)  # base64 NaN
    assert math.isnan(decoded.data[0].embedding[0])
    wrong = openai_client.embeddings.create(model=OPENAI_MODEL, input=texts)
    assert [len(d.embedding) for d in wrong.data] == [16, 15]
    fewer = openai_client.embeddings.create(model=OPENAI_MODEL, input=texts)
    assert len(fewer.data) == 1


def test_openai_hang_times_out(
    openai_sdk: ModuleType, openai_client: Any, openai_server: OpenAIServer
) -> None:
    openai_server.script(Behaviour(kind="hang", hang_seconds=0.5))
    started = time.monotonic()
    with pytest.raises(openai_sdk.APITimeoutError):
        openai_client.with_options(timeout=0.1).embeddings.create(model=OPENAI_MODEL, input="x")
    assert time.monotonic() - started < 0.45


# ---------------------------------------------------------------------------------------------
# Cohere (v2)
# ---------------------------------------------------------------------------------------------

COHERE_MODEL = "embed-v4.0"


cohere_sdk = sdk_fixture("cohere")


cohere_server = server_fixture(CohereServer)


@pytest.fixture
def cohere_client(cohere_sdk: ModuleType, cohere_server: CohereServer) -> Iterator[Any]:
    client = cohere_sdk.ClientV2(api_key="co-test", base_url=cohere_server.url, max_retries=0)
    yield client
    client._client_wrapper.httpx_client.httpx_client.close()


def _cohere_embed(client: Any, texts: list[str], **kwargs: Any) -> Any:
    return client.embed(
        model=COHERE_MODEL,
        texts=texts,
        input_type=kwargs.pop("input_type", "search_document"),
        embedding_types=kwargs.pop("embedding_types", ["float"]),
        **kwargs,
    )


def test_cohere_ok(cohere_client: Any, cohere_server: CohereServer) -> None:
    texts = ["hello world", "billing card"]
    result = _cohere_embed(cohere_client, texts, input_type="search_query")
    body = {
        "texts": texts,
        "model": COHERE_MODEL,
        "input_type": "search_query",
        "embedding_types": ["float"],
    }
    assert_sent(cohere_server, "/v2/embed", "co-test", body)
    assert result.embeddings.float_ == [cohere_server.vector(t) for t in texts]
    assert result.meta.billed_units.input_tokens == 4
    assert result.response_type == "embeddings_by_type"


def test_cohere_types_and_dimension(cohere_client: Any, cohere_server: CohereServer) -> None:
    result = _cohere_embed(
        cohere_client, ["a"], embedding_types=["float", "int8"], output_dimension=8
    )
    assert cohere_server.last_request.body["output_dimension"] == 8
    assert len(result.embeddings.float_[0]) == 8
    assert result.embeddings.int8 == [[round(v) for v in cohere_server.vector("a", dim=8)]]


def test_cohere_429_carries_status_and_retry_after(
    cohere_sdk: ModuleType, cohere_client: Any, cohere_server: CohereServer
) -> None:
    cohere_server.script(Behaviour(status=429, retry_after="3"))
    with pytest.raises(cohere_sdk.TooManyRequestsError) as info:
        _cohere_embed(cohere_client, ["x"])
    assert isinstance(info.value, cohere_sdk.core.ApiError)
    assert info.value.status_code == 429
    assert info.value.headers["retry-after"] == "3"  # a dict with lower-case names
    assert info.value.body["message"]
    assert cohere_server.embed_calls == 1


def test_cohere_unknown_model_is_404(
    cohere_sdk: ModuleType, cohere_client: Any, cohere_server: CohereServer
) -> None:
    with pytest.raises(cohere_sdk.NotFoundError) as info:
        cohere_client.embed(model="embed-nope", texts=["x"], input_type="search_query")
    assert info.value.status_code == 404 and "embed-nope" in info.value.body["message"]


def test_cohere_malformed_raises(
    cohere_sdk: ModuleType, cohere_client: Any, cohere_server: CohereServer
) -> None:
    cohere_server.script("malformed")
    # The SDK turns a body it cannot parse into a plain ApiError with the 200 status.
    with pytest.raises(cohere_sdk.core.ApiError) as info:
        _cohere_embed(cohere_client, ["x"])
    assert info.value.status_code == 200


def test_cohere_passes_bad_data_through(cohere_client: Any, cohere_server: CohereServer) -> None:
    cohere_server.script("nan", "wrong_dim", "fewer")
    texts = ["a", "b"]
    assert math.isnan(_cohere_embed(cohere_client, texts).embeddings.float_[0][0])
    assert [len(r) for r in _cohere_embed(cohere_client, texts).embeddings.float_] == [16, 15]
    assert len(_cohere_embed(cohere_client, texts).embeddings.float_) == 1


# ---------------------------------------------------------------------------------------------
# Voyage AI
# ---------------------------------------------------------------------------------------------

VOYAGE_MODEL = "voyage-3.5"


voyage_sdk = sdk_fixture("voyageai")


voyage_server = server_fixture(VoyageServer)


@pytest.fixture
def voyage_client(voyage_sdk: ModuleType, voyage_server: VoyageServer) -> Any:
    return voyage_sdk.Client(api_key="pa-test", base_url=voyage_server.url + "/v1", max_retries=0)


def test_voyage_ok_is_base64_and_decoded(voyage_client: Any, voyage_server: VoyageServer) -> None:
    texts = ["hello world", "card billing"]
    result = voyage_client.embed(texts, model=VOYAGE_MODEL, input_type="document")
    body = {
        "input": texts,
        "model": VOYAGE_MODEL,
        "input_type": "document",
        "truncation": True,
        "output_dtype": None,
        "output_dimension": None,
        "encoding_format": "base64",  # the SDK asks for base64 and decodes it with numpy
    }
    assert_sent(voyage_server, "/v1/embeddings", "pa-test", body)
    for row, text in zip(result.embeddings, texts, strict=True):
        assert row == pytest.approx(voyage_server.vector(text), rel=1e-6)
    assert result.total_tokens == 4


def test_voyage_int8_and_dimension(voyage_client: Any, voyage_server: VoyageServer) -> None:
    result = voyage_client.embed(
        ["a b"], model=VOYAGE_MODEL, input_type="query", output_dtype="int8", output_dimension=8
    )
    assert result.embeddings == [[round(v) for v in voyage_server.vector("a b", dim=8)]]


def test_voyage_429_carries_status_and_retry_after(
    voyage_sdk: ModuleType, voyage_client: Any, voyage_server: VoyageServer
) -> None:
    voyage_server.script(Behaviour(status=429, retry_after="3"))
    with pytest.raises(voyage_sdk.error.RateLimitError) as info:
        voyage_client.embed(["x"], model=VOYAGE_MODEL)
    assert info.value.http_status == 429
    assert info.value.headers["retry-after"] == "3"  # requests' case-insensitive headers
    assert info.value.json_body == {"detail": "Too many requests, please slow down."}
    assert voyage_server.embed_calls == 1


def test_voyage_max_retries_counts_attempts(
    voyage_sdk: ModuleType, voyage_server: VoyageServer
) -> None:
    # tenacity's stop_after_attempt(max_retries): 0 and 1 both mean a single attempt.
    client = voyage_sdk.Client(api_key="pa-test", base_url=voyage_server.url + "/v1", max_retries=1)
    voyage_server.script("429")
    with pytest.raises(voyage_sdk.error.RateLimitError):
        client.embed(["x"], model=VOYAGE_MODEL)
    assert voyage_server.embed_calls == 1


def test_voyage_unknown_model_is_400(
    voyage_sdk: ModuleType, voyage_client: Any, voyage_server: VoyageServer
) -> None:
    with pytest.raises(voyage_sdk.error.InvalidRequestError) as info:
        voyage_client.embed(["x"], model="voyage-nope")
    assert info.value.http_status == 400 and "voyage-nope" in str(info.value)


def test_voyage_malformed_raises(
    voyage_sdk: ModuleType, voyage_client: Any, voyage_server: VoyageServer
) -> None:
    voyage_server.script("malformed")
    with pytest.raises(voyage_sdk.error.APIError) as info:
        voyage_client.embed(["x"], model=VOYAGE_MODEL)
    assert info.value.http_status == 200


def test_voyage_passes_bad_data_through(voyage_client: Any, voyage_server: VoyageServer) -> None:
    voyage_server.script("nan", "wrong_dim", "fewer")
    texts = ["a", "b"]
    assert math.isnan(voyage_client.embed(texts, model=VOYAGE_MODEL).embeddings[0][0])
    assert [len(r) for r in voyage_client.embed(texts, model=VOYAGE_MODEL).embeddings] == [16, 15]
    assert len(voyage_client.embed(texts, model=VOYAGE_MODEL).embeddings) == 1


# ---------------------------------------------------------------------------------------------
# Cohere and Voyage: a status the SDK has no special case for
# ---------------------------------------------------------------------------------------------

#: per SDK: the error class every error it raises derives from, the attribute that holds the
#: HTTP status, and one embed call through its client
StatusSdk = tuple[Callable[[ModuleType], type[Exception]], str, Callable[[Any], object]]
OTHER_STATUS_SDKS: dict[str, StatusSdk] = {
    "cohere": (
        lambda sdk: sdk.core.ApiError,
        "status_code",
        lambda client: _cohere_embed(client, ["x"]),
    ),
    "voyage": (
        lambda sdk: sdk.error.VoyageError,
        "http_status",
        lambda client: client.embed(["x"], model=VOYAGE_MODEL),
    ),
}


@pytest.mark.parametrize(
    ("provider", "status", "error_name"),
    [
        ("cohere", 500, "InternalServerError"),
        ("cohere", 503, "ServiceUnavailableError"),
        ("cohere", 408, "ApiError"),
        ("voyage", 500, "ServerError"),
        ("voyage", 503, "ServiceUnavailableError"),
        ("voyage", 408, "APIError"),
    ],
)
def test_other_statuses(
    request: pytest.FixtureRequest, provider: str, status: int, error_name: str
) -> None:
    """The SDK raises its own error class for the status (``error_name``), a subclass of its
    base error, with the status on it; ``provider`` names the SDK's fixtures
    (``<provider>_sdk``, ``_server``, ``_client``)."""
    base_error, status_attribute, embed = OTHER_STATUS_SDKS[provider]
    sdk = request.getfixturevalue(f"{provider}_sdk")  # first: skips where it is not installed
    client = request.getfixturevalue(f"{provider}_client")
    request.getfixturevalue(f"{provider}_server").script(str(status))
    with pytest.raises(base_error(sdk)) as info:
        embed(client)
    assert type(info.value).__name__ == error_name
    assert getattr(info.value, status_attribute) == status


# ---------------------------------------------------------------------------------------------
# Ollama
# ---------------------------------------------------------------------------------------------

OLLAMA_MODEL = "nomic-embed-text"


ollama_sdk = sdk_fixture("ollama")


ollama_server = server_fixture(OllamaServer, context_words=8)


@pytest.fixture
def ollama_client(ollama_sdk: ModuleType, ollama_server: OllamaServer) -> Iterator[Any]:
    client = ollama_sdk.Client(host=ollama_server.url)
    yield client
    client.close()


def test_ollama_ok(ollama_client: Any, ollama_server: OllamaServer) -> None:
    texts = ["hello world", "card billing"]
    result = ollama_client.embed(model=OLLAMA_MODEL, input=texts)
    assert ollama_server.last_request.path == "/api/embed"
    assert ollama_server.last_request.body == {"model": OLLAMA_MODEL, "input": texts}
    assert [list(r) for r in result.embeddings] == [ollama_server.vector(t) for t in texts]
    assert result.prompt_eval_count == 4 and result.model == OLLAMA_MODEL
    single = ollama_client.embed(model=OLLAMA_MODEL + ":latest", input="one", dimensions=4)
    assert ollama_server.last_request.body["dimensions"] == 4
    assert [list(r) for r in single.embeddings] == [ollama_server.vector("one", dim=4)]


def test_ollama_ps_list_show(ollama_client: Any, ollama_server: OllamaServer) -> None:
    assert ollama_client.ps().models == []
    ollama_client.embed(model="all-minilm", input="x")
    loaded = ollama_client.ps().models
    assert [m.model for m in loaded] == ["all-minilm:latest"] and loaded[0].size_vram == 0
    assert loaded[0].expires_at.year == 2026
    assert [m.model for m in ollama_client.list().models] == [
        "nomic-embed-text:latest",
        "mxbai-embed-large:latest",
        "all-minilm:latest",
    ]
    shown = ollama_client.show(OLLAMA_MODEL)
    assert shown.modelinfo["bert.context_length"] == 8
    assert ollama_server.embed_calls == 1  # ps / list / show are not embedding requests


def test_ollama_unknown_model_is_404(
    ollama_sdk: ModuleType, ollama_client: Any, ollama_server: OllamaServer
) -> None:
    with pytest.raises(ollama_sdk.ResponseError) as info:
        ollama_client.embed(model="nope", input="x")
    assert info.value.status_code == 404
    assert info.value.error == 'model "nope" not found, try pulling it first'
    with pytest.raises(ollama_sdk.ResponseError) as info:
        ollama_client.show("nope")
    assert info.value.status_code == 404


def test_ollama_context_length(
    ollama_sdk: ModuleType, ollama_client: Any, ollama_server: OllamaServer
) -> None:
    long_text = " ".join(f"w{i}" for i in range(12))
    with pytest.raises(ollama_sdk.ResponseError) as info:
        ollama_client.embed(model=OLLAMA_MODEL, input=long_text, truncate=False)
    assert info.value.status_code == 400
    assert info.value.error == "the input length exceeds the context length"
    cut = ollama_client.embed(model=OLLAMA_MODEL, input=long_text)
    head = " ".join(f"w{i}" for i in range(8))
    assert list(cut.embeddings[0]) == ollama_server.vector(head)
    assert cut.prompt_eval_count == 8


def test_ollama_429_carries_status(
    ollama_sdk: ModuleType, ollama_client: Any, ollama_server: OllamaServer
) -> None:
    ollama_server.script(Behaviour(status=429, retry_after="3"), "503")
    with pytest.raises(ollama_sdk.ResponseError) as info:
        ollama_client.embed(model=OLLAMA_MODEL, input="x")
    # ResponseError keeps the status and the "error" text, not the headers (no Retry-After).
    assert (
        info.value.status_code == 429 and info.value.error == "Too many requests, please slow down."
    )
    with pytest.raises(ollama_sdk.ResponseError) as info:
        ollama_client.embed(model=OLLAMA_MODEL, input="x")
    assert info.value.status_code == 503
    assert ollama_server.embed_calls == 2


def test_ollama_malformed_raises(ollama_client: Any, ollama_server: OllamaServer) -> None:
    ollama_server.script("malformed")
    with pytest.raises(json.JSONDecodeError):  # not wrapped in ResponseError
        ollama_client.embed(model=OLLAMA_MODEL, input="x")


def test_ollama_passes_bad_data_through(ollama_client: Any, ollama_server: OllamaServer) -> None:
    ollama_server.script("nan", "wrong_dim", "fewer")
    texts = ["a", "b"]
    assert math.isnan(ollama_client.embed(model=OLLAMA_MODEL, input=texts).embeddings[0][0])
    wrong = ollama_client.embed(model=OLLAMA_MODEL, input=texts).embeddings
    assert [len(r) for r in wrong] == [16, 15]
    assert len(ollama_client.embed(model=OLLAMA_MODEL, input=texts).embeddings) == 1


def test_ollama_hang_times_out(ollama_sdk: ModuleType, ollama_server: OllamaServer) -> None:
    httpx = pytest.importorskip("httpx")
    ollama_server.script("hang:0.5")
    with ollama_sdk.Client(host=ollama_server.url, timeout=0.1) as client:
        with pytest.raises(httpx.TimeoutException):  # httpx's own error, not wrapped
            client.embed(model=OLLAMA_MODEL, input="x")


# ---------------------------------------------------------------------------------------------
# Amazon Bedrock runtime
# ---------------------------------------------------------------------------------------------

TITAN = "amazon.titan-embed-text-v2:0"
BEDROCK_COHERE = "cohere.embed-english-v3"


bedrock_server = server_fixture(BedrockServer)


@pytest.fixture
def bedrock_client(bedrock_server: BedrockServer) -> Iterator[Any]:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=bedrock_server.url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        # retries={"max_attempts": 1} would still retry once (it counts retries, not attempts).
        config=Config(retries={"total_max_attempts": 1}),
    )
    yield client
    client.close()


def _invoke(client: Any, model_id: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.invoke_model(
        modelId=model_id,
        body=json.dumps(body),
        contentType="application/json",
        accept="application/json",
    )
    assert response["contentType"] == "application/json"
    return json.loads(response["body"].read())


def test_bedrock_titan_ok(bedrock_client: Any, bedrock_server: BedrockServer) -> None:
    out = _invoke(bedrock_client, TITAN, {"inputText": "Hello there world", "dimensions": 256})
    recorded = bedrock_server.last_request
    assert recorded.path == "/model/amazon.titan-embed-text-v2%3A0/invoke"
    assert recorded.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
    assert recorded.body == {"inputText": "Hello there world", "dimensions": 256}
    assert out == {
        "embedding": bedrock_server.vector("Hello there world", dim=256),
        "inputTextTokenCount": 3,
    }
    normalised = _invoke(bedrock_client, TITAN, {"inputText": "a b", "normalize": True})
    assert sum(v * v for v in normalised["embedding"]) == pytest.approx(1.0)


def test_bedrock_cohere_ok(bedrock_client: Any, bedrock_server: BedrockServer) -> None:
    texts = ["hello world", "card"]
    floats = _invoke(bedrock_client, BEDROCK_COHERE, {"texts": texts, "input_type": "search_query"})
    assert bedrock_server.last_request.body["input_type"] == "search_query"
    assert floats["response_type"] == "embeddings_floats"
    assert floats["embeddings"] == [bedrock_server.vector(t) for t in texts]
    by_type = _invoke(
        bedrock_client,
        BEDROCK_COHERE,
        {"texts": texts, "input_type": "search_document", "embedding_types": ["float"]},
    )
    assert by_type["response_type"] == "embeddings_by_type"
    assert by_type["embeddings"] == {"float": floats["embeddings"]} and by_type["texts"] == texts


@pytest.mark.parametrize(
    ("behaviour", "status", "code"),
    [
        (Behaviour(status=429, retry_after="2"), 429, "ThrottlingException"),
        ("503", 503, "ServiceUnavailableException"),
        ("500", 500, "InternalServerException"),
        ("400", 400, "ValidationException"),
    ],
)
def test_bedrock_errors_are_client_errors(
    bedrock_client: Any,
    bedrock_server: BedrockServer,
    behaviour: str | Behaviour,
    status: int,
    code: str,
) -> None:
    from botocore.exceptions import ClientError

    bedrock_server.script(behaviour)
    with pytest.raises(ClientError) as info:
        _invoke(bedrock_client, TITAN, {"inputText": "x"})
    response = info.value.response
    assert response["Error"]["Code"] == code
    assert response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert type(info.value).__name__ == code  # botocore's modelled subclass
    if status == 429:
        assert response["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "2"
    assert bedrock_server.embed_calls == 1  # total_max_attempts=1: no retry


def test_bedrock_unknown_model_is_404(bedrock_client: Any, bedrock_server: BedrockServer) -> None:
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError) as info:
        _invoke(bedrock_client, "amazon.nope-v9:0", {"inputText": "x"})
    assert info.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_bedrock_malformed_surfaces_when_the_body_is_read(
    bedrock_client: Any, bedrock_server: BedrockServer
) -> None:
    bedrock_server.script("malformed")
    # invoke_model does not parse the payload (it is a StreamingBody): json.loads fails.
    with pytest.raises(json.JSONDecodeError):
        _invoke(bedrock_client, TITAN, {"inputText": "x"})


def test_bedrock_passes_bad_data_through(
    bedrock_client: Any, bedrock_server: BedrockServer
) -> None:
    bedrock_server.script("nan", "wrong_dim", "fewer", "wrong_dim", "fewer")
    body = {"texts": ["a", "b"], "input_type": "search_document"}
    assert math.isnan(_invoke(bedrock_client, BEDROCK_COHERE, body)["embeddings"][0][0])
    assert [len(r) for r in _invoke(bedrock_client, BEDROCK_COHERE, body)["embeddings"]] == [16, 15]
    assert len(_invoke(bedrock_client, BEDROCK_COHERE, body)["embeddings"]) == 1
    assert len(_invoke(bedrock_client, TITAN, {"inputText": "a"})["embedding"]) == 15
    assert "embedding" not in _invoke(bedrock_client, TITAN, {"inputText": "a"})


@pytest.mark.parametrize(
    ("server_class", "path"),
    [
        (OpenAIServer, "/v1/embeddings"),
        (CohereServer, "/v2/embed"),
        (VoyageServer, "/v1/embeddings"),
        (OllamaServer, "/api/embed"),
        (BedrockServer, "/model/amazon.titan-embed-text-v2%3A0/invoke"),
    ],
)
def test_every_server_stops_promptly_with_a_request_hanging(
    server_class: type[FakeEmbeddingServer], path: str
) -> None:
    server = server_class().start()
    server.script("hang:30")
    request = urllib.request.Request(server.url + path, data=b"{}", method="POST")
    with pytest.raises(OSError):  # the client gives up (a timeout, or URLError wrapping one)
        urllib.request.urlopen(request, timeout=0.05)
    assert server.embed_calls == 1
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 1.0
