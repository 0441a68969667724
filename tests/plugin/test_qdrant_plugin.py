"""Qdrant through pytest (issue 45) on the bundled support dataset: its local mode as exact
search, its HNSW (qdrant-edge-py) built and measured like every engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.index_engines import require_engine

SUPPORT = Path(__file__).resolve().parents[2] / "examples" / "support"
WEAK = "qdrant:hnsw(m=4,ef_construct=4,ef=1)"


@pytest.mark.slow  # a whole pytest run: the full suite
def test_qdrant_through_pytest(project: pytest.Pytester) -> None:
    require_engine("qdrant_client", "qdrant", imported=False)
    require_engine("qdrant_edge", "qdrant")
    project.makepyfile(
        test_qdrant=f"""
        import pytest

        @pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[10],
                                indexes=["qdrant:exact", "qdrant:hnsw(m=16,ef=64)", {WEAK!r}])
        def test_qdrant(retrieval):
            run = retrieval.index
            recall = retrieval.neighbour_recall(10)
            assert run.nbytes > 0 and run.build_s > 0 and run.qps > 0
            if run.spec.kind == "exact":  # the local mode: a brute-force scan
                assert recall == 1.0 and float(retrieval.delta_vs_exact("ndcg@10")) == 0.0
                assert retrieval.rankings == retrieval.exact.rankings
                assert run.deterministic
            else:
                assert "59 of 59 vectors indexed" in run.description
                assert not run.deterministic
            if run.spec.spec == {WEAK!r}:  # four neighbours a node, one candidate
                assert recall < 1.0 and recall.low <= recall <= recall.high
        """
    )
    result = project.runpytest("-p", "no:randomly", "--embedbench-json=out.json")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"*h {WEAK}: not deterministic: Qdrant's HNSW takes no seed*"])
    report = json.loads((project.path / "out.json").read_text())
    figures = {t["result"]["index"]["spec"]: t["result"]["index"] for t in report["tests"]}
    assert figures["qdrant:exact"]["deterministic"] is True
    assert "local mode" in figures["qdrant:exact"]["description"]
    assert figures[WEAK]["neighbour_recall"]["neighbour_recall@10"]["value"] < 1.0


@pytest.mark.slow  # a whole pytest run: the full suite
def test_qdrant_precisions_through_pytest(project: pytest.Pytester) -> None:
    """qdrant:hnsw's own float16, int8 and binary measured as every index: bytes a document
    (the shard's whole folder, originals and codes), neighbour recall against the float32
    exact search and the paired nDCG@10 delta with its interval."""
    require_engine("qdrant_edge", "qdrant")
    specs = ["qdrant:hnsw", "qdrant:hnsw+float16", "qdrant:hnsw+int8(rescore=4)"]
    specs += ["qdrant:hnsw+binary"]
    project.makepyfile(
        test_qdrant=f"""
        import math

        import pytest

        @pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[10],
                                indexes={specs!r})
        def test_qdrant(retrieval):
            run = retrieval.index
            recall = retrieval.neighbour_recall(10)
            delta = retrieval.delta_vs_exact("ndcg@10")
            assert recall.low <= recall <= recall.high and delta.low <= delta <= delta.high
            assert run.bytes_per_document == run.nbytes / 59
            if run.spec.sizing.precision == "binary":  # the sign bits alone lose neighbours
                assert recall < 1.0 and "Qdrant's binary quantisation" in run.description
                assert "scored by the codes alone" in run.description
                assert "padded by Qdrant to 128-bit words" in run.description
        """
    )
    result = project.runpytest("-p", "no:randomly", "--embedbench-json=out.json")
    result.assert_outcomes(passed=4)
    report = json.loads((project.path / "out.json").read_text())
    figures = {t["result"]["index"]["spec"]: t["result"]["index"] for t in report["tests"]}
    assert sorted(figures) == sorted(specs)
    per_doc = {spec: figures[spec]["bytes_per_document"] for spec in specs}
    # float16 halves the stored vectors; int8 and binary add their codes beside the float32
    # originals Qdrant keeps, so their shards are larger than float32's, never 1/4 or 1/32
    assert per_doc["qdrant:hnsw+float16"] < per_doc["qdrant:hnsw"]
    assert per_doc["qdrant:hnsw+int8(rescore=4)"] > per_doc["qdrant:hnsw"]
    assert per_doc["qdrant:hnsw+binary"] > per_doc["qdrant:hnsw"]
    assert "the codes alone" in figures["qdrant:hnsw+binary"]["note"]
