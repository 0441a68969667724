"""The index engines by name: the :class:`VectorIndex` every engine is, and the registry that
finds one for a spec's engine (the built-in ones, a decorated class, or an entry point).

A new engine is one new module in this folder plus its registration: a :class:`VectorIndex`
subclass decorated with :func:`register_index`, and an import line in ``__init__.py`` so the
engine is registered whenever the folder is imported (``exact``, ``faiss``, ``lancedb`` and
``chroma``, ``pgvector`` and ``qdrant`` are such modules). Its kinds and parameters are
its own class attributes, so the spec parser (:mod:`.spec`) checks them with no change here. A
package of your own registers the same way, or names the class in the
``pytest_embedbench.indexes`` entry point group::

    @register_index
    class MyIndex(VectorIndex):
        name = "mine"
        kinds = {"": frozenset({"depth"})}
        def build(self, vectors, ids): ...
        def search(self, queries, k): ...   # (positions, scores), -1 padded
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from ...core.exceptions import ConfigError, MissingExtraError, did_you_mean
from ...core.registry import Registry

__all__ = [
    "INDEX_ENTRY_POINT_GROUP",
    "INDEXES",
    "EngineSpec",
    "VectorIndex",
    "check_engine_settings",
    "close_engines",
    "create_index",
    "folder_bytes",
    "index_class",
    "missing_extra",
    "place_hits",
    "register_index",
    "unfilled",
]

INDEX_ENTRY_POINT_GROUP = "pytest_embedbench.indexes"


class EngineSpec(Protocol):
    """What an engine reads of its spec (an :class:`~.spec.IndexSpec` is one); declared here
    because the spec's parser reads this registry for each engine's kinds and parameters."""

    @property
    def engine(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def params(self) -> tuple[tuple[str, Any], ...]: ...

    @property
    def spec(self) -> str: ...

    def param(self, name: str, default: Any = None) -> Any: ...


class VectorIndex(ABC):
    """An index over float32 vectors searched by inner product (cosine on unit vectors).

    ``kinds`` maps each kind (``""``: the engine named alone) to its parameter names."""

    name: ClassVar[str] = ""
    kinds: ClassVar[dict[str, frozenset[str]]] = {"": frozenset()}
    #: whether the same vectors, spec and seed give the same rankings
    deterministic: ClassVar[bool] = True
    #: an older name of a parameter -> its name in ``kinds`` (the error names the new one)
    renamed: ClassVar[dict[str, str]] = {}
    #: the parameters that take a real number > 0; every other one is an integer >= 1
    real_params: ClassVar[frozenset[str]] = frozenset()
    #: the precisions besides float32 the engine stores itself (``+int8``: see
    #: :mod:`.precision`); ``build`` and ``search`` are then given codes of that dtype
    #: (float16, int8, packed bits as uint8), a width (``+dim=N``) works with every engine
    precisions: ClassVar[frozenset[str]] = frozenset()
    #: why the engine does not store a precision (``"int8"``, or ``"exact+int8"`` for one kind
    #: only) -> a sentence, said in the spec's error: a quantisation the engine would ignore
    #: is refused, never reported
    precision_refusals: ClassVar[dict[str, str]] = {}
    #: the precisions (of ``precisions``) the engine quantises itself, with its own codes and
    #: rescoring: ``build`` and ``search`` are then given the float32 vectors (at the spec's
    #: width) and the engine reads the precision and its parameters from ``spec.sizing``; a
    #: parameter it has no setting for is refused as ``"int8(calibration)"`` in
    #: ``precision_refusals``
    quantises: ClassVar[frozenset[str]] = frozenset()
    #: the keys embedbench.yaml's ``index_engines: {ENGINE: {...}}`` may give the engine: where
    #: it runs (a database), not what it builds; they reach it as the spec's ``settings``
    setting_keys: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, spec: EngineSpec, *, seed: int = 0) -> None:
        self.spec = spec
        self.seed = int(seed)
        #: what the engine was asked to build (a FAISS factory string), for the report
        self.description = spec.spec
        #: how the engine was made deterministic, or why it is not
        self.note = ""
        #: the :class:`~.precision.Codec` of the codes ``build`` is given, when the spec names
        #: a precision (set before ``build`` by :class:`~.precision.SizedIndex`)
        self.codec: Any = None

    @abstractmethod
    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        """Index ``vectors`` (row i is document ``ids[i]``), added in that order."""

    @abstractmethod
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions into ``ids`` and scores, ``(n_queries, k)``, padded with -1 / -inf."""

    @property
    def nbytes(self) -> int | None:
        """Bytes the index takes (serialised or in memory); None when unknown."""
        return None

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any], where: str) -> None:
        """Check the values of embedbench.yaml's settings of the engine (their keys are
        checked against ``setting_keys`` before); a ConfigError names ``where``."""
        return None  # noqa: PLR1711 (engines without settings have nothing to check)

    @classmethod
    def close_all(cls) -> None:
        """Release what the engine holds for the session (a server, a schema): the plugin
        calls it at the session's end, also after a failure or Ctrl-C."""
        return None  # noqa: PLR1711 (most engines hold nothing beyond their indexes)


