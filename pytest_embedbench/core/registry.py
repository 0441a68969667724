"""A registry of classes by name, the one the providers, the rerankers and the index engines
each keep: filled by decorated classes, by the built-in modules of a folder (imported by name
at the first lookup, so no import runs from a registry back up to the modules it lists) and by
installed packages' entry points.

What differs between the three is a parameter: the ``noun`` its messages use, the base class
an entry point must subclass, the characters a name may not hold, the built-in modules, and how
entry points are read (:meth:`Registry.load_entry_points`: all of the group, each checked and a
failure wrapped; :meth:`Registry.load_entry_point`: only the one asked for, as it is).

Usage::

    registry = Registry[Reranker]("reranker", Reranker, "pytest_embedbench.rerankers")
    register_reranker = registry.register      # a decorator
    registry.lookup("hf-ce")                   # the class, or None
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any, Generic, TypeVar

from .exceptions import ConfigError, ProviderError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Classes of ``base`` by their ``name``: :attr:`classes` (the dict a module hands on as
    its ``PROVIDERS``, ``RERANKERS`` ...). ``builtins`` are module names under ``package``,
    imported once by :meth:`load_builtins`. ``base`` is an abstract class, so the type is
    given apart: ``Registry[Base]("noun", Base, group)``."""

    def __init__(
        self,
        noun: str,
        base: type,
        group: str,
        *,
        reserved: str = ":",
        package: str | None = None,
        builtins: tuple[str, ...] = (),
    ) -> None:
        self.noun = noun
        self.base = base
        self.group = group
        self.reserved = reserved
        self.package = package
        self.builtins = builtins
        self.classes: dict[str, type[T]] = {}
        self._builtins_loaded = False

    def register(self, cls: type[T]) -> type[T]:
        """Register ``cls`` under ``cls.name`` (usable as a decorator)."""
        name: str = cls.name  # type: ignore[attr-defined]
        if not name or any(c in name for c in self.reserved):
            raise ConfigError(
                f"{self.noun} class {cls.__name__} needs a 'name' without '{self.reserved}'"
            )
        self.classes[name] = cls
        return cls

    def load_builtins(self) -> None:
        """Import the built-in modules once, so they register."""
        if self._builtins_loaded:
            return
        for module in self.builtins:
            importlib.import_module(f".{module}", self.package)
        self._builtins_loaded = True

    def load_entry_points(self) -> None:
        """Register every class of the entry point group (a registered name is never
        replaced); one that fails to load, or is no subclass of ``base``, is a ProviderError
        naming it."""
        for ep in metadata.entry_points(group=self.group):
            try:
                cls: Any = ep.load()
            except Exception as exc:  # a broken third-party plugin must not break the others
                raise ProviderError(
                    f"{self.noun} entry point {ep.name!r} ({ep.value}) failed to load: {exc}"
                ) from exc
            subclass = isinstance(cls, type) and issubclass(cls, self.base)
            if not subclass:
                raise ProviderError(
                    f"{self.noun} entry point {ep.name!r} ({ep.value}) is not a "
                    f"{self.base.__name__} subclass"
                )
            self.classes.setdefault(ep.name, cls)

    def load_entry_point(self, name: str) -> None:
        """Load only the entry points called ``name`` and :meth:`register` what they hold,
        under its own ``name``: a load error goes through as it is."""
        for ep in metadata.entry_points(group=self.group):
            if ep.name == name:
                loaded: Any = ep.load()
                self.register(loaded)

    def lookup(self, name: str) -> type[T] | None:
        """The class registered as ``name`` after the built-ins, with every entry point
        scanned when it is not registered; None when none is."""
        self.load_builtins()
        if name not in self.classes:
            self.load_entry_points()
        return self.classes.get(name)

    def names(self) -> list[str]:
        """Every registered name after the built-ins, sorted (for errors)."""
        self.load_builtins()
        return sorted(self.classes)
