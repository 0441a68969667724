"""Document embedding through a local Ray (two CPUs, no dashboard) equals the in-process path."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embedbench import ModelSpec
from pytest_embedbench.cache import EmbeddingCache
from pytest_embedbench.exceptions import ProviderError
from pytest_embedbench.providers import create_provider, register_provider
from pytest_embedbench.providers.dense import document_keys

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


def test_a_provider_error_in_a_worker_surfaces_with_its_message(
    ray_cluster: Any, tmp_path: Path
) -> None:
    provider = create_provider(ModelSpec("hashing:bad", poison="rows"))
    with pytest.raises(ProviderError, match="expected 32 embeddings, got an array of shape"):
        embed_documents(provider, TEXTS, EmbeddingCache(tmp_path), RaySettings(address="local"))


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
