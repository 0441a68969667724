"""Loopback HTTP servers that speak the wire formats of five embedding APIs.

They let the provider tests drive the *real* client libraries (openai, cohere, voyageai,
ollama, boto3) against a server on ``127.0.0.1`` -- no SDK is monkeypatched and nothing leaves
the machine.  Standard library only.

Every server:

* binds ``127.0.0.1`` on a free port (``url`` is ``"http://127.0.0.1:PORT"``);
* records every request (:class:`RecordedRequest`) before it decides anything;
* answers embedding requests with deterministic bag-of-words vectors (:meth:`vector`), so
  retrieval over them is meaningful: texts that share words get similar vectors;
* follows a script of :class:`Behaviour` s, one consumed per embedding request (``"ok"`` once
  the script is empty): HTTP errors with the provider's error body and an optional
  ``Retry-After``, a truncated JSON body, a row of the wrong length, a NaN, a missing row, or
  a delay before answering.

Order of work for an embedding request: record it, count it (``embed_calls``), take the next
behaviour; an error status is answered at once (before the body is validated, as a rate
limiter would); ``"hang"`` waits and then goes on as ``"ok"``; then the request is validated
(unknown model, bad fields -> the provider's usual error) and the vectors are computed; the
data behaviours (``"wrong_dim"``, ``"nan"``, ``"fewer"``) change the float rows before they are
encoded, and ``"malformed"`` cuts the finished JSON text in half.

Two more speak a chat route for ``generate-evalset`` (:class:`OllamaChatServer`: ``/api/chat``;
:class:`OpenAIChatServer`: ``/v1/chat/completions``): a chat request follows the same script of
behaviours, and its reply text comes from :meth:`~_ChatMixin.reply` or an ``answerer(body)``,
so a test can answer like a small local model does (prose, extra questions, no ``?``).

Usage::

    with OpenAIServer(dim=8) as server:
        server.script("429", "ok")
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test", max_retries=0)
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import socketserver
import struct
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, cast
from urllib.parse import unquote, urlsplit

__all__ = [
    "BEHAVIOUR_KINDS",
    "Behaviour",
    "BedrockServer",
    "EMPTY_QUESTIONS",
    "CohereServer",
    "FakeEmbeddingServer",
    "OllamaChatServer",
    "OllamaServer",
    "OpenAIChatServer",
    "OpenAIServer",
    "RecordedRequest",
    "VoyageServer",
    "chat_passage",
    "hashed_vector",
    "words",
]

BEHAVIOUR_KINDS = frozenset({"ok", "status", "malformed", "wrong_dim", "nan", "fewer", "hang"})
"""The kinds a :class:`Behaviour` can have."""

_WORD = re.compile(r"\w+")

_STATUS_MESSAGES: dict[int, str] = {
    400: "Bad request.",
    401: "Invalid API key.",
    403: "Forbidden.",
    404: "Not found.",
    408: "Request timed out.",
    409: "Conflict.",
    422: "Unprocessable entity.",
    429: "Too many requests, please slow down.",
    500: "Internal server error.",
    502: "Bad gateway.",
    503: "Service unavailable, please try again later.",
    504: "Gateway timeout.",
}

_QUANT_TYPES = ("float", "int8", "uint8", "binary", "ubinary")


def words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (runs of letters, digits, underscores)."""
    return _WORD.findall(text.lower())


def hashed_vector(text: str, dim: int) -> list[float]:
    """A deterministic, unnormalised bag-of-words vector of ``text`` with ``dim`` values.

    Each word adds 1.0 to the bucket chosen by a stable hash (BLAKE2b, not ``hash()``, so the
    value is the same in every process); the last bucket gets 0.01 more so that no vector is
    all zeros.
    """
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    vec = [0.0] * dim
    for word in words(text):
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        vec[int.from_bytes(digest, "little") % dim] += 1.0
    vec[-1] += 0.01
    return vec


def _round_clamped(value: float, low: int, high: int) -> int:
    if not math.isfinite(value):
        return 0
    return max(low, min(high, round(value)))


def _quantize(row: list[float], dtype: str) -> list[float] | list[int]:
    """``row`` as the embedding type ``dtype`` (Cohere / Voyage names).

    ``int8``/``uint8`` round the values (``uint8`` offset by 128); ``binary``/``ubinary`` pack
    one bit per value (1 when > 0), eight values a byte, most significant bit first, with
    ``binary`` the signed (offset -128) form of ``ubinary``.
    """
    if dtype == "float":
        return row
    if dtype == "int8":
        return [_round_clamped(v, -128, 127) for v in row]
    if dtype == "uint8":
        return [_round_clamped(v + 128, 0, 255) for v in row]
    if dtype in ("binary", "ubinary"):
        packed: list[int] = []
        for start in range(0, len(row), 8):
            byte = 0
            for bit, value in enumerate(row[start : start + 8]):
                if value > 0:
                    byte |= 0x80 >> bit
            packed.append(byte - 128 if dtype == "binary" else byte)
        return packed
    raise ValueError(f"unknown embedding type {dtype!r}")


