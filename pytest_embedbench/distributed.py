"""Document embedding on a Ray cluster: the uncached documents of a corpus, embedded by a pool of
Ray Data actors that each load the model once, written to the embedding cache batch by batch.

Everything downstream is unchanged: the vectors go into the cache under the namespace and keys
the in-process path uses (:func:`~.providers.dense.document_keys`), so the evaluation that
follows is a pure cache hit, and so is a second run. Usage::

    from pytest_embedbench.distributed import RaySettings, embed_dataset

    report = embed_dataset(
        "hf:sentence-transformers/all-MiniLM-L6-v2", "../shared/data/scifact",
        cache=True, settings=RaySettings(address="local", workers=2),
    )
    report.embedded, report.cached      # documents embedded now, found in the cache

    # or from the shell, ahead of a test run (a nightly job):
    #   embedbench embed --ray auto --model hf:... --dataset corpus/ --workers 8 --gpus-per-worker 1
    # or inside a test run: pytest --embedbench-ray=auto  (ini: embedbench_ray)

``address`` is ``auto`` (the cluster this machine belongs to), a ``ray://host:10001`` client
address, or ``local`` (start a Ray on this machine, without the dashboard). A Ray already
initialised in this process is used as it is. Workers import ``pytest_embedbench`` and the
provider's packages: on a remote cluster, install them there (or pass a ``runtime_env``).

How it runs: the driver loads the model once (its dimension, revision and sequence length
enter the cache namespace, exactly as in-process), looks the documents up in the cache, and
sends the missing ones, longest first (so batches pad little), with their row numbers through
``map_batches(_Embedder, compute=ActorPoolStrategy(size=workers), num_cpus=..., num_gpus=...)``.
Each actor builds the provider from the same class, model and options, checks that its
namespace is the driver's (else a different package version or weights would put other vectors
under the same keys), and embeds with the provider's own ``embed`` (prefixes, validation, L2
normalisation). Each batch that comes back is written to the cache in one transaction before
the next is read, so an interrupted run keeps every batch already written.

Faults:

* a worker process that dies (killed, out of memory, a lost node) is restarted by Ray: the
  actors are created with ``max_restarts`` (default 3) and their batches retried with
  ``max_task_retries`` (default 3) (:class:`RaySettings`; Ray Data's own defaults, -1 for both,
  would retry a worker that always dies for ever); an actor whose model cannot load counts
  against Ray Data's ``DataContext.max_consecutive_actor_init_deaths``;
* an error of the provider in a worker is not retried by Ray (``DataContext.
  actor_task_retry_on_errors`` stays False: the provider retries hosted calls itself) and comes
  back as the same exception type, with the same message, that the in-process path raises
  (usually :class:`~.exceptions.ProviderError`), with Ray's wrapping removed;
* an interrupted run (Ctrl-C, a failed batch) keeps what it wrote; the next run embeds the rest.

Which providers: local models (``hf:``, and any provider whose class is not ``hosted``) are
the case Ray is for: the model is loaded once per worker, on CPU or GPU. Hosted providers
(``openai:``, ``cohere:``, ``voyage:``, ``bedrock:``) gain little: the work is on the vendor's
side and ``max_concurrency`` is already the lever; :func:`embed_documents` refuses them with a
:class:`~.exceptions.ConfigError` that says so, and in a test run ``--embedbench-ray`` embeds
them in-process with one warning. Rankers (``bm25``, ``hybrid:``) embed nothing and are left
alone.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .exceptions import ConfigError, EmbedBenchError, EmbedBenchWarning, ProviderError

if TYPE_CHECKING:
    from .cache import EmbeddingCache
    from .datasets import Document, RetrievalDataset
    from .providers import ModelSpec, Provider
    from .providers.base import EmbeddingProvider

__all__ = [
    "RAY_INSTALL",
    "RayEmbedReport",
    "RaySettings",
    "add_parser",
    "connect",
    "embed_dataset",
    "embed_documents",
    "prefill_hook",
    "require_ray",
]

RAY_INSTALL = "pip install 'pytest-embedbench[ray]'"
Progress = Callable[[int, int], None]


def require_ray() -> Any:
    """The ``ray`` module (with Ray Data), or a ConfigError that names the pip command."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"embedding through Ray needs Ray Data ({exc}): {RAY_INSTALL}") from None
    return ray


