"""bm25's ``language`` from embedbench.yaml, through a real pytest run: a Chinese BEIR folder
built from Django's Chinese translations (tests/unit/test_bm25_language.py builds the sets).
``providers: {bm25: {language: zh}}`` reaches the bm25 leg of a hybrid too, and a hybrid's own
``language`` option passes to its lexical leg."""

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
from pytest_embedbench import ModelSpec

@pytest.mark.embedbench(dataset="zh", models=["bm25"])
def test_chinese(retrieval):
    assert retrieval.ndcg10 >= 0.7


@pytest.mark.embedbench(dataset="zh", models=["hybrid:hashing:h+bm25"])
def test_chinese_hybrid(retrieval, record_property):
    record_property("hybrid_ndcg10", float(retrieval.ndcg10))


@pytest.mark.embedbench(
    dataset="zh", models=[ModelSpec("hybrid:hashing:h+bm25", name="hy-zh", language="zh")]
)
def test_chinese_hybrid_language(retrieval):
    pass
"""


def chinese_project(pytester: pytest.Pytester, providers: str) -> None:
    ds = span_set(sorted(set(messages("zh_Hans").values())), "zh")
    write_dataset(pytester.path / "data" / "zh", ds)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", embedbench="datasets:\n  zh: {path: data/zh}\n" + providers)
    set_ini(pytester)
    pytester.makepyfile(test_zh=TEST)


def _settings(pytester: pytest.Pytester) -> dict[str, dict]:
    report = json.loads((pytester.path / "r.json").read_text())
    return {t["model"]: t["result"]["model_info"]["settings"] for t in report["tests"]}


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_yaml_language_zh_segments_bm25_and_the_hybrid_leg(pytester: pytest.Pytester) -> None:
    """``providers.bm25`` alone: the hybrid's bm25 leg takes its language as plain bm25 does."""
    chinese_project(pytester, "providers:\n  bm25: {language: zh}\n")
    result = pytester.runpytest("--embedbench-json", "r.json")
    result.assert_outcomes(passed=3)
    settings = _settings(pytester)
    assert settings["bm25"]["tokenizer"].startswith("zh:jieba=")
    assert "fold=t2s" in settings["bm25"]["tokenizer"]
    hybrid = settings["hybrid-h+bm25"]
    assert hybrid["legs"][1]["tokenizer"] == settings["bm25"]["tokenizer"]
    assert "tokenizer" not in hybrid["legs"][0]  # the hashing leg
    assert settings["hy-zh"]["legs"][1]["tokenizer"] == settings["bm25"]["tokenizer"]


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_without_the_language_bm25_on_chinese_fails_the_same_test(
    pytester: pytest.Pytester,
) -> None:
    """Without ``language`` nothing is segmented, but the hybrid whose spec names
    ``language="zh"`` passes it to its bm25 leg; a hybrid's ``right`` options still win."""
    chinese_project(pytester, "providers:\n  hy-zh: {right: {language: subword}}\n")
    # MiniLM's subword tokens miss a quarter of the Chinese messages, which bm25 warns about
    result = pytester.runpytest("--embedbench-json", "r.json", "-W", "ignore:bm25")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_zh.py::test_chinese*assert ndcg@10 = 0.3* >= 0.7"])
    settings = _settings(pytester)
    assert "tokenizer" not in settings["bm25"] and "tokenizer" not in settings["hybrid-h+bm25"]
    assert settings["hy-zh"]["legs"][1]["tokenizer"].startswith("subword:")


def test_a_hybrid_language_no_leg_takes_is_named(pytester: pytest.Pytester) -> None:
    chinese_project(pytester, "")
    pytester.makepyfile(
        test_zh=TEST.split("@pytest.mark")[0]
        + '@pytest.mark.embedbench(dataset="zh", models=[ModelSpec("hybrid:hashing:h+hashing:g",'
        ' language="zh")])\ndef test_two_dense(retrieval):\n    pass\n'
    )
    result = pytester.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*hybrid language='zh': neither leg ('hashing:h', 'hashing:g') takes a language*"]
    )
