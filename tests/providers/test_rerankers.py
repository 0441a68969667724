"""The hosted rerankers (issue 43) through their real SDKs (cohere, voyageai, boto3's
bedrock-agent-runtime) against loopback servers speaking each rerank API: the ranking is the
server's scores sorted by the tie rule, retries are counted at the server, candidates go in
requests of at most ``batch_size`` documents, truncation reaches the request, tokens and
search units are the server's, and a refused request is an error with the fix and no key."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from pytest_embedbench.core.exceptions import ConfigError, MissingKeyError, RerankerError
from pytest_embedbench.core.types import Document, Query
from pytest_embedbench.evaluation.reranked import with_options
from pytest_embedbench.generate.judge import JUDGE_PROMPT_SHA256
from pytest_embedbench.generate.rerank import LLMReranker
from pytest_embedbench.models.rerankers import BedrockReranker, CohereReranker, VoyageReranker
from pytest_embedbench.retrieval.rerank import Reranker, parse_rerankers, rerank, sort_scored
from tests.plugin.conftest import write_config

from .conftest import KEYS
from .rerank_servers import (
    BedrockRerankServer,
    CohereRerankServer,
    VoyageRerankServer,
    relevance,
)
from .servers import OpenAIChatServer

DOCS = [
    Document("d1", "Reset your password from the login page."),
    Document("d2", "Invoices are emailed every month as PDF."),
    Document("d3", "Export workspace data as CSV from settings."),
    Document("d4", "Change the card used for billing payments."),
    Document("d5", "Reset the login of the mobile app."),
    Document("d6", "The password page lists every login."),
    Document("d7", "Billing invoices for every month."),
]
QUERIES = [Query("q1", "reset password login"), Query("q2", "monthly billing invoices")]
BY_ID = {d.id: d for d in DOCS}
FIRST_STAGE = [[d.id for d in DOCS], [d.id for d in reversed(DOCS)]]

#: family -> (server class, spec model, options that point the client at the server)
FAMILIES = {
    "cohere": (CohereRerankServer, "rerank-v3.5", lambda url: {"base_url": url}),
    "voyage": (VoyageRerankServer, "rerank-2.5", lambda url: {"base_url": url + "/v1"}),
    "bedrock": (
        BedrockRerankServer,
        "cohere.rerank-v3-5:0",
        lambda url: {"endpoint_url": url, "region": "us-east-1"},
    ),
}
CLASSES = {"cohere": CohereReranker, "voyage": VoyageReranker, "bedrock": BedrockReranker}


@pytest.fixture(params=sorted(FAMILIES))
def family(request: pytest.FixtureRequest, keys: dict[str, str]) -> Iterator[tuple]:
    server_class, model, where = FAMILIES[request.param]
    with server_class(dim=8) as server:
        yield request.param, server, model, where(server.url)


def build(family: str, model: str, **options: object):
    return CLASSES[family](model, max_retries=3, backoff=0.0, **options)


def expected(query: Query, ids: list[str]) -> list[str]:
    """The server's scores of these candidates, sorted by the tie rule by hand."""
    return sort_scored(ids, [relevance(query.text, BY_ID[d].embed_text) for d in ids])[0]


def run(reranker, depth: int = 7):
    (spec,) = parse_rerankers([f"{reranker.name}:{reranker.model}@{depth}"], "test")
    return rerank(reranker, spec, QUERIES, FIRST_STAGE, BY_ID)


def test_the_ranking_is_the_servers_scores_sorted_by_the_tie_rule(family) -> None:
    name, server, model, where = family
    result = run(build(name, model, **where))
    for query, ids, ranked in zip(QUERIES, FIRST_STAGE, result.rankings, strict=True):
        assert ranked == expected(query, ids)
    scores = [relevance(QUERIES[0].text, BY_ID[d].embed_text) for d in result.rankings[0]]
    assert result.scores[0] == scores
    assert len(set(scores)) < len(scores)  # ties were there, and the document id broke them
    assert len(server.rerank_requests) == 2  # one request a query: 7 documents fit in one
    assert result.info["requests"] == 2 and result.info["retries"] == 0