def _b64_floats(row: list[float]) -> str:
    """Base64 of little-endian float32 values (what the openai and voyageai SDKs decode)."""
    return base64.b64encode(struct.pack(f"<{len(row)}f", *row)).decode("ascii")


def _b64_values(row: list[float] | list[int], dtype: str) -> str:
    """Base64 of ``row`` packed as ``dtype`` (float32, int8 or uint8, little-endian)."""
    if dtype == "float":
        return _b64_floats(cast("list[float]", row))
    code = "b" if dtype in ("int8", "binary") else "B"
    return base64.b64encode(struct.pack(f"<{len(row)}{code}", *row)).decode("ascii")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as the server received it.

    ``path`` is the request target exactly as sent (still percent-encoded, with any query);
    ``headers`` has lower-case names; ``body`` is the parsed JSON body, or None when the body is
    empty or not JSON; ``raw`` is the body bytes; ``embed`` tells whether the request went to
    the provider's embedding route.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    embed: bool = False


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one embedding request.

    ``Behaviour(status=429, retry_after="0")`` answers HTTP 429 with the provider's error body
    and a ``Retry-After: 0`` header (a ``status`` implies ``kind="status"``).  Other kinds:
    ``"ok"``, ``"malformed"`` (200, body not JSON), ``"wrong_dim"`` (200, the second row -- or
    the only row -- is one value short), ``"nan"`` (200, the first value of the first vector is
    NaN), ``"fewer"`` (200, one row fewer than inputs) and ``"hang"`` (wait ``hang_seconds``,
    then answer as ``"ok"``; the wait ends early when the server stops).
    """

    status: int | None = None
    retry_after: str | None = None
    kind: str = "ok"
    hang_seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.status is not None and self.kind == "ok":
            object.__setattr__(self, "kind", "status")
        if self.kind not in BEHAVIOUR_KINDS:
            raise ValueError(f"unknown behaviour kind {self.kind!r}")
        if self.kind == "status" and (self.status is None or not 400 <= self.status <= 599):
            raise ValueError(f"a 'status' behaviour needs a 4xx/5xx status, got {self.status}")
        if self.hang_seconds < 0:
            raise ValueError("hang_seconds must be >= 0")

    @classmethod
    def parse(cls, spec: str | Behaviour) -> Behaviour:
        """A behaviour from its short form: ``"ok"``, ``"429"``, ``"hang"``, ``"hang:0.5"``..."""
        if isinstance(spec, Behaviour):
            return spec
        text = spec.strip().lower()
        if text.isdigit():
            return cls(status=int(text))
        if text.startswith("hang:"):
            return cls(kind="hang", hang_seconds=float(text[len("hang:") :]))
        return cls(kind=text)


_OK = Behaviour()


@dataclass
class _Reply:
    """An HTTP answer: a JSON ``payload``, or ``raw`` bytes when given."""

    status: int
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


@dataclass
class _Embedding:
    """A computed embedding answer, encoded by ``render`` after the behaviour is applied."""

    vectors: list[list[float]]
    render: Callable[[list[list[float]]], Any]
    headers: dict[str, str] = field(default_factory=dict)
    on_success: Callable[[], None] | None = None


class _HTTPServer(ThreadingHTTPServer):
    """A threading HTTP server on loopback that never blocks on its handler threads."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: FakeEmbeddingServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup: skip it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that went away (timeouts, closed pools)."""


