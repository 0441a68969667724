"""The chat clients (Ollama, OpenAI-compatible), hosts shown without their secrets, and the
requests of one generation: retried on timeouts, 429 and 5xx, asked again when the answer is
not the JSON asked for, and fatal only when no retry can help."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from ..models.providers.retry import RetryPolicy, default_retry_decision, status_of
from .prompts import _RETRY_PROMPT, QUESTIONS_SCHEMA, _messages, parse_questions
from .sampling import _chunk_seed
from .settings import GenerationError, GenerationSettings, import_extra

if TYPE_CHECKING:
    from ..core.types import Chunk
    from .report import GenerationReport

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


def redact_url(url: str) -> str:
    """``url`` without user, password, query and fragment: what may be written or shown.

    Usage::

        redact_url("http://me:pw@gpu-box:11434/?token=x")   # 'http://gpu-box:11434'
    """
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 literal
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port is not None else "")
    except ValueError:
        return "<invalid URL>"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that must never be shown: user info and query values."""
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
    except ValueError:
        return [url]
    secrets = [parts.username or "", parts.password or "", parts.query, parts.fragment]
    secrets += [pair.partition("=")[2] for pair in parts.query.split("&")]
    return sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True)


class _ChatBackend(Protocol):
    host: str  # redacted
    secrets: list[str]  # never shown: user info and query values of the URL, the API key

    def check(self) -> None: ...

    def complete(
        self, messages: list[dict[str, str]], *, seed: int, schema: dict[str, Any] | None = None
    ) -> str: ...

    def is_unreachable(self, exc: BaseException) -> bool: ...

    def is_missing_model(self, exc: BaseException) -> bool: ...


_TIMEOUT_NAMES = frozenset(
    {"TimeoutException", "ReadTimeout", "WriteTimeout", "PoolTimeout", "APITimeoutError"}
)


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or bool(
        {c.__name__ for c in type(exc).__mro__} & _TIMEOUT_NAMES
    )


class _OllamaChat:
    """``/api/chat`` through the ``ollama`` client, the schema as ``format``."""

    def __init__(self, settings: GenerationSettings, host: str) -> None:
        ollama = import_extra("ollama", "questions from Ollama need the ollama package")
        self._ollama = ollama
        self.settings = settings
        self.model = settings.model_name
        self.host = redact_url(host)
        self.secrets = _url_secrets(host)
        self._client = ollama.Client(host=host, timeout=settings.request_timeout_s)

    def check(self) -> None:
        self._client.show(self.model)

    def complete(
        self, messages: list[dict[str, str]], *, seed: int, schema: dict[str, Any] | None = None
    ) -> str:
        options = {
            "temperature": self.settings.temperature,
            "seed": seed,
            "num_predict": self.settings.num_predict,
        }
        response = self._client.chat(
            model=self.model,
            messages=messages,
            format=schema or QUESTIONS_SCHEMA,
            options=options,
            stream=False,
        )
        self.served_model = getattr(response, "model", None)
        self.tokens = getattr(self, "tokens", 0) + int(
            getattr(response, "prompt_eval_count", 0) or 0
        )
        self.tokens += int(getattr(response, "eval_count", 0) or 0)
        return str(response.message.content or "")

    def is_unreachable(self, exc: BaseException) -> bool:
        return isinstance(exc, ConnectionError) or type(exc).__name__ == "ConnectError"

    def is_missing_model(self, exc: BaseException) -> bool:
        return isinstance(exc, self._ollama.ResponseError) and exc.status_code == 404


#: the forms of structured output tried in turn against an OpenAI-compatible server, the first
#: one it accepts kept for the run: a JSON schema (OpenAI, vLLM, LM Studio), a JSON object with
#: the schema beside it (llama.cpp's Python server, which refuses ``json_schema``), then none:
#: the prompt alone asks for the JSON and :func:`~.prompts.parse_questions` reads what comes
STRUCTURED_OUTPUT = ("json_schema", "json_object", "prompt")

#: words of a server's error that say it refused the ``response_format`` it was sent
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "'text'", "structured output")

#: words of a 5xx error body that say the request itself is invalid (a validation error): the
#: same request would fail the same way, so it is not retried (llama.cpp's Python server answers
#: its pydantic validation errors with HTTP 500)
_INVALID_WORDS = (
    "validation error",
    "input should be",
    "invalid request",
    "invalid_request",
    "field required",
    "extra inputs are not permitted",
    "not supported",
    "unsupported",
)


def server_message(exc: BaseException, limit: int = 300) -> str:
    """What the server said in an error answer, in one line: ``HTTP 500: Input should be
    'text' or 'json_object' ...`` (the ``message`` of an OpenAI-style error body, else the
    exception's text), at most ``limit`` characters. Not yet redacted: pass it through the
    generator's scrub before it is shown."""
    status = status_of(exc)
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            text = str(inner.get("message") or inner.get("detail") or "")
        elif isinstance(inner, str):
            text = inner
        if not text and "detail" in body:
            text = str(body["detail"])
    elif isinstance(body, str):
        text = body
    if not text:
        text = str(getattr(exc, "message", "") or exc) or type(exc).__name__
    text = " ".join(text.split()).split(' File "', 1)[0].strip()  # not the server's traceback
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"HTTP {status}: {text}" if status is not None else f"{type(exc).__name__}: {text}"


