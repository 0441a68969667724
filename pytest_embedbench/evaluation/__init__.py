"""Evaluation: dataset + model (+ index) -> RetrievalResult, and the numbers on it.

evaluate (Evaluator, the one pipeline), result (RetrievalResult), record (TestRecord: what one
test produced), metrics (trec_eval-exact per-query metrics), stats (bootstrap, paired tests),
measure (latency, memory, machine), cutoffs (noise-floor and conformal cut-offs), indexed (one
model through one vector index), workloads (stress points and StressedResult).
"""
