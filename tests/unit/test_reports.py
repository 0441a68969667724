"""The terminal table and the JSON report rendered from fixed records and a fixed summary."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.core.io import atomic_write_json
from pytest_embedbench.evaluation.record import Status, TestRecord
from pytest_embedbench.report.summary.run import Summary, summarize
from pytest_embedbench.report.writers.json_report import build_report, summary_sections
from pytest_embedbench.report.writers.tabular import (
    CSV_FILES,
    csv_cell,
    cutoff_columns,
    gate_columns,
    result_columns,
    score_columns,
    stress_columns,
    write_csv,
)
from pytest_embedbench.report.writers.terminal import render_summary, render_tables


def result(ndcg: float, p95: float, *, docs_per_s: float = math.nan) -> dict[str, Any]:
    def est(value: float) -> dict[str, float]:
        return {"value": value, "low": value - 0.05, "high": value + 0.05, "n": 4}

    return {
        "queries": 4,
        "documents": 6,
        "metrics": {
            "ndcg@10": est(ndcg),
            "mrr@10": est(ndcg),
            "recall@10": est(0.75),
            "recall@100": est(1.0),
        },
        "per_query": {"ndcg@10": {"q1": ndcg, "q2": ndcg, "q3": 0.5, "q4": 1.0}},
        "latency": {"p50_ms": p95 / 2, "p95_ms": p95},
        "documents_per_s": docs_per_s,
        "added_rss_mb": 12.0,
        "cache": {"hits": 2, "misses": 4},
    }


def record(model: str, res: dict[str, Any] | None, **fields: Any) -> TestRecord:
    return TestRecord(
        nodeid=f"t.py::test_search[{model}]",
        test="test_search",
        model=model,
        spec=model,
        dataset="support",
        k=[10, 100],
        status=fields.pop("status", Status.PASSED),
        result=res,
        **fields,
    )


RECORDS = [
    record("bm25", result(0.6, 1.0, docs_per_s=900.0)),
    record("dense", result(0.8, 20.0)),
    record("broken", None, status=Status.ERROR, error="RuntimeError: no weights\nmore"),
]


def summary(**fields: Any) -> Summary:
    return summarize(RECORDS, **fields)


def test_the_table_marks_the_best_values_and_shows_errors() -> None:
    lines = render_summary(summary())
    assert lines[0] == "dataset 'support' (4 queries, 6 documents)"
    header = lines[1].split()
    assert header[:3] == ["model", "nDCG@10", "MRR@10"] and header[-1] == "status"
    rows = {line.split()[0]: line for line in lines[3:6]}
    assert "0.8000 [0.750, 0.850] *" in rows["dense"]
    assert "1.0 *" in rows["bm25"]  # the lower p95 is better
    # docs/s: only bm25 measured it (dense's documents came from the cache): one value is no
    # comparison, so no best is marked (the one rule, values.best_marks)
    assert "900" in rows["bm25"] and "900 *" not in rows["bm25"]
    assert rows["dense"].count(" - ") >= 1
    assert rows["broken"].rstrip().endswith("error: RuntimeError: no weights")
    assert lines[-1] == (
        "* best in column; nDCG@10 shows its 95% bootstrap interval over queries; -: no value "
        "(the model failed, or nothing was measured: a cut-off the run lacks, docs/s when every "
        "document came from the cache, Δ when there is no baseline or reference to pair)"
    )


def test_the_table_renders_the_records_as_render_tables_does() -> None:
    assert render_summary(summary()) == render_tables(RECORDS)
    assert render_tables([r.to_dict() for r in RECORDS]) == render_tables(RECORDS)


def test_quiet_hides_columns_and_says_so() -> None:
    lines = render_summary(summary(), verbosity=-1)
    assert lines[1].split()[:4] == ["model", "nDCG@10", "R@100", "p95"]
    assert (
        "(-q hides MRR@10, R@10, p50 ms, docs/s, +RSS MB; run without -q to see every column)"
        in lines
    )


def test_the_reference_column_and_its_legend_come_from_the_summary() -> None:
    versus = {
        "bm25": {
            "difference": -0.2,
            "low": -0.3,
            "high": -0.1,
            "p_holm": 0.01,
            "reference": "dense",
        }
    }
    lines = render_summary(summary(reference="dense", comparisons={"support": versus}))
    assert "Δ nDCG@10 vs dense" in lines[1]
    row = next(line for line in lines if line.startswith("bm25"))
    assert "-0.2000 [-0.300, -0.100] worse p=0.01" in row
    assert next(line for line in lines if line.startswith("dense ")).count("(reference)") == 1
    assert (
        "; Δ: paired bootstrap difference [95% interval], p: randomization test, Holm-adjusted"
        in lines[-1]
    )


def test_a_baseline_delta_column_is_explained_without_p_values() -> None:
    delta = {"deltas": {"ndcg@10": {"difference": 0.01, "low": -0.02, "high": 0.03}}}
    records = [record("bm25", result(0.6, 1.0), baseline=delta)]
    lines = render_tables(records)
    assert "Δ nDCG@10 vs baseline" in lines[1]
    assert "+0.0100 [-0.020, +0.030]" in lines[3]
    assert "Δ: paired bootstrap difference [95% interval]" in lines[-1]
    assert "Holm" not in lines[-1]


def test_no_records_no_table() -> None:
    assert render_tables([]) == []


def test_the_json_report_holds_the_records_and_the_summary(tmp_path: Path) -> None:
    fixed = summary(
        reference="dense",
        comparisons={"support": {}},
        recommendations={"support": {"picks": {}}},
        orphaned=["gone.py::test_x"],
        not_recorded=["t.py::lost"],
        baseline_path="b.json",
    )
    report = build_report(
        [r.to_dict() for r in fixed.records],
        configuration={"seed": 0, "api_key": "hidden", "chunking": {"tokenizer": "bert"}},
        rootdir=tmp_path,
        machine={"system": "Linux"},
    )
    report.update(summary_sections(fixed))
    assert [t["nodeid"] for t in report["tests"]] == sorted(r.nodeid for r in RECORDS)
    assert [t["status"] for t in report["tests"]] == ["passed", "error", "passed"]
    assert report["cache"] == {"hits": 4, "misses": 8, "hit_rate": 4 / 12}
    # a chunking tokenizer is no secret, though its key has "token" in it
    assert report["configuration"] == {
        "seed": 0,
        "api_key": "***",
        "chunking": {"tokenizer": "bert"},
    }
    assert report["baseline"] == {
        "path": "b.json",
        "update": None,
        "orphaned": ["gone.py::test_x"],
        "not_recorded": ["t.py::lost"],
    }
    assert report["recommendations"] == {
        "priority": "balanced",
        "datasets": {"support": {"picks": {}, "components": {}, "speed_tiers": []}},
    }
    path = tmp_path / "report.json"
    atomic_write_json(path, report)
    written = json.loads(path.read_text())  # strict JSON: NaN became null
    dense = next(t for t in written["tests"] if t["model"] == "dense")
    assert dense["result"]["documents_per_s"] is None
    assert TestRecord.from_dict(written["tests"][1]) == RECORDS[2]
    # the summary itself, read back: every figure the reports format, the records apart
    back = Summary.from_json(written)
    assert written["summary"]["version"] == 1
    assert dataclasses.replace(back, records=fixed.records) == fixed
    assert [r.nodeid for r in back.records] == [r.nodeid for r in fixed.records]


def test_a_record_round_trips_through_its_dict() -> None:
    for rec in RECORDS:  # (through JSON text: NaN is not equal to itself)
        back = TestRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
        assert json.dumps(back.to_dict()) == json.dumps(rec.to_dict())
        assert back.status is rec.status
    assert Status.ERROR.rank > Status.FAILED.rank > Status.RUNNING.rank > Status.PASSED.rank


def test_the_latency_line_follows_the_columns_shown() -> None:
    timed = result(0.6, 1.0)
    timed["latency"].update(n=4, queries=4, passes=3)
    lines = render_tables([record("bm25", timed)])
    assert "latency (query embedding + search): median of 3 timed passes over all 4 queries" in (
        lines
    )
    # a table without a latency column says nothing about latency
    chosen = render_tables([record("bm25", timed)], columns=["ndcg@10", "recall@100"])
    assert not any(line.startswith("latency") for line in chosen)
    # a report from before the sample existed (no "queries"): every query was timed
    del timed["latency"]["queries"]
    assert any("over all 4 queries" in line for line in render_tables([record("bm25", timed)]))


def test_every_csv_text_cell_is_neutralised_and_numbers_stay_numbers(tmp_path: Path) -> None:
    """OWASP's rule against formula injection, in the one function that writes a CSV cell."""
    res = result(0.6, 1.0)
    res["metrics"]["ndcg@10"]["low"] = -0.25  # a negative number is a number
    res["per_query"]["ndcg@10"] = {"-q1": 0.5}
    res["query_texts"] = {"-q1": "\rcarriage", "q2": "\ttab"}
    res["retrieved"] = {"-q1": ["@d1", "d2"]}
    res["relevant"] = {"-q1": {"+d9": 1}}
    rec = record("=cmd", res, error="=1+1")
    report = json.loads(
        json.dumps(build_report([rec.to_dict()], configuration={}, rootdir=tmp_path))
    )
    results_csv, queries_csv, *_ = write_csv(tmp_path, report)
    with results_csv.open(newline="") as fh:
        header, row = list(csv.reader(fh))
    cells = dict(zip(header, row, strict=True))
    assert cells["model"] == "'=cmd" and cells["spec"] == "'=cmd"
    assert cells["test"] == "t.py::test_search[=cmd]"  # a formula only at the start
    assert cells["error"] == "'=1+1"
    assert cells["ndcg@10_low"] == "-0.25" and float(cells["ndcg@10_low"]) == -0.25
    assert cells["queries"] == "4" and cells["ndcg@10"] == "0.6"
    with queries_csv.open(newline="") as fh:
        header, row = list(csv.reader(fh))
    cells = dict(zip(header, row, strict=True))
    assert cells["query_id"] == "'-q1" and cells["query"] == "'\rcarriage"
    assert cells["retrieved"] == "'@d1|d2" and cells["relevant"] == "'+d9"
    assert cells["ndcg@10"] == "0.5"
    assert [csv_cell(v) for v in ("\ttab", "-", "+1", "@", -1, -1.5, 0.0, True, None)] == [
        "'\ttab",
        "'-",
        "'+1",
        "'@",
        "-1",
        "-1.5",
        "0.0",
        "True",
        "",
    ]


