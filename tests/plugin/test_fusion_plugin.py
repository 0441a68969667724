"""A hybrid with a tuned convex fusion through pytest: the tuned weight, where it was tuned and
that the figures are scored on the held-out queries reach the terminal, the JSON, HTML and
Markdown reports and the JUnit properties."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from .conftest import CONFTEST, make_dataset

CONFIG = """
datasets:
  topics: {path: data/topics}
models:
  - spec: "hybrid:hashing:h+bm25"
    name: tuned
    options: {fusion: convex, left: {dim: 16}, tune: {share: 0.25, seed: 1}}
"""


@pytest.fixture
def topics(pytester: pytest.Pytester) -> pytest.Pytester:
    make_dataset(pytester)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", embedbench=CONFIG)
    pytester.makeini(
        "[pytest]\nembedbench_cache_dir = .cache-embedbench\nembedbench_bootstrap = 500\n"
    )
    pytester.makepyfile(
        test_search="""
import pytest

@pytest.mark.embedbench(dataset="topics")
def test_search(retrieval):
    info = retrieval.model_info["fusion"]
    assert info["tuned"]["tuning_queries"] == 15
    assert retrieval.ndcg10.n == 45
"""
    )
    return pytester


def test_tuned_fusion_is_reported_with_its_weight_and_held_out_queries(
    topics: pytest.Pytester,
) -> None:
    result = topics.runpytest(
        "--embedbench-json=r.json",
        "--embedbench-html=r.html",
        "--embedbench-md=r.md",
        "--junitxml=j.xml",
    )
    result.assert_outcomes(passed=1)
    line = (
        "*test_search.py::test_search[[]tuned[]]: convex fusion (minmax) weights */* tuned on a "
        "seeded 0.25 share of the queries (15 of 60 queries) (ndcg@10 * there); its figures are "
        "scored on the 45 other queries only*"
    )
    result.stdout.fnmatch_lines([line])
    report = json.loads((topics.path / "r.json").read_text())
    (test,) = report["tests"]
    fusion = test["result"]["model_info"]["fusion"]
    tuned = fusion["tuned"]
    assert fusion["fusion"] == "convex" and fusion["norm"] == "minmax"
    assert tuned["seed"] == 1 and tuned["held_out_queries"] == 45 == test["result"]["queries"]
    assert fusion["weights"] == [tuned["weight"], pytest.approx(1 - tuned["weight"])]
    assert tuned["score"] == max(tuned["grid_scores"])
    (note,) = report["summary"]["fusion_notes"]
    assert "15 of 60 queries" in note
    for name in ("r.html", "r.md"):
        assert "scored on the 45 other queries only" in (topics.path / name).read_text()
    props = {
        p.get("name"): p.get("value") for p in ET.parse(topics.path / "j.xml").iter("property")
    }
    assert float(props["embedbench.fusion.weight"]) == tuned["weight"]
    assert props["embedbench.fusion.tuning_queries"] == "15"


def test_a_bad_fusion_option_fails_the_run_naming_it(topics: pytest.Pytester) -> None:
    topics.makefile(".yaml", embedbench=CONFIG.replace("share: 0.25", "share: 1.25"))
    result = topics.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*hybrid tune share=1.25: must be between 0 and 1*"])
