"""HTML report size and speed: the example run's report bytes (target well under 1 MB), and the
time to render a report with 10,000 per-query rows and to open it in Chromium (each < 2 s).

Usage::

    python benchmarks/bench_report.py [--json examples-report.json] [--rows 10000] [--models 2]

Without ``--json`` the examples run once with bm25 (seconds, no model weights) to make the
example report. The large report is synthetic: ``--models`` models over ``rows / models``
queries each, shaped like a real result (every metric at k = 1, 5, 10, 100, top-10 ids).
Opening needs Debian's /usr/bin/chromium and playwright; without them that figure is skipped.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from pytest_embedbench.report.writers.html import render_html  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")


def example_report(folder: Path) -> dict[str, Any]:
    path = folder / "examples.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "examples/test_support_search.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "--embedbench-models=bm25",
            f"--embedbench-cache-dir={folder / 'cache'}",
            f"--embedbench-json={path}",
        ],
        cwd=REPO,
        check=False,
        capture_output=True,
    )
    return dict(json.loads(path.read_text()))


def large_report(template: dict[str, Any], rows: int, models: int) -> dict[str, Any]:
    """``template``'s first test, repeated for ``models`` models over ``rows // models``
    queries of made-up scores and ids."""
    rng = random.Random(0)
    n = rows // models
    qids = [f"q{i:05d}" for i in range(n)]
    base = next(t for t in template["tests"] if t.get("result"))
    tests = []
    for m in range(models):
        test = copy.deepcopy(base)
        name = f"model-{m}"
        test.update(model=name, nodeid=f"test_big.py::test_search[{name}]", dataset="big")
        result = test["result"]
        result["queries"] = n
        result["per_query"] = {
            metric: {q: rng.random() for q in qids} for metric in result["metrics"]
        }
        result["latency"]["per_query_ms"] = [rng.uniform(1, 20) for _ in qids]
        result["query_texts"] = {q: f"how do I do thing number {q} in the product" for q in qids}
        result["retrieved"] = {q: [f"doc-{rng.randrange(50_000)}" for _ in range(10)] for q in qids}
        result["relevant"] = {q: {f"doc-{rng.randrange(50_000)}": 1} for q in qids}
        tests.append(test)
    return {**template, "tests": tests, "comparisons": {}, "recommendations": {}}


def open_in_chromium(path: Path) -> tuple[float, float] | None:
    """(launch seconds, load seconds) of ``path`` in Chromium, or None without one."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not CHROMIUM.exists():
        return None
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as pw:
        t0 = time.perf_counter()
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=args)
        launched = time.perf_counter() - t0
        page = browser.new_page()
        t1 = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load")
        page.locator("svg").first.bounding_box()  # laid out, not only parsed
        loaded = time.perf_counter() - t1
        browser.close()
    return launched, loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="an existing JSON report as the example")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        example = json.loads(args.json.read_text()) if args.json else example_report(folder)
        page = render_html(example)
        size = len(page.encode())
        print(f"example report: {size:,} bytes ({size / 1024:.0f} KiB) [target well under 1 MB]")
        big = large_report(example, args.rows, args.models)
        t0 = time.perf_counter()
        big_page = render_html(big)
        render_s = time.perf_counter() - t0
        path = folder / "big.html"
        path.write_text(big_page, encoding="utf-8")
        print(
            f"render {args.rows:,} per-query rows ({args.models} models): {render_s:.2f} s, "
            f"{len(big_page.encode()) / 1024**2:.1f} MB [target < 2 s]"
        )
        opened = open_in_chromium(path)
        if opened is None:
            print("open in Chromium: skipped (no /usr/bin/chromium or no playwright)")
        else:
            print(
                f"open in Chromium: {opened[1]:.2f} s to load and lay out "
                f"(browser launch {opened[0]:.2f} s more) [target < 2 s]"
            )


if __name__ == "__main__":
    main()
