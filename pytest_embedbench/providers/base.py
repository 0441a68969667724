"""The provider contract, model specs and the provider registry.

A model is named by a spec string ``provider:model`` (``hf:sentence-transformers/all-MiniLM-L6-v2``,
``bm25``, ``hybrid:A+B``) or a :class:`ModelSpec` that adds a display name and options.

Two kinds of provider exist:

* :class:`EmbeddingProvider` turns texts into vectors. The base class does the batching (texts
  sorted by length so batches pad little), the query/document prefixes, L2 normalisation and
  the validation of every returned batch (row count, dimension, finite values). A new provider
  implements :meth:`~EmbeddingProvider.load` and :meth:`~EmbeddingProvider.embed_batch`::

      class EchoProvider(EmbeddingProvider):
          name = "echo"

          def load(self) -> None:
              self.dimension = 8

          def embed_batch(self, texts, *, kind):
              return [[float(len(t))] + [1.0] * 7 for t in texts]

      register_provider(EchoProvider)

* :class:`RankingProvider` ranks documents itself (BM25, fusion of two models).

Both build a :class:`Retriever` over a corpus, which the evaluator queries one text at a time.
Providers from other packages register through the ``pytest_embedbench.providers`` entry point
group (``name = "package.module:ProviderClass"``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from ..exceptions import (
    ConfigError,
    MissingExtraError,
    MissingKeyError,
    ProviderError,
    UnknownProviderError,
    did_you_mean,
)

if TYPE_CHECKING:
    from ..cache import EmbeddingCache
    from ..datasets import Document

__all__ = [
    "PROVIDERS",
    "RetryDecision",
    "EmbeddingProvider",
    "ModelSpec",
    "Provider",
    "RankingProvider",
    "Retriever",
    "create_provider",
    "register_provider",
    "require_extra",
]

Kind = Literal["query", "document"]
_TOKEN = re.compile(r"\w+|[^\w\s]")
#: HTTP statuses worth another attempt (besides every 5xx)
RETRY_STATUSES = frozenset({408, 409, 425, 429})


@dataclass(frozen=True)
class RetryDecision:
    """Retry, after ``retry_after`` seconds when the server said so (else backoff)."""

    retry_after: float | None = None


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries, whatever the SDK calls it."""
    for attr in ("status_code", "http_status", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(value, int):
        return value
    if isinstance(response, dict):  # botocore ClientError
        value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(value, int):
            return value
    return None


def retry_after_of(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header on the exception's response, if any."""
    headers: Any = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        headers = getattr(exc, "headers", None)
    if headers is None and isinstance(getattr(exc, "response", None), dict):
        headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders")  # type: ignore[attr-defined]
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


_CONNECTION_NAMES = (
    "Timeout",
    "TryAgain",
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "TimeoutException",
    "APIConnectionError",
    "APITimeoutError",
    "EndpointConnectionError",
    "ConnectionClosedError",
    "ReadTimeoutError",
    "ConnectTimeoutError",
    "RemoteProtocolError",
    "ServiceUnavailableError",
)


def default_retry_decision(exc: BaseException) -> RetryDecision | None:
    """Retry connection errors, timeouts, 408/409/425/429 and 5xx; give up on the rest."""
    status = status_of(exc)
    if status is not None:
        if status in RETRY_STATUSES or 500 <= status < 600:
            return RetryDecision(retry_after_of(exc))
        return None
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return RetryDecision()
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & set(_CONNECTION_NAMES):
        return RetryDecision()
    return None


ENTRY_POINT_GROUP = "pytest_embedbench.providers"


@dataclass(frozen=True)
class ModelSpec:
    """A model spec string plus a display name and provider options.

    Usage::

        ModelSpec("hf:intfloat/e5-small-v2", name="e5", query_prefix="query: ",
                  document_prefix="passage: ")
    """

    spec: str
    name: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, spec: str | ModelSpec, name: str | None = None, **options: Any) -> None:
        if isinstance(spec, ModelSpec):
            merged = {**spec.options, **options}
            name = name or spec.name
            spec = spec.spec
        else:
            merged = dict(options)
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(f"model spec {spec!r} must be a non-empty string like 'hf:MODEL'")
        object.__setattr__(self, "spec", spec.strip())
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "options", dict(merged))

    @classmethod
    def coerce(cls, value: str | ModelSpec) -> ModelSpec:
        """A ModelSpec from a spec string or a ModelSpec."""
        return value if isinstance(value, ModelSpec) else cls(value)

    @property
    def provider(self) -> str:
        """The registry key: the part before the first ``:`` (``bm25`` for plain ``bm25``)."""
        return self.spec.split(":", 1)[0].strip().lower()

    @property
    def model(self) -> str:
        """The provider's model id: the part after the first ``:`` ("" when there is none)."""
        return self.spec.split(":", 1)[1].strip() if ":" in self.spec else ""

    @property
    def short_name(self) -> str:
        """The display name and pytest id: ``name`` if given, else derived from the spec."""
        if self.name:
            return self.name
        if self.provider == "hybrid":
            left, right = split_hybrid(self.model)
            return f"hybrid-{ModelSpec(left).short_name}+{ModelSpec(right).short_name}"
        if not self.model:
            return self.provider
        return self.model.rstrip("/").split("/")[-1]

    def __str__(self) -> str:
        return self.short_name

    def __repr__(self) -> str:
        shown = {k: ("***" if k in SECRET_OPTIONS else v) for k, v in self.options.items()}
        extra = "".join(f", {k}={v!r}" for k, v in sorted(shown.items()))
        name = f", name={self.name!r}" if self.name else ""
        return f"ModelSpec({self.spec!r}{name}{extra})"

    def __hash__(self) -> int:
        return hash((self.spec, self.name, _stable_json(self.options)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelSpec):
            return NotImplemented
        return (self.spec, self.name, _stable_json(self.options)) == (
            other.spec,
            other.name,
            _stable_json(other.options),
        )


def split_hybrid(model: str) -> tuple[str, str]:
    """``"A+B"`` into ``("A", "B")``; a clear error when either side is missing."""
    left, sep, right = model.partition("+")
    if not sep or not left.strip() or not right.strip():
        raise ConfigError(
            f"hybrid spec 'hybrid:{model}' needs two models joined by '+', "
            "e.g. 'hybrid:hf:sentence-transformers/all-MiniLM-L6-v2+bm25'"
        )
    return left.strip(), right.strip()


def _stable_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr, separators=(",", ":"))


