"""The filters a returned question passes (:data:`~.report.REJECT_REASONS`, in that order):
heuristics on its words, the answerability and round-trip judge, near-duplicates.

Why ``rapidfuzz`` for the near-duplicate filter: see the package docstring.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .settings import GenerationError, GenerationSettings

if TYPE_CHECKING:
    from ..types import Chunk
    from .report import GenerationReport

_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

_SOURCE_NOUNS = (
    r"passage|document|text|excerpt|article|paragraph|context|chunk|snippet|extract|"
    r"author|writer|reading"
)
_REFERS_TO_SOURCE = re.compile(
    rf"\b(?:(?:this|that|the|above|given|provided|following|same)\s+(?:{_SOURCE_NOUNS})s?\b"
    r"|according to (?:it|this|the (?:passage|text|document|author))"
    r"|(?:mentioned|described|discussed|stated) (?:above|here|in it)"
    r"|in (?:this|the) (?:section|passage)\b)",
    re.IGNORECASE,
)
_GENERIC = re.compile(
    r"^(?:please\s+|can you\s+|could you\s+)?"
    r"(?:summari[sz]e|sum up|give (?:me )?(?:a |an )?(?:summary|overview)|"
    r"provide (?:a |an )?(?:summary|overview)|describe (?:this|it|the content)|"
    r"what(?:'s| is) (?:this|it) (?:all )?about|what (?:is|are) the (?:main|key|central) "
    r"(?:point|idea|topic|theme|takeaway|message|argument)s?\b|"
    r"what (?:is|was) the (?:topic|purpose|subject|gist)\b|"
    r"what does (?:this|it) (?:say|describe|discuss|cover|explain|talk about)|"
    r"what (?:can|do) (?:we|you|i) learn\b|what information is (?:given|provided)\b)",
    re.IGNORECASE,
)
_STOP_WORDS = frozenset(
    """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else
    ever every few for from further get gets got had has have having he her here hers him his
    how i if in into is it its itself just let like may me might more most much must my no nor
    not now of off on once one only or other our out over own per same shall she should so some
    such than that the their them then there these they thing things this those through to too
    under until up upon us use used using very was way we were what whatever when where whether
    which while who whom whose why will with within without would yes yet you your
    """.split()
)


def _question_words(question: str) -> list[str]:
    return _WORDS.findall(question)


def _heuristic_reason(question: str, settings: GenerationSettings) -> str | None:
    """The first heuristic filter ``question`` fails, or None."""
    if not question.rstrip().endswith("?"):
        return "no_question_mark"
    words = _question_words(question)
    if len(words) < settings.min_question_words:
        return "too_short"
    if len(words) > settings.max_question_words:
        return "too_long"
    if _REFERS_TO_SOURCE.search(question):
        return "refers_to_source"
    if _GENERIC.search(question.strip()):
        return "generic"
    content = [w for w in words if w.casefold() not in _STOP_WORDS and (len(w) > 2 or w.isdigit())]
    if not content:
        return "no_content_words"
    return None


class _Deduper:
    """Near-duplicates across the whole set: rapidfuzz's ``fuzz.ratio`` on case-folded,
    whitespace-collapsed texts, at or above the threshold (0..1)."""

    def __init__(self, threshold: float) -> None:
        try:
            from rapidfuzz import fuzz, process
        except ImportError:
            raise GenerationError(
                "the near-duplicate filter needs rapidfuzz: "
                "pip install 'pytest-embedbench[generate]'"
            ) from None
        self._fuzz, self._process = fuzz, process
        self.cutoff = threshold * 100.0
        self.accepted: list[str] = []

    @staticmethod
    def key(question: str) -> str:
        return " ".join(question.casefold().split())

    def is_duplicate(self, question: str) -> bool:
        if not self.accepted:
            return False
        match = self._process.extractOne(
            self.key(question), self.accepted, scorer=self._fuzz.ratio, score_cutoff=self.cutoff
        )
        return match is not None

    def accept(self, question: str) -> None:
        self.accepted.append(self.key(question))


class _Judge:
    """The answerability and round-trip filters, with an embedding model (a model spec)."""

    def __init__(self, spec: str, chunks: Sequence[Chunk], settings: GenerationSettings) -> None:
        import numpy as np

        from ..providers import EmbeddingProvider, ModelSpec, create_provider

        self._np = np
        self.spec = spec
        provider = create_provider(ModelSpec.coerce(spec))
        if not isinstance(provider, EmbeddingProvider):
            raise GenerationError(
                f"embedding model {spec!r} is not an embedding model; the answerability filter "
                "compares vectors: name a dense model (hf:..., ollama:..., openai:...)"
            )
        provider.ensure_loaded()
        self.provider = provider
        self.settings = settings
        self.chunk_index = {c.id: i for i, c in enumerate(chunks)}
        self.doc_of = np.array([c.doc_id for c in chunks], dtype=object)
        self.matrix = provider.embed([c.text for c in chunks], kind="document")

    def reasons(self, questions: Sequence[str], chunk: Chunk) -> list[str | None]:
        """For each question: None (kept), ``"unanswerable"`` or ``"round_trip"``."""
        np = self._np
        if not questions:
            return []
        vectors = self.provider.embed(list(questions), kind="query")
        scores = vectors.astype(np.float64) @ self.matrix.astype(np.float64).T
        own = self.chunk_index[chunk.id]
        out: list[str | None] = []
        for row in scores:
            if row[own] < self.settings.min_similarity:
                out.append("unanswerable")
                continue
            best: dict[str, float] = {}  # a document ranks by its best chunk
            for doc, score in zip(self.doc_of, row, strict=True):
                if score > best.get(doc, -math.inf):
                    best[doc] = float(score)
            ranked = sorted(best.items(), key=lambda kv: (-kv[1], _desc(kv[0])))
            top = {doc for doc, _ in ranked[: self.settings.round_trip_k]}
            out.append(None if chunk.doc_id in top else "round_trip")
        return out


def _desc(text: str) -> tuple[int, ...]:
    """A key that sorts strings in descending order (the ranking tie rule: id descending)."""
    return tuple(-ord(c) for c in text) + (1,)


def _filter(
    got: tuple[list[tuple[str, str]], int],
    chunk: Chunk,
    settings: GenerationSettings,
    report: GenerationReport,
    judge: _Judge | None,
    deduper: _Deduper,
) -> list[dict[str, Any]]:
    questions, seed = got
    report.candidates += len(questions)
    report.rejected["extra"] += max(0, len(questions) - settings.questions_per_chunk)
    passed: list[tuple[str, str]] = []
    for question, answer in questions[: settings.questions_per_chunk]:
        reason = _heuristic_reason(question, settings)
        if reason:
            report.rejected[reason] += 1
        else:
            passed.append((question, answer))
    if judge is not None and passed:
        verdicts = judge.reasons([q for q, _ in passed], chunk)
        for reason in verdicts:
            if reason:
                report.rejected[reason] += 1
        passed = [qa for qa, reason in zip(passed, verdicts, strict=True) if reason is None]
    kept = []
    for question, answer in passed:
        if deduper.is_duplicate(question):
            report.rejected["duplicate"] += 1
            continue
        deduper.accept(question)
        kept.append(
            {
                "query": question,
                "relevant_doc_ids": [chunk.doc_id],
                "answer": answer,
                "source_chunk_id": chunk.id,
                "seed": seed,
            }
        )
    report.rejected = +report.rejected  # drop zero counts
    return kept
