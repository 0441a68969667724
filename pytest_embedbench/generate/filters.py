"""The filters a returned question passes (:data:`~.report.REJECT_REASONS`, in that order):
heuristics on its words, the answerability, round-trip and margin judge, near-duplicates
across the whole set; then, among the questions that passed every filter, the per-chunk cap.

The cap comes last so that the counts say what the filters found: a model that writes five
questions where two were asked has its bad ones counted by reason, and only good questions
beyond the two are counted as ``extra``.

Why ``rapidfuzz`` for the near-duplicate filter: see the package docstring.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .settings import GenerationError, GenerationSettings, import_extra

if TYPE_CHECKING:
    from ..core.types import Chunk
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


#: JSON or markup in a question's text: braces, a key's quote and colon, an
#: escaped character, a chat template's special token. A small model held to a schema can run
#: a question into the next object (``"What is ...?}, {"``): a question no user would type
_MARKUP = re.compile(r'[{}]|"\s*[:,]|\\[nt"\\]|<\|[^|>]*\|>|</?[a-z]+>')


def _heuristic_reason(question: str, settings: GenerationSettings) -> str | None:
    """The first heuristic filter ``question`` fails, or None."""
    if _MARKUP.search(question):
        return "markup"
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


#: the reasons :class:`_Pool` decides (every other reason is decided question by question)
DUPLICATE, ACROSS_DOCUMENTS, EXTRA = "duplicate", "duplicate_across_documents", "extra"


@dataclass
class _Candidate:
    """A question that passed the filters of its own words and the judge, with its place."""

    chunk: int  # the chunk's place in the sample: the cap is per chunk
    doc_id: str
    source_chunk_id: str
    question: str
    answer: str
    seed: int
    #: None while kept; DUPLICATE or ACROSS_DOCUMENTS once a near-duplicate is found
    status: str | None = None


class _Pool:
    """Near-duplicates across the whole set, then the per-chunk cap.

    Near-duplicates are rapidfuzz's ``fuzz.ratio`` on case-folded, whitespace-collapsed texts,
    at or above the threshold (0..1). A question asked of chunks of *different documents* (a
    generic one, "What are the long-term health effects of dietary fiber?") has no one
    document for an answer, so every copy is rejected (``duplicate_across_documents``), the
    first one too, even when it came chunks earlier. A question asked again of the same
    document (overlapping chunks) keeps its first copy (``duplicate``). Then each chunk keeps
    its first ``questions_per_chunk`` questions that are left, in the model's order; the
    rest are ``extra``.
    """

    def __init__(self, threshold: float, per_chunk: int) -> None:
        import_extra("rapidfuzz", "the near-duplicate filter needs rapidfuzz")
        from rapidfuzz import fuzz, process

        self._fuzz, self._process = fuzz, process
        self.cutoff = threshold * 100.0
        self.per_chunk = per_chunk
        self.keys: list[str] = []
        self.entries: list[_Candidate] = []

    @staticmethod
    def key(question: str) -> str:
        return " ".join(question.casefold().split())

    def add(self, candidate: _Candidate) -> None:
        """Compare ``candidate`` with every question before it, and keep it in the pool: a
        later copy may still be found."""
        key = self.key(candidate.question)
        found = self._process.extract(
            key, self.keys, scorer=self._fuzz.ratio, score_cutoff=self.cutoff, limit=None
        )
        matches = [self.entries[index] for _, _, index in found]
        if any(m.doc_id != candidate.doc_id or m.status == ACROSS_DOCUMENTS for m in matches):
            for match in matches:
                match.status = ACROSS_DOCUMENTS
            candidate.status = ACROSS_DOCUMENTS
        elif matches:
            candidate.status = DUPLICATE
        self.keys.append(key)
        self.entries.append(candidate)

    def kept(self) -> tuple[list[_Candidate], int]:
        """The questions kept, in corpus order, and how many the cap dropped."""
        out: list[_Candidate] = []
        taken: dict[int, int] = {}
        dropped = 0
        for entry in self.entries:
            if entry.status is not None:
                continue
            if taken.get(entry.chunk, 0) >= self.per_chunk:
                dropped += 1
                continue
            taken[entry.chunk] = taken.get(entry.chunk, 0) + 1
            out.append(entry)
        return out, dropped

    def tally(self, report: GenerationReport) -> list[_Candidate]:
        """Put the pool's counts in ``report`` (a later copy can change an earlier verdict, so
        they are counted afresh); the questions kept."""
        kept, dropped = self.kept()
        statuses = [e.status for e in self.entries]
        for reason, n in (
            (DUPLICATE, statuses.count(DUPLICATE)),
            (ACROSS_DOCUMENTS, statuses.count(ACROSS_DOCUMENTS)),
            (EXTRA, dropped),
        ):
            report.rejected[reason] = n
        report.rejected = +report.rejected  # drop zero counts
        report.kept = len(kept)
        return kept


class _Judge:
    """The answerability and round-trip filters, with an embedding model (a model spec)."""

    def __init__(self, spec: str, chunks: Sequence[Chunk], settings: GenerationSettings) -> None:
        import numpy as np

        from ..models.providers import EmbeddingProvider, ModelSpec, create_provider

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
        """For each question: None (kept), ``"unanswerable"``, ``"round_trip"`` or
        ``"low_margin"``.

        Documents rank by their best chunk (max-pooling, as the benchmark ranks them). The
        margin is the source document's score minus the best score of any other document:
        a question several documents answer about equally well (a generic one) has its
        source in the top ``round_trip_k`` by chance, and a margin below ``min_margin``
        (in the judge model's similarity units) says so.
        """
        np = self._np
        if not questions:
            return []
        vectors = self.provider.embed(list(questions), kind="query")
        scores = vectors.astype(np.float64) @ self.matrix.astype(np.float64).T
        own = self.chunk_index[chunk.id]
        min_margin = self.settings.min_margin
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
            if chunk.doc_id not in top:
                out.append("round_trip")
                continue
            other = max((v for doc, v in best.items() if doc != chunk.doc_id), default=-math.inf)
            margin = best[chunk.doc_id] - other
            out.append("low_margin" if min_margin is not None and margin < min_margin else None)
        return out


def _desc(text: str) -> tuple[int, ...]:
    """A key that sorts strings in descending order (the ranking tie rule: id descending)."""
    return tuple(-ord(c) for c in text) + (1,)


def _judged(
    questions: Sequence[tuple[str, str]],
    chunk: Chunk,
    settings: GenerationSettings,
    report: GenerationReport,
    judge: _Judge | None,
) -> list[tuple[str, str]]:
    """The questions of one chunk that pass the filters of their own words and the judge,
    every one of them (the cap comes after the duplicates: :class:`_Pool`); each rejected
    question is counted under the first filter it fails."""
    report.candidates += len(questions)
    passed: list[tuple[str, str]] = []
    for question, answer in questions:
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
    return passed


def _rows(kept: Sequence[_Candidate]) -> list[dict[str, Any]]:
    """The kept questions as the rows :func:`~.evalset.evalset_rows` numbers."""
    return [
        {
            "query": c.question,
            "relevant_doc_ids": [c.doc_id],
            "answer": c.answer,
            "source_chunk_id": c.source_chunk_id,
            "seed": c.seed,
        }
        for c in kept
    ]