def test_a_csv_without_rows_has_its_header(tmp_path: Path) -> None:
    report = json.loads(json.dumps(build_report([], configuration={}, rootdir=tmp_path)))
    files = {path.name: path for path in write_csv(tmp_path, report)}
    assert list(files) == list(CSV_FILES)
    results_csv, queries_csv, stress_csv = (files[n] for n in CSV_FILES[:3])
    cutoffs_csv, scores_csv, gates_csv = (files[n] for n in CSV_FILES[3:])
    assert results_csv.read_text().splitlines() == [",".join(result_columns([]))]
    assert (
        queries_csv.read_text()
        == "test,dataset,model,query_id,query,latency_ms,retrieved,relevant\n"
    )
    assert stress_csv.read_text() == ",".join(stress_columns()) + "\n"
    assert cutoffs_csv.read_text() == ",".join(cutoff_columns()) + "\n"
    assert scores_csv.read_text() == ",".join(score_columns()) + "\n"
    assert gates_csv.read_text() == ",".join(gate_columns()) + "\n"


def _versus(p_holm: float, **extra: Any) -> dict[str, Any]:
    entry = {
        "difference": 0.2,
        "low": -0.01,  # the bootstrap interval touches 0: only the p-value decides
        "high": 0.4,
        "n": 4,
        "p_value": p_holm / 2,
        "p_holm": p_holm,
        "test": "randomization",
        "reference": "bm25",
        "metric": "ndcg@10",
    }
    return {"dense": entry | extra}


