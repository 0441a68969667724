"""Index specs: ``engine[:kind][(name=value, ...)]``, parsed and checked against the engine's
kinds and parameters (its did-you-mean names the closest), and the index axis as a marker,
embedbench.yaml or ``--embedbench-indexes`` gives it (a list, ``name=spec`` items or a mapping)::

    exact                                  # the exact inner-product search (ExactIndex)
    faiss:hnsw(M=32,efSearch=64)           # faiss.index_factory("HNSW32,Flat"), efSearch 64
    faiss:ivf(nlist=256,nprobe=8)          # "IVF256,Flat", 8 lists probed
    faiss:ivfpq(nlist=64,m=8,nbits=8)      # "IVF64,PQ8x8"
    faiss:flat                             # "Flat": exact, by FAISS alone
    lancedb:ivf_flat(num_partitions=8)     # LanceDB, embedded (extra "lancedb")
    chroma:hnsw(max_neighbors=32,ef_search=64)  # Chroma, embedded (extra "chroma")
    exact+int8                             # any of them with a width or precision after '+'
    faiss:hnsw(M=16)+dim=256+binary(rescore=4)  # (see .precision)

Usage::

    spec = IndexSpec.parse("faiss:hnsw(M=32, efSearch=64)", "here")
    spec.spec                                   # 'faiss:hnsw(M=32,efSearch=64)'
    named_indexes(["exact", "prod=faiss:ivf(nlist=8)"], "here")   # ((None, exact), ('prod', ...))
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.exceptions import ConfigError, did_you_mean
from ...core.names import repeated
from .precision import Sizing, parse_sizing
from .registry import index_class

__all__ = [
    "EXACT",
    "IndexSpec",
    "named_indexes",
    "parse_indexes",
    "parse_indexes_option",
    "split_top",
]

_SPEC = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*(?::\s*([A-Za-z][\w-]*))?\s*(?:\((.*)\))?\s*$")


@dataclass(frozen=True)
class IndexSpec:
    """A parsed index spec: engine, kind and parameters; ``spec`` is its canonical string
    (what the pytest id shows, so ``pytest -k hnsw`` selects the HNSW tests)."""

    engine: str
    kind: str = ""
    params: tuple[tuple[str, Any], ...] = ()
    #: the vectors' width and precision (``+dim=256+int8``), the model's float32 by default
    sizing: Sizing = Sizing()
    #: embedbench.yaml's ``index_engines:`` settings of the engine (a database's DSN): where
    #: it runs, not what it builds, so neither in the spec string nor in the test id
    settings: tuple[tuple[str, Any], ...] = field(default=(), compare=False, repr=False)

    @property
    def spec(self) -> str:
        head = f"{self.engine}:{self.kind}" if self.kind else self.engine
        if self.params:
            head += "(" + ",".join(f"{k}={v}" for k, v in self.params) + ")"
        return head + self.sizing.text

    @property
    def id(self) -> str:
        return self.spec

    def __str__(self) -> str:
        return self.spec

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    def with_settings(self, settings: Mapping[str, Any] | None, where: str) -> IndexSpec:
        """This spec with the engine's settings (``where``: the file and key they come from)."""
        if not settings:
            return self
        return replace(self, settings=(*sorted(settings.items()), ("where", where)))

    @property
    def is_exact(self) -> bool:
        return self.engine == "exact" and not self.sizing

    @classmethod
    def parse(cls, raw: Any, where: str) -> IndexSpec:
        """``raw`` (a spec string or an IndexSpec), checked against the registered engine's
        kinds and parameters; a ConfigError names ``where`` and the fix."""
        if isinstance(raw, IndexSpec):
            return raw
        if not isinstance(raw, str):
            raise ConfigError(
                f"{where}: index {raw!r}: give a spec string such as 'exact' or "
                "'faiss:hnsw(M=32,efSearch=64)'"
            )
        head, *sized = split_top(raw, "+")
        match = _SPEC.match(head)
        if match is None:
            raise ConfigError(
                f"{where}: index {raw!r} is not engine[:kind][(name=value,...)], e.g. "
                "'faiss:ivf(nlist=256,nprobe=8)'"
            )
        engine, kind, body = match.group(1), match.group(2) or "", match.group(3)
        cls_ = index_class(engine, where)
        if kind not in cls_.kinds:
            kinds = sorted(k for k in cls_.kinds if k)
            raise ConfigError(
                f"{where}: index {raw!r}: engine {engine!r} has no kind {kind or '(none)'!r}"
                f"{did_you_mean(kind, kinds) or '.'} Kinds: {kinds}"
            )
        params: list[tuple[str, Any]] = []
        for part in (body or "").split(","):
            if not part.strip():
                continue
            name, eq, value = part.partition("=")
            name = name.strip()
            allowed = cls_.kinds[kind]
            if eq and name in cls_.renamed and cls_.renamed[name] in allowed:
                raise ConfigError(
                    f"{where}: index {raw!r}: {engine} now calls {name!r} "
                    f"{cls_.renamed[name]!r}: give {cls_.renamed[name]}={value.strip()}"
                )
            if not eq or name not in allowed:
                raise ConfigError(
                    f"{where}: index {raw!r}: {part.strip()!r} is not a parameter of "
                    f"{engine}:{kind}{did_you_mean(name, allowed) or '.'} "
                    f"Parameters: {sorted(allowed)} as name=value"
                )
            if name in dict(params):
                raise ConfigError(f"{where}: index {raw!r}: {name} is given twice")
            real = name in cls_.real_params
            params.append((name, _value(name, value.strip(), real=real, raw=raw, where=where)))
        return cls(engine, kind, tuple(params), parse_sizing(sized, engine, raw, where, kind))


