"""Real pytest sessions (pytester) for the marker, fixtures, table, thresholds and failures."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pytest_embedbench.evaluation.measure import THREAD_ENV_VARS
from tests.helpers import length_provider

from .conftest import (
    MODES,
    QUERIES,
    add_to_conftest,
    bench_module,
    bench_tests,
    run_expecting,
    set_ini,
    write_config,
)

BASIC = """
import pytest

@pytest.mark.embedbench(dataset="tiny")
def test_search(retrieval):
    assert retrieval.ndcg10 >= 0.2
    assert retrieval.latency.p95_ms <= 10_000
"""


@pytest.mark.parametrize("mode", MODES)
def test_one_test_per_model_and_a_table(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    result = run_expecting(
        project,
        "-v",
        "--strict-markers",
        *mode,
        passed=2,
        lines=[
            "*test_search?h?*",
            "*test_search?bm25?*",
            "*= embedbench =*",
            "dataset 'tiny' (4 queries, 6 documents)",
            "model*nDCG@10*MRR@10*R@10*R@100*p50 ms*p95 ms*docs/s*+RSS MB*status",
            "bm25 *0.* ?0.*, *?*passed",
            "h *0.* ?0.*, *?*passed",
            "* best in column*",
        ],
    )
    assert result.ret == 0


@pytest.mark.parametrize("mode", MODES)
def test_k_selects_one_model(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest("-k", "BM25", *mode)  # case-insensitive, as pytest's -k
    assert result.parseoutcomes()["passed"] == 1  # (xdist's controller counts no deselected)
    assert "hashing" not in result.stdout.str().split("= embedbench =")[1]


@pytest.mark.parametrize("mode", MODES)
def test_failing_assert_explains_itself(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(
        test_fail="""
        import pytest

        @pytest.mark.embedbench(dataset="tiny", models=["bm25"])
        def test_search(retrieval):
            assert retrieval.ndcg10 >= 0.99
        """
    )
    result = run_expecting(
        project,
        *mode,
        failed=1,
        lines=[
            "*assert ndcg@10 = 0.* >= 0.99*",
            "*ndcg@10 = 0.*, 95% bootstrap interval ?0.*, *? over 4 queries (bm25 on tiny)*",
            "*worst queries: q* (0.*), q* (*), q* (*)*",
        ],
    )
    assert result.ret == 1
    # each listed query with its text, so the reader sees what it asked (issue 8 item 1)
    # the failure's own text (the short summary repeats it whole when CI=true stops truncation)
    line = next(x for x in result.stdout.lines if "worst queries:" in x)
    assert any(f'{q["_id"]} "{q["text"]}" (' in line for q in QUERIES), line


@pytest.mark.parametrize("mode", MODES)
def test_threshold_file_lists_every_violation(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    project.makefile(
        ".yaml",
        limits="""
        defaults:
          ndcg@10: ">= 0.1"
        models:
          bm25:
            ndcg@10: ">= 0.999"
            latency.p95_ms: "<= 0.000001"
        tests:
          test_search:
            models:
              h: {recall@100: ">= 0.5"}
        """,
    )
    result = project.runpytest("--embedbench-thresholds", "limits.yaml", *mode)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*embedbench checks failed for 'bm25' on 'tiny' (4 queries):",
            "*latency.p95_ms = * is not <= 1e-06*limits.yaml*",
            "*ndcg@10 = 0.* ?0.*, *? is not >= 0.999*limits.yaml*",
        ]
    )


@pytest.mark.parametrize("mode", MODES)
def test_thresholds_in_config_and_marker(project: pytest.Pytester, mode: list[str]) -> None:
    write_config(project, 'models: [bm25]\nthresholds:\n  defaults: {ndcg@10: ">= 0.999"}\n')
    project.makepyfile(
        test_t=bench_tests(
            test_config='dataset="tiny"',
            test_marker_wins='dataset="tiny", thresholds={"ndcg@10": ">= 0.1"}',
        )
    )
    result = project.runpytest(*mode)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*ndcg@10 = * is not >= 0.999*embedbench.yaml*"])


@pytest.mark.parametrize("mode", MODES)
def test_a_broken_model_fails_only_its_own_tests(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(
        test_broken="""
        import pytest
        from pytest_embedbench import ModelSpec

        MODELS = ["bm25", "nosuch:model", ModelSpec("hashing:x", name="nan", poison="nan")]

        @pytest.mark.embedbench(dataset="tiny", models=MODELS)
        def test_search(retrieval):
            assert retrieval.ndcg10 >= 0.1
        """
    )
    result = project.runpytest("-rA", *mode)
    result.assert_outcomes(passed=1, errors=2)
    out = result.stdout.str()
    assert "unknown provider 'nosuch'. Known providers:" in out
    assert "model 'nan' on dataset 'tiny' failed: ProviderError:" in out
    assert "non-finite values" in out
    assert "During handling of the above exception" not in out
    result.stdout.fnmatch_lines(
        [
            "bm25 *passed",
            "model *error: *UnknownProviderError*",
            "nan *error: ProviderError: provider *",
        ]
    )


@pytest.mark.parametrize("mode", MODES)
def test_unknown_marker_keyword_is_a_collection_error(
    project: pytest.Pytester, mode: list[str]
) -> None:
    project.makepyfile(test_bad=bench_module('dataset="tiny", modles=["bm25"]'))
    result = project.runpytest("--strict-markers", *mode)
    # pytest stops on a collection error; xdist's controller reports it as a failed run
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", outcomes.get("error")) == 1
    assert not {"passed", "failed"} & set(outcomes)
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting*",
            "*embedbench got unknown keyword(s) ??modles'? (did you mean 'models'?); it accepts*",
        ]
    )


@pytest.mark.parametrize("mode", MODES)
def test_unknown_dataset_is_a_collection_error(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.embedbench(dataset="tinny")
        def test_search(retrieval):
            pass
        """
    )
    result = project.runpytest(*mode)
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines(
        ["*dataset 'tinny' is neither a name in *embedbench.yaml (known: ?'tiny'?)*"]
    )