def _verdicts(fixed: Summary) -> tuple[bool, bool, bool]:
    """Whether the terminal, the HTML and the Markdown each call dense better than bm25."""
    from pytest_embedbench.report.writers.html import render_html
    from pytest_embedbench.report.writers.markdown import render_markdown

    row = next(line for line in render_summary(fixed) if line.startswith("dense "))
    page = render_html(fixed)
    html_row = page[page.index("<h3>Paired comparisons</h3>") :].split("</tr>")[1]
    md_row = next(
        line for line in render_markdown(fixed).splitlines() if line.startswith("| dense | bm25")
    )
    return (" better p=" in row, "v-better" in html_row, " better |" in md_row)


def test_significance_is_decided_once_and_every_writer_shows_that_decision() -> None:
    """p (Holm) exactly at 0.05 is not significant (Comparison.significant: p < 0.05), just
    below it is; the terminal, the HTML and the Markdown all show the summary's flag, and a
    stored flag wins over the p-value beside it (no writer compares a p-value itself)."""
    from pytest_embedbench.evaluation.stats import Comparison, Estimate

    def decided(p_holm: float) -> bool:
        comparison = Comparison(Estimate(0.2, low=-0.01, high=0.4, n=4), p_holm / 2, "r", None)
        comparison.p_holm = p_holm
        return comparison.significant()

    for p_holm in (0.05, 0.0499999):
        fixed = summary(reference="bm25", comparisons={"support": _versus(p_holm)})
        (dense,) = [m for m in fixed.datasets[0].models if m.model == "dense"]
        assert dense.versus is not None and dense.versus.significant is decided(p_holm)
        assert _verdicts(fixed) == (decided(p_holm),) * 3, p_holm
    # the flag a run stored is what every writer shows, whatever the p-value beside it
    stored = summary(reference="bm25", comparisons={"support": _versus(0.5, significant=True)})
    assert _verdicts(stored) == (True, True, True)
    stored = summary(reference="bm25", comparisons={"support": _versus(0.001, significant=False)})
    assert _verdicts(stored) == (False, False, False)


