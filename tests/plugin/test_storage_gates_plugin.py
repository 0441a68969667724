"""Storage and indexing figures as gates (issue 33) and the index axis's baseline gate and
command-line option (issue 35), through pytest as a user runs them: thresholds on
``bytes_per_doc``, a baseline that a larger index fails, an index whose neighbour recall fell
since its baseline, and ``--embedbench-indexes`` selecting and overriding the index axis."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from .conftest import run_refused

SUPPORT = Path(__file__).resolve().parents[2] / "examples" / "support"

STORAGE_TEST = """
import pytest
from pytest_embedbench import ModelSpec

@pytest.mark.embedbench(
    dataset="tiny", models=[ModelSpec("hashing:h", name="prod"{options})], thresholds={rules}
)
def test_storage(retrieval):
    assert retrieval.bytes_per_doc <= 2048
"""


def storage_test(pytester: pytest.Pytester, rules: dict, options: str = "") -> None:
    pytester.makepyfile(test_storage=STORAGE_TEST.format(rules=rules, options=options))


def test_a_bytes_per_doc_threshold_fails_then_passes(project: pytest.Pytester) -> None:
    # the hashing model's 64 float32 values: 256 bytes per document in the exact index
    storage_test(project, {"bytes_per_doc": "<= 128"})
    failed = project.runpytest("-p", "no:randomly")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        ["*bytes_per_doc = 256 is not <= 128  (test_storage.py marker: defaults.bytes_per_doc)*"]
    )
    storage_test(project, {"bytes_per_doc": "<= 256", "index_mb": "<= 1", "cache_mb": "<= 1"})
    passed = project.runpytest("-p", "no:randomly", "--embedbench-json=out.json")
    passed.assert_outcomes(passed=1)
    (test,) = json.loads((project.path / "out.json").read_text())["tests"]
    resources = test["result"]["resources"]
    # six documents of 64 float32 values, in the index and in the cache
    assert resources["index_bytes"] == resources["cache_bytes"] == 6 * 64 * 4
    assert resources["bytes_per_document"] == 256


def test_storage_figures_from_python(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_python="""
        import math
        import pytest

        @pytest.mark.embedbench(dataset="tiny", models=["hashing:h", "bm25"])
        def test_figures(retrieval):
            if retrieval.name == "h":
                assert retrieval.bytes_per_doc == 256
                assert retrieval.index_mb == retrieval.cache_mb == 6 * 256 / 2**20
            else:  # bm25 keeps its own index and caches no vectors
                assert retrieval.bytes_per_doc > 0 and math.isnan(retrieval.cache_mb)
            assert retrieval.docs_per_s > 0 or math.isnan(retrieval.docs_per_s)
        """
    )
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=2)
    # the second run finds every vector in the cache: the same figures, docs/s not measured
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_a_misspelt_storage_key_names_the_fix(project: pytest.Pytester) -> None:
    project.makefile(".yaml", thresholds="defaults:\n  bytes_per_dco: '<= 100'\n")
    storage_test(project, {})
    result = project.runpytest("--embedbench-thresholds=thresholds.yaml")
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*thresholds.yaml: defaults.bytes_per_dco: *did you mean 'bytes_per_doc'?*"]
    )


def test_no_cache_leaves_cache_mb_unmeasured(project: pytest.Pytester) -> None:
    storage_test(project, {"cache_mb": "<= 1"})
    result = project.runpytest("-p", "no:randomly", "--embedbench-no-cache")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cache_mb: not measured, the run used no embedding cache*"])


def test_a_larger_index_fails_the_baseline_gate(project: pytest.Pytester) -> None:
    storage_test(project, {})
    project.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    entry = next(
        iter(
            json.loads((project.path / ".embedbench" / "baseline.json").read_text())[
                "entries"
            ].values()
        )
    )
    assert entry["figures"]["bytes_per_doc"] == 256
    # "prod" now embeds into 128 values: twice the index and cache bytes per document
    storage_test(project, {}, options=", dim=128")
    result = project.runpytest("-p", "no:randomly", "--embedbench-csv=csv")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*bytes_per_doc regressed: baseline 256, current 512 (+256, +100.0%): it grew by "
            "more than the tolerance 5% of the baseline (lower is better). Fix the cause, or if "
            "the change is intended re-record the baseline with --embedbench-update-baseline, "
            "or set gate: figures: {bytes_per_doc: ...} in embedbench.yaml*",
        ]
    )
    result.stdout.fnmatch_lines(["*cache_mb regressed: baseline 0.0015, current 0.0029*"])
    result.stdout.fnmatch_lines(["*index_mb regressed*"])
    with (project.path / "csv" / "gates.csv").open(encoding="utf-8") as fh:
        gated = {row["metric"]: row for row in csv.DictReader(fh)}
    assert float(gated["bytes_per_doc"]["baseline"]) == 256
    assert float(gated["bytes_per_doc"]["current"]) == 512

    # a looser tolerance in embedbench.yaml lets the same growth pass the storage gate
    config = (project.path / "embedbench.yaml").read_text()
    (project.path / "embedbench.yaml").write_text(
        config
        + "\ngate:\n  metrics: [ndcg@10]\n  tolerance: 1.0\n"
        + "  figures: {bytes_per_doc: '150%', index_mb: '150%', cache_mb: null}\n"
    )
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=1)


def test_a_bad_gate_figure_is_a_clear_error(project: pytest.Pytester) -> None:
    config = (project.path / "embedbench.yaml").read_text()
    (project.path / "embedbench.yaml").write_text(
        config + "\ngate:\n  figures: {bytes_per_dox: '5%'}\n"
    )
    storage_test(project, {})
    result = project.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*gate.figures: unknown figure 'bytes_per_dox'; did you mean 'bytes_per_doc'?*"]
    )


INDEX_TEST = f"""
import pytest

@pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h", "bm25"], k=[1, 10])
def test_search(retrieval):
    pass
"""


def test_indexes_option_gives_every_test_an_index_axis(project: pytest.Pytester) -> None:
    pytest.importorskip("faiss", reason="the index axis's FAISS engine needs faiss-cpu")
    project.makepyfile(test_search=INDEX_TEST)
    option = "--embedbench-indexes=exact,faiss:hnsw(M=16,efSearch=64)"
    listed = project.runpytest("-p", "no:randomly", "--co", "-q", option)
    listed.stdout.fnmatch_lines(
        [
            "test_search.py::test_search[[]h-exact[]]",
            "test_search.py::test_search[[]h-faiss:hnsw(M=16,efSearch=64)[]]",
            "test_search.py::test_search[[]bm25[]]",
        ]
    )
    # pytest -k picks an index as it picks a model
    picked = project.runpytest("-p", "no:randomly", option, "-k", "hnsw")
    picked.assert_outcomes(passed=1)
    picked.stdout.fnmatch_lines(["indexes on 'support': each against exact search*"])

    # the option replaces a marker's own indexes=, and the ini key does what the option does
    project.makepyfile(test_search=INDEX_TEST.replace("k=[1, 10]", "k=[10], indexes=['exact']"))
    project.makeini(
        "[pytest]\nembedbench_cache_dir = .cache-embedbench\n"
        "embedbench_indexes = fast=faiss:hnsw(M=4,efSearch=8)\n"
    )
    replaced = project.runpytest("-p", "no:randomly", "--co", "-q")
    replaced.stdout.fnmatch_lines(["test_search.py::test_search[[]h-fast[]]"])
    assert "h-exact" not in replaced.stdout.str()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("faiss:hnws(M=8)", "*engine 'faiss' has no kind 'hnws'; did you mean 'hnsw'?*"),
        ("faiss:hnsw(M=8,efSerch=4)", "*'efSerch=4' is not a parameter of faiss:hnsw*"),
        ("nosuchengine", "*nosuchengine*"),
        ("exact,exact", "*appear more than once*"),
        (",", "*give comma-separated index specs*"),
    ],
)
def test_a_bad_indexes_option_names_the_option(
    project: pytest.Pytester, value: str, reason: str
) -> None:
    project.makepyfile(test_search=INDEX_TEST)
    pattern = f"*error: argument --embedbench-indexes: {reason}"
    run_refused(project, f"--embedbench-indexes={value}", lines=[pattern])


def test_a_bad_indexes_ini_key_names_the_key(project: pytest.Pytester) -> None:
    project.makepyfile(test_search=INDEX_TEST)
    project.makeini(
        "[pytest]\nembedbench_cache_dir = .cache-embedbench\nembedbench_indexes = faiss:hnws\n"
    )
    result = project.runpytest()
    assert result.ret != 0
    text = result.stdout.str() + result.stderr.str()
    assert "ini option embedbench_indexes = 'faiss:hnws'" in text
    assert "did you mean 'hnsw'?" in text


def test_neighbour_recall_falling_since_the_baseline_fails(project: pytest.Pytester) -> None:
    pytest.importorskip("faiss", reason="the index axis's FAISS engine needs faiss-cpu")
    project.makepyfile(test_search=INDEX_TEST)
    strong = "--embedbench-indexes=prod=faiss:hnsw(M=4,efSearch=64)"
    recorded = project.runpytest(
        "-p", "no:randomly", "-k", "h-prod", strong, "--embedbench-update-baseline"
    )
    recorded.assert_outcomes(passed=1)
    entries = json.loads((project.path / ".embedbench" / "baseline.json").read_text())["entries"]
    index = entries["test_search.py::test_search[h-prod]"]["index"]
    assert index["spec"] == "faiss:hnsw(M=4,efSearch=64)"
    strong_recall = index["figures"]["neighbour_recall@10"]
    assert strong_recall > 0.9 and index["figures"]["bytes"] > 0

    # the same named index searched with efSearch=1: its test id, and so its baseline, stay
    weak = "--embedbench-indexes=prod=faiss:hnsw(M=4,efSearch=1)"
    result = project.runpytest(
        "-p", "no:randomly", "-k", "h-prod", weak, "--embedbench-json=r.json"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*index.neighbour_recall@10 regressed: baseline {strong_recall:.4f}, current 0.*: it "
            "fell by more than the tolerance 0.01 (higher is better)*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*compared with a baseline of other inputs: the index changed "
            "('faiss:hnsw(M=4,efSearch=64)' -> 'faiss:hnsw(M=4,efSearch=1)')*"
        ]
    )
    (test,) = json.loads((project.path / "r.json").read_text())["tests"]
    delta = test["baseline"]["deltas"]["index.neighbour_recall@10"]
    assert delta["regressed"] is True and delta["current"] < delta["baseline"] == strong_recall
