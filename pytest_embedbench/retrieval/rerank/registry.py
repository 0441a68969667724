"""The reranker registry: family name -> :class:`~.base.Reranker` class, filled by the built-in
modules of this folder and by installed packages' entry points, as the providers' registry is.

Usage::

    @register_reranker
    class Reversed(Reranker):
        name = "reversed"
        ...

    reranker_class("hf-ce")     # CrossEncoderReranker
    reranker_class("hf")        # None: not a reranker family (an embedding provider rescores)

Rerankers from other packages register through the ``pytest_embedbench.rerankers`` entry point
group (``name = "package.module:RerankerClass"``), scanned when a name is not registered.
The bi-encoder rescorer is no family of its own: a spec naming an embedding provider (``hf:``,
``openai:`` ...) rescores with that provider's vectors (see
:mod:`pytest_embedbench.evaluation.reranked`, which knows the providers).
"""

from __future__ import annotations

import importlib
from importlib import metadata

from ...core.exceptions import ConfigError, ProviderError
from .base import Reranker

__all__ = [
    "RERANKERS",
    "RERANKER_ENTRY_POINT_GROUP",
    "load_reranker_entry_points",
    "register_reranker",
    "reranker_class",
]

RERANKER_ENTRY_POINT_GROUP = "pytest_embedbench.rerankers"

#: family name -> class; the built-in rerankers and those of entry points
RERANKERS: dict[str, type[Reranker]] = {}

#: the built-in reranker modules of this folder; each registers its classes when imported
_BUILTIN_MODULES: tuple[str, ...] = ("crossencoder",)
_builtins_loaded = False


def register_reranker(cls: type[Reranker]) -> type[Reranker]:
    """Register a reranker class under ``cls.name`` (usable as a decorator)."""
    if not cls.name or any(c in cls.name for c in ":@=/"):
        raise ConfigError(f"reranker class {cls.__name__} needs a 'name' without ':@=/'")
    RERANKERS[cls.name] = cls
    return cls


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    for module in _BUILTIN_MODULES:
        importlib.import_module(f".{module}", __package__)
    _builtins_loaded = True


def load_reranker_entry_points() -> None:
    """Register rerankers from installed packages' entry points (a built-in is never
    replaced); a broken one is a ProviderError naming it."""
    for ep in metadata.entry_points(group=RERANKER_ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party plugin must not break the others
            raise ProviderError(
                f"reranker entry point {ep.name!r} ({ep.value}) failed to load: {exc}"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, Reranker)):
            raise ProviderError(
                f"reranker entry point {ep.name!r} ({ep.value}) is not a Reranker subclass"
            )
        RERANKERS.setdefault(ep.name, cls)


def reranker_class(name: str) -> type[Reranker] | None:
    """The reranker class registered as ``name`` (entry points scanned when it is not), or
    None: the caller decides whether ``name`` is an embedding provider instead."""
    _load_builtins()
    if name not in RERANKERS:
        load_reranker_entry_points()
    return RERANKERS.get(name)


def reranker_names() -> list[str]:
    """Every registered family, sorted (for errors)."""
    _load_builtins()
    return sorted(RERANKERS)
