"""Rerankers: the second stage, which rescores a first stage's top ``depth`` (issue 43).

Its rooms:

- ``base``: the :class:`~.base.Reranker` every reranker is (it scores one query's candidates);
- ``registry``: family name -> class, with the ``pytest_embedbench.rerankers`` entry points;
- ``spec``: ``[name=]family[:model][@depth[,depth...]]`` and the reranking axis;
- ``run``: the stage itself (score, check, sort by the tie rule, time, count tokens);
- ``crossencoder``: ``hf-ce:``, a sentence-transformers CrossEncoder;
- ``embedding``: the bi-encoder rescorer over any embedding provider's vectors (the provider is
  built a floor up: :mod:`pytest_embedbench.evaluation.reranked`).
"""

from __future__ import annotations

from .base import Reranker
from .embedding import EmbeddingRescorer
from .registry import (
    RERANKER_ENTRY_POINT_GROUP,
    RERANKERS,
    register_reranker,
    reranker_class,
    reranker_names,
)
from .run import RerankRun, rerank, sort_scored
from .spec import (
    DEFAULT_DEPTH,
    NONE,
    RerankerSpec,
    parse_rerankers,
    parse_rerankers_option,
)

__all__ = [
    "DEFAULT_DEPTH",
    "NONE",
    "RERANKERS",
    "RERANKER_ENTRY_POINT_GROUP",
    "EmbeddingRescorer",
    "RerankRun",
    "Reranker",
    "RerankerSpec",
    "parse_rerankers",
    "parse_rerankers_option",
    "register_reranker",
    "rerank",
    "reranker_class",
    "reranker_names",
    "sort_scored",
]
