"""Names given in settings: the keys a mapping may hold (a yaml block, a marker's keywords, a
provider's options), checked in one way that names every unknown key, the nearest allowed one
and all of them; and the names a list gives more than once (models, indexes, rerankers).

Usage::

    check_keys(raw, {"models", "datasets"}, f"{path}: unknown key(s)", "allowed:")
    # ConfigError: embedbench.yaml: unknown key(s) ['modles'] (did you mean 'models'?);
    #   allowed: ['datasets', 'models']
    repeated(["bm25", "hf", "bm25"])    # ['bm25']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from typing import Any

from .exceptions import ConfigError, unknown_hint

__all__ = ["check_keys", "repeated"]


def check_keys(given: Iterable[Any], allowed: Collection[str], said: str, accepts: str) -> None:
    """A ConfigError ``"{said} [unknown keys]{did you mean}; {accepts} [allowed keys]"`` (both
    lists sorted) when ``given`` holds a key that ``allowed`` does not; nothing otherwise."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{said} {unknown}{unknown_hint(unknown, allowed)}; {accepts} {sorted(allowed)}"
        )


def repeated(names: Iterable[str]) -> list[str]:
    """The names that ``names`` holds more than once, sorted (empty when each is once)."""
    return sorted(name for name, count in Counter(names).items() if count > 1)
