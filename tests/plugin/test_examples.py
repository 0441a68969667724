"""The README's main job, run as a user runs it: `pytest examples` from the repository root."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ..helpers import run_module

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def run_examples(tmp_path: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / f"{name}.json"
    proc = run_module(
        "pytest",
        "examples",
        "-p",
        "no:cacheprovider",
        "--embedbench-cache-dir",
        str(tmp_path / "cache"),
        "--embedbench-json",
        str(report),
        *args,
        cwd=REPO,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc, json.loads(report.read_text())


def metrics(report: dict) -> dict:
    return {t["nodeid"]: t["result"]["metrics"] for t in report["tests"]}


def test_examples_serial_parallel_and_k(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("xdist")
    serial, serial_report = run_examples(tmp_path, "serial")
    table = serial.stdout.split("= embedbench =")[1]
    assert "dataset 'support' (52 queries, 59 documents)" in table
    for model in ("all-MiniLM-L6-v2", "bm25", "hybrid"):
        assert any(line.startswith(model + " ") for line in table.splitlines()), model
    assert {t["model"] for t in serial_report["tests"]} == {"all-MiniLM-L6-v2", "bm25", "hybrid"}

    _, parallel_report = run_examples(tmp_path, "parallel", "-n", "2")
    assert metrics(parallel_report) == metrics(serial_report)
    # the second and third runs found every document in the cache
    assert parallel_report["cache"]["misses"] == 0 and parallel_report["cache"]["hits"] > 0

    only, only_report = run_examples(tmp_path, "bm25", "-k", "bm25")
    assert {t["model"] for t in only_report["tests"]} == {"bm25"}
    assert "deselected" in only.stdout
