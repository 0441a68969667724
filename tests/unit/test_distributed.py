"""Document embedding through a local Ray (two CPUs, no dashboard) equals the in-process path."""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embedbench import ModelSpec
from pytest_embedbench.cache.store import EmbeddingCache
from pytest_embedbench.core.exceptions import ConfigError, ProviderError
from pytest_embedbench.models.providers import create_provider, register_provider
from pytest_embedbench.retrieval.dense import document_keys

from ..helpers import HashingProvider
from ..raycluster import SKIP_REASON, local_ray

pytest.importorskip("ray", reason=SKIP_REASON)

from pytest_embedbench.distributed import RaySettings, embed_documents  # noqa: E402

TEXTS = [f"document {i} about word{i % 7} and thing{i % 13}" for i in range(150)]


class DyingProvider(HashingProvider):
    """Embeds like "hashing", but the first batch any worker embeds SIGKILLs that worker's
    process; the ``marker`` file (created just before) lets every later attempt live."""

    name = "dying"
    option_names = HashingProvider.option_names | {"marker"}

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        marker = Path(str(self.options["marker"]))
        try:
            marker.touch(exist_ok=False)
        except FileExistsError:
            return super().embed_batch(texts, kind=kind)
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


register_provider(DyingProvider)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    yield from local_ray()


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_ray_vectors_equal_in_process_and_a_second_run_embeds_nothing(
    ray_cluster: Any, tmp_path: Path
) -> None:
    cache = EmbeddingCache(tmp_path)
    provider = create_provider("hashing:h")
    report = embed_documents(provider, TEXTS, cache, RaySettings(address="local", workers=2))
    assert report.embedded == len(TEXTS) and report.cached == 0
    namespace, keys = document_keys(provider, TEXTS)
    found, missing = cache.get_many(namespace, keys)
    assert missing == []
    expected = create_provider("hashing:h").embed(TEXTS, kind="document")
    np.testing.assert_allclose(np.stack([found[k] for k in keys]), expected, atol=1e-6)
    again = embed_documents(provider, TEXTS, cache, RaySettings(address="local", workers=2))
    assert again.embedded == 0 and again.cached == len(TEXTS)


@pytest.mark.slow  # a Ray cluster of its own
def test_a_provider_error_in_a_worker_surfaces_with_its_message(
    ray_cluster: Any, tmp_path: Path
) -> None:
    provider = create_provider(ModelSpec("hashing:bad", poison="rows"))
    with pytest.raises(ProviderError, match="expected 32 embeddings, got an array of shape"):
        embed_documents(provider, TEXTS, EmbeddingCache(tmp_path), RaySettings(address="local"))


