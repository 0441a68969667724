"""The ``embedbench`` command, for work outside a test run.

Usage::

    embedbench providers           # providers, their extras, key variables and list prices
    embedbench providers --json
    embedbench report report.json  # the comparison table of a saved JSON report
    embedbench stress needle -m bm25 --context-sizes 2k,8k   # needle.json and needle.md
    embedbench report report.json -o report.html [--priority speed] [--title T]
    embedbench report report.json --csv out/ --md summary.md
    embedbench report report.json --github-summary "$GITHUB_STEP_SUMMARY" --pr-comment c.md
    embedbench generate-evalset --docs handbook/ --output evalset.jsonl --max-chunks 40
    embedbench generate-evalset --config embedbench.yaml --dataset handbook --regenerate
    embedbench embed --ray local --model hf:MODEL --dataset corpus/   # fill the cache on Ray
    embedbench --version
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from tabulate import tabulate

from ..models.providers import PROVIDERS, EmbeddingProvider, provider_class
from ..models.providers.catalogue import CATALOGUE, PRICES_AS_OF

__all__ = ["main", "providers_table", "run_artifacts"]


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
    from ..core.exceptions import RecordError
    from ..core.text import inert
    from ..report.summary.run import Summary
    from ..report.writers.terminal import render_summary

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
    # the summary the run formatted (or, for an older report, one built from its sections)
    try:
        summary = Summary.from_json(report)
    except RecordError as exc:
        print(
            f"embedbench report: {path}: {inert(str(exc))}; is it an --embedbench-json report? "
            "(write a fresh one with pytest --embedbench-json)",
            file=sys.stderr,
        )
        return 2
    if args.priority:
        summary = dataclasses.replace(summary, priority=args.priority)
    if args.output or args.csv or args.md or args.github_summary or args.pr_comment:
        return _write_files(args, summary, report)
    lines = render_summary(summary, verbosity=-1 if args.quiet else 0, columns=args.columns)
    lines += [inert(n) for n in summary.notices]  # what the run printed under its tables
    print("\n".join(lines) if lines else f"{path}: no retrieval test results")
    return 0


def _write_files(args: argparse.Namespace, summary: Any, report: dict[str, Any]) -> int:
    """``-o``, ``--csv``, ``--md``, ``--github-summary`` and ``--pr-comment``: the files the
    run would have written from this JSON."""
    from ..report.artifacts import write_ci_reports, write_failure
    from ..report.writers.html import render_html
    from ..report.writers.markdown import render_markdown
    from ..report.writers.tabular import write_csv

    clash = _clashing_output(args)
    if clash is not None:
        print(f"embedbench report: {clash}; choose another path", file=sys.stderr)
        return 2
    status = 0
    jobs: list[tuple[str, Path, Any]] = []
    if args.output:
        html = render_html(summary, context=report, title=args.title)
        jobs.append(("HTML report", Path(args.output), lambda p: _write(p, html)))
    if args.csv:
        jobs.append(("CSV", Path(args.csv), lambda p: write_csv(p, summary)))
    if args.md:
        md = render_markdown(summary, context=report, title=args.title)
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
    if args.github_summary or args.pr_comment:
        from ..report.writers.ci import github_run_url

        # as the run wrote them: listing the files the run wrote (its configuration names
        # them), relative to the folder this runs in, and the workflow run's page
        done, failures = write_ci_reports(
            summary,
            github_summary=Path(args.github_summary) if args.github_summary else None,
            pr_comment=Path(args.pr_comment) if args.pr_comment else None,
            artifacts=run_artifacts(report),
            run_url=github_run_url(os.environ),
            base=Path.cwd(),
            title=args.title,
        )
        for label, path in done:
            print(f"{label}: {path}")
        for failure in failures:
            print(failure, file=sys.stderr)
        status = 1 if failures else status
    return status


def run_artifacts(report: Mapping[str, Any]) -> list[tuple[str, Path]]:
    """The files a run wrote before its GitHub job summary and PR comment, which list them:
    ``(label, path)`` in the run's order (the JSON report, the HTML report, each CSV file, the
    Markdown), from the report's configuration block (the paths the run was given)."""
    from ..config.options import CSV_FILES

    config = report.get("configuration")
    config = config if isinstance(config, Mapping) else {}

    def path(key: str) -> Path | None:
        value = config.get(key)
        return Path(value) if isinstance(value, str) and value else None

    found: list[tuple[str, Path | None]] = [
        ("JSON report", path("json")),
        ("HTML report", path("html")),
    ]
    folder = path("csv")
    found += [("CSV", folder / name) for name in CSV_FILES] if folder is not None else []
    found.append(("Markdown", path("md")))
    return [(label, p) for label, p in found if p is not None]


