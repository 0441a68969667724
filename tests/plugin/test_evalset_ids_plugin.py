"""Eval-set query ids through real pytest runs: editing the eval set keeps the baseline paired."""

from __future__ import annotations

import json

import pytest

from .conftest import CONFTEST

WORDS = [f"{a}{b}" for a in ("zor", "mip", "tal", "ven") for b in "abcde"]


def write_evalset(pytester: pytest.Pytester, rows: list[dict]) -> None:
    path = pytester.path / "data" / "support" / "evalset.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.fixture
def support(pytester: pytest.Pytester) -> list[dict]:
    """20 documents, one rare word each, and an eval set without query ids.

    Query i asks for word i; the even ones judge document i (bm25 finds it first), the odd ones
    the next document (which bm25 ranks low), so per-query scores alternate and any re-pairing
    of queries shows as a non-zero difference.
    """
    docs = pytester.path / "data" / "support" / "docs"
    docs.mkdir(parents=True)
    for i, word in enumerate(WORDS):
        (docs / f"d{i:02d}.txt").write_text(f"notes about {word} and the {word} procedure\n")
    rows = [
        {
            "query": f"where is {word} explained",
            "relevant_doc_ids": [f"d{i if i % 2 == 0 else (i + 1) % len(WORDS):02d}.txt"],
        }
        for i, word in enumerate(WORDS)
    ]
    write_evalset(pytester, rows)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", embedbench="datasets:\n  support: {path: data/support}\n")
    pytester.makeini("[pytest]\nembedbench_cache_dir = .cache-embedbench\n")
    pytester.makepyfile(
        test_gate="""
        import pytest

        @pytest.mark.embedbench(dataset="support", models=["bm25"])
        def test_search(retrieval):
            pass
        """
    )
    return rows


def test_a_query_inserted_at_the_top_keeps_the_unchanged_model_at_zero(
    pytester: pytest.Pytester, support: list[dict]
) -> None:
    pytester.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    entry = json.loads((pytester.path / ".embedbench" / "baseline.json").read_text())["entries"][
        "test_gate.py::test_search[bm25]"
    ]
    recorded = entry["per_query"]["ndcg@10"]
    assert len(recorded) == 20 and all(qid.startswith("q-") for qid in recorded)
    assert len(set(recorded.values())) > 1  # alternating scores: a shift could not hide

    new = {"query": "where is quaz explained", "relevant_doc_ids": ["d01.txt"]}
    write_evalset(pytester, [new, *support])
    result = pytester.runpytest("--embedbench-json", "report.json")
    result.assert_outcomes(passed=1)
    outcome = json.loads((pytester.path / "report.json").read_text())["tests"][0]["baseline"]
    delta = outcome["deltas"]["ndcg@10"]
    assert delta["shared_queries"] == 20
    assert (delta["difference"], delta["low"], delta["high"]) == (0.0, 0.0, 0.0)
    assert delta["baseline"] == delta["current"]
    result.stdout.fnmatch_lines(["bm25 *+0.0000 ?+0.000, +0.000?*passed"])


def test_a_split_on_an_eval_set_fails_naming_it(
    pytester: pytest.Pytester, support: list[dict]
) -> None:
    pytester.makepyfile(
        test_gate="""
        import pytest

        @pytest.mark.embedbench(dataset="support", models=["bm25"], split="dev")
        def test_search(retrieval):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*evalset.jsonl: split='dev' does not apply to an eval set, which has one split*"]
    )


def test_a_typo_of_a_key_fails_collection_naming_file_line_and_key(
    pytester: pytest.Pytester, support: list[dict]
) -> None:
    rows = [dict(row) for row in support]
    rows[2]["relevent_doc_ids"] = rows[2].pop("relevant_doc_ids")
    write_evalset(pytester, rows)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*evalset.jsonl line 3: unknown key 'relevent_doc_ids'; did you mean 'relevant_doc_ids'?*"]
    )