@dataclass(frozen=True)
class RaySettings:
    """Where and how wide: ``address`` (``auto``, ``ray://HOST:PORT`` or ``local``), the
    number of ``workers`` (actors, each with its own copy of the model), the CPUs and GPUs each
    reserves, ``batch_size`` (texts per batch sent to a worker; default the provider's), and
    Ray's fault settings: ``max_restarts`` of a worker that dies, ``max_task_retries`` of its
    batch. ``local_cpus``: the CPUs a ``local`` Ray gets (default: all of this machine's)."""

    address: str = "auto"
    workers: int = 2
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    batch_size: int | None = None
    max_restarts: int = 3
    max_task_retries: int = 3
    local_cpus: int | None = None

    def __post_init__(self) -> None:
        address = self.address.strip()
        if not address:
            raise ConfigError("Ray address is empty: use 'auto', 'local' or 'ray://HOST:PORT'")
        object.__setattr__(self, "address", address)
        if self.workers < 1:
            raise ConfigError(f"Ray workers={self.workers}: must be at least 1")
        if self.cpus_per_worker < 0 or self.gpus_per_worker < 0:
            raise ConfigError(
                f"Ray CPUs/GPUs per worker must be >= 0 (got {self.cpus_per_worker}, "
                f"{self.gpus_per_worker})"
            )
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"Ray batch_size={self.batch_size}: must be at least 1")
        if self.max_restarts < 0 or self.max_task_retries < 0:
            raise ConfigError("Ray max_restarts and max_task_retries must be >= 0")


@dataclass
class RayEmbedReport:
    """What one call did: documents in total, found in the cache, embedded through Ray (in
    ``batches`` batches) and the wall seconds of the Ray part."""

    model: str
    namespace: str
    documents: int
    cached: int
    embedded: int
    batches: int = 0
    seconds: float = 0.0
    workers: int = 0
    #: seconds from the start of the Ray part to the first batch back (actors loading models)
    first_batch_s: float | None = None
    batch_sizes: list[int] = field(default_factory=list)

    @property
    def documents_per_s(self) -> float | None:
        """Documents embedded per wall second through Ray (None when none were)."""
        return self.embedded / self.seconds if self.embedded and self.seconds > 0 else None

    def line(self) -> str:
        rate = self.documents_per_s
        speed = f", {rate:,.1f} documents/s" if rate else ""
        return (
            f"{self.model}: {self.documents:,} documents, {self.cached:,} already cached, "
            f"{self.embedded:,} embedded through Ray by {self.workers} worker(s) in "
            f"{self.seconds:.1f} s{speed}"
        )


def connect(address: str, *, num_cpus: int | None = None) -> bool:
    """Connect this process to Ray (``auto``, ``ray://...``) or start one here (``local``);
    a Ray already initialised is used as it is. Returns whether this call started it."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "WARNING"}
    if address == "local":
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
    else:
        if not (address == "auto" or address.startswith("ray://") or ":" in address):
            raise ConfigError(
                f"Ray address {address!r}: use 'auto', 'local', 'ray://HOST:PORT' or HOST:PORT"
            )
        kwargs = {"address": address, "logging_level": "WARNING"}
    try:
        ray.init(**kwargs)
    except ConnectionError as exc:
        raise ConfigError(
            f"cannot reach a Ray cluster at {address!r}: {exc}. Start one (ray start --head), "
            "or use --ray local to start one on this machine"
        ) from None
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # the caller's progress is fed by the batches themselves
    ctx.print_on_execution_start = False
    return True


def hosted_reason(provider: Provider) -> str | None:
    """Why ``provider`` is not embedded through Ray (None when it is)."""
    from .providers.base import EmbeddingProvider

    if not isinstance(provider, EmbeddingProvider):
        return f"{provider.name!r} ranks documents itself and embeds nothing"
    if provider.hosted:
        return (
            f"{provider.name}:{provider.model} is a hosted API: Ray gains little for it (the "
            "work is on the vendor's side); raise its max_concurrency option instead"
        )
    return None


class _Embedder:
    """The Ray Data actor: builds the provider once, checks its namespace, embeds batches."""

    def __init__(
        self, provider_cls: type, model: str, options: dict[str, Any], namespace: str
    ) -> None:
        self.provider = provider_cls(model, **options)
        self.provider.ensure_loaded()
        here = self.provider.namespace_key()
        if here != namespace:
            import socket

            raise ProviderError(
                f"{self.provider.name}:{model} on Ray worker {socket.gethostname()} has cache "
                f"namespace {here!r}, the driver {namespace!r}: the worker loaded other weights "
                "or package versions; install the same ones on every node"
            )

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One item per call: a batch made by the driver (row numbers and texts). A provider
        error comes back as data (its class and message), because Ray Data's wrapping of an
        exception keeps only its traceback text."""
        rows_out: list[np.ndarray] = []
        vectors_out: list[np.ndarray] = []
        for rows, texts in zip(batch["rows"], batch["texts"], strict=True):
            try:
                vectors = self.provider.embed([str(t) for t in texts], kind="document")
            except EmbedBenchError as exc:
                kind = type(exc)
                return {
                    "row": np.array([-1], dtype=np.int64),
                    "vector": np.zeros((1, self.provider.dimension or 1), dtype=np.float32),
                    "error": np.array([f"{kind.__module__}:{kind.__qualname__}\n{exc}"]),
                }
            rows_out.append(np.asarray(rows, dtype=np.int64))
            vectors_out.append(vectors)
        rows_all = np.concatenate(rows_out)
        return {
            "row": rows_all,
            "vector": np.concatenate(vectors_out),
            "error": np.array([""] * len(rows_all)),
        }


