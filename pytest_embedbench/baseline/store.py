"""The baseline file: its typed entries (built from records), reading, checking and locked,
atomic updates.

A :class:`BaselineEntry` is what the file keeps of one test: written and read by
:mod:`~pytest_embedbench.records.serial` from its fields, floats rounded to
:data:`_PRECISION` decimals. Usage::

    entry = entry_from_record(record)             # a BaselineEntry
    entry.per_query["ndcg@10"], entry.latency.p95_ms, entry.figures
    assert BaselineEntry.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.exceptions import BaselineError, RecordError
from ..core.io import finite
from ..evaluation.record import TestRecord, as_record
from ..records.resultdata import MetricData, ResultData
from ..records.serial import OMIT_NONE, from_data, to_data

__all__ = [
    "BASELINE_SCHEMA",
    "DEFAULT_BASELINE",
    "KEPT_METRICS",
    "BaselineEntry",
    "BaselineFile",
    "BaselineUpdate",
    "EntryIndex",
    "EntryLatency",
    "EntryRerank",
    "as_entry",
    "entry_from_record",
    "entry_problem",
    "index_figures",
    "query_load_figures",
    "rerank_figures",
]

BASELINE_SCHEMA = 1
DEFAULT_BASELINE = Path(".embedbench") / "baseline.json"
#: metrics whose per-query scores a baseline entry keeps (the gated ones must be among them)
KEPT_METRICS = (
    "ndcg@10",
    "recall@10",
    "recall@100",
    "mrr@10",
    "map@100",
    "hit@1",
    "judged@10",
    "condensed_ndcg@10",
)
_PRECISION = 6


@dataclass(frozen=True)
class EntryLatency:
    """The latency figures an entry keeps: the percentiles and the timed queries' latencies by
    query id (absent: not recorded; a list in query order: recorded by an older version)."""

    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    per_query_ms: dict[str, float] | list[float] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class EntryIndex:
    """The index axis an entry was recorded with: its spec and :func:`index_figures`."""

    spec: str | None = None
    figures: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class EntryRerank:
    """The reranking an entry was recorded with (issue 43): the reranker's spec with its
    depth, the lift over the first stage per metric with its paired interval (a later run's
    lift below that interval fails the gate's ``lift.<metric>``), and the reranking's own
    latency per query (``rerank.p50_ms``, ``rerank.p95_ms``: gated only when named, on the
    baseline's machine)."""

    spec: str | None = None
    lift: dict[str, MetricData] = field(default_factory=dict)
    p50_ms: float | None = None
    p95_ms: float | None = None


@dataclass(frozen=True)
class BaselineEntry:
    """One test's baseline: what it ran on (model, spec, dataset, the fingerprints), its
    summary metrics, latency and storage figures, and the per-query scores of
    :data:`KEPT_METRICS` that the gate pairs with a later run's.

    A field None is not known: an entry of an older version, or a part the test did not have
    (``figures``: recorded before the storage gate; ``index``: no index axis; ``retrieved``,
    ``settings``, ``dataset_parts``: what a change is named from). The optional parts are
    absent from the file rather than null."""

    model: str | None = None
    spec: str | None = None
    dataset: str | None = None
    dataset_fingerprint: str | None = None
    settings_fingerprint: str | None = None
    model_revision: str | None = None
    machine_fingerprint: str | None = None
    queries: int | None = None
    metrics: dict[str, MetricData] = field(default_factory=dict)
    latency: EntryLatency = field(default_factory=EntryLatency)
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    #: the storage figures by gate key (``bytes_per_doc``, ``index_mb`` ...)
    figures: dict[str, float | None] | None = field(default=None, metadata=OMIT_NONE)
    index: EntryIndex | None = field(default=None, metadata=OMIT_NONE)
    rerank: EntryRerank | None = field(default=None, metadata=OMIT_NONE)
    #: each query's top of the ranking, so a later run can name the documents a degraded
    #: query lost and gained
    retrieved: dict[str, tuple[str, ...]] | None = field(default=None, metadata=OMIT_NONE)
    #: what the settings and dataset fingerprints summarise, so a change can be named
    settings: dict[str, Any] | None = field(default=None, metadata=OMIT_NONE)
    dataset_parts: dict[str, Any] | None = field(default=None, metadata=OMIT_NONE)

    def to_dict(self) -> dict[str, Any]:
        """The entry as the baseline file keeps it (non-finite numbers as null)."""
        data: dict[str, Any] = to_data(self)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaselineEntry:
        """The entry of :meth:`to_dict`'s data, or of a file of an older version (a missing
        key is not known, an unknown one is ignored); check it with :func:`entry_problem`."""
        return from_data(cls, data)


def as_entry(entry: BaselineEntry | Mapping[str, Any]) -> BaselineEntry:
    """``entry`` as a :class:`BaselineEntry` (a mapping is read with ``from_dict``)."""
    return entry if isinstance(entry, BaselineEntry) else BaselineEntry.from_dict(entry)


def entry_from_record(record: TestRecord | Mapping[str, Any]) -> BaselineEntry:
    """The baseline entry of one retrieval test's record (see ``session.record``), its floats
    rounded to :data:`_PRECISION` decimals as the file keeps them."""
    record = as_record(record)
    result = record.result
    if result is None:
        raise ValueError(f"{record.nodeid}: a record without a result has no baseline entry")
    per_query = result.per_query or {}
    latency = result.latency
    entry = BaselineEntry(
        model=record.model,
        spec=record.spec,
        dataset=record.dataset,
        dataset_fingerprint=result.dataset_fingerprint,
        settings_fingerprint=record.settings_fingerprint,
        model_revision=result.model_info.get("revision"),
        machine_fingerprint=record.machine_fingerprint,
        queries=result.queries,
        metrics=dict(sorted(result.metrics.items())),
        latency=EntryLatency(
            p50_ms=latency.p50_ms,
            p95_ms=latency.p95_ms,
            p99_ms=latency.p99_ms,
            per_query_ms=latency.per_query_ms,
        ),
        per_query={m: per_query[m] for m in KEPT_METRICS if m in per_query},
        figures={**result.storage, **query_load_figures(result)},
        index=(
            EntryIndex(spec=result.index.spec, figures=index_figures(result))
            if result.index is not None
            else None
        ),
        rerank=_entry_rerank(result),
        # the record keeps RETRIEVED_KEPT ids a query (absent from older records: not known)
        retrieved=(
            {str(q): tuple(str(d) for d in ids) for q, ids in sorted(result.retrieved.items())}
            if result.retrieved is not None
            else None
        ),
        settings=record.settings,
        dataset_parts=record.dataset_parts,
    )
    return BaselineEntry.from_dict(finite(entry.to_dict(), digits=_PRECISION))


def _entry_rerank(result: ResultData) -> EntryRerank | None:
    rerank = result.rerank
    if rerank is None:
        return None
    lift = {
        name: MetricData(value=e.value, low=e.low, high=e.high, n=e.n)
        for name, e in sorted(rerank.lift.items())
    }
    return EntryRerank(spec=rerank.spec, lift=lift, p50_ms=rerank.p50_ms, p95_ms=rerank.p95_ms)


def rerank_figures(result: ResultData) -> dict[str, float | None]:
    """The reranking's gate figures of ``result`` by gate key (``lift.ndcg@10``,
    ``rerank.p50_ms``, ``rerank.p95_ms``; empty without a reranker)."""
    rerank = result.rerank
    if rerank is None:
        return {}
    out: dict[str, float | None] = {f"lift.{n}": e.value for n, e in sorted(rerank.lift.items())}
    out.update({"rerank.p50_ms": rerank.p50_ms, "rerank.p95_ms": rerank.p95_ms})
    return out


def query_load_figures(result: ResultData) -> dict[str, float | None]:
    """A provider's query embedding under load by gate key (``query_load.c4.qps`` ...; empty
    without ``--embedbench-concurrency`` or a loopback server), kept with the storage figures."""
    out: dict[str, float | None] = {}
    for level in result.query_load or ():
        at = f"query_load.c{level.concurrency}."
        out.update({at + f: getattr(level, f) for f in ("qps", "p50_ms", "p95_ms", "p99_ms")})
    return out


def index_figures(result: ResultData) -> dict[str, float | None]:
    """The index axis's figures of ``result`` by gate key without its ``index.`` prefix
    (``bytes``, ``neighbour_recall@10``, ``delta.ndcg@10``; empty without an index axis)."""
    index = result.index
    if index is None:
        return {}
    out: dict[str, float | None] = {
        "bytes": None if index.bytes is None else float(index.bytes),
        "build_s": index.build_s,
        "qps": index.qps,
        "p50_ms": index.p50_ms,
        "p95_ms": index.p95_ms,
    }
    if index.bytes_per_document is not None:  # recorded since issue 45: older entries lack it
        out["bytes_per_document"] = index.bytes_per_document
    for level in index.load or ():  # --embedbench-concurrency's levels: load.c4.qps ...
        at = f"load.c{level.concurrency}."
        out.update({at + f: getattr(level, f) for f in ("qps", "p50_ms", "p95_ms", "p99_ms")})
    out.update({name: est.value for name, est in sorted(index.neighbour_recall.items())})
    out.update({f"delta.{name}": est.value for name, est in sorted(index.delta.items())})
    return out


#: how long an update waits for another run's write of the same baseline
LOCK_TIMEOUT = 120.0
_NUMBER = (int, float)


def _is_number(value: Any) -> bool:
    return isinstance(value, _NUMBER) and not isinstance(value, bool) and math.isfinite(value)


def entry_problem(entry: Any) -> str | None:
    """What is wrong with a baseline entry's structure (None when the gate can read it).

    Only the parts a :class:`BaselineEntry` reads are checked; fields it does not know are
    left alone.
    """
    if not isinstance(entry, Mapping):
        return f"it is a {type(entry).__name__}, not a mapping"
    for key in ("metrics", "latency", "per_query", "figures", "index", "rerank"):
        if key in entry and not isinstance(entry[key], Mapping):
            return f"{key!r} is a {type(entry[key]).__name__}, not a mapping"
    for key in ("retrieved", "settings", "dataset_parts"):  # optional: null is not known
        if entry.get(key) is not None and not isinstance(entry[key], Mapping):
            return f"{key!r} is a {type(entry[key]).__name__}, not a mapping"
    for name, found in (entry.get("metrics") or {}).items():
        if not isinstance(found, Mapping):
            return f"metrics[{name!r}] is a {type(found).__name__}, not a mapping"
    for query, ids in (entry.get("retrieved") or {}).items():
        if not isinstance(ids, list):
            return f"retrieved[{query!r}] is {ids!r:.80}, not a list of document ids"
    index_figures = (entry.get("index") or {}).get("figures")
    if index_figures is not None and not isinstance(index_figures, Mapping):
        return f"index['figures'] is a {type(index_figures).__name__}, not a mapping"
    for section, found in (("figures", entry.get("figures")), ("index.figures", index_figures)):
        for key, value in (found or {}).items():
            if value is not None and not _is_number(value):
                return f"{section}[{key!r}] is {value!r}, not a number"
    for key, value in (entry.get("latency") or {}).items():
        if key == "per_query_ms":  # the per-query latencies the distribution test reads
            values = list(value.values()) if isinstance(value, Mapping) else value
            if not isinstance(values, list) or not all(_is_number(v) for v in values):
                return (
                    f"latency['per_query_ms'] is {value!r:.80}, not numbers by query id (or a "
                    "list of numbers, as older versions recorded)"
                )
        elif value is not None and not _is_number(value):
            return f"latency[{key!r}] is {value!r}, not a number"
    for metric, scores in (entry.get("per_query") or {}).items():
        if not isinstance(scores, Mapping):
            return (
                f"per_query[{metric!r}] is a {type(scores).__name__}, not a mapping of query id "
                "to score"
            )
        for query, score in scores.items():
            if not _is_number(score):
                return f"per_query[{metric!r}][{query!r}] is {score!r}, not a number"
    return None


@dataclass
class BaselineUpdate:
    """What :meth:`BaselineFile.update` did: counts and lines for the summary."""

    added: int = 0
    replaced: int = 0
    notes: list[str] = field(default_factory=list)


class BaselineFile:
    """A schema-versioned JSON file of baseline entries keyed by test node id.

    Reading never raises on bad content: what is wrong with the whole file is in ``problem``
    (each gated test fails with it), a damaged entry is in ``damaged`` (only its test fails),
    and ``--embedbench-update-baseline`` repairs both through :meth:`update`, unless the file
    was written by a newer pytest-embedbench or cannot be read (``replaceable`` is False).
    An entry read from the file is written back as it was read (keys this version does not
    know included) until an update replaces it.
    """

    def __init__(
        self,
        path: Path,
        entries: Mapping[str, BaselineEntry | Mapping[str, Any]] | None = None,
    ) -> None:
        self.path = path
        self.entries: dict[str, BaselineEntry] = {
            k: as_entry(v) for k, v in (entries or {}).items()
        }
        #: node id -> the entry read from the file and its data there, written back as they
        #: were while the entry is not replaced
        self._as_read: dict[str, tuple[BaselineEntry, Any]] = {}
        #: node id -> what is wrong with its entry; the raw entry is kept in ``_raw_damaged``
        self.damaged: dict[str, str] = {}
        self._raw_damaged: dict[str, Any] = {}
        #: what is wrong with the file as a whole (None when it was read)
        self.problem: str | None = None
        #: whether an update may rewrite a file with a problem (not a newer or unreadable one)
        self.replaceable = True

    @property
    def lock_path(self) -> Path:
        """``.<name>.lock`` beside the file written: a symlinked baseline is written through
        to its target (:func:`~pytest_embedbench.core.io.write_target`), so runs reaching one
        file through different links share one lock."""
        from ..core.io import write_target

        try:
            target = write_target(self.path)
        except OSError:  # not a file path; update() refuses it before locking
            target = self.path
        return target.parent / f".{target.name}.lock"

    @classmethod
    def load(cls, path: Path) -> BaselineFile:
        """Read ``path`` (an absent file is an empty baseline); bad content is recorded in
        ``problem`` and ``damaged`` with the fix, never raised."""
        found = cls(path)
        fix = "re-run with --embedbench-update-baseline to replace it"
        try:
            if path.is_dir():  # not "does not exist": the tests gated against it fail
                found.problem = (
                    f"{path}: is a folder, not a baseline file; give a file path with "
                    "--embedbench-baseline=PATH (or remove the folder)"
                )
                found.replaceable = False
                return found
            if not path.is_file():
                return found
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            found.problem = f"{path}: cannot be read ({_reason(exc)}); fix its permissions"
            found.replaceable = False
            return found
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            found.problem = (
                f"{path} line {exc.lineno}: not valid JSON ({exc.msg}); fix it, or {fix} "
                "(the old file is kept as a backup)"
            )
            return found
        if not isinstance(raw, Mapping) or "schema_version" not in raw:
            found.problem = (
                f"{path}: not an embedbench baseline (no schema_version); {fix} "
                "(valid entries are kept, the old file as a backup)"
            )
            raw = raw if isinstance(raw, Mapping) else {}
        else:
            version = raw["schema_version"]
            known = isinstance(version, int) and not isinstance(version, bool)
            if known and version > BASELINE_SCHEMA:
                found.problem = (
                    f"{path}: schema_version {version!r} was written by a newer "
                    f"pytest-embedbench (this one reads schema {BASELINE_SCHEMA}); upgrade it "
                    "(pip install -U pytest-embedbench), or record into another file with "
                    "--embedbench-baseline=PATH"
                )
                found.replaceable = False
                return found
            if version != BASELINE_SCHEMA or not known:
                found.problem = (
                    f"{path}: schema_version {version!r} is not a schema this "
                    f"pytest-embedbench reads (it reads {BASELINE_SCHEMA}); {fix} as schema "
                    f"{BASELINE_SCHEMA} (valid entries are kept, the old file as a backup)"
                )
        entries = raw.get("entries", {})
        if not isinstance(entries, Mapping):
            found.problem = (
                f"{path}: 'entries' is a {type(entries).__name__}, not a mapping of test id to "
                f"entry; {fix} (the old file is kept as a backup)"
            )
            return found
        found._add(entries)
        return found

    def _add(self, entries: Mapping[Any, Any]) -> None:
        """Keep the entries the gate can read; note what is wrong with the others."""
        for nodeid, entry in entries.items():
            wrong = entry_problem(entry)
            if wrong is None:
                try:  # a value of the wrong type (a model of 5, a metric of "x")
                    typed = BaselineEntry.from_dict(entry)
                except RecordError as exc:
                    wrong = str(exc)
            if wrong is None:
                self.entries[str(nodeid)] = typed
                self._as_read[str(nodeid)] = (typed, entry)
            else:
                self.damaged[str(nodeid)] = (
                    f"{self.path}: the baseline entry {nodeid!r} is damaged: {wrong}; re-record "
                    "it with --embedbench-update-baseline"
                )
                self._raw_damaged[str(nodeid)] = entry

    def write(self) -> None:
        """Write atomically, keys sorted, floats at fixed precision (damaged entries that
        were not replaced are kept as they were)."""
        from ..core.io import atomic_write_json

        entries: dict[str, Any] = {**self._raw_damaged}
        for nodeid, entry in self.entries.items():
            read = self._as_read.get(nodeid)
            entries[nodeid] = read[1] if read is not None and read[0] is entry else entry.to_dict()
        atomic_write_json(
            self.path,
            {"schema_version": BASELINE_SCHEMA, "entries": dict(sorted(entries.items()))},
        )

    def update(
        self,
        entries: Mapping[str, BaselineEntry | Mapping[str, Any]],
        *,
        replace: bool = True,
        timeout: float = LOCK_TIMEOUT,
    ) -> BaselineUpdate:
        """Merge ``entries`` into the file as it is on disk now, under a file lock.

        Lock, re-read, put ``entries`` over what is there (``replace=False`` only adds missing
        ones; a damaged entry is always replaced), write atomically, unlock: runs that update
        one baseline at the same time each keep their entries. A file with a problem is
        rewritten (its old content copied to a backup first) unless it is newer or unreadable,
        which raises :class:`BaselineError`. ``OSError`` (read-only folder, full disk) is
        raised as is, with the file on disk unchanged.
        """
        from filelock import FileLock, Timeout

        from ..core.io import write_target

        if not entries and not self.path.exists():
            return BaselineUpdate()  # nothing to record and nothing to repair: no folder, no lock
        # a path no file can be written to (a folder, a link loop) is refused before the lock,
        # which would otherwise be left beside a baseline that is never written
        target = write_target(self.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.lock_path), timeout=timeout)
        try:
            lock.acquire()
        except Timeout:
            raise BaselineError(
                f"{self.path}: another run held its lock {self.lock_path.name} for {timeout:g} "
                "s; nothing was written. Re-run the update when that run has finished"
            ) from None
        try:
            current = BaselineFile.load(self.path)
            if current.problem and not current.replaceable:
                raise BaselineError(f"{current.problem}; nothing was written")
            done = current._merge(entries, replace=replace)
        finally:
            lock.release()
        self.entries, self.damaged = current.entries, current.damaged
        self._raw_damaged, self.problem = current._raw_damaged, None
        self._as_read = current._as_read
        return done

    def _merge(
        self, entries: Mapping[str, BaselineEntry | Mapping[str, Any]], *, replace: bool
    ) -> BaselineUpdate:
        """Put ``entries`` over this (freshly read) file's and write it when anything changed."""
        done = BaselineUpdate()
        kept = len(self.entries)
        repaired = []
        for nodeid, entry in sorted(entries.items()):
            if nodeid in self.damaged:
                repaired.append(nodeid)
                del self.damaged[nodeid], self._raw_damaged[nodeid]
                done.replaced += 1
            elif nodeid in self.entries:
                if not replace:
                    continue
                done.replaced += 1
            else:
                done.added += 1
            self.entries[nodeid] = as_entry(entry)
        if not (done.added or done.replaced or self.problem):
            return done
        if self.problem or repaired:
            backup = self._backup()
            saved = f"; the old file is saved as {backup}" if backup else ""
            if self.problem:
                done.notes.append(
                    f"baseline {self.path}: replaced its bad content ({self.problem}); kept "
                    f"{kept} valid entr{'y' if kept == 1 else 'ies'}{saved}"
                )
            if repaired:
                done.notes.append(
                    f"baseline {self.path}: re-recorded {len(repaired)} damaged "
                    f"entr{'y' if len(repaired) == 1 else 'ies'} ({', '.join(repaired)}){saved}"
                )
        self.write()
        if self.damaged:
            done.notes.append(
                f"baseline {self.path}: {len(self.damaged)} damaged "
                f"entr{'y was' if len(self.damaged) == 1 else 'ies were'} kept as they are "
                f"(their tests did not run): {', '.join(sorted(self.damaged))}"
            )
        return done

    def _backup(self) -> Path | None:
        """Copy the file as it is to ``<name>.bad-<time>`` before it is rewritten."""
        import shutil
        import time

        if not self.path.is_file():
            return None
        backup = self.path.with_name(
            f"{self.path.name}.bad-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        )
        shutil.copy2(self.path, backup)
        return backup


def _reason(exc: BaseException) -> str:
    """An OS error as its reason ("Permission denied"), other errors as their message."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"
