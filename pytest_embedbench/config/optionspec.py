"""The pieces of the options table (:mod:`.options`): :class:`OptionSpec` (one option's
flag, ini key, help, parser and kind), :func:`option` (a field of the table) and the value
parsers, which take the text of a flag or an ini key and raise ``argparse.ArgumentTypeError``
with the reason (the table names the option or key around it)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PRIORITIES",
    "OptionSpec",
    "flag_option",
    "option",
    "parse_bytes",
    "path_option",
    "parse_int",
    "parse_models_option",
    "parse_non_negative_float",
    "parse_non_negative_int",
    "parse_positive_int",
    "parse_priority",
    "parse_update_mode",
]

PRIORITIES = ("accuracy", "speed", "balanced", "cost")


def parse_update_mode(value: str) -> str:
    """``--embedbench-update-baseline[=new]``: ``all`` replaces entries, ``new`` only adds."""
    if value not in ("all", "new"):
        raise argparse.ArgumentTypeError(
            f"{value!r}: use --embedbench-update-baseline (all) or --embedbench-update-baseline=new"
        )
    return value


def parse_priority(value: str) -> str:
    if value not in PRIORITIES:
        raise argparse.ArgumentTypeError(f"{value!r}: use one of {list(PRIORITIES)}")
    return value


def parse_models_option(value: str) -> tuple[str, ...]:
    """``--embedbench-models a,b``: comma-separated specs (a hybrid's ``+`` is kept)."""
    specs = tuple(part.strip() for part in value.split(",") if part.strip())
    if not specs:
        raise argparse.ArgumentTypeError(
            f"--embedbench-models {value!r}: give comma-separated model specs, e.g. 'bm25,hf:MODEL'"
        )
    return specs


#: the most threads one level of ``--embedbench-concurrency`` starts (each is an OS thread)
MAX_CONCURRENCY = 1024


def parse_concurrency(value: str) -> tuple[int, ...]:
    """``--embedbench-concurrency 1,4,16``: the thread counts an index's queries are sent from,
    each a whole number >= 1, each once, in the order given."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    levels = []
    for part in parts:
        try:
            level = int(part)
        except ValueError:
            level = 0
        if level < 1:
            raise argparse.ArgumentTypeError(
                f"--embedbench-concurrency {value!r}: {part!r} is not a thread count; give "
                "comma-separated whole numbers >= 1, e.g. '1,4,16'"
            )
        if level > MAX_CONCURRENCY:
            raise argparse.ArgumentTypeError(
                f"--embedbench-concurrency {value!r}: {level} threads is above the "
                f"{MAX_CONCURRENCY} a level may start; give at most {MAX_CONCURRENCY}"
            )
        if level in levels:
            raise argparse.ArgumentTypeError(
                f"--embedbench-concurrency {value!r}: {level} is given twice"
            )
        levels.append(level)
    if not levels:
        raise argparse.ArgumentTypeError(
            f"--embedbench-concurrency {value!r}: give comma-separated thread counts, e.g. '1,4,16'"
        )
    return tuple(levels)


def parse_positive_int(value: str) -> int:
    number = parse_int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number


def parse_non_negative_int(value: str) -> int:
    number = parse_int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be 0 or more")
    return number


def parse_non_negative_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not number >= 0 or number == float("inf"):  # NaN fails ">= 0"
        raise argparse.ArgumentTypeError(f"{value!r} must be a finite number, 0 or more")
    return number


_BYTE_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4}
_BYTE_UNITS.update({"kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4})


def parse_bytes(value: str) -> int:
    """A size: bytes, or a number with a unit (``512MB``, ``2GiB``, ``1.5GB``)."""
    text = str(value).strip().lower().replace(" ", "")
    number = text.rstrip("kmgtib")
    unit = text[len(number) :]
    try:
        size = float(number) * _BYTE_UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a size: give bytes or a number with a unit, e.g. 512MB or 2GiB"
        ) from None
    if not size >= 1 or size == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1 byte")
    return int(size)


def parse_int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None


@dataclass(frozen=True)
class OptionSpec:
    """One option of the table: its flag, ini key, help, parser and kind.

    ``kind`` is ``"value"`` (parsed by ``parse``), ``"path"`` (relative to the folder it was
    given in: the working directory on the command line, the ini file's folder in ini),
    ``"flag"`` (a switch; a bool ini key) or ``"optional"`` (``--flag`` alone means ``const``;
    command line only). ``ini`` is None for an option without an ini key; ``report`` is the
    key of the report's configuration block (default: the field name).
    """

    flag: str
    help: str
    ini: str | None = None
    ini_help: str | None = None
    parse: Callable[[str], Any] = str
    kind: str = "value"
    metavar: str | None = None
    const: str | None = None
    must_exist: bool = False
    report: str | None = None

    @property
    def dest(self) -> str:
        """The argparse destination (``--embedbench-cache-dir`` -> ``embedbench_cache_dir``)."""
        return self.flag.lstrip("-").replace("-", "_")

    def addoption_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``parser.addoption`` for this option."""
        if self.kind == "flag":
            return {"action": "store_true", "default": None, "help": self.help}
        kwargs: dict[str, Any] = {"metavar": self.metavar, "help": self.help}
        if self.kind == "optional":
            kwargs.update(nargs="?", const=self.const)
        if self.parse is not str and self.kind != "path":
            kwargs["type"] = self.parse
        if self.kind == "path":
            kwargs["type"] = self.path_text
        return kwargs

    def path_text(self, value: str) -> str:
        """A path option's text as given on the command line; an empty one
        (``--embedbench-json=``, often an unset shell variable) is refused rather than taken
        for "not given", which would silently write no report."""
        if not value.strip():
            raise argparse.ArgumentTypeError(
                f"{self.flag} {value!r}: an empty path; give a file or folder, e.g. "
                f"{self.flag}={self.metavar or 'PATH'}, or leave the option out"
            )
        return value


def option(default: Any, flag: str, help: str, *, ini: str | None = "", **spec: Any) -> Any:
    """A field of :class:`Options` that is an option of the table: ``flag``, its ``help`` and
    the rest of its :class:`OptionSpec`. Its ini key is the flag's name
    (``--embedbench-cache-dir``: ``embedbench_cache_dir``) unless ``ini`` names another one,
    or is None for an option of the command line only."""
    key = flag.lstrip("-").replace("-", "_") if ini == "" else ini
    return field(default=default, metadata={"option": OptionSpec(flag, help, ini=key, **spec)})


def path_option(flag: str, help: str, *, metavar: str = "PATH", **spec: Any) -> Any:
    """An :func:`option` that names a file or folder (``kind="path"``), None when not given."""
    return option(None, flag, help, kind="path", metavar=metavar, **spec)


def flag_option(flag: str, help: str, **spec: Any) -> Any:
    """An :func:`option` that is a switch (``kind="flag"``), off when not given."""
    return option(False, flag, help, kind="flag", **spec)
