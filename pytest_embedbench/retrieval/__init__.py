"""retrieval."""
