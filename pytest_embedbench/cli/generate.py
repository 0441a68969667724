"""``embedbench generate-evalset``: an eval set from a documents folder (``--docs``, ``--output``)
or for a dataset of an ``embedbench.yaml`` that says ``evalset: {generate: ...}`` (``--config``,
``--dataset``), outside a test run.

Usage::

    embedbench generate-evalset --docs handbook/ --output evalset.jsonl --max-chunks 40
    embedbench generate-evalset --config embedbench.yaml --dataset handbook --regenerate
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ..core.progress import StderrProgress
from ..core.text import print_inert
from ..generate.evalset import evalset_fingerprint, sidecar_path, write_evalset, write_sidecar
from ..generate.run import ensure_generated_evalset, generate_evalset
from ..generate.settings import GenerationSettings, dataset_generation

__all__ = ["add_arguments", "run"]

#: the command, its line in embedbench --help, and its description
NAME = "generate-evalset"
HELP = "questions from your documents, written by a chat model (Ollama), filtered"
DESCRIPTION = (
    "Ask a chat model (Ollama, or an OpenAI-compatible server with --model openai:NAME --host "
    "BASE_URL) for questions about a seeded sample of the documents' chunks, filter them (no "
    "'?', too short or long, 'this passage', generic, no content words, with --embedding-model "
    "answerability, round trip and margin, near-duplicates across the set), keep "
    "--questions-per-chunk of what passed, and write an eval set. The filters are heuristics: "
    "review the questions before you trust them."
)


def add_arguments(gen: argparse.ArgumentParser) -> None:
    """The options of ``embedbench generate-evalset``."""
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
        "all-MiniLM-L6-v2) that judges answerability, round trip and margin",
    )
    gen.add_argument(
        "--min-similarity",
        type=float,
        help="answerability floor: question-to-chunk cosine (default 0.3)",
    )
    gen.add_argument(
        "--round-trip-k", type=int, help="the source document must be in this top k (default 5)"
    )
    gen.add_argument(
        "--min-margin",
        type=_margin,
        help="how far the source document must score above every other document in the "
        "round trip, in the judge's similarity (default 0.02; off: no margin): a generic "
        "question several documents answer does not",
    )


def _margin(text: str) -> float | str:
    """``--min-margin``: a number, or ``off`` (kept as is: :func:`_settings_from_flags`)."""
    if text.strip().lower() in ("off", "none", "null"):
        return "off"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number: give a similarity margin such as 0.02, or off"
        ) from None


def run(args: argparse.Namespace) -> int:
    """``embedbench generate-evalset``: exit 0 with the set written, 1 when the server, the
    model or the documents stop it (one line saying how to fix it), 2 for bad options, and
    :data:`~pytest_embedbench.report.artifacts.EXIT_ARTIFACT_FAILED` (6) when the set cannot be
    written (a read-only or full folder: the one "NOT written ... Fix:" line of a run's files)."""
    from ..core.exceptions import ConfigError, EmbedBenchError

    progress = _GenerationProgress(enabled=args.progress)
    try:
        if args.config:
            return _generate_for_dataset(args, progress)
        return _generate_from_docs(args, progress)
    except ConfigError as exc:
        progress.done()
        print_inert(f"{_NAME}: {exc}", file=sys.stderr)
        return 2
    except EmbedBenchError as exc:
        progress.done()
        print_inert(f"{_NAME}: {exc}", file=sys.stderr)
        return 1


_NAME = "embedbench generate-evalset"


def _generate_from_docs(args: argparse.Namespace, progress: _GenerationProgress) -> int:
    """``--docs DIR --output FILE``: the set generated from a folder, written to a file."""
    if not args.docs or not args.output:
        print_inert(
            f"{_NAME}: give --docs DIR and --output FILE (or --config and --dataset)",
            file=sys.stderr,
        )
        return 2
    output = Path(args.output)
    problem = _path_problem(Path(args.docs), output)
    if problem is not None:
        print_inert(f"{_NAME}: {problem}", file=sys.stderr)
        return 2
    if output.exists() and not args.regenerate:
        print_inert(
            f"{_NAME}: {args.output} exists (a set you may have reviewed or edited); pass "
            "--regenerate to replace it, or choose another --output",
            file=sys.stderr,
        )
        return 2
    settings = _settings_from_flags(args)
    fix = "choose another --output"
    refused = _unwritable(output)  # before the chat model spends minutes on questions
    if refused is not None:
        return _not_written("eval set", output, refused, fix)
    from ..data.ingest import load_documents

    documents = load_documents(args.docs)
    result = generate_evalset(documents, settings, progress=progress)
    progress.done()
    for line in result.report.summary_lines():
        print_inert(line, file=sys.stderr)
    if result.report.failed_chunks.get("request_failed"):
        print_inert(
            f"  (a chunk whose requests timed out may need a longer --request-timeout-s than "
            f"{settings.request_timeout_s:g} s)",
            file=sys.stderr,
        )
    if not result.rows:
        print_inert(
            f"{_NAME}: no question was kept, so {args.output} was not written; see "
            "'Generated questions are rejected' in docs/generated-evalsets.md",
            file=sys.stderr,
        )
        return 1
    try:
        path = write_evalset(output, result.rows)
    except OSError as exc:
        return _not_written("eval set", output, exc, fix)
    try:
        write_sidecar(path, evalset_fingerprint(documents, settings), result.report)
    except OSError as exc:
        print_inert(f"wrote {len(result.rows)} question(s) to {path}", file=sys.stderr)
        return _not_written("fingerprint file", sidecar_path(path), exc, fix)
    print_inert(
        f"wrote {len(result.rows)} question(s) to {path}: review them before you trust them",
        file=sys.stderr,
    )
    return 0


def _path_problem(docs: Path, output: Path) -> str | None:
    """Why ``--docs`` or ``--output`` cannot be used as given (a bad option), or None."""
    if not docs.exists():
        return f"--docs {docs}: no such folder; give the folder that holds the documents"
    if not docs.is_dir():
        return f"--docs {docs}: is a file, not a folder; give the folder that holds it"
    if output.is_dir():
        return f"--output {output}: is a folder; give a file path (e.g. {output / 'evalset.jsonl'})"
    return None


def _unwritable(path: Path) -> OSError | None:
    """Why no file can be made where ``path`` goes (its nearest existing folder), or None.
    Nothing is left behind: the probe is an unnamed temporary file."""
    import tempfile

    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:  # its own filename would name the probe, not the set
        return OSError(exc.errno, exc.strerror)
    return None


def _not_written(what: str, path: Path, exc: OSError, fix: str) -> int:
    """The one line of a file a run could not write (its OS reason and the fix); exit 6."""
    from ..report.artifacts import EXIT_ARTIFACT_FAILED, write_failure

    if exc.filename is not None and Path(str(exc.filename)).parent == path.parent:
        exc = OSError(exc.errno, exc.strerror)  # a temporary file beside it: name the path
    print_inert(write_failure(what, path, exc, fix), file=sys.stderr)
    return EXIT_ARTIFACT_FAILED


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
        "min_margin",
    }
)


