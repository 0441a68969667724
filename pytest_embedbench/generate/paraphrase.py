"""``noise:paraphrase`` through the generator's chat model: each query rewritten by the model
that ``embedbench.yaml``'s ``paraphrase:`` names (the generator's settings: ``model``, ``host``
or ``base_url``, ``seed``...), each paraphrase cached, and the bad ones rejected and counted.

A paraphrase is asked once per (model, prompt version, seed, temperature, length, query text)
and kept in ``<cache folder>/paraphrases/``: a re-run calls no model. It is rejected, and the
query keeps its own words, when it is empty, when it is the query again (same words, case and
punctuation aside), when it copies the query's answer (the eval set's ``answer``, absent from
the query: a search for the answer finds it too easily), or when the model's answer was not the
JSON asked for after ``max_generation_attempts`` tries; :attr:`ChatParaphraser.counts` counts
each by reason (:data:`PARAPHRASE_REJECTS`).

The ``pytest_embedbench_paraphraser`` hook still wins: a conftest.py that returns a callable
replaces this one.

Usage::

    settings = paraphrase_settings({"model": "openai:smollm2",
                                    "host": "http://127.0.0.1:8080/v1"}, "paraphrase")
    paraphraser = ChatParaphraser(settings, cache_dir=Path(".cache"))
    paraphraser.paraphrase("how do I reset my password", answer="Settings, Security")
    paraphraser.counts   # Counter({'asked': 1, 'kept': 1})
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.exceptions import ConfigError
from .chat import _backend, _Generator
from .prompts import _first_json
from .report import GenerationReport
from .sampling import _chunk_seed
from .settings import GenerationError, GenerationSettings

__all__ = [
    "PARAPHRASE_KEYS",
    "PARAPHRASE_PROMPT_VERSION",
    "PARAPHRASE_REJECTS",
    "PARAPHRASE_SCHEMA",
    "ChatParaphraser",
    "paraphrase_reason",
    "paraphrase_settings",
]

#: bumped whenever the words of the paraphrase prompt change (part of the cache key)
PARAPHRASE_PROMPT_VERSION = "1"

#: the JSON the model is held to (as :data:`~.prompts.QUESTIONS_SCHEMA` is for questions)
PARAPHRASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"paraphrase": {"type": "string"}},
    "required": ["paraphrase"],
    "additionalProperties": False,
}

#: why a paraphrase is not used (the query then keeps its own words)
PARAPHRASE_REJECTS: dict[str, str] = {
    "empty": "no word in it",
    "identical": "the query again (the same words, case and punctuation aside)",
    "copies_answer": "holds the query's answer, which the query itself does not",
    "unreadable": "the model's answer was not the JSON asked for, every attempt",
}

#: the keys of ``paraphrase:`` in embedbench.yaml: the generator's chat settings
PARAPHRASE_KEYS = (
    "model",
    "host",
    "base_url",
    "seed",
    "temperature",
    "num_predict",
    "request_timeout_s",
    "max_retries",
    "retry_backoff_s",
    "max_generation_attempts",
)

_SYSTEM = (
    "You rewrite search queries. Keep the meaning and the language, change the words. "
    "Reply with JSON only."
)
_USER = """\
Rewrite this search query in other words, as a user might type it. Do not answer it.

Reply with JSON only, in this form:
{{"paraphrase": "..."}}

Query: {text}"""

_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def paraphrase_reason(original: str, paraphrase: str, answer: str | None = None) -> str | None:
    """Why ``paraphrase`` of ``original`` is rejected (a key of :data:`PARAPHRASE_REJECTS`),
    or None when it is kept.

    Usage::

        paraphrase_reason("how to reset a password?", "How to reset a password")  # 'identical'
    """
    words = _words(paraphrase)
    if not words:
        return "empty"
    if words == _words(original):
        return "identical"
    answer_words = _words(answer or "")
    if answer_words and len(" ".join(answer_words)) >= 3:
        said, asked, needle = (
            " " + " ".join(x) + " " for x in (words, _words(original), answer_words)
        )
        if needle in said and needle not in asked:
            return "copies_answer"
    return None


def paraphrase_settings(mapping: Any, where: str) -> GenerationSettings:
    """The chat settings of ``paraphrase:`` (:data:`PARAPHRASE_KEYS`), checked as
    ``evalset: {generate: ...}``'s are; a ConfigError names ``where``, the key and the fix."""
    if not isinstance(mapping, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping of the chat model's settings, e.g. "
            "{model: openai:smollm2, host: http://127.0.0.1:8080/v1}, got "
            f"{mapping!r}"
        )
    unknown = sorted(str(k) for k in mapping if k not in PARAPHRASE_KEYS)
    if unknown:
        from ..core.exceptions import did_you_mean

        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], PARAPHRASE_KEYS)} "
            f"(allowed: {', '.join(sorted(PARAPHRASE_KEYS))})"
        )
    if "model" not in mapping:
        raise ConfigError(
            f"{where}: needs 'model': the chat model that rewrites the queries "
            "(an Ollama name, or openai:NAME with host its base URL)"
        )
    return GenerationSettings.from_mapping(mapping, where)


