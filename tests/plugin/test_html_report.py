"""The report files of a real run: HTML, CSV and Markdown written at its end, the same HTML
from ``embedbench report``, and the page opened in a real browser (Debian's Chromium through
playwright; skipped where /usr/bin/chromium is absent: .ci/run installs it)."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_embedbench.cli import main
from pytest_embedbench.options import CSV_FILES

SEARCH = """
import pytest

@pytest.mark.embedbench(dataset="tiny")
def test_search(retrieval):
    assert retrieval.ndcg10 >= 0.2
"""
SECRET = "sk-live-config-secret-0123456789"
ENV_SECRET = "sk-env-secret-abcdefghij"
CHROMIUM = Path("/usr/bin/chromium")


def _run(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    """The tiny project (the hashing model and bm25) with every report file asked for, an
    API key in embedbench.yaml and a secret environment value inside a query text."""
    monkeypatch.setenv("EMBEDBENCH_TEST_TOKEN", ENV_SECRET)
    queries = project.path / "data" / "tiny" / "queries.jsonl"
    lines = queries.read_text().splitlines()
    lines[1] = json.dumps({"_id": "q2", "text": f"export data csv <b>{ENV_SECRET}</b>"})
    queries.write_text("\n".join(lines) + "\n")
    config = project.path / "embedbench.yaml"
    config.write_text(
        config.read_text().rstrip() + f"\nproviders:\n  openai: {{api_key: {SECRET}}}\n"
    )
    project.makepyfile(test_search=SEARCH)
    return project.runpytest(
        "-p",
        "no:cacheprovider",
        "--embedbench-json=out/r.json",
        "--embedbench-html=out/r.html",
        "--embedbench-csv=out/csv",
        "--embedbench-md=out/summary.md",
    )


def test_the_run_writes_every_report_and_names_them_last(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _run(project, monkeypatch)
    assert result.ret == 0, result.stdout.str()
    out = project.path / "out"
    lines = result.stdout.lines
    end = next(i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("Markdown: "))
    assert lines[end - 2 - len(CSV_FILES) : end + 1] == [
        f"JSON report: {out / 'r.json'}",
        f"HTML report: {out / 'r.html'}",
        *(f"CSV: {out / 'csv' / name}" for name in CSV_FILES),
        f"Markdown: {out / 'summary.md'}",
    ]
    # a saved run renders byte for byte as the run did
    again = tmp_path / "again.html"
    assert main(["report", str(out / "r.json"), "-o", str(again)]) == 0
    assert again.read_bytes() == (out / "r.html").read_bytes()
    assert (
        main(
            ["report", str(out / "r.json"), "--csv", str(tmp_path), "--md", str(tmp_path / "m.md")]
        )
        == 0
    )
    for name in CSV_FILES:
        assert (tmp_path / name).read_bytes() == (out / "csv" / name).read_bytes(), name
    assert (tmp_path / "m.md").read_bytes() == (out / "summary.md").read_bytes()

    report = json.loads((out / "r.json").read_text())
    for path in [out / "r.html", out / "summary.md", *sorted((out / "csv").iterdir())]:
        text = path.read_text()
        assert SECRET not in text and ENV_SECRET not in text, path
    assert "export data csv &lt;b&gt;***&lt;/b&gt;" in (out / "r.html").read_text()

    with (out / "csv" / "results.csv").open(newline="") as fh:
        rows = {row["model"]: row for row in csv.DictReader(fh)}
    assert set(rows) == {"h", "bm25"}
    by_model = {t["model"]: t["result"] for t in report["tests"]}
    for model, row in rows.items():
        result = by_model[model]
        assert float(row["ndcg@10"]) == result["metrics"]["ndcg@10"]["value"]
        assert float(row["p95_ms"]) == result["latency"]["p95_ms"]
        assert float(row["index_mb"]) == result["resources"]["index_bytes"] / 1024**2
    assert rows["h"]["dimension"] == "64.0" and rows["bm25"]["dimension"] == ""
    with (out / "csv" / "queries.csv").open(newline="") as fh:
        queries = list(csv.DictReader(fh))
    assert len(queries) == 8  # two models x four queries
    q1 = next(q for q in queries if q["model"] == "bm25" and q["query_id"] == "q1")
    assert q1["relevant"] == "d1" and q1["retrieved"].split("|")[0] == "d1"
    assert float(q1["ndcg@10"]) == by_model["bm25"]["per_query"]["ndcg@10"]["q1"]
    resources = by_model["h"]["resources"]
    assert resources["dimension"] == 64 and resources["index_bytes"] == 6 * 64 * 4
    assert resources["vram_peak_mb"] is None and resources["document_batches"] >= 1


def test_columns_choose_the_terminal_table(project: pytest.Pytester) -> None:
    project.makepyfile(test_search=SEARCH)
    result = project.runpytest("-p", "no:cacheprovider", "--embedbench-columns=ndcg@10,dimension")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["model*nDCG@10*dim*status", "h *64 *passed"])
    bad = project.runpytest("-p", "no:cacheprovider", "--embedbench-columns=ndcg@10,speed")
    assert bad.ret != 0
    bad.stderr.fnmatch_lines(["*unknown column 'speed'*"])


# .ci/run sets EMBEDBENCH_REQUIRE_BROWSER=1: in CI a missing browser fails, never skips
@pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("EMBEDBENCH_REQUIRE_BROWSER"),
    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)",
)
def test_the_page_renders_in_chromium_offline(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    result = _run(project, monkeypatch)
    assert result.ret == 0, result.stdout.str()
    page_path = project.path / "out" / "r.html"
    shots = tmp_path_factory.mktemp("screenshots")
    messages: list[str] = []
    requests: list[str] = []
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri(), wait_until="load")
            assert page.title() == "Embedding retrieval benchmark"
            assert page.locator("svg").count() >= 3
            assert page.locator("svg rect.bar").count() >= 4
            assert page.locator("svg circle.point").count() == 2
            assert page.locator("table").count() >= 4
            box = page.locator("svg").first.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100
            assert page.locator("details").count() >= 2
            page.locator("details summary", has_text="bm25: 4 queries").click()
            assert page.locator("li.hit").first.is_visible()
            page.screenshot(path=str(shots / "report.png"), full_page=True)
            page.emulate_media(media="print")
            page.screenshot(path=str(shots / "report-print.png"))
        finally:
            browser.close()
    assert (shots / "report.png").stat().st_size > 10_000
    errors = [m for m in messages if m.startswith(("error", "pageerror"))]
    assert not errors, errors
    assert requests and all(url.startswith("file://") for url in requests), requests
    keep = os.environ.get("EMBEDBENCH_ARTIFACTS")
    if keep:  # CI keeps the screenshot beside its logs
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shots / "report.png", Path(keep) / "html-report.png")


@pytest.mark.slow
def test_xdist_writes_the_same_kind_of_report(project: pytest.Pytester, tmp_path: Path) -> None:
    project.makepyfile(test_search=SEARCH)
    result = project.runpytest(
        "-n", "2", "--embedbench-json=out/r.json", "--embedbench-html=out/r.html"
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["JSON report: *r.json", "HTML report: *r.html"])
    again = tmp_path / "again.html"
    assert main(["report", str(project.path / "out" / "r.json"), "-o", str(again)]) == 0
    assert again.read_bytes() == (project.path / "out" / "r.html").read_bytes()
    assert (project.path / "out" / "r.html").read_text().count("queries, worst ndcg@10 first") == 2