def test_the_stress_cutoff_and_gate_csv_cells_are_neutralised_too(tmp_path: Path) -> None:
    """stress.csv, cutoffs.csv, cutoff_scores.csv and gates.csv write through csv_cell as the
    others do: a model named like a formula is text, a negative difference stays a number."""
    noisy = result(0.5, 1.0)
    noisy["stress"] = {
        "clean": {"ndcg@10": {"value": 0.6, "low": 0.5, "high": 0.7, "n": 4}},
        "delta": {"ndcg@10": {"value": -0.1, "low": -0.2, "high": -0.01, "n": 4}},
    }
    workload = {"kind": "noise", "id": "-typo", "params": {}, "seeds": [0]}
    cut = {
        "levels": {"strict": {"name": "strict", "target": 0.001, "threshold": -0.5}},
        "conformal": {},
        "meaningful": True,
        "distribution": {
            "half": "held-out",
            "edges": [-1.0, 0.0, 1.0],
            "relevant": [0, 2],
            "random": [3, 1],
            "relevant_unscored": 0,
            "random_unscored": 0,
        },
    }
    clean = result(0.6, 1.0) | {"cutoffs": cut}
    gated = {"status": "regressed", "failures": ["=HYPERLINK()"], "deltas": {}}
    records = [
        record("=cmd", noisy, workload=workload),
        record("+m", clean, baseline=gated),
    ]
    report = json.loads(
        json.dumps(build_report([r.to_dict() for r in records], configuration={}, rootdir=tmp_path))
    )
    _, _, stress_csv, cutoffs_csv, scores_csv, gates_csv = write_csv(tmp_path, report)
    with stress_csv.open(newline="") as fh:
        (row,) = csv.DictReader(fh)
    assert row["model"] == "'=cmd" and row["workload"] == "'-typo"
    assert row["delta"] == "-0.1" and row["verdict"] == "worse"
    with cutoffs_csv.open(newline="") as fh:
        (row,) = csv.DictReader(fh)
    assert row["model"] == "'+m" and row["threshold"] == "-0.5" and row["level"] == "strict"
    with scores_csv.open(newline="") as fh:
        first, second = csv.DictReader(fh)
    assert first["model"] == "'+m" and first["score_low"] == "-1.0"  # a number, unprefixed
    assert first["cutoffs"] == "strict" and first["random_share"] == "0.75"
    assert second["cutoffs"] == "" and second["relevant"] == "2"
    with gates_csv.open(newline="") as fh:
        (row,) = csv.DictReader(fh)
    assert row["test"] == "t.py::test_search[+m]" and row["failures"] == "'=HYPERLINK()"


def _ranked(per_query: dict[str, float], retrieved: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "per_query": {"ndcg@10": per_query},
        "retrieved": retrieved,
        "relevant": {"q1": {"d1": 2}, "q2": {"d3": 1, "d4": 1}, "q3": {"d2": 1}, "q4": {"d6": 1}},
        "query_texts": {"q1": "reset password", "q2": "export csv", "q3": "invoices", "q4": "api"},
    }


