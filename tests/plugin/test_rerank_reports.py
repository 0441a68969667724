"""The two stages in every writer (issue 43), through pytest as a user runs it: BM25 on the
bundled support dataset as the first stage, reranked by the hashing model's vectors at a depth
sweep (@10 and @20) and by the reversed reranker (the first stage upside down) at @10 and @20.
One run writes every report; the test reads each writer's output of it and checks that the
summary's figures are there, formatted: the lift with its paired interval, the Holm-adjusted p,
the ceiling, the per-query changes between the stages, the documents a reranker pushed out of
the top and those it pushed down (at depth 10 the reversed reranker pushes nothing out of the
top 10: only the pushed-down documents say what it did)."""

from __future__ import annotations

import csv
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.records.querydiff import QueryChange
from pytest_embedbench.report.summary import Summary
from pytest_embedbench.report.summary.stages import StageRow
from pytest_embedbench.report.writers.stage_tables import p_text

from .conftest import CONFTEST as CONFTEST_TEXT
from .conftest import bench_module
from .test_rerank_plugin import RERANKERS, SUPPORT

MARKER = (
    f"dataset={str(SUPPORT)!r}, models=['bm25'], k=[1, 5, 10], "
    "rerankers=['none', 'hashing:h@10,20', 'reversed@10,20']"
)


def _pushed_down(result: dict[str, Any], query: str, depth: int) -> list[tuple[str, int, Any]]:
    """Computed directly from a reranked test's two runs in its JSON record: each relevant
    document of the first stage's top ``depth`` that the reranked list ranks lower (or not at
    all: "out"), as (id, first-stage rank, reranked rank), highest grade first, then the
    farthest fall (out: past the list's end), then the first stage's order; at most 5."""
    first = result["rerank"]["stage1_retrieved"][query][:depth]
    now = result["retrieved"][query]
    grades = result["relevant"][query]
    found = []
    for old, doc in enumerate(first, start=1):
        new = now.index(doc) + 1 if doc in now else None
        if grades.get(doc, 0) > 0 and (new is None or new > old):
            fall = (len(now) + 1 if new is None else new) - old
            found.append((-grades[doc], -fall, old, doc, "out" if new is None else new))
    return [(doc, old, new) for _, _, old, doc, new in sorted(found)[:5]]


def _drops_text(result: dict[str, Any], drops: list[tuple[str, int, Any]], query: str) -> str:
    """The pushed-down documents as every text writer shows them: ``d 1→out (grade 3)``."""
    grades = result["relevant"][query]
    return (
        ", ".join(
            f"{doc} {old}→{new}" + ("" if grades[doc] == 1 else f" (grade {grades[doc]:g})")
            for doc, old, new in drops
        )
        or "none"
    )


def _as_tuples(change: QueryChange) -> list[tuple[str, int, Any]]:
    assert change.pushed_down is not None
    return [(d.doc_id, d.before, d.after or "out") for d in change.pushed_down]


def _lift_text(row: StageRow) -> str:
    """The lift as the text writers print it: value and paired interval."""
    lift = row.lift["ndcg@10"]
    assert lift.difference is not None and lift.low is not None and lift.high is not None
    return f"{lift.difference:+.4f} [{lift.low:+.3f}, {lift.high:+.3f}]"


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> tuple[pytest.RunResult, dict[str, Any], Summary]:
    """BM25 on support, reranked by the sweep hashing:h@10,20 and by the reversed reranker,
    every report asked for (the job summary through ``GITHUB_STEP_SUMMARY``): the run's
    output, its JSON report and the summary read back from it."""
    pytester.makeconftest(CONFTEST_TEXT + RERANKERS)
    pytester.makepyfile(test_stages=bench_module(MARKER))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step-summary.md"))
    out = pytester.runpytest(
        "-p",
        "no:randomly",
        "--embedbench-bootstrap=1000",  # the intervals' resamples, cut to keep the test cheap
        "--embedbench-json=r.json",
        "--embedbench-html=r.html",
        "--embedbench-md=r.md",
        "--embedbench-csv=csv",
        "--junitxml=junit.xml",
    )
    out.assert_outcomes(passed=5)
    report = json.loads((pytester.path / "r.json").read_text())
    return out, report, Summary.from_json(report)


