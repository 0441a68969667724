"""Document embedding through a local Ray (two CPUs, no dashboard) equals the in-process path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embedbench import ModelSpec
from pytest_embedbench.cache import EmbeddingCache
from pytest_embedbench.exceptions import ProviderError
from pytest_embedbench.providers import create_provider
from pytest_embedbench.providers.dense import document_keys

from ..raycluster import SKIP_REASON, local_ray

pytest.importorskip("ray", reason=SKIP_REASON)

from pytest_embedbench.distributed import RaySettings, embed_documents  # noqa: E402

TEXTS = [f"document {i} about word{i % 7} and thing{i % 13}" for i in range(150)]


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
