"""The ``embedbench`` command, for work outside a test run.

Usage::

    embedbench providers           # providers, their extras, key variables and list prices
    embedbench providers --json
    embedbench report report.json  # the comparison table of a saved JSON report
    embedbench stress needle -m bm25 --context-sizes 2k,8k   # needle.json and needle.md
    embedbench report report.json -o report.html [--priority speed] [--title T]
    embedbench report report.json --csv out/ --md summary.md
    embedbench generate-evalset --docs handbook/ --output evalset.jsonl --max-chunks 40
    embedbench generate-evalset --config embedbench.yaml --dataset handbook --regenerate
    embedbench embed --ray local --model hf:MODEL --dataset corpus/   # fill the cache on Ray
    embedbench --version
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from tabulate import tabulate

from .providers import PROVIDERS, EmbeddingProvider, provider_class
from .providers.catalogue import CATALOGUE, PRICES_AS_OF

__all__ = ["main", "providers_table"]


def providers_table() -> dict[str, Any]:
    """Every registered provider and the model catalogue, as plain data."""
    provider_class("bm25")  # loads the built-in providers and the entry points
    rows = []
    for name in sorted(PROVIDERS):
        cls = PROVIDERS[name]
        module = cls.sdk_module
        installed = True if module is None else importlib.util.find_spec(module) is not None
        embedding = issubclass(cls, EmbeddingProvider)
        rows.append(
            {
                "provider": name,
                "kind": "embedding" if embedding else "ranking",
                "extra": cls.extra,
                "installed": installed,
                "install": f"pip install 'pytest-embedbench[{cls.extra}]'" if cls.extra else None,
                "key_variables": list(getattr(cls, "key_env", ()))
                or (["AWS credential chain"] if name == "bedrock" else []),
                "hosted": bool(getattr(cls, "hosted", False)),
                "max_batch_size": getattr(cls, "max_batch_size", None) if embedding else None,
            }
        )
    models = [entry.to_dict() for _, entry in sorted(CATALOGUE.items())]
    return {"providers": rows, "models": models, "prices_as_of": PRICES_AS_OF}


def _providers(args: argparse.Namespace) -> int:
    data = providers_table()
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    print(
        tabulate(
            [
                [
                    r["provider"],
                    r["kind"],
                    r["extra"] or "-",
                    "yes" if r["installed"] else "no",
                    ", ".join(r["key_variables"]) or "-",
                    r["max_batch_size"] or "-",
                ]
                for r in data["providers"]
            ],
            headers=["provider", "kind", "extra", "installed", "key variable", "max batch"],
            disable_numparse=True,
        )
    )
    print()
    print(f"List prices in USD per million tokens, as read on {PRICES_AS_OF}:")
    print(
        tabulate(
            [
                [
                    f"{m['provider']}:{m['model']}",
                    m["dimensions"] or "-",
                    m["context"] or "-",
                    "free (local)"
                    if m["price_per_1m_tokens"] == 0
                    else (f"{m['price_per_1m_tokens']:.3f}" if m["price_per_1m_tokens"] else "-"),
                    repr(m["query_prompt"]) if m["query_prompt"] else "-",
                ]
                for m in data["models"]
            ],
            headers=["model", "dims", "context", "$ / 1M tokens", "query prompt"],
            disable_numparse=True,
        )
    )
    return 0


def _report(args: argparse.Namespace) -> int:
    from .report.terminal import render_tables

    path = Path(args.path)
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(
            f"embedbench report: {path}: no such file (write one with pytest --embedbench-json)",
            file=sys.stderr,
        )
        return 2
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"embedbench report: {path}: not a JSON report ({exc})", file=sys.stderr)
        return 2
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
        print(
            f"embedbench report: {path}: no 'tests' list; is it an --embedbench-json report?",
            file=sys.stderr,
        )
        return 2
    if args.output or args.csv or args.md:
        return _write_files(args, report)
    comparisons = report.get("comparisons") or {}
    reference = next(
        (e.get("reference") for rows in comparisons.values() for e in rows.values()), None
    )
    recommendations = report.get("recommendations") or {}
    lines = render_tables(
        report["tests"],
        verbosity=-1 if args.quiet else 0,
        comparisons=comparisons,
        reference=reference,
        recommendations=recommendations.get("datasets"),
        priority=args.priority or recommendations.get("priority") or "balanced",
        columns=args.columns,
    )
    from .report.stress import render_stress

    lines += render_stress(report.get("stress") or {})  # the stress section, when there is one
    print("\n".join(lines) if lines else f"{path}: no retrieval test results")
    return 0


def _write_files(args: argparse.Namespace, report: dict[str, Any]) -> int:
    """``-o``, ``--csv`` and ``--md``: the files the run would have written from this JSON."""
    from .report.artifacts import write_failure
    from .report.html import render_html
    from .report.tabular import render_markdown, write_csv

    status = 0
    jobs: list[tuple[str, Path, Any]] = []
    if args.output:
        html = render_html(report, priority=args.priority, title=args.title)
        jobs.append(("HTML report", Path(args.output), lambda p: _write(p, html)))
    if args.csv:
        jobs.append(("CSV", Path(args.csv), lambda p: write_csv(p, report)))
    if args.md:
        md = render_markdown(report, title=args.title)
        jobs.append(("Markdown", Path(args.md), lambda p: _write(p, md)))
    for label, path, write in jobs:
        try:
            written = write(path)
        except OSError as exc:
            print(write_failure(label, path, exc, "choose another path"), file=sys.stderr)
            status = 1
            continue
        for done in written:  # like the end of a run: every file written, by path
            print(f"{label}: {done}")
    return status


def _write(path: Path, text: str) -> list[Path]:
    from .report.json_report import atomic_write_text

    atomic_write_text(path, text)
    return [path]


def _columns(value: str) -> tuple[str, ...]:
    from .options import parse_columns

    return parse_columns(value)


def _generate(args: argparse.Namespace) -> int:
    """``embedbench generate-evalset``: exit 0 with the set written, 1 when the server, the
    model or the documents stop it (one line saying how to fix it), 2 for bad options."""
    from .exceptions import ConfigError, EmbedBenchError
    from .generate import (
        GenerationSettings,
        evalset_fingerprint,
        generate_evalset,
        write_evalset,
        write_sidecar,
    )

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
        settings = GenerationSettings.from_mapping(
            {**values, "chunking": chunking}, f"{name} options"
        )
        from .ingest import load_documents

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


def _generate_for_dataset(args: argparse.Namespace, progress: _GenerationProgress) -> int:
    from .config import read_yaml
    from .exceptions import ConfigError
    from .generate import dataset_generation, ensure_generated_evalset

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


class _GenerationProgress:
    """Chunks done, kept and rejected by reason on stderr: one line rewritten in place on a
    terminal, a line every tenth of the way otherwise (CI logs)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.shown = False
        self.last_tenth = -1

    def __call__(self, report: Any) -> None:
        if not self.enabled:
            return
        line = report.progress_line()
        if self.tty:
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
            self.shown = True
            return
        tenth = 10 * report.chunks_done // max(report.sampled_chunks, 1)
        if tenth != self.last_tenth:
            self.last_tenth = tenth
            print(line, file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr)
            self.shown = False


