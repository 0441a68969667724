"""What a generation did, counted (:class:`GenerationReport`), and its result."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .settings import PROMPT_VERSION, GenerationSettings

#: why a returned question is not kept, in the order the checks of :mod:`.filters` run: the
#: filters (its words, the judge, near-duplicates across the set), then the per-chunk cap
REJECT_REASONS: dict[str, str] = {
    "markup": "holds JSON or markup debris ('}', '{', '\"question\"'): the model's text ran "
    "into the next object",
    "no_question_mark": "does not end with a question mark ('?', '？' and the other scripts' "
    "marks)",
    "too_short": "fewer words than min_question_words",
    "too_long": "more words than max_question_words",
    "refers_to_source": "mentions 'this passage', 'the document', 'the text', 'the author'...",
    "generic": "a generic request ('summarize...', 'what is this about')",
    "no_content_words": "no word beyond question and stop words",
    "unanswerable": "similarity to its source chunk below min_similarity (judge model)",
    "round_trip": "its source document is not in the judge model's top round_trip_k",
    "low_margin": "its source document scores less than min_margin above another document "
    "(judge model): a generic question several documents answer",
    "duplicate_across_documents": "near-duplicates asked of chunks of different documents "
    "(dedupe_threshold): every copy, since no one document answers it",
    "duplicate": "near-duplicate of a kept question of the same document (dedupe_threshold)",
    "extra": "passed every filter, beyond questions_per_chunk for its chunk (the cap, last)",
}
#: the reasons of the filters; the rest (``extra``) is the cap, applied to what they passed
FILTER_REASONS: tuple[str, ...] = tuple(r for r in REJECT_REASONS if r != "extra")

#: why a chunk gave no questions at all (after its attempts and retries)
CHUNK_FAILURES: dict[str, str] = {
    "invalid_json": "the answer was not JSON, every attempt",
    "schema_mismatch": 'the JSON was not {"questions": [{"question", "answer"}]}, every attempt',
    "no_questions": "the model answered with an empty list of questions",
    "request_failed": "timeouts or server errors outlasted the retries",
    "request_refused": "the server called the request invalid (a 4xx, or a 5xx validation "
    "error): not retried",
}


@dataclass
class GenerationReport:
    """What a generation did, counted: chunks, requests, retries, answers that could not be
    read, and every rejected question by reason (:data:`REJECT_REASONS`)."""

    model: str
    provider: str
    host: str
    seed: int
    prompt_version: str = PROMPT_VERSION
    judge: str | None = None
    documents: int = 0
    chunks: int = 0
    eligible_chunks: int = 0
    sampled_chunks: int = 0
    chunks_done: int = 0
    requests: int = 0
    retries: int = 0
    #: attempts whose answer could not be read, by reason (each retried while attempts last)
    bad_answers: Counter[str] = field(default_factory=Counter)
    #: chunks that gave no questions at all, by reason (:data:`CHUNK_FAILURES`)
    failed_chunks: Counter[str] = field(default_factory=Counter)
    candidates: int = 0
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    #: what the server said when a request failed for good (redacted), and how often
    server_errors: Counter[str] = field(default_factory=Counter)
    #: the structured-output form the server accepted (an OpenAI-compatible server:
    #: json_schema, json_object or prompt; None for Ollama, whose ``format`` takes the schema)
    structured_output: str | None = None
    #: what the server said of each structured-output form it refused, in order
    format_refusals: list[str] = field(default_factory=list)

    @classmethod
    def starting(cls, settings: GenerationSettings, host: str, **counts: Any) -> GenerationReport:
        """The report of a generation with ``settings`` against ``host`` (redacted), before it
        ran; ``counts`` are the figures known already (documents, chunks ...)."""
        return cls(settings.model_name, settings.provider, host, settings.seed, **counts)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, keys in a fixed order (for the sidecar file and ``--json``)."""
        out = dataclasses.asdict(self)
        for name in ("bad_answers", "failed_chunks", "rejected", "server_errors"):
            out[name] = dict(sorted(getattr(self, name).items()))
        return out

    def progress_line(self) -> str:
        """``chunks 12/40 · kept 17 · rejected 6 (duplicate 2, no_question_mark 4)``."""
        rejected = sum(self.rejected.values())
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(self.rejected.items()))
        failed = sum(self.failed_chunks.values())
        return (
            f"chunks {self.chunks_done}/{self.sampled_chunks} · kept {self.kept} · rejected "
            f"{rejected}"
            + (f" ({reasons})" if reasons else "")
            + (f" · failed chunks {failed}" if failed else "")
        )

    @property
    def filtered(self) -> int:
        """How many returned questions the filters rejected (the cap's are not among them)."""
        return sum(self.rejected.get(r, 0) for r in FILTER_REASONS)

    def counts_line(self) -> str:
        """``kept 49 of 80 questions returned · the filters rejected 31 (no_question_mark 9,
        generic 9, ...) · the cap dropped 0 (extra)``: the filters' reasons in the order they
        run, then the cap."""
        reasons = ", ".join(
            f"{r} {self.rejected[r]}" for r in FILTER_REASONS if self.rejected.get(r)
        )
        return (
            f"kept {self.kept} of {self.candidates} question(s) returned · the filters rejected "
            f"{self.filtered}"
            + (f" ({reasons})" if reasons else "")
            + f" · the per-chunk cap dropped {self.rejected.get('extra', 0)} more (extra)"
        )

    def summary_lines(self) -> list[str]:
        """The closing summary: what was asked, what came back, what the filters rejected and
        why, then what the per-chunk cap dropped of what they passed, and what was kept."""
        lines = [
            f"generated with {self.provider}:{self.model} at {self.host} (seed {self.seed}, "
            f"prompt v{self.prompt_version})",
            f"documents {self.documents} · chunks {self.chunks} · eligible {self.eligible_chunks}"
            f" · sampled {self.sampled_chunks}",
            f"requests {self.requests} (retries {self.retries}) · questions returned "
            f"{self.candidates} · rejected by the filters {self.filtered} · dropped by the "
            f"per-chunk cap {self.rejected.get('extra', 0)} · kept {self.kept}",
        ]
        for reason, n in sorted(self.bad_answers.items()):
            lines.append(f"  unreadable answers ({reason}): {n}")
        for reason, n in sorted(self.failed_chunks.items()):
            lines.append(f"  chunks without questions ({reason}): {n} - {CHUNK_FAILURES[reason]}")
        for message, n in sorted(self.server_errors.items()):
            lines.append(f"    the server said ({n}x): {message}")
        if self.format_refusals:
            lines.append(
                f"  structured output: {self.structured_output} (the server refused "
                + "; ".join(self.format_refusals)
                + ")"
            )
        for reason in REJECT_REASONS:
            if self.rejected.get(reason):
                lines.append(
                    f"  rejected {reason}: {self.rejected[reason]} - {REJECT_REASONS[reason]}"
                )
        if self.judge:
            lines.append(f"answerability, round trip and margin judged by {self.judge}")
        lines.append(
            "The filters are heuristics: read the questions before you trust them as ground truth."
        )
        return lines


@dataclass
class GenerationResult:
    """The kept questions as eval-set lines, and the report."""

    rows: list[dict[str, Any]]
    report: GenerationReport