def test_every_writer_shows_the_two_stages(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terminal, JSON, HTML, Markdown, CSV, job summary and JUnit properties all carry the
    lift with its interval, the p Holm-adjusted across the model's three rerankers, the
    ceiling, the improved and degraded counts; the reversed reranker's most hurt queries are
    listed with the relevant documents it pushed out of the top and those it pushed down,
    with ranks equal to a direct computation from the two runs (in JUnit as properties); at
    depth 10 it pushes nothing out of the top 10 and the pushed-down documents name its harm;
    the sweeps @10,20 are curves (HTML) and tables (the others)."""
    out, report, summary = _run(pytester, monkeypatch)
    step = pytester.path / "step-summary.md"
    (section,) = summary.stages
    rows = {r.reranker: r for r in section.rows}
    assert sorted(rows) == ["h-top10", "h-top20", "reversed-top10", "reversed-top20"]
    reversed_, shallow = rows["reversed-top20"], rows["reversed-top10"]

    # the summary's figures: computed once, from the records
    raw = {t["nodeid"]: t["result"] for t in report["tests"]}
    p_values = {
        name: raw[row.nodeid]["rerank"]["lift"]["ndcg@10"]["p_value"] for name, row in rows.items()
    }
    order = sorted(p_values, key=lambda r: p_values[r])
    expected, running = {}, 0.0
    for rank, name in enumerate(order):  # Holm's step-down over the four rerankers of bm25
        running = max(running, min(1.0, (len(rows) - rank) * p_values[name]))
        expected[name] = running
    for name, row in rows.items():
        assert row.lift["ndcg@10"].p_holm == pytest.approx(expected[name], abs=1e-12)
        ceiling = raw[row.nodeid]["rerank"]["ceiling"]["value"]
        assert row.figures["rerank.ceiling"].value == ceiling
    assert reversed_.lift["ndcg@10"].difference < 0 and reversed_.diff is not None
    assert reversed_.diff.degraded > 0 and reversed_.diff.documents_known
    hurt = reversed_.diff.worst[0]
    assert hurt.lost, "the reversed reranker pushed the relevant documents out of its top 10"
    assert hurt.change < 0
    assert sorted(s.spec for s in section.sweeps) == ["hashing:h", "reversed"]
    for sweep in section.sweeps:
        assert [p.depth for p in sweep.points] == [0, 10, 20]
    assert summary.to_dict()["stages"] == report["summary"]["stages"]  # the JSON keeps them

    # pushed down: each relevant candidate the reranker ranked lower, with both ranks, as a
    # direct computation from the record's two lists finds them
    for row, depth in ((shallow, 10), (reversed_, 20)):
        assert row.diff is not None and row.diff.worst
        for change in row.diff.worst:
            assert _as_tuples(change) == _pushed_down(raw[row.nodeid], change.query_id, depth)
    assert shallow.diff is not None
    shallow_hurt = shallow.diff.worst[0]
    assert shallow_hurt.change < 0
    assert shallow_hurt.lost == () and shallow_hurt.gained == ()  # the same top 10, reordered
    drops = _as_tuples(shallow_hurt)
    assert drops and all(new == 11 - old for _, old, new in drops)  # upside down: k -> 11 - k
    shallow_raw = raw[shallow.nodeid]
    shallow_text = _drops_text(shallow_raw, drops, shallow_hurt.query_id)
    json_row = next(
        r for r in report["summary"]["stages"][0]["rows"] if r["reranker"] == "reversed-top10"
    )
    assert [
        (d["doc_id"], d["before"], d["after"] or "out")
        for d in json_row["diff"]["worst"][0]["pushed_down"]
    ] == drops
    older = json.loads(json.dumps(report))  # a report written before pushed_down existed
    for row in older["summary"]["stages"][0]["rows"]:
        for change in row["diff"]["worst"]:
            del change["pushed_down"]
    (old_section,) = Summary.from_json(older).stages
    assert all(c.pushed_down is None for r in old_section.rows for c in r.diff.worst)

    lift_text = _lift_text(reversed_)
    holm_text = p_text(reversed_.lift["ndcg@10"].p_holm)
    ceiling_text = f"R@20 {reversed_.figures['rerank.ceiling'].value:.4f}"

    terminal = out.stdout.str()
    for text in (lift_text, ceiling_text, "two stages on 'support'", hurt.query_id):
        assert text in terminal, text
    lines = terminal.splitlines()
    assert any(
        "reversed-top20" in line
        and "nDCG@10" in line
        and f"{lift_text} worse" in line
        and line.rstrip().endswith(holm_text)
        for line in lines
    )
    hurt_at = lines.index(next(x for x in lines if "queries reversed-top20 hurt most" in x))
    assert any(hurt.query_id in x and hurt.lost[0] in x for x in lines[hurt_at : hurt_at + 8])
    hurt_at = lines.index(next(x for x in lines if "queries reversed-top10 hurt most" in x))
    assert any(
        shallow_hurt.query_id in x and shallow_text in x for x in lines[hurt_at : hurt_at + 8]
    )
    assert "depth sweep of hashing:h over bm25 on 'support'" in terminal

    markdown = (pytester.path / "r.md").read_text()
    job = step.read_text()
    for text in (markdown, job):
        assert "Two stages" in text
        assert lift_text.replace("[", "\\[").replace("]", "\\]") in text or lift_text in text
        assert holm_text in text and ceiling_text in text
        assert hurt.query_id in text and hurt.lost[0] in text
        assert shallow_hurt.query_id in text and shallow_text in text
        assert "depth sweep of hashing:h over bm25" in text

    html = (pytester.path / "r.html").read_text()
    assert '<section id="stages"><h2>Two stages</h2>' in html
    assert f"{reversed_.lift['ndcg@10'].difference:+.4f}" in html and holm_text in html
    assert f"{reversed_.figures['rerank.ceiling'].value:.4f}" in html
    assert "nDCG@10 by rerank depth for hashing:h over bm25" in html  # the sweep's SVG
    assert f"{reversed_.diff.degraded} degraded" in html and hurt.lost[0] in html
    for doc, old, new in drops:
        assert f"<code>{doc}</code>&nbsp;{old}&rarr;{new}" in html

    with (pytester.path / "csv" / "stages.csv").open(newline="") as f:
        table = list(csv.DictReader(f))
    mine = next(r for r in table if r["reranker"] == "reversed-top20" and r["metric"] == "ndcg@10")
    assert float(mine["lift"]) == reversed_.lift["ndcg@10"].difference
    assert float(mine["p_holm"]) == reversed_.lift["ndcg@10"].p_holm
    assert float(mine["ceiling"]) == reversed_.figures["rerank.ceiling"].value
    assert int(mine["degraded"]) == reversed_.diff.degraded
    with (pytester.path / "csv" / "stage_queries.csv").open(newline="") as f:
        queries = [r for r in csv.DictReader(f) if r["reranker"] == "reversed-top20"]
    assert queries[0]["query"] == hurt.query_id and hurt.lost[0] in queries[0]["pushed_out"]
    with (pytester.path / "csv" / "stage_queries.csv").open(newline="") as f:
        queries = [r for r in csv.DictReader(f) if r["reranker"] == "reversed-top10"]
    assert [q["query"] for q in queries] == [c.query_id for c in shallow.diff.worst]
    for q, change in zip(queries, shallow.diff.worst, strict=True):
        direct = _pushed_down(shallow_raw, change.query_id, 10)
        assert q["pushed_down"] == _drops_text(shallow_raw, direct, change.query_id)
        assert q["pushed_out"] == "" and q["brought_in"] == ""

    tree = ET.parse(pytester.path / "junit.xml")
    case = next(c for c in tree.iter("testcase") if "reversed-top20" in c.get("name", ""))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    lift = raw[reversed_.nodeid]["rerank"]["lift"]["ndcg@10"]
    assert float(props["embedbench.lift.ndcg@10"]) == pytest.approx(lift["value"])
    assert float(props["embedbench.lift.ndcg@10.low"]) == pytest.approx(lift["low"])
    assert float(props["embedbench.lift.ndcg@10.p_value"]) == pytest.approx(lift["p_value"])
    assert float(props["embedbench.rerank.ceiling"]) == pytest.approx(
        reversed_.figures["rerank.ceiling"].value
    )
    assert int(float(props["embedbench.rerank.degraded"])) == reversed_.diff.degraded
    assert props["embedbench.rerank"] == "reversed@20"
    # the queries it hurt most, worst first, with the relevant documents pushed out of the top
    hurt_props = sorted(k for k in props if k.startswith("embedbench.rerank.hurt."))
    assert len(hurt_props) == 7 * min(5, len(reversed_.diff.worst))
    for rank, change in enumerate(reversed_.diff.worst[:5], start=1):
        at = f"embedbench.rerank.hurt.{rank}."
        assert props[at + "query"] == change.query_id
        assert float(props[at + "first_stage"]) == pytest.approx(change.before)
        assert float(props[at + "reranked"]) == pytest.approx(change.after)
        assert float(props[at + "change"]) == pytest.approx(change.change)
        assert change.lost is not None and change.gained is not None
        assert props[at + "pushed_out"].split() == list(change.lost)
        assert props[at + "brought_in"].split() == list(change.gained)
        direct = _pushed_down(raw[reversed_.nodeid], change.query_id, 20)
        assert props[at + "pushed_down"] == _drops_text(
            raw[reversed_.nodeid], direct, change.query_id
        )
    assert props["embedbench.rerank.hurt.1.pushed_out"].split() == list(hurt.lost)
    case = next(c for c in tree.iter("testcase") if "reversed-top10" in c.get("name", ""))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["embedbench.rerank.hurt.1.query"] == shallow_hurt.query_id
    assert props["embedbench.rerank.hurt.1.pushed_out"] == ""
    assert props["embedbench.rerank.hurt.1.pushed_down"] == shallow_text
    suite = {p.get("name"): p.get("value") for p in tree.getroot().iter("property")}
    holm = suite[f"embedbench.{reversed_.nodeid}.lift.ndcg@10.p_holm"]  # the run's, not a test's
    assert float(holm) == pytest.approx(reversed_.lift["ndcg@10"].p_holm)


def test_the_gate_fails_a_lift_dropped_below_the_baseline(pytester: pytest.Pytester) -> None:
    """The baseline records each reranked test's lift with its paired interval and the
    reranking's latency; a later run whose reranker (the same test id, ``rr``) lifts less than
    the baseline's interval fails ``lift.ndcg@10`` (gated by default) and names the change of
    reranker; ``rerank.p95_ms`` is gated when named, on the baseline's machine (this one)."""
    pytester.makeconftest(CONFTEST_TEXT + RERANKERS)
    gate = {"figures": {"rerank.p95_ms": "100000%"}}  # compared, never failing on noise

    def write(reranker: str) -> None:
        marker = (
            f"dataset={str(SUPPORT)!r}, models=['bm25'], k=[1, 5, 10], "
            f"rerankers=['none', 'rr={reranker}@20'], gate={gate!r}"
        )
        pytester.makepyfile(test_gate=bench_module(marker))

    args = ("-p", "no:randomly", "--embedbench-bootstrap=1000", "--embedbench-json=r.json")
    write("hashing:h")
    pytester.runpytest(*args, "--embedbench-update-baseline").assert_outcomes(passed=2)
    entries = json.loads((pytester.path / ".embedbench" / "baseline.json").read_text())
    entry = next(e for key, e in entries["entries"].items() if key.endswith("[bm25-rr]"))
    recorded = entry["rerank"]
    assert recorded["spec"] == "hashing:h@20" and recorded["p95_ms"] > 0
    lift = recorded["lift"]["ndcg@10"]
    assert lift["low"] <= lift["value"] <= lift["high"]
    assert all("rerank" not in e for k, e in entries["entries"].items() if k.endswith("-none]"))

    write("reversed")
    worse = pytester.runpytest(*args)
    worse.assert_outcomes(passed=1, failed=1)
    report = json.loads((pytester.path / "r.json").read_text())
    outcome = next(t for t in report["tests"] if t["nodeid"].endswith("[bm25-rr]"))["baseline"]
    assert outcome["deltas"]["lift.ndcg@10"]["regressed"] is True
    assert outcome["deltas"]["lift.ndcg@10"]["current"] < lift["low"]
    latency = outcome["deltas"]["rerank.p95_ms"]  # named, and this is the baseline's machine
    assert latency["baseline"] == recorded["p95_ms"] and latency["regressed"] is False
    worse.stdout.fnmatch_lines(
        [
            "*lift.ndcg@10 regressed: the reranker's lift over its first stage is -0.*, below "
            f"the baseline's {lift['value']:+.4f} ?{lift['low']:+.4f}, {lift['high']:+.4f}? "
            "(its 95% paired interval)*",
            "*the reranker changed ('hashing:h@20' -> 'reversed@20')*",
        ]
    )


#: each element of the stages section wider than the box that holds it (a table scrolled
#: inside its .wide box counts: the reader has to scroll to see a column)
_STAGES_OVERFLOW = """() => [...document.querySelectorAll('#stages, #stages .wide, #stages figure')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => `${e.tagName.toLowerCase()}.${e.className}: ${e.scrollWidth} > ${e.clientWidth}`)"""


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_the_two_stages_render_in_chromium(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The HTML report's Two stages section of the reranked run, laid out in Chromium at 1280
    and 1920 px: visible, its two tables (per reranker, per metric) with a row per reranker,
    the depth sweep's SVG with its curve, a point per depth and every point's label (none
    dropped, none over another or out of the chart), the reversed reranker's most hurt query
    with the relevant document it pushed out of the top (@20) and, at depth 10, the relevant
    documents it pushed down with their ranks; nothing wider than the page or its box, and
    no console error (``offline_page``). The screenshot of the section is kept in tmp_path,
    and in ``EMBEDBENCH_ARTIFACTS`` when set."""
    from .test_html_report import _LABEL_PROBLEMS, BROWSER_ARGS, CHROMIUM, offline_page

    # .ci/run sets EMBEDBENCH_REQUIRE_BROWSER=1: in CI a missing browser fails, never skips
    if not CHROMIUM.exists() and not os.environ.get("EMBEDBENCH_REQUIRE_BROWSER"):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    _, _, summary = _run(pytester, monkeypatch)
    (section,) = summary.stages
    reversed_ = next(r for r in section.rows if r.reranker == "reversed-top20")
    assert reversed_.diff is not None
    hurt = reversed_.diff.worst[0]
    shallow = next(r for r in section.rows if r.reranker == "reversed-top10")
    assert shallow.diff is not None
    drops = shallow.diff.worst[0].pushed_down
    assert drops
    sweep = next(s for s in section.sweeps if s.spec == "hashing:h")
    label = f"nDCG@10 by rerank depth for {sweep.spec} over {sweep.model}"
    keep = os.environ.get("EMBEDBENCH_ARTIFACTS")  # CI keeps the screenshots beside its logs
    with offline_page(pytester.path / "r.html", 1280, BROWSER_ARGS) as page:
        stages = page.locator("#stages")
        assert stages.is_visible()
        assert stages.locator("h2").inner_text() == "Two stages"
        assert page.locator("nav a[href='#stages']").count() == 1
        tables = stages.locator("table.stress")
        assert tables.count() == 2 and tables.first.is_visible() and tables.last.is_visible()
        for row in section.rows:  # a row per reranker, and a row per metric in the lifts
            assert tables.first.locator("tr", has_text=row.reranker).count() == 1
            assert tables.last.locator("tr", has_text=row.reranker).count() == len(section.metrics)
        chart = stages.locator(f"svg[aria-label='{label}']")
        assert chart.is_visible()
        box = chart.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 150
        assert chart.locator("polyline.curve").count() == 1
        assert chart.locator("circle.point").count() == len(sweep.points) == 3
        texts = chart.locator("text").all_text_contents()
        for name in ("first stage", "@10", "@20", "p95 latency the reranking adds (ms)"):
            assert name in texts, (name, texts)
        diff = stages.locator(".qdiff", has_text="reversed-top20")
        assert diff.is_visible()
        assert (
            diff.locator(".qcounts")
            .inner_text()
            .startswith(f"{reversed_.diff.improved} improved · {reversed_.diff.degraded} degraded")
        )
        first = diff.locator("tr.qtext").first
        assert first.is_visible() and hurt.query_id in first.inner_text()
        assert hurt.lost[0] in diff.locator("td.lost").first.inner_text()
        pushed = stages.locator(".qdiff", has_text="reversed-top10").locator("td.pushed").first
        assert pushed.is_visible()
        shown = pushed.inner_text().replace("\xa0", " ")
        assert shown == ", ".join(d.text for d in drops), shown
        for width in (1280, 1920):
            page.set_viewport_size({"width": width, "height": 900})
            scroll, inner = page.evaluate(
                "[document.documentElement.scrollWidth, window.innerWidth]"
            )
            shot = tmp_path / f"stages-{width}.png"
            stages.screenshot(path=str(shot))
            assert scroll <= inner, f"{width} px: the page is {scroll} px wide ({shot})"
            assert page.evaluate(_STAGES_OVERFLOW) == [], f"{width} px ({shot})"
            assert page.evaluate(_LABEL_PROBLEMS) == [], f"{width} px ({shot})"
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                (Path(keep) / f"stages-{width}.png").write_bytes(shot.read_bytes())