def _clashing_output(args: argparse.Namespace) -> str | None:
    """Why an output of ``embedbench report`` would overwrite the report it reads, or another
    of its outputs (None when each has its own file)."""
    from ..config.options import CSV_FILES, shared_output_file

    targets = [("-o", args.output), ("--md", args.md)]
    targets += [("--github-summary", args.github_summary), ("--pr-comment", args.pr_comment)]
    if args.csv:
        targets += [("--csv", str(Path(args.csv) / f)) for f in CSV_FILES]
    outputs = [(f"the report it reads ({args.path})", Path(args.path))]
    outputs += [(f"{flag} {target}", Path(target)) for flag, target in targets if target]
    clash = shared_output_file(outputs)
    if clash is None:
        return None
    first, second, _ = clash
    return f"{second} is also {first}: writing it would overwrite that file"


def _write(path: Path, text: str) -> list[Path]:
    from ..core.io import atomic_write_text

    atomic_write_text(path, text)
    return [path]


def _columns(value: str) -> tuple[str, ...]:
    from ..config.options import parse_columns

    return parse_columns(value)


def _version() -> str:
    try:
        return metadata.version("pytest-embedbench")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def add_command(sub: Any, command: ModuleType) -> argparse.ArgumentParser:
    """Register the command a module of this folder defines (its ``NAME``, ``HELP``,
    ``DESCRIPTION``, ``add_arguments`` and ``run``) on the ``embedbench`` subparsers."""
    parser = sub.add_parser(command.NAME, help=command.HELP, description=command.DESCRIPTION)
    command.add_arguments(parser)
    parser.set_defaults(func=command.run)
    return parser


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
        "CSV, Markdown, a GitHub job summary or a PR comment",
        description="The table pytest printed, from a report written with --embedbench-json; "
        "with -o, --csv, --md, --github-summary or --pr-comment, the HTML report, CSV files, "
        "Markdown, job summary or comment the run would have written (the same bytes: they "
        "render from the JSON alone; the CI texts list the files the run wrote, relative to "
        "the current folder, and the workflow run of the GITHUB_* variables).",
    )
    report.add_argument("path", metavar="REPORT.json", help="a report from --embedbench-json")
    report.add_argument("-q", "--quiet", action="store_true", help="the short table of -q")
    report.add_argument("-o", "--output", metavar="PATH", help="write the HTML report here")
    report.add_argument(
        "--csv",
        metavar="DIR",
        help="write results.csv, queries.csv, stress.csv, cutoffs.csv, cutoff_scores.csv and "
        "gates.csv here",
    )
    report.add_argument("--md", metavar="PATH", help="write the Markdown tables here")
    report.add_argument(
        "--github-summary",
        metavar="PATH",
        help="append the GitHub job summary the run wrote to this file (e.g. $GITHUB_STEP_SUMMARY)",
    )
    report.add_argument(
        "--pr-comment", metavar="PATH", help="write the pull-request comment the run wrote here"
    )
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
    from . import embed, generate, stress

    # generate-evalset; stress needle|noise|chunk-size; embed --ray ADDRESS (the cache on Ray)
    for command in (generate, stress, embed):
        add_command(sub, command)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
