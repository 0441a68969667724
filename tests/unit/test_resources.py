"""The resource figures of a result: dimension, index bytes, cold and warm batches, tokens per
second, and the GPU memory peak (a stand-in torch module plays CUDA: CI has no GPU)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench import Evaluator, ModelSpec
from pytest_embedbench.models.providers import create_provider


def test_a_dense_model_reports_its_index_batches_and_tokens(beir_folder: Path) -> None:
    ev = Evaluator(cache=False)
    spec = ModelSpec("hashing:h", batch_size=1)  # four documents: four batches
    first = ev.evaluate(spec, beir_folder).to_dict(per_query=True)["resources"]
    assert first["dimension"] == 64
    assert first["index_bytes"] == 4 * 64 * 4 and first["bytes_per_document"] == 64 * 4
    assert first["document_batches"] == 4
    assert first["cold_batch_ms"] > 0 and first["warm_batch_p50_ms"] > 0
    assert first["tokens_per_s"] > 0 and first["model_load_s"] >= 0
    assert first["vram_peak_mb"] is None and first["vram_source"] is None
    # the model is loaded now: no batch of a second evaluation is a cold one
    second = ev.evaluate(spec, beir_folder).resources
    assert second["cold_batch_ms"] is None and second["document_batches"] == 4


def test_a_cached_run_embeds_nothing_and_measures_no_rate(
    beir_folder: Path, tmp_path: Path
) -> None:
    Evaluator(cache=tmp_path).evaluate("hashing:h", beir_folder)
    warm = Evaluator(cache=tmp_path).evaluate("hashing:h", beir_folder).resources
    assert warm["document_batches"] == 0 and warm["cold_batch_ms"] is None
    assert warm["tokens_per_s"] is None and warm["dimension"] == 64


def test_bm25_and_hybrid_report_their_index(beir_folder: Path) -> None:
    ev = Evaluator(cache=False)
    bm25 = ev.evaluate("bm25", beir_folder).resources
    assert bm25["dimension"] is None and bm25["index_bytes"] > 0
    hybrid = ev.evaluate("hybrid:hashing:h+bm25", beir_folder).resources
    assert hybrid["dimension"] == 64
    assert hybrid["index_bytes"] == 4 * 64 * 4 + bm25["index_bytes"]


class _FakeCuda:
    def __init__(self) -> None:
        self.resets = 0

    def is_available(self) -> bool:
        return True

    def reset_peak_memory_stats(self) -> None:
        self.resets += 1

    def max_memory_allocated(self) -> int:
        return 300 * 1024 * 1024


def test_hf_reads_the_cuda_peak_only_on_a_cuda_device(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = _FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    provider: Any = create_provider("hf:sentence-transformers/all-MiniLM-L6-v2")
    provider.info["device"] = "cpu"
    provider.reset_vram_peak()
    assert provider.vram_peak_mb() == (None, None) and cuda.resets == 0
    provider.info["device"] = "cuda:0"
    provider.reset_vram_peak()
    assert cuda.resets == 1
    assert provider.vram_peak_mb() == (300.0, "torch.cuda.max_memory_allocated")


def test_ollama_vram_comes_from_api_ps() -> None:
    provider: Any = create_provider("ollama:nomic-embed-text")
    assert provider.vram_peak_mb() == (None, None)
    provider.info["vram_mb"] = 512.0  # what after_run read from /api/ps
    assert provider.vram_peak_mb() == (512.0, "ollama /api/ps")
