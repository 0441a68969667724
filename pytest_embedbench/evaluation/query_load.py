"""A provider's query embedding under concurrent load (``--embedbench-concurrency``, issue 45):
the queries of a dataset sent one text a request to the provider's server from that many
threads, as a search service embeds its users' queries.

Usage::

    levels = measure_query_load(provider, [q.text for q in ds.queries], (1, 4, 16), seed=0)
    levels[-1].qps, levels[-1].p99_ms           # None: the provider has no loopback server

Only a server on this machine is loaded (:func:`loopback_server`: ``base_url`` or ``host`` on
127.0.0.1, ::1 or localhost): a hosted API is never sent a load test (it bills and rate-limits
each request), and an in-process model (``hf:``) has no server to load. Each request is one
query text with the provider's query prefix, sent by the provider's own client
(``embed_batch``: the SDK's HTTP, no cache, no retry, so a refusal under load is the error it
is); its requests are not added to the provider's request counts, which say what the run's
embedding cost.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from ..core.exceptions import ProviderError
from ..core.redaction import redact
from ..retrieval.indexes import LoadLevel, measure_calls
from ..retrieval.indexes.measure import LOAD_REQUESTS, LOAD_SECONDS

__all__ = ["loopback_server", "measure_query_load"]

#: where a loaded provider says its server is (``info`` after load): openai, cohere and voyage's
#: ``base_url``, ollama's ``host``, bedrock's ``endpoint_url``
_SERVER_KEYS = ("base_url", "host", "endpoint_url")


def loopback_server(provider: Any) -> str | None:
    """The URL of ``provider``'s server when it is on this machine's loopback, else None."""
    info = getattr(provider, "info", {}) or {}
    for key in _SERVER_KEYS:
        url = info.get(key)
        if not url:
            continue
        host = urlsplit(str(url) if "://" in str(url) else f"http://{url}").hostname or ""
        if host == "localhost":
            return str(url)
        try:
            return str(url) if ipaddress.ip_address(host).is_loopback else None
        except ValueError:  # a name: not resolved, not loopback
            return None
    return None


def measure_query_load(
    provider: Any,
    texts: Sequence[str],
    levels: Sequence[int],
    *,
    seed: int = 0,
    requests: int = LOAD_REQUESTS,
    seconds: float = LOAD_SECONDS,
) -> tuple[LoadLevel, ...] | None:
    """Each level: that many threads embed ``texts`` one query a request against the
    provider's loopback server (:func:`~pytest_embedbench.retrieval.indexes.measure_calls`:
    a seeded order, ``requests`` (1,000) or ``seconds`` (10) a level); None when the
    provider has no server on loopback or there is nothing to send."""
    if not levels or not texts or not hasattr(provider, "embed_batch"):
        return None
    provider.ensure_loaded()
    if loopback_server(provider) is None:
        return None
    prepared = [provider.prepare(text, "query") for text in texts]

    def send(i: int) -> None:
        try:
            provider.embed_batch([prepared[i]], kind="query")
        except Exception as exc:  # noqa: BLE001 - every SDK raises its own kinds
            raise ProviderError(
                f"provider {provider.name!r} model {provider.model!r} under "
                f"--embedbench-concurrency (a query embedded by "
                f"{redact(str(loopback_server(provider)))}): "
                f"{provider.scrub(provider.describe_error(exc))}"
            ) from None

    send(0)  # warm-up: the client's connection, untimed
    return measure_calls(send, len(prepared), levels, seed=seed, requests=requests, seconds=seconds)