@pytest.mark.slow  # a Ray cluster of its own
def test_a_killed_worker_is_restarted_and_the_run_completes(
    ray_cluster: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "killed-once"
    cache = EmbeddingCache(tmp_path / "cache")
    provider = create_provider(ModelSpec("dying:h", marker=str(marker)))
    report = embed_documents(provider, TEXTS, cache, RaySettings(address="local", workers=2))
    assert marker.exists(), "no worker was killed"
    assert report.embedded == len(TEXTS)
    namespace, keys = document_keys(provider, TEXTS)
    found, missing = cache.get_many(namespace, keys)
    assert missing == []
    expected = create_provider("hashing:h").embed(TEXTS, kind="document")
    np.testing.assert_allclose(np.stack([found[k] for k in keys]), expected, atol=1e-6)


@pytest.mark.slow  # a local Ray: the full suite
def test_embedbench_embed_fills_the_cache_then_finds_everything_cached(
    ray_cluster: Any, beir_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_embedbench.cli import main
    from pytest_embedbench.data.datasets import load_dataset

    cache_dir = tmp_path / "cache"
    argv = ["embed", "--ray", "local", "--model", "hashing:h", "--dataset", str(beir_folder)]
    argv += ["--cache", str(cache_dir), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "4 documents, 0 already cached, 4 embedded through Ray" in out
    texts = [d.embed_text for d in load_dataset(beir_folder).documents]
    provider = create_provider("hashing:h")
    provider.ensure_loaded()  # the dimension enters the namespace
    namespace, keys = document_keys(provider, texts)
    found, missing = EmbeddingCache(cache_dir).get_many(namespace, keys)
    assert missing == []
    expected = create_provider("hashing:h").embed(texts, kind="document")
    np.testing.assert_allclose(np.stack([found[k] for k in keys]), expected, atol=1e-6)
    assert main(argv) == 0
    assert "4 documents, 4 already cached, 0 embedded through Ray" in capsys.readouterr().out


@pytest.mark.slow  # a local Ray starts for it (6-8 s a process): the full suite
def test_embedbench_embed_refuses_a_hosted_model_with_exit_2(
    ray_cluster: Any, beir_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_embedbench.cli import main

    argv = ["embed", "--ray", "local", "--model", "openai:text-embedding-3-small"]
    argv += ["--dataset", str(beir_folder), "--cache", str(tmp_path / "cache"), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Ray gains little" in err and "openai:text-embedding-3-small" in err


@pytest.mark.slow
def test_minilm_on_200_scifact_documents_equals_in_process(
    ray_cluster: Any, scifact_path: Path, tmp_path: Path
) -> None:
    from pytest_embedbench.data.datasets import load_dataset

    model = "hf:sentence-transformers/all-MiniLM-L6-v2"
    texts = [d.embed_text for d in load_dataset(scifact_path).documents[:200]]
    cache = EmbeddingCache(tmp_path)
    provider = create_provider(model)
    report = embed_documents(provider, texts, cache, RaySettings(address="local", workers=2))
    assert report.embedded == len(set(texts)) and report.cached == 0
    namespace, keys = document_keys(provider, texts)
    found, missing = cache.get_many(namespace, keys)
    assert missing == []
    expected = create_provider(model).embed(texts, kind="document")
    np.testing.assert_allclose(np.stack([found[k] for k in keys]), expected, atol=1e-6)


def test_the_cache_lookup_goes_in_slices_and_keeps_only_the_misses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Ray needed: the driver's lookup reads the cache a slice at a time (a re-run over
    millions of cached vectors must not hold them all) and still finds every miss, by row, with
    a text that occurs twice embedded once."""
    from pytest_embedbench.distributed import engine

    reads: list[int] = []
    real_get_matrix = EmbeddingCache.get_matrix

    def counting_get_matrix(self: EmbeddingCache, namespace: str, keys: Any, **kw: Any) -> Any:
        reads.append(len(keys))
        return real_get_matrix(self, namespace, keys, **kw)

    monkeypatch.setattr(EmbeddingCache, "get_matrix", counting_get_matrix)
    monkeypatch.setattr(engine, "LOOKUP_SLICE", 4)
    provider = create_provider("hashing:h")
    provider.load()  # the driver loads it first: the namespace carries its dimension
    texts = TEXTS[:10] + [TEXTS[3], TEXTS[11]]  # row 10 repeats a cached text, row 11 a new one
    cached = [0, 1, 2, 3, 5, 8]
    cache = EmbeddingCache(tmp_path)
    namespace, keys = document_keys(provider, texts)
    vectors = provider.embed([texts[i] for i in cached], kind="document")
    cache.put_many(namespace, [keys[i] for i in cached], vectors)
    pending = engine._lookup(provider, texts, cache)
    assert reads == [4, 4, 4]
    assert pending.missing == [4, 6, 7, 9, 11]
    assert pending.todo == {keys[i]: i for i in (4, 6, 7, 9, 11)}
    assert pending.namespace == namespace and pending.keys == keys


def test_a_worker_no_node_can_host_is_named() -> None:
    from pytest_embedbench.distributed.engine import worker_misfit

    nodes = [{"CPU": 2.0, "memory": 1e9}, {"CPU": 16.0, "GPU": 1.0}]
    assert worker_misfit(nodes, 1.0, 0.0) is None
    assert worker_misfit(nodes, 8.0, 1.0) is None  # the second node
    assert worker_misfit(nodes, 1.0, 2.0) == (
        "each Ray worker reserves CPU 1 and GPU 2, but no node of the Ray cluster (2 alive) "
        "has that much (the largest has CPU 16, GPU 1)"
    )
    # the CPUs and the GPU must be on one node: 16 CPUs there, a GPU, but not both at 32
    assert worker_misfit(nodes, 32.0, 1.0) is not None
    assert "(0 alive)" in str(worker_misfit([], 1.0, 0.0))


@pytest.mark.slow  # a local Ray starts for it (6-8 s a process): the full suite
def test_a_gpu_worker_on_a_cpu_only_local_ray_is_an_error_not_a_hang(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """Ray Data would wait for ever for a GPU the local Ray lacks; the error comes first,
    before any actor starts, and names the settings to change."""
    settings = RaySettings(address="local", workers=1, gpus_per_worker=1.0)
    with pytest.raises(ConfigError, match=r"reserves CPU 1 and GPU 1, .*has CPU 2, GPU 0\), so"):
        embed_documents(create_provider("hashing:h"), TEXTS, EmbeddingCache(tmp_path), settings)
    too_wide = RaySettings(address="local", workers=1, cpus_per_worker=3.0)
    with pytest.raises(ConfigError, match="--embedbench-ray-cpus-per-worker"):
        embed_documents(create_provider("hashing:h"), TEXTS, EmbeddingCache(tmp_path), too_wide)


@pytest.mark.slow  # a local Ray starts for it (6-8 s a process): the full suite
def test_on_a_cluster_such_a_worker_is_a_warning(ray_cluster: Any) -> None:
    from pytest_embedbench.core.exceptions import EmbedBenchWarning
    from pytest_embedbench.distributed.engine import _check_fits

    with pytest.warns(EmbedBenchWarning, match="until the cluster adds such a node"):
        _check_fits(ray_cluster, RaySettings(address="auto", gpus_per_worker=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one that fits: nothing said
        _check_fits(ray_cluster, RaySettings(address="auto"))


@pytest.mark.slow  # a Ray cluster of its own
def test_the_driver_hands_ray_one_window_of_texts_at_a_time(
    ray_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: the uncached texts go through Ray in windows (here 2 batches of 32 each), the
    vectors still equal the in-process ones and progress counts every document once."""
    from pytest_embedbench.distributed import engine

    monkeypatch.setattr(engine, "WINDOW_TEXTS", 64)
    windows: list[int] = []
    real = engine._map_on_ray

    def spy(ray: Any, provider: Any, namespace: str, items: list, *rest: Any) -> Any:
        windows.append(sum(len(item["texts"]) for item in items))
        return real(ray, provider, namespace, items, *rest)

    monkeypatch.setattr(engine, "_map_on_ray", spy)
    cache = EmbeddingCache(tmp_path)
    provider = create_provider("hashing:h")
    seen: list[int] = []
    report = embed_documents(
        provider,
        TEXTS,
        cache,
        RaySettings(address="local", workers=2),
        progress=lambda done, total: seen.append(done),
    )
    assert windows == [64, 64, 22]
    assert report.embedded == len(TEXTS) and report.batches == 5
    assert seen == sorted(seen) and seen[-1] == len(TEXTS)
    namespace, keys = document_keys(provider, TEXTS)
    found, missing = cache.get_many(namespace, keys)
    assert missing == []
    expected = create_provider("hashing:h").embed(TEXTS, kind="document")
    np.testing.assert_allclose(np.stack([found[k] for k in keys]), expected, atol=1e-6)
