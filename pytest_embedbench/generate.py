"""Synthetic eval sets from a chat model, heuristically filtered (issue 13).

A folder of documents becomes an eval set in the JSONL format that
:func:`~pytest_embedbench.datasets.load_evalset` reads:

1. the documents are read (:func:`~pytest_embedbench.ingest.load_documents`) and chunked
   (:func:`~pytest_embedbench.chunking.chunk_documents_with`);
2. a seeded, deterministic sample of the chunks of at least ``min_chunk_chars`` characters
   (``max_chunks`` of them, kept in corpus order) goes to a chat model, one request a chunk,
   asking for up to ``questions_per_chunk`` questions the chunk answers, as JSON
   (``{"questions": [{"question": str, "answer": str}]}``): Ollama's ``/api/chat`` with that
   JSON schema as ``format``, or an OpenAI-compatible ``/v1/chat/completions`` (vLLM, LM Studio,
   llama.cpp) with ``response_format`` ``json_schema``; temperature 0 and a per-chunk seed;
3. an answer that is not JSON, or not of that shape, is asked again with another seed
   (``max_generation_attempts`` in all) and then counted, never fatal; timeouts, 429s and 5xx
   are retried with backoff (:class:`~pytest_embedbench.providers.retry.RetryPolicy`, the
   ``Retry-After`` of the server wins) and then counted; an unreachable server or a model that
   is not there stops the run with a :class:`GenerationError` saying how to fix it;
4. every question passes the filters of :data:`REJECT_REASONS`, in that order; the first it
   fails is counted in the :class:`GenerationReport`;
5. the kept questions are numbered ``q0001``... in corpus order and written atomically, one JSON
   object a line (:func:`write_evalset`): the same documents, settings and model answers give
   the same bytes.

The filters are heuristics, not a judge: a human should read a generated set before it is
trusted as ground truth (the README says so too).

Usage::

    from pytest_embedbench.generate import GenerationSettings, generate_evalset, write_evalset

    settings = GenerationSettings(model="llama3.2", max_chunks=40, questions_per_chunk=2)
    result = generate_evalset("docs/", settings)
    write_evalset("generated-evalset.jsonl", result.rows)
    print("\\n".join(result.report.summary_lines()))

Why ``rapidfuzz`` for the near-duplicate filter: ``fuzz.ratio`` is the normalised Indel
similarity (the figure ``difflib.SequenceMatcher.ratio`` approximates, without its "junk"
heuristic that makes ``SequenceMatcher`` order-dependent), in C++, and ``process.extractOne``
with ``score_cutoff`` compares one question with all accepted ones without a Python loop: a set
of thousands of questions stays quick. It is a small, maintained, MIT-licensed wheel.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from .chunking import Chunk, ChunkingSettings, chunk_documents_with
from .datasets.core import Document
from .exceptions import ConfigError, EmbedBenchError, did_you_mean
from .providers.retry import RetryPolicy, default_retry_decision, status_of

__all__ = [
    "DEFAULT_OLLAMA_HOST",
    "PROMPT_VERSION",
    "QUESTIONS_SCHEMA",
    "REJECT_REASONS",
    "GenerationError",
    "GenerationReport",
    "GenerationResult",
    "GenerationSettings",
    "StaleEvalsetError",
    "dataset_generation",
    "ensure_generated_evalset",
    "evalset_fingerprint",
    "generate_evalset",
    "redact_url",
    "write_evalset",
]

#: bumped whenever the prompt's words change: a set records the version that wrote it
PROMPT_VERSION = "1"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"

#: the JSON schema the model is held to (Ollama ``format``, OpenAI ``response_format``)
QUESTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "answer": {"type": "string"},
                },
                "required": ["question", "answer"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["questions"],
    "additionalProperties": False,
}

#: why a returned question is not kept, in the order the filters run
REJECT_REASONS: dict[str, str] = {
    "extra": "more questions than questions_per_chunk asked for",
    "no_question_mark": "does not end with '?'",
    "too_short": "fewer words than min_question_words",
    "too_long": "more words than max_question_words",
    "refers_to_source": "mentions 'this passage', 'the document', 'the text', 'the author'...",
    "generic": "a generic request ('summarize...', 'what is this about')",
    "no_content_words": "no word beyond question and stop words",
    "unanswerable": "similarity to its source chunk below min_similarity (judge model)",
    "round_trip": "its source document is not in the judge model's top round_trip_k",
    "duplicate": "near-duplicate of an accepted question (dedupe_threshold)",
}

#: why a chunk gave no questions at all (after its attempts and retries)
CHUNK_FAILURES: dict[str, str] = {
    "invalid_json": "the answer was not JSON, every attempt",
    "schema_mismatch": 'the JSON was not {"questions": [{"question", "answer"}]}, every attempt',
    "request_failed": "timeouts or server errors outlasted the retries",
}

_SYSTEM_PROMPT = (
    "You write search questions for testing a retrieval system. A user who has never seen the "
    "passage will type each question into a search box, so every question must stand on its "
    "own and be answered by the passage. Reply with JSON only."
)

_USER_PROMPT = """\
Write up to {n} question(s) that the passage below answers, each with its short answer taken \
from the passage.