def refuses_format(exc: BaseException) -> bool:
    """Whether the server refused the structured-output form it was sent (a 400, 422 or 500
    whose message names ``response_format`` or its types)."""
    status = status_of(exc)
    if status not in (400, 415, 422, 500, 501):
        return False
    text = server_message(exc, limit=4000).lower()
    return any(word in text for word in _FORMAT_WORDS)


def is_invalid_request(exc: BaseException) -> bool:
    """A refusal that a retry cannot change: a 4xx other than a timeout or a rate limit, or a
    5xx whose message says the request is invalid (a validation error)."""
    status = status_of(exc)
    if status is None:
        return False
    if 400 <= status < 500:
        return status not in (408, 409, 425, 429)
    if status >= 500:
        text = server_message(exc, limit=4000).lower()
        return any(word in text for word in _INVALID_WORDS)
    return False


class _OpenAIChat:
    """``/v1/chat/completions`` through the ``openai`` client. The schema goes as
    ``response_format`` in the first form of :data:`STRUCTURED_OUTPUT` the server accepts
    (``mode``, kept for the run). Its own retries are off: :class:`RetryPolicy` retries and
    counts."""

    def __init__(self, settings: GenerationSettings, host: str) -> None:
        openai = import_extra(
            "openai", "questions from an OpenAI-compatible server need the openai package"
        )
        self._openai = openai
        self.settings = settings
        self.model = settings.model_name
        self.host = redact_url(host)
        key = os.environ.get("OPENAI_API_KEY")
        self.secrets = _url_secrets(host) + ([key] if key else [])
        self._client: Any = openai.OpenAI(
            base_url=host,
            api_key=key or "unused",  # local servers take none
            max_retries=0,
            timeout=settings.request_timeout_s,
        )
        #: the structured-output form in use: the first the server accepted
        self.mode = STRUCTURED_OUTPUT[0]
        #: what the server said when it refused each form it refused, in order
        self.refusals: list[str] = []

    def check(self) -> None:
        """Compatible servers differ in what they list; the first request tells."""

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        if self.mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True},
            }
        if self.mode == "json_object":
            return {"type": "json_object", "schema": schema}
        return None

    def complete(
        self, messages: list[dict[str, str]], *, seed: int, schema: dict[str, Any] | None = None
    ) -> str:
        schema = schema or QUESTIONS_SCHEMA
        while True:
            extra: dict[str, Any] = {}
            response_format = self._response_format(schema)
            if response_format is not None:
                extra["response_format"] = response_format
            try:
                response = self._client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    temperature=self.settings.temperature,
                    seed=seed,
                    max_tokens=self.settings.num_predict,
                    **extra,
                )
            except Exception as exc:
                place = STRUCTURED_OUTPUT.index(self.mode)
                if place + 1 < len(STRUCTURED_OUTPUT) and refuses_format(exc):
                    self.refusals.append(f"{self.mode}: {server_message(exc)}")
                    self.mode = STRUCTURED_OUTPUT[place + 1]  # remembered for the run
                    continue
                raise
            break
        #: the model id the server answered with, and the tokens it counted (the judge
        #: records both)
        self.served_model = getattr(response, "model", None)
        usage = getattr(response, "usage", None)
        self.tokens = getattr(self, "tokens", 0) + int(getattr(usage, "total_tokens", 0) or 0)
        if not response.choices:
            return ""
        return str(response.choices[0].message.content or "")

    def is_unreachable(self, exc: BaseException) -> bool:
        return isinstance(exc, self._openai.APIConnectionError) and not _is_timeout(exc)

    def is_missing_model(self, exc: BaseException) -> bool:
        return isinstance(exc, self._openai.NotFoundError)


def _backend(settings: GenerationSettings) -> _ChatBackend:
    if settings.provider == "openai":
        host = settings.host or os.environ.get("OPENAI_BASE_URL")
        if not host:
            raise GenerationError(
                f"model {settings.model!r}: an OpenAI-compatible server needs its base URL: "
                "pass --host http://127.0.0.1:8000/v1 (or host: in the settings)"
            )
        return _OpenAIChat(settings, host)
    host = settings.host or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
    if "://" not in host:
        host = f"http://{host}"
    return _OllamaChat(settings, host)


