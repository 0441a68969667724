"""bm25's ``language`` from embedbench.yaml, through a real pytest run: a Chinese BEIR folder
built from Django's Chinese translations (tests/unit/test_bm25_language.py builds the sets)."""

from __future__ import annotations

import json

import pytest

from tests.plugin.conftest import CONFTEST, set_ini, write_dataset
from tests.unit.test_bm25_language import messages, span_set

pytest.importorskip("django")
pytest.importorskip("bm25s")
pytest.importorskip("jieba")
pytest.importorskip("opencc")

TEST = """
import pytest

@pytest.mark.embedbench(dataset="zh", models=["bm25"])
def test_chinese(retrieval):
    assert retrieval.ndcg10 >= 0.7


@pytest.mark.embedbench(dataset="zh", models=["hybrid:hashing:h+bm25"])
def test_chinese_hybrid(retrieval, record_property):
    record_property("hybrid_ndcg10", float(retrieval.ndcg10))
"""


def chinese_project(pytester: pytest.Pytester, providers: str) -> None:
    ds = span_set(sorted(set(messages("zh_Hans").values())), "zh")
    write_dataset(pytester.path / "data" / "zh", ds)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", embedbench="datasets:\n  zh: {path: data/zh}\n" + providers)
    set_ini(pytester)
    pytester.makepyfile(test_zh=TEST)


def test_yaml_language_zh_segments_bm25_and_the_hybrid_leg(pytester: pytest.Pytester) -> None:
    chinese_project(
        pytester,
        "providers:\n  bm25: {language: zh}\n  hybrid: {right: {language: zh}}\n",
    )
    result = pytester.runpytest("--embedbench-json", "r.json")
    result.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "r.json").read_text())
    settings = {t["model"]: t["result"]["model_info"]["settings"] for t in report["tests"]}
    assert settings["bm25"]["tokenizer"].startswith("zh:jieba=")
    assert "fold=t2s" in settings["bm25"]["tokenizer"]
    hybrid = next(v for k, v in settings.items() if k != "bm25")
    assert hybrid["legs"][1]["tokenizer"] == settings["bm25"]["tokenizer"]
    assert "tokenizer" not in hybrid["legs"][0]  # the hashing leg


def test_without_the_language_bm25_on_chinese_fails_the_same_test(
    pytester: pytest.Pytester,
) -> None:
    chinese_project(pytester, "")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_zh.py::test_chinese*assert ndcg@10 = 0.3* >= 0.7"])