def _version() -> str:
    try:
        return metadata.version("pytest-embedbench")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="embedbench",
        description="pytest-embedbench: work outside a test run. Benchmarks themselves run "
        "with pytest (pytest --embedbench-json=report.json ...).",
        epilog="Run 'embedbench COMMAND --help' for a command's options.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s (pytest-embedbench) {_version()}"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    providers = sub.add_parser(
        "providers",
        help="list providers, extras, key variables and list prices",
        description="Every registered provider (extra, installed, key variables, batch limit) "
        "and the model catalogue with list prices.",
    )
    providers.add_argument("--json", action="store_true", help="print JSON")
    providers.set_defaults(func=_providers)
    report = sub.add_parser(
        "report",
        help="print the comparison table of a saved JSON report, or render it as HTML (-o), "
        "CSV and Markdown",
        description="The table pytest printed, from a report written with --embedbench-json; "
        "with -o, --csv or --md, the HTML report, CSV files or Markdown the run would have "
        "written (the same bytes: they render from the JSON alone).",
    )
    report.add_argument("path", metavar="REPORT.json", help="a report from --embedbench-json")
    report.add_argument("-q", "--quiet", action="store_true", help="the short table of -q")
    report.add_argument("-o", "--output", metavar="PATH", help="write the HTML report here")
    report.add_argument("--csv", metavar="DIR", help="write results.csv and queries.csv here")
    report.add_argument("--md", metavar="PATH", help="write the Markdown tables here")
    report.add_argument(
        "--priority",
        choices=["accuracy", "speed", "balanced", "cost"],
        help="the recommendation to mark as selected (default: the run's)",
    )
    report.add_argument("--title", help="the page title (default 'Embedding retrieval benchmark')")
    report.add_argument(
        "--columns", type=_columns, metavar="NAMES", help="the table's columns, comma-separated"
    )
    report.set_defaults(func=_report)
    _add_generate(sub)
    from .stress.cli import add_parser as add_stress

    add_stress(sub)  # embedbench stress needle|noise
    from .distributed import add_parser as add_embed

    add_embed(sub)  # embedbench embed --ray ADDRESS: fill the cache through Ray
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


def _add_generate(sub: Any) -> None:
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
        help="chunks shorter than this get no questions (default 120)",
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
        help="shorter chunks merge into a neighbour (default 80)",
    )
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
        help="with --config: replace a set whose documents or settings changed",
    )
    gen.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="progress on stderr (default on)",
    )
    gen.set_defaults(func=_generate)


if __name__ == "__main__":
    sys.exit(main())
