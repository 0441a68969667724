"""Retrieval: the search machinery, which knows no provider.

base (Retriever, BuildStats), dense (embedding through the cache, exact or indexed search),
exact (top-k by FAISS or NumPy with the tie rule, the sharded index), indexes/ (one module per
vector-index engine, its spec and registry), lexical/ (tokenisers and bm25), pooling (document
scores from chunk scores). Rerankers, which rescore a first stage, get a room of their own here.
"""
