"""Issue 42 items 4 and 7 as a user meets them: embedbench.yaml read strictly (keys given
twice, tabs), bad values named by file and key, bad marker and option values refused, and
``str(retrieval.index)`` the spec. Real pytest runs over the tiny project."""

from __future__ import annotations

import pytest

from .conftest import bench_module, write_config

BASIC = bench_module('dataset="tiny"')


def _collection_error(pytester: pytest.Pytester, *args: str, lines: list[str]) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(lines)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def _usage_error(pytester: pytest.Pytester, *args: str, line: str) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([line])


def test_a_key_given_twice_names_both_lines(project: pytest.Pytester) -> None:
    write_config(project, "models: [hashing:h]\nk: [1, 10]\nmodels: [bm25]\n")
    project.makepyfile(test_basic=BASIC)
    _collection_error(
        project, lines=["*embedbench.yaml line 5: key 'models' given twice (first at line 3)*"]
    )


def test_a_tab_names_its_line(project: pytest.Pytester) -> None:
    write_config(project, "models:\n\t- bm25\n")
    project.makepyfile(test_basic=BASIC)
    _collection_error(
        project,
        lines=["*embedbench.yaml line 4: a tab indents this line; YAML allows spaces only*"],
    )


def test_an_alias_bomb_in_k_is_refused(project: pytest.Pytester) -> None:
    levels = ["l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"] + [
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)
    ]
    write_config(project, "\n".join(levels) + "\nk: *l8\n")
    project.makepyfile(test_basic=BASIC)
    _collection_error(project, lines=["*embedbench.yaml line *: the alias *an alias bomb?*"])


def test_a_negative_subset_names_the_key(project: pytest.Pytester) -> None:
    project.makefile(
        ".yaml",
        embedbench="datasets:\n  tiny: {path: data/tiny, subset: {n_queries: -1}}\n"
        "models: [bm25]\n",
    )
    project.makepyfile(test_basic=BASIC)
    _collection_error(
        project,
        lines=["*embedbench.yaml: datasets.tiny.subset.n_queries: -1 must be an integer >= 1*"],
    )


def test_a_huge_k_is_refused_and_one_past_the_corpus_runs(project: pytest.Pytester) -> None:
    write_config(project, "models: [hashing:h]\nk: [1, 1000000000000]\n")
    project.makepyfile(test_basic=BASIC)
    _collection_error(
        project, lines=["*embedbench.yaml: k: 1000000000000 is deeper than the 10,000 a run*"]
    )
    write_config(project, "models: [hashing:h]\nk: [1, 10000]\n")  # the tiny corpus has 6
    project.makepyfile(
        test_basic=bench_module('dataset="tiny"', "assert retrieval.recall(10000) == 1")
    )
    project.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (
            "hashing: {batch_size: abc}",
            "*embedbench.yaml: providers.hashing.batch_size: 'abc' is not a batch_size provider "
            "'hashing' can use*give batch_size an integer, e.g. batch_size: 64",
        ),
        (
            "bm25: {k1: [1]}",
            "*embedbench.yaml: providers.bm25.k1: [[]1[]] is not a k1 provider 'bm25' can use*"
            "give k1 a number*",
        ),
    ],
)
def test_a_provider_option_of_the_wrong_type_names_the_key(
    project: pytest.Pytester, options: str, line: str
) -> None:
    write_config(project, f"models: [hashing:h, bm25]\nproviders:\n  {options}\n")
    project.makepyfile(test_basic=BASIC)
    _collection_error(project, lines=[line])


def test_gate_metrics_as_one_string_asks_for_a_list(project: pytest.Pytester) -> None:
    write_config(project, 'models: [bm25]\ngate:\n  metrics: "ndcg@10, recall@100"\n')
    project.makepyfile(test_basic=BASIC)
    _collection_error(
        project,
        lines=[
            "*embedbench.yaml: gate.metrics: 'ndcg@10, recall@100' is one string, not a list of "
            "metrics; write a list: metrics: [[]ndcg@10, recall@100[]]"
        ],
    )


def test_models_not_a_list_in_the_marker(project: pytest.Pytester) -> None:
    project.makepyfile(test_m=bench_module('models=5, dataset="tiny"'))
    _collection_error(
        project,
        lines=[
            "*test_m.py::test_search: test_m.py: @pytest.mark.embedbench(models=5): give a spec*"
        ],
    )


def test_an_index_parameter_of_the_wrong_type(project: pytest.Pytester) -> None:
    project.makepyfile(test_basic=BASIC)
    _usage_error(
        project,
        "--embedbench-indexes",
        "faiss:hnsw(M=abc)",
        line="*--embedbench-indexes*'faiss:hnsw(M=abc)': M='abc' must be a whole number >= 1*",
    )
    project.makepyfile(test_basic=bench_module('dataset="tiny", indexes=["faiss:ivf(nlist=x)"]'))
    _collection_error(
        project,
        lines=["*@pytest.mark.embedbench indexes*nlist='x' must be a whole number >= 1*"],
    )


def test_an_empty_report_path_is_refused(project: pytest.Pytester) -> None:
    project.makepyfile(test_basic=BASIC)
    _usage_error(
        project,
        "--embedbench-json=",
        line="*--embedbench-json '': an empty path; give a file or folder*or leave the option out",
    )


def test_str_of_the_index_is_its_spec(project: pytest.Pytester) -> None:
    pytest.importorskip("faiss")
    write_config(project, "models: [hashing:h]\n")
    body = (
        "print('INDEX', str(retrieval.index), '|', 'latency_ms' in repr(retrieval.index), "
        "'array(' in repr(retrieval.index))"
    )
    project.makepyfile(
        test_i=bench_module('dataset="tiny", indexes=["faiss:ivf(nlist=2,nprobe=1)"]', body)
    )
    result = project.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*INDEX faiss:ivf(nlist=2,nprobe=1) | False False"])