def require_extra(module: str, provider: str, extra: str) -> Any:
    """Import ``module`` or raise a MissingExtraError that names the pip command."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"provider {provider!r} needs the {module.split('.')[0]} package ({exc.msg}): "
            f"pip install 'pytest-embedbench[{extra}]'"
        ) from None


class Retriever(ABC):
    """A provider's search structure over one corpus; answers one query at a time."""

    #: document ids in corpus order
    ids: tuple[str, ...]
    #: seconds spent turning query texts into model input (embedding, tokenising), all calls
    query_embedding_s: float = 0.0
    #: seconds spent searching the index, all calls
    search_s: float = 0.0

    @abstractmethod
    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        """The top-k document ids and scores for one query text, best first."""

    def search_depth(self, k: int) -> int:
        """How many results :meth:`search` returns for ``k`` (at most the corpus size)."""
        return min(k, len(self.ids))


@dataclass
class BuildStats:
    """What building a retriever cost: embedding, index and cache figures."""

    document_embedding_s: float = 0.0
    index_build_s: float = 0.0
    documents: int = 0
    cache_hits: int = 0
    cache_misses: int = 0


class Provider(ABC):
    """The base of every provider: a model id, options, and a loaded state.

    ``options`` are checked against :attr:`option_names` so a typo is an error that names it.
    """

    #: registry key, the part of a spec before ``:``
    name: ClassVar[str] = ""
    #: the pip extra that installs this provider's dependencies, and the module it brings
    extra: ClassVar[str | None] = None
    sdk_module: ClassVar[str | None] = None
    #: options this provider accepts (besides the common ones)
    option_names: ClassVar[frozenset[str]] = frozenset()
    #: whether a spec needs a model id after the colon
    needs_model: ClassVar[bool] = True

    def __init__(self, model: str = "", **options: Any) -> None:
        allowed = self.all_option_names()
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ConfigError(
                f"provider {self.name!r} got unknown option(s) {unknown}; "
                f"it accepts {sorted(allowed)}"
            )
        if self.needs_model and not model:
            raise ConfigError(f"provider {self.name!r} needs a model: '{self.name}:MODEL'")
        self.model = model
        self.options: dict[str, Any] = dict(options)
        self.info: dict[str, Any] = {}
        self.encode_s = 0.0
        self._loaded = False

    @classmethod
    def all_option_names(cls) -> frozenset[str]:
        return cls.option_names

    def after_run(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Called once an evaluation finished (e.g. to read a server's resident size)."""

    def encode_seconds(self) -> float:
        """Seconds spent inside the model's own encode calls so far."""
        return self.encode_s

    def ensure_loaded(self) -> None:
        """Load once."""
        if not self._loaded:
            self.load()
            self._loaded = True

    @abstractmethod
    def load(self) -> None:
        """Load weights, open clients, check the model exists."""

    def is_free(self) -> bool:
        """Whether a run costs nothing per token: local models and rankers (the report's
        ``model_info.free``). Providers with a price override this."""
        return True

    def namespace(self) -> dict[str, Any]:
        """Everything that changes this provider's numbers (cache keys and fingerprints)."""
        return {
            "provider": self.name,
            "model": self.model,
            "options": {k: v for k, v in sorted(self.options.items()) if k not in _NO_NUMBERS},
            "revision": self.info.get("revision"),
        }

    def namespace_key(self) -> str:
        """A short stable string for :meth:`namespace`."""
        digest = hashlib.sha256(_stable_json(self.namespace()).encode()).hexdigest()[:16]
        return f"{self.name}:{self.model}:{digest}"

    @abstractmethod
    def build(
        self,
        documents: Sequence[Document],
        *,
        cache: EmbeddingCache | None = None,
        stats: BuildStats | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Retriever:
        """Index ``documents`` and return a retriever over them."""


#: options that never change a vector, so they stay out of cache namespaces
_NO_NUMBERS = frozenset(
    {
        "api_key",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "backoff",
        "batch_size",
        "device",
        "index_backend",
        "keep_alive",
        "max_concurrency",
        "max_retries",
        "price_per_1m_tokens",
        "profile",
        "show_progress",
        "timeout",
    }
)
#: option names whose values are never shown
SECRET_OPTIONS = frozenset(
    {"api_key", "aws_access_key_id", "aws_secret_access_key", "aws_session_token"}
)


class EmbeddingProvider(Provider):
    """A provider that embeds texts; the base class does batching, prefixes and validation."""

    common_options: ClassVar[frozenset[str]] = frozenset(
        {
            "batch_size",
            "query_prefix",
            "document_prefix",
            "normalize",
            "index_backend",
            "max_concurrency",
            "max_retries",
            "timeout",
            "backoff",
            "price_per_1m_tokens",
        }
    )
    default_batch_size: ClassVar[int] = 32
    #: the provider's limit of texts per request; a larger batch_size is an error
    max_batch_size: ClassVar[int] = 100_000
    #: hosted APIs get concurrent batches and retries by default
    hosted: ClassVar[bool] = False
    #: environment variables that may hold the API key, in order of preference
    key_env: ClassVar[tuple[str, ...]] = ()

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        from .catalogue import lookup

        #: the catalogue's entry for this model (prompts, dimensions, context, price)
        self.catalogue = lookup(self.name, model)
        default = min(self.default_batch_size, self.max_batch_size)
        self.batch_size = int(self.options.get("batch_size", default))
        if self.batch_size < 1:
            raise ConfigError(f"batch_size={self.batch_size!r} must be at least 1")
        if self.batch_size > self.max_batch_size:
            raise ConfigError(
                f"provider {self.name!r}: batch_size={self.batch_size} exceeds its limit of "
                f"{self.max_batch_size} texts per request"
            )
        prompts = self.catalogue.prompts if self.catalogue else {}
        self.query_prefix = str(self.options.get("query_prefix", prompts.get("query", "")) or "")
        self.document_prefix = str(
            self.options.get("document_prefix", prompts.get("document", "")) or ""
        )
        self.normalize = bool(self.options.get("normalize", True))
        self.dimension: int | None = None
        self.max_concurrency = int(self.options.get("max_concurrency", 4 if self.hosted else 1))
        self.max_retries = int(self.options.get("max_retries", 5 if self.hosted else 0))
        self.timeout = float(self.options.get("timeout", 60.0))
        self.backoff = float(self.options.get("backoff", 0.5))
        if self.max_concurrency < 1 or self.max_retries < 0 or self.timeout <= 0:
            raise ConfigError(
                f"provider {self.name!r}: max_concurrency must be >= 1, max_retries >= 0 and "
                f"timeout > 0 (got {self.max_concurrency}, {self.max_retries}, {self.timeout})"
            )
        #: requests sent, retries made and requests that failed for good
        self.calls = {"requests": 0, "retries": 0, "failed": 0}
        self._lock = threading.Lock()
        self._jitter = random.Random(0)  # seeded: the same run sleeps the same
        self._secrets: list[str] = []

    @classmethod
    def all_option_names(cls) -> frozenset[str]:
        return cls.option_names | cls.common_options

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns.update(
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
            normalize=self.normalize,
            dimension=self.dimension,
        )
        return ns

    @abstractmethod
    def embed_batch(self, texts: list[str], *, kind: Kind) -> Any:
        """Embed one batch (prefixes already applied); return an ``(n, dim)`` array-like."""

    def prepare(self, text: str, kind: Kind) -> str:
        """The text as sent to the model: its prefix, then the text."""
        return (self.query_prefix if kind == "query" else self.document_prefix) + text

    def embed(
        self,
        texts: Sequence[str],
        *,
        kind: Kind,
        progress: Callable[[int, int], None] | None = None,
        on_batch: Callable[[list[int], np.ndarray], None] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` as queries or documents: ``(n, dim)`` float32, L2-normalised.

        Batches are built from texts sorted by length (longest first) so they pad little;
        rows come back in the order given. Every batch is validated, then handed to
        ``on_batch(positions in texts, vectors)`` (in this thread) as soon as it is in.
        """
        if kind not in ("query", "document"):
            raise ConfigError(f"kind={kind!r}: use 'query' or 'document'")
        self.ensure_loaded()
        prepared = [self.prepare(t, kind) for t in texts]
        n = len(prepared)
        if n == 0:
            return np.empty((0, self.dimension or 0), dtype=np.float32)
        order = sorted(range(n), key=lambda i: -len(prepared[i])) if n > 1 else [0]
        batches = [order[start : start + self.batch_size] for start in range(0, n, self.batch_size)]
        out: np.ndarray | None = None
        done = 0

        def run(number: int) -> Any:
            return self._call_with_retries(
                [prepared[i] for i in batches[number]], kind=kind, number=number
            )

        t0 = time.perf_counter()
        try:
            if self.max_concurrency > 1 and len(batches) > 1:
                pool = ThreadPoolExecutor(
                    max_workers=min(self.max_concurrency, len(batches)),
                    thread_name_prefix=f"embedbench-{self.name}",
                )
                with pool:
                    results = pool.map(run, range(len(batches)))
                    for number, raw in enumerate(results):
                        out, done = self._place(
                            out, raw, batches, number, n, done, progress, on_batch
                        )
            else:
                for number in range(len(batches)):
                    out, done = self._place(
                        out, run(number), batches, number, n, done, progress, on_batch
                    )
        finally:
            self.encode_s += time.perf_counter() - t0
        assert out is not None
        return out

    def _place(
        self,
        out: np.ndarray | None,
        raw: Any,
        batches: list[list[int]],
        number: int,
        n: int,
        done: int,
        progress: Callable[[int, int], None] | None,
        on_batch: Callable[[list[int], np.ndarray], None] | None = None,
    ) -> tuple[np.ndarray, int]:
        idx = batches[number]
        first = sum(len(b) for b in batches[:number])
        vectors = self._validate(raw, len(idx), batch_number=number, first=first)
        if out is None:
            out = np.empty((n, vectors.shape[1]), dtype=np.float32)
        out[idx] = vectors
        if on_batch is not None:
            on_batch(idx, vectors)
        done += len(idx)
        if progress is not None:
            progress(done, n)
        return out, done

    # -- requests, retries and errors --------------------------------------------------------

    def _call_with_retries(self, batch: list[str], *, kind: Kind, number: int) -> Any:
        """One batch through :meth:`embed_batch`, retried with exponential backoff and jitter
        on connection errors, timeouts, 408, 409, 425, 429 and 5xx (``Retry-After`` wins)."""
        attempt = 0
        while True:
            with self._lock:
                self.calls["requests"] += 1
            try:
                return self.embed_batch(batch, kind=kind)
            except ProviderError as exc:
                with self._lock:
                    self.calls["failed"] += 1
                raise ProviderError(self.scrub(str(exc))) from None
            except Exception as exc:  # noqa: BLE001 - every SDK raises its own kinds
                decision = self.classify_error(exc)
                message = self.scrub(self.describe_error(exc))
            if decision is None or attempt >= self.max_retries:
                with self._lock:
                    self.calls["failed"] += 1
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise ProviderError(
                    f"provider {self.name!r} model {self.model!r} batch {number}: {message}{tries}"
                ) from None
            delay = decision.retry_after
            if delay is None:
                delay = min(30.0, self.backoff * 2**attempt) * (0.5 + self._jitter.random())
            with self._lock:
                self.calls["retries"] += 1
            time.sleep(max(0.0, delay))
            attempt += 1

    def classify_error(self, exc: BaseException) -> RetryDecision | None:
        """Whether ``exc`` is worth another attempt (None: give up). Override per SDK."""
        return default_retry_decision(exc)

    def describe_error(self, exc: BaseException) -> str:
        """A one-line account of ``exc`` for the error message (keys are scrubbed after)."""
        status = status_of(exc)
        text = " ".join(str(exc).split())[:500]
        prefix = f"HTTP {status}: " if status is not None else ""
        return f"{prefix}{type(exc).__name__}: {text}"

    def api_key(self) -> str:
        """The API key from the ``api_key`` option or the provider's environment variables.

        A missing key raises :class:`MissingKeyError` naming the variables, so the plugin can
        skip the model's tests. The key is remembered only to scrub it from messages.
        """
        key = self.options.get("api_key")
        if not key:
            for var in self.key_env:
                key = os.environ.get(var)
                if key:
                    break
        if not key:
            raise MissingKeyError(
                f"{self.name}:{self.model} needs an API key: set "
                + " or ".join(self.key_env)
                + f" (or api_key under providers.{self.name} in embedbench.yaml)"
            )
        self._secrets.append(str(key))
        return str(key)

    def scrub(self, text: str) -> str:
        """``text`` with every secret this provider has seen replaced by ``***``."""
        for secret in self._secrets:
            if secret:
                text = text.replace(secret, "***")
        return text

    # -- tokens and cost ------------------------------------------------------------------

    def count_tokens(self, texts: Sequence[str]) -> tuple[int, bool]:
        """``(tokens, estimated)`` for ``texts`` as sent. The base class estimates: words plus
        punctuation marks (``estimated`` is True); providers with a tokenizer count exactly."""
        return sum(len(_TOKEN.findall(t)) for t in texts), True

    def price_per_1m_tokens(self) -> float | None:
        """USD per million tokens: the ``price_per_1m_tokens`` option, else the catalogue's."""
        if "price_per_1m_tokens" in self.options:
            return float(self.options["price_per_1m_tokens"])
        if self.catalogue is not None and self.catalogue.price_per_1m is not None:
            return self.catalogue.price_per_1m
        return 0.0 if not self.hosted else None

    def is_free(self) -> bool:
        """Free when nothing is paid per token: a local model with no price set."""
        return not self.hosted and self.price_per_1m_tokens() == 0

    def _validate(self, raw: Any, expected: int, *, batch_number: int, first: int) -> np.ndarray:
        where = f"provider {self.name!r} model {self.model!r} batch {batch_number}"
        if isinstance(raw, (list, tuple)) and raw and all(hasattr(r, "__len__") for r in raw):
            lengths = sorted({len(r) for r in raw})
            if len(lengths) > 1:
                raise ProviderError(
                    f"{where}: embeddings of different dimensions in one response "
                    f"({', '.join(map(str, lengths))})"
                )
        try:
            arr = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ProviderError(f"{where}: response is not a numeric matrix ({exc})") from None
        if arr.ndim != 2 or arr.shape[0] != expected:
            raise ProviderError(
                f"{where}: expected {expected} embeddings, got an array of shape {arr.shape}"
            )
        if self.dimension is None:
            if arr.shape[1] == 0:
                raise ProviderError(f"{where}: embeddings have dimension 0")
            self.dimension = int(arr.shape[1])
        elif arr.shape[1] != self.dimension:
            raise ProviderError(
                f"{where}: embedding dimension {arr.shape[1]} differs from the model's "
                f"{self.dimension}"
            )
        bad = ~np.isfinite(arr).all(axis=1)
        if bad.any():
            rows = (np.flatnonzero(bad) + first).tolist()[:5]
            raise ProviderError(
                f"{where}: non-finite values (NaN or inf) in {int(bad.sum())} embedding(s), "
                f"e.g. at sorted position(s) {rows}"
            )
        if self.normalize:
            norms = np.linalg.norm(arr, axis=1, keepdims=True)
            if (norms == 0).any():
                raise ProviderError(f"{where}: a zero vector cannot be L2-normalised")
            arr = arr / norms
        return arr

    def build(
        self,
        documents: Sequence[Document],
        *,
        cache: EmbeddingCache | None = None,
        stats: BuildStats | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Retriever:
        from ..index import ExactIndex

        stats = stats if stats is not None else BuildStats()
        self.ensure_loaded()
        texts = [d.embed_text for d in documents]
        if progress is not None:
            progress(0, len(texts))
        t0 = time.perf_counter()
        if cache is None:
            vectors = self.embed(texts, kind="document", progress=progress)
            stats.cache_misses += len(texts)
        else:
            vectors = self._embed_cached(texts, cache, stats, progress)
        t1 = time.perf_counter()
        index = ExactIndex(
            vectors,
            [d.id for d in documents],
            backend=self.options.get("index_backend", "auto"),
        )
        t2 = time.perf_counter()
        stats.document_embedding_s += t1 - t0
        stats.index_build_s += t2 - t1
        stats.documents += len(texts)
        self.info["index_backend"] = index.backend
        return DenseRetriever(self, index)

    def _embed_cached(
        self,
        texts: list[str],
        cache: EmbeddingCache,
        stats: BuildStats,
        progress: Callable[[int, int], None] | None,
    ) -> np.ndarray:
        from ..cache import text_key

        keys = [text_key(self.prepare(t, "document")) for t in texts]
        namespace = self.namespace_key()
        # a stored row is checked like a response: finite, this dimension, the promised norm
        found, missing = cache.get_many(
            namespace, keys, dim=self.dimension, unit_norm=self.normalize
        )
        if found and self.dimension is None:
            self.dimension = len(next(iter(found.values())))
        stats.cache_hits += len(texts) - len(missing)
        stats.cache_misses += len(missing)
        if missing:

            def sub_progress(done: int, _total: int) -> None:
                if progress is not None:
                    progress(len(texts) - len(missing) + done, len(texts))

            def store(positions: list[int], vecs: np.ndarray) -> None:
                # one transaction per provider batch: a run killed at any point keeps it
                cache.put_many(namespace, [keys[missing[p]] for p in positions], vecs)

            vecs = self.embed(
                [texts[i] for i in missing], kind="document", progress=sub_progress, on_batch=store
            )
            for i, vec in zip(missing, vecs, strict=True):
                found[keys[i]] = vec
        dim = self.dimension or 0
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, key in enumerate(keys):
            vec = found[key]
            if len(vec) != dim:
                raise ProviderError(
                    f"cached embedding for document {i} has dimension {len(vec)}, the model "
                    f"gives {dim}; clear the cache folder {str(cache.folder)!r}"
                )
            out[i] = vec
        if progress is not None and not missing:
            progress(len(texts), len(texts))
        return out


class DenseRetriever(Retriever):
    """An embedding provider's exact index: embeds each query, then searches."""

    def __init__(self, provider: EmbeddingProvider, index: Any) -> None:
        self.provider = provider
        self.index = index
        self.ids = index.ids

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        t0 = time.perf_counter()
        vector = self.provider.embed([text], kind="query")
        t1 = time.perf_counter()
        positions, scores = self.index.search(vector, k)
        self.search_s += time.perf_counter() - t1
        self.query_embedding_s += t1 - t0
        keep = positions[0] >= 0
        return [self.ids[p] for p in positions[0][keep]], scores[0][keep].astype(float).tolist()


class RankingProvider(Provider):
    """A provider that ranks documents itself (lexical search, fusion)."""

    needs_model: ClassVar[bool] = False

    def is_free(self) -> bool:
        """A ranker is free when every model it uses is (a hybrid of local models is)."""
        return all(leg.is_free() for leg in getattr(self, "legs", ()))


#: provider name -> class; filled by the built-in modules and entry points
PROVIDERS: dict[str, type[Provider]] = {}


def register_provider(cls: type[Provider]) -> type[Provider]:
    """Register a provider class under ``cls.name`` (usable as a decorator)."""
    if not cls.name or ":" in cls.name:
        raise ConfigError(f"provider class {cls.__name__} needs a 'name' without ':'")
    PROVIDERS[cls.name] = cls
    return cls


def _load_entry_points() -> None:
    """Register providers from installed packages' entry points (scanned on an unknown name)."""
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party plugin must not break the others
            raise ProviderError(
                f"provider entry point {ep.name!r} ({ep.value}) failed to load: {exc}"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, Provider)):
            raise ProviderError(
                f"provider entry point {ep.name!r} ({ep.value}) is not a Provider subclass"
            )
        PROVIDERS.setdefault(ep.name, cls)  # a built-in name is never replaced


def provider_class(name: str) -> type[Provider]:
    """The class registered as ``name``; an unknown name lists the known ones."""
    from . import _builtin  # noqa: F401  (registers the built-in providers)

    if name not in PROVIDERS:
        _load_entry_points()
    try:
        return PROVIDERS[name]
    except KeyError:
        raise UnknownProviderError(
            f"unknown provider {name!r}{did_you_mean(name, PROVIDERS) or '.'} "
            f"Known providers: {sorted(PROVIDERS)}. Write specs as 'provider:model', "
            "e.g. 'hf:sentence-transformers/all-MiniLM-L6-v2'"
        ) from None


def create_provider(spec: str | ModelSpec) -> Provider:
    """A provider instance for a spec string or :class:`ModelSpec` (not yet loaded)."""
    model_spec = ModelSpec.coerce(spec)
    cls = provider_class(model_spec.provider)
    return cls(model_spec.model, **model_spec.options)
