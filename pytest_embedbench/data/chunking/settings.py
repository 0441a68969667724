"""Chunking settings: :class:`ChunkingSettings` and the one validator of their values (yaml,
the marker, generate-evalset, the API all go through :func:`_check_values`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

from ...core.exceptions import ConfigError, did_you_mean

Strategy = Literal["fixed", "sentence", "recursive"]
Unit = Literal["chars", "tokens"]

#: keys other tools use for the same thing (embedbench's chunk_size, LangChain's chunk_overlap)
_ALIASES = {"chunk_size": "size", "chunk_overlap": "overlap", "min_chars": "min_chunk_chars"}


@dataclass(frozen=True)
class ChunkingSettings:
    """What ``chunking:`` in embedbench.yaml (or the marker's ``chunking=``) says.

    Checked when built: a bad value is a :class:`~pytest_embedbench.exceptions.ConfigError`
    naming the field. :meth:`from_mapping` reads a YAML mapping and names its keys.
    """

    strategy: Strategy = "recursive"
    size: int = 800
    overlap: int = 120
    unit: Unit = "chars"
    min_chunk_chars: int = 80
    tokenizer: str | None = None  # a tokenizer.json path or name, for unit="tokens"

    def __post_init__(self) -> None:
        self.check("ChunkingSettings")

    def check(self, where: str) -> None:
        """Raise a ConfigError naming ``where`` and the field for the first bad value."""
        _check_values(self.as_dict(), where)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None, where: str) -> ChunkingSettings:
        """Settings from a YAML mapping; ``where`` ("embedbench.yaml: chunking") starts every
        error, which names the key, the value and the fix. Missing keys take the defaults.

        Usage::

            ChunkingSettings.from_mapping({"strategy": "sentence", "size": 400}, "chunking")
        """
        if mapping is None:
            return cls()
        if not isinstance(mapping, Mapping):
            raise ConfigError(
                f"{where}: expected a mapping of {', '.join(_FIELDS)}, got {mapping!r}"
            )
        unknown = sorted(str(key) for key in mapping if key not in _FIELDS)
        if unknown:
            first = unknown[0]
            hint = (
                f"; did you mean {_ALIASES[first]!r}?"
                if first in _ALIASES
                else did_you_mean(first, _FIELDS)
            )
            raise ConfigError(
                f"{where}: unknown key(s) {unknown}{hint or '.'} Allowed: {sorted(_FIELDS)}"
            )
        values = {**cls().as_dict(), **mapping}
        if values.get("unit") == "characters":
            values["unit"] = "chars"
        _check_values(values, where)
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain data (for fingerprints and reports)."""
        return asdict(self)


#: the keys of ``chunking:``, the fields in order
_FIELDS = tuple(f.name for f in fields(ChunkingSettings))


def _check_values(values: Mapping[str, Any], where: str) -> None:
    """Raise a ConfigError naming ``where.field``, its value and the fix for the first bad one
    (the one validator of chunking settings: yaml, the marker, generate-evalset, the API)."""
    for name, choices in (("strategy", get_args(Strategy)), ("unit", get_args(Unit))):
        value = values[name]
        if value not in choices:
            raise ConfigError(
                f"{where}.{name}: {value!r} is not a chunking {name}"
                f"{did_you_mean(str(value), choices) or '.'} Choose one of {sorted(choices)}"
            )
    unit = "characters" if values["unit"] == "chars" else "tokens"
    for name, low, meaning in (
        ("size", 1, f"the most {unit} a chunk holds"),
        ("overlap", 0, f"the {unit} two neighbouring chunks share"),
        ("min_chunk_chars", 0, "the fewest characters a chunk keeps"),
    ):
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(
                f"{where}.{name}: {value!r} must be a whole number >= {low} ({meaning}), "
                f"e.g. {name}: {ChunkingSettings.__dataclass_fields__[name].default}"
            )
    if values["overlap"] >= values["size"]:
        raise ConfigError(
            f"{where}.overlap: {values['overlap']!r} is not below size {values['size']!r}; "
            "a chunk would repeat the one before it: make overlap smaller than size "
            "(a tenth to a fifth of it is usual)"
        )
    tokenizer = values["tokenizer"]
    if tokenizer is not None and (not isinstance(tokenizer, str) or not tokenizer):
        raise ConfigError(
            f"{where}.tokenizer: {tokenizer!r}: give a path to a tokenizer.json (or to the "
            "folder holding it) or a packaged model name such as 'all-MiniLM-L6-v2', or leave "
            "it out to count in the model's own tokens"
        )
