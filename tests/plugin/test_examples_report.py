"""The JSON report of the examples stays what it was: a recorded copy, normalised, compared
with a fresh run (bm25 only, so no model weights load and it takes seconds).

Everything that varies from run to run or machine to machine is dropped before comparing:
timings, latencies, memory, load and environment, cache counts (documents and queries), the
creation time, machine, commit and package versions, and the paths of this checkout. Every
number a model's ranking decides (metrics, intervals, per-query scores, recommendations,
baseline notes) must match.
To record the copy again after an intended change::

    EMBEDBENCH_RECORD_EXAMPLES=1 python -m pytest tests/plugin/test_examples_report.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..helpers import run_module

REPO = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).with_name("data") / "examples_bm25_report.json"

#: top-level report sections that describe the machine or the moment, not the results (the
#: summary is computed from the tests, timings included: its ranking figures are the tests')
_VOLATILE_SECTIONS = ("created", "machine", "commit", "packages", "cache", "summary")
#: result keys measured in time, memory or load (and the cache counts, which depend on the run
#: before)
_VOLATILE_RESULT = (
    "added_rss_mb",
    "cache",
    "cold_query_ms",
    "documents_per_s",
    "environment",
    "latency",
    "peak_rss_mb",
    "process_peak_rss_mb",
    "query_cache",
    "resources",
    "start_rss_mb",
    "timings",
)


def _scrub(value: Any, root: str) -> Any:
    """Paths of this checkout made relative; floats rounded (the recorded copy stays small)."""
    if isinstance(value, dict):
        return {k: _scrub(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "<root>")
    if isinstance(value, float):
        return round(value, 9)
    return value


def normalise(report: dict[str, Any], root: Path = REPO) -> dict[str, Any]:
    """``report`` without what differs between two runs of the same code (see the module doc)."""
    out = {k: v for k, v in report.items() if k not in _VOLATILE_SECTIONS}
    config = dict(out.get("configuration") or {})
    for key in ("args", "json", "cache_dir"):
        config.pop(key, None)
    out["configuration"] = config
    tests = []
    for test in out.get("tests", []):
        test = {k: v for k, v in test.items() if k != "machine_fingerprint"}
        if test.get("result") is not None:
            result = {k: v for k, v in test["result"].items() if k not in _VOLATILE_RESULT}
            info = {k: v for k, v in result.get("model_info", {}).items() if k != "calls"}
            test["result"] = {**result, "model_info": info}
        tests.append(test)
    out["tests"] = tests
    return _scrub(out, str(root))


def run_examples(report: Path, *args: str) -> dict[str, Any]:
    proc = run_module(
        "pytest",
        "examples/test_support_search.py",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "--embedbench-models=bm25",
        "--embedbench-cache-dir",
        str(report.parent / "cache"),
        "--embedbench-json",
        str(report),
        *args,
        cwd=REPO,
        timeout=600,
    )
    assert report.is_file(), proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(report.read_text())


@pytest.mark.slow  # the examples with the real model: the full suite
def test_examples_report_matches_the_recorded_copy(tmp_path: Path) -> None:
    fresh = normalise(run_examples(tmp_path / "report.json"))
    if os.environ.get("EMBEDBENCH_RECORD_EXAMPLES"):
        RECORDED.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(RECORDED.read_text())
    assert fresh.keys() == recorded.keys()
    for section in sorted(recorded):
        if section != "tests":
            assert fresh[section] == recorded[section], section
    assert [t["nodeid"] for t in fresh["tests"]] == [t["nodeid"] for t in recorded["tests"]]
    for new, old in zip(fresh["tests"], recorded["tests"], strict=True):
        assert new == old, new["nodeid"]
