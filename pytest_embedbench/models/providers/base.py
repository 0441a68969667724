"""The provider contract: :class:`Provider`, and its two kinds.

* :class:`EmbeddingProvider` turns texts into vectors. The base class does the batching (texts
  sorted by length so batches pad little), the query/document prefixes, L2 normalisation, the
  validation of every returned batch (row count, dimension, finite values: :mod:`.vectors`)
  and the retries (:mod:`.retry`); ``build`` embeds a corpus through the cache into an exact
  index (:mod:`.dense`). A new provider implements :meth:`~EmbeddingProvider.load` and
  :meth:`~EmbeddingProvider.embed_batch`::

      class EchoProvider(EmbeddingProvider):
          name = "echo"

          def load(self) -> None:
              self.dimension = 8

          def embed_batch(self, texts, *, kind):
              return [[float(len(t))] + [1.0] * 7 for t in texts]

      register_provider(EchoProvider)

* :class:`RankingProvider` ranks documents itself (BM25, fusion of two models).

Both build a :class:`~.retriever.Retriever` over a corpus, which the evaluator queries one text
at a time. The base gives neutral defaults for what only some providers have (token counts,
prices, request counts), so callers never probe a provider with ``getattr``. Model specs live in
:mod:`.spec`, the registry in :mod:`.registry`.
"""

from __future__ import annotations

import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...core.exceptions import ConfigError, MissingExtraError, MissingKeyError, ProviderError
from ...core.names import check_keys
from ...core.scripts import estimate_tokens
from ...core.vectors import as_matrix, check_finite, l2_normalised
from ...retrieval.base import BuildStats, Kind, Retriever
from ...retrieval.dense import build_dense
from .retry import RetryDecision, RetryPolicy, default_retry_decision, status_of
from .spec import fingerprint, number_options

if TYPE_CHECKING:
    from ...cache.store import EmbeddingCache
    from ...core.types import Document

