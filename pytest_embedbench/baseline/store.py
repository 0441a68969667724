"""The baseline file: its entries (built from records), reading, checking and locked,
atomic updates."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.exceptions import BaselineError
from ..evaluation.record import TestRecord, as_record
from ..records.resultdata import ResultData

__all__ = [
    "BASELINE_SCHEMA",
    "DEFAULT_BASELINE",
    "KEPT_METRICS",
    "BaselineFile",
    "BaselineUpdate",
    "entry_from_record",
    "entry_problem",
    "index_figures",
]

BASELINE_SCHEMA = 1
DEFAULT_BASELINE = Path(".embedbench") / "baseline.json"
#: metrics whose per-query scores a baseline entry keeps (the gated ones must be among them)
KEPT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100", "hit@1")
_PRECISION = 6


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, _PRECISION) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v) for v in value]
    return value


def entry_from_record(record: TestRecord | Mapping[str, Any]) -> dict[str, Any]:
    """The baseline entry of one retrieval test's record (see ``session.record``)."""
    record = as_record(record)
    result = record.result
    if result is None:
        raise ValueError(f"{record.nodeid}: a record without a result has no baseline entry")
    per_query = result.per_query or {}
    latency = result.latency
    entry: dict[str, Any] = _round(
        {
            "model": record.model,
            "spec": record.spec,
            "dataset": record.dataset,
            "dataset_fingerprint": result.dataset_fingerprint,
            "settings_fingerprint": record.settings_fingerprint,
            "model_revision": result.model_info.get("revision"),
            "machine_fingerprint": record.machine_fingerprint,
            "queries": result.queries,
            "metrics": {
                name: {"value": est.value, "low": est.low, "high": est.high, "n": est.n}
                for name, est in sorted(result.metrics.items())
            },
            "latency": {
                "p50_ms": latency.p50_ms,
                "p95_ms": latency.p95_ms,
                "p99_ms": latency.p99_ms,
                **({} if latency.per_query_ms is None else {"per_query_ms": latency.per_query_ms}),
            },
            "per_query": {m: per_query[m] for m in KEPT_METRICS if m in per_query},
            "figures": result.storage,
        }
    )
    if result.index is not None:
        entry["index"] = {"spec": result.index.spec, "figures": _round(index_figures(result))}
    # each query's top of the ranking (the record keeps RETRIEVED_KEPT ids), so a later run can
    # name the documents a degraded query lost and gained (absent from older entries: not known)
    if result.retrieved is not None:
        entry["retrieved"] = {
            str(q): [str(d) for d in ids] for q, ids in sorted(result.retrieved.items())
        }
    # what the fingerprints summarise, so a later run can name what changed (absent: not known)
    for key in ("settings", "dataset_parts"):
        if getattr(record, key) is not None:
            entry[key] = _round(getattr(record, key))
    return entry


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

    Only the parts the gate reads are checked; fields it does not know are left alone.
    """
    if not isinstance(entry, Mapping):
        return f"it is a {type(entry).__name__}, not a mapping"
    for key in ("metrics", "latency", "per_query", "figures", "index"):
        if key in entry and not isinstance(entry[key], Mapping):
            return f"{key!r} is a {type(entry[key]).__name__}, not a mapping"
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
    """

    def __init__(self, path: Path, entries: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (entries or {}).items()}
        #: node id -> what is wrong with its entry; the raw entry is kept in ``_raw_damaged``
        self.damaged: dict[str, str] = {}
        self._raw_damaged: dict[str, Any] = {}
        #: what is wrong with the file as a whole (None when it was read)
        self.problem: str | None = None
        #: whether an update may rewrite a file with a problem (not a newer or unreadable one)
        self.replaceable = True

    @property
    def lock_path(self) -> Path:
        return self.path.parent / f".{self.path.name}.lock"

    @classmethod
    def load(cls, path: Path) -> BaselineFile:
        """Read ``path`` (an absent file is an empty baseline); bad content is recorded in
        ``problem`` and ``damaged`` with the fix, never raised."""
        found = cls(path)
        fix = "re-run with --embedbench-update-baseline to replace it"
        try:
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
                self.entries[str(nodeid)] = dict(entry)
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

        entries: dict[str, Any] = {**self._raw_damaged, **self.entries}
        atomic_write_json(
            self.path,
            {"schema_version": BASELINE_SCHEMA, "entries": dict(sorted(entries.items()))},
        )

    def update(
        self,
        entries: Mapping[str, Mapping[str, Any]],
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

        if not entries and not self.path.exists():
            return BaselineUpdate()  # nothing to record and nothing to repair: no folder, no lock
        self.path.parent.mkdir(parents=True, exist_ok=True)
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
        return done

    def _merge(self, entries: Mapping[str, Mapping[str, Any]], *, replace: bool) -> BaselineUpdate:
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
            self.entries[nodeid] = dict(entry)
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