def _raise_sent(error: str) -> None:
    """Raise the exception a worker sent as ``module:qualname`` and its message: the same
    type the in-process path raises (ProviderError when the type cannot be found)."""
    import importlib

    name, _, message = error.partition("\n")
    module, _, qualname = name.partition(":")
    kind: Any = ProviderError
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        if isinstance(found, type) and issubclass(found, EmbedBenchError):
            kind = found
    except (ImportError, AttributeError):
        pass
    raise kind(message)


def embed_documents(
    provider: EmbeddingProvider,
    texts: Sequence[str],
    cache: EmbeddingCache,
    settings: RaySettings,
    *,
    progress: Progress | None = None,
) -> RayEmbedReport:
    """Embed the texts of ``texts`` missing from ``cache`` on Ray and store them there.

    ``provider`` is loaded here if it is not yet (the namespace needs its dimension). Each
    batch is stored as it arrives; ``progress(done, total)`` counts documents, cached ones
    first. A hosted provider or a ranker is a ConfigError (see the module doc).
    """
    from .providers.dense import document_keys

    why = hosted_reason(provider)
    if why is not None:
        raise ConfigError(f"not embedding through Ray: {why}")
    if cache.unavailable is not None or cache.read_only is not None:
        raise ConfigError(
            f"embedding through Ray writes to the cache {str(cache.path)!r}, which cannot be "
            f"written: {cache.unavailable or cache.read_only}"
        )
    provider.ensure_loaded()
    namespace, keys = document_keys(provider, texts)
    found, missing = cache.get_many(
        namespace, keys, dim=provider.dimension, unit_norm=provider.normalize
    )
    todo: dict[bytes, int] = {}
    for i in missing:
        todo.setdefault(keys[i], i)  # a text that occurs twice is embedded once
    total = len(texts)
    report = RayEmbedReport(
        model=f"{provider.name}:{provider.model}",
        namespace=namespace,
        documents=total,
        cached=total - len(missing),
        embedded=0,
        workers=settings.workers,
    )
    done = total - len(missing)
    if progress is not None:
        progress(done, total)
    if not todo:
        return report
    ray = require_ray()
    connect(settings.address, num_cpus=settings.local_cpus)
    prepared = {i: provider.prepare(texts[i], "document") for i in todo.values()}
    order = sorted(todo.values(), key=lambda i: (-len(prepared[i]), i))
    batch_size = settings.batch_size or provider.batch_size
    # the driver makes the batches, as in-process embedding does (longest first, batch_size
    # each), and each Ray call gets one: the same texts pad together, so the same vectors
    items = [
        {
            "rows": np.array(order[s : s + batch_size], dtype=np.int64),
            "texts": [texts[i] for i in order[s : s + batch_size]],
        }
        for s in range(0, len(order), batch_size)
    ]
    # no more actors than batches: an idle actor would load the model for nothing (and Ray
    # Data warns that the pool cannot be used in full)
    pool = min(settings.workers, len(items))
    report.workers = pool
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    data = ray.data.from_items(items, override_num_blocks=min(len(items), 200))
    with warnings.catch_warnings():
        # Ray 2.60 takes max_restarts and max_task_retries only through ray_remote_args
        warnings.filterwarnings("ignore", message=".*ray_remote_args.*")
        out = data.map_batches(
            _Embedder,
            fn_constructor_kwargs={
                "provider_cls": type(provider),
                "model": provider.model,
                "options": dict(provider.options),
                "namespace": namespace,
            },
            batch_size=1,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=pool),
            num_cpus=settings.cpus_per_worker,
            num_gpus=settings.gpus_per_worker or None,
            max_restarts=settings.max_restarts,
            max_task_retries=settings.max_task_retries,
        )
    dim = provider.dimension
    row_to_copies: dict[int, list[int]] = {}
    for i in missing:
        row_to_copies.setdefault(todo[keys[i]], []).append(i)
    t0 = time.perf_counter()
    try:
        for batch in out.iter_batches(batch_size=None, batch_format="numpy"):
            errors = [str(e) for e in batch["error"] if e]
            if errors:
                _raise_sent(errors[0])
            rows = [int(r) for r in batch["row"]]
            vectors = np.asarray(batch["vector"], dtype=np.float32)
            if (
                vectors.ndim != 2
                or vectors.shape[0] != len(rows)
                or (dim is not None and vectors.shape[1] != dim)
            ):
                raise ProviderError(
                    f"{report.model}: a Ray worker sent vectors of shape {vectors.shape} for "
                    f"{len(rows)} documents of dimension {dim}"
                )
            # one transaction per batch: an interrupted run keeps every batch written so far
            cache.put_many(namespace, [keys[r] for r in rows], vectors)
            if report.first_batch_s is None:
                report.first_batch_s = time.perf_counter() - t0
            report.batches += 1
            report.batch_sizes.append(len(rows))
            report.embedded += len(rows)
            done += sum(len(row_to_copies[r]) for r in rows)
            if progress is not None:
                progress(done, total)
    finally:
        report.seconds = time.perf_counter() - t0
    return report


