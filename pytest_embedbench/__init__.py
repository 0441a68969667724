"""pytest-embedbench: retrieval benchmarks of text-embedding models as pytest test cases.

Usage without pytest::

    from pytest_embedbench import evaluate, load_dataset

    ds = load_dataset("../shared/data/scifact", split="test")
    result = evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", ds)
    assert result.ndcg10 >= 0.6
"""

from __future__ import annotations

from .cache.store import EmbeddingCache
from .core.exceptions import (
    BaselineError,
    CacheError,
    ConfigError,
    DatasetError,
    EmbedBenchError,
    EmbedBenchWarning,
    MetricError,
    MissingExtraError,
    MissingKeyError,
    ProviderError,
    StressUnavailableError,
    UnknownProviderError,
)
from .data.chunking import Chunk, ChunkingSettings, chunk_documents
from .data.datasets import (
    Document,
    EvalSet,
    Query,
    RetrievalDataset,
    load_beir,
    load_dataset,
    load_evalset,
)
from .data.ingest import IngestWarning, load_documents
from .data.stress.needle import needle_dataset
from .data.stress.noise import noisy_dataset, perturb
from .evaluation.cutoffs import Cutoffs
from .evaluation.evaluate import DEFAULT_K, Evaluator, RetrievalResult, evaluate
from .evaluation.measure import LatencyStats, Timings
from .evaluation.metrics import METRICS, QrelArrays, score_arrays, score_run
from .evaluation.stats import (
    Comparison,
    Estimate,
    bootstrap,
    compare_scores,
    holm,
    paired_bootstrap,
)
from .evaluation.workloads import StressedResult, Workload, evaluate_workload, parse_workloads

# the rerankers of the floors above evaluation register here, so any use of the package
# knows them (``llm:`` needs the chat client of generate/, which evaluation/ cannot import)
from .generate.rerank import LLMReranker
from .models.providers import (
    PROVIDERS,
    EmbeddingProvider,
    ModelSpec,
    Provider,
    RankingProvider,
    create_provider,
    register_provider,
)
from .models.search import Searcher
from .retrieval.exact import ExactIndex

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "ChunkingSettings",
    "IngestWarning",
    "LLMReranker",
    "chunk_documents",
    "load_documents",
    "BaselineError",
    "CacheError",
    "Comparison",
    "ConfigError",
    "Cutoffs",
    "DEFAULT_K",
    "DatasetError",
    "Document",
    "EmbedBenchError",
    "EmbedBenchWarning",
    "EmbeddingCache",
    "EmbeddingProvider",
    "Estimate",
    "EvalSet",
    "Evaluator",
    "ExactIndex",
    "LatencyStats",
    "METRICS",
    "MetricError",
    "MissingExtraError",
    "MissingKeyError",
    "ModelSpec",
    "PROVIDERS",
    "Provider",
    "ProviderError",
    "QrelArrays",
    "Query",
    "RankingProvider",
    "RetrievalDataset",
    "RetrievalResult",
    "Searcher",
    "StressUnavailableError",
    "StressedResult",
    "Timings",
    "UnknownProviderError",
    "Workload",
    "bootstrap",
    "compare_scores",
    "create_provider",
    "evaluate",
    "evaluate_workload",
    "holm",
    "load_beir",
    "load_dataset",
    "load_evalset",
    "needle_dataset",
    "noisy_dataset",
    "paired_bootstrap",
    "parse_workloads",
    "perturb",
    "register_provider",
    "score_arrays",
    "score_run",
]