def test_a_query_diff_counts_changes_beyond_epsilon_and_names_lost_and_gained() -> None:
    from pytest_embedbench.records.querydiff import CHANGE_EPSILON, failure_lines, query_diff

    before = _ranked(
        {"q1": 1.0, "q2": 0.8, "q3": 0.5, "q4": 0.3},
        {"q1": ["d1", "d2"], "q2": ["d3", "d4"], "q3": ["d5", "d2"], "q4": ["d1", "d6"]},
    )
    now = _ranked(
        # q1 loses d1 (-1.0); q2 keeps d3 and loses d4 (-0.4); q3 moves by less than epsilon;
        # q4 gains (+0.7)
        {"q1": 0.0, "q2": 0.4, "q3": 0.5 - CHANGE_EPSILON / 2, "q4": 1.0},
        {"q1": ["d2", "d5"], "q2": ["d3", "d5"], "q3": ["d5", "d2"], "q4": ["d6", "d1"]},
    )
    diff = query_diff(now, before, metric="ndcg@10", against="bm25", model="h", dataset="s")
    assert diff is not None
    assert (diff.improved, diff.degraded, diff.unchanged, diff.queries) == (1, 2, 1, 4)
    assert diff.documents_known and not diff.note and diff.depth == 2
    q1, q2 = diff.worst
    assert (q1.query_id, q1.before, q1.after, q1.lost, q1.gained) == ("q1", 1.0, 0.0, ("d1",), ())
    assert q1.top == "d2" and not q1.top_relevant and q1.missing == ("d1",)
    assert q2.lost == ("d4",) and q2.gained == () and q2.change == pytest.approx(-0.4)
    # a baseline entry keeps scores, not lists: what was lost is not known, and it says so
    entry = {"per_query": before["per_query"]}
    blind = query_diff(now, entry, metric="ndcg@10", against="baseline", precision=6)
    assert blind is not None and not blind.documents_known
    assert blind.worst[0].lost is None and blind.worst[0].missing == ("d1",)
    lines = failure_lines(blind)
    assert lines[0] == (
        "per query: 1 improved, 2 degraded, 1 unchanged of 4 (ndcg@10 changed by more than 0.001)"
    )
    assert lines[2] == (
        '  q1 "reset password": 1.000 -> 0.000 (-1.000); relevant not in the top 2 now: d1; '
        "first now: d2"
    )
    assert lines[-1].startswith("(the baseline entry keeps no retrieved lists")
    # no per-query scores on one side: no diff
    assert query_diff(now, {}, metric="ndcg@10", against="baseline") is None


def test_a_stage_diff_lists_the_relevant_candidates_pushed_down_by_grade_then_fall() -> None:
    """Between the stages (``candidates``: the depth reranked) each degraded query lists the
    relevant documents among the first stage's top ``candidates`` that the reranked list
    ranks lower, with both ranks (None: out of it), highest grade first, then the farthest
    fall, at most PUSHED_KEPT; a relevant document raised, kept in place or beyond the
    candidates is not listed; a diff not between stages has none, and its JSON no key."""
    from pytest_embedbench.records.querydiff import (
        PUSHED_KEPT,
        QueryDiff,
        RankDrop,
        change_text,
        query_diff,
    )
    from pytest_embedbench.records.serial import from_data, to_data

    first = ["r1", "a", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "deep"]
    grades = {"r1": 1, "r2": 1, "r3": 2, "r4": 1, "r5": 1, "r6": 1, "r7": 1, "r8": 3, "deep": 2}
    # r8 is raised (9 -> 1), r6 too (7 -> 6), r2 keeps rank 3; r1 falls 9 ranks, r3 one, r4
    # and r7 three (r7 out: past the list's end, 11), r5 five (out); "deep" (10 -> out) is a
    # candidate only at depth 10
    reranked = ["r8", "a", "r2", "b", "r3", "r6", "c", "r4", "d", "r1"]
    stage1 = {"per_query": {"ndcg@10": {"q": 0.9}}, "retrieved": {"q": first}}
    now = {
        "per_query": {"ndcg@10": {"q": 0.5}},
        "retrieved": {"q": reranked},
        "relevant": {"q": grades},
    }
    diff = query_diff(now, stage1, metric="ndcg@10", against="bm25 alone", candidates=9)
    assert diff is not None
    (change,) = diff.worst
    assert change.lost == ("r5", "r7", "deep") and change.gained == ()
    assert change.pushed_down == (
        RankDrop("r3", 2, 4, 5),  # the highest grade first, however short its fall
        RankDrop("r1", 1, 1, 10),
        RankDrop("r5", 1, 6, None),
        RankDrop("r4", 1, 5, 8),  # a fall of 3 as r7's: the first stage's order
        RankDrop("r7", 1, 8, None),
    )
    assert change_text(change, diff) == (
        "q: 0.900 -> 0.500 (-0.400); lost r5, r7, deep; gained none; "
        "pushed down r3 4→5 (grade 2), r1 1→10, r5 6→out, r4 5→8, r7 8→out"
    )
    deeper = query_diff(now, stage1, metric="ndcg@10", against="bm25 alone", candidates=10)
    assert deeper is not None and PUSHED_KEPT == 5
    assert [(d.doc_id, d.before, d.after) for d in deeper.worst[0].pushed_down or ()] == [
        ("r3", 4, 5),
        ("deep", 10, None),
        ("r1", 1, 10),
        ("r5", 6, None),
        ("r4", 5, 8),  # r7 left off: five kept
    ]
    assert from_data(QueryDiff, json.loads(json.dumps(to_data(diff)))) == diff
    # not a diff between stages: nothing pushed down, and no key in the JSON
    plain = query_diff(now, stage1, metric="ndcg@10", against="bm25")
    assert plain is not None and plain.worst[0].pushed_down is None
    assert "pushed_down" not in to_data(plain)["worst"][0]
    assert "pushed down" not in change_text(plain.worst[0], plain)


