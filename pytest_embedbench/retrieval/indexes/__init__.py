"""The index axis: one model's corpus vectors indexed many ways, each measured against exact
search on the same query vectors. One module per engine, beside the spec and the registry:

- :mod:`.spec`: ``engine[:kind][(name=value, ...)]`` parsed and checked (did-you-mean), and the
  axis as a marker, embedbench.yaml or ``--embedbench-indexes`` gives it;
- :mod:`.registry`: :class:`VectorIndex`, :func:`register_index`, the
  ``pytest_embedbench.indexes`` entry point group (a new engine: one module and its
  registration, see there);
- the engines: :mod:`.exact`, :mod:`.faiss`, :mod:`.lancedb`, :mod:`.chroma`, :mod:`.pgvector`
  (a PostgreSQL of its own: :mod:`.postgres`), :mod:`.qdrant`;
- :mod:`.measure`: neighbour recall, the index's own latency, build time and size
  (:class:`IndexRun`).

The vectors come from the embedding cache through the model's dense retriever
(:class:`~pytest_embedbench.retrieval.dense.DenseRetriever`): a corpus is embedded once and
indexed once per spec; the retriever given ``index=`` answers the run's queries through it.
"""

from __future__ import annotations

# the engines register themselves on import; the spec parser finds them in the registry
from .chroma import ChromaIndex
from .exact import ExactVectorIndex
from .faiss import FaissIndex
from .lancedb import LanceIndex
from .measure import (
    IndexRun,
    LoadLevel,
    measure_calls,
    measure_index,
    measure_load,
    neighbour_recall,
)
from .pgvector import PgvectorIndex
from .qdrant import QdrantIndex
from .registry import (
    INDEX_ENTRY_POINT_GROUP,
    INDEXES,
    VectorIndex,
    check_engine_settings,
    close_engines,
    create_index,
    index_class,
    register_index,
)
from .spec import EXACT, IndexSpec, named_indexes, parse_indexes, parse_indexes_option

__all__ = [
    "EXACT",
    "INDEXES",
    "INDEX_ENTRY_POINT_GROUP",
    "ChromaIndex",
    "ExactVectorIndex",
    "FaissIndex",
    "IndexRun",
    "IndexSpec",
    "LanceIndex",
    "LoadLevel",
    "PgvectorIndex",
    "QdrantIndex",
    "VectorIndex",
    "check_engine_settings",
    "close_engines",
    "create_index",
    "index_class",
    "measure_calls",
    "measure_index",
    "measure_load",
    "named_indexes",
    "neighbour_recall",
    "parse_indexes",
    "parse_indexes_option",
    "register_index",
]
