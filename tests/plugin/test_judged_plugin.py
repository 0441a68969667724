"""judged@k and the condensed-list metrics through pytest: on a dataset whose qrels lost a
seeded half of each query's judgments, judged@10 in the JSON report is a direct count of the
judged documents among the retrieved ones, condensed nDCG@10 is trec_eval's ``-J`` on those
rankings, and the terminal table, the notices, the thresholds and the baseline gate read it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .conftest import BENCH

pytrec_eval = pytest.importorskip("pytrec_eval")


def test_judged_at_10_on_thinned_qrels_is_a_direct_count(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    pytester.makepyfile(
        test_thin=BENCH.format(
            extra="",
            body="assert retrieval.judged(10) == retrieval.metric('judged@10') < 0.9",
        )
    )
    result = pytester.runpytest("--embedbench-json=r.json")
    result.assert_outcomes(passed=1)
    # the table shows judged@10 beside the metrics, and the notice says what it means
    result.stdout.fnmatch_lines(["*nDCG@10*judged@10*", "*bm25*0.*"])
    result.stdout.fnmatch_lines(
        ["*dataset 'thin': judged@10 is below 0.9 (bm25 0.*)*may understate unjudged but relevant*"]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    found = report["tests"][0]["result"]
    retrieved = found["retrieved"]  # each query's top 10, as the run ranked them
    direct = {
        qid: sum(d in thinned[qid] for d in retrieved[qid][:10]) / min(10, len(retrieved[qid]))
        for qid in thinned
    }
    assert found["per_query"]["judged@10"] == direct
    assert found["metrics"]["judged@10"]["value"] == pytest.approx(np.mean(list(direct.values())))
    assert 0 < found["metrics"]["judged@10"]["value"] < 0.9  # the thinning left holes
    # condensed nDCG@10: trec_eval -J on the same rankings (scores that keep their order)
    run = {qid: {d: float(10 - r) for r, d in enumerate(ids)} for qid, ids in retrieved.items()}
    trec = pytrec_eval.RelevanceEvaluator(thinned, {"ndcg_cut.10"}, judged_docs_only_flag=True)
    expected = {qid: v["ndcg_cut_10"] for qid, v in trec.evaluate(run).items()}
    got = found["per_query"]["condensed_ndcg@10"]
    assert got == pytest.approx({qid: expected.get(qid, 0.0) for qid in thinned}, abs=1e-12)
    assert found["metrics"]["condensed_ndcg@10"]["value"] >= found["metrics"]["ndcg@10"]["value"]
    # the notice is in the report's notices too, for every writer
    assert any("judged@10 is below 0.9" in n for n in report["summary"]["judged_notes"])


def test_judged_is_a_threshold_and_a_gate_key(
    pytester: pytest.Pytester, thinned: dict[str, dict[str, int]]
) -> None:
    pytester.makepyfile(
        test_thin=BENCH.format(extra=', thresholds={"judged@10": ">= 0.95"}', body="pass")
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*judged@10 = 0.* is not >= 0.95*"])
    # gated: recorded, then compared with itself
    pytester.makepyfile(test_thin=BENCH.format(extra="", body="pass"))
    pytester.makefile(
        ".yaml",
        embedbench="datasets:\n  thin: {path: data/thin}\ngate: {metrics: [judged@10]}\n",
    )
    pytester.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    entry = next(
        iter(json.loads(Path(".embedbench/baseline.json").read_text())["entries"].values())
    )
    assert set(entry["per_query"]["judged@10"]) == set(thinned)
    result = pytester.runpytest("--embedbench-json=r.json")
    result.assert_outcomes(passed=1)
    gate = json.loads(Path("r.json").read_text())["tests"][0]["baseline"]
    assert "judged@10" in json.dumps(gate)
