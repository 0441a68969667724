"""Token and cost estimates of Chinese text through a real pytest run (issue 44): a provider
without a tokenizer (the hashing test provider) estimates a Chinese query as about one token a
character, as a subword tokenizer counts it, not as one whitespace word."""

from __future__ import annotations

import json

import pytest

from pytest_embedbench.data.chunking import load_tokenizer
from tests.plugin.conftest import CONFTEST, set_ini, write_beir

CORPUS = [
    {"_id": "d1", "title": "", "text": "在登录页面上点击忘记密码，然后按照邮件中的链接重置密码。"},
    {"_id": "d2", "title": "", "text": "每个月的第一天，发票会以PDF文件的形式发送到你的邮箱。"},
    {"_id": "d3", "title": "", "text": "在设置页面中可以把工作区的数据导出为CSV表格文件。"},
]
QUERIES = [
    {"_id": "q1", "text": "如何重置我的密码"},
    {"_id": "q2", "text": "每月发票在哪里"},
    {"_id": "q3", "text": "怎样导出工作区数据"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n"

TEST = """
import pytest

@pytest.mark.embedbench(dataset="zh", models=["hashing:h"])
def test_chinese(retrieval):
    pass
"""


def test_a_chinese_query_is_estimated_a_token_a_character(pytester: pytest.Pytester) -> None:
    write_beir(pytester.path / "data" / "zh", CORPUS, QUERIES, QRELS)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", embedbench="datasets:\n  zh: {path: data/zh}\n")
    set_ini(pytester)
    pytester.makepyfile(test_zh=TEST)
    result = pytester.runpytest("--embedbench-json", "r.json")
    result.assert_outcomes(passed=1)
    (test,) = json.loads((pytester.path / "r.json").read_text())["tests"]
    tokens = test["result"]["tokens"]
    assert tokens["estimated"] is True
    # MiniLM's tokenizer gives a Han character a token: the estimate is near its count
    minilm = load_tokenizer("all-MiniLM-L6-v2")
    queries = sum(len(minilm.encode(q["text"], add_special_tokens=False).ids) for q in QUERIES)
    documents = sum(len(minilm.encode(d["text"], add_special_tokens=False).ids) for d in CORPUS)
    assert queries == 24
    assert tokens["queries"] == queries  # a token a character, where each query was one
    assert 0.8 * documents <= tokens["documents"] <= 1.2 * documents