class _Handler(BaseHTTPRequestHandler):
    """Reads the request, lets the fake server answer it, writes the answer (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections end after this many seconds

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no access log on stderr."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        raw = self._read_body()
        headers = {name.lower(): value for name, value in self.headers.items()}
        fake = cast(_HTTPServer, self.server).fake
        try:
            reply = fake._dispatch(self.command, self.path, headers, raw)
        except Exception as exc:  # a bug in the fake: answer rather than leave the client hanging
            reply = _Reply(500, {"error": f"fake server error: {exc!r}"})
        if reply.raw is not None:
            body = reply.raw
        elif reply.payload is None:
            body = b""
        else:
            body = json.dumps(reply.payload).encode("utf-8")
        out_headers = {"Content-Type": "application/json", **reply.headers}
        if not fake.keep_alive:  # one request per connection (see FakeEmbeddingServer)
            out_headers["Connection"] = "close"
            self.close_connection = True
        try:
            self.send_response(reply.status)
            for name, value in out_headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True


class FakeEmbeddingServer:
    """Base: start() / stop() / context manager; binds 127.0.0.1 on a free port.

    Subclasses define the wire format.  ``dim`` is the length of the vectors when the request
    does not ask for another one; ``models`` are the model ids the server knows (None: the
    subclass's ``default_models``).

    Attributes:
        requests: every request received, in order (embedding or not).
        embed_calls: how many embedding requests arrived, failed ones included.
        keep_alive: False (default): every answer says ``Connection: close``, so no client
            pools a socket that outlives the server (an unclosed socket is a ResourceWarning,
            which ``filterwarnings = error`` turns into a failure).
    """

    default_models: ClassVar[tuple[str, ...]] = ()
    keep_alive: bool = False

    def __init__(self, *, dim: int = 16, models: Iterable[str] | None = None) -> None:
        if dim < 2:
            raise ValueError("dim must be >= 2 (wrong_dim removes one value)")
        self.dim = dim
        self.models: list[str] = list(self.default_models if models is None else models)
        self.requests: list[RecordedRequest] = []
        self.embed_calls = 0
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeEmbeddingServer:
        """Bind 127.0.0.1 on a free port and serve on a daemon thread (no-op when running)."""
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(self)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"{type(self).__name__}-{self._httpd.server_port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; requests that hang are released."""
        self._stopping.set()
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeEmbeddingServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``"http://127.0.0.1:PORT"`` (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return f"http://127.0.0.1:{self._httpd.server_port}"

    # -- test controls -----------------------------------------------------------------------

    def script(self, *behaviours: str | Behaviour) -> None:
        """Append behaviours, consumed one per embedding request ("ok" once the queue is empty).

        Strings are short forms: ``"ok"``, ``"429"`` / ``"500"`` / any 4xx-5xx status,
        ``"malformed"``, ``"wrong_dim"``, ``"nan"``, ``"fewer"``, ``"hang"``, ``"hang:0.5"``.
        """
        parsed = [Behaviour.parse(b) for b in behaviours]
        with self._lock:
            self._script.extend(parsed)

    @property
    def pending(self) -> int:
        """How many scripted behaviours are still waiting for a request."""
        with self._lock:
            return len(self._script)

    @property
    def embed_requests(self) -> list[RecordedRequest]:
        """The recorded requests that went to the embedding route."""
        with self._lock:
            return [r for r in self.requests if r.embed]

    @property
    def last_request(self) -> RecordedRequest:
        """The latest recorded request."""
        with self._lock:
            if not self.requests:
                raise LookupError("no request recorded yet")
            return self.requests[-1]

    def reset(self) -> None:
        """Forget requests, the call count and the script."""
        with self._lock:
            self.requests.clear()
            self.embed_calls = 0
            self._script.clear()

    def vector(self, text: str, *, dim: int | None = None) -> list[float]:
        """The vector this server returns for ``text`` (``dim`` values unless told otherwise).

        Feature hashing of the lower-cased word tokens, plus 0.01 in the last bucket; not
        normalised.  See :func:`hashed_vector`.
        """
        return hashed_vector(text, self.dim if dim is None else dim)

    # -- request handling --------------------------------------------------------------------

    def _dispatch(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> _Reply:
        path = urlsplit(target).path
        is_embed = self._is_embed_route(method, path)
        body: Any = None
        if raw:
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                body = None
        request = RecordedRequest(method, target, headers, body, raw, is_embed)
        behaviour = _OK
        with self._lock:
            self.requests.append(request)
            if is_embed:
                self.embed_calls += 1
                if self._script:
                    behaviour = self._script.popleft()
        if not is_embed:
            return self._other_route(request, path)
        if behaviour.kind == "status":
            status = cast(int, behaviour.status)
            reply = self._error(status)
            if behaviour.retry_after is not None:
                reply.headers["Retry-After"] = behaviour.retry_after
            return reply
        if behaviour.kind == "hang":
            self._stopping.wait(behaviour.hang_seconds)
        result = self._embed(request, path)
        if isinstance(result, _Reply):
            return result
        rows = self._apply(behaviour, result.vectors)
        payload = result.render(rows)
        if result.on_success is not None:
            result.on_success()
        if behaviour.kind == "malformed":
            text = json.dumps(payload)
            return _Reply(200, headers=result.headers, raw=text[: len(text) // 2].encode())
        return _Reply(200, payload, result.headers)

    @staticmethod
    def _apply(behaviour: Behaviour, vectors: list[list[float]]) -> list[list[float]]:
        rows = [list(row) for row in vectors]
        if behaviour.kind == "wrong_dim" and rows:
            index = 1 if len(rows) >= 2 else 0
            rows[index] = rows[index][:-1]
        elif behaviour.kind == "nan" and rows and rows[0]:
            rows[0][0] = math.nan
        elif behaviour.kind == "fewer":
            rows = rows[:-1]
        return rows

    def _error(self, status: int, message: str | None = None, *, code: str | None = None) -> _Reply:
        """The provider's error answer for ``status``."""
        text = message or _STATUS_MESSAGES.get(status, f"HTTP error {status}.")
        return self._error_reply(status, text, code)

    def _named_model(self, body: Any) -> str | _Reply:
        """The model a request body names, or this API's error in its own words: a 400 for a
        body that is no JSON object (:attr:`bad_body`) or names no model (:attr:`no_model`), a
        404 for a model the server does not serve (:attr:`unknown_model`, when set)."""
        if not isinstance(body, dict):
            return self._error(400, self.bad_body)
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return self._error(400, self.no_model)
        if self.unknown_model and model not in self.models:
            message = self.unknown_model.format(model=model)
            return self._error(404, message, code=self.unknown_model_code)
        return model

    # -- what subclasses define --------------------------------------------------------------

    #: the paths of the embedding route (a POST to one of them)
    embed_routes: ClassVar[tuple[str, ...]] = ()
    #: the API's words for a body that is no JSON object, for one that names no model, and
    #: (``{model}`` standing for its name) for a model it does not serve, with its error code
    bad_body: ClassVar[str] = ""
    no_model: ClassVar[str] = ""
    unknown_model: ClassVar[str] = ""
    unknown_model_code: ClassVar[str | None] = None

    def _is_embed_route(self, method: str, path: str) -> bool:
        return method == "POST" and path.rstrip("/") in self.embed_routes

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        raise NotImplementedError

    def _error_reply(self, status: int, message: str, code: str | None) -> _Reply:
        raise NotImplementedError

    def _other_route(self, request: RecordedRequest, path: str) -> _Reply:
        return self._error(404, f"No route for {request.method} {path}.")


# ---------------------------------------------------------------------------------------------
# OpenAI
# ---------------------------------------------------------------------------------------------


def _openai_inputs(value: object) -> list[str] | None:
    """The texts of an OpenAI ``input``: str, list[str], list[int] or list[list[int]].

    Token ids become words ``tok<ID>`` so that they hash and count like words.
    """

    def tokens(ids: list[Any]) -> str | None:
        if not ids or not all(_is_int(i) for i in ids):
            return None
        return " ".join(f"tok{i}" for i in ids)

    if isinstance(value, str):
        return [value] if value else None
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, str) for item in value):
        return value if all(value) else None
    if all(_is_int(item) for item in value):
        text = tokens(value)
        return None if text is None else [text]
    if all(isinstance(item, list) for item in value):
        texts = [tokens(item) for item in value]
        return None if any(t is None for t in texts) else cast("list[str]", texts)
    return None


class OpenAIServer(FakeEmbeddingServer):
    """``POST /v1/embeddings`` of the OpenAI API (client: ``base_url=server.url + "/v1"``).

    Honours ``dimensions`` (vector length) and ``encoding_format`` (``"base64"``: little-endian
    float32 bytes, which the openai SDK asks for -- and decodes -- when the caller leaves
    ``encoding_format`` unset).  ``usage`` counts words.  Errors:
    ``{"error": {"message", "type", "param", "code"}}``; an unknown model is a 404
    ``model_not_found``.
    """

    default_models = ("text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002")

    embed_routes = ("/v1/embeddings",)
    bad_body = "We could not parse the JSON body of your request."
    no_model = "You must provide a model parameter."
    unknown_model = "The model `{model}` does not exist"
    unknown_model_code = "model_not_found"

    def _error_reply(self, status: int, message: str, code: str | None) -> _Reply:
        if status == 429:
            kind, code = "requests", code or "rate_limit_exceeded"
        elif status >= 500:
            kind = "server_error"
        else:
            kind = "invalid_request_error"
        error = {"message": message, "type": kind, "param": None, "code": code}
        return _Reply(status, {"error": error}, {"x-request-id": f"req_{uuid.uuid4().hex}"})

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        body = request.body
        model = self._named_model(body)
        if isinstance(model, _Reply):
            return model
        texts = _openai_inputs(body.get("input"))
        if texts is None:
            return self._error(400, "'$.input' is invalid. Please check the API reference.")
        dimensions = body.get("dimensions")
        if dimensions is not None:
            if not _is_int(dimensions) or dimensions < 1:
                return self._error(400, "'dimensions' must be a positive integer.")
            if model == "text-embedding-ada-002":
                return self._error(400, "This model does not support specifying dimensions.")
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            return self._error(400, "'encoding_format' must be 'float' or 'base64'.")
        n_tokens = sum(len(words(t)) for t in texts)

        def render(rows: list[list[float]]) -> dict[str, Any]:
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": _b64_floats(row) if encoding == "base64" else row,
                }
                for i, row in enumerate(rows)
            ]
            usage = {"prompt_tokens": n_tokens, "total_tokens": n_tokens}
            return {"object": "list", "data": data, "model": model, "usage": usage}

        vectors = [self.vector(t, dim=dimensions) for t in texts]
        return _Embedding(vectors, render, {"x-request-id": f"req_{uuid.uuid4().hex}"})


# ---------------------------------------------------------------------------------------------
# Cohere (v2)
# ---------------------------------------------------------------------------------------------

_COHERE_INPUT_TYPES = ("search_document", "search_query", "classification", "clustering", "image")


class CohereServer(FakeEmbeddingServer):
    """``POST /v2/embed`` of the Cohere v2 API (client: ``cohere.ClientV2(base_url=server.url)``).

    Answers ``embeddings_by_type`` for each requested ``embedding_types`` entry (``float``,
    ``int8``, ``uint8``, ``binary``, ``ubinary``; ``["float"]`` when absent) and honours
    ``output_dimension``.  Errors: ``{"message": ...}``; an unknown model is a 404.
    """

    default_models = (
        "embed-v4.0",
        "embed-english-v3.0",
        "embed-multilingual-v3.0",
        "embed-english-light-v3.0",
        "embed-multilingual-light-v3.0",
    )

    embed_routes = ("/v2/embed",)
    bad_body = "invalid request: the body must be a JSON object."
    no_model = "invalid request: model must be a non-empty string."
    unknown_model = (
        "model '{model}' not found, make sure the correct model ID was used and that you have "
        "access to the model."
    )

    def _error_reply(self, status: int, message: str, code: str | None) -> _Reply:
        return _Reply(status, {"id": str(uuid.uuid4()), "message": message})

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        body = request.body
        model = self._named_model(body)
        if isinstance(model, _Reply):
            return model
        texts = body.get("texts")
        if not _is_str_list(texts) or not texts or len(texts) > 96:
            return self._error(400, "invalid request: texts must be a list of 1 to 96 strings.")
        input_type = body.get("input_type")
        if input_type not in _COHERE_INPUT_TYPES:
            return self._error(
                400, f"invalid request: input_type must be one of {list(_COHERE_INPUT_TYPES)}."
            )
        types = body.get("embedding_types") or ["float"]
        if not _is_str_list(types) or any(t not in _QUANT_TYPES for t in types):
            return self._error(
                400, f"invalid request: embedding_types must be a subset of {list(_QUANT_TYPES)}."
            )
        if body.get("truncate") not in (None, "NONE", "START", "END"):
            return self._error(400, "invalid request: truncate must be NONE, START or END.")
        dimension = body.get("output_dimension")
        if dimension is not None and (not _is_int(dimension) or dimension < 1):
            return self._error(400, "invalid request: output_dimension must be positive.")
        n_tokens = sum(len(words(t)) for t in texts)

        def render(rows: list[list[float]]) -> dict[str, Any]:
            return {
                "id": str(uuid.uuid4()),
                "embeddings": {t: [_quantize(row, t) for row in rows] for t in types},
                "texts": texts,
                "meta": {
                    "api_version": {"version": "2"},
                    "billed_units": {"input_tokens": n_tokens},
                },
                "response_type": "embeddings_by_type",
            }

        return _Embedding([self.vector(t, dim=dimension) for t in texts], render)


# ---------------------------------------------------------------------------------------------
# Voyage AI
# ---------------------------------------------------------------------------------------------


class VoyageServer(FakeEmbeddingServer):
    """``POST /v1/embeddings`` of Voyage AI (client: ``base_url=server.url + "/v1"``).

    Honours ``output_dimension``, ``output_dtype`` (``float``, ``int8``, ``uint8``, ``binary``,
    ``ubinary``) and ``encoding_format: "base64"`` (the voyageai SDK sends it unless told
    otherwise, and decodes the bytes with numpy as float32 / int8 / uint8 by ``output_dtype``).
    ``usage.total_tokens`` counts words.  Errors: ``{"detail": ...}``; an unknown model is a 400.
    """

    default_models = (
        "voyage-3.5",
        "voyage-3.5-lite",
        "voyage-3-large",
        "voyage-3",
        "voyage-3-lite",
        "voyage-code-3",
        "voyage-4",
        "voyage-4-lite",
        "voyage-4-large",
    )

    embed_routes = ("/v1/embeddings",)

    def _error_reply(self, status: int, message: str, code: str | None) -> _Reply:
        return _Reply(status, {"detail": message})

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        body = request.body
        if not isinstance(body, dict):
            return self._error(400, "Request body must be a JSON object.")
        model = body.get("model")
        if not isinstance(model, str) or model not in self.models:
            return self._error(
                400, f"Model {model} is not supported. Supported models are {self.models}."
            )
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not _is_str_list(texts) or not texts or len(texts) > 1000:
            return self._error(400, "Input must be a string or a list of 1 to 1000 strings.")
        if body.get("input_type") not in (None, "query", "document"):
            return self._error(400, "input_type must be 'query', 'document' or null.")
        if not isinstance(body.get("truncation", True), bool):
            return self._error(400, "truncation must be a boolean.")
        dimension = body.get("output_dimension")
        if dimension is not None and (not _is_int(dimension) or dimension < 1):
            return self._error(400, "output_dimension must be a positive integer.")
        dtype = body.get("output_dtype") or "float"
        if dtype not in _QUANT_TYPES:
            return self._error(400, f"output_dtype must be one of {list(_QUANT_TYPES)}.")
        encoding = body.get("encoding_format")
        if encoding not in (None, "base64"):
            return self._error(400, "encoding_format must be 'base64' or null.")
        n_tokens = sum(len(words(t)) for t in texts)

        def render(rows: list[list[float]]) -> dict[str, Any]:
            data = []
            for i, row in enumerate(rows):
                values = _quantize(row, dtype)
                embedding = values if encoding is None else _b64_values(values, dtype)
                data.append({"object": "embedding", "embedding": embedding, "index": i})
            return {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"total_tokens": n_tokens},
            }

        return _Embedding([self.vector(t, dim=dimension) for t in texts], render)


