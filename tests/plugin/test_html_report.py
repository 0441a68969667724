"""The report files of a real run: HTML, CSV and Markdown written at its end, the same HTML
from ``embedbench report``, and the page opened in a real browser (Debian's Chromium through
playwright; skipped where /usr/bin/chromium is absent: .ci/run installs it)."""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.cli import main
from pytest_embedbench.config.options import CSV_FILES

SEARCH = """
import pytest

@pytest.mark.embedbench(dataset="tiny")
def test_search(retrieval):
    assert retrieval.ndcg10 >= 0.2
"""
SECRET = "sk-live-config-secret-0123456789"
ENV_SECRET = "sk-env-secret-abcdefghij"
CHROMIUM = Path("/usr/bin/chromium")
#: a quiet headless Chromium: no network of its own, no GPU
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def offline_page(html: Path, width: int, args: list[str]) -> Iterator[Any]:
    """The page ``html`` loaded in Chromium (``args``) at ``width`` x 900 px. On leaving, the
    console logged no error and the page raised none, and it requested local files only."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    messages: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(html.as_uri(), wait_until="load")
            yield page
        finally:
            browser.close()
    errors = [m for m in messages if m.startswith(("error", "pageerror"))]
    assert not errors, errors
    assert requests and all(url.startswith("file://") for url in requests), requests


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
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    result = _run(project, monkeypatch)
    assert result.ret == 0, result.stdout.str()
    shots = tmp_path_factory.mktemp("screenshots")
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with offline_page(project.path / "out" / "r.html", 1200, args) as page:
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
    assert (shots / "report.png").stat().st_size > 10_000
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


# -- the page of a full run, laid out in a real browser (issue 30's done-when) -----------------

#: hashed bags of words that read only a text's first 200 words, as a model with a 256-token
#: limit does: its needle points past that fall to chance, and the report marks them
LAYOUT_CONFTEST = """
import sys
sys.path.insert(0, {repo!r})
from tests.helpers import HashingProvider
from pytest_embedbench import register_provider


class TruncatingHashing(HashingProvider):
    name = "hashcut"

    def load(self):
        super().load()
        self.info["max_seq_length"] = 256

    def embed_batch(self, texts, *, kind):
        return super().embed_batch([" ".join(t.split()[:200]) for t in texts], kind=kind)


register_provider(TruncatingHashing)
"""
LAYOUT_TESTS = """
import pytest
from pytest_embedbench import ModelSpec

MODELS = [ModelSpec("hashcut:h", name="h", dim={dim}), "bm25"]

@pytest.mark.embedbench(dataset="topics", models=MODELS)
def test_search(retrieval):
    pass

@pytest.mark.embedbench(dataset="topics", models=MODELS,
                        stress=["needle:1k,2k@0,0.5,1", "noise:typo", "chunk-size:16,32"])
def test_robust(retrieval):
    pass

@pytest.mark.embedbench(dataset="topics", models=MODELS)
def test_cut(retrieval):
    assert retrieval.cutoffs.calibration_queries > 0
"""
TOPIC_WORDS = [
    f"{a}{b}"
    for a in ("zor", "mip", "tal", "ven", "qua", "lek", "bry", "dox", "fum")
    for b in "abcdefghij"
]


def _topics_project(pytester: pytest.Pytester) -> None:
    """90 guides, each about its own rare word, chunked by characters; query i asks for guide
    i's word (45 calibration queries: enough for a conformal cut-off at alpha 0.05)."""
    from .conftest import REPO, write_beir

    corpus = [
        {
            "_id": f"d{i:02d}",
            "title": f"The {w} guide",
            "text": f"Notes about {w} and the {w} procedure. Every team reviews the weekly "
            f"report before the meeting starts. Ask the {w} desk when the steps are unclear.",
        }
        for i, w in enumerate(TOPIC_WORDS)
    ]
    queries = [
        {"_id": f"q{i:02d}", "text": f"where is {w} explained"} for i, w in enumerate(TOPIC_WORDS)
    ]
    qrels = "".join(f"q{i:02d}\td{i:02d}\t1\n" for i in range(len(TOPIC_WORDS)))
    write_beir(
        pytester.path / "data" / "topics", corpus, queries, "query-id\tcorpus-id\tscore\n" + qrels
    )
    pytester.makeconftest(LAYOUT_CONFTEST.format(repo=str(REPO)))
    pytester.makefile(
        ".yaml",
        embedbench="datasets:\n  topics:\n    path: data/topics\n    chunking: {strategy: "
        "recursive, size: 90, overlap: 0, unit: chars, min_chunk_chars: 20}\n",
    )
    pytester.makeini(
        "[pytest]\nembedbench_cache_dir = .cache-embedbench\nembedbench_bootstrap = 1000\n"
    )


