"""The hosted rerankers: Cohere Rerank (``cohere:rerank-v3.5@50``), Voyage AI's rerankers
(``voyage:rerank-2.5@50``) and Bedrock's Rerank API (``bedrock:cohere.rerank-v3-5:0@50``,
``bedrock:amazon.rerank-v1:0@50``), each through its vendor's SDK.

Each sends its requests through the embedding provider of its vendor
(:mod:`.providers.cohere`, :mod:`.providers.voyage`, :mod:`.providers.bedrock`): the same
client construction (``base_url`` / ``endpoint_url``, region, timeout, the SDK's own retries
off), the same API key variables (``COHERE_API_KEY`` or ``CO_API_KEY``, ``VOYAGE_API_KEY``,
AWS's chain) and the same retries (:meth:`~.providers.base.EmbeddingProvider.with_retries`:
backoff with jitter on 408, 409, 425, 429, 5xx and lost connections, each attempt counted),
with the key scrubbed from every message. A family that is an embedding provider too reranks
with its rerank models only (a model id with ``rerank`` in it); ``cohere:embed-v4.0@50``
rescores with Cohere's vectors instead.

A query's candidates go in requests of at most ``batch_size`` documents (the API's limit, 1,000,
by default); the three APIs score each document on its own (a relevance in [0, 1], not a
softmax over the request), so the scores of two requests compare. Truncation is the API's:
``max_tokens_per_doc`` (Cohere, default the API's 4,096), ``truncation`` (Voyage, default true:
false makes an over-long request a 400), ``max_chars`` (Bedrock: a text is cut to it, at most
the API's 32,000 characters).

What is counted, and the cost per 1,000 queries at the list prices read on
:data:`RERANK_PRICES_AS_OF` (``price_per_1m_tokens`` or ``price_per_1k_units`` override them):
Voyage bills the tokens its answers count; Cohere bills the search units its answers count
(a query with up to 100 documents, a long document counting as several); Bedrock bills
queries of up to 100 documents, counted here by that rule (its answers count nothing).

Usage::

    reranker = CohereReranker("rerank-v3.5", base_url="http://127.0.0.1:8080")
    reranker.ensure_loaded()
    reranker.score("how do I reset my password", candidates)    # one relevance per document
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

from ..core.exceptions import ConfigError, ProviderError, RerankerError
from ..core.types import Document
from ..retrieval.rerank import Reranker, register_reranker
from .providers.base import EmbeddingProvider
from .providers.bedrock import BedrockProvider
from .providers.cohere import CohereProvider
from .providers.voyage import VoyageProvider

__all__ = [
    "RERANK_PRICES",
    "RERANK_PRICES_AS_OF",
    "BedrockReranker",
    "CohereReranker",
    "HostedReranker",
    "VoyageReranker",
]

#: when the rerank list prices below were read from the vendors' pricing pages
RERANK_PRICES_AS_OF = "2025-06-30"

#: (family, model id) -> (USD per 1M tokens, USD per 1,000 billed units)
RERANK_PRICES: dict[tuple[str, str], tuple[float | None, float | None]] = {
    ("cohere", "rerank-v3.5"): (None, 2.00),
    ("cohere", "rerank-english-v3.0"): (None, 2.00),
    ("cohere", "rerank-multilingual-v3.0"): (None, 2.00),
    ("voyage", "rerank-2.5"): (0.05, None),
    ("voyage", "rerank-2.5-lite"): (0.02, None),
    ("voyage", "rerank-2"): (0.05, None),
    ("voyage", "rerank-2-lite"): (0.02, None),
    ("bedrock", "amazon.rerank-v1:0"): (None, 1.00),
    ("bedrock", "cohere.rerank-v3-5:0"): (None, 2.00),
}

#: the fix for a request the API refused, by HTTP status
_FIXES = {
    400: "check the model id and the truncation options (the API's message says which)",
    401: "check the API key ({keys}, or api_key under providers.{family} in embedbench.yaml)",
    403: "check that the key (or the AWS identity) may use this model",
    404: "check the model id: the API does not know it (and base_url / endpoint_url)",
    413: "lower batch_size (documents per request) or truncate the documents harder",
    422: "check the request options (the API's message says which)",
}


class HostedReranker(Reranker):
    """A reranking API behind an embedding provider's client (see the module doc): a family
    defines :attr:`client_class`, :meth:`request` (one request: ``(index, score)`` pairs and
    what it was billed) and its limits."""

    free: ClassVar[bool] = False
    #: the embedding provider whose client, key and retries the requests go through
    client_class: ClassVar[type[EmbeddingProvider]]
    #: the API's limit of documents per request
    max_documents: ClassVar[int] = 1000
    #: the options of the client (besides the common ones: timeout, max_retries, backoff)
    client_options: ClassVar[frozenset[str]] = frozenset({"base_url", "api_key"})
    common: ClassVar[frozenset[str]] = frozenset(
        {"batch_size", "timeout", "max_retries", "backoff", "price_per_1m_tokens"}
        | {"price_per_1k_units"}
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        spec = f"{self.name}:{model}"
        if not model:
            raise ConfigError(f"reranker {self.name!r} needs a model: '{self.name}:MODEL@50'")
        unknown = sorted(set(self.options) - self.options_taken)
        if unknown:
            raise ConfigError(
                f"reranker {spec!r}: unknown option(s) {unknown}; it takes "
                f"{sorted(self.options_taken)}"
            )
        self.batch_size = _whole(self.options.get("batch_size", self.max_documents), spec)
        if not 1 <= self.batch_size <= self.max_documents:
            raise ConfigError(
                f"reranker {spec!r}: batch_size={self.batch_size} must be from 1 to the API's "
                f"limit of {self.max_documents} documents a request"
            )
        per_token, per_unit = RERANK_PRICES.get((self.name, _listed(model)), (None, None))
        if "price_per_1m_tokens" in self.options:
            per_token = float(self.options["price_per_1m_tokens"])
        if "price_per_1k_units" in self.options:
            per_unit = float(self.options["price_per_1k_units"])
        self.price_per_1m_tokens = per_token
        self.price_per_1k_units = per_unit
        self.client: Any = None
        self._last: tuple[int | None, float | None] = (None, None)

    @classmethod
    def handles(cls, model: str) -> bool:
        return "rerank" in model.lower()

    def load(self) -> None:
        taken = self.client_options | {"timeout", "max_retries", "backoff"}
        options = {k: v for k, v in self.options.items() if k in taken}
        self.client = self.client_class(self.model, **options)
        self.client.ensure_loaded()  # a missing key: MissingKeyError, the test is skipped

    def begin_run(self) -> None:
        """Count this run's requests from zero (a depth sweep's runs share the reranker)."""
        self.client.calls = {"requests": 0, "retries": 0, "failed": 0}
        self.info = self._info()

    def request(self, query: str, texts: list[str]) -> tuple[list[tuple[int, float]], Any]:
        """One request: ``(index in texts, score)`` pairs and what it was billed (tokens or
        units, None when the answer says nothing)."""
        raise NotImplementedError

    def score(self, query: str, documents: Sequence[Document]) -> Sequence[float]:
        texts = [d.embed_text for d in documents]
        scores = [math.nan] * len(texts)
        billed: float | None = 0.0
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            where = f"rerank request (documents {start}-{start + len(batch) - 1})"
            try:
                pairs, counted = self.client.with_retries(
                    partial(self.request, query, batch), where
                )
            except ProviderError as exc:
                raise RerankerError(self._refused(exc)) from None
            seen = set()
            for index, value in pairs:
                if not isinstance(index, int) or not 0 <= index < len(batch) or index in seen:
                    raise RerankerError(
                        f"reranker '{self.name}:{self.model}': the API answered index "
                        f"{index!r} for a request of {len(batch)} documents; the server does "
                        "not speak this API's format (check base_url / endpoint_url)"
                    )
                seen.add(index)
                scores[start + index] = float(value) if value is not None else math.nan
            if len(seen) < len(batch):
                raise RerankerError(
                    f"reranker '{self.name}:{self.model}' returned {len(seen)} scores for the "
                    f"{len(batch)} documents of one request; give batch_size (documents a "
                    "request) at most the API's limit, and check that its top_n / "
                    "numberOfResults covers the request"
                )
            billed = None if counted is None or billed is None else billed + float(counted)
        self._last = self._billed(billed, len(texts))
        self.info = self._info()
        return scores

    def _billed(self, billed: float | None, n: int) -> tuple[int | None, float | None]:
        """``(tokens, units)`` of one query's requests."""
        return (None if billed is None else int(billed)), None

    def count_tokens(self, query: str, documents: Sequence[Document]) -> int | None:
        return self._last[0]

    def count_units(self, query: str, documents: Sequence[Document]) -> float | None:
        return self._last[1]

    def _info(self) -> dict[str, Any]:
        calls = dict(self.client.calls) if self.client is not None else {}
        return {
            "requests": calls.get("requests", 0),
            "retries": calls.get("retries", 0),
            "failed": calls.get("failed", 0),
            "documents_per_request": self.batch_size,
            "prices_as_of": RERANK_PRICES_AS_OF,
            **self.truncation(),
        }

    def truncation(self) -> dict[str, Any]:
        """The truncation settings the requests carry (for the reports)."""
        return {}

    def _refused(self, exc: ProviderError) -> str:
        """The request's last error with the fix its status calls for."""
        status = getattr(self.client, "last_status", None)
        keys = " or ".join(self.client.key_env) or "AWS_ACCESS_KEY_ID / AWS_PROFILE"
        fix = _FIXES.get(status or 0, "")
        if not fix and (status is None or status == 429 or status >= 500):
            fix = (
                "the API kept failing: retry later, or raise max_retries / timeout under "
                f"providers.{self.name} in embedbench.yaml"
            )
        fix = fix.format(keys=keys, family=self.name) if fix else "see the API's message"
        return f"reranker '{self.name}:{self.model}': {exc}; {fix}"

    def describe(self) -> str:
        return f"{type(self).__name__}({self.model!r})"


