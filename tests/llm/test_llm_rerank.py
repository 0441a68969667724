"""The LLM reranker (issue 43) with a real small model (SmolLM2-135M under llama-cpp-python's
server): BM25's top 5 of 2 queries of the tiny dataset graded pointwise with the pinned prompt,
through a loopback proxy that keeps every answer, so the test can prove that the reranked order
is the grades the server answered sorted by the tie rule, and that the requests reported are
the requests the server got."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pytest_embedbench.generate.judge import JUDGE_PROMPT_SHA256, parse_grade
from pytest_embedbench.retrieval.rerank import sort_scored

from ..plugin.conftest import CORPUS, QUERIES, set_ini, write_beir
from .conftest import LocalLLM
from .test_llm_judge import CountingProxy

pytestmark = [pytest.mark.llm, pytest.mark.slow]

QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td3\t1\n"

TEST = """
import pytest

@pytest.mark.embedbench(models=["bm25"], dataset="tiny", k=[1, 3],
                        rerankers=["none", "llm:smollm2@5"])
def test_search(retrieval):
    pass
"""


@pytest.fixture
def proxy(local_llm: LocalLLM) -> Iterator[CountingProxy]:
    with CountingProxy(local_llm.base_url) as found:
        yield found


def _graded(proxy: CountingProxy) -> dict[tuple[str, str], int | None]:
    """(query, passage) -> the grade of the server's answer, from the proxy's exchanges."""
    found: dict[tuple[str, str], int | None] = {}
    for body, status, data in proxy.exchanges:
        if status != 200:
            continue  # a structured-output form the server refused
        prompt = json.loads(body)["messages"][-1]["content"]
        query = prompt.split("Query: ", 1)[1].split("\n", 1)[0]
        passage = prompt.split("Passage: ", 1)[1].split("\n\nAnswer with", 1)[0]
        content = json.loads(data)["choices"][0]["message"]["content"] or ""
        found[(query, passage)] = parse_grade(content)
    return found


def test_a_real_llm_reranks_by_the_grades_it_answered(
    pytester: pytest.Pytester, local_llm: LocalLLM, proxy: CountingProxy
) -> None:
    # 2 queries x depth 5: 10 graded pairs, each seconds long for a CPU-served model
    write_beir(pytester.path / "data" / "tiny", CORPUS, QUERIES[:2], QRELS)
    pytester.makefile(
        ".yaml",
        embedbench=(
            "datasets:\n  tiny: {path: data/tiny}\nproviders:\n  llm: "
            + json.dumps({"base_url": proxy.base_url, "max_tokens": 8, "no_grade": "zero"})
            + "\n"
        ),
    )
    set_ini(pytester)
    pytester.makepyfile(test_llm=TEST)
    out = pytester.runpytest_subprocess("-p", "no:randomly", "--embedbench-json=r.json")
    out.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "r.json").read_text())
    by_id = {t["nodeid"].rpartition("[")[2].rstrip("]"): t for t in report["tests"]}
    result = by_id["bm25-smollm2-top5"]["result"]
    rerank = result["rerank"]
    info = rerank["info"]
    assert info["prompt_sha256"] == JUDGE_PROMPT_SHA256 and "{passage}" in info["prompt"]
    assert info["requests"] == proxy.chat_requests == len(proxy.exchanges)
    assert info["model"] == "openai:smollm2" and info["no_grade_policy"] == "zero"
    graded = _graded(proxy)
    texts = {d["_id"]: f"{d['title']} {d['text']}".strip() for d in CORPUS}
    queries = result["query_texts"]
    no_grade = 0
    for qid, ranked in result["retrieved"].items():
        candidates = list(rerank["stage1_retrieved"][qid][:5])
        grades = [graded[(queries[qid], texts[d])] for d in candidates]
        no_grade += sum(g is None for g in grades)
        scores = [float(g) if g is not None else 0.0 for g in grades]
        assert ranked == sort_scored(candidates, scores)[0]  # ties by document id, descending
    assert info["no_grade"] == no_grade
    assert len(result["retrieved"]) == 2 and rerank["tokens"] > 0  # the server's usage counts
    assert info["requests"] <= 11  # 10 pairs (and a structured-output form refused once)