def test_retries_on_429_and_5xx_are_counted_at_the_server(family) -> None:
    name, server, model, where = family
    server.script("429", "503")
    result = run(build(name, model, **where))
    assert len(server.rerank_requests) == 4  # 2 refused, then one a query
    assert result.info["requests"] == 4 and result.info["retries"] == 2
    assert result.rankings[0] == expected(QUERIES[0], FIRST_STAGE[0])


def test_candidates_over_batch_size_go_in_several_requests(family) -> None:
    name, server, model, where = family
    result = run(build(name, model, batch_size=3, **where))
    sizes = [len(_documents(name, r.body)) for r in server.rerank_requests]
    assert sizes == [3, 3, 1, 3, 3, 1]  # scores of separate requests compare: one ranking
    for query, ids, ranked in zip(QUERIES, FIRST_STAGE, result.rankings, strict=True):
        assert ranked == expected(query, ids)


def _documents(name: str, body: dict) -> list[str]:
    if name == "bedrock":
        return [s["inlineDocumentSource"]["textDocument"]["text"] for s in body["sources"]]
    return body["documents"]


def test_units_tokens_and_cost_per_1000_queries(keys: dict[str, str]) -> None:
    with CohereRerankServer() as cohere_server, VoyageRerankServer() as voyage_server:
        cohere = run(CohereReranker("rerank-v3.5", base_url=cohere_server.url))
        voyage = run(VoyageReranker("rerank-2.5", base_url=voyage_server.url + "/v1"))
    # Cohere bills search units (the server's count: one a query of up to 100 documents)
    assert cohere.unit == "search units" and cohere.units == 2.0 and cohere.tokens is None
    assert cohere.cost_per_1k_queries == pytest.approx(1000 * 2.00 / 1000)  # $2 per 1K searches
    # Voyage bills the tokens its answers count
    counted = sum(len(q.text.split()) * 7 + sum(len(d.text.split()) for d in DOCS) for q in QUERIES)
    assert voyage.tokens == counted
    assert voyage.cost_per_1k_queries == pytest.approx(counted / 2 * 1000 * 0.05 / 1e6)


def test_bedrock_counts_queries_of_100_documents_and_sends_the_model_arn(
    keys: dict[str, str],
) -> None:
    with BedrockRerankServer() as server:
        reranker = BedrockReranker("amazon.rerank-v1:0", endpoint_url=server.url, max_chars=12)
        result = run(reranker)
        body = server.rerank_requests[0].body
    config = body["rerankingConfiguration"]["bedrockRerankingConfiguration"]
    arn = "arn:aws:bedrock:us-east-1::foundation-model/amazon.rerank-v1:0"
    assert config["modelConfiguration"]["modelArn"] == arn
    assert config["numberOfResults"] == 7
    assert all(len(t) <= 12 for t in _documents("bedrock", body))  # max_chars truncates
    assert result.units == 2 and result.cost_per_1k_queries == pytest.approx(1.00)
    assert result.info["max_chars"] == 12


def test_truncation_settings_reach_the_request(keys: dict[str, str]) -> None:
    with CohereRerankServer() as cohere_server, VoyageRerankServer() as voyage_server:
        run(CohereReranker("rerank-v3.5", base_url=cohere_server.url, max_tokens_per_doc=64))
        assert cohere_server.rerank_requests[0].body["max_tokens_per_doc"] == 64
        voyage_server.context_words = 3  # every document is over the limit
        reranker = VoyageReranker("rerank-2.5", base_url=voyage_server.url + "/v1")
        run(reranker)  # truncation on (the default): the server cuts them
        assert voyage_server.rerank_requests[0].body["truncation"] is True
        strict = VoyageReranker("rerank-2.5", base_url=voyage_server.url + "/v1", truncation=False)
        with pytest.raises(RerankerError) as err:
            run(strict)
    message = str(err.value)
    assert "HTTP 400" in message and "exceeds the context length" in message
    assert "check the model id and the truncation options" in message


def refusal(
    server: CohereRerankServer | VoyageRerankServer, reranker: Reranker, *script: str
) -> str:
    """The message of the RerankerError that ``run(reranker)`` raises against ``server``
    scripted with these behaviours (``"401"``, ``"nan"``)."""
    server.script(*script)
    with pytest.raises(RerankerError) as err:
        run(reranker)
    return str(err.value)


