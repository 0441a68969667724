"""Document embedding on a Ray cluster: the uncached documents of a corpus, embedded by a pool of
Ray Data actors that each load the model once, written to the embedding cache batch by batch.

Everything downstream is unchanged: the vectors go into the cache under the namespace and keys
the in-process path uses (:func:`~pytest_embedbench.providers.dense.document_keys`), so the
evaluation that follows is a pure cache hit, and so is a second run. Usage::

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
  (usually :class:`~pytest_embedbench.exceptions.ProviderError`), with Ray's wrapping removed;
* an interrupted run (Ctrl-C, a failed batch) keeps what it wrote; the next run embeds the rest.
* a worker that no node can host (more CPUs or GPUs than any node has), for which Ray Data
  would wait for ever, is a ConfigError on a ``local`` Ray and a warning on a cluster (an
  autoscaler may add the node).

Which providers: local models (``hf:``, and any provider whose class is not ``hosted``) are
the case Ray is for: the model is loaded once per worker, on CPU or GPU. Hosted providers
(``openai:``, ``cohere:``, ``voyage:``, ``bedrock:``) gain little: the work is on the vendor's
side and ``max_concurrency`` is already the lever; :func:`embed_documents` refuses them with a
:class:`~pytest_embedbench.exceptions.ConfigError` that says so, and in a test run
``--embedbench-ray`` embeds them in-process with one warning. Rankers (``bm25``, ``hybrid:``)
embed nothing and are left alone.

Modules: :mod:`.settings` (RaySettings, RayEmbedReport, connect, hosted_reason), :mod:`.engine`
(the ``_Embedder`` actor, embed_documents, embed_dataset, prefill_hook) and :mod:`.cli`
(``embedbench embed``, on the outputs floor with the rest of the command line, so this package
does not import it); import the names below from here.
"""

from __future__ import annotations

from .engine import RayPrefill, embed_dataset, embed_documents, prefill_hook
from .settings import (
    RAY_INSTALL,
    Progress,
    RayEmbedReport,
    RaySettings,
    address_unreachable,
    connect,
    hosted_reason,
    require_ray,
)

__all__ = [
    "RAY_INSTALL",
    "Progress",
    "RayEmbedReport",
    "RayPrefill",
    "RaySettings",
    "address_unreachable",
    "connect",
    "embed_dataset",
    "embed_documents",
    "hosted_reason",
    "prefill_hook",
    "require_ray",
]
