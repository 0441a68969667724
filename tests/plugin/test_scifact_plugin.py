"""SciFact through the plugin: MiniLM against bm25 with the paired difference, and a searcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import MODES


@pytest.mark.slow
def test_minilm_against_bm25_on_scifact(
    pytester: pytest.Pytester, scifact_path: Path, scifact_cache: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    pytester.makefile(
        ".yaml",
        embedbench=f"""
        datasets:
          scifact: {{path: {scifact_path}}}
        models: [hf:sentence-transformers/all-MiniLM-L6-v2, bm25]
        reference: bm25
        """,
    )
    pytester.makepyfile(
        test_scifact="""
        import pytest

        @pytest.mark.embedbench(dataset="scifact")
        def test_scifact(retrieval):
            assert retrieval.ndcg10 > 0.6
        """
    )
    result = pytester.runpytest_subprocess(
        "--embedbench-cache-dir", str(scifact_cache), "--embedbench-json", "r.json"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "dataset 'scifact' (300 queries, 5183 documents)",
            "model *nDCG@10*Δ nDCG@10 vs bm25*status",
            "all-MiniLM-L6-v2 *0.6451 ?0.*, 0.*?*-0.04* ?-0.*, *? *p=*passed",
            "bm25 *0.6863 ?0.*(reference)*passed",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    diff = report["comparisons"]["scifact"]["all-MiniLM-L6-v2"]
    assert diff["reference"] == "bm25" and diff["metric"] == "ndcg@10" and diff["n"] == 300
    assert diff["difference"] == pytest.approx(0.64508 - 0.68630, abs=1e-3)
    assert diff["low"] < diff["difference"] < diff["high"]
    assert 0 <= diff["p_value"] <= diff["p_holm"] <= 1
    picks = report["recommendations"]["datasets"]["scifact"]["picks"]
    assert picks["accuracy"]["model"] == "bm25"  # higher nDCG@10 on SciFact, and faster


@pytest.mark.parametrize("mode", MODES)
def test_searcher_fixture_with_pytest_benchmark(project: pytest.Pytester, mode: list[str]) -> None:
    pytest.importorskip("pytest_benchmark")
    project.makepyfile(
        test_speed="""
        import pytest

        @pytest.mark.embedbench(dataset="tiny", models=["bm25", "hashing:h"])
        def test_search_speed(searcher, benchmark):
            hits = benchmark(searcher.search, "export data csv", 3)
            assert len(hits) == 3 and hits[0][0] == "d3"
        """
    )
    result = project.runpytest("--embedbench-json", "r.json", *mode)
    result.assert_outcomes(passed=2)
    report = json.loads((project.path / "r.json").read_text())
    assert report["machine"]["format"] == "pytest-benchmark"
    assert "python_implementation" in report["machine"]
