"""The provider registry: provider name -> class, filled by the built-in modules and by
installed packages' entry points.

The registry knows the built-in families by module name (:data:`_BUILTIN_MODULES`), not by
import, the way it knows third-party providers by entry point: each family module imports this
one to register its classes, and this one imports them only by name, the first time a provider
is looked up. So no import runs from the registry back up to the families.

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

import importlib
from importlib import metadata

from ...core.exceptions import ConfigError, ProviderError, UnknownProviderError, did_you_mean
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

#: provider name -> class; filled by the built-in modules and entry points
PROVIDERS: dict[str, type[Provider]] = {}

#: the built-in provider modules of this package, one per family; each registers its classes
#: when imported (their SDKs load lazily, so importing them all is cheap)
_BUILTIN_MODULES: tuple[str, ...] = (
    "bedrock",
    "cohere",
    "hf",
    "lexical",
    "ollama",
    "openai",
    "voyage",
)
_builtins_loaded = False


def register_provider(cls: type[Provider]) -> type[Provider]:
    """Register a provider class under ``cls.name`` (usable as a decorator)."""
    if not cls.name or ":" in cls.name:
        raise ConfigError(f"provider class {cls.__name__} needs a 'name' without ':'")
    PROVIDERS[cls.name] = cls
    return cls


def _load_builtins() -> None:
    """Import the built-in provider modules once, so they register."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    for module in _BUILTIN_MODULES:
        importlib.import_module(f".{module}", __package__)
    _builtins_loaded = True


def load_entry_points() -> None:
    """Register providers from installed packages' entry points (scanned on an unknown name)."""
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party plugin must not break the others
            raise ProviderError(
                f"provider entry point {ep.name!r} ({ep.value}) failed to load: {exc}"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, Provider)):
            raise ProviderError(
                f"provider entry point {ep.name!r} ({ep.value}) is not a Provider subclass"
            )
        PROVIDERS.setdefault(ep.name, cls)  # a built-in name is never replaced


def provider_class(name: str) -> type[Provider]:
    """The class registered as ``name``; an unknown name lists the known ones and the
    nearest match."""
    _load_builtins()
    if name not in PROVIDERS:
        load_entry_points()
    try:
        return PROVIDERS[name]
    except KeyError:
        raise UnknownProviderError(
            f"unknown provider {name!r}{did_you_mean(name, PROVIDERS) or '.'} "
            f"Known providers: {sorted(PROVIDERS)}. Write specs as 'provider:model', "
            "e.g. 'hf:sentence-transformers/all-MiniLM-L6-v2'"
        ) from None


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
