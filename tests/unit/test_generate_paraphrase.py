"""generate/paraphrase.py: the configured chat model rewrites queries for noise:paraphrase,
through the real openai client against a loopback server; bad paraphrases are rejected and
counted, every paraphrase is cached (a second run calls no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.core.types import Document, Query
from pytest_embedbench.data.datasets import RetrievalDataset
from pytest_embedbench.data.stress.noise import noisy_dataset
from pytest_embedbench.generate import GenerationError
from pytest_embedbench.generate.paraphrase import (
    ChatParaphraser,
    paraphrase_reason,
    paraphrase_settings,
)

from ..providers.servers import OpenAIChatServer

QUERIES = {
    "q1": ("how do I reset my password", "the login page"),
    "q2": ("export data csv", None),
    "q3": ("monthly invoices pdf", None),
    "q4": ("rate limit of the api", "600 requests per minute"),
    "q5": ("mobile offline reading", None),
}
#: what the "model" answers for each query text: kept, identical, empty, copies the answer,
#: prose instead of JSON (every attempt)
ANSWERS = {
    "how do I reset my password": {"paraphrase": "ways to change a forgotten password"},
    "export data csv": {"paraphrase": "Export data, CSV!"},
    "monthly invoices pdf": {"paraphrase": "  "},
    "rate limit of the api": {"paraphrase": "is it 600 requests per minute for the API"},
    "mobile offline reading": "I cannot help with that.",
}


def answerer(body: Any) -> str:
    prompt = body["messages"][-1]["content"]
    text = prompt.rsplit("Query: ", 1)[1]
    answer = ANSWERS[text]
    return answer if isinstance(answer, str) else json.dumps(answer)


def dataset() -> RetrievalDataset:
    docs = [Document("d1", "Reset your password from the login page.")]
    queries = [
        Query(qid, text, {"answer": answer} if answer else {})
        for qid, (text, answer) in QUERIES.items()
    ]
    return RetrievalDataset(docs, queries, {qid: {"d1": 1} for qid in QUERIES}, name="t")


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def settings(url: str, **more: Any) -> Any:
    return paraphrase_settings(
        {"model": "openai:qwen2.5-7b-instruct", "base_url": url + "/v1", "seed": 5, **more},
        "embedbench.yaml: paraphrase",
    )


def test_paraphrases_are_rejected_counted_and_cached(tmp_path: Path) -> None:
    with OpenAIChatServer(answerer=answerer) as server:
        para = ChatParaphraser(settings(server.url), cache_dir=tmp_path)
        noisy = noisy_dataset(dataset(), "paraphrase", seed=0, paraphraser=para)
        calls = len(server.chat_requests)
        body = server.chat_requests[0].body
    texts = {q.id: q.text for q in noisy.queries}
    assert texts == {
        "q1": "ways to change a forgotten password",
        "q2": "export data csv",  # identical: the query keeps its words
        "q3": "monthly invoices pdf",  # empty
        "q4": "rate limit of the api",  # copies the answer
        "q5": "mobile offline reading",  # unreadable, both attempts
    }
    assert dict(para.counts) == {
        "asked": 5,
        "requested": 6,
        "kept": 1,
        "identical": 1,
        "empty": 1,
        "copies_answer": 1,
        "unreadable": 1,
    }
    assert calls == 6
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["paraphrase"]
    assert body["temperature"] == 0.0 and isinstance(body["seed"], int)
    # a second run (a new paraphraser, as a new pytest run makes) calls no model
    with OpenAIChatServer(answerer=answerer) as server:
        again = ChatParaphraser(settings(server.url), cache_dir=tmp_path)
        noisy_again = noisy_dataset(dataset(), "paraphrase", seed=0, paraphraser=again)
        assert server.chat_requests == []
    assert {q.id: q.text for q in noisy_again.queries} == texts
    assert again.counts["cached"] == 5 and again.counts["requested"] == 0
    assert again.counts_dict()["model"] == "openai:qwen2.5-7b-instruct"


def test_another_seed_or_model_is_asked_again(tmp_path: Path) -> None:
    with OpenAIChatServer(answerer=answerer) as server:
        ChatParaphraser(settings(server.url), cache_dir=tmp_path)("export data csv")
        ChatParaphraser(settings(server.url, seed=6), cache_dir=tmp_path)("export data csv")
        assert len(server.chat_requests) == 2


def test_a_refusing_server_is_a_clear_error(tmp_path: Path) -> None:
    with OpenAIChatServer(answerer=answerer) as server:
        server.script("400")
        para = ChatParaphraser(settings(server.url), cache_dir=tmp_path)
        with pytest.raises(GenerationError, match=r"could not paraphrase .*HTTP 400: Bad request"):
            para("export data csv")
    assert not list(tmp_path.rglob("*.json"))  # a failure is never cached


@pytest.mark.parametrize(
    ("original", "paraphrase", "answer", "reason"),
    [
        ("reset password?", "Reset  password", None, "identical"),
        ("reset password?", "...", None, "empty"),
        ("when does it open?", "is it open at 9 am", "at 9 am", "copies_answer"),
        ("is it open at 9 am?", "does it open at 9 am", "at 9 am", None),  # the query had it
        ("reset password?", "change my password", "x", None),  # a one-letter answer: no check
    ],
)
def test_paraphrase_reasons(original: str, paraphrase: str, answer: Any, reason: Any) -> None:
    assert paraphrase_reason(original, paraphrase, answer) == reason


def test_paraphrase_settings_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"paraphrase: unknown key 'modle'; did you mean 'model'"):
        paraphrase_settings({"modle": "x"}, "embedbench.yaml: paraphrase")
    with pytest.raises(ConfigError, match=r"paraphrase: needs 'model'"):
        paraphrase_settings({"seed": 1}, "embedbench.yaml: paraphrase")
    with pytest.raises(ConfigError, match=r"paraphrase: expected a mapping"):
        paraphrase_settings("smollm2", "embedbench.yaml: paraphrase")
    with pytest.raises(ConfigError, match=r"paraphrase: seed 'x' must be a whole number"):
        paraphrase_settings({"model": "llama3.2", "seed": "x"}, "embedbench.yaml: paraphrase")
