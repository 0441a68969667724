"""What a generation did, counted (:class:`GenerationReport`), and its result."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .settings import PROMPT_VERSION

#: why a returned question is not kept, in the order the checks of :mod:`.filters` run
REJECT_REASONS: dict[str, str] = {
    "extra": "more questions than questions_per_chunk asked for",
    "no_question_mark": "does not end with '?'",
    "too_short": "fewer words than min_question_words",
    "too_long": "more words than max_question_words",
    "refers_to_source": "mentions 'this passage', 'the document', 'the text', 'the author'...",
    "generic": "a generic request ('summarize...', 'what is this about')",
    "no_content_words": "no word beyond question and stop words",
    "unanswerable": "similarity to its source chunk below min_similarity (judge model)",
    "round_trip": "its source document is not in the judge model's top round_trip_k",
    "duplicate": "near-duplicate of an accepted question (dedupe_threshold)",
}

#: why a chunk gave no questions at all (after its attempts and retries)
CHUNK_FAILURES: dict[str, str] = {
    "invalid_json": "the answer was not JSON, every attempt",
    "schema_mismatch": 'the JSON was not {"questions": [{"question", "answer"}]}, every attempt',
    "request_failed": "timeouts or server errors outlasted the retries",
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

    def to_dict(self) -> dict[str, Any]:
        """Plain data, keys in a fixed order (for the sidecar file and ``--json``)."""
        out = dataclasses.asdict(self)
        for name in ("bad_answers", "failed_chunks", "rejected"):
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

    def summary_lines(self) -> list[str]:
        """The closing summary: what was asked, what came back, what was kept and why not."""
        lines = [
            f"generated with {self.provider}:{self.model} at {self.host} (seed {self.seed}, "
            f"prompt v{self.prompt_version})",
            f"documents {self.documents} · chunks {self.chunks} · eligible {self.eligible_chunks}"
            f" · sampled {self.sampled_chunks}",
            f"requests {self.requests} (retries {self.retries}) · questions returned "
            f"{self.candidates} · kept {self.kept}",
        ]
        for reason, n in sorted(self.bad_answers.items()):
            lines.append(f"  unreadable answers ({reason}): {n}")
        for reason, n in sorted(self.failed_chunks.items()):
            lines.append(f"  chunks without questions ({reason}): {n} - {CHUNK_FAILURES[reason]}")
        for reason in REJECT_REASONS:
            if self.rejected.get(reason):
                lines.append(
                    f"  rejected {reason}: {self.rejected[reason]} - {REJECT_REASONS[reason]}"
                )
        if self.judge:
            lines.append(f"answerability and round-trip judged by {self.judge}")
        lines.append(
            "The filters are heuristics: read the questions before you trust them as ground truth."
        )
        return lines


@dataclass
class GenerationResult:
    """The kept questions as eval-set lines, and the report."""

    rows: list[dict[str, Any]]
    report: GenerationReport