@pytest.mark.parametrize("mode", MODES)
def test_bad_config_key_names_it(project: pytest.Pytester, mode: list[str]) -> None:
    write_config(project, "model: [bm25]\n")
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest(*mode)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*embedbench.yaml: unknown key(s) ?'model'? (did you mean 'models'?); allowed:*"]
    )


@pytest.mark.parametrize("mode", MODES)
def test_models_option_overrides(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest("-v", "--embedbench-models", "bm25", *mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_search?bm25?*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--embedbench-seed", "abc"], "*'abc' is not an integer*"),
        (["--embedbench-bootstrap", "0"], "*'0' must be at least 1*"),
        (["--embedbench-models", " , "], "*give comma-separated model specs*"),
        (["--embedbench-thresholds", "missing.yaml"], "*missing.yaml*no such file*"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_bad_option_values(
    project: pytest.Pytester, args: list[str], message: str, mode: list[str]
) -> None:
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest(*args, *mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_bad_ini_value(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nembedbench_seed = one\n")
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option embedbench_seed = 'one': *not an integer*"])


@pytest.mark.parametrize("mode", MODES)
def test_fixtures(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(
        test_fixtures="""
        import pytest
        from pytest_embedbench import ModelSpec, holm

        # first in the file: under xdist, tests of no group are one work unit each and the
        # first two units go to different workers, so without the group (the model) these
        # two rounds would always run apart
        SEEN = []

        @pytest.mark.embedbench(dataset="tiny", models=["hashing:h"])
        @pytest.mark.parametrize("round", [1, 2])
        def test_computed_once(retrieval, model, round):
            SEEN.append((retrieval, model))
            if round == 2:  # the same result and the same loaded model for both tests
                assert SEEN[0][0] is SEEN[1][0] and SEEN[0][1] is SEEN[1][1]

        @pytest.mark.embedbench(dataset="tiny", models=["hashing:h"])
        def test_model_fixture(model):
            assert model.embed(["hello"], kind="query").shape == (1, 64)

        @pytest.mark.embedbench(dataset="tiny")
        def test_corpus_and_evalset(corpus, evalset):
            assert [d.id for d in corpus] == ["d1", "d2", "d3", "d4", "d5", "d6"]
            assert [q.id for q in evalset] == ["q1", "q2", "q3", "q4"]
            assert evalset.relevant("q3", min_grade=2) == {"d2": 2}

        def test_adhoc(embedbench):
            a = embedbench.evaluate("bm25", "tiny")
            b = embedbench.evaluate(ModelSpec("hashing:h"), "data/tiny")
            assert embedbench.evaluate("bm25", "tiny") is a
            diff = embedbench.compare(a, b, "ndcg@10", test="t")
            assert float(diff) == pytest.approx(float(a.ndcg10) - float(b.ndcg10))
            assert diff.low <= float(diff) <= diff.high and 0 <= diff.p_value <= 1
            assert diff.p_holm == diff.p_value  # one comparison so far
            other = embedbench.compare(a, b, "recall@10", test="randomization")
            # two comparisons in one test form a family: both p-values are Holm-adjusted
            assert [diff.p_holm, other.p_holm] == holm([diff.p_value, other.p_value])
            assert diff.p_holm >= diff.p_value

        def test_retrieval_needs_the_marker(retrieval):
            pass
        """
    )
    # under xdist both rounds share a group (the model), so they run on one worker in order
    result = project.runpytest(*mode)
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines(["*retrieval and model fixtures need @pytest.mark.embedbench*"])


GROUPED = """
import pytest

@pytest.mark.embedbench(dataset="tiny", models=["hashing:h"])
@pytest.mark.parametrize("n", range(4))
def test_h(retrieval, n):
    pass

@pytest.mark.xdist_group("mine")  # a user's own group is kept too
@pytest.mark.parametrize("n", range(2))
def test_own_group(n):
    pass

def test_plain():
    pass
"""


def workers_of(out: str) -> dict[str, set[str]]:
    """Test name (without parameters) -> the xdist workers that ran it, from ``-v`` output."""
    found: dict[str, set[str]] = {}
    for worker, name in re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED ([^\[\s]+)", out, re.M):
        found.setdefault(name, set()).add(worker)
    return found


@pytest.mark.parametrize(
    "dist",
    [
        pytest.param([], id="default"),
        pytest.param(["--dist", "loadgroup"], id="explicit", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow  # each variant a whole pytest run (~5-14 s): the full suite
def test_xdist_runs_a_models_tests_on_one_worker(project: pytest.Pytester, dist: list[str]) -> None:
    project.makepyfile(test_grouped=GROUPED)
    result = project.runpytest("-n", "2", "-v", *dist)
    result.assert_outcomes(passed=7)
    workers = workers_of(result.stdout.str())
    assert len(workers["test_grouped.py::test_h"]) == 1, workers
    assert len(workers["test_grouped.py::test_own_group"]) == 1, workers
    # node ids as pytest makes them: no '@group' suffix in the output or the records
    assert "@h" not in result.stdout.str() and "@mine" not in result.stdout.str()


@pytest.mark.slow  # an xdist run; the fast suite runs the grouped one
def test_xdist_without_the_groups_file_warns_and_runs(
    project: pytest.Pytester, tmp_path: Path
) -> None:
    # a worker that writes its groups where the controller does not look (as one on another
    # machine would): a warning, and the tests still run
    elsewhere = tmp_path / "elsewhere"
    add_to_conftest(
        project,
        "\ndef pytest_configure(config):\n"
        + "    if hasattr(config, 'workerinput'):\n"
        + f"        config.workerinput['embedbench_groups_dir'] = {str(elsewhere)!r}\n",
    )
    project.makepyfile(test_grouped=GROUPED)
    result = project.runpytest("-n", "2")
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(
        ["*worker gw* left no test groups in *embedbench-xdist-* (a worker on another machine, or*"]
    )
    assert elsewhere.is_dir()  # the worker did write, elsewhere


@pytest.mark.parametrize(
    "user_choice",
    [pytest.param(None, id="default"), pytest.param("2", id="user-set", marks=pytest.mark.slow)],
)
@pytest.mark.slow  # each variant a whole pytest run (~5-14 s): the full suite
def test_xdist_workers_share_the_cores(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, user_choice: str | None
) -> None:
    for name in THREAD_ENV_VARS:  # an outer xdist worker has them set
        monkeypatch.delenv(name, raising=False)
    if user_choice is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", user_choice)
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest("-n", "2", "--embedbench-json", "r.json")
    result.assert_outcomes(passed=2)
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    expected = user_choice or share
    tests = json_of(project, "r.json")["tests"]
    assert [t["result"]["environment"]["threads"]["env"]["OMP_NUM_THREADS"] for t in tests] == [
        expected,
        expected,
    ]
    assert "OMP_NUM_THREADS" not in os.environ or user_choice  # the controller is left alone


def json_of(project: pytest.Pytester, name: str) -> dict:
    return json.loads((project.path / name).read_text())


#: a conftest hook that adds to the report a key of its own, with a secret in it
EXTRA_KEY = """
def pytest_embedbench_update_json(config, report):
    report['extra'] = {'api_key': 'sk-should-not-leak', 'build': 7}
"""
#: a conftest hook that writes its own report
OWN_REPORT = """
def pytest_embedbench_generate_json(config, records):
    return {'schema_version': 1, 'models': sorted(r['model'] for r in records)}
"""


@pytest.mark.parametrize("mode", MODES)
def test_json_report(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    add_to_conftest(project, EXTRA_KEY)
    result = project.runpytest("--embedbench-json", "out/report.json", *mode)
    result.assert_outcomes(passed=2)
    report = json_of(project, "out/report.json")
    assert report["schema_version"] == 1
    assert {"machine", "packages", "configuration", "created", "cache", "commit"} <= set(report)
    assert report["machine"]["cpu_count"] >= 1
    assert report["packages"]["pytest-embedbench"]
    assert report["extra"]["build"] == 7
    tests = {t["model"]: t for t in report["tests"]}
    assert set(tests) == {"h", "bm25"}
    bm25 = tests["bm25"]
    assert bm25["status"] == "passed" and bm25["error"] is None
    ndcg = bm25["result"]["metrics"]["ndcg@10"]
    assert ndcg["low"] <= ndcg["value"] <= ndcg["high"] and ndcg["n"] == 4
    assert set(bm25["result"]["latency"]) >= {"p50_ms", "p95_ms", "p99_ms", "qps"}
    assert set(bm25["result"]["timings"]) >= {"model_load_s", "document_embedding_s", "search_s"}
    assert bm25["result"]["peak_rss_mb"] > 0
    # query metadata stays out of what retrievers see and of the report's rankings
    assert "SECRET-ANSWER" not in json.dumps(report["tests"])
    assert not list((project.path / "out").glob(".report.json.*"))  # no temporary left


@pytest.mark.parametrize("mode", MODES)
def test_generate_json_hook_replaces_the_report(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    add_to_conftest(project, OWN_REPORT)
    project.runpytest("--embedbench-json", "r.json", *mode).assert_outcomes(passed=2)
    assert json_of(project, "r.json") == {"schema_version": 1, "models": ["bm25", "h"]}


def test_secrets_are_redacted_from_the_report(project: pytest.Pytester) -> None:
    project.makepyfile(test_basic=BASIC)
    add_to_conftest(
        project,
        "\ndef pytest_embedbench_update_json(config, report):\n"
        + "    from pytest_embedbench.report.writers.json_report import redact\n"
        + "    report['configuration'] = redact({**report['configuration'], 'api_key': 'sk-1'})\n",
    )
    project.runpytest("--embedbench-json", "r.json").assert_outcomes(passed=2)
    text = (project.path / "r.json").read_text()
    assert "sk-1" not in text and '"api_key": "***"' in text


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_interrupted_run_still_writes_what_finished(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.embedbench(dataset="tiny", models=["bm25"])
        def test_first(retrieval):
            pass

        def test_second():
            raise KeyboardInterrupt
        """
    )
    # in a subprocess: an in-process run would pass the KeyboardInterrupt on to this session
    result = project.runpytest_subprocess("--embedbench-json", "r.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    report = json_of(project, "r.json")
    assert [t["model"] for t in report["tests"]] == ["bm25"]
    assert report["tests"][0]["status"] == "passed"


def test_xdist_table_and_json_equal_serial(project: pytest.Pytester) -> None:
    project.makepyfile(test_basic=BASIC)
    project.makepyfile(
        test_more="""
        import pytest

        @pytest.mark.embedbench(dataset="tiny", k=(1, 3))
        def test_top(retrieval):
            assert retrieval.hit(3) >= 0.0
        """
    )
    serial = project.runpytest("--embedbench-json", "serial.json")
    parallel = project.runpytest("-n", "2", "--embedbench-json", "xdist.json")
    serial.assert_outcomes(passed=4)
    parallel.assert_outcomes(passed=4)

    def metrics(name: str) -> dict:
        return {t["nodeid"]: t["result"]["metrics"] for t in json_of(project, name)["tests"]}

    assert metrics("serial.json") == metrics("xdist.json")

    def table(out: str) -> list[str]:
        lines = out.split("= embedbench =")[1].splitlines()
        # latency, docs/s and memory differ between runs; the metric columns must not
        return [" ".join(line.split()[:6]) for line in lines if line.startswith(("h ", "bm25 "))]

    assert table(serial.stdout.str()) == table(parallel.stdout.str())
    assert len(table(serial.stdout.str())) == 2


@pytest.mark.parametrize("mode", MODES)
def test_second_run_embeds_nothing(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    project.runpytest("--embedbench-json", "first.json", *mode).assert_outcomes(passed=2)
    project.runpytest("--embedbench-json", "second.json", *mode).assert_outcomes(passed=2)
    first, second = json_of(project, "first.json"), json_of(project, "second.json")
    assert first["cache"]["misses"] == 6 and first["cache"]["hits"] == 0
    assert second["cache"] == {"hits": 6, "misses": 0, "hit_rate": 1.0}


@pytest.mark.parametrize("mode", MODES)
def test_cache_options(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    project.runpytest("--embedbench-no-cache", *mode).assert_outcomes(passed=2)
    assert not (project.path / ".cache-embedbench").exists()
    project.runpytest("--embedbench-cache-dir", "elsewhere", *mode).assert_outcomes(passed=2)
    assert (project.path / "elsewhere" / "embeddings.sqlite3").is_file()
    assert not (project.path / ".cache-embedbench").exists()
    project.runpytest(*mode).assert_outcomes(passed=2)  # the ini key
    assert (project.path / ".cache-embedbench" / "embeddings.sqlite3").is_file()
    conflict = project.runpytest("--embedbench-no-cache", "--embedbench-cache-dir", "x")
    assert conflict.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("mode", MODES)
def test_seed_bootstrap_and_config_options(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    project.makefile(
        ".yaml",
        other="datasets:\n  tiny: {path: data/tiny}\nmodels: [bm25]\n",
    )
    runs = {}
    for name, args in {
        "a": ["--embedbench-seed", "1"],
        "b": ["--embedbench-seed", "1"],
        "c": ["--embedbench-seed", "2", "--embedbench-bootstrap", "50"],
    }.items():
        result = project.runpytest(
            "--embedbench-config", "other.yaml", "--embedbench-json", f"{name}.json", *args, *mode
        )
        result.assert_outcomes(passed=1)  # other.yaml lists bm25 alone
        report = json_of(project, f"{name}.json")
        (test,) = report["tests"]
        runs[name] = (test["result"]["metrics"], test["result"]["seed"])
        assert report["configuration"]["config"].endswith("other.yaml")
    assert runs["a"] == runs["b"]  # the same seed, the same intervals
    assert runs["a"][1] == 1 and runs["c"][1] == 2
    assert json_of(project, "c.json")["configuration"]["bootstrap"] == 50
    assert runs["c"][0]["ndcg@10"]["value"] == runs["a"][0]["ndcg@10"]["value"]
    missing = project.runpytest("--embedbench-config", "nope.yaml")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("mode", MODES)
def test_quiet_keeps_a_shorter_table(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest("-q", *mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["model*nDCG@10*R@100*p95 ms*status"])
    header = next(line for line in result.stdout.lines if line.startswith("model"))
    assert "MRR@10" not in header


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        pytest.param([], True, id="default"),
        pytest.param(["-v"], True, id="v", marks=pytest.mark.slow),
        pytest.param(["-q"], False, id="q", marks=pytest.mark.slow),
        pytest.param(["-n", "2"], False, id="n2", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow  # each variant a whole pytest run (~5-14 s): the full suite
def test_progress_of_a_slow_cold_embedding(
    project: pytest.Pytester, args: list[str], shown: bool
) -> None:
    project.makepyfile(
        test_slow="""
        import pytest
        from pytest_embedbench import ModelSpec

        SLOW = ModelSpec("hashing:slow", batch_size=1, sleep=0.6)

        @pytest.mark.embedbench(dataset="tiny", models=[SLOW])
        def test_search(retrieval):
            pass
        """
    )
    result = project.runpytest("-s", *args) if shown else project.runpytest(*args)
    result.assert_outcomes(passed=1)
    lines = [x for x in result.stdout.lines if "embedbench: embedded" in x]
    if shown:
        # each progress line is a line of its own ...
        assert lines and all(x.startswith("embedbench: embedded") for x in lines), lines
        assert lines[-1].endswith("6/6 documents (" + lines[-1].split("(")[1])
        assert lines[-1].endswith("done")
        # ... and pytest's test line stays whole, after them
        out = result.stdout.str()
        if "-v" in args:
            result.stdout.re_match_lines([r"^test_slow\.py::test_search\[slow\] PASSED"])
            assert out.index(lines[-1]) < out.rindex("test_search[slow] PASSED")
        else:
            result.stdout.re_match_lines([r"^test_slow\.py \.(\s+\[100%\])?$"])
            assert out.index(lines[-1]) < out.rindex("test_slow.py .")
    else:
        assert lines == []


@pytest.mark.parametrize("mode", MODES)
def test_plugins_key_loads_a_provider_from_a_file(
    project: pytest.Pytester, mode: list[str]
) -> None:
    project.makepyfile(my_provider=length_provider("LengthProvider", "lengths", register=True))
    write_config(project, 'plugins: [my_provider.py]\nmodels: ["lengths:v1"]\n')
    project.makepyfile(test_basic=BASIC.replace(">= 0.2", ">= 0.0"))
    result = project.runpytest("-v", *mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_search?v1?*", "v1 *passed"])


def test_bad_plugin_entry_names_it(project: pytest.Pytester) -> None:
    write_config(project, "plugins: [missing_provider.py]\n")
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*embedbench.yaml: plugins: 'missing_provider.py': no such file*"])


@pytest.mark.parametrize("mode", MODES)
def test_recommendation_and_reference_column(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest(
        "--embedbench-priority",
        "speed",
        "--embedbench-reference",
        "bm25",
        "--embedbench-json",
        "r.json",
        *mode,
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "model*Δ nDCG@10 vs bm25*status",
            "bm25 *(reference)*passed",
            "h *-0.0* ?*? p=*passed",
            "recommendation (selected priority: speed):",
            "  accuracy-first *score * = 0.80 x accuracy * + 0.15 x speed * + 0.05 x cost *",
            "  speed-first *score *<- selected",
            "  balanced *",
            "  cost-first *",
        ]
    )
    report = json_of(project, "r.json")
    assert report["recommendations"]["priority"] == "speed"
    picks = report["recommendations"]["datasets"]["tiny"]["picks"]
    assert set(picks) == {"accuracy", "speed", "balanced", "cost"}
    assert picks["accuracy"]["model"] == "bm25"  # the higher nDCG@10
    comparison = report["comparisons"]["tiny"]["h"]
    assert comparison["reference"] == "bm25" and comparison["test"] == "randomization"
    bad = project.runpytest("--embedbench-priority", "cheapest")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("mode", MODES)
def test_reference_from_the_config(project: pytest.Pytester, mode: list[str]) -> None:
    write_config(project, "models: [hashing:h, bm25]\nreference: h\n")
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest(*mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["model*Δ nDCG@10 vs h*status", "bm25 *+0.0* ?*? p=*passed", "h *(reference)*passed"]
    )


def test_zero_latency_passes_runs_untimed_and_says_so(project: pytest.Pytester) -> None:
    """``--embedbench-latency-passes 0``: batched queries, no latency figures anywhere, and a
    baseline recorded that way gates quality only."""
    project.makepyfile(
        test_untimed="""
        import math
        import pytest

        @pytest.mark.embedbench(dataset="tiny")
        def test_search(retrieval):
            assert retrieval.ndcg10 >= 0.2
            assert retrieval.latency.n == 0 and math.isnan(retrieval.latency.p95_ms)
        """
    )
    args = ["--embedbench-latency-passes", "0", "--embedbench-json=r.json"]
    result = project.runpytest(*args, "--embedbench-update-baseline")
    result.assert_outcomes(passed=2)
    (row,) = [x for x in result.stdout.lines if x.startswith("bm25 ")]
    header = next(x for x in result.stdout.lines if x.startswith("model "))
    p95 = header.index("p95 ms")
    assert row[p95 : p95 + 8].strip() == "-", row  # not measured: a dash, never nan
    report = json.loads((project.path / "r.json").read_text())
    for test in report["tests"]:
        latency = test["result"]["latency"]
        assert latency["n"] == 0 and latency["passes"] == 0 and latency["p95_ms"] is None
    again = project.runpytest(*args)
    again.assert_outcomes(passed=2)
    assert "nan" not in again.stdout.str().lower()
    bad = project.runpytest("--embedbench-latency-passes", "-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*'-1' must be 0 or more*"])


def test_latency_sample_times_that_many_queries_and_zero_times_every_one(
    project: pytest.Pytester,
) -> None:
    """``--embedbench-latency-sample N`` (ini ``embedbench_latency_sample``): N seeded queries
    timed, named in the JSON; 0 times every query; a bad value is a usage error."""
    project.makepyfile(
        test_sampled="""
        import pytest

        @pytest.mark.embedbench(dataset="tiny", models=["bm25"])
        def test_search(retrieval):
            assert retrieval.ndcg10 >= 0.2
        """
    )
    result = project.runpytest("--embedbench-latency-sample", "1", "--embedbench-json=r.json")
    result.assert_outcomes(passed=1)
    report = json.loads((project.path / "r.json").read_text())
    assert report["configuration"]["latency_sample"] == 1
    (test,) = report["tests"]
    latency = test["result"]["latency"]
    assert latency["n"] == 1 and latency["queries"] == test["result"]["queries"] > 1
    assert len(latency["per_query_ms"]) == 1
    assert set(latency["per_query_ms"]) <= set(test["result"]["query_texts"])
    set_ini(project, "embedbench_latency_sample = 0")
    every = project.runpytest("--embedbench-json=all.json")
    every.assert_outcomes(passed=1)
    (test,) = json.loads((project.path / "all.json").read_text())["tests"]
    latency = test["result"]["latency"]
    assert latency["n"] == latency["queries"] == test["result"]["queries"]
    assert set(latency["per_query_ms"]) == set(test["result"]["query_texts"])
    bad = project.runpytest("--embedbench-latency-sample", "-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*'-1' must be 0 or more*"])
