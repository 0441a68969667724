"""judged@k and the condensed-list metrics through pytest: on a dataset whose qrels lost a
seeded half of each query's judgments, judged@10 in the JSON report is a direct count of the
judged documents among the retrieved ones, condensed nDCG@10 is trec_eval's ``-J`` on those
rankings, and the terminal table, the notices, the thresholds and the baseline gate read it;
below 0.9 it is a column of the Markdown, job summary and HTML tables (and always of
results.csv)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from .conftest import BENCH

pytrec_eval = pytest.importorskip("pytrec_eval")


def test_judged_at_10_on_thinned_qrels_is_a_direct_count(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    pytester.makepyfile(
        test_thin=BENCH.format(
            extra="",
            body="assert retrieval.judged(10) == retrieval.metric('judged@10') < 0.9",
        )
    )
    result = pytester.runpytest("--embedbench-json=r.json")
    result.assert_outcomes(passed=1)
    # the table shows judged@10 beside the metrics, and the notice says what it means
    result.stdout.fnmatch_lines(["*nDCG@10*judged@10*", "*bm25*0.*"])
    result.stdout.fnmatch_lines(
        ["*dataset 'thin': judged@10 is below 0.9 (bm25 0.*)*may understate unjudged but relevant*"]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    found = report["tests"][0]["result"]
    retrieved = found["retrieved"]  # each query's top 10, as the run ranked them
    direct = {
        qid: sum(d in thinned[qid] for d in retrieved[qid][:10]) / min(10, len(retrieved[qid]))
        for qid in thinned
    }
    assert found["per_query"]["judged@10"] == direct
    assert found["metrics"]["judged@10"]["value"] == pytest.approx(np.mean(list(direct.values())))
    assert 0 < found["metrics"]["judged@10"]["value"] < 0.9  # the thinning left holes
    # condensed nDCG@10: trec_eval -J on the same rankings (scores that keep their order)
    run = {qid: {d: float(10 - r) for r, d in enumerate(ids)} for qid, ids in retrieved.items()}
    trec = pytrec_eval.RelevanceEvaluator(thinned, {"ndcg_cut.10"}, judged_docs_only_flag=True)
    expected = {qid: v["ndcg_cut_10"] for qid, v in trec.evaluate(run).items()}
    got = found["per_query"]["condensed_ndcg@10"]
    assert got == pytest.approx({qid: expected.get(qid, 0.0) for qid in thinned}, abs=1e-12)
    assert found["metrics"]["condensed_ndcg@10"]["value"] >= found["metrics"]["ndcg@10"]["value"]
    # the notice is in the report's notices too, for every writer
    assert any("judged@10 is below 0.9" in n for n in report["summary"]["judged_notes"])


def test_judged_is_a_threshold_and_a_gate_key(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    pytester.makepyfile(
        test_thin=BENCH.format(extra=', thresholds={"judged@10": ">= 0.95"}', body="pass")
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*judged@10 = 0.* is not >= 0.95*"])
    # gated: recorded, then compared with itself
    pytester.makepyfile(test_thin=BENCH.format(extra="", body="pass"))
    pytester.makefile(
        ".yaml",
        embedbench="datasets:\n  thin: {path: data/thin}\ngate: {metrics: [judged@10]}\n",
    )
    pytester.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    entry = next(
        iter(json.loads(Path(".embedbench/baseline.json").read_text())["entries"].values())
    )
    assert set(entry["per_query"]["judged@10"]) == set(thinned)
    result = pytester.runpytest("--embedbench-json=r.json")
    result.assert_outcomes(passed=1)
    gate = json.loads(Path("r.json").read_text())["tests"][0]["baseline"]
    assert "judged@10" in json.dumps(gate)


def _table(markdown: str, first: str) -> tuple[list[str], list[str]]:
    """The header and the bm25 row of the Markdown table whose header starts with ``first``."""
    rows = [line.strip("|").split(" | ") for line in markdown.splitlines() if line.startswith("|")]
    start = next(i for i, row in enumerate(rows) if row[0].strip() == first)
    header = [cell.strip() for cell in rows[start]]
    row = next(r for r in rows[start + 2 :] if r[0].strip() == "bm25")
    return header, [cell.strip() for cell in row]


def _html_accuracy(text: str) -> tuple[list[str], list[str]]:
    """The header and the bm25 row of the HTML report's Accuracy table (cells' text)."""
    table = text.split("<h3>Accuracy</h3>", 1)[1].split("</table>", 1)[0]
    header = re.findall(r"<th[^>]*>(.*?)</th>", table)
    row = next(r for r in table.split("<tr>") if r.startswith("<td>bm25</td>"))
    cells = [re.sub(r"<[^>]+>", " ", c).strip() for c in re.findall(r"<td>(.*?)</td>", row)]
    return header, cells


def _is_judged(heading: str) -> bool:
    """A column heading of judged@10 ("judged@10", "judged@10 \\[95%\\]"), not its bounds."""
    return heading.split(" ", 1)[0] == "judged@10"


def _written(pytester: pytest.Pytester, step: Path) -> dict[str, tuple[list[str], list[str]]]:
    """The header and bm25's row of each table that shows the metrics: Markdown, the job
    summary, the HTML report's Accuracy table, results.csv."""
    pytester.runpytest(
        *("--embedbench-json=r.json", "--embedbench-md=r.md", "--embedbench-html=r.html"),
        "--embedbench-csv=csv",
    ).assert_outcomes(passed=1)
    with open(pytester.path / "csv" / "results.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    return {
        "markdown": _table((pytester.path / "r.md").read_text(), "model"),
        "job summary": _table(step.read_text(), "model"),
        "html": _html_accuracy((pytester.path / "r.html").read_text()),
        "results.csv": (list(row), list(row.values())),
    }


def test_judged_at_10_is_a_column_of_every_table_when_below_0_9(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    pytester.makepyfile(test_thin=BENCH.format(extra="", body="pass"))
    tables = _written(pytester, step)
    report = json.loads((pytester.path / "r.json").read_text())
    value = report["tests"][0]["result"]["metrics"]["judged@10"]["value"]
    assert value < 0.9
    for name, (header, row) in tables.items():
        (column,) = [i for i, h in enumerate(header) if _is_judged(h)]
        shown = row[column].split()[0]
        # each writer's own precision: 2 decimals in the job summary, 4 elsewhere, all in CSV
        assert float(shown) == pytest.approx(value, abs=0.5 * 10 ** -len(shown.split(".")[1]))
        assert name == "results.csv" or header.index("status") > column, name
    # every document judged (the added ones graded 0): judged@10 is 1, and the tables that
    # show it only below 0.9 leave the column out (results.csv keeps every metric)
    qrels = pytester.path / "data" / "thin" / "qrels" / "test.tsv"
    docs = [f"d{i:02d}" for i in range(40)]
    lines = ["query-id\tcorpus-id\tscore"] + [
        f"{q}\t{d}\t{thinned[q].get(d, 0)}" for q in sorted(thinned) for d in docs
    ]
    qrels.write_text("\n".join(lines) + "\n")
    step.unlink()
    tables = _written(pytester, step)
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["tests"][0]["result"]["metrics"]["judged@10"]["value"] == 1.0
    for name, (header, _) in tables.items():
        assert any(map(_is_judged, header)) == (name == "results.csv"), name