# ---------------------------------------------------------------------------------------------
# Ollama
# ---------------------------------------------------------------------------------------------


def _ollama_name(name: str) -> str:
    """Ollama's canonical model name: ``"all-minilm"`` is ``"all-minilm:latest"``."""
    return name if ":" in name else f"{name}:latest"


class OllamaServer(FakeEmbeddingServer):
    """The embedding part of the Ollama API (client: ``ollama.Client(host=server.url)``).

    Routes: ``POST /api/embed`` and the legacy ``POST /api/embeddings`` (embedding requests),
    ``GET /api/ps`` (models loaded by a successful embed), ``GET /api/tags``,
    ``POST /api/show``, ``GET /api/version`` and ``GET /``.  Model names without a tag mean
    ``:latest``.  An input longer than ``context_words`` words is cut to that many words, or
    refused with 400 when the request says ``"truncate": false``.  Errors: ``{"error": ...}``.
    """

    default_models = ("nomic-embed-text", "mxbai-embed-large", "all-minilm")

    def __init__(
        self,
        *,
        dim: int = 16,
        models: Iterable[str] | None = None,
        context_words: int = 64,
    ) -> None:
        super().__init__(dim=dim, models=models)
        self.context_words = context_words
        self.loaded: list[str] = []

    def reset(self) -> None:
        """Forget requests, the call count, the script and the loaded models."""
        super().reset()
        with self._lock:
            self.loaded.clear()

    embed_routes = ("/api/embed", "/api/embeddings")
    bad_body = "invalid request body"
    no_model = "model is required"

    def _error_reply(self, status: int, message: str, code: str | None) -> _Reply:
        return _Reply(status, {"error": message})

    def _known(self, model: object) -> str | None:
        """The canonical name of ``model`` when the server has it."""
        if not isinstance(model, str) or not model:
            return None
        name = _ollama_name(model)
        return name if name in {_ollama_name(m) for m in self.models} else None

    def _not_found(self, model: object) -> _Reply:
        return self._error(404, f'model "{model}" not found, try pulling it first')

    def _mark_loaded(self, name: str) -> Callable[[], None]:
        def mark() -> None:
            with self._lock:
                if name not in self.loaded:
                    self.loaded.append(name)

        return mark

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        body = request.body
        model = self._named_model(body)
        if isinstance(model, _Reply):
            return model
        name = self._known(model)
        if name is None:
            return self._not_found(model)
        legacy = path.rstrip("/") == "/api/embeddings"
        value = body.get("prompt", "") if legacy else body.get("input", [])
        texts = [value] if isinstance(value, str) else value
        if not _is_str_list(texts):
            return self._error(400, "invalid input type")
        dimension = body.get("dimensions")
        if dimension is not None and (not _is_int(dimension) or dimension < 1):
            return self._error(400, "dimensions must be a positive integer")
        truncate = body.get("truncate", True)
        kept: list[str] = []
        for text in texts:
            tokens = words(text)
            if len(tokens) > self.context_words:
                if truncate is False:
                    return self._error(400, "the input length exceeds the context length")
                text = " ".join(tokens[: self.context_words])
            kept.append(text)
        n_tokens = sum(len(words(t)) for t in kept)

        def render(rows: list[list[float]]) -> dict[str, Any]:
            if legacy:
                return {"embedding": rows[0] if rows else []}
            return {
                "model": model,
                "embeddings": rows,
                "total_duration": 1,
                "load_duration": 1,
                "prompt_eval_count": n_tokens,
            }

        vectors = [self.vector(t, dim=dimension) for t in kept]
        return _Embedding(vectors, render, on_success=self._mark_loaded(name))

    def _other_route(self, request: RecordedRequest, path: str) -> _Reply:
        route = (request.method, path.rstrip("/") or "/")
        if route == ("GET", "/"):
            return _Reply(200, headers={"Content-Type": "text/plain"}, raw=b"Ollama is running")
        if route == ("GET", "/api/version"):
            return _Reply(200, {"version": "0.6.0"})
        if route == ("GET", "/api/ps"):
            with self._lock:
                loaded = list(self.loaded)
            models = [
                {
                    "name": m,
                    "model": m,
                    "size": 123456789,
                    "size_vram": 0,
                    "digest": "abc",
                    "details": {},
                    "expires_at": "2026-12-01T00:00:00Z",
                    "context_length": self.context_words,
                }
                for m in loaded
            ]
            return _Reply(200, {"models": models})
        if route == ("GET", "/api/tags"):
            models = [
                {
                    "name": _ollama_name(m),
                    "model": _ollama_name(m),
                    "modified_at": "2026-11-01T00:00:00Z",
                    "size": 1,
                    "digest": "abc",
                    "details": {},
                }
                for m in self.models
            ]
            return _Reply(200, {"models": models})
        if route == ("POST", "/api/show"):
            body = request.body if isinstance(request.body, dict) else {}
            model = body.get("model", body.get("name"))
            if self._known(model) is None:
                return self._not_found(model)
            info = {
                "general.architecture": "bert",
                "bert.context_length": self.context_words,
                "bert.embedding_length": self.dim,
            }
            return _Reply(
                200,
                {
                    "modelfile": "",
                    "parameters": "",
                    "template": "",
                    "details": {},
                    "model_info": info,
                },
            )
        return self._error(404, "404 page not found")


