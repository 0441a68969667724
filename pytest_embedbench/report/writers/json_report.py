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

Beside ``tests`` the report keeps the run's summary (``"summary"``, version 1: every table row
with its best marks, the paired comparisons with their significance, the gate outcomes, the
stress grids and cut-offs, the notices; see report/summary.py) and the older sections
``comparisons``, ``recommendations``, ``baseline`` and ``stress``, whose keys keep their meaning
(a comparison entry gained ``significant``).

Each result also keeps the conditions of its own measurement: ``result.environment`` holds the
thread settings and the CPU load while its queries were timed (``load.busy``), and its memory is
``added_rss_mb`` (what the model added) beside ``process_peak_rss_mb`` (the process's peak).
"""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.redaction import redact
from ...evaluation.measure import machine_info
from ..summary.stress import stress_points

if TYPE_CHECKING:
    from ..summary import Summary

__all__ = [
    "SCHEMA_VERSION",
    "build_report",
    "machine_info",
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
    from ...evaluation.measure import load_average, thread_settings

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


def summary_sections(summary: Summary) -> dict[str, Any]:
    """The report's sections read from the run's summary: ``summary`` (all of it,
    :meth:`Summary.to_dict`: what ``embedbench report`` formats), and the sections older
    readers know, with their meaning unchanged: ``comparisons``, ``recommendations``,
    ``baseline`` and ``stress`` (every workload point, by dataset; each stress test's record
    keeps its full result too)."""
    return {
        "stress": stress_points(summary.records),
        "comparisons": summary.comparisons_section(),
        "recommendations": summary.recommendations_section(),
        "baseline": {
            "path": summary.baseline_path,
            "update": summary.baseline_update,
            "orphaned": list(summary.orphaned),
            "not_recorded": list(summary.not_recorded),
        },
        "summary": summary.to_dict(),
    }
