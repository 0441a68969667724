"""The session without pytest: cases from marker arguments, results, records, the gate, the
xdist merge and the summary, driven as the plugin drives them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_embedbench import ConfigError, Document, Query, RetrievalDataset
from pytest_embedbench.baseline import GateSettings
from pytest_embedbench.config.project import Options
from pytest_embedbench.evaluation.record import FIELDS, Status, TestRecord
from pytest_embedbench.plugin.session import EmbedBenchSession
from pytest_embedbench.report.summary.run import build_summary


def dataset() -> RetrievalDataset:
    return RetrievalDataset(
        documents=[
            Document("d1", "Reset your password from the login page."),
            Document("d2", "Invoices are emailed every month as PDF."),
            Document("d3", "Export workspace data as CSV from settings."),
            Document("d4", "The API allows 600 requests per minute."),
        ],
        queries=[
            Query("q1", "how do I reset my password"),
            Query("q2", "monthly invoices pdf"),
            Query("q3", "export data csv"),
            Query("q4", "api requests per minute"),
        ],
        qrels={"q1": {"d1": 1}, "q2": {"d2": 2}, "q3": {"d3": 1}, "q4": {"d4": 1}},
        name="tiny",
    )


def session(tmp_path: Path, **options: object) -> EmbedBenchSession:
    opts = Options(no_cache=True, bootstrap=200, latency_passes=1, **options)  # type: ignore[arg-type]
    return EmbedBenchSession(opts, tmp_path)


def run_test(state: EmbedBenchSession, tmp_path: Path, *, test: str = "test_search") -> list[str]:
    """What the plugin does for one marked test per case: result, record, checks, outcome."""
    failures: list[str] = []
    cases = state.cases({"models": ["bm25"], "dataset": dataset()}, tmp_path / "test_x.py", test)
    for case in cases:
        nodeid = f"test_x.py::{test}[{case.model.short_name}]"
        result = state.result(case)
        state.record(nodeid, test, case, result, None)
        failures += state.after_test(nodeid, test, case, result)
        state.set_status(nodeid, "call", "failed" if failures else "passed", None)
    return failures


def test_cases_resolve_marker_arguments_and_gate_settings_at_collection(tmp_path: Path) -> None:
    state = session(tmp_path)
    marker = {"models": ["bm25"], "dataset": dataset(), "k": [5, 10], "gate": {"tolerance": 0.05}}
    (case,) = state.cases(marker, tmp_path / "test_x.py", "test_search")
    assert case.model.short_name == "bm25"
    assert case.k == (5, 10)  # the cut-offs asked for, nothing added
    # resolved once, stored on the case; the default Recall@100 is dropped: k lacks 100
    assert case.gate == GateSettings(tolerance=0.05, metrics=("ndcg@10",))
    with pytest.raises(ConfigError, match="unknown keyword"):
        state.cases({"modles": ["bm25"], "dataset": dataset()}, tmp_path / "test_x.py")
    with pytest.raises(ConfigError, match="appear more than once"):
        state.cases({"models": ["bm25", "bm25"], "dataset": dataset()}, tmp_path / "t.py")


def test_a_run_records_typed_results_and_a_summary(tmp_path: Path) -> None:
    state = session(tmp_path)
    assert run_test(state, tmp_path) == []
    (record,) = state.records.values()
    assert isinstance(record, TestRecord)
    assert record.status is Status.PASSED
    assert record.result is not None and record.result.queries == 4
    assert record.baseline is not None and record.baseline.status == "missing"
    summary = build_summary(state)
    assert [r.nodeid for r in summary.records] == ["test_x.py::test_search[bm25]"]
    (dataset,) = summary.datasets
    assert dataset.name == "tiny" and dataset.models[0].model == "bm25"
    assert dataset.recommendation is not None
    assert any("no baseline" in line for line in summary.notices)


def test_records_survive_the_trip_from_an_xdist_worker(tmp_path: Path) -> None:
    worker = session(tmp_path)
    run_test(worker, tmp_path)
    sent = [json.dumps(r.to_dict()) for r in worker.records.values()]
    controller = session(tmp_path)
    controller.merge(json.loads(raw) for raw in sent)
    assert controller.records == worker.records
    assert set(json.loads(sent[0])) == set(FIELDS)
    # a worker's test whose record never arrived is named
    controller.expected.update({"test_x.py::test_search[bm25]", "test_x.py::test_lost[bm25]"})
    assert controller.not_recorded() == ["test_x.py::test_lost[bm25]"]


def test_a_baseline_written_and_read_back_gates_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    first = session(tmp_path, baseline=path, update_baseline="all")
    run_test(first, tmp_path)
    notes, failures = first.gatekeeper.finish(first.records, first.not_recorded())
    assert failures == [] and notes[0].startswith(f"baseline {path}: 1 entry added")
    second = session(tmp_path, baseline=path)
    assert run_test(second, tmp_path) == []
    (record,) = second.records.values()
    assert record.baseline is not None and record.baseline.status == "passed"


def test_setup_failures_are_errors_and_keep_the_first_message(tmp_path: Path) -> None:
    state = session(tmp_path)
    (case,) = state.cases({"models": ["bm25"], "dataset": dataset()}, tmp_path / "t.py")
    state.record("t.py::t[bm25]", "t", case, None, RuntimeError("no model"))
    record = state.records["t.py::t[bm25]"]
    assert (record.status, record.error) == (Status.ERROR, "RuntimeError: no model")
    state.set_status("t.py::t[bm25]", "teardown", "failed", "later")
    assert record.error == "RuntimeError: no model"
    state.set_status("t.py::t[bm25]", "setup", "skipped", None)
    assert record.status is Status.SKIPPED


def test_the_ray_options_reach_the_runs_prefill(tmp_path: Path) -> None:
    """``--embedbench-ray`` and its ``--embedbench-ray-*`` options become the Evaluator's
    prefill, with every setting; without an address there is none (no Ray import either)."""
    from pytest_embedbench.distributed import RayPrefill, RaySettings

    opts = Options(ray="local", ray_workers=3, ray_gpus_per_worker=0.5, ray_batch_size=16)
    prefill = EmbedBenchSession(opts, tmp_path).evaluator.prefill
    assert isinstance(prefill, RayPrefill)
    assert prefill.settings == RaySettings(
        "local", workers=3, cpus_per_worker=1.0, gpus_per_worker=0.5, batch_size=16
    )
    assert EmbedBenchSession(Options(), tmp_path).evaluator.prefill is None


def test_a_workers_output_names_what_it_collected_and_read(tmp_path: Path) -> None:
    state = session(tmp_path)
    assert not state.ran
    state.collected.update({"t.py::b", "t.py::a"})
    (tmp_path / "embedbench.yaml").write_text("k: [3]\n", encoding="utf-8")
    state.builder.project_config(tmp_path / "t.py")
    sent = json.loads(state.worker_output())
    assert sent["collected"] == ["t.py::a", "t.py::b"]
    assert sent["configs"] == [{"path": str(tmp_path / "embedbench.yaml"), "content": {"k": [3]}}]
    state.expected.add("t.py::a")  # a worker announced a record: something ran
    assert state.ran


def test_the_baseline_folder_is_the_projects(tmp_path: Path) -> None:
    """gatekeeper.project_folder: --rootdir, then the ini file's folder, then embedbench.yaml
    (named, or the nearest to a path given), never the folder of a non-file ini path."""
    from pytest_embedbench.plugin.gatekeeper import project_folder

    proj, other = tmp_path / "proj", tmp_path / "other"
    (proj / "tests").mkdir(parents=True)
    other.mkdir()
    (proj / "embedbench.yaml").write_text("k: [3]\n", encoding="utf-8")
    ini = other / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")

    def folder(
        *args: str,
        rootpath: Path = tmp_path,
        given: bool = False,
        inipath: Path | None = None,
        config: Path | None = None,
    ) -> Path:
        return project_folder(
            rootpath=rootpath,
            rootdir_given=given,
            inipath=inipath,
            config=config,
            args=args,
            start=tmp_path,
        )

    assert folder("proj/tests/test_x.py::t") == proj.resolve()
    assert folder("proj", given=True) == tmp_path.resolve()
    assert folder("proj", inipath=ini) == other
    assert folder("proj", config=other / "embedbench.yaml") == other.resolve()
    assert folder(rootpath=Path("/dev"), inipath=Path("/dev/null")) == tmp_path
    assert folder() == tmp_path