@pytest.mark.parametrize(
    ("status", "fix"),
    [
        ("401", "check the API key"),
        ("404", "check the model id"),
        ("500", "the API kept failing: retry later, or raise max_retries"),
    ],
)
def test_a_refused_request_names_the_fix_and_never_the_key(
    keys: dict[str, str], status: str, fix: str
) -> None:
    with CohereRerankServer() as server:
        cohere = CohereReranker("rerank-v3.5", base_url=server.url, max_retries=3, backoff=0.0)
        message = refusal(server, cohere, *[status] * 4)
        sent = server.rerank_requests[0].headers["authorization"]
    assert message.startswith("reranker 'cohere:rerank-v3.5': provider 'cohere'")
    assert f"HTTP {status}" in message and fix in message
    assert KEYS["COHERE_API_KEY"] in sent and KEYS["COHERE_API_KEY"] not in message
    if status == "401":
        assert "COHERE_API_KEY or CO_API_KEY" in message
    tries = 4 if status == "500" else 1  # a 401 and a 404 are not retried
    assert len(server.rerank_requests) == tries


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("nan", "*returned score nan for document 'd1' of query 'q1'*finite number*"),
        ("fewer", "*returned 6 scores for the 7 documents of one request*batch_size*"),
    ],
)
def test_a_nan_or_a_missing_score_is_an_error(
    keys: dict[str, str], behaviour: str, message: str
) -> None:
    with VoyageRerankServer() as server:
        said = refusal(server, VoyageReranker("rerank-2.5", base_url=server.url + "/v1"), behaviour)
    assert re.search(message.replace("*", ".*").replace("'", "'"), said)


def test_bad_options_and_a_missing_key() -> None:
    with pytest.raises(ConfigError, match=r"batch_size=5000 must be from 1 to the API's limit"):
        CohereReranker("rerank-v3.5", batch_size=5000)
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['output_dimension'\]"):
        VoyageReranker("rerank-2.5", output_dimension=256)
    with pytest.raises(MissingKeyError, match="COHERE_API_KEY or CO_API_KEY"):
        CohereReranker("rerank-v3.5").ensure_loaded()


def write_dataset(pytester: pytest.Pytester) -> None:
    """DOCS and QUERIES as a BEIR folder under ``data/tiny``."""
    data = pytester.path / "data" / "tiny"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d.id, "title": "", "text": d.text}) + "\n" for d in DOCS)
    )
    (data / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q.id, "text": q.text}) + "\n" for q in QUERIES)
    )
    (data / "qrels" / "test.tsv").write_text("q1\td1\t1\nq1\td6\t1\nq2\td7\t1\n")


PROJECT_TEST = """
import pytest

@pytest.mark.embedbench(dataset="tiny", models=["bm25"], k=[1, 3],
                        rerankers=["none", "cohere:rerank-v3.5@5", "cohere:embed-english-v3.0@5"])
def test_search(retrieval):
    pass
"""


def test_through_the_plugin_with_options_from_embedbench_yaml(
    pytester: pytest.Pytester, keys: dict[str, str]
) -> None:
    """``cohere:rerank-v3.5@5`` reranks with Cohere Rerank at the ``base_url`` of
    ``providers: cohere`` (shared with the embedding provider, whose other options it leaves),
    with ``max_tokens_per_doc`` from its own entry; ``cohere:embed-english-v3.0@5`` rescores
    with Cohere's vectors; the report keeps units, cost and requests; no key is written."""
    write_dataset(pytester)
    with CohereRerankServer(dim=16) as server:
        write_config(
            pytester,
            f"""providers:
  cohere: {{base_url: "{server.url}", truncate: END, max_retries: 2, backoff: 0}}
  rerank-v3.5: {{max_tokens_per_doc: 128}}
""",
        )
        pytester.makepyfile(test_two=PROJECT_TEST)
        out = pytester.runpytest("-p", "no:randomly", "--embedbench-json=r.json")
        out.assert_outcomes(passed=3)
        reranks = server.rerank_requests
        embeds = [r for r in server.requests if r.path.startswith("/v2/embed")]
    assert len(reranks) == 2 and all(r.body["max_tokens_per_doc"] == 128 for r in reranks)
    assert embeds  # the bi-encoder rescorer embedded the candidates
    report_text = (pytester.path / "r.json").read_text()
    assert KEYS["COHERE_API_KEY"] not in report_text
    report = json.loads(report_text)
    by_id = {t["nodeid"].rpartition("[")[2].rstrip("]"): t for t in report["tests"]}
    rerank_data = by_id["bm25-rerank-v3.5-top5"]["result"]["rerank"]
    assert rerank_data["units"] == 2.0 and rerank_data["unit"] == "search units"
    assert rerank_data["cost_per_1k_queries"] == pytest.approx(2.0)
    assert rerank_data["info"]["requests"] == 2
    ranked = by_id["bm25-rerank-v3.5-top5"]["result"]["retrieved"]
    for query in QUERIES:  # the server's scores of BM25's top 5, sorted by the tie rule
        candidates = list(rerank_data["stage1_retrieved"][query.id][:5])
        assert len(candidates) == 5 and ranked[query.id] == expected(query, candidates)
    assert "rescoring with cohere:embed-english-v3.0" in json.dumps(
        by_id["bm25-embed-english-v3.0-top5"]["result"]["rerank"]
    )