# ---------------------------------------------------------------------------------------------
# Amazon Bedrock runtime
# ---------------------------------------------------------------------------------------------

_BEDROCK_ERROR_TYPES: dict[int, str] = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}

_BEDROCK_INVOKE = re.compile(r"^/model/([^/]+)/invoke$")
_TITAN_V2 = "amazon.titan-embed-text-v2"
_BEDROCK_COHERE = "cohere.embed"
_BEDROCK_COHERE_INPUT_TYPES = ("search_document", "search_query", "classification", "clustering")


class BedrockServer(FakeEmbeddingServer):
    """``InvokeModel`` of the Bedrock runtime: ``POST /model/{modelId}/invoke``.

    Client: ``boto3.client("bedrock-runtime", endpoint_url=server.url, ...)`` with any dummy
    credentials (the SigV4 signature is recorded, not checked).  Bodies by model family:
    Titan Text Embeddings V2 (``amazon.titan-embed-text-v2*``: one ``inputText``, optional
    ``dimensions`` 256/512/1024 and ``normalize``, answered with ``embedding`` and
    ``inputTextTokenCount``) and Cohere Embed (``cohere.embed*``: ``texts``, ``input_type``,
    optional ``truncate`` and ``embedding_types``).  Errors: ``{"message": ...}`` with the
    ``x-amzn-ErrorType`` header (ThrottlingException for 429, ...); an unknown model id is a 404
    ResourceNotFoundException.

    Titan quirks of the fake: ``"normalize": true`` (explicit) L2-normalises the vector,
    otherwise it is the raw :meth:`vector`; ``"fewer"`` drops the ``embedding`` key.
    """

    default_models = (
        "amazon.titan-embed-text-v2:0",
        "cohere.embed-english-v3",
        "cohere.embed-multilingual-v3",
    )

    def _is_embed_route(self, method: str, path: str) -> bool:
        return method == "POST" and _BEDROCK_INVOKE.match(path) is not None

    def _error_reply(self, status: int, message: str, code: str | None) -> _Reply:
        if code is None:
            code = _BEDROCK_ERROR_TYPES.get(
                status, "InternalServerException" if status >= 500 else "ValidationException"
            )
        headers = {"x-amzn-ErrorType": code, "x-amzn-RequestId": str(uuid.uuid4())}
        return _Reply(status, {"message": message}, headers)

    def _other_route(self, request: RecordedRequest, path: str) -> _Reply:
        return self._error(404, f"No operation at {path}.", code="UnknownOperationException")

    @staticmethod
    def _ok_headers(n_tokens: int) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "x-amzn-RequestId": str(uuid.uuid4()),
            "X-Amzn-Bedrock-Input-Token-Count": str(n_tokens),
            "X-Amzn-Bedrock-Invocation-Latency": "1",
        }

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        match = _BEDROCK_INVOKE.match(path)
        model_id = unquote(match.group(1)) if match else ""
        if model_id not in self.models:
            return self._error(
                404, f"Could not resolve the foundation model from model identifier {model_id}."
            )
        body = request.body
        if not isinstance(body, dict):
            return self._error(400, "Malformed input request, please reformat your input.")
        if model_id.startswith(_TITAN_V2):
            return self._titan(body)
        if model_id.startswith(_BEDROCK_COHERE):
            return self._cohere(body)
        return self._error(400, f"The fake server cannot embed with model {model_id}.")

    def _titan(self, body: dict[str, Any]) -> _Embedding | _Reply:
        text = body.get("inputText")
        if not isinstance(text, str) or not text:
            return self._error(400, "Malformed input request: inputText must be a string.")
        dimensions = body.get("dimensions")
        if dimensions is not None and dimensions not in (256, 512, 1024):
            return self._error(400, "Malformed input request: dimensions must be 256/512/1024.")
        normalize = body.get("normalize")
        if normalize is not None and not isinstance(normalize, bool):
            return self._error(400, "Malformed input request: normalize must be a boolean.")
        n_tokens = len(words(text))
        vector = self.vector(text, dim=dimensions)
        if normalize:
            norm = math.sqrt(sum(v * v for v in vector))
            vector = [v / norm for v in vector]

        def render(rows: list[list[float]]) -> dict[str, Any]:
            out: dict[str, Any] = {"inputTextTokenCount": n_tokens}
            if rows:
                out["embedding"] = rows[0]
            return out

        return _Embedding([vector], render, self._ok_headers(n_tokens))

    def _cohere(self, body: dict[str, Any]) -> _Embedding | _Reply:
        texts = body.get("texts")
        if not _is_str_list(texts) or not texts or len(texts) > 96:
            return self._error(400, "Malformed input request: texts must hold 1 to 96 strings.")
        if body.get("input_type") not in _BEDROCK_COHERE_INPUT_TYPES:
            return self._error(
                400,
                "Malformed input request: input_type must be one of "
                f"{list(_BEDROCK_COHERE_INPUT_TYPES)}.",
            )
        if body.get("truncate") not in (None, "NONE", "START", "END"):
            return self._error(400, "Malformed input request: truncate must be NONE/START/END.")
        types = body.get("embedding_types")
        if types is not None and (
            not _is_str_list(types) or not types or any(t not in _QUANT_TYPES for t in types)
        ):
            return self._error(
                400, f"Malformed input request: embedding_types must be in {list(_QUANT_TYPES)}."
            )
        n_tokens = sum(len(words(t)) for t in texts)
        request_id = str(uuid.uuid4())

        def render(rows: list[list[float]]) -> dict[str, Any]:
            if types is None:
                return {
                    "id": request_id,
                    "embeddings": rows,
                    "texts": texts,
                    "response_type": "embeddings_floats",
                }
            return {
                "id": request_id,
                "embeddings": {t: [_quantize(row, t) for row in rows] for t in types},
                "texts": texts,
                "response_type": "embeddings_by_type",
            }

        vectors = [self.vector(t) for t in texts]
        return _Embedding(vectors, render, self._ok_headers(n_tokens))


