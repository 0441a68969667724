"""The provider registry: provider name -> class, filled by the built-in modules and by
installed packages' entry points.

The registry (a :class:`~pytest_embedbench.core.registry.Registry`) knows the built-in families
by module name (its ``builtins``), not by import, the way it knows third-party providers by
entry point: each family module imports this one to register its classes, and this one imports
them only by name, the first time a provider is looked up. So no import runs from the registry
back up to the families.

Usage::

    @register_provider
    class EchoProvider(EmbeddingProvider):
        name = "echo"
        ...

    create_provider("echo:tiny")       # an EchoProvider for model "tiny", not yet loaded
    provider_class("ech")              # UnknownProviderError: ... Did you mean 'echo'? ...

Providers from other packages register through the ``pytest_embedbench.providers`` entry point
group (``name = "package.module:ProviderClass"``); the group is scanned when a name is unknown.
"""

from __future__ import annotations

from ...core.exceptions import UnknownProviderError, did_you_mean
from ...core.registry import Registry
from .base import Provider
from .spec import ModelSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROVIDERS",
    "create_provider",
    "provider_class",
    "register_provider",
]

ENTRY_POINT_GROUP = "pytest_embedbench.providers"

#: the built-in provider modules of this package, one per family; each registers its classes
#: when imported (their SDKs load lazily, so importing them all is cheap)
_REGISTRY = Registry[Provider](
    "provider",
    Provider,
    ENTRY_POINT_GROUP,
    package=__package__,
    builtins=("bedrock", "cohere", "hf", "lexical", "ollama", "openai", "voyage"),
)

#: provider name -> class; filled by the built-in modules and entry points
PROVIDERS: dict[str, type[Provider]] = _REGISTRY.classes

#: register a provider class under ``cls.name`` (usable as a decorator)
register_provider = _REGISTRY.register

#: register providers from installed packages' entry points (scanned on an unknown name)
load_entry_points = _REGISTRY.load_entry_points


def provider_class(name: str) -> type[Provider]:
    """The class registered as ``name``; an unknown name lists the known ones and the
    nearest match."""
    cls = _REGISTRY.lookup(name)
    if cls is None:
        raise UnknownProviderError(
            f"unknown provider {name!r}{did_you_mean(name, PROVIDERS) or '.'} "
            f"Known providers: {sorted(PROVIDERS)}. Write specs as 'provider:model', "
            "e.g. 'hf:sentence-transformers/all-MiniLM-L6-v2'"
        )
    return cls


def create_provider(spec: str | ModelSpec) -> Provider:
    """A provider instance for a spec string or :class:`ModelSpec` (not yet loaded)."""
    model_spec = ModelSpec.coerce(spec)
    cls = provider_class(model_spec.provider)
    return cls(model_spec.model, **model_spec.options)


def has_vectors(spec: ModelSpec) -> bool:
    """Whether ``spec``'s model embeds (so an index axis applies); a lexical model, a ranker
    or a hybrid runs once, on its own search."""
    from .base import EmbeddingProvider

    try:
        return issubclass(provider_class(spec.provider), EmbeddingProvider)
    except UnknownProviderError:
        return False
