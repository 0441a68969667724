"""The HTML report, the CSV files and the Markdown tables, rendered from hand-made JSON reports."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.config.options import parse_columns
from pytest_embedbench.report.writers.html import CSP, render_html
from pytest_embedbench.report.writers.markdown import render_markdown
from pytest_embedbench.report.writers.tabular import query_rows, write_csv
from pytest_embedbench.report.writers.terminal import render_tables

SECRET_ENV = "sk-env-secret-0123456789"
SECRET_CONFIG = "sk-config-secret-9876543210"


def _result(model: str, ndcg: float, p95: float, *, vram: float | None = None) -> dict[str, Any]:
    qids = ["q1", "q2", "q3"]
    scores = {"q1": ndcg + 0.1, "q2": ndcg - 0.2, "q3": ndcg + 0.1}
    return {
        "model": model,
        "queries": 3,
        "documents": 4,
        "k": [10],
        "metrics": {
            "ndcg@10": {"value": ndcg, "low": ndcg - 0.1, "high": ndcg + 0.1, "n": 3},
            "recall@10": {"value": 0.5, "low": 0.25, "high": 0.75, "n": 3},
        },
        "per_query": {"ndcg@10": scores, "recall@10": {q: 0.5 for q in qids}},
        "latency": {
            "p50_ms": p95 / 2,
            "p90_ms": p95 * 0.9,
            "p95_ms": p95,
            "p99_ms": p95 * 1.1,
            "qps": 1000 / p95,
            "per_query_ms": [1.25, 2.5, 0.1 + 0.2],
            "p95_interval_ms": [p95 * 0.8, p95 * 1.2],
        },
        "timings": {"model_load_s": 0.5, "document_embedding_s": 0.25, "index_build_s": 0.01},
        "documents_per_s": 16.0,
        "added_rss_mb": 12.5,
        "peak_rss_mb": 300.0,
        "cost": {"usd": 0.0, "price_per_1m_tokens": 0.0},
        "tokens": {"documents": 40, "queries": 9, "estimated": False},
        "cache": {"hits": 0, "misses": 4, "hit_rate": 0.0},
        "resources": {
            "dimension": 64,
            "index_bytes": 1024,
            "bytes_per_document": 256.0,
            "model_load_s": 0.5,
            "cold_batch_ms": 20.0,
            "warm_batch_p50_ms": 5.0,
            "tokens_per_s": 160.0,
            "vram_peak_mb": vram,
            "vram_source": "torch.cuda.max_memory_allocated" if vram else None,
        },
        "query_texts": {"q1": "reset <script>alert(1)</script>", "q2": "export", "q3": "invoices"},
        "retrieved": {"q1": ["d1", "d2"], "q2": ["d2"], "q3": ["d3", "d4"]},
        "relevant": {"q1": {"d1": 2}, "q2": {"d3": 1}, "q3": {"d4": 1}},
    }


def _test(model: str, result: dict[str, Any] | None, status: str = "passed") -> dict[str, Any]:
    return {
        "nodeid": f"t.py::test_search[{model}]",
        "test": "test_search",
        "model": model,
        "spec": "bm25" if model == "bm25" else f"hf:{model}",
        "dataset": "tiny",
        "k": [10],
        "status": status,
        "error": None if result else f"ProviderError: key {SECRET_ENV} refused",
        "result": result,
        "baseline": None,
    }


def _report(**extra: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "created": "2026-11-30T08:00:00+00:00",
        "machine": {"node": "box", "cpu_count": 2},
        "packages": {"numpy": "2.1.0"},
        "commit": None,
        "cache": {"hits": 0, "misses": 8, "hit_rate": 0.0},
        "configuration": {
            "seed": 0,
            "embedbench_yaml": [{"content": {"providers": {"openai": {"api_key": SECRET_CONFIG}}}}],
        },
        "tests": [
            _test("bm25", _result("bm25", 0.6, 0.2)),
            _test("<b>MiniLM</b>", _result("<b>MiniLM</b>", 0.7, 9.0, vram=512.0)),
            _test("broken", None, "error"),
        ],
        "comparisons": {
            "tiny": {
                "<b>MiniLM</b>": {
                    "difference": 0.1,
                    "low": 0.02,
                    "high": 0.2,
                    "n": 3,
                    "p_value": 0.03,
                    "p_holm": 0.03,
                    "test": "randomization",
                    "reference": "bm25",
                    "metric": "ndcg@10",
                }
            }
        },
        "recommendations": {"priority": "balanced", "datasets": {}},
        **extra,
    }


@pytest.fixture(autouse=True)
def _secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDBENCH_TEST_API_KEY", SECRET_ENV)


def test_the_same_report_renders_the_same_bytes() -> None:
    assert render_html(_report()) == render_html(json.loads(json.dumps(_report())))


def test_the_page_is_self_contained() -> None:
    page = render_html(_report())
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
    assert "default-src 'none'" in CSP
    assert "<script" not in page.replace("&lt;script&gt;", "")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@media print" in page
    assert page.count("<svg") >= 3  # metric bars, scatter, latency percentiles


def test_user_text_is_escaped() -> None:
    page = render_html(_report())
    assert "<b>MiniLM</b>" not in page
    assert "&lt;b&gt;MiniLM&lt;/b&gt;" in page
    assert "reset &lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_drilldown_lists_the_worst_query_first() -> None:
    page = render_html(_report())
    details = page[page.index("bm25: 3 queries") :]
    assert details.index("<code>q2</code>") < details.index("<code>q1</code>")
    assert '<li class="hit">d1 (2)</li>' in details


def test_secrets_never_reach_html_csv_or_markdown(tmp_path: Path) -> None:
    report = _report()
    texts = [render_html(report), render_markdown(report)]
    texts += [p.read_text() for p in write_csv(tmp_path, report)]
    for text in texts:
        assert SECRET_ENV not in text and SECRET_CONFIG not in text
    assert "***" in texts[0]


def _point(model: str, kind: str, wid: str, params: dict[str, Any], **extra: Any) -> dict:
    return {
        "model": model,
        "kind": kind,
        "id": wid,
        "params": params,
        "seeds": [0],
        "status": "passed",
        "metrics": {},
        "clean": None,
        "delta": None,
        "info": {},
        **extra,
    }


def test_stress_results_render_as_tables_only_when_present() -> None:
    assert "Stress results" not in render_html(_report())
    hit = {"hit@1": {"value": 0.75, "low": 0.5, "high": 1.0, "n": 4}}
    info = {"cut": True, "chance_hit@1": 0.1, "max_seq_length": 256}
    stress = {
        "tiny": [
            _point("bm25", "needle", "needle-2k-d50", {"depth": 0.5, "length": 2048}, metrics=hit),
            _point("bm25", "needle", "needle-8k-d50", {"depth": 0.5, "length": 8192}, info=info),
            _point(
                "bm25",
                "noise",
                "typo",
                {"noise": "typo"},
                metrics={"ndcg@10": {"value": 0.5, "low": 0.4, "high": 0.6, "n": 4}},
                clean={"value": 0.6, "low": 0.5, "high": 0.7, "n": 4},
                delta={"value": -0.1, "low": -0.2, "high": -0.01, "n": 4},
            ),
        ]
    }
    page = render_html(_report(stress=stress))
    section = page[page.index("<h2>Stress results</h2>") : page.index("Environment and")]
    assert "needle hit@1 for bm25 (depth x length; chance 0.10; reads 256 tokens)" in section
    # the needle grid drawn: a cell per point, its hit@1 written in it, the cut one outlined
    heat = section[section.index('<figure class="grid needle">') :]
    heat = heat[: heat.index("</figure>")]
    assert heat.count('<rect class="cell"') == 2 and ">0.75</text>" in heat
    assert ">2048</text>" in heat and ">8192</text>" in heat and ">50%</text>" in heat
    assert ">– ✂</text>" in heat and 'stroke="#b3261e"' in heat  # past the model's 256 tokens
    assert ">chance 0.10</text>" in heat
    assert "✂ the needle lay past the 256 tokens the model reads" in heat
    # the noise workload as a bar with its interval and verdict, its table folded away
    noise = section[section.index('<figure class="stress-chart noise">') :]
    noise = noise[: noise.index("</figure>")]
    assert noise.count('<rect class="bar"') == 1 and noise.count('<path class="whisker"') == 1
    assert '<text x="' in noise and 'class="v-worse">-0.1000 worse</text>' in noise
    assert '-0.1000 [-0.200, -0.010] <span class="v-worse">worse</span>' in section
    assert "<details><summary>Query noise as a table</summary>" in section
    assert '<table class="heat">' not in section
    assert "<table><tr><th" not in section  # no raw key/value dump


def test_priority_and_title_can_be_chosen() -> None:
    rec = {
        "picks": {
            name: {
                "model": "bm25",
                "score": 0.9,
                "weights": {"accuracy": 0.5, "speed": 0.3, "cost": 0.2},
                "components": {"accuracy": 1.0, "speed": 0.5, "cost": 1.0},
            }
            for name in ("accuracy", "speed", "balanced", "cost")
        },
        "components": {"bm25": {"accuracy": 1.0, "speed": 0.5, "cost": 1.0}},
        "speed_tiers": [["bm25"]],
    }
    report = _report(recommendations={"priority": "balanced", "datasets": {"tiny": rec}})
    page = render_html(report, priority="speed", title="Support <search>")
    assert "<title>Support &lt;search&gt;</title>" in page
    assert "speed-first (selected)" in page and "balanced (selected)" not in page


def test_vram_is_na_off_a_gpu() -> None:
    page = render_html(_report())
    assert "torch.cuda.max_memory_allocated" in page
    row = render_tables(_report()["tests"], columns=["ndcg@10", "vram_peak_mb", "dimension"])
    bm25 = next(line for line in row if line.startswith("bm25"))
    assert "n/a" in bm25 and "64" in bm25


def test_results_csv_round_trips_numbers(tmp_path: Path) -> None:
    report = _report()
    results, queries, *_ = write_csv(tmp_path, report)
    rows = list(csv.DictReader(io.StringIO(results.read_text())))
    assert [r["model"] for r in rows] == ["<b>MiniLM</b>", "bm25", "broken"]
    bm25 = rows[1]
    assert float(bm25["ndcg@10"]) == 0.6 and float(bm25["ndcg@10_low"]) == 0.6 - 0.1
    assert float(bm25["p50_ms"]) == 0.1 and float(bm25["dimension"]) == 64
    assert bm25["vram_peak_mb"] == "" and rows[2]["ndcg@10"] == ""
    q = list(csv.DictReader(io.StringIO(queries.read_text())))
    assert len(q) == 6
    first = next(r for r in q if r["model"] == "bm25" and r["query_id"] == "q3")
    assert float(first["latency_ms"]) == 0.1 + 0.2  # repr: the float comes back bit for bit
    assert first["retrieved"] == "d3|d4" and first["relevant"] == "d4"
    assert len(list(query_rows(report))) == 6


def test_a_sampled_latency_shows_by_query_id_and_a_dash_for_queries_not_timed(
    tmp_path: Path,
) -> None:
    """A run times a seeded sample of its queries: per_query_ms is by id, the others blank."""
    report = _report()
    for test in report["tests"][:2]:
        test["result"]["latency"]["per_query_ms"] = {"q3": 7.25, "q1": 1.5}  # q2 not timed
    page = render_html(report)
    details = page[page.index("bm25: 3 queries") :]
    details = details[: details.index("</table>")]

    def row(qid: str) -> str:
        """The query's text row, then its figures' row."""
        start = details.index(f"<code>{qid}</code>")
        return details[start : details.index("</tr>", details.index("</tr>", start) + 5)]

    assert "<td>1.5</td>" in row("q1") and "<td>7.2</td>" in row("q3")
    assert "<td>-</td>" in row("q2")
    _, queries, *_ = write_csv(tmp_path, report)
    rows = list(csv.DictReader(io.StringIO(queries.read_text())))
    latency = {r["query_id"]: r["latency_ms"] for r in rows if r["model"] == "bm25"}
    assert latency == {"q1": "1.5", "q2": "", "q3": "7.25"}


def test_markdown_has_the_tables() -> None:
    text = render_markdown(_report(), title="Run")
    assert text.startswith("## Run\n")
    assert "| model | ndcg@10 | recall@10 |" in text
    assert "| bm25 | 0.6000 [0.500, 0.700] |" in text
    assert "&lt;b&gt;MiniLM&lt;/b&gt;" in text  # no raw HTML in a PR comment
    assert (
        "| &lt;b&gt;MiniLM&lt;/b&gt; | bm25 | +0.1000 [+0.020, +0.200] better | 0.03 | 0.03 |"
        in text
    )
    assert "| **0.7000** [0.600, 0.800] |" in text  # the best in its column, in bold


def test_columns_option_names_a_bad_column() -> None:
    assert parse_columns("nDCG@10, p95_ms,index_mb") == ("nDCG@10", "p95_ms", "index_mb")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown column 'speed'"):
        parse_columns("ndcg@10,speed")


def test_every_report_says_which_queries_the_latency_was_timed_on() -> None:
    """A sampled latency is named where the figures are shown: terminal, HTML and Markdown."""
    report = _report()
    for test in report["tests"][:2]:
        test["result"]["latency"].update(n=2, queries=3, passes=3)
    said = "median of 3 timed passes over a seeded sample of 2 of 3 queries"
    lines = render_tables(report["tests"])
    assert f"latency (query embedding + search): {said}" in lines
    assert f"Latency covers query embedding plus search, {said};" in render_html(report)
    assert f"Latency (query embedding + search): {said}." in render_markdown(report)
    # timed differently: each model is named with what it was timed on, in table order
    report["tests"][0]["result"]["latency"].update(n=3, passes=1)
    lines = render_tables(report["tests"])
    assert (
        f"latency (query embedding + search): <b>MiniLM</b>: {said}; "
        "bm25: one timed pass over all 3 queries"
    ) in lines
    # nothing timed (latency_passes=0): no latency line
    for test in report["tests"][:2]:
        test["result"]["latency"].update(n=0)
    assert not any(line.startswith("latency") for line in render_tables(report["tests"]))
    assert "Latency (query embedding" not in render_markdown(report)


_SVG = re.compile(r'<svg [^>]*viewBox="0 0 (\d+) (\d+)"[^>]*>(.*?)</svg>', re.S)
_LABEL = re.compile(
    r'<text x="(-?[\d.]+)" y="(-?[\d.]+)"(?: text-anchor="(\w+)")?[^>]*>(.*?)</text>', re.S
)


def _crowded_report() -> dict[str, Any]:
    """Eight models with long names and near-equal figures, a wide needle grid, three noise
    workloads, four chunk sizes, and cut-offs whose four lines nearly coincide."""
    models = [f"a-model-with-a-long-name-{i}" for i in range(8)]
    tests = [_test(m, _result(m, 0.6 + i / 1000, 1.0 + i / 1000)) for i, m in enumerate(models)]
    level = {"keeps_relevant": 0.5, "lets_random": 0.01, "target": 0.01}
    tests[0]["result"]["cutoffs"] = {
        "levels": {
            name: {**level, "name": name, "threshold": t}
            for name, t in (("strict", 0.801), ("balanced", 0.799), ("loose", 0.797))
        },
        "conformal": {**level, "name": "conformal", "threshold": 0.798, "target": 0.95},
        "calibration_queries": 50,
        "heldout_queries": 50,
        "distribution": {
            "edges": [0.2 + 0.02 * i for i in range(33)],
            "relevant": [0] * 16 + [3] * 16,
            "random": [40] * 16 + [1] * 16,
        },
    }
    value = {"value": 0.5, "low": 0.4, "high": 0.6, "n": 3}
    delta = {"value": -0.1, "low": -0.2, "high": -0.01, "n": 3}
    points = []
    for m in models[:2]:
        for length in (1024, 2048, 4096, 8192, 16384, 32768):
            for depth in (0.0, 0.25, 0.5, 0.75, 1.0):
                hit = {"hit@1": {**value, "value": 1.0 - depth}}
                info = {"cut": length > 2048, "chance_hit@1": 0.1, "max_seq_length": 2048}
                points.append(
                    _point(
                        m,
                        "needle",
                        f"needle-{length}-{depth}",
                        {"depth": depth, "length": length},
                        metrics=hit,
                        info=info,
                    )
                )
    for m in models:
        for noise in ("typo", "case-x3", "a-rather-long-noise-name"):
            points.append(
                _point(m, "noise", noise, {}, metrics={"ndcg@10": value}, clean=value, delta=delta)
            )
        for size in (64, 128, 256, 512):
            points.append(
                _point(
                    m,
                    "chunk-size",
                    f"chunk-{size}",
                    {"size": size},
                    metrics={"ndcg@10": value},
                    clean=value,
                    delta=delta,
                )
            )
    return _report(tests=tests, stress={"tiny": points})


def test_no_chart_label_overlaps_another_or_leaves_its_chart() -> None:
    """Every SVG label's box, estimated as charts.text_box does (wider than any browser draws
    it), inside its chart and clear of every other label: eight long-named models with
    near-equal figures, a 6 x 5 needle grid, 24 noise bars, 8 chunk-size curves and four
    cut-off lines within 0.004 of each other. (The browser test measures the real boxes.)"""
    from html import unescape

    from pytest_embedbench.report.writers.html.charts import text_box

    page = render_html(_crowded_report())
    charts = _SVG.findall(page)
    assert len(charts) >= 8  # metrics, scatter, latency, 2 needles, noise, chunks, cut-off
    problems = []
    for width, height, body in charts:
        boxes = []
        for x, y, anchor, text in _LABEL.findall(body):
            box = text_box(float(x), float(y), unescape(text), anchor or "start")
            if box[0] < 0 or box[1] < 0 or box[2] > int(width) or box[3] > int(height):
                problems.append(f"{text!r} leaves its {width}x{height} chart: {box}")
            for other, seen in boxes:
                if box[0] < seen[2] and seen[0] < box[2] and box[1] < seen[3] and seen[1] < box[3]:
                    problems.append(f"{text!r} overlaps {other!r}")
            boxes.append((text, box))
    assert not problems, "\n".join(problems)
    # the scatter names what it can: each model at most once, none stacked on another
    scatter = next(body for _, _, body in charts if "p95 latency (ms)" in body)
    named = [t for *_, t in _LABEL.findall(scatter) if t.startswith("a-model")]
    assert 1 <= len(named) <= 8 and len(set(named)) == len(named)
