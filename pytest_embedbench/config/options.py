"""The plugin's run options: one table drives the command line, the ini keys, the frozen
:class:`Options` and the JSON report's configuration block.

The table is :class:`Options` itself: each field made with :func:`option` carries its flag, ini
key, help and parser, so adding an option is adding one field. The plugin registers the
options from :func:`option_specs` and builds :class:`Options` with :meth:`Options.resolve`
(command line over ini); the report shows :meth:`Options.configuration`. The spec type,
:func:`option` and the value parsers are in :mod:`.optionspec`. Usage without pytest::

    options = Options.resolve(cli={"seed": 3}.get, ini={}.get, cwd=Path.cwd())
    options.configuration()["seed"]   # 3
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.exceptions import ConfigError
from ..report.writers.tabular import CSV_FILES, INDEX_CSV
from ..retrieval.indexes.spec import parse_indexes_option
from ..retrieval.rerank.spec import parse_rerankers_option
from .optionspec import (
    PRIORITIES,
    OptionSpec,
    flag_option,
    option,
    parse_bytes,
    parse_concurrency,
    parse_int,
    parse_models_option,
    parse_non_negative_float,
    parse_non_negative_int,
    parse_positive_int,
    parse_priority,
    parse_update_mode,
    path_option,
)

if TYPE_CHECKING:
    from ..distributed.settings import RaySettings

__all__ = [
    "PRIORITIES",
    "OptionSpec",
    "Options",
    "CSV_FILES",
    "option_specs",
    "parse_columns",
    "parse_indexes_option",
    "parse_int",
    "parse_models_option",
    "parse_non_negative_float",
    "parse_positive_int",
    "parse_priority",
    "parse_update_mode",
    "shared_output_file",
]

_Lookup = Callable[[str], Any]


def parse_columns(value: str) -> tuple[str, ...]:
    """``--embedbench-columns nDCG@10,p95_ms,dimension``: the terminal table's columns, in
    order (names as ``embedbench report --columns-help`` lists them; case-insensitive)."""
    from ..report.summary.columns import column_names, resolve_column

    names = tuple(part.strip() for part in value.split(",") if part.strip())
    if not names:
        raise argparse.ArgumentTypeError(
            f"--embedbench-columns {value!r}: give comma-separated column names, e.g. "
            "'ndcg@10,p95_ms,dimension'"
        )
    for name in names:
        if resolve_column(name) is None:
            raise argparse.ArgumentTypeError(
                f"unknown column {name!r}: use a metric such as 'ndcg@10' or one of "
                f"{column_names()}"
            ) from None
    return names


@dataclass(frozen=True)
class Options:
    """The plugin's options after parsing (command line wins over ini)."""

    models: tuple[str, ...] | None = option(
        None,
        "--embedbench-models",
        "comma-separated model specs that replace every test's models, e.g. 'bm25,hf:...'",
        ini_help="comma-separated model specs that replace every test's models",
        parse=parse_models_option,
        metavar="SPECS",
    )
    indexes: tuple[str, ...] | None = option(
        None,
        "--embedbench-indexes",
        "comma-separated index specs that replace every test's index axis (each embedding "
        "model runs once per index), e.g. 'exact,faiss:hnsw(M=32,efSearch=64)'",
        ini_help="comma-separated index specs that replace every test's index axis",
        parse=parse_indexes_option,
        metavar="SPECS",
    )
    concurrency: tuple[int, ...] | None = option(  # retrieval.indexes.measure_load
        None,
        "--embedbench-concurrency",
        "send each index's queries (and each provider's query embedding, to a loopback "
        "server) from this many threads at once, one level each, and report QPS and "
        "p50/p95/p99 per level, e.g. '1,4,16'",
        ini_help="thread counts an index's queries and a provider's query embedding are sent "
        "from (e.g. 1,4,16)",
        parse=parse_concurrency,
        metavar="LEVELS",
    )
    rerankers: tuple[str, ...] | None = option(
        None,
        "--embedbench-rerankers",
        "comma-separated reranker specs that replace every test's reranking axis (each "
        "model's first stage once, then each reranker over its top depth), e.g. "
        "'none,hf-ce:/models/ce@100'",
        ini_help="comma-separated reranker specs that replace every test's reranking axis",
        parse=parse_rerankers_option,
        metavar="SPECS",
    )
    config: Path | None = path_option(
        "--embedbench-config",
        "path of embedbench.yaml",
        ini_help="path of embedbench.yaml (default: the nearest one)",
        must_exist=True,
    )
    json_path: Path | None = path_option(
        "--embedbench-json",
        "write the JSON report here",
        ini_help="write the JSON report to this path",
        report="json",
    )
    html_path: Path | None = path_option(
        "--embedbench-html",
        "write the self-contained HTML report here",
        ini_help="write the HTML report to this path",
        report="html",
    )
    csv_dir: Path | None = path_option(
        "--embedbench-csv",
        "write results.csv, queries.csv, stress.csv, cutoffs.csv, cutoff_scores.csv, "
        "gates.csv and, when a test has an index axis, indexes.csv into this folder",
        ini_help="folder of the CSV files (results, queries, stress, cutoffs, scores, gates, "
        "indexes)",
        metavar="DIR",
        report="csv",
    )
    md_path: Path | None = path_option(
        "--embedbench-md",
        "write the tables as Markdown here (a PR comment, $GITHUB_STEP_SUMMARY)",
        ini_help="write the Markdown tables to this path",
        report="md",
    )
    github_summary: Path | None = path_option(
        "--embedbench-github-summary",
        "append the Markdown job summary to this file (default: $GITHUB_STEP_SUMMARY, "
        "which GitHub Actions sets in every step)",
        ini_help="append the Markdown job summary to this path (default: $GITHUB_STEP_SUMMARY)",
    )
    no_github_summary: bool = flag_option(
        "--embedbench-no-github-summary",
        "write no GitHub job summary: not to $GITHUB_STEP_SUMMARY in GitHub Actions, nor "
        "to an ini embedbench_github_summary path",
        ini_help="write no GitHub job summary, not even in GitHub Actions",
    )
    pr_comment: Path | None = path_option(
        "--embedbench-pr-comment",
        "write a pull-request comment in Markdown here (under 65,000 characters: whole "
        "sections left out with a note when the run has more)",
        ini_help="write the pull-request comment (Markdown) to this path",
    )
    columns: tuple[str, ...] | None = option(
        None,
        "--embedbench-columns",
        "the terminal table's columns, comma-separated (metrics such as ndcg@10, or "
        "p50_ms, p95_ms, documents_per_s, added_rss_mb, dimension, index_mb, cache_mb, "
        "model_load_s, tokens_per_s, vram_peak_mb, cost_usd ...)",
        ini_help="comma-separated columns of the terminal table",
        parse=parse_columns,
        metavar="NAMES",
    )
    cache_dir: Path | None = path_option(
        "--embedbench-cache-dir",
        "embedding cache folder",
        ini_help="folder of the embedding cache",
        metavar="DIR",
    )
    no_cache: bool = flag_option(
        "--embedbench-no-cache",
        "neither read nor write the embedding cache",
        ini_help="do not read or write the embedding cache",
    )
    exit_gc: bool = flag_option(
        "--embedbench-exit-gc",
        "let Python collect every live object at exit, as without the plugin (skipped by "
        "default: 1.5-2 s once torch is loaded; see docs/caching-and-timings.md)",
        ini_help="run Python's final garbage collection at exit (skipped by default)",
    )
    ray: str | None = option(
        None,
        "--embedbench-ray",
        "embed each model's uncached documents on Ray before its index is built: 'auto', "
        "'ray://HOST:PORT' or 'local' (hf: and other local models; needs the ray extra)",
        ini_help="Ray address for document embedding: auto, ray://HOST:PORT or local",
        metavar="ADDRESS",
    )
    ray_workers: int = option(  # distributed.RaySettings.workers
        2,
        "--embedbench-ray-workers",
        "with --embedbench-ray: Ray actors embedding documents, each with its own copy of "
        "the model (default 2)",
        ini_help="Ray actors embedding documents (default 2)",
        parse=parse_positive_int,
        metavar="N",
    )
    ray_cpus_per_worker: float = option(
        1.0,
        "--embedbench-ray-cpus-per-worker",
        "with --embedbench-ray: CPUs each Ray worker reserves (default 1)",
        ini_help="CPUs each Ray worker reserves (default 1)",
        parse=parse_non_negative_float,
        metavar="N",
    )
    ray_gpus_per_worker: float = option(
        0.0,
        "--embedbench-ray-gpus-per-worker",
        "with --embedbench-ray: GPUs each Ray worker reserves, e.g. 1 or 0.5 (default 0)",
        ini_help="GPUs each Ray worker reserves (default 0)",
        parse=parse_non_negative_float,
        metavar="N",
    )
    ray_batch_size: int | None = option(
        None,
        "--embedbench-ray-batch-size",
        "with --embedbench-ray: texts per batch sent to a Ray worker (default: the "
        "model's batch_size)",
        ini_help="texts per batch sent to a Ray worker (default: the model's)",
        parse=parse_positive_int,
        metavar="N",
    )
    seed: int = option(
        0,
        "--embedbench-seed",
        "seed (default 0)",
        ini_help="seed of every random choice (bootstrap)",
        parse=parse_int,
        metavar="N",
    )
    bootstrap: int = option(
        10_000,
        "--embedbench-bootstrap",
        "bootstrap resamples per interval (default 10000)",
        parse=parse_positive_int,
        metavar="N",
    )
    thresholds: Path | None = path_option(
        "--embedbench-thresholds",
        "YAML file of thresholds",
        ini_help="YAML file of metric thresholds",
        must_exist=True,
    )
    verbosity: int = 0  # pytest's -v/-q, not an option of ours
    baseline: Path | None = path_option(
        "--embedbench-baseline",
        "baseline file (default: .embedbench/baseline.json in the rootdir given by "
        "--rootdir or the ini file, else in the folder of embedbench.yaml, else the rootdir)",
        ini_help="baseline file, relative to the ini file's folder",
    )
    update_baseline: str | None = option(  # None, "all" or "new"
        None,
        "--embedbench-update-baseline",
        "record the baseline of the tests that ran; '=new' only adds missing entries",
        parse=parse_update_mode,
        kind="optional",
        const="all",
        metavar="new",
        ini=None,
    )
    priority: str = option(
        "balanced",
        "--embedbench-priority",
        f"recommendation to select: {', '.join(PRIORITIES)} (default balanced)",
        ini_help=f"recommendation priority: {', '.join(PRIORITIES)}",
        parse=parse_priority,
        metavar="NAME",
    )
    reference: str | None = option(
        None,
        "--embedbench-reference",
        "model short name that every other model is compared with (paired Δ)",
        ini_help="model the table compares every other model with",
        metavar="MODEL",
    )
    judge: str | None = option(
        None,
        "--embedbench-judge",
        "chat model that grades the unjudged documents of each top k (openai:NAME at judge: "
        "{base_url:} of embedbench.yaml or OPENAI_BASE_URL, or an Ollama model); verdicts are "
        "kept beside the eval set and replayed",
        ini_help="chat model of the LLM judge (openai:NAME or an Ollama model)",
        metavar="MODEL",
    )
    judge_depth: int | None = option(
        None,
        "--embedbench-judge-depth",
        "how deep into each model's ranking the judge grades unjudged documents (default 10)",
        ini_help="ranks the LLM judge grades per query (default 10)",
        parse=parse_positive_int,
        metavar="K",
    )
    latency_passes: int = option(  # measure.DEFAULT_LATENCY_PASSES
        3,
        "--embedbench-latency-passes",
        "timed passes over the sampled queries (--embedbench-latency-sample); a query's "
        "latency is its median (default 3); 0 measures no latency",
        ini_help="timed passes over the sampled queries (default 3; 0: no latency)",
        parse=parse_non_negative_int,
        metavar="N",
    )
    memory_budget: int | None = option(  # evaluate.Evaluator(memory_budget=)
        None,
        "--embedbench-memory-budget",
        "bytes of corpus vectors an embedding model's exact search may hold, e.g. 2GB; "
        "beyond it the vectors are streamed from the cache in shards (same rankings)",
        ini_help="bytes of corpus vectors exact search may hold (e.g. 2GB; default: all)",
        parse=parse_bytes,
        metavar="SIZE",
    )
    latency_sample: int = option(  # measure.DEFAULT_LATENCY_SAMPLE
        50,
        "--embedbench-latency-sample",
        "queries timed for latency, a seeded sample in query order (default 50); 0 times "
        "every query; the scored rankings come from one batched pass over every query",
        ini_help="queries timed for latency (default 50, a seeded sample; 0: every query)",
        parse=parse_non_negative_int,
        metavar="N",
    )

    @classmethod
    def resolve(
        cls,
        *,
        cli: _Lookup,
        ini: _Lookup,
        cwd: Path,
        ini_base: Path | None = None,
        verbosity: int = 0,
    ) -> Options:
        """Options from the command line (``cli(dest)``: parsed, None when not given) over the
        ini file (``ini(key)``: the raw value, "" or None when not set).

        A bad ini value, a missing file named by a ``must_exist`` option, or options that
        conflict are ConfigErrors that name the option.
        """
        values: dict[str, Any] = {"verbosity": verbosity}
        for name, spec in option_specs().items():
            value = _pick(spec, cli, ini, cwd, ini_base or cwd)
            if value is not None:
                values[name] = value
        options = cls(**values)
        if options.no_cache and cli(cls.spec("cache_dir").dest) is not None:
            raise ConfigError("--embedbench-no-cache and --embedbench-cache-dir conflict")
        if options.no_cache and options.ray:
            raise ConfigError(
                "--embedbench-ray fills the embedding cache: it cannot go with "
                "--embedbench-no-cache"
            )
        options = _github_summary_switch(options, cli)
        _check_outputs_distinct(options)
        for name in [n for n in _RAY_SETTINGS if n in values and not options.ray]:
            spec = cls.spec(name)
            where = spec.flag if cli(spec.dest) is not None else f"ini option {spec.ini}"
            raise ConfigError(
                f"{where} = {values[name]!r} has no effect without --embedbench-ray (ini "
                "embedbench_ray): give the Ray address too, or leave it out"
            )
        return options

    def ray_settings(self) -> RaySettings:
        """The :class:`~.distributed.RaySettings` of ``--embedbench-ray`` and its
        ``--embedbench-ray-*`` options (only when :attr:`ray` is set)."""
        from ..distributed.settings import RaySettings

        if not self.ray:
            raise ConfigError("no Ray address: --embedbench-ray is not set")
        # each --embedbench-ray-* option is the RaySettings field of its name
        width = {name.removeprefix("ray_"): getattr(self, name) for name in _RAY_SETTINGS}
        return RaySettings(address=self.ray, **width)

    @staticmethod
    def spec(name: str) -> OptionSpec:
        """The table's entry of field ``name``."""
        return option_specs()[name]

    def configuration(self) -> dict[str, Any]:
        """The report's configuration block: every option by its report key (lists for
        tuples; paths stay paths, the report writes them as strings)."""
        out: dict[str, Any] = {}
        for name, spec in option_specs().items():
            value = getattr(self, name)
            out[spec.report or name] = list(value) if isinstance(value, tuple) else value
        return out