def _full_run(pytester: pytest.Pytester) -> tuple[pytest.RunResult, Path]:
    """Two models, a baseline for one of them recorded, then the run to report: h regressed
    (12 dimensions instead of 64), bm25 the reference, a needle, noise and chunk-size sweep, and
    the cut-offs."""
    _topics_project(pytester)
    pytester.makepyfile(test_all=LAYOUT_TESTS.format(dim=64))
    recorded = pytester.runpytest(
        "-p", "no:cacheprovider", "--embedbench-update-baseline", "-k", "test_search"
    )
    recorded.assert_outcomes(passed=2, deselected=20)
    pytester.makepyfile(test_all=LAYOUT_TESTS.format(dim=12))
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--embedbench-reference=bm25",
        "--embedbench-json=out/r.json",
        "--embedbench-html=out/r.html",
        "--embedbench-md=out/r.md",
    )
    return result, pytester.path / "out"


#: every SVG label's box against every other's in its chart, and against the chart's own box
_LABEL_PROBLEMS = """() => {
  const problems = [];
  document.querySelectorAll("svg").forEach((svg, s) => {
    const frame = svg.getBoundingClientRect();
    const boxes = [...svg.querySelectorAll("text")].map(
      t => [t.textContent, t.getBoundingClientRect()]);
    for (const [text, b] of boxes) {
      if (b.left < frame.left - 0.5 || b.right > frame.right + 0.5 ||
          b.top < frame.top - 0.5 || b.bottom > frame.bottom + 0.5)
        problems.push(`svg ${s} (${svg.getAttribute("aria-label")}): "${text}" leaves the chart`);
    }
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [ta, a] = boxes[i], [tb, b] = boxes[j];
      const dx = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const dy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (dx > 0.5 && dy > 0.5)
        problems.push(`svg ${s} (${svg.getAttribute("aria-label")}): "${ta}" overlaps "${tb}"`);
    }
  });
  return problems;
}"""