# -- the LLM reranker against a loopback OpenAI-compatible chat server (the real SmolLM2 run
# is tests/llm/test_llm_rerank.py) --------------------------------------------------------


def _llm(server: OpenAIChatServer, **options: object) -> LLMReranker:
    return LLMReranker(
        "qwen2.5-7b-instruct", base_url=server.url + "/v1", max_retries=2, backoff=0.0, **options
    )


def test_the_llm_reranker_ranks_by_the_grades_with_the_tie_rule() -> None:
    grades = {d.id: str(i % 3) for i, d in enumerate(DOCS)}  # 0, 1, 2, 0, ...: ties

    def answer(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        doc = next(d for d in DOCS if f"Passage: {d.embed_text}\n" in prompt)
        return json.dumps({"grade": int(grades[doc.id])})

    with OpenAIChatServer(answerer=answer) as server:
        server.script("503")
        result = run(_llm(server), depth=4)
    for ids, ranked in zip(FIRST_STAGE, result.rankings, strict=True):
        assert ranked == sort_scored(ids[:4], [float(grades[d]) for d in ids[:4]])[0]
    assert result.info["prompt_sha256"] == JUDGE_PROMPT_SHA256
    assert result.info["requests"] == len(server.chat_requests) == 9  # 8 pairs, 1 retried
    assert result.info["retries"] == 1
    assert result.cost_per_1k_queries is None  # no price given: unknown, not free


def test_an_llm_answer_without_a_grade_is_an_error_quoting_it_or_scores_zero() -> None:
    with OpenAIChatServer(answerer=lambda body: "I think it is quite relevant!") as server:
        with pytest.raises(RerankerError) as err:
            run(_llm(server))
        lenient = run(_llm(server, no_grade="zero", price_per_1m_tokens=0.5))
    assert "answered 'I think it is quite relevant!' for document 'd1'" in str(err.value)
    assert "no_grade: zero" in str(err.value)
    assert lenient.info["no_grade"] == 14 and lenient.rankings[0] == sorted(
        FIRST_STAGE[0], reverse=True
    )  # every score 0: the document ids, descending
    assert lenient.tokens == 28 and lenient.cost_per_1k_queries == pytest.approx(
        14 * 1000 * 0.5 / 1e6
    )  # the server's usage: 2 tokens an answer


def test_llm_reranker_options_and_a_refusing_server() -> None:
    with pytest.raises(ConfigError, match=r"no_grade 'skip': use 'error'"):
        LLMReranker("m", no_grade="skip")
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['temperature'\]"):
        LLMReranker("m", temperature=0.7)
    with pytest.raises(ConfigError, match=r"max_tokens 0 must be a whole number from 1"):
        LLMReranker("m", max_tokens=0)
    with OpenAIChatServer() as server:
        server.script("500", "500", "500")
        with pytest.raises(RerankerError, match=r"failed on document 'd1': HTTP 500.*max_retries"):
            run(_llm(server))


def test_a_hosted_reranker_without_its_key_skips_its_test_only(pytester: pytest.Pytester) -> None:
    """No COHERE_API_KEY: the reranker's test is skipped with the variable named; the first
    stage's test runs."""
    write_dataset(pytester)
    write_config(pytester, "")
    pytester.makepyfile(test_two=PROJECT_TEST.replace(', "cohere:embed-english-v3.0@5"', ""))
    out = pytester.runpytest("-rs")
    out.assert_outcomes(passed=1, skipped=1)
    out.stdout.fnmatch_lines(["*SKIPPED*COHERE_API_KEY or CO_API_KEY*"])


def test_a_depth_sweep_counts_each_runs_requests(keys: dict[str, str]) -> None:
    """One reranker serves every depth of a sweep; each run counts its own requests."""
    with CohereRerankServer() as server:
        reranker = CohereReranker("rerank-v3.5", base_url=server.url, batch_size=2)
        deep = run(reranker, depth=7)
        shallow = run(reranker, depth=3)
        assert len(server.rerank_requests) == 8 + 4
    assert deep.info["requests"] == 8 and shallow.info["requests"] == 4
    assert shallow.rankings[0] == expected(QUERIES[0], FIRST_STAGE[0][:3])


HOSTED_TEST = """
import pytest

@pytest.mark.embedbench(dataset="tiny", models=["bm25"], k=[1, 3], rerankers=["none", {spec!r}])
def test_search(retrieval):
    pass
"""


@pytest.mark.parametrize(
    ("spec", "options"),
    [
        ("voyage:rerank-2.5@5", lambda url: {"base_url": url + "/v1", "backoff": 0}),
        ("bedrock:amazon.rerank-v1:0@5", lambda url: {"endpoint_url": url, "backoff": 0}),
    ],
    ids=["voyage", "bedrock"],
)
def test_voyage_and_bedrock_through_the_plugin(
    pytester: pytest.Pytester, keys: dict[str, str], spec: str, options
) -> None:
    """The other two SDKs as a user runs them: options from ``providers:``, two requests
    refused then retried (counted at the server and in the report), the reranked order the
    server's scores sorted by the tie rule."""
    family = spec.split(":", 1)[0]
    server_class = VoyageRerankServer if family == "voyage" else BedrockRerankServer
    write_dataset(pytester)
    with server_class() as server:
        server.script("429", "500")
        config = {"datasets": {"tiny": {"path": "data/tiny"}}}
        config["providers"] = {family: options(server.url)}
        pytester.makefile(".yaml", embedbench=json.dumps(config))
        pytester.makepyfile(test_hosted=HOSTED_TEST.format(spec=spec))
        out = pytester.runpytest("-p", "no:randomly", "--embedbench-json=r.json")
        out.assert_outcomes(passed=2)
        requests = len(server.rerank_requests)
    report = json.loads((pytester.path / "r.json").read_text())
    (reranked,) = [t["result"] for t in report["tests"] if "rerank" in t["result"]]
    rerank_data = reranked["rerank"]
    assert requests == rerank_data["info"]["requests"] == 4
    assert rerank_data["info"]["retries"] == 2
    for query in QUERIES:
        candidates = list(rerank_data["stage1_retrieved"][query.id][:5])
        assert reranked["retrieved"][query.id] == expected(query, candidates)


def test_reranker_options_from_embedbench_yaml_are_checked() -> None:
    (llm,) = parse_rerankers(["llm:qwen2.5@10"], "here")
    (cohere,) = parse_rerankers(["cohere:rerank-v3.5@10"], "here")
    with pytest.raises(ConfigError, match=r"providers.llm: .*'base_ur'; did you mean 'base_url'"):
        with_options(llm, {"llm": {"base_ur": "http://127.0.0.1:8000/v1"}}, "embedbench.yaml")
    with pytest.raises(ConfigError, match=r"providers.rerank-v3.5: .*takes no option 'truncate'"):
        with_options(cohere, {"rerank-v3.5": {"truncate": "END"}}, "embedbench.yaml")
    # the family's entry serves the embedding provider too: the reranker takes what it knows
    found = with_options(
        cohere,
        {"cohere": {"truncate": "END", "base_url": "http://127.0.0.1:1"}, "rerank-v3.5": {}},
        "embedbench.yaml",
    )
    assert found.options == (("base_url", "http://127.0.0.1:1"),)