Rules for every question:
- it is answered by the passage alone;
- it names its subject: never "this passage", "the document", "the text", "the author";
- it is specific: no "summarize", no "what is this about";
- it is between {min_words} and {max_words} words and ends with a question mark.

Reply with JSON only, in this form:
{{"questions": [{{"question": "...", "answer": "..."}}]}}

Passage (from {doc_id}):
<<<
{text}
>>>"""

_RETRY_PROMPT = (
    'That reply was not JSON of the form {"questions": [{"question": "...", "answer": "..."}]}. '
    "Reply again with that JSON only."
)


#: prefixes of embedding providers, which write no questions (an Ollama tag looks the same)
_NOT_CHAT_PROVIDERS = frozenset({"hf", "cohere", "voyage", "bedrock", "bm25", "hybrid"})


class GenerationError(EmbedBenchError):
    """Generation cannot go on: the chat server is unreachable, the model is not there, or a
    setting is wrong. The message says how to fix it and holds no credentials."""


class StaleEvalsetError(GenerationError):
    """A generated eval set no longer matches its documents or settings; the message names
    what changed and the command that regenerates it."""


# ---------------------------------------------------------------------------------------------
# settings

_SETTING_LIMITS: dict[str, tuple[float, float]] = {
    "questions_per_chunk": (1, 5),
    "min_chunk_chars": (0, math.inf),
    "min_question_words": (1, math.inf),
    "max_question_words": (1, math.inf),
    "max_generation_attempts": (1, 10),
    "num_predict": (1, math.inf),
    "max_retries": (0, 20),
    "round_trip_k": (1, math.inf),
}


@dataclass(frozen=True)
class GenerationSettings:
    """How questions are generated and filtered (``evalset: {generate: ...}`` in the yaml).

    ``model`` is an Ollama model (``llama3.2`` or ``ollama:llama3.2``) or an OpenAI-compatible
    one (``openai:Qwen2.5-7B-Instruct``, with ``host`` its ``base_url``, e.g.
    ``http://127.0.0.1:8000/v1``; the key comes from ``OPENAI_API_KEY`` when set). ``host``
    defaults to ``OLLAMA_HOST``, else ``http://127.0.0.1:11434``. ``embedding_model`` (a model
    spec) turns on the answerability and round-trip filters.
    """

    model: str = "llama3.2"
    host: str | None = None
    questions_per_chunk: int = 1
    max_chunks: int | None = None
    min_chunk_chars: int = 120
    min_question_words: int = 5
    max_question_words: int = 40
    dedupe_threshold: float = 0.85
    max_generation_attempts: int = 2
    temperature: float = 0.0
    num_predict: int = 220
    request_timeout_s: float = 180.0
    max_retries: int = 2
    retry_backoff_s: float = 0.75
    seed: int = 42
    embedding_model: str | None = None
    min_similarity: float = 0.3
    round_trip_k: int = 5
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    #: where ensure_generated_evalset writes the set, relative to the configuration's folder
    output: str | None = None

    def __post_init__(self) -> None:
        self.check("GenerationSettings")

    def check(self, where: str) -> None:
        """Raise a ConfigError naming ``where``, the key and its value for the first bad one."""
        for name, (low, high) in _SETTING_LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                span = f">= {low:g}" if high == math.inf else f"from {low:g} to {high:g}"
                raise ConfigError(f"{where}: {name} {value!r} must be a whole number {span}")
        if self.max_question_words < self.min_question_words:
            raise ConfigError(
                f"{where}: max_question_words {self.max_question_words!r} is below "
                f"min_question_words {self.min_question_words!r}"
            )
        if self.max_chunks is not None and (
            isinstance(self.max_chunks, bool)
            or not isinstance(self.max_chunks, int)
            or self.max_chunks < 1
        ):
            raise ConfigError(
                f"{where}: max_chunks {self.max_chunks!r} must be a whole number >= 1, or null "
                "for every eligible chunk"
            )
        for name, low, high in (
            ("dedupe_threshold", 0.5, 1.0),
            ("temperature", 0.0, 2.0),
            ("min_similarity", -1.0, 1.0),
            ("request_timeout_s", 0.001, math.inf),
            ("retry_backoff_s", 0.0, math.inf),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{where}: {name} {value!r} must be a number")
            if not low <= value <= high:
                raise ConfigError(f"{where}: {name} {value!r} must be between {low} and {high}")
        if not isinstance(self.model, str) or not self.model.split(":", 1)[-1]:
            raise ConfigError(f"{where}: model {self.model!r} must name a chat model")
        if self.model.partition(":")[0] in _NOT_CHAT_PROVIDERS:
            raise ConfigError(
                f"{where}: model {self.model!r}: questions come from 'ollama:MODEL' (or a bare "
                "Ollama name) or 'openai:MODEL' with host set to the server's base_url"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"{where}: seed {self.seed!r} must be a whole number")

    @property
    def provider(self) -> str:
        """``"ollama"`` or ``"openai"``, from the model's prefix (none: Ollama)."""
        head, sep, _ = self.model.partition(":")
        return head if sep and head in ("ollama", "openai") else "ollama"

    @property
    def model_name(self) -> str:
        """The model name the server knows (without the provider prefix)."""
        head, sep, rest = self.model.partition(":")
        return rest if sep and head in ("ollama", "openai") else self.model

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, Any] | None, where: str, **defaults: Any
    ) -> GenerationSettings:
        """Settings from a YAML mapping (``evalset: {generate: ...}``); unknown keys name the
        closest known one. ``chunking`` is a mapping read by
        :meth:`~pytest_embedbench.chunking.ChunkingSettings.from_mapping`; ``defaults``
        (e.g. the dataset's ``chunking`` or ``output``) apply where the mapping is silent.

        Usage::

            GenerationSettings.from_mapping({"model": "llama3.2", "max_chunks": 40}, "generate")
        """
        if mapping is None:
            mapping = {}
        if not isinstance(mapping, Mapping):
            raise ConfigError(
                f"{where}: expected a mapping of generation settings, got {mapping!r}"
            )
        names = [f.name for f in dataclasses.fields(cls)]
        aliases = {"ollama_model": "model", "ollama_host": "host", "base_url": "host"}
        values: dict[str, Any] = dict(defaults)
        for key, value in mapping.items():
            name = aliases.get(str(key), str(key))
            if name not in names:
                raise ConfigError(
                    f"{where}: unknown key {key!r}{did_you_mean(key, names)} "
                    f"(allowed: {', '.join(sorted(names))})"
                )
            values[name] = value
        chunking = values.get("chunking")
        if not isinstance(chunking, ChunkingSettings):
            values["chunking"] = ChunkingSettings.from_mapping(chunking, f"{where}: chunking")
        if isinstance(values.get("request_timeout_s"), int):
            values["request_timeout_s"] = float(values["request_timeout_s"])
        try:
            settings = cls(**values)
        except TypeError as exc:  # a value of a type the checks do not reach
            raise ConfigError(f"{where}: {exc}") from None
        settings.check(where)
        return settings

    def identity(self) -> dict[str, Any]:
        """What decides the questions: the fingerprint of a generated set is taken over this
        (timeouts, retries and the host are left out: they change no answer)."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name
            not in ("host", "request_timeout_s", "max_retries", "retry_backoff_s", "output")
        }
        out["chunking"] = self.chunking.as_dict()
        out["prompt_version"] = PROMPT_VERSION
        if self.embedding_model is None:  # the judge's settings matter only with a judge
            out.pop("min_similarity")
            out.pop("round_trip_k")
        return out


# ---------------------------------------------------------------------------------------------
# hosts without secrets


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


# ---------------------------------------------------------------------------------------------
# chat backends


class _ChatBackend(Protocol):
    host: str  # redacted
    secrets: list[str]  # never shown: user info and query values of the URL, the API key

    def check(self) -> None: ...

    def complete(self, messages: list[dict[str, str]], *, seed: int) -> str: ...

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
        try:
            import ollama
        except ImportError:
            raise GenerationError(
                "questions from Ollama need the ollama package: "
                "pip install 'pytest-embedbench[generate]'"
            ) from None
        self._ollama = ollama
        self.settings = settings
        self.model = settings.model_name
        self.host = redact_url(host)
        self.secrets = _url_secrets(host)
        self._client = ollama.Client(host=host, timeout=settings.request_timeout_s)

    def check(self) -> None:
        self._client.show(self.model)

    def complete(self, messages: list[dict[str, str]], *, seed: int) -> str:
        options = {
            "temperature": self.settings.temperature,
            "seed": seed,
            "num_predict": self.settings.num_predict,
        }
        response = self._client.chat(
            model=self.model,
            messages=messages,
            format=QUESTIONS_SCHEMA,
            options=options,
            stream=False,
        )
        return str(response.message.content or "")

    def is_unreachable(self, exc: BaseException) -> bool:
        return isinstance(exc, ConnectionError) or type(exc).__name__ == "ConnectError"

    def is_missing_model(self, exc: BaseException) -> bool:
        return isinstance(exc, self._ollama.ResponseError) and exc.status_code == 404


class _OpenAIChat:
    """``/v1/chat/completions`` through the ``openai`` client, the schema as
    ``response_format``. Its own retries are off: :class:`RetryPolicy` retries and counts."""

    def __init__(self, settings: GenerationSettings, host: str) -> None:
        try:
            import openai
        except ImportError:
            raise GenerationError(
                "questions from an OpenAI-compatible server need the openai package: "
                "pip install 'pytest-embedbench[generate]'"
            ) from None
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

    def check(self) -> None:
        """Compatible servers differ in what they list; the first request tells."""

    def complete(self, messages: list[dict[str, str]], *, seed: int) -> str:
        response = self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            temperature=self.settings.temperature,
            seed=seed,
            max_tokens=self.settings.num_predict,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "questions", "schema": QUESTIONS_SCHEMA, "strict": True},
            },
        )
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


# ---------------------------------------------------------------------------------------------
# parsing the answer

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_questions(content: str) -> tuple[list[tuple[str, str]] | None, str | None]:
    """``([(question, answer)...], None)``, or ``(None, reason)`` with reason
    ``"invalid_json"`` or ``"schema_mismatch"``. A JSON object inside a Markdown code fence
    counts as JSON (small models add fences even when told not to)."""
    text = content.strip()
    try:
        data = json.loads(text)
    except ValueError:
        fenced = _FENCE.search(text)
        try:
            data = json.loads(fenced.group(1)) if fenced else None
        except ValueError:
            data = None
        if data is None:
            return None, "invalid_json"
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        return None, "schema_mismatch"
    out = []
    for item in data["questions"]:
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            return None, "schema_mismatch"
        answer = item.get("answer", "")
        if not isinstance(answer, str):
            return None, "schema_mismatch"
        out.append((" ".join(item["question"].split()), " ".join(answer.split())))
    return out, None


# ---------------------------------------------------------------------------------------------
# filters

_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

_SOURCE_NOUNS = (
    r"passage|document|text|excerpt|article|paragraph|context|chunk|snippet|extract|"
    r"author|writer|reading"
)
_REFERS_TO_SOURCE = re.compile(
    rf"\b(?:(?:this|that|the|above|given|provided|following|same)\s+(?:{_SOURCE_NOUNS})s?\b"
    r"|according to (?:it|this|the (?:passage|text|document|author))"
    r"|(?:mentioned|described|discussed|stated) (?:above|here|in it)"
    r"|in (?:this|the) (?:section|passage)\b)",
    re.IGNORECASE,
)
_GENERIC = re.compile(
    r"^(?:please\s+|can you\s+|could you\s+)?"
    r"(?:summari[sz]e|sum up|give (?:me )?(?:a |an )?(?:summary|overview)|"
    r"provide (?:a |an )?(?:summary|overview)|describe (?:this|it|the content)|"
    r"what(?:'s| is) (?:this|it) (?:all )?about|what (?:is|are) the (?:main|key|central) "
    r"(?:point|idea|topic|theme|takeaway|message|argument)s?\b|"
    r"what (?:is|was) the (?:topic|purpose|subject|gist)\b|"
    r"what does (?:this|it) (?:say|describe|discuss|cover|explain|talk about)|"
    r"what (?:can|do) (?:we|you|i) learn\b|what information is (?:given|provided)\b)",
    re.IGNORECASE,
)
_STOP_WORDS = frozenset(
    """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else
    ever every few for from further get gets got had has have having he her here hers him his
    how i if in into is it its itself just let like may me might more most much must my no nor
    not now of off on once one only or other our out over own per same shall she should so some
    such than that the their them then there these they thing things this those through to too
    under until up upon us use used using very was way we were what whatever when where whether
    which while who whom whose why will with within without would yes yet you your
    """.split()
)


def _question_words(question: str) -> list[str]:
    return _WORDS.findall(question)


def _heuristic_reason(question: str, settings: GenerationSettings) -> str | None:
    """The first heuristic filter ``question`` fails, or None."""
    if not question.rstrip().endswith("?"):
        return "no_question_mark"
    words = _question_words(question)
    if len(words) < settings.min_question_words:
        return "too_short"
    if len(words) > settings.max_question_words:
        return "too_long"
    if _REFERS_TO_SOURCE.search(question):
        return "refers_to_source"
    if _GENERIC.search(question.strip()):
        return "generic"
    content = [w for w in words if w.casefold() not in _STOP_WORDS and (len(w) > 2 or w.isdigit())]
    if not content:
        return "no_content_words"
    return None


class _Deduper:
    """Near-duplicates across the whole set: rapidfuzz's ``fuzz.ratio`` on case-folded,
    whitespace-collapsed texts, at or above the threshold (0..1)."""

    def __init__(self, threshold: float) -> None:
        try:
            from rapidfuzz import fuzz, process
        except ImportError:
            raise GenerationError(
                "the near-duplicate filter needs rapidfuzz: "
                "pip install 'pytest-embedbench[generate]'"
            ) from None
        self._fuzz, self._process = fuzz, process
        self.cutoff = threshold * 100.0
        self.accepted: list[str] = []

    @staticmethod
    def key(question: str) -> str:
        return " ".join(question.casefold().split())

    def is_duplicate(self, question: str) -> bool:
        if not self.accepted:
            return False
        match = self._process.extractOne(
            self.key(question), self.accepted, scorer=self._fuzz.ratio, score_cutoff=self.cutoff
        )
        return match is not None

    def accept(self, question: str) -> None:
        self.accepted.append(self.key(question))


class _Judge:
    """The answerability and round-trip filters, with an embedding model (a model spec)."""

    def __init__(self, spec: str, chunks: Sequence[Chunk], settings: GenerationSettings) -> None:
        import numpy as np

        from .providers import EmbeddingProvider, ModelSpec, create_provider

        self._np = np
        self.spec = spec
        provider = create_provider(ModelSpec.coerce(spec))
        if not isinstance(provider, EmbeddingProvider):
            raise GenerationError(
                f"embedding model {spec!r} is not an embedding model; the answerability filter "
                "compares vectors: name a dense model (hf:..., ollama:..., openai:...)"
            )
        provider.ensure_loaded()
        self.provider = provider
        self.settings = settings
        self.chunk_index = {c.id: i for i, c in enumerate(chunks)}
        self.doc_of = np.array([c.doc_id for c in chunks], dtype=object)
        self.matrix = provider.embed([c.text for c in chunks], kind="document")

    def reasons(self, questions: Sequence[str], chunk: Chunk) -> list[str | None]:
        """For each question: None (kept), ``"unanswerable"`` or ``"round_trip"``."""
        np = self._np
        if not questions:
            return []
        vectors = self.provider.embed(list(questions), kind="query")
        scores = vectors.astype(np.float64) @ self.matrix.astype(np.float64).T
        own = self.chunk_index[chunk.id]
        out: list[str | None] = []
        for row in scores:
            if row[own] < self.settings.min_similarity:
                out.append("unanswerable")
                continue
            best: dict[str, float] = {}  # a document ranks by its best chunk
            for doc, score in zip(self.doc_of, row, strict=True):
                if score > best.get(doc, -math.inf):
                    best[doc] = float(score)
            ranked = sorted(best.items(), key=lambda kv: (-kv[1], _desc(kv[0])))
            top = {doc for doc, _ in ranked[: self.settings.round_trip_k]}
            out.append(None if chunk.doc_id in top else "round_trip")
        return out


def _desc(text: str) -> tuple[int, ...]:
    """A key that sorts strings in descending order (the ranking tie rule: id descending)."""
    return tuple(-ord(c) for c in text) + (1,)


# ---------------------------------------------------------------------------------------------
# the report


@dataclass
class GenerationReport:
    """What a generation did, counted: chunks, requests, retries, answers that could not be
    read, and every rejected question by reason (:data:`REJECT_REASONS`)."""

    model: str
    provider: str
    host: str
    seed: int
    prompt_version: str = PROMPT_VERSION
    judge: str | None = None
    documents: int = 0
    chunks: int = 0
    eligible_chunks: int = 0
    sampled_chunks: int = 0
    chunks_done: int = 0
    requests: int = 0
    retries: int = 0
    #: attempts whose answer could not be read, by reason (each retried while attempts last)
    bad_answers: Counter[str] = field(default_factory=Counter)
    #: chunks that gave no questions at all, by reason (:data:`CHUNK_FAILURES`)
    failed_chunks: Counter[str] = field(default_factory=Counter)
    candidates: int = 0
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, keys in a fixed order (for the sidecar file and ``--json``)."""
        out = dataclasses.asdict(self)
        for name in ("bad_answers", "failed_chunks", "rejected"):
            out[name] = dict(sorted(getattr(self, name).items()))
        return out

    def progress_line(self) -> str:
        """``chunks 12/40 · kept 17 · rejected 6 (duplicate 2, no_question_mark 4)``."""
        rejected = sum(self.rejected.values())
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(self.rejected.items()))
        failed = sum(self.failed_chunks.values())
        return (
            f"chunks {self.chunks_done}/{self.sampled_chunks} · kept {self.kept} · rejected "
            f"{rejected}"
            + (f" ({reasons})" if reasons else "")
            + (f" · failed chunks {failed}" if failed else "")
        )

    def summary_lines(self) -> list[str]:
        """The closing summary: what was asked, what came back, what was kept and why not."""
        lines = [
            f"generated with {self.provider}:{self.model} at {self.host} (seed {self.seed}, "
            f"prompt v{self.prompt_version})",
            f"documents {self.documents} · chunks {self.chunks} · eligible {self.eligible_chunks}"
            f" · sampled {self.sampled_chunks}",
            f"requests {self.requests} (retries {self.retries}) · questions returned "
            f"{self.candidates} · kept {self.kept}",
        ]
        for reason, n in sorted(self.bad_answers.items()):
            lines.append(f"  unreadable answers ({reason}): {n}")
        for reason, n in sorted(self.failed_chunks.items()):
            lines.append(f"  chunks without questions ({reason}): {n} - {CHUNK_FAILURES[reason]}")
        for reason in REJECT_REASONS:
            if self.rejected.get(reason):
                lines.append(
                    f"  rejected {reason}: {self.rejected[reason]} - {REJECT_REASONS[reason]}"
                )
        if self.judge:
            lines.append(f"answerability and round-trip judged by {self.judge}")
        lines.append(
            "The filters are heuristics: read the questions before you trust them as ground truth."
        )
        return lines


