"""Lexical retrieval: tokenisers and the bm25 index."""