@pytest.mark.slow  # every section in Chromium; the fast suite renders the page offline
def test_the_full_report_holds_its_layout_in_chromium(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Issue 30: the per-query diffs in the JSON, the Markdown and the gate's failure, the
    saved run re-rendered byte for byte; then in Chromium: no page overflow at 1280 and 1920
    px, the stress section drawn as SVG (no nested raw tables), the per-query diff counts
    listed, no chart label over another or out of its chart. Screenshots of each width are
    kept in tmp_path (printed on failure)."""
    result, out = _full_run(pytester)
    result.assert_outcomes(passed=21, failed=1)  # h's test_search regressed
    result.stdout.fnmatch_lines(["*ndcg@10 regressed: baseline 0.*", "    per query: *"])
    report = json.loads((out / "r.json").read_text())
    diffs = report["summary"]["query_diffs"]
    assert [(d["against"], d["model"]) for d in diffs] == [
        ("baseline", "bm25"),
        ("baseline", "h"),
        ("bm25", "h"),
    ]
    assert (diffs[0]["improved"], diffs[0]["degraded"]) == (0, 0)  # bm25 is as recorded
    # a baseline entry keeps each query's top 10, so the lost documents are named
    assert diffs[1]["degraded"] > 0 and diffs[1]["documents_known"] and diffs[1]["worst"][0]["lost"]
    assert diffs[2]["documents_known"] and diffs[2]["worst"][0]["lost"]
    markdown = (out / "r.md").read_text()
    assert "### Per-query changes" in markdown
    assert "| test_all.py::test_search[h] | baseline | ndcg@10 |" in markdown
    # the saved run renders as the run did, diffs and figures included
    again = tmp_path / "again"
    args = ["report", str(out / "r.json"), "-o", str(again / "r.html"), "--md", str(again / "r.md")]
    assert main(args) == 0
    assert (again / "r.html").read_bytes() == (out / "r.html").read_bytes()
    assert (again / "r.md").read_bytes() == markdown.encode()
    # .ci/run sets EMBEDBENCH_REQUIRE_BROWSER=1: in CI a missing browser fails, never skips
    if not CHROMIUM.exists() and not os.environ.get("EMBEDBENCH_REQUIRE_BROWSER"):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    keep = os.environ.get("EMBEDBENCH_ARTIFACTS")  # CI keeps the screenshots beside its logs
    with offline_page(out / "r.html", 1280, BROWSER_ARGS) as page:
        # every folded table open: none of them may widen the page either
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        for width in (1280, 1920):
            page.set_viewport_size({"width": width, "height": 900})
            # a full-page screenshot takes seconds: taken when a check fails (or for CI)
            shot = tmp_path / f"report-{width}.png"
            try:
                _check_layout(page, width, diffs)
            except AssertionError as failed:
                page.screenshot(path=str(shot), full_page=True)
                raise AssertionError(f"{failed}\nscreenshot: {shot}") from None
            if keep:
                page.screenshot(path=str(shot), full_page=True)
                Path(keep).mkdir(parents=True, exist_ok=True)
                shutil.copy(shot, Path(keep) / f"layout-{width}.png")


_CARD_LINES_RUN_ON = """() => [...document.querySelectorAll('.card span + span')]
  .filter(s => s.getBoundingClientRect().top < s.previousElementSibling
    .getBoundingClientRect().bottom - 1)
  .map(s => s.textContent)"""


def _check_layout(page: Any, width: int, diffs: list[dict[str, Any]]) -> None:
    """The done-when's checks of the page at one width."""
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner, f"{width} px: the page is {scroll} px wide"
    problems = page.evaluate(_LABEL_PROBLEMS)
    assert not problems, f"{width} px:\n" + "\n".join(problems)
    stress = page.locator("#stress")
    assert stress.locator("figure.needle svg").count() == 2  # a heatmap per model
    assert stress.locator("figure.needle svg rect.cell").count() == 2 * 6
    assert stress.locator("figure.needle svg text", has_text="✂").count() >= 1
    assert stress.locator("figure.needle svg text", has_text="chance 0.10").count() == 2
    assert stress.locator("figure.noise svg rect.bar").count() == 2  # typo x 2 models
    assert stress.locator("figure.noise svg path.whisker").count() == 2
    assert stress.locator("figure.chunks svg polyline.curve").count() == 2
    assert stress.locator("figure.chunks svg polygon.band").count() == 2
    assert stress.locator("table table").count() == 0  # no nested raw tables
    assert stress.locator("table.heat").count() == 0
    cut = page.locator("#cutoffs figure.cutoff svg")
    assert cut.count() == 1  # h's; bm25's scores have no global cut-off
    assert cut.locator("line.cutoff").count() >= 3
    assert cut.locator("rect.relevant").count() >= 1
    assert cut.locator("rect.random").count() >= 1
    counts = page.locator(".qdiff .qcounts").all_inner_texts()
    assert counts == [
        f"{d['improved']} improved · {d['degraded']} degraded · {d['unchanged']} "
        f"unchanged of {d['queries']} queries (a change of more than 0.001 in ndcg@10)"
        for d in diffs
    ]
    assert page.locator(".qdiff .chunk").count() >= 1  # the winning chunks' text


def test_a_tied_pick_says_so_on_a_line_of_its_own(tmp_path: Path) -> None:
    """The recommendation card of a pick tied with another model: the score and the "tied
    with" note are two lines in Chromium, not one run-on line (seen in the examples' report)."""
    from pytest_embedbench.report.summary.recommend import Pick, Recommendation, Scores
    from pytest_embedbench.report.writers.html.assets import _CSS, CSP
    from pytest_embedbench.report.writers.html.page import _Page
    from pytest_embedbench.report.writers.html.sections import _recommendation

    if not CHROMIUM.exists() and not os.environ.get("EMBEDBENCH_REQUIRE_BROWSER"):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    tie = Pick("balanced", "minilm", 0.7, Scores(0.55, 0.3, 0.15), Scores(1, 0, 1), ("hybrid",))
    page = _Page()
    _recommendation(page, Recommendation(picks=(tie,)), "balanced")
    html = tmp_path / "card.html"
    html.write_text(
        f'<!doctype html><meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<style>{_CSS}</style><body>{''.join(page.parts)}</body>",
        encoding="utf-8",
    )
    with offline_page(html, 1280, BROWSER_ARGS) as browser_page:
        assert browser_page.locator(".card span", has_text="tied with hybrid").count() == 1
        assert browser_page.evaluate(_CARD_LINES_RUN_ON) == []
