"""Models: providers/ (spec, registry, retry, one module per family; each builds a retriever
from the retrieval floor) and search (Searcher, a built index for pytest-benchmark)."""
