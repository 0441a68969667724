"""The Ray part of document embedding: the ``_Embedder`` actor each worker runs, and the
driver: :func:`embed_documents` (cache lookup, batching, the Ray call, write-back),
:func:`embed_dataset` and the ``--embedbench-ray`` :func:`prefill_hook`."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.exceptions import ConfigError, EmbedBenchError, EmbedBenchWarning, ProviderError
from .settings import Progress, RayEmbedReport, RaySettings, connect, hosted_reason, require_ray

if TYPE_CHECKING:
    from ..cache.store import EmbeddingCache
    from ..core.types import Document
    from ..data.datasets import RetrievalDataset
    from ..models.providers import ModelSpec, Provider
    from ..models.providers.base import EmbeddingProvider

__all__ = ["RayPrefill", "embed_dataset", "embed_documents", "prefill_hook", "worker_misfit"]


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
    first. A hosted provider or a ranker is a ConfigError (see the package doc).
    """
    _check_embeddable(provider, cache)
    provider.ensure_loaded()
    pending = _lookup(provider, texts, cache)
    total = len(texts)
    report = RayEmbedReport(
        model=f"{provider.name}:{provider.model}",
        namespace=pending.namespace,
        documents=total,
        cached=total - len(pending.missing),
        embedded=0,
        workers=settings.workers,
    )
    if progress is not None:
        progress(report.cached, total)
    if not pending.todo:
        return report
    ray = require_ray()
    connect(settings.address, num_cpus=settings.local_cpus)
    _check_fits(ray, settings)
    size = settings.batch_size or provider.batch_size
    # no more actors than batches: an idle actor would load the model for nothing (and Ray
    # Data warns that the pool cannot be used in full)
    report.workers = min(settings.workers, -(-len(pending.todo) // size))
    done = report.cached
    for items in _windows(provider, texts, pending.todo.values(), size):
        # one window of batches at a time: the driver holds only its texts
        workers = min(report.workers, len(items))
        out = _map_on_ray(ray, provider, pending.namespace, items, settings, workers)
        done = _write_back(out, cache, provider.dimension, pending, report, progress, done)
    return report


def _check_fits(ray: Any, settings: RaySettings) -> None:
    """A worker that no node can host would wait for ever (Ray Data only logs "the job may
    hang forever"): on a ``local`` Ray that is a ConfigError, on a cluster a warning (an
    autoscaler may still add such a node)."""
    alive = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
    why = worker_misfit(alive, settings.cpus_per_worker, settings.gpus_per_worker)
    if why is None:
        return
    if settings.address == "local":
        raise ConfigError(
            f"{why}, so no worker could ever start on this machine's Ray: ask for less "
            "(--embedbench-ray-gpus-per-worker / --embedbench-ray-cpus-per-worker in a test "
            "run, --gpus-per-worker / --cpus-per-worker with embedbench embed) or use a "
            "cluster that has such nodes"
        )
    warnings.warn(
        f"{why}: the workers wait until the cluster adds such a node (an autoscaler), and "
        "the run hangs if it never does",
        EmbedBenchWarning,
        stacklevel=3,
    )


def worker_misfit(nodes: Sequence[dict[str, float]], cpus: float, gpus: float) -> str | None:
    """Why no node of ``nodes`` (each node's Ray resources, ``{"CPU": 8.0, "GPU": 1.0}``) can
    host a worker that reserves ``cpus`` CPUs and ``gpus`` GPUs; None when one can."""
    if any(n.get("CPU", 0.0) >= cpus and n.get("GPU", 0.0) >= gpus for n in nodes):
        return None
    largest = max(nodes, key=lambda n: (n.get("GPU", 0.0), n.get("CPU", 0.0)), default={})
    return (
        f"each Ray worker reserves CPU {cpus:g} and GPU {gpus:g}, but no node of the Ray "
        f"cluster ({len(nodes)} alive) has that much (the largest has CPU "
        f"{largest.get('CPU', 0.0):g}, GPU {largest.get('GPU', 0.0):g})"
    )


def _check_embeddable(provider: EmbeddingProvider, cache: EmbeddingCache) -> None:
    """A ConfigError for a hosted provider or a ranker, or a cache that cannot be written."""
    why = hosted_reason(provider)
    if why is not None:
        raise ConfigError(f"not embedding through Ray: {why}")
    if cache.unavailable is not None or cache.read_only is not None:
        raise ConfigError(
            f"embedding through Ray writes to the cache {str(cache.path)!r}, which cannot be "
            f"written: {cache.unavailable or cache.read_only}"
        )


@dataclass
class _Pending:
    """The cache lookup: the namespace, each text's key, the rows missing from the cache, and
    the first row of each missing key (a text that occurs twice is embedded once)."""

    namespace: str
    keys: list[bytes]
    missing: list[int]
    todo: dict[bytes, int]


#: keys looked up in the cache at a time (the found vectors of one slice are in memory at once)
LOOKUP_SLICE = 10_000
#: texts the driver hands Ray at once: the uncached documents go through Ray in windows of
#: about this many (whole batches), so the driver never holds every uncached text (each window
#: starts its actor pool again, which loads the model again: a few seconds per window)
WINDOW_TEXTS = 100_000


def _lookup(provider: EmbeddingProvider, texts: Sequence[str], cache: EmbeddingCache) -> _Pending:
    """Look the texts up in ``cache`` under the loaded provider's namespace."""
    from ..retrieval.dense import document_keys

    namespace, keys = document_keys(provider, texts)
    missing: list[int] = []
    # in slices: only the misses are kept, so a re-run over millions of cached vectors does
    # not hold them all in the driver's memory (each slice's vectors are checked, then dropped)
    for start in range(0, len(keys), LOOKUP_SLICE):
        _vectors, gaps = cache.get_matrix(
            namespace,
            keys[start : start + LOOKUP_SLICE],
            dim=provider.dimension,
            unit_norm=provider.normalize,
        )
        missing.extend(start + i for i in gaps)
    todo: dict[bytes, int] = {}
    for i in missing:
        todo.setdefault(keys[i], i)  # a text that occurs twice is embedded once
    return _Pending(namespace=namespace, keys=keys, missing=list(missing), todo=todo)


def _windows(
    provider: EmbeddingProvider, texts: Sequence[str], rows: Collection[int], size: int
) -> Iterator[list[dict[str, Any]]]:
    """The batches, a window at a time. The driver makes them as in-process embedding does
    (longest first, ``size`` each) and each Ray call gets one, so the same texts pad together
    and give the same vectors: the rows are ordered once by their prepared lengths (the
    lengths only are kept), and a window's batches get their texts when it is reached."""
    lengths = {i: len(provider.prepare(texts[i], "document")) for i in rows}
    order = sorted(lengths, key=lambda i: (-lengths[i], i))
    per_window = max(size, WINDOW_TEXTS // size * size)
    for w in range(0, len(order), per_window):
        part = order[w : w + per_window]
        yield [
            {
                "rows": np.array(part[s : s + size], dtype=np.int64),
                "texts": [texts[i] for i in part[s : s + size]],
            }
            for s in range(0, len(part), size)
        ]


def _map_on_ray(
    ray: Any,
    provider: EmbeddingProvider,
    namespace: str,
    items: list[dict[str, Any]],
    settings: RaySettings,
    pool: int,
) -> Any:
    """The lazy Ray Data pipeline: one batch per call to a pool of ``pool`` ``_Embedder``s."""
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    data = ray.data.from_items(items, override_num_blocks=min(len(items), 200))
    with warnings.catch_warnings():
        # Ray 2.60 takes max_restarts and max_task_retries only through ray_remote_args
        warnings.filterwarnings("ignore", message=".*ray_remote_args.*")
        return data.map_batches(
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


def _write_back(
    out: Any,
    cache: EmbeddingCache,
    dim: int | None,
    pending: _Pending,
    report: RayEmbedReport,
    progress: Progress | None,
    done: int,
) -> int:
    """Read the batches back from the workers and store each in the cache as it arrives,
    counting documents (every copy of a text) for ``progress`` and the report, from ``done``
    (the documents counted before this window); returns the count after it."""
    keys = pending.keys
    row_to_copies: dict[int, list[int]] = {}
    for i in pending.missing:
        row_to_copies.setdefault(pending.todo[keys[i]], []).append(i)
    total = report.documents
    t0 = time.perf_counter()
    try:
        for batch in out.iter_batches(batch_size=None, batch_format="numpy"):
            rows, vectors = _checked_batch(batch, dim, report.model)
            # one transaction per batch: an interrupted run keeps every batch written so far
            cache.put_many(pending.namespace, [keys[r] for r in rows], vectors)
            if report.first_batch_s is None:
                report.first_batch_s = time.perf_counter() - t0
            report.batches += 1
            report.batch_sizes.append(len(rows))
            report.embedded += len(rows)
            done += sum(len(row_to_copies[r]) for r in rows)
            if progress is not None:
                progress(done, total)
    finally:
        report.seconds += time.perf_counter() - t0
    return done


def _checked_batch(batch: dict[str, Any], dim: int | None, model: str) -> tuple[list[int], Any]:
    """The rows and vectors of one batch a worker sent; its error raised, a bad shape refused."""
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
            f"{model}: a Ray worker sent vectors of shape {vectors.shape} for "
            f"{len(rows)} documents of dimension {dim}"
        )
    return rows, vectors


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
    from ..cache.store import EmbeddingCache
    from ..data.datasets import load_dataset
    from ..models.providers import create_provider
    from ..models.providers.base import EmbeddingProvider

    store = EmbeddingCache.open(cache)
    if store is None:
        raise ConfigError("embedding through Ray fills the embedding cache: give one")
    provider = create_provider(model)
    if not isinstance(provider, EmbeddingProvider) or provider.hosted:
        raise ConfigError(f"not embedding through Ray: {hosted_reason(provider)}")
    ds = load_dataset(dataset, split=split)
    documents: Sequence[Document] = ds.documents
    if ds.chunking is not None:
        from ..evaluation.evaluate import Evaluator
        from ..retrieval.pooling import chunk_pseudo_documents

        provider.ensure_loaded()
        chunks = Evaluator(cache=store).chunks(ds, provider)
        documents = chunk_pseudo_documents(chunks)
    texts = [d.embed_text for d in documents]
    return embed_documents(provider, texts, store, settings or RaySettings(), progress=progress)


class RayPrefill:
    """What ``--embedbench-ray`` runs before a provider builds its index over documents
    (``prefill(provider, documents, cache)``): the uncached ones through Ray with
    :attr:`settings`. Hosted providers are embedded in-process, with one warning each; rankers
    are left alone."""

    def __init__(self, settings: RaySettings) -> None:
        self.settings = settings
        self._warned: set[str] = set()

    def __call__(
        self, provider: Provider, documents: Sequence[Document], cache: EmbeddingCache | None
    ) -> None:
        from ..models.providers.base import EmbeddingProvider

        if cache is None:
            raise ConfigError(
                "--embedbench-ray fills the embedding cache, which this run does not use "
                "(drop --embedbench-no-cache)"
            )
        why = hosted_reason(provider)
        if why is not None:
            if isinstance(provider, EmbeddingProvider) and why not in self._warned:
                self._warned.add(why)
                warnings.warn(
                    f"--embedbench-ray: {why}; it is embedded in-process",
                    EmbedBenchWarning,
                    stacklevel=2,
                )
            return
        assert isinstance(provider, EmbeddingProvider)
        embed_documents(provider, [d.embed_text for d in documents], cache, self.settings)


def prefill_hook(settings: RaySettings) -> RayPrefill:
    """The ``--embedbench-ray`` prefill with ``settings`` (:class:`RayPrefill`)."""
    return RayPrefill(settings)