def _settings_from_flags(args: argparse.Namespace) -> GenerationSettings:
    """The GenerationSettings the generate-evalset flags give; a ConfigError names the flag
    the user typed (``--chunk-size 0 must be ...``), not the settings key behind it."""
    from ..core.exceptions import ConfigError

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
    if values.get("min_margin") == "off":
        values["min_margin"] = None
    try:
        return GenerationSettings.from_mapping({**values, "chunking": chunking}, _WHERE)
    except ConfigError as exc:
        raise ConfigError(_as_flags(str(exc))) from None


_WHERE = "<flags>"  # starts every message of the settings' checks; replaced by the flag

#: the flags of the chunking keys, as their messages name them (``chunking.size``, ``size``)
_CHUNKING_FLAGS = {
    "strategy": "--chunking",
    "size": "--chunk-size",
    "overlap": "--chunk-overlap",
    "min_chunk_chars": "--chunk-min-chars",
}


def _as_flags(message: str) -> str:
    """A settings message in the words of the command line: each key the flag that sets it.

    ``<flags>: questions_per_chunk 9 must be ...`` -> ``--questions-per-chunk 9 must be ...``;
    ``<flags>: chunking.size: 0 must be ..., e.g. size: 800`` -> ``--chunk-size 0 must be ...,
    e.g. --chunk-size 800``.
    """
    text = message.removeprefix(f"{_WHERE}: ")
    if text.startswith("chunking."):  # a chunking key, maybe named again bare in the message
        text = text.removeprefix("chunking.")
        for key, flag in _CHUNKING_FLAGS.items():
            text = re.sub(rf"(?<![\w-]){key}\b:?", flag, text)
        return text
    for key in _GENERATION_FLAGS:  # every key with an underscore is a key, wherever it is
        flag = "--" + key.replace("_", "-")
        if "_" in key:
            text = re.sub(rf"(?<![\w-]){key}\b", flag, text)
        elif text.startswith(f"{key} "):  # model, host, seed: only as the subject
            text = flag + text[len(key) :]
    text = re.sub(r"between (\S+) and inf\b", r"at least \1", text)
    text = text.replace("with host set to the server's base_url", "with --host its base URL")
    text = text.replace("or null to turn the margin off", "or off")
    return text.replace(
        ", or null for every eligible chunk", " (leave it out for every eligible chunk)"
    )


def _generate_for_dataset(args: argparse.Namespace, progress: _GenerationProgress) -> int:
    from ..core.exceptions import ConfigError, EmbedBenchError
    from ..core.yamlfile import read_yaml

    config = Path(args.config)
    raw = read_yaml(config, "config file", ConfigError)
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
    target = config.parent / (settings.output or f"{args.dataset}.generated.jsonl")
    fix = (
        f"give datasets.{args.dataset}.evalset.generate in {config} an output: in a folder "
        "you can write to"
    )
    if args.regenerate or not target.exists():
        refused = _unwritable(target)  # before the chat model spends minutes on questions
        if refused is not None:
            return _not_written("eval set", target, refused, fix)
    try:
        path = ensure_generated_evalset(
            settings,
            docs,
            config.parent,
            name=args.dataset,
            progress=progress,
            regenerate=args.regenerate,
        )
    except EmbedBenchError:
        raise  # a CacheError is an OSError too: the judge's, not the set's
    except OSError as exc:
        progress.done()
        return _not_written("eval set", target, exc, fix)
    progress.done()
    print_inert(f"{path}: up to date; review the questions before you trust them", file=sys.stderr)
    return 0


class _GenerationProgress(StderrProgress):
    """Chunks done, kept and rejected by reason on stderr
    (:class:`~pytest_embedbench.progressbar.StderrProgress`)."""

    def __call__(self, report: Any) -> None:
        if not self.enabled:
            return
        self.show(report.progress_line(), report.chunks_done, report.sampled_chunks)
