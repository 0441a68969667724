"""Stress workloads through real pytest sessions: ids, -k, clean/delta, skip, reports, gate."""

from __future__ import annotations

import json

import pytest

from .conftest import MODES, add_to_conftest, bench_module, run_expecting

STRESS = """
import pytest

@pytest.mark.embedbench(models=["bm25", "hashing:h"], dataset="tiny",
                        stress=["noise:typo", "noise:case*3", "needle:2k@0,1"])
def test_robust(retrieval, workload, embedbench):
    assert workload.id in ("typo", "case-x3", "needle-2k-d0", "needle-2k-d100")
    assert retrieval.workload is workload
    if workload.kind == "noise":
        clean = embedbench.evaluate(retrieval.model, "tiny")
        assert retrieval.clean is clean  # evaluated once per model and dataset, shared
        delta = retrieval.delta("ndcg@10")
        assert delta.low <= float(delta) <= delta.high
        assert abs(float(delta) - (float(retrieval.ndcg10) - float(clean.ndcg10))) < 1e-12
        assert len(retrieval.runs) == len(workload.seeds)
    else:
        assert retrieval.clean is None
        assert retrieval.info["length"] == 2048
        assert retrieval.hit(1) >= 0.0
"""


@pytest.mark.parametrize("mode", MODES)
def test_model_x_workload_points_with_readable_ids(
    project: pytest.Pytester, mode: list[str]
) -> None:
    project.makepyfile(test_stress=STRESS)
    result = project.runpytest("-v", *mode, "--embedbench-json=report.json")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines_random(
        [
            "*test_robust?bm25-typo?*",
            "*test_robust?h-case-x3?*",
            "*test_robust?bm25-needle-2k-d100?*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= embedbench =*",
            "stress on 'tiny': query noise (paired, 95% interval)",
            "model*noise*seeds*clean nDCG@10*noisy*noisy - clean*status",
            "bm25 *case-x3 *3 *0.* *0.* *[[]*passed",
            "stress on 'tiny': needle hit@1 for bm25 (depth x length; chance 0.10)",
            "depth*2048 tok",
            "0 *1.00",
        ]
    )
    report = json.loads((project.path / "report.json").read_text())
    points = report["stress"]["tiny"]
    assert sorted((p["model"], p["id"]) for p in points) == sorted(
        (m, w) for m in ("bm25", "h") for w in ("typo", "case-x3", "needle-2k-d0", "needle-2k-d100")
    )
    typo = next(p for p in points if p["model"] == "bm25" and p["id"] == "typo")
    assert set(typo["delta"]) == {"value", "low", "high", "n"}
    tests = {t["nodeid"]: t for t in report["tests"]}
    record = tests["test_stress.py::test_robust[bm25-typo]"]
    assert record["workload"]["kind"] == "noise"
    assert record["result"]["stress"]["delta"]["ndcg@10"]["n"] == 4
    # the stress points stay out of the model table: one row per model, the clean runs'
    assert not any(t.get("workload") is None for t in report["tests"])


def test_k_selects_a_workload(project: pytest.Pytester) -> None:
    project.makepyfile(test_stress=STRESS)
    result = project.runpytest("-v", "-k", "typo")
    result.assert_outcomes(passed=2, deselected=6)
    result = project.runpytest("-v", "-k", "needle and d100 and bm25")
    result.assert_outcomes(passed=1, deselected=7)


def test_paraphrase_without_a_chat_model_skips_with_the_reason(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_para="""
        import pytest

        @pytest.mark.embedbench(models=["bm25"], dataset="tiny", stress=["noise:paraphrase"])
        def test_para(retrieval):
            assert False, "never reached"
        """
    )
    result = project.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*paraphrase*needs a chat model*"])


CHINESE_NEEDLE = """
import re
import pytest

@pytest.mark.embedbench(models=["bm25"], dataset="tiny", stress=["needle:zh:1k@0,1"])
def test_needle(retrieval, workload):
    assert workload.id in ("needle-zh-1k-d0", "needle-zh-1k-d100")
    assert workload.param("language") == "zh"
    (question, *_) = retrieval.query_texts.values()
    assert re.search("[\u4e00-\u9fff]", question) and " " not in question
"""


def test_a_needle_in_chinese_haystacks(project: pytest.Pytester) -> None:
    """``needle:zh:...`` writes the haystacks in Chinese (needle_dataset(language='zh')); its
    points are ids of their own beside the English ones."""
    project.makepyfile(test_needle=CHINESE_NEEDLE)
    result = project.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        ["*test_needle?bm25-needle-zh-1k-d0?*", "*test_needle?bm25-needle-zh-1k-d100?*"]
    )