@dataclass
class GenerationResult:
    """The kept questions as eval-set lines, and the report."""

    rows: list[dict[str, Any]]
    report: GenerationReport


# ---------------------------------------------------------------------------------------------
# generation


def _chunk_seed(seed: int, chunk_id: str) -> int:
    """A per-chunk seed from the run seed and the chunk id: stable when the sample changes."""
    digest = hashlib.sha256(f"{seed}\x00{chunk_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def sample_chunks(chunks: Sequence[Chunk], settings: GenerationSettings) -> list[Chunk]:
    """The chunks questions are asked for: at least ``min_chunk_chars`` characters, then a
    seeded sample of ``max_chunks`` of them, in corpus order."""
    eligible = [c for c in chunks if len(c.text.strip()) >= settings.min_chunk_chars]
    if settings.max_chunks is None or len(eligible) <= settings.max_chunks:
        return eligible
    picked = set(random.Random(settings.seed).sample(range(len(eligible)), settings.max_chunks))
    return [c for i, c in enumerate(eligible) if i in picked]


def _messages(chunk: Chunk, settings: GenerationSettings) -> list[dict[str, str]]:
    prompt = _USER_PROMPT.format(
        n=settings.questions_per_chunk,
        min_words=settings.min_question_words,
        max_words=settings.max_question_words,
        doc_id=chunk.doc_id,
        text=chunk.text,
    )
    return [{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": prompt}]


class _Generator:
    def __init__(self, settings: GenerationSettings, backend: _ChatBackend, secrets: list[str]):
        self.settings = settings
        self.backend = backend
        self.secrets = secrets
        self.policy = RetryPolicy(
            max_retries=settings.max_retries, backoff=settings.retry_backoff_s, seed=settings.seed
        )

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def _fatal(self, exc: BaseException) -> GenerationError | None:
        s = self.settings
        if self.backend.is_missing_model(exc):
            if s.provider == "ollama":
                fix = f"run `ollama pull {s.model_name}` (or pass another --model)"
            else:
                fix = "pass a --model the server serves (and check that --host ends in /v1)"
            return GenerationError(
                f"model {s.model_name!r} is not available at {self.backend.host}: {fix}"
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
            raise GenerationError(
                f"{self.settings.provider} server at {self.backend.host}: "
                f"{self.scrub(f'{type(exc).__name__}: {exc}')}"
            ) from None

    def request(self, messages: list[dict[str, str]], seed: int, report: GenerationReport) -> str:
        """One answer, retried on timeouts, 429 and 5xx; raises the last error when the
        retries run out (a GenerationError when no retry can help)."""
        attempt = 0
        while True:
            report.requests += 1
            try:
                return self.backend.complete(messages, seed=seed)
            except Exception as exc:
                decision = default_retry_decision(exc)  # timeouts, 429, 5xx, connections
                if decision is not None and not self.policy.gives_up(decision, attempt):
                    report.retries += 1
                    time.sleep(self.policy.delay(decision, attempt))
                    attempt += 1
                    continue
                fatal = self._fatal(exc)
                if fatal is not None:
                    raise fatal from None
                if status_of(exc) in (401, 403):  # every later request would fail the same
                    raise GenerationError(
                        f"{self.settings.provider} server at {self.backend.host} refused the "
                        f"request: {self.scrub(f'{type(exc).__name__}: {exc}')}; check "
                        "OPENAI_API_KEY (or the server's key setting)"
                    ) from None
                raise  # counted by the caller: one chunk lost, the run goes on

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
                report.failed_chunks["request_failed"] += 1
                return None
            parsed, bad = parse_questions(content)
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


Progress = Callable[[GenerationReport], None]


def generate_evalset(
    docs: str | Path | Sequence[Document],
    settings: GenerationSettings | None = None,
    *,
    progress: Progress | None = None,
    extensions: Sequence[str] | None = None,
) -> GenerationResult:
    """Ask the chat model for questions about a sample of ``docs``' chunks and filter them.

    ``docs`` is a folder (read with :func:`~pytest_embedbench.ingest.load_documents`) or
    Documents. ``progress(report)`` is called after every chunk. Raises
    :class:`GenerationError` when the server cannot be reached or lacks the model; every other
    failure is counted in the report.

    Usage::

        result = generate_evalset("docs/", GenerationSettings(model="llama3.2", max_chunks=20))
        result.report.kept, result.report.rejected["duplicate"]
    """
    settings = settings or GenerationSettings()
    documents = _documents(docs, extensions)
    chunks = chunk_documents_with(settings.chunking, documents)
    sample = sample_chunks(chunks, settings)
    backend = _backend(settings)
    secrets = backend.secrets
    report = GenerationReport(
        model=settings.model_name,
        provider=settings.provider,
        host=backend.host,
        seed=settings.seed,
        judge=settings.embedding_model,
        documents=len(documents),
        chunks=len(chunks),
        eligible_chunks=sum(1 for c in chunks if len(c.text.strip()) >= settings.min_chunk_chars),
        sampled_chunks=len(sample),
    )
    generator = _Generator(settings, backend, secrets)
    if sample:
        generator.check()
    judge = _Judge(settings.embedding_model, chunks, settings) if settings.embedding_model else None
    deduper = _Deduper(settings.dedupe_threshold)
    rows: list[dict[str, Any]] = []
    for chunk in sample:
        got = generator.questions(chunk, report)
        report.chunks_done += 1
        if got is not None:
            rows.extend(_filter(got, chunk, settings, report, judge, deduper))
        report.kept = len(rows)
        if progress is not None:
            progress(report)
    for number, row in enumerate(rows, 1):
        row["query_id"] = f"q{number:04d}"
    generator_info = {
        "provider": settings.provider,
        "model": settings.model_name,
        "host": backend.host,
        "prompt_version": PROMPT_VERSION,
    }
    out = []
    for row in rows:  # a fixed key order: the same answers give the same bytes
        out.append(
            {
                "query_id": row["query_id"],
                "query": row["query"],
                "relevant_doc_ids": row["relevant_doc_ids"],
                "answer": row["answer"],
                "source_chunk_id": row["source_chunk_id"],
                "generator": {**generator_info, "seed": row["seed"]},
            }
        )
    return GenerationResult(out, report)


def _filter(
    got: tuple[list[tuple[str, str]], int],
    chunk: Chunk,
    settings: GenerationSettings,
    report: GenerationReport,
    judge: _Judge | None,
    deduper: _Deduper,
) -> list[dict[str, Any]]:
    questions, seed = got
    report.candidates += len(questions)
    report.rejected["extra"] += max(0, len(questions) - settings.questions_per_chunk)
    passed: list[tuple[str, str]] = []
    for question, answer in questions[: settings.questions_per_chunk]:
        reason = _heuristic_reason(question, settings)
        if reason:
            report.rejected[reason] += 1
        else:
            passed.append((question, answer))
    if judge is not None and passed:
        verdicts = judge.reasons([q for q, _ in passed], chunk)
        for reason in verdicts:
            if reason:
                report.rejected[reason] += 1
        passed = [qa for qa, reason in zip(passed, verdicts, strict=True) if reason is None]
    kept = []
    for question, answer in passed:
        if deduper.is_duplicate(question):
            report.rejected["duplicate"] += 1
            continue
        deduper.accept(question)
        kept.append(
            {
                "query": question,
                "relevant_doc_ids": [chunk.doc_id],
                "answer": answer,
                "source_chunk_id": chunk.id,
                "seed": seed,
            }
        )
    report.rejected = +report.rejected  # drop zero counts
    return kept


def _documents(
    docs: str | Path | Sequence[Document], extensions: Sequence[str] | None
) -> list[Document]:
    if isinstance(docs, (str, Path)):
        from .ingest import load_documents

        return load_documents(docs, extensions=extensions)
    return list(docs)


# ---------------------------------------------------------------------------------------------
# writing and reuse


def evalset_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The JSONL text of ``rows``: one compact object a line, UTF-8 as is, ``\\n`` endings."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_evalset(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write the eval set atomically; the path written."""
    target = Path(path)
    from .report.json_report import atomic_write_text

    atomic_write_text(target, evalset_text(rows))
    return target


def evalset_fingerprint(
    documents: Sequence[Document], settings: GenerationSettings
) -> dict[str, Any]:
    """What a generated set was made from: each document's SHA-256 and the settings that
    decide the questions, with one digest over both."""
    docs = {d.id: hashlib.sha256(d.text.encode("utf-8")).hexdigest() for d in documents}
    identity = settings.identity()
    blob = json.dumps({"documents": docs, "settings": identity}, sort_keys=True)
    return {
        "digest": hashlib.sha256(blob.encode("utf-8")).hexdigest(),
        "documents": dict(sorted(docs.items())),
        "settings": identity,
    }


SIDECAR_SCHEMA = 1


def sidecar_path(evalset: Path) -> Path:
    """``generated.jsonl`` -> ``generated.jsonl.meta.json``: the fingerprint and the report."""
    return evalset.with_name(evalset.name + ".meta.json")


def write_sidecar(evalset: Path, fingerprint: Mapping[str, Any], report: GenerationReport) -> Path:
    path = sidecar_path(evalset)
    data = {"schema": SIDECAR_SCHEMA, "fingerprint": fingerprint, "report": report.to_dict()}
    from .report.json_report import atomic_write_text

    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write_text(path, text)
    return path


def _staleness(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """What changed between two fingerprints, in words, or None."""
    if old.get("digest") == new["digest"]:
        return None
    parts = []
    before, after = old.get("documents") or {}, new["documents"]
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(d for d in set(after) & set(before) if after[d] != before[d])
    for word, ids in (("added", added), ("removed", removed), ("changed", changed)):
        if ids:
            shown = ", ".join(repr(i) for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
            parts.append(f"{len(ids)} document(s) {word} ({shown})")
    settings_before, settings_after = old.get("settings") or {}, new["settings"]
    keys = sorted(
        k
        for k in set(settings_before) | set(settings_after)
        if settings_before.get(k) != settings_after.get(k)
    )
    if keys:
        parts.append(f"settings changed ({', '.join(keys)})")
    return "; ".join(parts) or "its fingerprint differs"


def ensure_generated_evalset(
    settings: GenerationSettings,
    docs_folder: str | Path,
    config_dir: str | Path,
    *,
    name: str = "generated",
    progress: Progress | None = None,
    regenerate: bool = False,
) -> Path:
    """The generated eval set of ``docs_folder`` for ``evalset: {generate: ...}``: generated
    once into ``config_dir`` (``settings.output``, default ``<name>.generated.jsonl``) with a
    ``.meta.json`` sidecar holding the fingerprint of the documents and settings, then reused
    while they are unchanged. A changed corpus or setting raises :class:`StaleEvalsetError`
    naming what changed and how to regenerate: a reviewed set is never replaced silently.

    Usage::

        path = ensure_generated_evalset(settings, "handbook/", Path("embedbench.yaml").parent)
    """
    from .ingest import load_documents

    config_dir = Path(config_dir)
    target = (config_dir / (settings.output or f"{name}.generated.jsonl")).resolve()
    documents = load_documents(docs_folder)
    fingerprint = evalset_fingerprint(documents, settings)
    if target.exists() and not regenerate:
        _check_fresh(target, fingerprint, config_dir, name)
        return target
    from filelock import FileLock

    # xdist workers read the configuration at once: one generates, the others wait and reuse.
    # The lock file is hidden (no loader reads it) and removed after: once the set exists, a
    # late comer that locks a fresh file finds it and reuses it.
    lock_path = target.with_name(f".{target.name}.lock")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(lock_path)):
            if target.exists() and not regenerate:
                _check_fresh(target, fingerprint, config_dir, name)
                return target
            result = generate_evalset(documents, settings, progress=progress)
            if not result.rows:
                raise GenerationError(
                    f"{target}: no question survived generation and filtering for "
                    f"{docs_folder} ({'; '.join(result.report.summary_lines()[2:4])}); see the "
                    "README's 'Generated questions are rejected' for what to change"
                )
            write_evalset(target, result.rows)
            write_sidecar(target, fingerprint, result.report)
    finally:
        lock_path.unlink(missing_ok=True)
    return target


def _check_fresh(target: Path, fingerprint: Mapping[str, Any], config_dir: Path, name: str) -> None:
    """Raise StaleEvalsetError when ``target`` was made from other documents or settings."""
    sidecar = sidecar_path(target)
    try:
        old = json.loads(sidecar.read_text(encoding="utf-8"))["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        old = None
    what = (
        "its sidecar file is missing or unreadable"
        if not isinstance(old, Mapping)
        else _staleness(old, fingerprint)
    )
    if what is None:
        return
    raise StaleEvalsetError(
        f"{target}: the generated eval set is stale: {what}. Regenerate it with "
        f"`embedbench generate-evalset --config {config_dir / 'embedbench.yaml'} "
        f"--dataset {name} --regenerate` (or delete {target.name} and {sidecar.name}), then "
        "review the new questions before you commit them"
    )


def dataset_generation(
    entry: Mapping[str, Any], *, name: str, where: str, base: Path
) -> tuple[GenerationSettings, Path]:
    """The settings and documents folder of a dataset entry of ``embedbench.yaml`` that says
    ``evalset: {generate: {...}}`` (``path`` is then the documents folder, as with
    ``evalset: FILE``). The dataset's own ``chunking`` mapping is the generation's unless
    ``generate`` names one; the set goes to ``<name>.generated.jsonl`` beside the file unless
    ``output`` says otherwise. Shared by the config reader's hook and
    ``embedbench generate-evalset --config``, so both compute the same fingerprint.

    Usage::

        settings, docs = dataset_generation(raw["datasets"]["handbook"], name="handbook",
                                            where="embedbench.yaml: datasets.handbook", base=dir)
        path = ensure_generated_evalset(settings, docs, dir, name="handbook")
    """
    evalset = entry.get("evalset")
    if not isinstance(evalset, Mapping) or set(evalset) != {"generate"}:
        raise ConfigError(
            f"{where}.evalset: {evalset!r}: give a .jsonl path, or {{generate: {{model: ..., "
            "max_chunks: ...}}}} to generate the set from the documents"
        )
    if not isinstance(entry.get("path"), str):
        raise ConfigError(f"{where}: needs 'path': the documents folder the questions come from")
    defaults: dict[str, Any] = {"output": f"{name}.generated.jsonl"}
    chunking = entry.get("chunking")
    if isinstance(chunking, Mapping):
        defaults["chunking"] = ChunkingSettings.from_mapping(chunking, f"{where}.chunking")
    settings = GenerationSettings.from_mapping(
        evalset["generate"], f"{where}.evalset.generate", **defaults
    )
    return settings, (base / entry["path"]).resolve()
