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

from ...core.registry import Registry
from .base import Reranker

__all__ = [
    "RERANKERS",
    "RERANKER_ENTRY_POINT_GROUP",
    "load_reranker_entry_points",
    "register_reranker",
    "reranker_class",
]

RERANKER_ENTRY_POINT_GROUP = "pytest_embedbench.rerankers"

#: the built-in reranker modules of this folder; each registers its classes when imported
_REGISTRY = Registry[Reranker](
    "reranker",
    Reranker,
    RERANKER_ENTRY_POINT_GROUP,
    reserved=":@=/",
    package=__package__,
    builtins=("crossencoder",),
)

#: family name -> class; the built-in rerankers and those of entry points
RERANKERS: dict[str, type[Reranker]] = _REGISTRY.classes

#: register a reranker class under ``cls.name`` (usable as a decorator)
register_reranker = _REGISTRY.register

#: register rerankers from installed packages' entry points (a built-in is never replaced);
#: a broken one is a ProviderError naming it
load_reranker_entry_points = _REGISTRY.load_entry_points

#: the reranker class registered as ``name`` (entry points scanned when it is not), or None:
#: the caller decides whether ``name`` is an embedding provider instead
reranker_class = _REGISTRY.lookup

#: every registered family, sorted (for errors)
reranker_names = _REGISTRY.names
