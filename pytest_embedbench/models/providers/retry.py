"""HTTP retry for hosted providers: which errors are worth another attempt, and how long to wait.

Every SDK raises its own exception types, so the decision reads what they share: an HTTP status
(``status_code``, ``http_status``, ``status``, ``response.status_code`` or botocore's
``ResponseMetadata``), a ``Retry-After`` header, or a connection-error class name. A provider
overrides :meth:`~pytest_embedbench.providers.EmbeddingProvider.classify_error` for what only its
SDK knows and falls back to :func:`default_retry_decision`::

    policy = RetryPolicy(max_retries=5, backoff=0.5)
    decision = default_retry_decision(exc)        # None: give up
    if not policy.gives_up(decision, attempt):
        time.sleep(policy.delay(decision, attempt))
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RETRY_STATUSES",
    "RetryDecision",
    "RetryPolicy",
    "default_retry_decision",
    "retry_after_of",
    "status_of",
]

#: HTTP statuses worth another attempt (besides every 5xx)
RETRY_STATUSES = frozenset({408, 409, 425, 429})
#: the longest backoff between two attempts, in seconds (a ``Retry-After`` may ask for more)
MAX_BACKOFF_S = 30.0

#: exception class names (anywhere in the MRO) of connection errors and timeouts across SDKs
_CONNECTION_NAMES = frozenset(
    {
        "Timeout",
        "TryAgain",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "TimeoutException",
        "APIConnectionError",
        "APITimeoutError",
        "EndpointConnectionError",
        "ConnectionClosedError",
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "RemoteProtocolError",
        "ServiceUnavailableError",
    }
)


@dataclass(frozen=True)
class RetryDecision:
    """Retry, after ``retry_after`` seconds when the server said so (else backoff)."""

    retry_after: float | None = None


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries, whatever the SDK calls it."""
    for attr in ("status_code", "http_status", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(value, int):
        return value
    if isinstance(response, dict):  # botocore ClientError
        value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(value, int):
            return value
    return None


def retry_after_of(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header on the exception's response, if any."""
    headers: Any = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        headers = getattr(exc, "headers", None)
    if headers is None and isinstance(getattr(exc, "response", None), dict):
        headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders")  # type: ignore[attr-defined]
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def default_retry_decision(exc: BaseException) -> RetryDecision | None:
    """Retry connection errors, timeouts, 408/409/425/429 and 5xx; give up on the rest."""
    status = status_of(exc)
    if status is not None:
        if status in RETRY_STATUSES or 500 <= status < 600:
            return RetryDecision(retry_after_of(exc))
        return None
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return RetryDecision()
    if {cls.__name__ for cls in type(exc).__mro__} & _CONNECTION_NAMES:
        return RetryDecision()
    return None


class RetryPolicy:
    """At most ``max_retries`` retries; exponential backoff from ``backoff`` seconds, capped
    at 30 s, times a jitter in [0.5, 1.5) drawn from a seeded generator (the same run sleeps
    the same); a server's ``Retry-After`` wins over the backoff."""

    def __init__(self, *, max_retries: int, backoff: float, seed: int = 0) -> None:
        self.max_retries = max_retries
        self.backoff = backoff
        self._jitter = random.Random(seed)

    def gives_up(self, decision: RetryDecision | None, attempt: int) -> bool:
        """Whether attempt number ``attempt`` (0 = the first) was the last one."""
        return decision is None or attempt >= self.max_retries

    def delay(self, decision: RetryDecision, attempt: int) -> float:
        """Seconds to wait before the attempt after ``attempt`` (never negative)."""
        delay = decision.retry_after
        if delay is None:
            delay = min(MAX_BACKOFF_S, self.backoff * 2**attempt) * (0.5 + self._jitter.random())
        return max(0.0, delay)
