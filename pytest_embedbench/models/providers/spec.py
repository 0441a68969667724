"""Model specs and their fingerprints.

A model is named by a spec string ``provider:model`` (``hf:sentence-transformers/all-MiniLM-L6-v2``,
``bm25``, ``hybrid:A+B``) or a :class:`ModelSpec` that adds a display name and options::

    spec = ModelSpec("hf:intfloat/e5-small-v2", name="e5", query_prefix="query: ")
    spec.provider, spec.model, spec.short_name     # 'hf', 'intfloat/e5-small-v2', 'e5'
    spec_fingerprint(spec, (10, 100))   # 16 hex digits, changed by what changes numbers

Fingerprints hash :func:`stable_json` (sorted keys, compact), so they do not depend on the order
options were given in, and leave out the options that never change a number
(:data:`NO_NUMBER_OPTIONS`: keys, retries, batch sizes...).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.exceptions import ConfigError

__all__ = [
    "NO_NUMBER_OPTIONS",
    "SECRET_OPTIONS",
    "ModelSpec",
    "fingerprint",
    "number_options",
    "spec_fingerprint",
    "split_hybrid",
    "stable_json",
]

#: options that never change a vector, so they stay out of cache namespaces and fingerprints
NO_NUMBER_OPTIONS = frozenset(
    {
        "api_key",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "backoff",
        "batch_size",
        "device",
        "index_backend",
        "keep_alive",
        "max_concurrency",
        "max_retries",
        "price_per_1m_tokens",
        "profile",
        "show_progress",
        "timeout",
    }
)
#: option names whose values are never shown
SECRET_OPTIONS = frozenset(
    {"api_key", "aws_access_key_id", "aws_secret_access_key", "aws_session_token"}
)


def stable_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys (``repr`` for what JSON cannot hold)."""
    return json.dumps(value, sort_keys=True, default=repr, separators=(",", ":"))


def fingerprint(value: Any, length: int = 16) -> str:
    """The first ``length`` hex digits of the SHA-256 of :func:`stable_json` of ``value``."""
    return hashlib.sha256(stable_json(value).encode()).hexdigest()[:length]


def number_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that may change numbers (all but :data:`NO_NUMBER_OPTIONS`), sorted."""
    return {k: v for k, v in sorted(options.items()) if k not in NO_NUMBER_OPTIONS}


def spec_fingerprint(spec: ModelSpec, k: Iterable[int]) -> str:
    """What changes numbers besides the data and the weights: the spec string, the options
    that change numbers, and the cut-offs ``k``. The display name does not count."""
    return fingerprint({"spec": spec.spec, "options": number_options(spec.options), "k": list(k)})


@dataclass(frozen=True)
class ModelSpec:
    """A model spec string plus a display name and provider options.

    Usage::

        ModelSpec("hf:intfloat/e5-small-v2", name="e5", query_prefix="query: ",
                  document_prefix="passage: ")
    """

    spec: str
    name: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, spec: str | ModelSpec, name: str | None = None, **options: Any) -> None:
        if isinstance(spec, ModelSpec):
            merged = {**spec.options, **options}
            name = name or spec.name
            spec = spec.spec
        else:
            merged = dict(options)
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(f"model spec {spec!r} must be a non-empty string like 'hf:MODEL'")
        object.__setattr__(self, "spec", spec.strip())
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "options", dict(merged))

    @classmethod
    def coerce(cls, value: str | ModelSpec) -> ModelSpec:
        """A ModelSpec from a spec string or a ModelSpec."""
        return value if isinstance(value, ModelSpec) else cls(value)

    @property
    def provider(self) -> str:
        """The registry key: the part before the first ``:`` (``bm25`` for plain ``bm25``)."""
        return self.spec.split(":", 1)[0].strip().lower()

    @property
    def model(self) -> str:
        """The provider's model id: the part after the first ``:`` ("" when there is none)."""
        return self.spec.split(":", 1)[1].strip() if ":" in self.spec else ""

    @property
    def short_name(self) -> str:
        """The display name and pytest id: ``name`` if given, else derived from the spec."""
        if self.name:
            return self.name
        if self.provider == "hybrid":
            left, right = split_hybrid(self.model)
            return f"hybrid-{ModelSpec(left).short_name}+{ModelSpec(right).short_name}"
        if not self.model:
            return self.provider
        return self.model.rstrip("/").split("/")[-1]

    def __str__(self) -> str:
        return self.short_name

    def __repr__(self) -> str:
        shown = {k: ("***" if k in SECRET_OPTIONS else v) for k, v in self.options.items()}
        extra = "".join(f", {k}={v!r}" for k, v in sorted(shown.items()))
        name = f", name={self.name!r}" if self.name else ""
        return f"ModelSpec({self.spec!r}{name}{extra})"

    def __hash__(self) -> int:
        return hash((self.spec, self.name, stable_json(self.options)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelSpec):
            return NotImplemented
        return (self.spec, self.name, stable_json(self.options)) == (
            other.spec,
            other.name,
            stable_json(other.options),
        )


def split_hybrid(model: str) -> tuple[str, str]:
    """``"A+B"`` into ``("A", "B")``; a clear error when either side is missing."""
    left, sep, right = model.partition("+")
    if not sep or not left.strip() or not right.strip():
        raise ConfigError(
            f"hybrid spec 'hybrid:{model}' needs two models joined by '+', "
            "e.g. 'hybrid:hf:sentence-transformers/all-MiniLM-L6-v2+bm25'"
        )
    return left.strip(), right.strip()