def embed_dataset(
    model: str | ModelSpec,
    dataset: str | Path | RetrievalDataset,
    *,
    cache: bool | str | Path | EmbeddingCache = True,
    settings: RaySettings | None = None,
    split: str = "test",
    progress: Progress | None = None,
) -> RayEmbedReport:
    """Fill ``cache`` with ``model``'s vectors of ``dataset``'s documents through Ray (its
    chunks, for a dataset with chunking settings). ``cache``: True (the default folder), a
    folder or an EmbeddingCache."""
    from .cache import EmbeddingCache
    from .datasets import load_dataset
    from .providers import create_provider
    from .providers.base import EmbeddingProvider

    store = EmbeddingCache.open(cache)
    if store is None:
        raise ConfigError("embedding through Ray fills the embedding cache: give one")
    provider = create_provider(model)
    if not isinstance(provider, EmbeddingProvider) or provider.hosted:
        raise ConfigError(f"not embedding through Ray: {hosted_reason(provider)}")
    ds = load_dataset(dataset, split=split)
    documents: Sequence[Document] = ds.documents
    if ds.chunking is not None:
        from .docscore import chunk_pseudo_documents
        from .evaluate import Evaluator

        provider.ensure_loaded()
        chunks = Evaluator(cache=store).chunks(ds, provider)
        documents = chunk_pseudo_documents(chunks)
    texts = [d.embed_text for d in documents]
    return embed_documents(provider, texts, store, settings or RaySettings(), progress=progress)


def prefill_hook(
    settings: RaySettings,
) -> Callable[[Provider, Sequence[Document], EmbeddingCache | None], None]:
    """What ``--embedbench-ray`` runs before a provider builds its index over documents: the
    uncached ones through Ray. Hosted providers are embedded in-process, with one warning
    each; rankers are left alone."""
    warned: set[str] = set()

    def prefill(
        provider: Provider, documents: Sequence[Document], cache: EmbeddingCache | None
    ) -> None:
        from .providers.base import EmbeddingProvider

        if cache is None:
            raise ConfigError(
                "--embedbench-ray fills the embedding cache, which this run does not use "
                "(drop --embedbench-no-cache)"
            )
        why = hosted_reason(provider)
        if why is not None:
            if isinstance(provider, EmbeddingProvider) and why not in warned:
                warned.add(why)
                warnings.warn(
                    f"--embedbench-ray: {why}; it is embedded in-process",
                    EmbedBenchWarning,
                    stacklevel=2,
                )
            return
        assert isinstance(provider, EmbeddingProvider)
        embed_documents(provider, [d.embed_text for d in documents], cache, settings)

    return prefill