#: the engines register themselves as ``__init__.py`` imports their modules; an entry point
#: is loaded only when its engine is asked for, as it is (no subclass check, errors unwrapped)
_REGISTRY = Registry[VectorIndex]("index", VectorIndex, INDEX_ENTRY_POINT_GROUP)

#: engine name -> class; the built-in engines and those of entry points
INDEXES: dict[str, type[VectorIndex]] = _REGISTRY.classes

#: register an index engine under ``cls.name`` (usable as a decorator)
register_index = _REGISTRY.register


def index_class(engine: str, where: str = "index") -> type[VectorIndex]:
    """The class of engine ``engine`` (entry points scanned when unknown)."""
    if engine not in INDEXES:
        _REGISTRY.load_entry_point(engine)
    if engine not in INDEXES:
        raise ConfigError(
            f"{where}: unknown index engine {engine!r}{did_you_mean(engine, INDEXES) or '.'} "
            f"Engines: {sorted(INDEXES)} (or one registered in the {INDEX_ENTRY_POINT_GROUP!r} "
            "entry point group)"
        )
    return INDEXES[engine]


def close_engines() -> None:
    """Every registered engine's :meth:`VectorIndex.close_all`, each even if another failed."""
    errors = []
    for cls in list(INDEXES.values()):
        try:
            cls.close_all()
        except Exception as exc:  # the others still close; the first failure is raised
            errors.append(exc)
    if errors:
        raise errors[0]


def check_engine_settings(raw: Any, where: str) -> dict[str, dict[str, Any]]:
    """embedbench.yaml's ``index_engines:``, a mapping of engine name to its settings, each
    key checked against the engine's ``setting_keys`` (did-you-mean) and its values by the
    engine; a ConfigError names ``where``, the key and the fix."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(v, Mapping) for v in raw.values()):
        raise ConfigError(
            f"{where}: expected a mapping of engine name to its settings, e.g. "
            "{pgvector: {dsn_env: PGVECTOR_DSN}}"
        )
    out: dict[str, dict[str, Any]] = {}
    for engine, settings in raw.items():
        cls = index_class(str(engine), f"{where}.{engine}")
        for key in settings:
            if key not in cls.setting_keys:
                allowed = sorted(cls.setting_keys)
                raise ConfigError(
                    f"{where}.{engine}: unknown key {key!r}"
                    f"{did_you_mean(str(key), allowed) or '.'} "
                    + (f"Keys: {allowed}" if allowed else f"engine {engine!r} takes no settings")
                )
        cls.check_settings(settings, f"{where}.{engine}")
        out[str(engine)] = {str(k): v for k, v in settings.items()}
    return out


def create_index(spec: EngineSpec, *, seed: int = 0) -> VectorIndex:
    """An unbuilt index of ``spec``'s engine (call ``build`` with the vectors)."""
    return index_class(spec.engine)(spec, seed=seed)


# -- what the engines share -----------------------------------------------------------------


def missing_extra(spec: EngineSpec, package: str, extra: str) -> MissingExtraError:
    """The error of an engine whose package is not installed: it names the extra."""
    return MissingExtraError(
        f"index {spec.spec!r} needs {package}: pip install 'pytest-embedbench[{extra}]'"
    )


def unfilled(queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions and scores of ``queries`` rows with nothing found yet: -1 and -inf."""
    return (
        np.full((queries, k), -1, dtype=np.int64),
        np.full((queries, k), -np.inf, dtype=np.float64),
    )


def place_hits(
    positions: np.ndarray,
    scores: np.ndarray,
    row: int,
    hits: Iterable[tuple[float, int]],
    ids: Sequence[str],
) -> None:
    """Row ``row`` of ``positions`` and ``scores`` (k wide) from an engine's hits, each
    ``(score, position into ids)``, in the project's order: score descending, then document
    id descending."""
    ranked = sorted(((score, ids[pos], pos) for score, pos in hits), reverse=True)
    for col, (score, _, pos) in enumerate(ranked[: positions.shape[1]]):
        positions[row, col], scores[row, col] = pos, score


def folder_bytes(folder: str) -> int:
    """Bytes of the files under ``folder`` (an embedded engine's temporary folder)."""
    return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())