#: the options that shape a Ray embedding run: they need ``--embedbench-ray``
_RAY_SETTINGS = ("ray_workers", "ray_cpus_per_worker", "ray_gpus_per_worker", "ray_batch_size")


def shared_output_file(
    outputs: Iterable[tuple[str, Path | None]],
) -> tuple[str, str, Path] | None:
    """The first two of ``outputs`` (``(label, path)``; None paths skipped) that are one file:
    ``(the earlier label, the later label, the file)``; None when each has its own."""
    seen: dict[Path, str] = {}
    for label, path in outputs:
        if path is None:
            continue
        file = Path(os.path.realpath(path))  # a symlink loop is the writer's to name
        first = seen.setdefault(file, label)
        if first != label:
            return first, label, file
    return None


def _github_summary_switch(options: Options, cli: _Lookup) -> Options:
    """``--embedbench-no-github-summary`` (ini ``embedbench_no_github_summary``) against a job
    summary path: the command line wins over the ini file (the ini's path is dropped, or the
    ini's switch gives way to the command line's path); both on one level is a ConfigError."""
    if not options.no_github_summary:
        return options
    off, path = Options.spec("no_github_summary"), Options.spec("github_summary")
    off_on_cli, path_on_cli = cli(off.dest) is not None, cli(path.dest) is not None
    if off_on_cli == path_on_cli and options.github_summary is not None:
        where = (
            f"{off.flag} and {path.flag}" if off_on_cli else f"ini options {off.ini} and {path.ini}"
        )
        raise ConfigError(
            f"{where} conflict: one turns the GitHub job summary off, the other names its "
            "file; keep one"
        )
    if path_on_cli:
        return replace(options, no_github_summary=False)
    return replace(options, github_summary=None)


