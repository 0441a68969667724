"""The JSON report (``--embedbench-json=PATH``), written atomically.

Schema (version 1)::

    {"schema_version": 1, "created": "2026-11-30T08:00:00+00:00",
     "machine": {..., "threads": {...}, "load_average": [1, 5, 15 min]},
     "commit": {...} | null, "packages": {"numpy": "2.1.0", ...},
     "configuration": {...}, "cache": {"hits": 0, "misses": 56, "hit_rate": 0.0},
     "tests": [{"nodeid", "test", "model", "spec", "dataset", "k", "status", "error",
                "result": {"metrics": {"ndcg@10": {"value", "low", "high", "n"}, ...},
                           "latency": {...}, "timings": {...}, "peak_rss_mb", "cache", ...}}]}

On a chunked dataset a result also has ``chunking`` (the settings, ``chunks``, the chunk depth
searched) and, per query, ``retrieved``: ``{query_id: [{"doc_id", "score", "chunk_id", "start",
"end", "page"?}, ...]}``, each retrieved document with the chunk that won it.

Each result also keeps the conditions of its own measurement: ``result.environment`` holds the
thread settings and the CPU load while its queries were timed (``load.busy``), and its memory is
``added_rss_mb`` (what the model added) beside ``process_peak_rss_mb`` (the process's peak).
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import math
import os
import platform
import re
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..measure import machine_info
from ..redaction import redact

if TYPE_CHECKING:
    from .summary import Summary

__all__ = [
    "SCHEMA_VERSION",
    "atomic_write_json",
    "atomic_write_text",
    "build_report",
    "machine_info",
    "remove_stale_temps",
    "summary_sections",
]

SCHEMA_VERSION = 1
_PACKAGES = (
    "pytest-embedbench",
    "pytest",
    "numpy",
    "scipy",
    "torch",
    "sentence-transformers",
    "transformers",
    "faiss-cpu",
    "bm25s",
    "PyStemmer",
    "pytest-xdist",
)


def commit_info(folder: Path) -> dict[str, Any] | None:
    """HEAD's id, branch and dirtiness when ``folder`` is in a git work tree."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if not head:
        return None
    status = git("status", "--porcelain")
    return {
        "id": head,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": bool(status),
        "time": git("show", "-s", "--format=%cI", "HEAD"),
    }


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def finite(value: Any) -> Any:
    """NaN and infinities become null: the file stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def build_report(
    records: Iterable[Mapping[str, Any]],
    *,
    configuration: Mapping[str, Any],
    rootdir: Path,
    machine: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    tests = sorted((dict(r) for r in records), key=lambda r: r["nodeid"])
    hits = sum((t.get("result") or {}).get("cache", {}).get("hits", 0) for t in tests)
    misses = sum((t.get("result") or {}).get("cache", {}).get("misses", 0) for t in tests)
    from ..measure import load_average, thread_settings

    machine = dict(machine) if machine is not None else machine_info()
    machine["load_average"] = load_average()
    machine["torch_threads"] = thread_settings()["torch_threads"]
    return {
        "schema_version": SCHEMA_VERSION,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
        "commit": commit_info(rootdir),
        "packages": package_versions(),
        "configuration": redact(configuration),
        "cache": {
            "hits": hits,
            "misses": misses,
            "hit_rate": hits / (hits + misses) if hits + misses else None,
        },
        "tests": tests,
    }


def summary_sections(summary: Summary, *, update_baseline: str | None) -> dict[str, Any]:
    """The report's sections read from the run's summary: ``comparisons``,
    ``recommendations``, ``baseline`` and ``stress`` (every workload point, by dataset; each
    stress test's record keeps its full result too)."""
    return {
        "stress": summary.stress,
        "comparisons": summary.comparisons,
        "recommendations": {
            "priority": summary.priority,
            "datasets": summary.recommendations,
        },
        "baseline": {
            "path": summary.baseline_path,
            "update": update_baseline,
            "orphaned": summary.orphaned,
            "not_recorded": summary.not_recorded,
        },
    }


#: a temporary file of an interrupted write is removed after this long (or once its pid is gone)
STALE_TEMP_SECONDS = 3600.0
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", platform.node()) or "host"


def _temp_prefix(path: Path) -> str:
    """``.<name>.<pid>@<host>.``: who created a temporary file, so a stale one can be told."""
    return f".{path.name}.{os.getpid()}@{_HOST}."


def _pid_alive(pid: int) -> bool:
    # psutil, not os.kill(pid, 0): on Windows that call terminates the process
    import psutil

    return bool(psutil.pid_exists(pid))


def remove_stale_temps(path: Path, *, max_age: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove the temporary files that interrupted writes of ``path`` left behind.

    One is stale when it is older than ``max_age`` seconds, or when the process that created
    it (its name carries pid and host) ran on this host and is gone. A write in progress in a
    live process is never touched. Returns what was removed.
    """
    pattern = re.compile(
        rf"^\.{re.escape(path.name)}\.(?:(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)\.)?[^/]*\.tmp$"
    )
    removed: list[Path] = []
    try:
        candidates = list(path.parent.iterdir())
    except OSError:
        return removed
    now = time.time()
    for candidate in candidates:
        match = pattern.match(candidate.name)
        if match is None:
            continue
        pid = match.group("pid")
        try:
            old = now - candidate.lstat().st_mtime > max_age
            gone = (
                pid is not None
                and match.group("host") == _HOST
                and int(pid) != os.getpid()
                and not _pid_alive(int(pid))
            )
            if old or gone:
                candidate.unlink()
                removed.append(candidate)
        except OSError:  # removed by another run meanwhile, or not ours to remove
            continue
    return removed


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (see :func:`atomic_write_text`)."""
    text = json.dumps(finite(data), indent=2, sort_keys=True, allow_nan=False) + "\n"
    atomic_write_text(path, text)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: never half a file.

    Stale temporary files of earlier, interrupted writes of ``path`` are removed first; on
    failure (a full disk, a read-only folder) this write's own temporary file is removed and
    the ``OSError`` raised.
    """
    if path.is_dir():  # else os.replace would fail naming the temporary file, not the path
        raise IsADirectoryError(errno.EISDIR, "it is a folder; give a file path", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            # mkstemp makes the file private; keep an existing file's mode, else a normal one
            os.fchmod(fh.fileno(), path.stat().st_mode & 0o777 if path.exists() else 0o644)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
