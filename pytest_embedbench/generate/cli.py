"""``embedbench generate-evalset``: an eval set from a documents folder (``--docs``, ``--output``)
or for a dataset of an ``embedbench.yaml`` that says ``evalset: {generate: ...}`` (``--config``,
``--dataset``), outside a test run.

Usage::

    embedbench generate-evalset --docs handbook/ --output evalset.jsonl --max-chunks 40
    embedbench generate-evalset --config embedbench.yaml --dataset handbook --regenerate
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..progressbar import StderrProgress
from .evalset import evalset_fingerprint, write_evalset, write_sidecar
from .run import ensure_generated_evalset, generate_evalset
from .settings import GenerationSettings, dataset_generation

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register ``generate-evalset`` on the ``embedbench`` command's subparsers."""
    gen = sub.add_parser(
        "generate-evalset",
        help="questions from your documents, written by a chat model (Ollama), filtered",
        description="Ask a chat model (Ollama, or an OpenAI-compatible server with "
        "--model openai:NAME --host BASE_URL) for questions about a seeded sample of the "
        "documents' chunks, filter them (no '?', too short or long, 'this passage', generic, "
        "no content words, near-duplicates) and write an eval set. The filters are heuristics: "
        "review the questions before you trust them.",
    )
    gen.add_argument("--docs", "-d", help="the documents folder (.txt .md .pdf .docx .html)")
    gen.add_argument("--output", "-o", help="the eval set to write (.jsonl)")
    _add_generation_flags(gen)
    _add_chunking_flags(gen)
    _add_judge_flags(gen)
    gen.add_argument(
        "--config",
        "-c",
        help="an embedbench.yaml whose --dataset says "
        "evalset: {generate: ...}; its settings are used",
    )
    gen.add_argument("--dataset", help="the dataset of --config to generate")
    gen.add_argument(
        "--regenerate",
        action="store_true",
        help="replace a set: with --config one whose documents or settings changed, with "
        "--output an existing file (without it, an existing --output is left alone)",
    )
    gen.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="progress on stderr (default on)",
    )
    gen.set_defaults(func=_generate)


def _add_generation_flags(gen: argparse.ArgumentParser) -> None:
    """The chat model, the sample and the heuristic filters: GenerationSettings fields."""
    gen.add_argument("--model", help="chat model: an Ollama name (default llama3.2) or openai:NAME")
    gen.add_argument(
        "--host",
        help="Ollama URL (default OLLAMA_HOST or "
        "http://127.0.0.1:11434), or the OpenAI-compatible base URL",
    )
    gen.add_argument("--questions-per-chunk", type=int, help="1 to 5 (default 1)")
    gen.add_argument("--max-chunks", type=int, help="a seeded sample of this many chunks")
    gen.add_argument("--seed", type=int, help="sampling and generation seed (default 42)")
    gen.add_argument(
        "--min-chunk-chars",
        type=int,
        help="chunks shorter than this get no questions (default 120; --chunk-min-chars is "
        "the chunker's own merge floor)",
    )
    gen.add_argument("--min-question-words", type=int, help="default 5")
    gen.add_argument("--max-question-words", type=int, help="default 40")
    gen.add_argument(
        "--dedupe-threshold",
        type=float,
        help="0.5 to 1.0: similarity at which a question is a near-duplicate (default 0.85)",
    )
    gen.add_argument(
        "--max-generation-attempts",
        type=int,
        help="tries per chunk when the answer is not the JSON asked for (default 2)",
    )
    gen.add_argument("--request-timeout-s", type=float, help="per request (default 180)")


def _add_chunking_flags(gen: argparse.ArgumentParser) -> None:
    """How the documents are chunked before sampling (the ``chunking`` settings)."""
    gen.add_argument(
        "--chunking",
        choices=["fixed", "sentence", "recursive"],
        help="chunking strategy (default recursive)",
    )
    gen.add_argument("--chunk-size", type=int, help="characters (default 800)")
    gen.add_argument("--chunk-overlap", type=int, help="characters (default 120)")
    gen.add_argument(
        "--chunk-min-chars",
        dest="min_chunk_chars_in_chunking",
        type=int,
        help="chunking: shorter chunks merge into a neighbour (default 80; --min-chunk-chars "
        "decides which chunks get questions)",
    )