class _Generator:
    def __init__(self, settings: GenerationSettings, backend: _ChatBackend, secrets: list[str]):
        self.settings = settings
        self.backend = backend
        self.secrets = secrets
        self.policy = RetryPolicy(
            max_retries=settings.max_retries, backoff=settings.retry_backoff_s, seed=settings.seed
        )
        #: whether the server has answered once: until it has, a timeout that outlasts the
        #: retries stops the generation (every chunk would wait as long) instead of losing a chunk
        self.answered = False

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def _timed_out(self, exc: BaseException, tries: int) -> GenerationError:
        """A server that never answered within ``request_timeout_s``: the setting to raise."""
        s = self.settings
        times = f" ({tries} tries)" if tries > 1 else ""
        return GenerationError(
            f"the {s.provider} server at {self.backend.host} did not answer within "
            f"{s.request_timeout_s:g} s{times}: {type(exc).__name__}. Fix: raise the timeout "
            "(--request-timeout-s SECONDS, or request_timeout_s in evalset: {generate: ...}; a "
            "model that loads or a slow machine can take minutes), or check that the server is "
            "up and not overloaded"
        )

    def _fatal(self, exc: BaseException) -> GenerationError | None:
        s = self.settings
        if self.backend.is_missing_model(exc):
            if s.provider == "ollama":
                fix = f"run `ollama pull {s.model_name}` (or pass another --model)"
            else:
                fix = "pass a --model the server serves (and check that --host ends in /v1)"
            return GenerationError(
                f"model {s.model_name!r} is not available at {self.backend.host}: {fix} (the "
                f"server said: {self.scrub(server_message(exc))})"
            )
        if self.backend.is_unreachable(exc):
            if s.provider == "ollama":
                fix = "start it with `ollama serve`, or pass --host / set OLLAMA_HOST"
            else:
                fix = "start the server, or pass its base URL with --host"
            return GenerationError(
                f"cannot reach the {s.provider} server at {self.backend.host} "
                f"({type(exc).__name__}): {fix}"
            )
        return None

    def check(self) -> None:
        try:
            self.backend.check()
        except Exception as exc:
            fatal = self._fatal(exc)
            if fatal is not None:
                raise fatal from None
            if _is_timeout(exc):
                raise self._timed_out(exc, 1) from None
            raise GenerationError(
                f"{self.settings.provider} server at {self.backend.host}: "
                f"{self.scrub(f'{type(exc).__name__}: {exc}')}"
            ) from None

    def request(
        self,
        messages: list[dict[str, str]],
        seed: int,
        report: GenerationReport,
        schema: dict[str, Any] | None = None,
    ) -> str:
        """One answer, retried on timeouts, 429 and 5xx; raises the last error when the
        retries run out (a GenerationError when no retry can help). A refusal that a retry
        cannot change (a 4xx, or a 5xx that says the request is invalid) is not retried."""
        attempt = 0
        while True:
            report.requests += 1
            try:
                content = self.backend.complete(messages, seed=seed, schema=schema)
                self.answered = True
                return content
            except Exception as exc:
                # timeouts, 429, 5xx, connections; never a request the server calls invalid
                decision = None if is_invalid_request(exc) else default_retry_decision(exc)
                if decision is not None and not self.policy.gives_up(decision, attempt):
                    report.retries += 1
                    time.sleep(self.policy.delay(decision, attempt))
                    attempt += 1
                    continue
                fatal = self._fatal(exc)
                if fatal is not None:
                    raise fatal from None
                if _is_timeout(exc) and not self.answered:
                    raise self._timed_out(exc, attempt + 1) from None
                if status_of(exc) in (401, 403):  # every later request would fail the same
                    raise GenerationError(
                        f"{self.settings.provider} server at {self.backend.host} refused the "
                        f"request: {self.scrub(server_message(exc))}; check "
                        "OPENAI_API_KEY (or the server's key setting)"
                    ) from None
                raise  # counted by the caller: one chunk lost, the run goes on

    def count_failure(self, exc: BaseException, report: GenerationReport) -> str:
        """Count a request that failed for good under its reason (``request_refused``: the
        server called it invalid, not retried; ``request_failed``: timeouts or server errors
        outlasted the retries), with what the server said, redacted; the reason."""
        reason = "request_refused" if is_invalid_request(exc) else "request_failed"
        report.failed_chunks[reason] += 1
        report.server_errors[self.scrub(server_message(exc))] += 1
        return reason

    def questions(
        self, chunk: Chunk, report: GenerationReport
    ) -> tuple[list[tuple[str, str]], int] | None:
        """The chunk's questions and the seed that gave them, or None (counted)."""
        s = self.settings
        base_seed = _chunk_seed(s.seed, chunk.id)
        messages = _messages(chunk, s)
        reason = "invalid_json"
        for attempt in range(s.max_generation_attempts):
            seed = (base_seed + attempt) & 0x7FFFFFFF
            try:
                content = self.request(messages, seed, report)
            except GenerationError:
                raise
            except Exception as exc:
                if status_of(exc) is None and default_retry_decision(exc) is None:
                    raise  # not the server's answer: a defect, never silently counted
                self.count_failure(exc, report)
                return None
            parsed, bad = parse_questions(content)
            if parsed == []:
                report.failed_chunks["no_questions"] += 1  # an answer, not retried: counted
                return None
            if parsed is not None:
                return parsed, seed
            reason = bad or "invalid_json"
            report.bad_answers[reason] += 1
            messages = [
                *_messages(chunk, s),
                {"role": "assistant", "content": content[:2000]},
                {"role": "user", "content": _RETRY_PROMPT},
            ]
        report.failed_chunks[reason] += 1
        return None
