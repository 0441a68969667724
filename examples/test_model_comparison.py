"""Ad-hoc paired comparisons inside one test with the ``embedbench`` fixture.

A paired bootstrap resamples the same queries for both models, so the interval of the
difference is honest even on a small eval set.
"""

from pytest_embedbench import ModelSpec

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"
HYBRID = ModelSpec(f"hybrid:{MINILM}+bm25", name="hybrid")


def test_dense_beats_lexical_on_paraphrased_questions(embedbench):
    dense = embedbench.evaluate(MINILM, "support")
    lexical = embedbench.evaluate("bm25", "support")
    diff = embedbench.compare(dense, lexical, "ndcg@10", test="randomization")
    # the interval of dense - bm25 lies above zero and the randomization test agrees
    assert diff.low > 0, diff
    assert diff.p_value < 0.05, diff


def test_fusion_is_not_worse_than_dense(embedbench):
    dense = embedbench.evaluate(MINILM, "support")
    fused = embedbench.evaluate(HYBRID, "support")
    diff = fused.compare(dense, "ndcg@10")
    # not significantly worse: the interval reaches above a small tolerance
    assert diff.high > -0.02, diff
