"""``llm:``: a chat model as a pointwise reranker (``llm:qwen2.5-7b-instruct@20``): each
candidate graded on its own against the query with one pinned prompt, the grade its score.

The prompt is the LLM judge's (:data:`~.judge.JUDGE_PROMPT`: the UMBRELA 0-3 scale, the
passage cut to :data:`~.judge.PASSAGE_CHARS` characters), sent through the chat client
generate-evalset and the judge use (:mod:`.chat`: retries on timeouts, 429 and 5xx, the
structured-output form the server accepts, secrets scrubbed), at temperature 0 with a fixed
seed, so the same server and model give the same grades. The prompt's text and its sha256
are in the reranked result's ``rerank.info``; a change to the prompt changes the hash.

The model is ``NAME`` of an OpenAI-compatible server (``llm:NAME``, or ``llm:openai:NAME``) or
an Ollama model (``llm:ollama:NAME``). Options, from ``providers: {llm: {...}}`` of
embedbench.yaml or the reranker's own name: ``base_url`` (else ``OPENAI_BASE_URL`` /
``OLLAMA_HOST``), ``max_tokens`` (16), ``request_timeout_s`` (120), ``max_retries`` (2),
``backoff`` (seconds before the first retry, 0.75), ``seed`` (0), ``price_per_1m_tokens``
(for the cost per 1,000 queries; unknown without it), ``no_grade``.

Grades are parsed strictly (:func:`~.judge.parse_grade`: ``{"grade": 2}`` or a lone digit
0-3). An answer that holds no grade fails the test with the answer quoted
(``no_grade: error``, the default); ``no_grade: zero`` scores it 0 instead and counts it in
``rerank.info.no_grade`` (for a small model that strays now and then). Grades tie often: ties
go by the project's rule (the document id, descending), as every ranking's do.

Usage::

    reranker = LLMReranker("qwen2.5-7b-instruct", base_url="http://127.0.0.1:8000/v1")
    reranker.ensure_loaded()
    reranker.score("how do I reset my password", candidates)    # [3.0, 0.0, 1.0, ...]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from ..core.exceptions import ConfigError, EmbedBenchError, RerankerError
from ..core.types import Document
from ..retrieval.rerank import Reranker, register_reranker
from .chat import _backend, _Generator, server_message
from .judge import (
    JUDGE_PROMPT,
    JUDGE_PROMPT_SHA256,
    JudgeSettings,
    ask_grade,
    judge_settings,
    parse_grade,
)
from .report import GenerationReport

__all__ = ["LLMReranker", "NO_GRADE"]

#: what an answer without a grade does: fail the test (quoting it), or score 0 (counted)
NO_GRADE = ("error", "zero")


@register_reranker
class LLMReranker(Reranker):
    """A chat model grading each candidate (see the module doc)."""

    name = "llm"
    free: ClassVar[bool] = False
    options_taken: ClassVar[frozenset[str]] = frozenset(
        {"base_url", "max_tokens", "request_timeout_s", "max_retries", "seed"}
        | {"price_per_1m_tokens", "no_grade", "backoff"}
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        where = f"reranker 'llm:{model}'"
        unknown = sorted(set(self.options) - self.options_taken)
        if unknown:
            raise ConfigError(
                f"{where}: unknown option(s) {unknown}; it takes {sorted(self.options_taken)}"
            )
        self.no_grade = self.options.get("no_grade", "error")
        if self.no_grade not in NO_GRADE:
            raise ConfigError(
                f"{where}: no_grade {self.no_grade!r}: use 'error' (an answer without a grade "
                "fails the test) or 'zero' (it scores 0 and is counted)"
            )
        chat = model if model.startswith(("openai:", "ollama:")) else f"openai:{model}"
        raw = {k: v for k, v in self.options.items() if k not in ("no_grade", "backoff")}
        #: the chat settings, checked as the judge's are (a bad value names its key)
        self.settings: JudgeSettings = judge_settings({**raw, "model": chat}, where)
        self._generator: _Generator | None = None
        self._report: GenerationReport | None = None
        self._last_tokens: int | None = None
        self._no_grade = 0
        self._refused = 0
        self._served: set[str] = set()

    def load(self) -> None:
        chat = self.settings.chat
        if "backoff" in self.options:  # seconds before the first retry (then doubling)
            chat = dataclasses.replace(chat, retry_backoff_s=float(self.options["backoff"]))
            chat.check(f"reranker 'llm:{self.model}'")
        backend = _backend(chat)
        self._backend = backend
        self._generator = _Generator(chat, backend, backend.secrets)
        self._generator.check()  # unreachable server, missing model: a GenerationError
        self._report = GenerationReport.starting(chat, backend.host)

    def begin_run(self) -> None:
        assert self._report is not None
        self._report.requests = self._report.retries = 0
        self._no_grade = 0
        self._refused = len(getattr(self._backend, "refusals", []))
        self.info = self._info()

    def is_free(self) -> bool:
        return self.price_per_1m_tokens == 0

    def _grade(self, query: str, document: Document) -> float:
        assert self._generator is not None and self._report is not None
        try:
            content = ask_grade(
                self._generator, query, document.embed_text, self.settings.seed, self._report
            )
        except EmbedBenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - the server's answer after the retries
            said = self._generator.scrub(server_message(exc))
            raise RerankerError(
                f"reranker 'llm:{self.model}': the chat server at {self._backend.host} failed "
                f"on document {document.id!r}: {said} (after {self._report.retries} retries); "
                "check that it serves the model, or raise max_retries / request_timeout_s "
                "under providers.llm in embedbench.yaml"
            ) from None
        served = getattr(self._backend, "served_model", None)
        if served:
            self._served.add(str(served))
        grade = parse_grade(content)
        if grade is not None:
            return float(grade)
        if self.no_grade == "zero":
            self._no_grade += 1
            return 0.0
        shown = self._generator.scrub(" ".join(content.split())[:200])
        raise RerankerError(
            f"reranker 'llm:{self.model}' answered {shown!r} for document {document.id!r}, "
            'which holds no grade (expected {"grade": G} with G 0-3, or a lone digit); use a '
            "model that follows the format, or set no_grade: zero under providers.llm in "
            "embedbench.yaml to score such answers 0"
        )

    def score(self, query: str, documents: Sequence[Document]) -> Sequence[float]:
        before = int(getattr(self._backend, "tokens", 0) or 0)
        scores = [self._grade(query, d) for d in documents]
        after = int(getattr(self._backend, "tokens", 0) or 0)
        self._last_tokens = after - before
        self.info = self._info()
        return scores

    def count_tokens(self, query: str, documents: Sequence[Document]) -> int | None:
        return self._last_tokens

    def _info(self) -> dict[str, Any]:
        report = self._report
        # a structured-output form the server refused was a request too (as the judge counts)
        refusals = len(getattr(self._backend, "refusals", [])) - self._refused
        return {
            "model": self.settings.chat.model,
            "server_model": sorted(self._served),
            "host": self._backend.host,
            "prompt": JUDGE_PROMPT,
            "prompt_sha256": JUDGE_PROMPT_SHA256,
            "requests": (report.requests if report else 0) + refusals,
            "retries": report.retries if report else 0,
            "no_grade": self._no_grade,
            "no_grade_policy": self.no_grade,
            "max_tokens": self.settings.max_tokens,
            "seed": self.settings.seed,
        }

    def describe(self) -> str:
        return f"LLM pointwise grades by {self.settings.chat.model}"
