"""Reranker specs: ``[name=]family[:model][@depth[,depth...]]``, and the reranking axis as a
marker, embedbench.yaml or ``--embedbench-rerankers`` gives it::

    none                                           # the first stage alone, a row of its own
    hf:sentence-transformers/all-MiniLM-L6-v2@100  # rescore the top 100 with MiniLM's vectors
    hf-ce:/models/my-cross-encoder@50              # a sentence-transformers CrossEncoder folder
    hf-ce:/models/ce@10,20,50,100                  # a depth sweep: one test per depth
    fast=hf-ce:/models/ce@20                       # named: the test id shows "fast"

Without ``@`` a reranker takes the top :data:`DEFAULT_DEPTH`. The family is a registered
reranker (:mod:`.registry`) or an embedding provider (the bi-encoder rescorer); which one is
decided a floor up, where the providers are known. A :class:`~.base.Reranker` object is a spec
too (``rerankers=[Reversed(depth=20)]``).

Usage::

    (spec,) = parse_rerankers(["hf-ce:/models/ce@50"], "here")
    spec.family, spec.model, spec.depth, spec.id    # 'hf-ce', '/models/ce', 50, 'ce-top50'
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.exceptions import ConfigError
from ...core.names import repeated
from .base import Reranker

__all__ = [
    "DEFAULT_DEPTH",
    "NONE",
    "RerankerSpec",
    "parse_rerankers",
    "parse_rerankers_option",
]

#: how deep a reranker without ``@depth`` reranks (the "rerank BM25's top 100" protocol)
DEFAULT_DEPTH = 100

_NAME = re.compile(r"^([A-Za-z0-9_.-]+)=(.+)$")
_DEPTHS = re.compile(r"^\s*\d+\s*(,\s*\d+\s*)*$")


@dataclass(frozen=True)
class RerankerSpec:
    """One reranker at one depth: its ``family`` (``none``, ``hf-ce``, a provider name ...),
    ``model``, ``depth``, the ``name`` the user gave it, and the Python object the marker gave
    (``obj``; None for a spec string)."""

    family: str
    model: str = ""
    depth: int = DEFAULT_DEPTH
    name: str | None = None
    obj: Reranker | None = None
    #: the reranker's options (``providers:`` of embedbench.yaml, by family and by name:
    #: base_url, api_key, max_retries ...), as sorted pairs
    options: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    @property
    def is_none(self) -> bool:
        """The first stage alone (``"none"``)."""
        return self.family == "none"

    @property
    def spec(self) -> str:
        """``family:model`` without the depth (what builds the reranker)."""
        return f"{self.family}:{self.model}" if self.model else self.family

    @property
    def text(self) -> str:
        """The spec with its depth, as a user writes it."""
        return self.spec if self.is_none else f"{self.spec}@{self.depth}"

    @property
    def short_name(self) -> str:
        if self.obj is not None:
            return self.obj.short_name
        tail = self.model.rstrip("/").rsplit("/", 1)[-1] if self.model else ""
        return tail or self.family

    @property
    def id(self) -> str:
        """What the pytest id shows (``bm25-all-MiniLM-L6-v2-top100``): the name, else the short
        name and the depth (``-top100``, not ``@100``: ``pytest -k`` reads no ``@``, so
        ``-k top100`` selects a depth and ``-k MiniLM`` a reranker); ``none`` for the first
        stage alone."""
        if self.is_none:
            return "none"
        return self.name or f"{self.short_name}-top{self.depth}"

    def __str__(self) -> str:
        return self.text


NONE = RerankerSpec("none")


def _depths(text: str, raw: str, where: str) -> list[int]:
    if not _DEPTHS.match(text):
        raise ConfigError(
            f"{where}: reranker {raw!r}: the depth after '@' must be whole numbers >= 1 "
            "separated by commas, e.g. 'hf-ce:/models/ce@100' or '...@10,20,50,100'"
        )
    depths = [int(part) for part in text.split(",")]
    bad = [d for d in depths if d < 1]
    if bad:
        raise ConfigError(f"{where}: reranker {raw!r}: depth {bad[0]} must be >= 1, e.g. @100")
    if len(set(depths)) != len(depths):
        raise ConfigError(f"{where}: reranker {raw!r}: a depth is given twice")
    return depths


def _parse_one(raw: Any, where: str) -> list[RerankerSpec]:
    """The specs one item stands for (several for a depth sweep)."""
    if isinstance(raw, RerankerSpec):
        return [raw]
    if isinstance(raw, Reranker):
        depth = raw.depth if raw.depth is not None else DEFAULT_DEPTH
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise ConfigError(
                f"{where}: reranker {raw.describe()} has depth={depth!r}; give a whole "
                "number >= 1, e.g. depth=100"
            )
        return [RerankerSpec(raw.name or type(raw).__name__, raw.model, depth, obj=raw)]
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError(
            f"{where}: reranker {raw!r}: give a spec string such as 'none', "
            "'hf:sentence-transformers/all-MiniLM-L6-v2@100' or 'hf-ce:/path/to/model@50', or "
            "a Reranker object"
        )
    text = raw.strip()
    name = None
    named = _NAME.match(text)
    if named is not None and ":" not in named.group(1):
        name, text = named.group(1), named.group(2).strip()
    body, at, tail = text.rpartition("@")
    if not at:
        body, depths = text, None
    else:
        depths = _depths(tail, raw, where)
    family, _, model = body.partition(":")
    family, model = family.strip(), model.strip()
    if not family or not re.match(r"^[A-Za-z][\w.-]*$", family):
        raise ConfigError(
            f"{where}: reranker {raw!r} is not [name=]family[:model][@depth], e.g. "
            "'hf-ce:/models/ce@100'"
        )
    if family == "none":
        if model or depths:
            raise ConfigError(
                f"{where}: reranker {raw!r}: 'none' (the first stage alone) takes no model "
                "and no depth; write 'none'"
            )
        return [NONE]
    if depths is None:
        depths = [DEFAULT_DEPTH]
    if name is not None and len(depths) > 1:
        return [RerankerSpec(family, model, d, f"{name}-top{d}") for d in depths]
    return [RerankerSpec(family, model, d, name) for d in depths]


def parse_rerankers(raw: Any, where: str) -> tuple[RerankerSpec, ...]:
    """The reranking axis (a spec, a list of specs and Reranker objects, or None for none),
    each test id at most once; a ConfigError names ``where``."""
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, (str, Reranker, RerankerSpec)) else raw
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise ConfigError(
            f"{where}: expected a list of reranker specs, got {raw!r}; e.g. "
            "['none', 'hf-ce:/models/ce@100']"
        )
    specs = [s for i, item in enumerate(items) for s in _parse_one(item, f"{where}[{i}]")]
    dupes = repeated(s.id for s in specs)
    if dupes:
        raise ConfigError(
            f"{where}: reranker(s) {dupes} appear more than once; give each a distinct name "
            "with 'name=spec'"
        )
    return tuple(specs)


def parse_rerankers_option(value: str) -> tuple[str, ...]:
    """``--embedbench-rerankers none,hf-ce:/models/ce@10,20,50``: comma-separated specs (the
    numbers after a spec's ``@`` are its depth sweep), checked; a bad one raises
    ``argparse.ArgumentTypeError`` naming the option, the value and the fix."""
    parts: list[str] = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        if part.isdigit() and parts and "@" in parts[-1]:
            parts[-1] += f",{part}"  # a depth of the sweep before it
        else:
            parts.append(part)
    if not parts:
        raise argparse.ArgumentTypeError(
            f"--embedbench-rerankers {value!r}: give comma-separated reranker specs, e.g. "
            "'none,hf-ce:/models/ce@100'"
        )
    try:
        parse_rerankers(parts, "--embedbench-rerankers")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return tuple(parts)
