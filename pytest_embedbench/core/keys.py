"""The keys a mapping of settings may hold (a yaml block, a marker's keywords, a provider's
options): one check that names every unknown key, the nearest allowed one, and all of them.

Usage::

    check_keys(raw, {"models", "datasets"}, f"{path}: unknown key(s)", "allowed:")
    # ConfigError: embedbench.yaml: unknown key(s) ['modles'] (did you mean 'models'?);
    #   allowed: ['datasets', 'models']
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from .exceptions import ConfigError, unknown_hint

__all__ = ["check_keys"]


def check_keys(given: Iterable[Any], allowed: Collection[str], said: str, accepts: str) -> None:
    """A ConfigError ``"{said} [unknown keys]{did you mean}; {accepts} [allowed keys]"`` (both
    lists sorted) when ``given`` holds a key that ``allowed`` does not; nothing otherwise."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{said} {unknown}{unknown_hint(unknown, allowed)}; {accepts} {sorted(allowed)}"
        )
