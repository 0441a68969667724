"""The LLM judge through pytest, against a loopback OpenAI-compatible chat server (the real
``openai`` client, real HTTP): verdicts written beside the eval set and replayed (a second run
asks nothing and gives the same figures), the human qrels untouched, the metrics on human +
LLM grades and the agreement in the report, and its faults: a server error quoted, a refusal
not retried, an answer without a grade, another judge's verdicts kept apart, a broken line."""

from __future__ import annotations

import csv
import html
import json
import re
from typing import Any

import pytest

from pytest_embedbench.report.writers.tabular import write_csv

from ..providers.servers import OpenAIChatServer
from .conftest import BENCH, REVERSED

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
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels_file = pytester.path / "data" / "thin" / "qrels" / "test.tsv"
    human = qrels_file.read_text()
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url)
        result = pytester.runpytest(
            *("--embedbench-json=r.json", "--junitxml=j.xml", "--embedbench-csv=csv"),
            *("--embedbench-md=r.md", "--embedbench-html=r.html"),
        )
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
    # judge.csv: one row, the JSON report's figures
    with open(pytester.path / "csv" / "judge.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["judge_id"] == first["judge_id"] and int(row["requests"]) == asked
    assert float(row["judged_after"]) == first["judged_after"]
    assert float(row["judged_before"]) == first["judged_before"]
    assert int(row["llm_grades"]) == holes and int(row["agreement_pairs"]) == 12
    assert float(row["llm.ndcg@10"]) == first["metrics"]["ndcg@10"]["value"]
    assert float(row["llm.ndcg@10_low"]) == first["metrics"]["ndcg@10"]["low"]
    kappa = first["agreement"]["kappa_binary"]
    assert row["kappa_binary"] == ("" if kappa is None else repr(kappa))
    assert row["confusion"] == "|".join(
        f"{k}: {v}" for k, v in first["agreement"]["confusion"].items()
    )
    # the saved JSON report gives the same judge.csv (embedbench report r.json --csv DIR)
    saved = json.loads((pytester.path / "r.json").read_text())
    write_csv(pytester.path / "again", saved)
    assert (pytester.path / "again" / "judge.csv").read_bytes() == (
        pytester.path / "csv" / "judge.csv"
    ).read_bytes()
    # no price set: the cost is empty and said to be unknown, with the tokens it would price
    assert row["price_known"] == "False" and row["cost_usd"] == "" and first["cost_usd"] is None
    assert float(row["requests_per_query"]) == first["requests_per_query"]
    # the metrics with LLM grades beside the official ones, and the agreement, in the notes
    result.stdout.fnmatch_lines(
        [
            f"*LLM judge openai:{MODEL}: judged@10 0.* -> 1.00; ndcg@10 0.* (human) / 0.* (human "
            f"+ {holes} LLM grades); kappa * binary, * graded on 12 human pairs*; {asked} "
            f"requests (* per query), 0 verdicts replayed from *, cost unknown ({first['tokens']} "
            "tokens; no price set: judge: {price_per_1m_tokens: USD})"
        ]
    )
    confusion = ", ".join(
        f"{key.split()[1]}/{key.split()[-1]} x{n}"
        for key, n in first["agreement"]["confusion"].items()
    )
    assert f"12 human pairs (human/judge grades: {confusion})" in result.stdout.str()
    # the same note in the Markdown, the job summary and the HTML report
    (note,) = [line for line in result.stdout.lines if ": LLM judge openai:" in line]
    figures = note.split(": LLM judge ", 1)[1].split(", 0 verdicts replayed")[0]
    for name in ("r.md", "step.md", "r.html"):
        # Markdown escapes its markup characters, HTML its entities: the note's text beneath
        text = html.unescape((pytester.path / name).read_text()).replace("\\", "")
        assert figures in text, name
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


def test_human_and_llm_metrics_read_the_judge_as_the_humans_are_read(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    """One rule for the judge's grades: the official metrics count a human grade >= 1
    relevant, so a judge's grade counts from UMBRELA's 2 ("holds an answer") on, moved down
    by one (3 -> 2, 2 -> 1, 1 and 0 -> 0) in the metrics on human + LLM grades as in the
    binary kappa. Every metric the result reports is computed on them, equal to pytrec_eval
    on the qrels filled that way, and judge.csv has each."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url)
        pytester.runpytest("--embedbench-json=r.json", "--embedbench-csv=csv").assert_outcomes(
            passed=1
        )
    found = json.loads((pytester.path / "r.json").read_text())["tests"][0]["result"]
    judge = found["judge"]
    assert set(judge["metrics"]) == set(found["metrics"])  # every metric the result reports
    assert {"map@10", "precision@10", "hit@10", "condensed_ndcg@10"} <= set(judge["metrics"])
    lines = (pytester.path / "data" / "thin" / "judgments.tsv").read_text().splitlines()[2:]
    grades = {(c[0], c[1]): int(c[2]) for c in (line.split("\t") for line in lines)}
    assert {1, 2} <= set(grades.values())  # the grades the rule tells apart
    filled = {q: dict(judged) for q, judged in thinned.items()}
    for (q, d), grade in grades.items():
        filled[q].setdefault(d, max(grade - 1, 0))  # the human grade wins
    run = {
        q: {d: float(10 - r) for r, d in enumerate(ids[:10])}
        for q, ids in found["retrieved"].items()
    }
    trec = {  # our name: pytrec_eval's measure, its key, condensed (trec_eval -J)
        "ndcg@10": ("ndcg_cut.10", "ndcg_cut_10", False),
        "recall@10": ("recall.10", "recall_10", False),
        "precision@10": ("P.10", "P_10", False),
        "mrr@10": ("recip_rank", "recip_rank", False),  # the run holds the top 10
        "hit@10": ("success.10", "success_10", False),
        "map@10": ("map_cut.10", "map_cut_10", False),
        "condensed_ndcg@10": ("ndcg_cut.10", "ndcg_cut_10", True),
    }
    for name, (measure, key, condensed) in trec.items():
        evaluator = pytrec_eval.RelevanceEvaluator(
            filled, {measure}, judged_docs_only_flag=condensed
        )
        values = [v[key] for v in evaluator.evaluate(run).values()]
        expected = sum(values) / len(thinned)
        assert judge["metrics"][name]["value"] == pytest.approx(expected, abs=1e-12), name
    # the binary kappa: human >= 1 against judge >= 2, the same rule
    sample = [(q, d) for q, docs in thinned.items() for d in docs if (q, d) in grades]
    assert judge["agreement"]["pairs"] == len(sample) > 0
    human = [int(thinned[q][d] >= 1) for q, d in sample]
    llm = [int(grades[(q, d)] >= 2) for q, d in sample]
    agree = sum(h == g for h, g in zip(human, llm, strict=True)) / len(sample)
    chance = sum((human.count(v) / len(sample)) * (llm.count(v) / len(sample)) for v in (0, 1))
    kappa = judge["agreement"]["kappa_binary"]
    assert kappa == pytest.approx((agree - chance) / (1 - chance)) if chance < 1 else kappa is None
    # judge.csv has every one of them
    with open(pytester.path / "csv" / "judge.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    for name, metric in judge["metrics"].items():
        assert float(row[f"llm.{name}"]) == metric["value"], name


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
    assert judge["ungraded"] == 2 and judge["asked"] == judge["holes"] - 1
    result.stdout.fnmatch_lines(["*not graded: 1 no_grade, 1 request_failed, 1 request_refused*"])
    result.stdout.fnmatch_lines(["*; 2 pairs without a grade in the judgments file (*"])
    # the refusal and the answer without a grade are final: written as '-' with the reason;
    # the 503 may pass, so it is not written
    file = pytester.path / "data" / "thin" / "judgments.tsv"
    rows = [line.split("\t") for line in file.read_text().splitlines()[2:]]
    assert len(rows) == judge["holes"] - 1
    ungraded = [row for row in rows if row[2] == "-"]
    assert [len(row) for row in ungraded] == [8, 8]
    assert ungraded[0][7].startswith("request_refused: ") and "Bad request." in ungraded[0][7]
    assert ungraded[1][7] == "no_grade: 'I cannot tell.'"
    assert all(len(row) == 7 and row[2] in "0123" for row in rows if row[2] != "-")
    # the next run asks only for the pair whose fault may pass
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url, agreement_sample=0)
        pytester.runpytest("--embedbench-json=r.json").assert_outcomes(passed=1)
        assert len(server.chat_requests) == 1
    again = judge_of(pytester)
    assert again["ungraded"] == 2 and again["llm_grades"] == again["holes"] - 2
    assert again["requests"] == 1 and again["failures"] == {}
    # the pairs without a grade stay unjudged: judged@10 after is a direct count
    found = json.loads((pytester.path / "r.json").read_text())["tests"][0]["result"]
    rows = [line.split("\t") for line in file.read_text().splitlines()[2:]]
    assert len(rows) == judge["holes"]  # the pair asked again is written now
    graded = {(row[0], row[1]) for row in rows if row[2] != "-"}
    graded |= {(q, d) for q, judged in thinned.items() for d in judged}
    retrieved = found["retrieved"]
    shares = [
        sum((q, d) in graded for d in retrieved[q][:10]) / min(10, len(retrieved[q]))
        for q in thinned
    ]
    assert again["judged_after"] == pytest.approx(sum(shares) / len(shares))
    assert again["judged_after"] < 1.0
    # and a third run asks nothing: every outcome is recorded, the figures are the same
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url, agreement_sample=0)
        pytester.runpytest("--embedbench-json=r.json").assert_outcomes(passed=1)
        assert server.chat_requests == []
    third = judge_of(pytester)
    assert third["replayed"] == third["holes"] and third["ungraded"] == 2
    assert json.dumps(third["metrics"], sort_keys=True) == json.dumps(
        again["metrics"], sort_keys=True
    )


def test_a_judge_that_stops_keeps_the_official_metrics_and_its_verdicts(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    """Two answers, then the server refuses the key (401: every later request would fail the
    same): the test passes on its official metrics, the report names why the judge stopped,
    the two verdicts are kept, and the next run asks only for the rest. With a price, the cost
    is priced."""
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url, agreement_sample=0, price_per_1m_tokens=2.0)
        server.script("ok", "ok", "401")
        result = pytester.runpytest("--embedbench-json=r.json", "--junitxml=j.xml")
        result.assert_outcomes(passed=1)
        assert len(server.chat_requests) == 3
    judge = judge_of(pytester)
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["tests"][0]["result"]["metrics"]["ndcg@10"]["value"] is not None
    assert judge["asked"] == judge["llm_grades"] == 2 < judge["holes"]
    assert "refused the request" in judge["error"] and "OPENAI_API_KEY" in judge["error"]
    assert judge["cost_usd"] == judge["tokens"] * 2.0 / 1_000_000 and judge["price_known"]
    result.stdout.fnmatch_lines(
        [
            "*LLM judge openai:*, cost $0.0000 (* tokens); the judge stopped: openai server at "
            "* refused the request: *; the official metrics stand, and the 2 verdicts it gave "
            "were kept"
        ]
    )
    assert (
        'name="embedbench.judge.error" value="openai server at'
        in (pytester.path / "j.xml").read_text()
    )
    lines = (pytester.path / "data" / "thin" / "judgments.tsv").read_text().splitlines()
    assert len(lines) == 2 + 2
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url, agreement_sample=0)
        pytester.runpytest("--embedbench-json=r.json").assert_outcomes(passed=1)
        assert len(server.chat_requests) == judge["holes"] - 2
    assert "error" not in judge_of(pytester)


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


def test_an_id_a_judgments_file_cannot_hold_is_refused(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    """A document id with a tab (a JSONL corpus can hold one; a TSV line cannot): the test
    errors naming the id and the judgments file before any request, and nothing is written."""
    corpus = pytester.path / "data" / "thin" / "corpus.jsonl"
    judged = {d for docs in thinned.values() for d in docs}
    records = [json.loads(line) for line in corpus.read_text().splitlines()]
    for record in records:
        if record["_id"] not in judged:  # every unjudged document: the judge's holes
            record["_id"] = record["_id"].replace("d", "d\t", 1)
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records))
    file = pytester.path / "data" / "thin" / "judgments.tsv"
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url)
        result = pytester.runpytest()
        assert server.chat_requests == []
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"*{file}: document id 'd\\t*' holds a tab or a line break, which a judgments file*"]
    )
    assert not file.exists()


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


#: an index test and a rerank test; ``reversed`` turns the first stage upside down, so its top
#: 10 holds other documents than the first stage's
AXES = (
    "import pytest\n"
    + REVERSED
    + """

@pytest.mark.embedbench(models=["hashing:h"], dataset="thin", k=[10], indexes=["faiss:flat"])
def test_index(retrieval):
    pass


@pytest.mark.embedbench(
    models=["bm25"], dataset="thin", k=[10], rerankers=["none", "reversed@20"]
)
def test_rerank(retrieval):
    pass
"""
)


@pytest.mark.slow
def test_the_judge_grades_each_index_and_reranker(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    """Each result of the index and reranking axes is judged over its own top 10: the
    reranked top (other documents than the first stage's) and the first stage once."""
    pytest.importorskip("faiss")
    with OpenAIChatServer(answerer=grader) as server:
        configure(pytester, server.url, agreement_sample=0)
        pytester.makepyfile(test_thin=AXES)
        result = pytester.runpytest("--embedbench-json=r.json")
        result.assert_outcomes(passed=3)
        asked = len(server.chat_requests)
    report = json.loads((pytester.path / "r.json").read_text())
    judges = {t["nodeid"].split("::")[1]: t["result"]["judge"] for t in report["tests"]}
    assert sorted(judges) == [
        "test_index[h-faiss:flat]",
        "test_rerank[bm25-none]",
        "test_rerank[bm25-reversed-top20]",
    ], sorted(judges)
    for name, judge in judges.items():
        assert judge["judged_after"] == 1.0 and judge["llm_grades"] == judge["holes"] > 0, name
    # a pair two results share is asked once: the file holds each pair once
    lines = (pytester.path / "data" / "thin" / "judgments.tsv").read_text().splitlines()[2:]
    assert len(lines) == asked == len({tuple(line.split("\t")[:2]) for line in lines})
    stage1, reranked = judges["test_rerank[bm25-none]"], judges["test_rerank[bm25-reversed-top20]"]
    assert reranked["asked"] > 0 and reranked["replayed"] < reranked["holes"]
    assert stage1["metrics"] != reranked["metrics"]