def _whole(value: Any, spec: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"reranker {spec!r}: batch_size={value!r} must be a whole number")
    return value


def _listed(model: str) -> str:
    """The model id as the price table lists it (Bedrock's region prefixes dropped)."""
    key = model.lower().rsplit("/", 1)[-1]  # an ARN's last part is the model id
    head, _, tail = key.partition(".")
    return tail if head in {"us", "eu", "apac", "global"} and tail else key


@register_reranker
class CohereReranker(HostedReranker):
    """``cohere:rerank-v3.5`` through the v2 client's ``rerank`` (``POST /v2/rerank``)."""

    name = "cohere"
    client_class = CohereProvider
    unit = "search units"
    options_taken: ClassVar[frozenset[str]] = (
        HostedReranker.common | HostedReranker.client_options | {"max_tokens_per_doc"}
    )

    def request(self, query: str, texts: list[str]) -> tuple[list[tuple[int, float]], Any]:
        kwargs: dict[str, Any] = {}
        if self.options.get("max_tokens_per_doc") is not None:
            kwargs["max_tokens_per_doc"] = int(self.options["max_tokens_per_doc"])
        response = self.client._client.rerank(
            model=self.model, query=query, documents=texts, top_n=len(texts), **kwargs
        )
        billed = getattr(getattr(response, "meta", None), "billed_units", None)
        units = getattr(billed, "search_units", None)
        return [(r.index, r.relevance_score) for r in response.results], units

    def _billed(self, billed: float | None, n: int) -> tuple[int | None, float | None]:
        return None, billed

    def truncation(self) -> dict[str, Any]:
        return {"max_tokens_per_doc": self.options.get("max_tokens_per_doc", "API default")}