def _check_outputs_distinct(options: Options) -> None:
    """Two reports given one file would leave only the last one written: a ConfigError."""
    names = ("json_path", "html_path", "md_path", "github_summary", "pr_comment")
    flag = {name: Options.spec(name).flag for name in names}
    written = [(flag[name], getattr(options, name)) for name in flag]
    if options.csv_dir is not None:
        written += [("--embedbench-csv", options.csv_dir / f) for f in (*CSV_FILES, INDEX_CSV)]
    clash = shared_output_file(written)
    if clash is not None:
        first, second, path = clash
        raise ConfigError(
            f"{first} and {second} both write {path}: one would overwrite the other; give "
            "each report its own file"
        )


def option_specs() -> dict[str, OptionSpec]:
    """The table: each option field of :class:`Options` with its spec, in field order."""
    return {f.name: f.metadata["option"] for f in fields(Options) if "option" in f.metadata}


def _pick(spec: OptionSpec, cli: _Lookup, ini: _Lookup, cwd: Path, ini_base: Path) -> Any:
    """One option's value, command line first; a path is made absolute from where it was
    given."""
    value, base = cli(spec.dest), cwd
    if value is None and spec.ini is not None:
        value, base = _ini_value(spec, ini(spec.ini)), ini_base
    if value is None or value == "":
        return None
    if spec.kind == "flag":
        return bool(value)
    if spec.kind != "path":
        return value
    path = Path(value).expanduser()
    # realpath: a symlink loop is left for the writer to name (resolve() raises on one)
    path = path if path.is_absolute() else Path(os.path.realpath(base / path))
    if spec.must_exist and not path.is_file():
        raise ConfigError(f"{spec.flag} {str(path)!r}: no such file")
    return path


def _ini_value(spec: OptionSpec, raw: Any) -> Any:
    if raw in (None, "") or spec.kind == "flag":
        return raw or None
    try:
        return spec.parse(str(raw))
    except Exception as exc:
        raise ConfigError(f"ini option {spec.ini} = {raw!r}: {exc}") from None
