"""Synthetic eval sets from a chat model, heuristically filtered (issue 13).

A folder of documents becomes an eval set in the JSONL format that
:func:`~pytest_embedbench.datasets.load_evalset` reads:

1. the documents are read (:func:`~pytest_embedbench.ingest.load_documents`) and chunked
   (:func:`~pytest_embedbench.chunking.chunk_documents_with`);
2. a seeded, deterministic sample of the chunks of at least ``min_chunk_chars`` characters
   (``max_chunks`` of them, kept in corpus order) goes to a chat model, one request a chunk,
   asking for up to ``questions_per_chunk`` questions the chunk answers, as JSON
   (``{"questions": [{"question": str, "answer": str}]}``): Ollama's ``/api/chat`` with that
   JSON schema as ``format``, or an OpenAI-compatible ``/v1/chat/completions`` (vLLM, LM Studio,
   llama.cpp) with ``response_format`` ``json_schema``; temperature 0 and a per-chunk seed;
3. an answer that is not JSON, or not of that shape, is asked again with another seed
   (``max_generation_attempts`` in all) and then counted, never fatal; timeouts, 429s and 5xx
   are retried with backoff (:class:`~pytest_embedbench.providers.retry.RetryPolicy`, the
   ``Retry-After`` of the server wins) and then counted; an unreachable server or a model that
   is not there stops the run with a :class:`GenerationError` saying how to fix it;
4. every question passes the filters of :data:`REJECT_REASONS`, in that order, and the first
   it fails is counted in the :class:`GenerationReport`: its words, then (with
   ``embedding_model``) answerability, round trip and margin, then near-duplicates across the
   whole set (a question asked of chunks of different documents loses every copy); only then
   does the per-chunk cap (``questions_per_chunk``) drop what is left beyond it, counted as
   ``extra``, so the counts say what the filters found;
5. the kept questions are numbered ``q0001``... in corpus order and written atomically, one JSON
   object a line (:func:`write_evalset`): the same documents, settings and model answers give
   the same bytes.

The filters are heuristics, not a judge: a human should read a generated set before it is
trusted as ground truth (docs/generated-evalsets.md says so too).

Usage::

    from pytest_embedbench.generate import GenerationSettings, generate_evalset, write_evalset

    settings = GenerationSettings(model="llama3.2", max_chunks=40, questions_per_chunk=2)
    result = generate_evalset("docs/", settings)
    write_evalset("generated-evalset.jsonl", result.rows)
    print("\\n".join(result.report.summary_lines()))

Why ``rapidfuzz`` for the near-duplicate filter: ``fuzz.ratio`` is the normalised Indel
similarity (the figure ``difflib.SequenceMatcher.ratio`` approximates, without its "junk"
heuristic that makes ``SequenceMatcher`` order-dependent), in C++, and ``process.extractOne``
with ``score_cutoff`` compares one question with all accepted ones without a Python loop: a set
of thousands of questions stays quick. It is a small, maintained, MIT-licensed wheel.

The package is split by job: :mod:`.settings` (GenerationSettings, the errors,
``dataset_generation``, PROMPT_VERSION), :mod:`.prompts` (what is asked, how the answer is
parsed), :mod:`.chat` (the Ollama and OpenAI-compatible clients, retries), :mod:`.sampling`
(which chunks), :mod:`.filters` (the checks), :mod:`.report` (GenerationReport, REJECT_REASONS),
:mod:`.evalset` (writing, fingerprint, sidecar, staleness) and :mod:`.run` (the orchestration).
"""

from __future__ import annotations

from .chat import DEFAULT_OLLAMA_HOST, redact_url
from .evalset import SIDECAR_SCHEMA as SIDECAR_SCHEMA
from .evalset import evalset_fingerprint, write_evalset
from .evalset import evalset_text as evalset_text
from .evalset import sidecar_path as sidecar_path
from .evalset import write_sidecar as write_sidecar
from .prompts import QUESTIONS_SCHEMA
from .prompts import parse_questions as parse_questions
from .report import CHUNK_FAILURES as CHUNK_FAILURES
from .report import REJECT_REASONS, GenerationReport, GenerationResult
from .run import GeneratedSet, ensure_generated_evalset, generate_evalset, generate_or_reuse_evalset
from .run import Progress as Progress
from .sampling import sample_chunks as sample_chunks
from .settings import (
    PROMPT_VERSION,
    GenerationError,
    GenerationSettings,
    StaleEvalsetError,
    dataset_generation,
)

# the `X as X` imports: names outside __all__ that the single module had (tests import them)
__all__ = [
    "DEFAULT_OLLAMA_HOST",
    "PROMPT_VERSION",
    "QUESTIONS_SCHEMA",
    "REJECT_REASONS",
    "GeneratedSet",
    "GenerationError",
    "GenerationReport",
    "GenerationResult",
    "GenerationSettings",
    "StaleEvalsetError",
    "dataset_generation",
    "ensure_generated_evalset",
    "evalset_fingerprint",
    "generate_evalset",
    "generate_or_reuse_evalset",
    "redact_url",
    "write_evalset",
]
