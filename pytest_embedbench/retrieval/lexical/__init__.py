"""Lexical retrieval: ``tokenize`` (the ``Tokenizer`` protocol and bm25s's word tokeniser) and
``bm25`` (the bm25s index over a tokeniser's terms, and its retriever). A tokeniser for another
language is a module here that implements ``Tokenizer``."""