# ---------------------------------------------------------------------------------------------
# Chat: questions for generate-evalset
# ---------------------------------------------------------------------------------------------

#: what a chat server says when nothing is scripted and it has no answerer
EMPTY_QUESTIONS = '{"questions": []}'


def chat_passage(body: Any) -> str:
    """The passage of a generate-evalset prompt (between ``<<<`` and ``>>>`` in the last user
    message of a chat request body), or "" when there is none."""
    messages = body.get("messages") if isinstance(body, dict) else None
    users = [
        m.get("content", "")
        for m in messages or []
        if isinstance(m, dict) and m.get("role") == "user"
    ]
    first = next((u for u in users if "<<<" in u), "")
    return first.split("<<<", 1)[1].rsplit(">>>", 1)[0].strip() if "<<<" in first else ""


class _ChatMixin:
    """A chat route on a fake server: each request takes the next scripted :class:`Behaviour`
    (as an embedding request does: statuses, ``"hang"``, ``"malformed"``), then the next
    scripted reply text (:meth:`reply`), else ``answerer(body)``, else :data:`EMPTY_QUESTIONS`.

    ``chat_models`` are the models it chats with (also listed and shown).
    """

    chat_route: ClassVar[str] = ""
    requests: list[RecordedRequest]
    _lock: threading.Lock

    def __init__(self, *, answerer: Callable[[Any], str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # the server class that follows this mixin
        self.answerer = answerer
        self._replies: deque[str] = deque()

    def _is_embed_route(self, method: str, path: str) -> bool:
        """The chat route goes the way of an embedding request (behaviours, recording)."""
        return (
            method == "POST" and path.rstrip("/") == self.chat_route
        ) or super()._is_embed_route(method, path)  # type: ignore[misc]

    def reply(self, *contents: str) -> None:
        """Queue reply texts (the assistant message's content), one per chat request."""
        with self._lock:
            self._replies.extend(contents)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded requests that went to the chat route (failed ones included)."""
        with self._lock:
            return [
                r for r in self.requests if urlsplit(r.path).path.rstrip("/") == self.chat_route
            ]

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        """A chat request (a body with a list of messages) is answered by :meth:`_chat`; any
        other route is the server's own."""
        if path.rstrip("/") != self.chat_route:
            return super()._embed(request, path)  # type: ignore[misc]
        body = request.body
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return self._error(400, self.bad_body)  # type: ignore[attr-defined]
        return self._chat(body)

    def _chat(self, body: dict[str, Any]) -> _Embedding | _Reply:
        raise NotImplementedError

    def _next_content(self, body: Any) -> str:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return self.answerer(body) if self.answerer is not None else EMPTY_QUESTIONS


class OllamaChatServer(_ChatMixin, OllamaServer):
    """:class:`OllamaServer` plus ``POST /api/chat`` (non-streaming, ``format`` recorded).

    Client: ``ollama.Client(host=server.url)``. An unknown model is Ollama's 404 ``model "x"
    not found, try pulling it first``.
    """

    chat_route = "/api/chat"
    default_models = ("llama3.2", *OllamaServer.default_models)

    def _chat(self, body: dict[str, Any]) -> _Embedding | _Reply:
        model = body.get("model")
        name = self._known(model)
        if name is None:
            return self._not_found(model)
        content = self._next_content(body)

        def render(_rows: list[list[float]]) -> dict[str, Any]:
            return {
                "model": model,
                "created_at": "2026-11-30T00:00:00Z",
                "message": {"role": "assistant", "content": content},
                "done": True,
                "done_reason": "stop",
                "total_duration": 1,
                "eval_count": len(words(content)),
            }

        return _Embedding([], render, on_success=self._mark_loaded(name))


class OpenAIChatServer(_ChatMixin, OpenAIServer):
    """:class:`OpenAIServer` plus ``POST /v1/chat/completions`` (non-streaming; ``seed``,
    ``temperature`` and ``response_format`` recorded). Client: ``base_url=server.url + "/v1"``.
    """

    chat_route = "/v1/chat/completions"
    default_models = ("qwen2.5-7b-instruct", *OpenAIServer.default_models)

    def _chat(self, body: dict[str, Any]) -> _Embedding | _Reply:
        model = body.get("model")
        if model not in self.models:
            message = self.unknown_model.format(model=model)
            return self._error(404, message, code=self.unknown_model_code)
        content = self._next_content(body)

        def render(_rows: list[list[float]]) -> dict[str, Any]:
            return {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }

        return _Embedding([], render)