def _value(name: str, text: str, *, real: bool, raw: str, where: str) -> int | float:
    """A parameter's value: an integer >= 1 (sizes, counts, list and neighbour numbers: every
    engine parameter), or for the engine's ``real_params`` a number > 0 (Chroma's
    ``resize_factor``); anything else is a ConfigError naming the parameter's type and the
    fix, before an engine's ``int()`` fails when the test runs."""
    if not text:
        raise ConfigError(
            f"{where}: index {raw!r}: a parameter has no value ({name}=); give {name}=NUMBER"
        )
    number: int | float | None
    try:
        number = int(text)
    except ValueError:
        try:
            number = float(text) if real else None
        except ValueError:
            number = None
    if real and number is not None and number > 0 and math.isfinite(number):
        return number
    if not real and number is not None and number >= 1:
        return number
    wanted = "a number > 0, e.g. 1.2" if real else "a whole number >= 1, e.g. 32"
    raise ConfigError(f"{where}: index {raw!r}: {name}={text!r} must be {wanted}")


def _items(raw: Any, where: str) -> list[Any]:
    """``raw`` as a list of specs: None is none, one spec is a list of one."""
    if raw is None:
        return []
    items = [raw] if isinstance(raw, (str, IndexSpec)) else raw
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise ConfigError(f"{where}: expected a list of index specs, got {raw!r}")
    return list(items)


def parse_indexes(raw: Any, where: str) -> tuple[IndexSpec, ...]:
    """A list of index specs (marker ``indexes=`` or embedbench.yaml ``indexes:``), each
    spec at most once."""
    specs = [IndexSpec.parse(item, f"{where}[{i}]") for i, item in enumerate(_items(raw, where))]
    dupes = repeated(s.spec for s in specs)
    if dupes:
        raise ConfigError(f"{where}: index(es) {dupes} appear more than once")
    return tuple(specs)


#: the exact search as a spec: what a dense retriever searches through unless given an index
EXACT = IndexSpec("exact")

_INDEX_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def split_top(value: str, sep: str) -> list[str]:
    """``value`` split at each ``sep`` outside parentheses (a spec's parameters keep theirs)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(value):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == sep and depth == 0:
            parts.append(value[start:i])
            start = i + 1
    parts.append(value[start:])
    return parts


def named_indexes(raw: Any, where: str) -> tuple[tuple[str | None, IndexSpec], ...]:
    """The index axis as a marker, embedbench.yaml or ``--embedbench-indexes`` gives it: a
    list of specs (``"exact"``, ``"name=spec"``) or a mapping of name to spec. A named index
    shows its name in the test id (``h-prod`` rather than ``h-faiss:hnsw(M=32,efSearch=64)``),
    so its baseline entry stays when its parameters change and the gate compares them. Each
    spec is checked against its engine; a ConfigError names ``where``."""
    if isinstance(raw, Mapping):
        pairs: list[tuple[str | None, Any]] = [(str(k), v) for k, v in raw.items()]
    else:
        pairs = []
        for item in _items(raw, where):
            name, spec = None, item
            if isinstance(item, str):
                head, *rest = split_top(item, "=")
                if rest and "(" not in head and "+" not in head:
                    name, spec = head.strip(), "=".join(rest).strip()
            pairs.append((name, spec))
    for name, _ in pairs:
        if name is not None and not _INDEX_NAME.match(name):
            raise ConfigError(
                f"{where}: index name {name!r}: use letters, digits, '_', '.' and '-' (it "
                "becomes part of the test id), e.g. prod"
            )
    specs = parse_indexes([spec for _, spec in pairs], where)
    dupes = repeated(name or spec.id for (name, _), spec in zip(pairs, specs, strict=True))
    if dupes:
        raise ConfigError(f"{where}: index name(s) {dupes} appear more than once")
    return tuple((name, spec) for (name, _), spec in zip(pairs, specs, strict=True))


def parse_indexes_option(value: str) -> tuple[str, ...]:
    """``--embedbench-indexes exact,faiss:hnsw(M=32,efSearch=64)``: comma-separated index
    specs (a comma inside a spec's parentheses belongs to the spec), each optionally named
    (``prod=faiss:hnsw(M=32,efSearch=16)``) and checked against its engine's kinds and
    parameters; a bad one raises ``argparse.ArgumentTypeError`` naming the option, the value
    and the fix (the option table's parser, :mod:`pytest_embedbench.config.options`)."""
    specs = [part.strip() for part in split_top(value, ",") if part.strip()]
    if not specs:
        raise argparse.ArgumentTypeError(
            f"--embedbench-indexes {value!r}: give comma-separated index specs, e.g. "
            "'exact,faiss:hnsw(M=32,efSearch=64)'"
        )
    try:
        found = named_indexes(specs, "--embedbench-indexes")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return tuple(spec.spec if name is None else f"{name}={spec.spec}" for name, spec in found)