__all__ = [
    "EmbeddingProvider",
    "Kind",
    "Provider",
    "RankingProvider",
    "require_extra",
]


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

    #: whether :meth:`tokenizer` gives the model's own tokenizer, known before loading (so a
    #: chunking in tokens without a named tokenizer is checked at collection)
    has_tokenizer: ClassVar[bool] = False

    def sdk(self) -> Any:
        """The SDK module this provider needs (:attr:`sdk_module`), or a MissingExtraError that
        names the pip command of its :attr:`extra`."""
        if self.sdk_module is None or self.extra is None:
            raise TypeError(f"provider {self.name!r} names no sdk_module and extra")
        return require_extra(self.sdk_module, self.name, self.extra)

    def __init__(self, model: str = "", **options: Any) -> None:
        allowed = self.all_option_names()
        check_keys(options, allowed, f"provider {self.name!r} got unknown option(s)", "it accepts")
        if self.needs_model and not model:
            raise ConfigError(f"provider {self.name!r} needs a model: '{self.name}:MODEL'")
        self.model = model
        self.options: dict[str, Any] = dict(options)
        self.info: dict[str, Any] = {}
        self.encode_s = 0.0
        #: requests sent, retries made and requests that failed for good (hosted providers)
        self.calls: dict[str, int] = {}
        self._loaded = False

    @classmethod
    def all_option_names(cls) -> frozenset[str]:
        return cls.option_names

    def after_run(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Called once an evaluation finished (e.g. to read a server's resident size)."""

    def encode_seconds(self) -> float:
        """Seconds spent inside the model's own encode calls so far."""
        return self.encode_s

    def document_batch_seconds(self) -> list[float]:
        """Wall seconds of each document batch embedded so far, in order (none for rankers)."""
        return []

    def vector_dimension(self) -> int | None:
        """The dimension of the vectors this provider makes (None for rankers)."""
        return None

    def reset_vram_peak(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Start a new GPU memory peak (called before each evaluation)."""

    def vram_peak_mb(self) -> tuple[float | None, str | None]:
        """``(MB, source)`` of the GPU memory peak since :meth:`reset_vram_peak`; ``(None,
        None)`` where nothing is on a GPU (CPU, MPS, rankers)."""
        return None, None

    def tokenizer(self) -> Any:
        """The model's own tokenizer (loaded), for chunking in tokens; None when it has none
        (see :attr:`has_tokenizer`)."""
        return None

    def tokenizer_file(self) -> Path | None:
        """The model's tokenizer.json on this machine, found without loading the model or
        reaching a hub (the subword tokens of a hybrid's bm25 leg); None when there is none
        here or the model's tokenizer is no tokenizer.json."""
        return None

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
            "options": number_options(self.options),
            "revision": self.info.get("revision"),
        }

    def namespace_key(self) -> str:
        """A short stable string for :meth:`namespace`."""
        return f"{self.name}:{self.model}:{fingerprint(self.namespace())}"

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

    # -- neutral defaults, overridden by providers that send text to a model ----------------

    def prepare(self, text: str, kind: Kind) -> str:
        """The text as sent to the model (a ranker sends it unchanged)."""
        return text

    def count_tokens(self, texts: Sequence[str]) -> tuple[int, bool] | None:
        """``(tokens, estimated)`` for ``texts`` as sent; None when no model reads tokens
        (rankers), so the report shows no token count."""
        return None

    def price_per_1m_tokens(self) -> float | None:
        """USD per million tokens; None when there is no per-token price."""
        return None


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
    #: bytes the exact search may hold of the corpus vectors (None: all in memory); the
    #: evaluator sets it from ``--embedbench-memory-budget`` / ``memory_budget=``
    memory_budget: int | None = None
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
        self.calls = {"requests": 0, "retries": 0, "failed": 0}
        self.last_status: int | None = None
        #: wall seconds of each document batch (the first of a fresh model is the cold one)
        self._document_batches: list[float] = []
        self._lock = threading.Lock()
        #: how often and how long to wait between attempts (seeded: the same run sleeps the same)
        self.retry = RetryPolicy(max_retries=self.max_retries, backoff=self.backoff, seed=0)
        self._secrets: list[str] = []

    @classmethod
    def all_option_names(cls) -> frozenset[str]:
        return cls.option_names | cls.common_options

    def document_batch_seconds(self) -> list[float]:
        with self._lock:
            return list(self._document_batches)

    def vector_dimension(self) -> int | None:
        return self.dimension

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
            started = time.perf_counter()
            raw = self._call_with_retries(
                [prepared[i] for i in batches[number]], kind=kind, number=number
            )
            if kind == "document":
                with self._lock:
                    self._document_batches.append(time.perf_counter() - started)
            return raw

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
            self.release_batches()
        assert out is not None
        return out

    def release_batches(self) -> None:
        """Let go of what the batches of an :meth:`embed` call held, when it ends (also on an
        error); a model that keeps a batch's outputs until the next one overrides it."""

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
        # every batch before this one is full (only the last may be short): no sum over them,
        # which made embedding n texts quadratic in their number of batches
        first = number * len(batches[0])
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
        """One batch through :meth:`embed_batch`, retried (see :meth:`with_retries`)."""
        return self.with_retries(lambda: self.embed_batch(batch, kind=kind), f"batch {number}")

    def with_retries(self, call: Callable[[], Any], where: str) -> Any:
        """``call()`` (one request to the provider's API), retried as :attr:`retry` says:
        backoff with jitter on connection errors, timeouts, 408, 409, 425, 429 and 5xx (see
        retry.py), each attempt counted in :attr:`calls`; the last error a ProviderError
        naming the provider, the model and ``where``, with every secret scrubbed. The hosted
        rerankers send their requests through it too."""
        attempt = 0
        while True:
            self._count("requests")
            try:
                return call()
            except ProviderError as exc:
                self._count("failed")
                raise ProviderError(self.scrub(str(exc))) from None
            except Exception as exc:  # noqa: BLE001 - every SDK raises its own kinds
                decision = self.classify_error(exc)
                message = self.scrub(self.describe_error(exc))
                status = status_of(exc)
            if decision is None or self.retry.gives_up(decision, attempt):
                self._count("failed")
                self.last_status = status  # of the last request that failed for good
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise ProviderError(
                    f"provider {self.name!r} model {self.model!r} {where}: {message}{tries}"
                ) from None
            self._count("retries")
            time.sleep(self.retry.delay(decision, attempt))
            attempt += 1

    def _count(self, what: str) -> None:
        with self._lock:
            self.calls[what] += 1

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
        punctuation marks, each Han, kana, Hangul or Thai character a token of its own
        (:func:`~...core.scripts.estimate_tokens`; ``estimated`` is True); providers with a
        tokenizer count exactly."""
        return sum(estimate_tokens(t) for t in texts), True

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
        arr = as_matrix(raw, expected, self.dimension, where)
        self.dimension = int(arr.shape[1])
        check_finite(arr, where, first)
        return l2_normalised(arr, where) if self.normalize else arr

    def build(
        self,
        documents: Sequence[Document],
        *,
        cache: EmbeddingCache | None = None,
        stats: BuildStats | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Retriever:
        """Embed ``documents`` (through ``cache``) and index them exactly (see dense.py); with
        :attr:`memory_budget` set, the vectors are streamed from the cache in shards."""
        return build_dense(
            self,
            documents,
            cache=cache,
            stats=stats,
            progress=progress,
            memory_budget=self.memory_budget,
        )


class RankingProvider(Provider):
    """A provider that ranks documents itself (lexical search, fusion)."""

    needs_model: ClassVar[bool] = False
    #: the providers this ranker combines (a hybrid's two legs; none for BM25)
    legs: Sequence[Provider] = ()

    def is_free(self) -> bool:
        """A ranker is free when every model it uses is (a hybrid of local models is)."""
        return all(leg.is_free() for leg in self.legs)
