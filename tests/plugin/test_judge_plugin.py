"""The LLM judge through pytest, against a loopback OpenAI-compatible chat server (the real
``openai`` client, real HTTP): verdicts written beside the eval set and replayed (a second run
asks nothing and gives the same figures), the human qrels untouched, the metrics on human +
LLM grades and the agreement in the report, and its faults: a server error quoted, a refusal
not retried, an answer without a grade, another judge's verdicts kept apart, a broken line."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ..providers.servers import OpenAIChatServer
from .conftest import BENCH

pytest.importorskip("openai")

MODEL = "qwen2.5-7b-instruct"


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def grader(body: dict[str, Any]) -> str:
    """A deterministic judge: the grade is the number of query words the passage holds."""
    prompt = body["messages"][-1]["content"]
    query = re.search(r"Query: (.*)\n", prompt).group(1)  # type: ignore[union-attr]
    passage = re.search(r"Passage: (.*)\n", prompt).group(1)  # type: ignore[union-attr]
    shared = len(set(query.split()) & set(passage.split()))
    return json.dumps({"grade": min(shared, 3)})


def configure(pytester: pytest.Pytester, url: str, **more: Any) -> None:
    judge = {"model": f"openai:{MODEL}", "base_url": url + "/v1", "agreement_sample": 12, **more}
    pytester.makefile(
        ".yaml",
        embedbench="datasets:\n  thin: {path: data/thin}\njudge: " + json.dumps(judge) + "\n",
    )
    pytester.makepyfile(test_thin=BENCH.format(extra="", body="pass"))


def judge_of(pytester: pytest.Pytester) -> dict[str, Any]:
    report = json.loads((pytester.path / "r.json").read_text())
    return report["tests"][0]["result"]["judge"]


def test_verdicts_are_written_replayed_and_reported(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    qrels_file = pytester.path / "data" / "thin" / "qrels" / "test.tsv"
    human = qrels_file.read_text()
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url)
        result = pytester.runpytest("--embedbench-json=r.json", "--junitxml=j.xml")
        result.assert_outcomes(passed=1)
        asked = len(server.chat_requests)
        body = server.chat_requests[0].body
    first = judge_of(pytester)
    holes = first["holes"]
    assert asked == first["requests"] == first["asked"] == holes + first["agreement"]["pairs"]
    assert first["llm_grades"] == holes > 0
    assert first["judged_after"] == 1.0 > first["judged_before"]
    assert body["temperature"] == 0.0 and body["model"] == MODEL
    # the judgments file beside the eval set: one line per verdict, the prompt once
    file = pytester.path / "data" / "thin" / "judgments.tsv"
    lines = file.read_text().splitlines()
    assert lines[0] == "# embedbench judgments 1" and lines[1].startswith("# prompt ")
    verdicts = [line.split("\t") for line in lines[2:]]
    assert len(verdicts) == asked
    assert {v[3] for v in verdicts} == {first["judge_id"]} and {v[5] for v in verdicts} == {MODEL}
    assert qrels_file.read_text() == human  # the human judgments are never changed
    # the JUnit properties carry the judge's figures, the JSON report's values
    junit = (pytester.path / "j.xml").read_text()
    assert f'name="embedbench.judge.judged_after" value="{first["judged_after"]}"' in junit
    assert f'name="embedbench.judge.requests" value="{asked}"' in junit
    # the metrics with LLM grades beside the official ones, and the agreement, in the notes
    result.stdout.fnmatch_lines(
        [
            f"*LLM judge openai:{MODEL}: judged@10 0.* -> 1.00; ndcg@10 0.* (human) / 0.* (human "
            f"+ {holes} LLM grades); kappa * binary, * graded on 12 human pairs*; {asked} "
            "requests (* per query), 0 verdicts replayed*"
        ]
    )
    # a second run asks the server nothing and gives the same figures
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url)
        pytester.runpytest("--embedbench-json=r.json").assert_outcomes(passed=1)
        assert server.chat_requests == []
    again = judge_of(pytester)
    assert again["requests"] == 0 and again["replayed"] == asked
    for key in ("metrics", "agreement", "judged_before", "judged_after", "llm_grades"):
        assert json.dumps(again[key], sort_keys=True) == json.dumps(first[key], sort_keys=True)
    # another judge (another model) keeps its verdicts apart in the same file
    with OpenAIChatServer(answerer=lambda body: '{"grade": 0}', models=["other-judge"]) as server:
        configure(pytester, server.url, model="openai:other-judge")
        pytester.runpytest("--embedbench-json=r.json").assert_outcomes(passed=1)
        assert len(server.chat_requests) == asked  # nothing of the first judge's was reused
    other = judge_of(pytester)
    assert other["judge_id"] != first["judge_id"]
    assert other["metrics"]["ndcg@10"] == first["metrics"]["ndcg@10"] or other["llm_grades"]
    assert len(file.read_text().splitlines()) == 2 + 2 * asked


def test_server_errors_refusals_and_answers_without_a_grade(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url, max_retries=1, agreement_sample=0)
        # a refusal (400: not retried), a 503 twice (its retry fails too), then a prose answer
        server.script("400", "503", "503")
        server.reply("I cannot tell.")
        result = pytester.runpytest("--embedbench-json=r.json", "-p", "no:randomly")
        result.assert_outcomes(passed=1)
    judge = judge_of(pytester)
    assert judge["failures"] == {"no_grade": 1, "request_failed": 1, "request_refused": 1}
    assert any("Bad request." in said for said in judge["server_errors"])
    assert any("Service unavailable" in said for said in judge["server_errors"])
    assert judge["no_grade_answers"] == ["I cannot tell."]
    assert judge["llm_grades"] == judge["holes"] - 3
    result.stdout.fnmatch_lines(["*not graded: 1 no_grade, 1 request_failed, 1 request_refused*"])
    # the failed pairs were not written: the next run asks for exactly those again
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url, agreement_sample=0)
        pytester.runpytest("--embedbench-json=r.json").assert_outcomes(passed=1)
        assert len(server.chat_requests) == 3


def test_a_broken_judgments_line_is_named(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    file = pytester.path / "data" / "thin" / "judgments.tsv"
    file.write_text("# embedbench judgments 1\nq1\td01\t2\n")
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url)
        result = pytester.runpytest()
        assert server.chat_requests == []
    result.assert_outcomes(errors=1)  # the model's tests error, naming the line
    result.stdout.fnmatch_lines(
        [f"*{file}*line 2: 3 tab-separated fields, expected 7 (query_id, doc_id, grade, *"]
    )
    assert result.ret != 0


def test_bad_judge_settings_name_the_key(pytester: pytest.Pytester, thinned: Any) -> None:
    pytester.makefile(
        ".yaml", embedbench="datasets:\n  thin: {path: data/thin}\njudge: {model: x, deph: 5}\n"
    )
    pytester.makepyfile(test_thin=BENCH.format(extra="", body="pass"))
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["*embedbench.yaml: judge: unknown key 'deph'; did you mean 'depth'?*"]
    )
    assert result.ret != 0
    pytester.makefile(".yaml", embedbench="datasets:\n  thin: {path: data/thin}\n")
    result = pytester.runpytest("--embedbench-judge-depth", "5")
    result.stdout.fnmatch_lines(["*--embedbench-judge-depth needs a judge*"])
    assert result.ret != 0
