"""The baseline entry is a typed record (issue 41): written and read through ``records.serial``,
with the file's bytes as they were when entries were hand-built dicts.

``test_baseline_entry.json`` was written by the hand-built-dict version of
``entry_from_record`` and ``BaselineFile.write`` from :func:`golden_records`; the typed entry
must write the same bytes."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.baseline import BaselineFile, entry_from_record, gate
from pytest_embedbench.baseline.settings import GateSettings
from pytest_embedbench.baseline.store import BaselineEntry, EntryIndex, EntryLatency
from pytest_embedbench.records.resultdata import GateStatus, MetricData

GOLDEN = Path(__file__).with_name("test_baseline_entry.json")


def golden_records() -> dict[str, dict[str, Any]]:
    """Records of every shape an entry keeps: an index axis, per-query latencies by id and as
    an older list, NaN figures, unrounded scores, settings and dataset parts, and a record
    without the optional parts."""
    scores = {f"q{i}": (i * 0.1234567891) % 1 for i in range(5)}
    metric = {"value": 0.61234567891, "low": 0.5, "high": math.nan, "n": 5}
    full = {
        "nodeid": "tests/test_x.py::test_search[hnsw]",
        "test": "test_search",
        "model": "hnsw",
        "spec": "hf:x",
        "dataset": "support",
        "k": [1, 10],
        "settings_fingerprint": "s" * 16,
        "settings": {"spec": "hf:x", "options": {"k1": 1.23456789}, "k": [1, 10]},
        "dataset_parts": {"documents": {"count": 5, "fingerprint": "abc"}},
        "machine_fingerprint": "m" * 16,
        "result": {
            "dataset_fingerprint": "f" * 64,
            "queries": 5,
            "documents": 10,
            "metrics": {"ndcg@10": metric, "recall@10": {**metric, "value": 1.0}},
            "latency": {
                "p50_ms": 1.23456789,
                "p95_ms": 2.5,
                "p99_ms": math.inf,
                "mean_ms": 9.0,  # not kept by an entry
                "per_query_ms": {"q0": 1.0000001, "q3": 2.0},
            },
            "documents_per_s": 123.4567891,
            "model_info": {"revision": "r1", "free": True},
            "resources": {"index_bytes": 4096, "bytes_per_document": 409.6, "cache_bytes": None},
            "per_query": {
                "ndcg@10": scores,
                "recall@10": {q: 1.0 for q in scores},
                "precision@10": scores,  # not a kept metric
            },
            "retrieved": {"q1": ["d2", "d1"], "q0": ["d1"]},
            "index": {
                "spec": "faiss:hnsw(M=4)",
                "engine": "faiss",
                "bytes": 1000,
                "build_s": 0.123456789,
                "qps": math.nan,
                "neighbour_recall": {"neighbour_recall@10": metric},
                "delta": {"ndcg@10": {**metric, "value": -0.01}},
            },
        },
    }
    bare = {
        "nodeid": "tests/test_x.py::test_search[bm25]",
        "test": "test_search",
        "model": "bm25",
        "spec": "bm25",
        "dataset": "support",
        "k": [10],
        "result": {
            "dataset_fingerprint": "e" * 64,
            "queries": 2,
            "metrics": {"ndcg@10": {"value": 0.5, "low": 0.25, "high": 0.75, "n": 2}},
            "latency": {"p50_ms": None, "p95_ms": math.nan, "per_query_ms": [1.5, 2.5]},
            "per_query": {"ndcg@10": {"a": 0.25, "b": 0.75}},
        },
    }
    return {full["nodeid"]: full, bare["nodeid"]: bare}


def _write(path: Path) -> None:
    entries = {key: entry_from_record(rec) for key, rec in golden_records().items()}
    BaselineFile(path, entries).write()


def test_a_baseline_written_from_typed_entries_keeps_its_bytes(tmp_path: Path) -> None:
    _write(tmp_path / "baseline.json")
    assert (tmp_path / "baseline.json").read_bytes() == GOLDEN.read_bytes()


def test_an_entry_is_typed_and_reads_back_from_its_file_as_written(tmp_path: Path) -> None:
    key = "tests/test_x.py::test_search[hnsw]"
    entry = entry_from_record(golden_records()[key])
    assert isinstance(entry, BaselineEntry)
    assert isinstance(entry.latency, EntryLatency) and isinstance(entry.index, EntryIndex)
    assert entry.metrics["ndcg@10"] == MetricData(value=0.612346, low=0.5, high=None, n=5)
    assert entry.latency.p99_ms is None and entry.latency.per_query_ms == {"q0": 1.0, "q3": 2.0}
    assert set(entry.per_query) == {"ndcg@10", "recall@10"}  # the kept metrics only
    assert entry.index.figures["qps"] is None and entry.index.figures["build_s"] == 0.123457
    assert entry.figures == {
        "bytes_per_doc": 409.6,
        "index_mb": round(4096 / 2**20, 6),
        "cache_mb": None,
        "docs_per_s": 123.456789,
    }
    assert entry.retrieved == {"q0": ("d1",), "q1": ("d2", "d1")}
    path = tmp_path / "baseline.json"
    BaselineFile(path, {key: entry}).write()
    assert BaselineFile.load(path).entries == {key: entry}
    assert BaselineEntry.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry


def test_an_entry_without_the_optional_parts_leaves_them_out() -> None:
    entry = entry_from_record(golden_records()["tests/test_x.py::test_search[bm25]"])
    written = entry.to_dict()
    for name in ("index", "retrieved", "settings", "dataset_parts"):
        assert name not in written and getattr(entry, name) is None
    assert written["latency"] == {"p50_ms": None, "p95_ms": None, "p99_ms": None,
                                  "per_query_ms": [1.5, 2.5]}  # fmt: skip
    # an entry of an older version, recorded without storage figures, reads them as unknown
    older = BaselineEntry.from_dict({k: v for k, v in written.items() if k != "figures"})
    assert older.figures is None and "figures" not in older.to_dict()


def test_entries_read_from_a_file_are_written_back_as_they_were(tmp_path: Path) -> None:
    """An entry an update does not replace keeps its bytes: keys this version does not know,
    and keys an older version did not write, are neither dropped nor added."""
    path = tmp_path / "baseline.json"
    odd = {"per_query": {"ndcg@10": {"q1": 1.0}}, "extra_field": "kept", "figures": {}}
    path.write_text(json.dumps({"schema_version": 1, "entries": {"t.py::odd": odd}}))
    found = BaselineFile.load(path)
    assert found.entries["t.py::odd"].per_query == {"ndcg@10": {"q1": 1.0}}
    assert found.entries["t.py::odd"].spec is None  # not recorded: not known
    new = entry_from_record(golden_records()["tests/test_x.py::test_search[bm25]"])
    BaselineFile(path).update({"t.py::new": new})
    entries = json.loads(path.read_text())["entries"]
    assert entries["t.py::odd"] == odd and entries["t.py::new"] == new.to_dict()
    # replacing it writes the typed entry
    BaselineFile(path).update({"t.py::odd": new})
    assert json.loads(path.read_text())["entries"]["t.py::odd"] == new.to_dict()


def test_the_gate_reads_a_typed_entry_and_a_mapping_alike() -> None:
    rec = golden_records()["tests/test_x.py::test_search[hnsw]"]
    entry = entry_from_record(rec)
    typed = gate(rec, entry, GateSettings(), n_resamples=200)
    mapped = gate(rec, entry.to_dict(), GateSettings(), n_resamples=200)
    assert typed == mapped and typed.status is GateStatus.PASSED
    assert set(typed.deltas) >= {"ndcg@10", "index_mb", "index.neighbour_recall@10"}
    stripped = dataclasses.replace(entry, figures=None, index=None)
    outcome = gate(rec, stripped, GateSettings(), n_resamples=200)
    assert "index_mb" not in outcome.deltas
    assert any("no storage figures" in note for note in outcome.notes)
    assert "the baseline entry has no index figures" in " ".join(outcome.notes)


@pytest.mark.parametrize(
    ("part", "value", "said"),
    [
        ("metrics", {"ndcg@10": [0.5]}, "metrics['ndcg@10'] is a list, not a mapping"),
        ("retrieved", {"q1": 3}, "retrieved['q1'] is 3, not a list of document ids"),
        ("retrieved", ["d1"], "'retrieved' is a list, not a mapping"),
        ("settings", [1], "'settings' is a list, not a mapping"),
        ("dataset_parts", "x", "'dataset_parts' is a str, not a mapping"),
    ],
)
def test_a_part_the_typed_entry_cannot_read_is_damage(
    tmp_path: Path, part: str, value: object, said: str
) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"schema_version": 1, "entries": {"t.py::bad": {part: value}}}))
    found = BaselineFile.load(path)
    assert found.entries == {} and said in found.damaged["t.py::bad"]