@register_reranker
class VoyageReranker(HostedReranker):
    """``voyage:rerank-2.5`` through ``voyageai.Client.rerank`` (``POST /v1/rerank``)."""

    name = "voyage"
    client_class = VoyageProvider
    options_taken: ClassVar[frozenset[str]] = (
        HostedReranker.common | HostedReranker.client_options | {"truncation"}
    )

    def request(self, query: str, texts: list[str]) -> tuple[list[tuple[int, float]], Any]:
        response = self.client._client.rerank(
            query,
            texts,
            model=self.model,
            top_k=None,
            truncation=bool(self.options.get("truncation", True)),
        )
        return [(r.index, r.relevance_score) for r in response.results], response.total_tokens

    def truncation(self) -> dict[str, Any]:
        return {"truncation": bool(self.options.get("truncation", True))}


#: Bedrock bills reranking by the query of up to this many documents
BEDROCK_DOCUMENTS_PER_QUERY = 100
#: the Rerank API's limit of characters in a query or a document
BEDROCK_MAX_CHARS = 32_000


class _BedrockRerankClient(BedrockProvider):
    """The Bedrock client of the embedding provider (session, credentials, region, timeouts,
    retries on throttling), for the agent runtime, where the Rerank API is."""

    service = "bedrock-agent-runtime"

    @classmethod
    def family_of(cls, model: str) -> str:
        return "rerank"


