"""The orchestration: documents -> chunks -> sample -> chat model -> filters -> eval-set rows
(:func:`generate_evalset`), and the generated set of a configured dataset, made once and reused
(:func:`ensure_generated_evalset`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.types import Document
from ..data.chunking import chunk_documents_with
from .chat import _backend, _Generator
from .evalset import (
    _check_fresh,
    evalset_fingerprint,
    evalset_rows,
    sidecar_path,
    write_evalset,
    write_sidecar,
)
from .filters import _Candidate, _Judge, _judged, _Pool, _rows
from .report import GenerationReport, GenerationResult
from .sampling import sample_chunks
from .settings import GenerationError, GenerationSettings, inside, plain_name

Progress = Callable[[GenerationReport], None]


def generate_evalset(
    docs: str | Path | Sequence[Document],
    settings: GenerationSettings | None = None,
    *,
    progress: Progress | None = None,
    extensions: Sequence[str] | None = None,
) -> GenerationResult:
    """Ask the chat model for questions about a sample of ``docs``' chunks and filter them.

    ``docs`` is a folder (read with :func:`~pytest_embedbench.ingest.load_documents`) or
    Documents. ``progress(report)`` is called after every chunk. Raises
    :class:`GenerationError` when the server cannot be reached or lacks the model; every other
    failure is counted in the report.

    Usage::

        result = generate_evalset("docs/", GenerationSettings(model="llama3.2", max_chunks=20))
        result.report.kept, result.report.rejected["duplicate"]
    """
    settings = settings or GenerationSettings()
    documents = _documents(docs, extensions)
    chunks = chunk_documents_with(settings.chunking, documents)
    sample = sample_chunks(chunks, settings)
    backend = _backend(settings)
    secrets = backend.secrets
    report = GenerationReport.starting(
        settings,
        backend.host,
        judge=settings.embedding_model,
        documents=len(documents),
        chunks=len(chunks),
        eligible_chunks=sum(1 for c in chunks if len(c.text.strip()) >= settings.min_chunk_chars),
        sampled_chunks=len(sample),
    )
    generator = _Generator(settings, backend, secrets)
    if sample:
        generator.check()
    judge = _Judge(settings.embedding_model, chunks, settings) if settings.embedding_model else None
    pool = _Pool(settings.dedupe_threshold, settings.questions_per_chunk)
    kept: list[_Candidate] = []
    for place, chunk in enumerate(sample):
        got = generator.questions(chunk, report)
        report.chunks_done += 1
        if got is not None:
            questions, seed = got
            for question, answer in _judged(questions, chunk, settings, report, judge):
                pool.add(_Candidate(place, chunk.doc_id, chunk.id, question, answer, seed))
        kept = pool.tally(report)  # a later copy can reject an earlier question: recounted
        _structured_output(backend, generator, report)
        if progress is not None:
            progress(report)
    return GenerationResult(evalset_rows(_rows(kept), settings, backend.host), report)


def _structured_output(backend: object, generator: _Generator, report: GenerationReport) -> None:
    """The structured-output form the server accepted, and what it said of those it refused
    (an OpenAI-compatible server; Ollama takes the schema as ``format``)."""
    mode = getattr(backend, "mode", None)
    if mode is not None:
        report.structured_output = mode
        report.format_refusals = [generator.scrub(r) for r in getattr(backend, "refusals", [])]


def _documents(
    docs: str | Path | Sequence[Document], extensions: Sequence[str] | None
) -> list[Document]:
    if isinstance(docs, (str, Path)):
        from ..data.ingest import load_documents

        return load_documents(docs, extensions=extensions)
    return list(docs)


@dataclass(frozen=True)
class GeneratedSet:
    """What :func:`generate_or_reuse_evalset` did for a dataset: the file, whether this call
    wrote it (``report`` is then the generation's) or reused it, and the lines that say so.

    Usage::

        generated = generate_or_reuse_evalset(settings, "handbook/", ".", name="handbook")
        for line in generated.summary_lines():
            print(line)
    """

    name: str
    path: Path
    written: bool
    report: GenerationReport | None = None

    def summary_lines(self) -> list[str]:
        """For the end of a run that generated the set: the file written, what was kept and
        rejected by reason (the filters first, then the per-chunk cap), and the reminder to
        review it. Empty when the set was reused: it was announced when it was written."""
        if not self.written or self.report is None:
            return []
        report = self.report
        lines = [
            f"embedbench: generated the eval set of dataset {self.name!r} with "
            f"{report.provider}:{report.model} from {report.sampled_chunks} chunk(s) of "
            f"{report.documents} document(s): {self.path}",
            f"  {report.counts_line()}",
        ]
        failed = sum(report.failed_chunks.values())
        if failed:
            reasons = ", ".join(f"{r} {n}" for r, n in sorted(report.failed_chunks.items()))
            lines.append(f"  {failed} chunk(s) gave no question ({reasons})")
        lines.append(
            f"  review {self.path.name} before you trust it as ground truth (the filters are "
            "heuristics): fix or delete bad questions, add real ones, then commit it with "
            f"{sidecar_path(self.path).name}"
        )
        return lines


def ensure_generated_evalset(
    settings: GenerationSettings,
    docs_folder: str | Path,
    config_dir: str | Path,
    *,
    name: str = "generated",
    progress: Progress | None = None,
    regenerate: bool = False,
) -> Path:
    """The path of :func:`generate_or_reuse_evalset`'s set (same arguments).

    Usage::

        path = ensure_generated_evalset(settings, "handbook/", Path("embedbench.yaml").parent)
    """
    return generate_or_reuse_evalset(
        settings, docs_folder, config_dir, name=name, progress=progress, regenerate=regenerate
    ).path


def generate_or_reuse_evalset(
    settings: GenerationSettings,
    docs_folder: str | Path,
    config_dir: str | Path,
    *,
    name: str = "generated",
    progress: Progress | None = None,
    regenerate: bool = False,
) -> GeneratedSet:
    """The generated eval set of ``docs_folder`` for ``evalset: {generate: ...}``: generated
    once into ``config_dir`` (``settings.output``, default ``<name>.generated.jsonl``) with a
    ``.meta.json`` sidecar holding the fingerprint of the documents and settings, then reused
    while they are unchanged. A changed corpus or setting raises :class:`StaleEvalsetError`
    naming what changed and how to regenerate: a reviewed set is never replaced silently. An
    ``output`` that leaves ``config_dir``, or a ``name`` that is not a plain file name (see
    :func:`~.settings.plain_name`), is a ConfigError: nothing is written outside it. The
    :class:`GeneratedSet` says whether this call wrote the set, with the generation's report.

    Usage::

        generated = generate_or_reuse_evalset(settings, "handbook/", Path("embedbench.yaml").parent)
        generated.path, generated.written, generated.summary_lines()
    """
    from ..data.ingest import load_documents

    config_dir = Path(config_dir)
    if settings.output is None:  # the name becomes the file's name
        plain_name(name, "ensure_generated_evalset", fix=", or set GenerationSettings.output")
    output = settings.output or f"{name}.generated.jsonl"
    target = inside(config_dir, output, "ensure_generated_evalset: output")
    documents = load_documents(docs_folder)
    fingerprint = evalset_fingerprint(documents, settings)
    reused = GeneratedSet(name, target, written=False)
    if target.exists() and not regenerate:
        _check_fresh(target, fingerprint, config_dir, name)
        return reused
    from filelock import FileLock

    # xdist workers read the configuration at once: one generates, the others wait and reuse.
    # The lock file is hidden (no loader reads it) and removed after: once the set exists, a
    # late comer that locks a fresh file finds it and reuses it.
    lock_path = target.with_name(f".{target.name}.lock")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(lock_path)):
            if target.exists() and not regenerate:
                _check_fresh(target, fingerprint, config_dir, name)
                return reused
            result = generate_evalset(documents, settings, progress=progress)
            if not result.rows:
                raise GenerationError(
                    f"{target}: no question survived generation and filtering for "
                    f"{docs_folder} ({'; '.join(result.report.summary_lines()[2:4])}); see "
                    "'Generated questions are rejected' in docs/generated-evalsets.md for what to "
                    "change"
                )
            write_evalset(target, result.rows)
            write_sidecar(target, fingerprint, result.report)
    finally:
        lock_path.unlink(missing_ok=True)
    return GeneratedSet(name, target, written=True, report=result.report)
