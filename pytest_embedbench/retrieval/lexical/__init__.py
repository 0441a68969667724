"""retrieval.lexical."""