@register_reranker
class BedrockReranker(HostedReranker):
    """``bedrock:cohere.rerank-v3-5:0`` / ``bedrock:amazon.rerank-v1:0`` (or a model ARN)
    through boto3's ``bedrock-agent-runtime`` ``rerank`` (``POST /rerank``)."""

    name = "bedrock"
    client_class = _BedrockRerankClient
    unit = "queries"
    client_options: ClassVar[frozenset[str]] = frozenset({"region", "profile", "endpoint_url"})
    options_taken: ClassVar[frozenset[str]] = HostedReranker.common | client_options | {"max_chars"}

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.max_chars = _whole(
            self.options.get("max_chars", BEDROCK_MAX_CHARS), f"bedrock:{model}"
        )
        if not 1 <= self.max_chars <= BEDROCK_MAX_CHARS:
            raise ConfigError(
                f"reranker 'bedrock:{model}': max_chars={self.max_chars} must be from 1 to the "
                f"API's limit of {BEDROCK_MAX_CHARS}"
            )

    def model_arn(self) -> str:
        """The ARN the API takes: the model id's foundation-model ARN in the client's region."""
        if self.model.startswith("arn:"):
            return self.model
        region = self.client.info.get("region") or os.environ.get("AWS_REGION") or "us-east-1"
        return f"arn:aws:bedrock:{region}::foundation-model/{self.model}"

    def request(self, query: str, texts: list[str]) -> tuple[list[tuple[int, float]], Any]:
        def text(t: str) -> dict[str, Any]:
            return {"type": "TEXT", "textDocument": {"text": t[: self.max_chars] or " "}}

        response = self.client._client.rerank(
            queries=[{"type": "TEXT", "textQuery": {"text": query[: self.max_chars]}}],
            sources=[{"type": "INLINE", "inlineDocumentSource": text(t)} for t in texts],
            rerankingConfiguration={
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": len(texts),
                    "modelConfiguration": {"modelArn": self.model_arn()},
                },
            },
        )
        pairs = [(r["index"], r["relevanceScore"]) for r in response["results"]]
        return pairs, math.ceil(len(texts) / BEDROCK_DOCUMENTS_PER_QUERY)

    def _billed(self, billed: float | None, n: int) -> tuple[int | None, float | None]:
        return None, billed

    def truncation(self) -> dict[str, Any]:
        return {"max_chars": self.max_chars}
