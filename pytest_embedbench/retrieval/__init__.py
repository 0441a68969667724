"""Retrieval: the search machinery, which knows no provider (the providers, a floor up, build it).

Its rooms:

- ``base``: the :class:`~.base.Retriever` every search answers through, and ``BuildStats``;
- ``dense``: embedding through the cache, then exact or indexed search;
- ``exact``: top-k by FAISS or NumPy with the tie rule, the sharded index;
- ``indexes/``: one module per vector-index engine, its spec and registry;
- ``lexical/``: ``tokenize`` (the one ``Tokenizer`` protocol that documents and queries alike go
  through, and bm25s's word tokeniser, its one implementation today; per-language tokenisers go
  beside it) and ``bm25`` (the bm25s index, keyed by its tokeniser, and its retriever);
- ``fusion``: reciprocal rank fusion and the hybrid retriever that fuses its legs;
- ``pooling``: document scores from chunk scores (max-pooling, the deeper search);
- ``rerank/``: rerankers, which rescore a first stage's top ``depth`` (the registry, specs, the
  stage, the CrossEncoder and the bi-encoder rescorer).
"""
