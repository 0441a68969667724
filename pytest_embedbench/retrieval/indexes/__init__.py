"""retrieval.indexes."""
