"""Bad input files seen through a pytest run: a qrels grade that is no grade (issue 42)."""

from __future__ import annotations

import pytest

from .conftest import bench_module


@pytest.mark.parametrize("grade", ["1x", "1e20"])
def test_a_bad_first_grade_fails_the_run_naming_file_and_line(
    project: pytest.Pytester, grade: str
) -> None:
    qrels = project.path / "data" / "tiny" / "qrels" / "test.tsv"
    # no header: the first line is a judgement, and its grade is wrong
    qrels.write_text(f"q1\td1\t{grade}\nq2\td3\t1\nq3\td2\t2\n")
    project.makepyfile(bench_module('models=["bm25"], dataset="tiny"', "assert retrieval.ndcg10"))
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"*DatasetError: *{qrels} line 1: * '{grade}' is *grades must be integers*"]
    )
