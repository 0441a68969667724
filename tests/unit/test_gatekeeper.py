"""The gatekeeper reads a result's cut-offs through its public accessor, and hands the gate
and the baseline file typed entries and statuses (issue 41)."""

from __future__ import annotations

from pathlib import Path

from pytest_embedbench import Document, Query, RetrievalDataset
from pytest_embedbench.baseline import BaselineEntry, BaselineFile, GateStatus
from pytest_embedbench.config.project import Options
from pytest_embedbench.plugin.session import EmbedBenchSession

NODEID = "test_x.py::test_search[bm25]"


def _dataset() -> RetrievalDataset:
    texts = ["reset your password", "monthly invoices as pdf", "export data as csv", "api rate"]
    return RetrievalDataset(
        documents=[Document(f"d{i}", text) for i, text in enumerate(texts)],
        queries=[Query(f"q{i}", text) for i, text in enumerate(texts)],
        qrels={f"q{i}": {f"d{i}": 1} for i in range(len(texts))},
        name="tiny",
    )


def _run(tmp_path: Path, *, read_cutoffs: bool = False, **options: object) -> EmbedBenchSession:
    opts = Options(no_cache=True, bootstrap=200, latency_passes=1, **options)  # type: ignore[arg-type]
    state = EmbedBenchSession(opts, tmp_path)
    marker = {"models": ["bm25"], "dataset": _dataset()}
    (case,) = state.cases(marker, tmp_path / "test_x.py", "test_search")
    result = state.result(case)
    state.record(NODEID, "test_search", case, result, None)
    if read_cutoffs:  # what a test body asserting on retrieval.cutoffs does
        assert result.measured_cutoffs is None and result.cutoffs is not None
    assert state.after_test(NODEID, "test_search", case, result) == []
    return state


def test_cut_offs_a_test_read_reach_its_record(tmp_path: Path) -> None:
    record = _run(tmp_path, read_cutoffs=True).records[NODEID]
    assert record.result is not None and record.result.cutoffs is not None
    assert record.result.cutoffs["calibration_queries"] == 2
    untouched = _run(tmp_path).records[NODEID]
    assert untouched.result is not None and untouched.result.cutoffs is None


def test_the_gate_status_and_the_written_entries_are_typed(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    first = _run(tmp_path, baseline=path, update_baseline="all")
    notes, failures = first.gatekeeper.finish(first.records, first.not_recorded())
    assert failures == [] and "1 entry added" in notes[0]
    (entry,) = BaselineFile.load(path).entries.values()
    assert isinstance(entry, BaselineEntry) and entry.model == "bm25" and entry.queries == 4
    outcome = _run(tmp_path, baseline=path).records[NODEID].baseline
    assert outcome is not None and outcome.status is GateStatus.PASSED
    missing = _run(tmp_path, baseline=tmp_path / "none.json").records[NODEID].baseline
    assert missing is not None and missing.status is GateStatus.MISSING
