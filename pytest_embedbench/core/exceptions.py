"""Errors and warnings raised by pytest-embedbench.

The tree::

    EmbedBenchError                 every error this package raises on purpose
    ├── DatasetError                a dataset file or object is malformed (names file and line)
    ├── ConfigError                 a bad option, spec or setting (names the key or value)
    ├── MetricError                 an unknown or malformed metric name
    ├── BaselineError               a baseline file cannot be read (names the fix)
    ├── ProviderError               a model failed to load or returned bad embeddings
    │   ├── MissingKeyError         a hosted model's API key is not set (its tests skip)
    │   ├── UnknownProviderError    a spec names no registered provider
    │   ├── MissingExtraError       the provider's optional dependency is not installed
    │   └── RerankerError           a reranker failed, or returned scores that cannot be used
    ├── CacheError                  the embedding cache cannot be used at all
    ├── RecordError                 saved data (a JSON report's tests) has the wrong shape
    │                               (names the key path: tests[3].result.metrics)
    └── StressUnavailableError      a stress workload cannot run here (paraphrase without a
                                    chat model); its tests skip with the reason

    EmbedBenchWarning (pytest.PytestWarning)    soft problems: a rebuilt cache, a duplicate query

Every message says what was attempted, shows the offending value with ``!r`` and, where one
exists, the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import pytest


class EmbedBenchError(Exception):
    """Base class of every error raised on purpose by pytest-embedbench."""


class DatasetError(EmbedBenchError, ValueError):
    """A dataset file or object is malformed."""


class ConfigError(EmbedBenchError, ValueError):
    """A bad option, model spec or setting."""


class MetricError(ConfigError):
    """An unknown or malformed metric name."""


class BaselineError(EmbedBenchError, ValueError):
    """A baseline file cannot be read or has the wrong schema."""


class ProviderError(EmbedBenchError, RuntimeError):
    """A provider failed to load or returned embeddings that cannot be used."""


class MissingKeyError(ProviderError):
    """A hosted model's API key is not set; the message names the environment variable."""


class UnknownProviderError(ProviderError, ConfigError):
    """A model spec names a provider that is not registered."""


class MissingExtraError(ProviderError, ImportError):
    """A provider's optional dependency is not installed."""


class RerankerError(ProviderError):
    """A reranker failed (a server error, a missing model) or returned scores that cannot be
    used (fewer than its candidates, NaN); the message names the reranker's spec and the fix."""


class CacheError(EmbedBenchError, OSError):
    """The embedding cache cannot be used at all (not a corrupt file: that is rebuilt)."""


class RecordError(EmbedBenchError, ValueError):
    """Saved records (a JSON report's ``tests``, ``summary``) do not have the shape their types
    declare; the message names the key path and what was expected there."""


class StressUnavailableError(EmbedBenchError):
    """A stress workload needs something this run lacks (a chat model for paraphrases); the
    plugin skips its tests with this message."""


class EmbedBenchWarning(pytest.PytestWarning):
    """A soft problem: the run goes on, but the user should know."""


def unknown_hint(unknown: Iterable[object], allowed: Iterable[str]) -> str:
    """``" (did you mean 'models'?)"`` after a list of unknown keys, for those close to an
    allowed one (``" ('modles': did you mean 'models'?)"`` when several are unknown), or "".

    Usage::

        raise ConfigError(f"unknown key(s) {bad}{unknown_hint(bad, KEYS)}; allowed: {KEYS}")
    """
    keys, names = list(unknown), sorted(str(a) for a in allowed)
    hints = [(key, did_you_mean(key, names).removeprefix("; ")) for key in keys]
    found = [hint if len(keys) == 1 else f"{str(key)!r}: {hint}" for key, hint in hints if hint]
    return f" ({'; '.join(found)})" if found else ""


def did_you_mean(value: object, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` (a different case first), or "".

    Usage::

        raise ConfigError(f"unknown provider {name!r}{did_you_mean(name, PROVIDERS)}")
    """
    text = str(value)
    names = sorted({str(c) for c in choices if str(c) != text})
    same_case = [c for c in names if c.lower() == text.lower()]
    if same_case:
        return f"; did you mean {same_case[0]!r} (names are case-sensitive)?"
    lowered = {c.lower(): c for c in names}
    close = difflib.get_close_matches(text.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""
