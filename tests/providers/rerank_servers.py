"""The rerank routes of three APIs, on the loopback servers of :mod:`.servers`: Cohere's
``POST /v2/rerank``, Voyage AI's ``POST /v1/rerank`` and the Bedrock agent runtime's
``POST /rerank``, so the hosted rerankers drive the real cohere, voyageai and boto3 clients.

A rerank request goes the way of an embedding request (recorded, counted in ``embed_calls``,
one scripted :class:`~.servers.Behaviour` consumed: ``"429"``, ``"503"``, ``"nan"`` makes the
first document's score NaN, ``"fewer"`` leaves the last document out of the answer). The score
of a document is :func:`relevance`: the share of the query's distinct words it holds, a value
of few steps, so ties are common and the tie rule decides the order.

Usage::

    with CohereRerankServer() as server:
        client = cohere.ClientV2(base_url=server.url, api_key="co-test")
        client.rerank(model="rerank-v3.5", query="reset password", documents=["..."])
"""

from __future__ import annotations

import math
import re
from typing import Any

from .servers import (
    BedrockServer,
    CohereServer,
    RecordedRequest,
    VoyageServer,
    _Embedding,
    _is_int,
    _is_str_list,
    _Reply,
    words,
)

__all__ = ["BedrockRerankServer", "CohereRerankServer", "VoyageRerankServer", "relevance"]


def relevance(query: str, document: str) -> float:
    """The score every fake rerank route gives: distinct query words in the document over
    distinct query words (0 for a query of no words)."""
    asked = set(words(query))
    return len(asked & set(words(document))) / len(asked) if asked else 0.0


def _ranked(rows: list[list[float]]) -> list[tuple[int, float]]:
    """``(index, score)`` best first, as the APIs answer (a NaN last)."""
    pairs = [(i, row[0]) for i, row in enumerate(rows)]
    return sorted(pairs, key=lambda p: (-(p[1] if not math.isnan(p[1]) else -1.0), p[0]))


class _RerankMixin:
    """What the three rerank routes share: the route, the requests it got."""

    rerank_route = ""
    requests: list[RecordedRequest]

    def _is_embed_route(self, method: str, path: str) -> bool:
        """The rerank route goes the way of an embedding request (behaviours, recording)."""
        route = method == "POST" and path.rstrip("/") == self.rerank_route
        return route or super()._is_embed_route(method, path)  # type: ignore[misc]

    def _embed(self, request: RecordedRequest, path: str) -> _Embedding | _Reply:
        """The rerank route answered by :meth:`_rerank`; every other one by the server's own."""
        if path.rstrip("/") != self.rerank_route:
            return super()._embed(request, path)  # type: ignore[misc]
        return self._rerank(request.body)

    def _rerank(self, body: Any) -> _Embedding | _Reply:
        """The answer to a rerank request of this ``body`` (its scores, or an error)."""
        raise NotImplementedError

    @property
    def rerank_requests(self) -> list[RecordedRequest]:
        """The requests that went to the rerank route (failed ones included)."""
        return [r for r in self.requests if r.path.split("?")[0].rstrip("/") == self.rerank_route]


class CohereRerankServer(_RerankMixin, CohereServer):
    """:class:`~.servers.CohereServer` plus ``POST /v2/rerank``: ``model``, ``query``,
    ``documents`` (1 to 1,000 strings), ``top_n`` and ``max_tokens_per_doc`` checked; the
    answer's ``meta.billed_units.search_units`` counts a unit per 100 documents."""

    rerank_route = "/v2/rerank"
    default_models = (*CohereServer.default_models, "rerank-v3.5", "rerank-english-v3.0")

    def _rerank(self, body: Any) -> _Embedding | _Reply:
        model = self._named_model(body)
        if isinstance(model, _Reply):
            return model
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not query:
            return self._error(400, "invalid request: query must be a non-empty string.")
        if not _is_str_list(documents) or not 1 <= len(documents) <= 1000:
            return self._error(400, "invalid request: documents must hold 1 to 1000 strings.")
        top_n = body.get("top_n", len(documents))
        if not _is_int(top_n) or top_n < 1:
            return self._error(400, "invalid request: top_n must be a positive integer.")
        limit = body.get("max_tokens_per_doc")
        if limit is not None and (not _is_int(limit) or limit < 1):
            return self._error(400, "invalid request: max_tokens_per_doc must be positive.")
        texts = [" ".join(words(d)[:limit]) if limit else d for d in documents]
        units = math.ceil(len(texts) / 100)

        def render(rows: list[list[float]]) -> dict[str, Any]:
            results = [{"index": i, "relevance_score": s} for i, s in _ranked(rows)[:top_n]]
            meta = {"api_version": {"version": "2"}, "billed_units": {"search_units": units}}
            return {"id": "rerank-1", "results": results, "meta": meta}

        return _Embedding([[relevance(query, t)] for t in texts], render)