class ChatParaphraser:
    """Rewrites queries with the chat model of ``settings``; a callable ``(text) -> text``
    as the ``pytest_embedbench_paraphraser`` hook returns, and :meth:`paraphrase` with the
    query's answer for the answer-copy check.

    ``cache_dir`` (None: no cache) keeps every paraphrase the model wrote, by its key.
    ``counts`` holds ``asked`` (queries), ``cached`` (answered from the cache), ``requested``
    (model calls), ``kept`` and each rejection reason."""

    def __init__(self, settings: GenerationSettings, cache_dir: str | Path | None = None) -> None:
        self.settings = settings
        self.cache_dir = Path(cache_dir) / "paraphrases" if cache_dir is not None else None
        self.counts: Counter[str] = Counter()
        self._generator: _Generator | None = None
        self.report: GenerationReport | None = None

    def __call__(self, text: str) -> str:
        return self.paraphrase(text)

    def paraphrase(self, text: str, *, answer: str | None = None) -> str:
        """``text`` in the model's other words, or ``text`` itself when the paraphrase is
        rejected (counted under its reason)."""
        self.counts["asked"] += 1
        rewritten = self._cached_or_asked(text)
        reason = "unreadable" if rewritten is None else paraphrase_reason(text, rewritten, answer)
        if reason is not None:
            self.counts[reason] += 1
            return text
        self.counts["kept"] += 1
        assert rewritten is not None
        return " ".join(rewritten.split())

    def counts_dict(self) -> dict[str, Any]:
        """The counts in a fixed order, with the model: for the JSON report's ``info``."""
        return {
            "model": f"{self.settings.provider}:{self.settings.model_name}",
            **dict(sorted(self.counts.items())),
        }

    # -- the cache and the model ---------------------------------------------------------------

    def _key(self, text: str) -> str:
        s = self.settings
        blob = json.dumps(
            {
                "provider": s.provider,
                "model": s.model_name,
                "prompt_version": PARAPHRASE_PROMPT_VERSION,
                "seed": s.seed,
                "temperature": s.temperature,
                "num_predict": s.num_predict,
                "attempts": s.max_generation_attempts,
                "text": text,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _cached_or_asked(self, text: str) -> str | None:
        key = self._key(text)
        path = self.cache_dir / key[:2] / f"{key}.json" if self.cache_dir else None
        if path is not None and path.is_file():
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                if entry.get("text") == text:
                    self.counts["cached"] += 1
                    found = entry.get("paraphrase")
                    return found if isinstance(found, str) else None
            except (OSError, ValueError, AttributeError):
                pass  # a damaged entry is asked again and rewritten
        rewritten = self._ask(text)
        if path is not None:
            from ..core.io import atomic_write_text

            entry = {"text": text, "paraphrase": rewritten, "model": self.settings.model_name}
            try:
                atomic_write_text(path, json.dumps(entry, ensure_ascii=False, sort_keys=True))
            except OSError:
                pass  # a read-only cache costs a model call next time, nothing else
        return rewritten

    def _ask(self, text: str) -> str | None:
        s = self.settings
        if self._generator is None:
            backend = _backend(s)
            self._generator = _Generator(s, backend, backend.secrets)
            self.report = GenerationReport.starting(s, backend.host)
            self._generator.check()
        assert self.report is not None
        messages = [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": _USER.format(text=text)},
        ]
        base = _chunk_seed(s.seed, text)
        for attempt in range(s.max_generation_attempts):
            self.counts["requested"] += 1
            try:
                content = self._generator.request(
                    messages, (base + attempt) & 0x7FFFFFFF, self.report, PARAPHRASE_SCHEMA
                )
            except GenerationError:
                raise
            except Exception as exc:  # the server's own words, redacted: a point that fails
                self._generator.count_failure(exc, self.report)
                said = "; ".join(self.report.server_errors)
                raise GenerationError(
                    f"noise 'paraphrase': the {s.provider} server at {self._generator.backend.host}"
                    f" could not paraphrase {text!r}: {said}"
                ) from None
            data = _first_json(content.strip())
            if isinstance(data, dict) and isinstance(data.get("paraphrase"), str):
                return str(data["paraphrase"])
        return None