# -- embedbench embed ------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """Register ``embed`` on the ``embedbench`` command's subparsers."""
    embed = sub.add_parser(
        "embed",
        help="fill the embedding cache with a model's document vectors, through Ray",
        description="Embed a dataset's uncached documents with one model on a Ray cluster "
        "(one model copy per worker) and store them in the embedding cache, so the test run "
        "that follows is a cache hit. Hosted providers are refused: Ray gains little for them.",
    )
    embed.add_argument(
        "--ray",
        required=True,
        metavar="ADDRESS",
        help="'auto' (this machine's cluster), 'ray://HOST:PORT', or 'local' (start one here)",
    )
    embed.add_argument("--model", "-m", required=True, help="a model spec, e.g. hf:MODEL")
    embed.add_argument("--dataset", "-d", required=True, help="a dataset path (BEIR, eval set)")
    embed.add_argument("--split", default="test")
    embed.add_argument("--workers", type=int, default=2, help="Ray actors (default 2)")
    embed.add_argument("--cpus-per-worker", type=float, default=1.0, help="default 1")
    embed.add_argument("--gpus-per-worker", type=float, default=0.0, help="default 0")
    embed.add_argument("--batch-size", type=int, help="texts per batch (default: the model's)")
    embed.add_argument("--max-restarts", type=int, default=3, help="of a dead worker (default 3)")
    embed.add_argument("--max-task-retries", type=int, default=3, help="of a batch (default 3)")
    embed.add_argument("--local-cpus", type=int, help="CPUs of a 'local' Ray (default: all)")
    embed.add_argument("--cache", metavar="DIR", help="cache folder (default: the usual one)")
    embed.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    embed.set_defaults(func=run)


class _Bar:
    """Documents done on stderr, fed by the batches as they come back from the workers: one
    line rewritten in place on a terminal, a line every tenth of the way otherwise (CI logs)."""

    def __init__(self, label: str, *, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.started = time.perf_counter()
        self.last_tenth = -1
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * done // max(total, 1)
        elapsed = time.perf_counter() - self.started
        line = (
            f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} "
            f"documents, {elapsed:.0f} s"
        )
        if self.tty:
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
            self.shown = True
            return
        tenth = 10 * done // max(total, 1)
        if tenth != self.last_tenth:
            self.last_tenth = tenth
            print(line, file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr)
            self.shown = False


def run(args: argparse.Namespace) -> int:
    """``embedbench embed``: 0 when every document is in the cache, 1 when the provider
    failed, 2 for a bad argument (or a hosted provider)."""
    bar = _Bar(f"embed {args.model}", enabled=not args.quiet)
    ray_before = sys.modules.get("ray")
    was_running = ray_before is not None and ray_before.is_initialized()
    try:
        settings = RaySettings(
            address=args.ray,
            workers=args.workers,
            cpus_per_worker=args.cpus_per_worker,
            gpus_per_worker=args.gpus_per_worker,
            batch_size=args.batch_size,
            max_restarts=args.max_restarts,
            max_task_retries=args.max_task_retries,
            local_cpus=args.local_cpus,
        )
        report = embed_dataset(
            args.model,
            args.dataset,
            cache=Path(args.cache) if args.cache else True,
            settings=settings,
            split=args.split,
            progress=bar,
        )
    except ProviderError as exc:
        bar.done()
        print(f"embedbench embed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except (EmbedBenchError, ValueError) as exc:
        bar.done()
        print(f"embedbench embed: {exc}", file=sys.stderr)
        return 2
    finally:
        ray = sys.modules.get("ray")
        if ray is not None and not was_running and ray.is_initialized():
            ray.shutdown()  # a Ray this command connected to or started
    bar.done()
    print(report.line())
    return 0