class VoyageRerankServer(_RerankMixin, VoyageServer):
    """:class:`~.servers.VoyageServer` plus ``POST /v1/rerank``: ``model``, ``query``,
    ``documents`` (1 to 1,000 strings), ``top_k`` and ``truncation`` checked (false with a
    document over ``context_words`` words is a 400); ``usage.total_tokens`` counts the query's
    words once per document plus the documents' words."""

    rerank_route = "/v1/rerank"
    default_models = (*VoyageServer.default_models, "rerank-2.5", "rerank-2", "rerank-2-lite")
    context_words = 40

    def _rerank(self, body: Any) -> _Embedding | _Reply:
        if not isinstance(body, dict):
            return self._error(400, "Request body must be a JSON object.")
        model = body.get("model")
        if model not in self.models:
            return self._error(400, f"Model {model} is not supported.")
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not _is_str_list(documents):
            return self._error(400, "query must be a string and documents a list of strings.")
        if not 1 <= len(documents) <= 1000:
            return self._error(400, "documents must hold 1 to 1000 strings.")
        top_k = body.get("top_k")
        if top_k is not None and (not _is_int(top_k) or top_k < 1):
            return self._error(400, "top_k must be a positive integer or null.")
        truncation = body.get("truncation", True)
        if not isinstance(truncation, bool):
            return self._error(400, "truncation must be a boolean.")
        long = [i for i, d in enumerate(documents) if len(words(d)) > self.context_words]
        if long and not truncation:
            return self._error(
                400,
                f"Document {long[0]} exceeds the context length of {self.context_words} tokens "
                "and truncation is false.",
            )
        texts = [" ".join(words(d)[: self.context_words]) for d in documents]
        tokens = len(words(query)) * len(texts) + sum(len(words(t)) for t in texts)

        def render(rows: list[list[float]]) -> dict[str, Any]:
            ranked = _ranked(rows)[: top_k or len(rows)]
            data = [{"index": i, "relevance_score": s} for i, s in ranked]
            return {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"total_tokens": tokens},
            }

        return _Embedding([[relevance(query, t)] for t in texts], render)


_MODEL_ARN = re.compile(r"^arn:aws:bedrock:[a-z0-9-]+::foundation-model/(.+)$")


class BedrockRerankServer(_RerankMixin, BedrockServer):
    """:class:`~.servers.BedrockServer` plus the agent runtime's ``POST /rerank``: one text
    query, 1 to 1,000 inline text sources, a ``BEDROCK_RERANKING_MODEL`` configuration whose
    ``modelArn`` names a model it serves, ``numberOfResults``; answered with ``results``
    (``index``, ``relevanceScore``)."""

    rerank_route = "/rerank"
    default_models = (*BedrockServer.default_models, "cohere.rerank-v3-5:0", "amazon.rerank-v1:0")

    def _rerank(self, body: Any) -> _Embedding | _Reply:
        if not isinstance(body, dict):
            return self._error(400, "Malformed input request, please reformat your input.")
        queries, sources = body.get("queries"), body.get("sources")
        if not isinstance(queries, list) or len(queries) != 1:
            return self._error(400, "queries must hold exactly one query.")
        query = (
            (queries[0].get("textQuery") or {}).get("text")
            if isinstance(queries[0], dict)
            else None
        )
        if not isinstance(query, str) or not 1 <= len(query) <= 32000:
            return self._error(400, "textQuery.text must hold 1 to 32000 characters.")
        if not isinstance(sources, list) or not 1 <= len(sources) <= 1000:
            return self._error(400, "sources must hold 1 to 1000 documents.")
        texts = []
        for source in sources:
            inline = source.get("inlineDocumentSource") if isinstance(source, dict) else None
            text = ((inline or {}).get("textDocument") or {}).get("text")
            if source.get("type") != "INLINE" or not isinstance(text, str):
                return self._error(400, "each source must be an INLINE text document.")
            if not 1 <= len(text) <= 32000:
                return self._error(400, "textDocument.text must hold 1 to 32000 characters.")
            texts.append(text)
        config = (body.get("rerankingConfiguration") or {}).get("bedrockRerankingConfiguration")
        arn = ((config or {}).get("modelConfiguration") or {}).get("modelArn", "")
        match = _MODEL_ARN.match(arn)
        if match is None or match.group(1) not in self.models:
            return self._error(404, f"The model {arn} does not exist or is not a reranker.")
        top = (config or {}).get("numberOfResults", len(texts))

        def render(rows: list[list[float]]) -> dict[str, Any]:
            ranked = _ranked(rows)[:top]
            return {"results": [{"index": i, "relevanceScore": s} for i, s in ranked]}

        return _Embedding([[relevance(query, t)] for t in texts], render, self._ok_headers(0))