def test_the_summary_keeps_reference_and_baseline_diffs_and_reads_them_back() -> None:
    from pytest_embedbench.records.querydiff import query_diff
    from pytest_embedbench.records.serial import to_data

    ref = _ranked({"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 1.0}, {"q1": ["d1"], "q2": ["d3"]})
    weak = _ranked({"q1": 0.0, "q2": 1.0, "q3": 1.0, "q4": 1.0}, {"q1": ["d2"], "q2": ["d3"]})
    gated = query_diff(weak, {"per_query": ref["per_query"]}, metric="ndcg@10", against="baseline")
    assert gated is not None
    records = [
        record("bm25", ref),
        record("h", weak, baseline={"status": "regressed", "queries": to_data(gated)}),
    ]
    fixed = summarize(records, reference="bm25")
    assert [(d.against, d.model) for d in fixed.query_diffs] == [("baseline", ""), ("bm25", "h")]
    versus = fixed.query_diffs[1]
    assert versus.nodeid == "t.py::test_search[h]" and versus.worst[0].lost == ("d1",)
    back = Summary.from_json(json.loads(json.dumps(summary_sections(fixed) | {"tests": []})))
    assert back.query_diffs == fixed.query_diffs


def test_the_storage_figures_reach_every_writer(tmp_path: Path) -> None:
    """``bytes_per_doc``, ``index_mb`` and ``cache_mb`` (issue 33): computed once from the
    result's resources, formatted by the terminal (a chosen column), the CSV, the Markdown."""
    from pytest_embedbench.report.writers.markdown import render_markdown

    stored = result(0.8, 20.0)
    stored["resources"] = {
        "index_bytes": 3 * 2**20,
        "bytes_per_document": 3 * 2**20 / 6,
        "cache_bytes": 2**20,
    }
    fixed = summarize([record("dense", stored)])
    lines = render_summary(fixed, columns=["ndcg@10", "index_mb", "cache_mb", "bytes_per_document"])
    header = next(line for line in lines if line.startswith("model"))
    row = next(line for line in lines if line.startswith("dense"))
    assert header.split()[-6:] == ["index", "MB", "cache", "MB", "bytes/doc", "status"]
    assert row.split()[-4:-1] == ["3.000", "1.000", "524288"]
    write_csv(tmp_path, fixed)
    (written,) = csv.DictReader((tmp_path / "results.csv").read_text().splitlines())
    assert float(written["index_mb"]) == 3.0 and float(written["cache_mb"]) == 1.0
    assert float(written["bytes_per_document"]) == 524288
    markdown = render_markdown(fixed)
    assert "| index MB | bytes/doc | cache MB |" in markdown
