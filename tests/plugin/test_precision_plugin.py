"""Vector width and precision on the index axis (issue 45) through pytest, as a user runs it: the
hashing model's cached vectors on the bundled support dataset (59 documents, 52 judged queries)
stored at float16, int8, binary and 16 of their 64 dimensions, each measured against the
float32 exact search of the same vectors, in every writer."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers", reason="int8 and binary quantise with it")

SUPPORT = Path(__file__).resolve().parents[2] / "examples" / "support"

INDEXES = [
    "exact",
    "exact+float16",
    "exact+int8",
    "exact+binary",
    "exact+binary(rescore=4)",
    "exact+dim=16",
]

TESTS = f"""
import pytest

@pytest.mark.embedbench(
    dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[1, 10], indexes={INDEXES!r}
)
def test_width_and_precision(retrieval):
    run = retrieval.index
    recall, delta = retrieval.neighbour_recall(10), retrieval.delta_vs_exact("ndcg@10")
    dim = retrieval.resources.dimension
    per_doc = {{"exact": 4, "exact+float16": 2, "exact+int8": 1, "exact+dim=16": 4 * 16 / dim}}
    expected = per_doc.get(run.spec.spec, 1 / 8) * dim  # binary: one bit a dimension
    assert run.bytes_per_document == expected
    if run.spec.spec == "exact":
        assert recall == 1.0 and float(delta) == 0.0
    else:
        assert recall.low <= recall <= recall.high
        assert delta.low <= delta <= delta.high
    if run.spec.spec.startswith("exact+binary"):
        assert recall < 1.0  # the recall binary loses, reported
"""


def test_width_and_precision_through_pytest(project: pytest.Pytester) -> None:
    project.makepyfile(test_sized=TESTS)
    result = project.runpytest(
        "-p",
        "no:randomly",
        "--embedbench-json=out.json",
        "--embedbench-html=out.html",
        "--embedbench-csv=csv",
        "--embedbench-md=out.md",
    )
    result.assert_outcomes(passed=len(INDEXES))
    result.stdout.fnmatch_lines(
        [
            "indexes on 'support': each against exact search on the same queries",
            "test*model*index*nDCG@10*vs exact*nR@10*size*bytes/doc*status*",
            "*h*exact+binary *472 B*8.0*passed*",
            "*h*exact+int8 *64.0*passed*",
        ]
    )
    report = json.loads((project.path / "out.json").read_text())
    runs = {t["result"]["index"]["spec"]: t["result"]["index"] for t in report["tests"]}
    assert sorted(runs) == sorted(INDEXES)
    exact, binary = runs["exact"], runs["exact+binary"]
    assert binary["bytes"] * 32 == exact["bytes"]  # 1/32 of float32's bytes
    assert binary["bytes_per_document"] * 32 == exact["bytes_per_document"] == 4 * 64
    lost = binary["neighbour_recall"]["neighbour_recall@10"]
    assert lost["low"] <= lost["value"] < 1.0
    rescored = runs["exact+binary(rescore=4)"]
    assert "the top 4 x k rescored in float32" in rescored["description"]
    assert rescored["bytes"] == binary["bytes"]  # rescoring reads the codes: no float copy
    narrow = runs["exact+dim=16"]
    assert narrow["bytes_per_document"] == 4 * 16
    assert narrow["delta"]["ndcg@10"]["low"] <= narrow["delta"]["ndcg@10"]["value"]
    assert "the first 16 dimensions, renormalised" in narrow["description"]
    assert "ranges from 59 documents" in runs["exact+int8"]["description"]
    rows = report["summary"]["indexes"][0]["rows"]
    assert [r["bytes_per_document"] for r in rows] == [
        runs[r["index"]]["bytes_per_document"] for r in rows
    ]

    with (project.path / "csv" / "indexes.csv").open(newline="") as f:
        written = {r["index"]: r for r in csv.DictReader(f)}
    assert float(written["exact+binary"]["bytes_per_document"]) == 8.0
    markdown = (project.path / "out.md").read_text()
    assert "| bytes/doc |" in markdown and "| exact+int8 |" in markdown
    page = (project.path / "out.html").read_text()
    section = page[page.index('<section id="indexes">') :].split("</section>", 1)[0]
    assert "<th>bytes/doc</th>" in section and "<code>exact+dim=16</code>" in section

    # the same inputs, the same figures: the quantised rankings do not move between runs
    again = project.runpytest("-p", "no:randomly", "--embedbench-json=again.json")
    again.assert_outcomes(passed=len(INDEXES))
    second = json.loads((project.path / "again.json").read_text())
    for first, then in zip(report["tests"], second["tests"], strict=True):
        assert (
            first["result"]["index"]["neighbour_recall"]
            == then["result"]["index"]["neighbour_recall"]
        )
        assert first["result"]["retrieved"] == then["result"]["retrieved"]