@pytest.mark.parametrize(
    ("stress", "message"),
    [
        ('["noize:typo"]', "*unknown kind 'noize'*kinds: ?'chunk-size', 'needle', 'noise'?*"),
        ('["noise:typos"]', "*noise kind 'typos' is unknown*"),
        ('["needle:2k@2"]', "*depth '2' must be a fraction*"),
        ('["needle:xx:2k@0"]', "*haystack language 'xx' is not written; use one of ?'en', 'zh'?*"),
        ('["noise:typo", "noise:typo"]', "*more than once*"),
        ('["chunk-size:4"]', "*chunk size '4': give a token count of at least 8*"),
    ],
)
def test_bad_workloads_are_collection_errors(
    project: pytest.Pytester, stress: str, message: str
) -> None:
    project.makepyfile(
        test_bad=f"""
        import pytest

        @pytest.mark.embedbench(models=["bm25"], dataset="tiny", stress={stress})
        def test_bad(retrieval):
            pass
        """
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*test_bad.py: @pytest.mark.embedbench stress: " + message])


@pytest.mark.parametrize("mode", MODES)
def test_baseline_gate_keys_each_point_by_node_id(
    project: pytest.Pytester, mode: list[str]
) -> None:
    marker = 'models=["bm25"], dataset="tiny", stress=["noise:typo", "noise:shuffle"]'
    project.makepyfile(test_gate=bench_module(marker, name="test_gate"))
    project.runpytest("--embedbench-update-baseline", *mode).assert_outcomes(passed=2)
    stored = json.loads((project.path / ".embedbench" / "baseline.json").read_text())
    assert {"test_gate.py::test_gate[bm25-typo]", "test_gate.py::test_gate[bm25-shuffle]"} <= set(
        stored["entries"]
    )
    again = project.runpytest(*mode)
    again.assert_outcomes(passed=2)


def test_cutoffs_read_in_a_test_reach_the_json_report(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_cut="""
        import pytest

        @pytest.mark.embedbench(models=["hashing:h", "bm25"], dataset="tiny")
        def test_cut(retrieval):
            cut = retrieval.cutoffs
            assert set(cut.levels) == {"strict", "balanced", "loose"}
            assert cut.calibration_queries == cut.heldout_queries == 2
        """
    )
    run_expecting(
        project,
        "--embedbench-json=report.json",
        passed=2,
        lines=[
            "cut-offs on 'tiny' (calibrated on half the queries, shown on the other)",
            "*h *strict *[0-9-]* 0.10% *",
            # bm25's scores are not comparable across queries: no number is printed as if
            "bm25: no global cut-off: bm25 scores are sums of term weights*",
        ],
    )
    report = json.loads((project.path / "report.json").read_text())
    by_model = {test["model"]: test["result"]["cutoffs"] for test in report["tests"]}
    assert by_model["h"]["levels"]["balanced"]["target"] == 0.01
    assert by_model["h"]["conformal"]["target"] == 0.95
    # two calibration queries cannot support alpha = 0.05: no cut-off, and the level they can
    assert by_model["h"]["conformal"]["threshold"] is None
    assert 0.05 < by_model["h"]["supported_alpha"] < 1
    assert by_model["bm25"]["meaningful"] is False
    assert by_model["bm25"]["conformal"]["threshold"] is None


def test_paraphrase_through_the_hook(project: pytest.Pytester) -> None:
    add_to_conftest(
        project,
        """

def pytest_embedbench_paraphraser(config):
    return lambda text: "please " + " ".join(reversed(text.split()))
""",
    )
    project.makepyfile(
        test_para="""
        import pytest

        @pytest.mark.embedbench(models=["bm25"], dataset="tiny", stress=["noise:paraphrase"])
        def test_para(retrieval):
            assert retrieval.query_texts["q2"] == "please csv data export"
            assert retrieval.clean.query_texts["q2"] == "export data csv"
        """
    )
    project.runpytest().assert_outcomes(passed=1)


def test_chunk_size_sweep_pairs_with_the_configured_dataset(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_chunks="""
        import pytest

        @pytest.mark.embedbench(models=["bm25"], dataset="tiny", stress=["chunk-size:8,16"])
        def test_chunks(retrieval, workload):
            assert workload.kind == "chunk-size"
            assert retrieval.clean.chunking is None  # tiny is not chunked: whole documents
            assert retrieval.chunking.size == workload.param("size")
            assert retrieval.chunking.unit == "tokens"
            d = retrieval.delta("ndcg@10")
            assert d.low <= float(d) <= d.high
        """
    )
    run_expecting(
        project,
        "-v",
        passed=2,
        lines=[
            "*test_chunks?bm25-chunk-8?*",
            "*test_chunks?bm25-chunk-16?*",
            "stress on 'tiny': chunk size vs the configured chunking (paired)",
            "model*chunk tokens*configured nDCG@10*re-chunked*status",
            "bm25 *8 *0.* *0.* *[[]*passed",
        ],
    )
