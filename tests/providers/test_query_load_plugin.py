"""A provider's query embedding under ``--embedbench-concurrency`` (issue 45), through pytest as
a user runs it: the OpenAI client against the loopback server speaking its wire format, the
dataset's queries sent one a request from 1, 2 and 4 threads, and each level in every writer
(terminal, JSON, CSV, Markdown, HTML curve, JUnit properties); a server not on loopback is sent
no load."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import pytest

from pytest_embedbench.core.exceptions import ProviderError
from pytest_embedbench.evaluation.query_load import loopback_server, measure_query_load
from pytest_embedbench.models.providers import ModelSpec
from pytest_embedbench.models.providers.registry import create_provider
from tests.plugin.conftest import write_config, write_tiny

from .servers import OpenAIServer

LEVELS = (1, 2, 4)


@pytest.mark.slow  # three levels of 1,000 HTTP requests each: about 15 s
def test_query_embedding_under_load_in_every_writer(pytester: pytest.Pytester) -> None:
    write_tiny(pytester)
    with OpenAIServer(dim=16) as server:
        write_config(
            pytester,
            f"""models:
  - {{spec: "openai:text-embedding-3-small", name: small}}
providers:
  openai: {{base_url: "{server.url}/v1", api_key: "sk-test-SECRETKEY-load-0001"}}
""",
        )
        pytester.makepyfile(
            test_search="""
import pytest

@pytest.mark.embedbench(
    dataset="tiny",
    thresholds={"query_load.c4.qps": ">= 1", "query_load.c2.p99_ms": "<= 60000"},
)
def test_search(retrieval):
    assert [lv.concurrency for lv in retrieval.query_load] == [1, 2, 4]
    # the load's 3,000 requests are not the run's embedding cost
    assert retrieval.model_info["calls"]["requests"] < 100
"""
        )
        result = pytester.runpytest(
            "-p",
            "no:randomly",
            "--embedbench-concurrency=1,2,4",
            "--embedbench-json=out.json",
            "--embedbench-csv=csv",
            "--embedbench-md=out.md",
            "--embedbench-html=out.html",
            "--junitxml=junit.xml",
        )
        sent = len(server.embed_requests)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "query embedding on 'tiny' under concurrent load",
            "test*model*threads*requests*QPS*p50 ms*p95 ms*p99 ms",
            *(f"test_search.py::test_search*small*{n} *" for n in LEVELS),
        ]
    )
    report = json.loads((pytester.path / "out.json").read_text())
    levels = report["tests"][0]["result"]["query_load"]
    assert [lv["concurrency"] for lv in levels] == list(LEVELS)
    # each level sends 1,000 requests or stops after 10 s (a busy machine), every one answered
    assert all(0 < lv["requests"] <= 1000 and lv["qps"] > 0 for lv in levels)
    assert all(lv["p50_ms"] <= lv["p95_ms"] <= lv["p99_ms"] for lv in levels)
    # the server saw the run's own requests, the warm-up and every level's, nothing more
    own = report["tests"][0]["result"]["model_info"]["calls"]["requests"]
    assert sent == own + 1 + sum(lv["requests"] for lv in levels)
    section = report["summary"]["query_load"][0]
    assert section["dataset"] == "tiny" and section["rows"][0]["model"] == "small"
    with open(pytester.path / "csv" / "query_load.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["model"], r["concurrency"]) for r in rows] == [("small", str(n)) for n in LEVELS]
    assert float(rows[0]["qps"]) == pytest.approx(levels[0]["qps"])
    assert (
        "query embedding on 'tiny' under concurrent load" in (pytester.path / "out.md").read_text()
    )
    html = (pytester.path / "out.html").read_text()
    assert '<section id="query-load">' in html and 'aria-label="QPS against concurrent' in html
    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(pytester.path / "junit.xml").iter("property")
    }
    assert float(props["embedbench.query_load.c4.qps"]) == pytest.approx(levels[2]["qps"])
    assert "SECRETKEY" not in result.stdout.str() + html


def test_only_a_loopback_server_is_loaded() -> None:
    with OpenAIServer(dim=16) as server:
        local = create_provider(
            ModelSpec(
                "openai:text-embedding-3-small",
                base_url=f"{server.url}/v1",
                api_key="sk-test-SECRETKEY-0002",
            )
        )
        local.ensure_loaded()
        assert loopback_server(local) == f"{server.url}/v1"
        levels = measure_query_load(local, ["a query", "another"], (1, 3), seed=0, requests=10)
        assert levels is not None and [lv.requests for lv in levels] == [10, 10]
        assert len(server.embed_requests) == 1 + 2 * 10  # the warm-up, then each level's
        assert local.calls["requests"] == 0  # the load is not the run's embedding cost
        # a server refusing under load stops the measure with its status, the key hidden
        server.script("ok", "ok", "503")
        with pytest.raises(ProviderError, match="under --embedbench-concurrency") as info:
            measure_query_load(local, ["a query"], (1,), seed=0, requests=10)
        assert "HTTP 503" in str(info.value) and "SECRETKEY" not in str(info.value)
    remote = create_provider(
        ModelSpec(
            "openai:text-embedding-3-small", base_url="https://api.example.com/v1", api_key="k"
        )
    )
    assert measure_query_load(remote, ["a query"], (1, 4), seed=0) is None
    assert measure_query_load(create_provider(ModelSpec("bm25")), ["q"], (1,), seed=0) is None


def test_a_query_load_threshold_without_a_loopback_server_says_what_is_missing(
    pytester: pytest.Pytester,
) -> None:
    write_tiny(pytester)  # the hashing provider: in process, no server to load
    pytester.makefile(".yaml", embedbench="datasets:\n  tiny: {path: data/tiny}\n")
    pytester.makepyfile(
        test_gated="""
import pytest

@pytest.mark.embedbench(dataset="tiny", models=["hashing:h"],
                        thresholds={"query_load.c1.qps": ">= 1"})
def test_gated(retrieval):
    assert retrieval.query_load == ()
""",
        test_bad="""
import pytest

@pytest.mark.embedbench(dataset="tiny", models=["hashing:h"],
                        thresholds={"query_load.c0.qps": ">= 1"})
def test_bad(retrieval):
    pass
""",
    )
    bad = pytester.runpytest("-p", "no:randomly", "--embedbench-concurrency=1", "test_bad.py")
    assert bad.ret == pytest.ExitCode.INTERRUPTED  # a collection error, before any model loads
    bad.stdout.fnmatch_lines(
        [
            "*test_bad.py marker: defaults.query_load.c0.qps: unknown query load key "
            "'query_load.c0.qps'; write query_load.c<N>.<qps|p50_ms|p95_ms|p99_ms>*",
        ]
    )
    result = pytester.runpytest("-p", "no:randomly", "--embedbench-concurrency=1", "test_gated.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*query_load.c1.qps: not measured, the run sent the provider's server no queries "
            "from 1 threads; run with --embedbench-concurrency naming 1*loopback*",
        ]
    )