def _add_judge_flags(gen: argparse.ArgumentParser) -> None:
    """The embedding model that judges answerability and round trip, and its thresholds."""
    gen.add_argument(
        "--embedding-model",
        help="a model spec (e.g. hf:sentence-transformers/"
        "all-MiniLM-L6-v2) that judges answerability and round trip",
    )
    gen.add_argument(
        "--min-similarity",
        type=float,
        help="answerability floor: question-to-chunk cosine (default 0.3)",
    )
    gen.add_argument(
        "--round-trip-k", type=int, help="the source document must be in this top k (default 5)"
    )


def _generate(args: argparse.Namespace) -> int:
    """``embedbench generate-evalset``: exit 0 with the set written, 1 when the server, the
    model or the documents stop it (one line saying how to fix it), 2 for bad options."""
    from ..exceptions import ConfigError, EmbedBenchError

    name = "embedbench generate-evalset"
    progress = _GenerationProgress(enabled=args.progress)
    try:
        if args.config:
            return _generate_for_dataset(args, progress)
        if not args.docs or not args.output:
            print(
                f"{name}: give --docs DIR and --output FILE (or --config and --dataset)",
                file=sys.stderr,
            )
            return 2
        if Path(args.output).exists() and not args.regenerate:
            print(
                f"{name}: {args.output} exists (a set you may have reviewed or edited); pass "
                "--regenerate to replace it, or choose another --output",
                file=sys.stderr,
            )
            return 2
        settings = _settings_from_flags(args, name)
        from ..ingest import load_documents

        documents = load_documents(args.docs)
        result = generate_evalset(documents, settings, progress=progress)
        progress.done()
        for line in result.report.summary_lines():
            print(line, file=sys.stderr)
        if not result.rows:
            print(
                f"{name}: no question was kept, so {args.output} was not written; see "
                "'Generated questions are rejected' in the README",
                file=sys.stderr,
            )
            return 1
        path = write_evalset(args.output, result.rows)
        write_sidecar(path, evalset_fingerprint(documents, settings), result.report)
    except ConfigError as exc:
        progress.done()
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    except EmbedBenchError as exc:
        progress.done()
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
    print(
        f"wrote {len(result.rows)} question(s) to {path}: review them before you trust them",
        file=sys.stderr,
    )
    return 0


#: generate-evalset flags that are GenerationSettings fields of the same name
_GENERATION_FLAGS = frozenset(
    {
        "model",
        "host",
        "questions_per_chunk",
        "max_chunks",
        "min_chunk_chars",
        "min_question_words",
        "max_question_words",
        "dedupe_threshold",
        "max_generation_attempts",
        "request_timeout_s",
        "seed",
        "embedding_model",
        "min_similarity",
        "round_trip_k",
    }
)


def _settings_from_flags(args: argparse.Namespace, name: str) -> GenerationSettings:
    """The GenerationSettings the generate-evalset flags give (a ConfigError names the bad one)."""
    chunking = {
        key: value
        for key, value in (
            ("strategy", args.chunking),
            ("size", args.chunk_size),
            ("overlap", args.chunk_overlap),
            ("min_chunk_chars", args.min_chunk_chars_in_chunking),
        )
        if value is not None
    }
    values = {
        key: value
        for key, value in vars(args).items()
        if key in _GENERATION_FLAGS and value is not None
    }
    return GenerationSettings.from_mapping({**values, "chunking": chunking}, "flags")


def _generate_for_dataset(args: argparse.Namespace, progress: _GenerationProgress) -> int:
    from ..config import read_yaml
    from ..exceptions import ConfigError

    config = Path(args.config)
    raw = read_yaml(config, "config file")
    datasets = raw.get("datasets") if isinstance(raw, dict) else None
    if not args.dataset or not isinstance(datasets, dict) or args.dataset not in datasets:
        known = sorted(datasets) if isinstance(datasets, dict) else []
        raise ConfigError(f"{config}: --dataset {args.dataset!r} is not one of {known}")
    settings, docs = dataset_generation(
        datasets[args.dataset],
        name=args.dataset,
        where=f"{config}: datasets.{args.dataset}",
        base=config.parent,
    )
    path = ensure_generated_evalset(
        settings,
        docs,
        config.parent,
        name=args.dataset,
        progress=progress,
        regenerate=args.regenerate,
    )
    progress.done()
    print(f"{path}: up to date; review the questions before you trust them", file=sys.stderr)
    return 0


class _GenerationProgress(StderrProgress):
    """Chunks done, kept and rejected by reason on stderr
    (:class:`~pytest_embedbench.progressbar.StderrProgress`)."""

    def __call__(self, report: Any) -> None:
        if not self.enabled:
            return
        self.show(report.progress_line(), report.chunks_done, report.sampled_chunks)
