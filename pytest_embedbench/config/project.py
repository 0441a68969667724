"""The ``embedbench.yaml`` file (and the run options, re-exported).

The run options (command line and ini) are the frozen :class:`~.options.Options`, defined with
their flags and ini keys in :mod:`~pytest_embedbench.config.options`. ``embedbench.yaml`` names
datasets, default models, provider options and thresholds::

    datasets:
      support: {path: support}                 # relative to this file
      manuals:                                 # a documents folder and its eval set, chunked
        path: manuals/                         # .txt .md .pdf .docx .html, read by ingest.py
        evalset: manuals-evalset.jsonl
        chunking: {strategy: recursive, size: 512, unit: tokens, overlap: 64,
                   min_chunk_chars: 80}        # tokenizer: the model's own unless named
        extensions: [.pdf, .docx]              # only these (default: every supported type)
      scifact:
        path: ../../shared/data/scifact
        split: test
        subset: {n_queries: 50, n_distractors: 1000, seed: 0}
    models:
      - hf:sentence-transformers/all-MiniLM-L6-v2
      - bm25
    providers:                                 # options by provider or by model short name
      hf: {batch_size: 64}
      bm25: {k1: 1.2}
    k: [1, 5, 10, 100]                         # the cut-offs computed (see below)
    thresholds:
      defaults: {ndcg@10: ">= 0.5"}
    gate:                                      # the baseline gate (see baseline.py)
      metrics: [ndcg@10, recall@100]
      tolerance: 0.01                          # or "2%" of the baseline value
    reference: bm25                            # the table shows each model's paired Δ to it
    plugins: [my_providers.py]                 # files or modules that register providers

Unknown keys and bad values are errors that name the file, the key and the fix.

``chunking`` (see :func:`parse_chunking`) makes a dataset chunked: chunks are retrieved and
documents scored by their best chunk (:mod:`~pytest_embedbench.docscore`); the marker's
``chunking=`` overrides it key by key, and ``chunking=None`` turns it off for that test.

``k`` means the same in ``embedbench.yaml``, the marker (``k=``) and ``embedbench.evaluate``, and
one function checks it (:func:`~pytest_embedbench.metrics.parse_cutoffs`): the run computes
exactly the cut-offs given (``k: 5`` is ``[5]``); ``k: []`` is an error; without ``k`` they are
``[1, 5, 10, 100]``. The default gate metrics (nDCG@10, Recall@100) apply where the run computes
them; a gated or thresholded metric named explicitly that it does not compute is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.exceptions import (
    ConfigError,
    DatasetError,
    MetricError,
    UnknownProviderError,
    did_you_mean,
    unknown_hint,
)
from ..core.names import check_keys
from ..core.yamlfile import read_yaml
from ..data.chunking import ChunkingSettings
from ..data.datasets import DOCUMENT_SUFFIXES, check_language
from ..evaluation.metrics import parse_cutoffs, parse_metric
from ..models.providers.spec import ModelSpec, split_hybrid
from ..retrieval.indexes import IndexSpec, check_engine_settings, named_indexes
from ..retrieval.rerank import RerankerSpec, parse_rerankers
from .options import PRIORITIES, Options

__all__ = [
    "CONFIG_NAME",
    "PRIORITIES",
    "DatasetEntry",
    "Options",
    "ProjectConfig",
    "find_config",
    "load_config",
    "parse_chunking",
    "parse_extensions",
]

CONFIG_NAME = "embedbench.yaml"
_TOP_KEYS = {
    "datasets",
    "models",
    "providers",
    "k",
    "thresholds",
    "gate",
    "reference",
    "plugins",
    "paraphrase",
    "indexes",
    "index_engines",
    "judge",
    "rerankers",
}
_DATASET_KEYS = {
    "path",
    "split",
    "docs",
    "subset",
    "name",
    "evalset",
    "chunking",
    "extensions",
    "languages",
}
#: the keys of one language of a dataset's ``languages`` (the whole dataset's subset,
#: chunking and name apply to the merged dataset)
_LANGUAGE_KEYS = {"path", "split", "docs", "evalset", "extensions"}
_SUBSET_KEYS = {"n_queries", "n_distractors", "seed"}
#: the least value of each subset key (numpy's generators take no negative seed)
_SUBSET_LEAST = {"n_queries": 1, "n_distractors": 0, "seed": 0}
_SUBSET_MEANING = {
    "n_queries": "the judged queries kept",
    "n_distractors": "the unjudged documents kept beside them",
    "seed": "the draw's seed",
}


@dataclass(frozen=True)
class DatasetEntry:
    """A dataset named in ``embedbench.yaml``."""

    name: str
    path: Path
    split: str = "test"
    docs: Path | None = None
    subset: Mapping[str, int] | None = None
    #: how the documents are chunked (None: embedded whole)
    chunking: ChunkingSettings | None = None
    #: the document types read from the documents folder (None: every supported type)
    extensions: tuple[str, ...] | None = None
    #: where it is configured (``embedbench.yaml: datasets.NAME``); None for a marker's path
    origin: str | None = field(default=None, compare=False)
    #: a dataset in several languages: each language's own dataset (``path`` is then the
    #: folder of embedbench.yaml); each language's queries search only its own documents
    languages: Mapping[str, DatasetEntry] | None = None


@dataclass(frozen=True)
class ProjectConfig:
    """The parsed ``embedbench.yaml`` (empty when there is none)."""

    path: Path | None = None
    datasets: Mapping[str, DatasetEntry] = field(default_factory=dict)
    models: tuple[ModelSpec, ...] = ()
    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    k: tuple[int, ...] | None = None
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    gate: Mapping[str, Any] = field(default_factory=dict)
    reference: str | None = None
    #: the index axis (``indexes:``): each embedding model runs once per index
    indexes: tuple[IndexSpec, ...] = ()
    #: the names ``indexes:`` gives its specs (a mapping, or ``name=spec``), by spec
    index_names: Mapping[str, str] = field(default_factory=dict)
    #: ``index_engines:``: engine name -> where it runs (pgvector's ``dsn`` or ``dsn_env``)
    index_engines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the reranking axis (``rerankers:``): each model's first stage, then each reranker
    rerankers: tuple[RerankerSpec, ...] = ()
    #: the file's content as written (the JSON report keeps it, secrets redacted)
    raw: Mapping[str, Any] = field(default_factory=dict)
    #: what reading this file generated (``evalset: {generate: ...}``): the file written, the
    #: counts kept and rejected by reason, the reminder to review it; empty when reused
    generated: tuple[str, ...] = ()
    #: the chat model of ``noise:paraphrase`` points (``paraphrase:``, the generator's
    #: settings: a GenerationSettings), or None
    paraphrase: Any = None
    #: the LLM judge (``judge:``, a :class:`~pytest_embedbench.generate.judge.JudgeSettings`),
    #: or None
    judge: Any = None

    def apply_provider_options(self, spec: ModelSpec) -> ModelSpec:
        """``spec`` with the configured options for its provider and its short name merged in
        (the spec's own options win). A hybrid's legs take their own providers' options too
        (``providers: {bm25: {language: zh}}`` segments the lexical leg of ``hybrid:A+bm25``
        as it does plain ``bm25``), under the hybrid's ``left``/``right`` options, which win."""
        merged: dict[str, Any] = {}
        merged.update(self.providers.get(spec.provider, {}))
        merged.update(self.providers.get(spec.short_name, {}))
        merged.update(spec.options)
        if spec.provider == "hybrid":
            for side, leg in zip(("left", "right"), split_hybrid(spec.model), strict=True):
                own = self.apply_provider_options(ModelSpec(leg)).options
                given = merged.get(side)
                if own and (given is None or isinstance(given, Mapping)):
                    merged[side] = {**own, **dict(given or {})}
        if merged == spec.options:
            return spec
        return ModelSpec(spec.spec, spec.name, **merged)


def find_config(start: Path, rootdir: Path) -> Path | None:
    """The nearest ``embedbench.yaml`` from ``start`` up to ``rootdir`` (inclusive)."""
    start = start.resolve()
    root = rootdir.resolve()
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
        if folder == root:
            break
    return None


def _fail(path: Path, where: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {where}: {message}")


def load_config(path: Path) -> ProjectConfig:
    """Parse and check an ``embedbench.yaml``."""
    raw = read_yaml(path, "config file", ConfigError)
    if raw is None:
        return ProjectConfig(path=path)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top, got {type(raw).__name__}")
    check_keys(raw, _TOP_KEYS, f"{path}: unknown key(s)", "allowed:")
    base = path.parent
    load_plugins(path, raw.get("plugins") or [])
    generated: list[str] = []
    datasets = _parse_datasets(
        path, base, _generated_evalsets(path, base, raw.get("datasets"), generated)
    )
    models = _parse_models(path, raw.get("models") or [])
    providers = raw.get("providers") or {}
    if not isinstance(providers, Mapping) or not all(
        isinstance(v, Mapping) for v in providers.values()
    ):
        raise _fail(path, "providers", "expected a mapping of provider or model name to options")
    k = raw.get("k")
    k = None if k is None else parse_cutoffs(k, f"{path}: k")
    thresholds = raw.get("thresholds") or {}
    if not isinstance(thresholds, Mapping):
        raise _fail(path, "thresholds", "expected a mapping (see the thresholds file format)")
    gate = raw.get("gate") or {}
    if not isinstance(gate, Mapping):
        raise _fail(
            path,
            "gate",
            f"{gate!r} is not a mapping; write e.g. gate: {{metrics: [ndcg@10, recall@100], "
            "tolerance: 0.01}} (keys: metrics, tolerance, latency_p95_pct, models, tests)",
        )
    _check_gate_metric_names(path, gate)
    reference = raw.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise _fail(path, "reference", f"{reference!r} must be a model short name, e.g. bm25")
    named = named_indexes(raw.get("indexes"), f"{path}: indexes")
    engines = check_engine_settings(raw.get("index_engines"), f"{path}: index_engines")
    paraphrase = None
    if raw.get("paraphrase") is not None:
        from ..generate.paraphrase import paraphrase_settings

        paraphrase = paraphrase_settings(raw["paraphrase"], f"{path}: paraphrase")
    judge = None
    if raw.get("judge") is not None:
        from ..generate.judge import judge_settings

        judge = judge_settings(raw["judge"], f"{path}: judge")
    return ProjectConfig(
        path=path,
        paraphrase=paraphrase,
        judge=judge,
        datasets=datasets,
        models=models,
        providers={str(name): dict(opts) for name, opts in providers.items()},
        k=k,
        thresholds=dict(thresholds),
        gate=dict(gate),
        reference=reference,
        indexes=tuple(spec for _, spec in named),
        index_names={spec.spec: name for name, spec in named if name is not None},
        index_engines=engines,
        rerankers=parse_rerankers(raw.get("rerankers"), f"{path}: rerankers"),
        raw=dict(raw),
        generated=tuple(generated),
    )


def _generated_evalsets(path: Path, base: Path, raw: Any, said: list[str]) -> Any:
    """Issue 13's hook: a dataset saying ``evalset: {generate: {...}}`` (``path`` is then its
    documents folder) gets its set generated once beside this file and reused while the
    documents and settings are unchanged; a changed corpus is a StaleEvalsetError naming the
    command that regenerates it (see :func:`~.generate.ensure_generated_evalset`). The entry is
    handed on as one naming the generated ``.jsonl``; what a generation wrote and kept is added
    to ``said`` (the lines the end of the run prints)."""
    if not isinstance(raw, Mapping):
        return raw or {}
    out = dict(raw)
    for name, entry in raw.items():
        if not (isinstance(entry, Mapping) and isinstance(entry.get("evalset"), Mapping)):
            continue
        from ..generate import dataset_generation, generate_or_reuse_evalset

        where = f"{path}: datasets.{name}"
        settings, docs = dataset_generation(entry, name=str(name), where=where, base=base)
        generated = generate_or_reuse_evalset(settings, docs, base, name=str(name))
        said.extend(generated.summary_lines())
        target = generated.path
        if "evalset" in _DATASET_KEYS:  # 'evalset: FILE' with 'path' the documents folder
            out[name] = {**entry, "evalset": str(target)}
        else:  # a .jsonl 'path' with its 'docs'
            rest = {k: v for k, v in entry.items() if k not in ("evalset", "path")}
            out[name] = {**rest, "path": str(target), "docs": str(docs)}
    return out


def load_plugins(path: Path, plugins: Any) -> None:
    """Import the ``plugins`` entries (a ``.py`` file relative to the config, or a module name)
    so the providers they register are known."""
    import importlib
    import importlib.util
    import sys

    if isinstance(plugins, str):
        plugins = [plugins]
    if not isinstance(plugins, list):
        raise _fail(path, "plugins", f"{plugins!r}: give a list of .py files or module names")
    for entry in plugins:
        if not isinstance(entry, str) or not entry:
            raise _fail(path, "plugins", f"{entry!r} must be a file path or a module name")
        try:
            if entry.endswith(".py") or "/" in entry:
                file = (path.parent / entry).resolve()
                if not file.is_file():
                    raise _fail(path, "plugins", f"{entry!r}: no such file ({file})")
                name = f"embedbench_plugin_{file.stem}_{abs(hash(str(file))) % 10**8}"
                if name in sys.modules:
                    continue
                spec = importlib.util.spec_from_file_location(name, file)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
            else:
                importlib.import_module(entry)
        except ConfigError:
            raise
        except Exception as exc:
            raise _fail(
                path, "plugins", f"{entry!r} failed to import: {type(exc).__name__}: {exc}"
            ) from None


def _parse_datasets(path: Path, base: Path, raw: Any) -> dict[str, DatasetEntry]:
    if not isinstance(raw, Mapping):
        raise _fail(path, "datasets", "expected a mapping of name to {path: ...}")
    return {
        str(name): _parse_dataset(path, base, str(name), entry, f"datasets.{name}", _DATASET_KEYS)
        for name, entry in raw.items()
    }


def _parse_dataset(
    path: Path, base: Path, name: str, entry: Any, where: str, allowed: set[str]
) -> DatasetEntry:
    """One entry of ``datasets`` (or one language of its ``languages``, keys ``allowed``)."""
    if isinstance(entry, str):
        entry = {"path": entry}
    if not isinstance(entry, Mapping):
        raise _fail(path, where, f"expected a path or a mapping, got {entry!r}")
    check_keys(entry, allowed, f"{path}: {where}: unknown key(s)", "allowed:")
    subset = entry.get("subset")
    _check_subset(path, f"{where}.subset", subset)
    chunking = parse_chunking(
        entry.get("chunking"), f"{path}: {where}.chunking", base=base, key="chunking"
    )
    if entry.get("languages") is not None:
        return _parse_languages(path, base, name, entry, where, subset, chunking)
    if not isinstance(entry.get("path"), str):
        raise _fail(
            path,
            where,
            "needs 'path': a BEIR folder, an eval-set folder, or with 'evalset' the "
            "documents folder"
            + ("" if allowed is _LANGUAGE_KEYS else "; or 'languages': {en: path, zh: path}"),
        )
    docs = entry.get("docs")
    target = (base / entry["path"]).resolve()
    evalset = entry.get("evalset")
    if evalset is not None:  # path is then the documents folder
        if not isinstance(evalset, str) or not evalset:
            raise _fail(
                path, f"{where}.evalset", f"{evalset!r}: give the eval-set .jsonl file's path"
            )
        if docs:
            raise _fail(
                path,
                where,
                f"both 'docs' ({docs!r}) and 'evalset' ({evalset!r}): with 'evalset', "
                "'path' is the documents folder; drop 'docs'",
            )
        target, docs = (base / evalset).resolve(), entry["path"]
    extensions = parse_extensions(entry.get("extensions"), f"{path}: {where}.extensions")
    return DatasetEntry(
        name=str(entry.get("name") or name),
        path=target,
        split=str(entry.get("split", "test")),
        docs=(base / docs).resolve() if docs else None,
        subset=dict(subset) if subset else None,
        chunking=chunking,
        extensions=extensions,
        origin=f"{path}: {where}",
    )


def _parse_languages(
    path: Path,
    base: Path,
    name: str,
    entry: Mapping[str, Any],
    where: str,
    subset: Any,
    chunking: ChunkingSettings | None,
) -> DatasetEntry:
    """``languages: {en: path, zh: {path: ..., evalset: ...}}``: a dataset in several
    languages, each language's data read as a dataset of its own."""
    raw = entry["languages"]
    if not isinstance(raw, Mapping) or len(raw) < 2:
        raise _fail(
            path,
            f"{where}.languages",
            f"{raw!r}: give two or more languages, each a dataset path, e.g. "
            "languages: {en: data/en, zh: data/zh}",
        )
    clash = sorted(set(entry) & {"path", "docs", "evalset", "split", "extensions"})
    if clash:
        raise _fail(
            path,
            where,
            f"{clash} beside 'languages': each language names its own path (and split, docs, "
            "evalset, extensions); move them under languages.<language>",
        )
    languages = {}
    for language, part in raw.items():
        at = f"{where}.languages.{language}"
        try:
            code = check_language(language, f"{path}: {at}")
        except DatasetError as exc:
            raise ConfigError(str(exc)) from None
        languages[code] = _parse_dataset(path, base, code, part, at, _LANGUAGE_KEYS)
    return DatasetEntry(
        name=str(entry.get("name") or name),
        path=path.parent.resolve(),
        subset=dict(subset) if subset else None,
        chunking=chunking,
        origin=f"{path}: {where}",
        languages=languages,
    )


def _check_subset(path: Path, where: str, subset: Any) -> None:
    """``subset: {n_queries: 50, n_distractors: 1000, seed: 0}``, or a ConfigError."""
    if subset is None:
        return
    bad = set(subset) - _SUBSET_KEYS if isinstance(subset, Mapping) else {"?"}
    if bad:
        hint = unknown_hint(sorted(bad), _SUBSET_KEYS)
        raise _fail(path, where, f"{subset!r}{hint}: allowed keys {sorted(_SUBSET_KEYS)}")
    for key, value in subset.items():
        least = _SUBSET_LEAST[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise _fail(
                path,
                f"{where}.{key}",
                f"{value!r} must be an integer >= {least} ({_SUBSET_MEANING[key]}), e.g. "
                "subset: {n_queries: 50, n_distractors: 1000, seed: 0}",
            )


def parse_chunking(
    raw: Any,
    where: str,
    *,
    base: Path | None = None,
    over: ChunkingSettings | None = None,
    key: str = "chunking",
) -> ChunkingSettings | None:
    """``chunking`` settings as written (yaml or the marker's ``chunking=``), checked.

    ``None``/``False`` turn chunking off; ``True`` is the defaults (or ``over``); a mapping
    sets the keys it names over ``over`` (the yaml's settings, for the marker) or the defaults.
    ``where`` names the file (or test file) and key in every error, with the value and the
    fix. A ``tokenizer`` ending in ``.json`` is a path relative to ``base``.
    """
    if raw is None or raw is False:
        return None
    start = over or ChunkingSettings()
    if raw is True:
        return start
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{where}: {raw!r} is not chunking settings; give a mapping such as "
            "{strategy: recursive, size: 512, unit: tokens, overlap: 64}, or null for none"
        )
    # one validator for every way in (yaml, marker, generate-evalset): chunking.py's
    settings = ChunkingSettings.from_mapping({**start.as_dict(), **raw}, where)
    values = settings.as_dict()
    tokenizer = values["tokenizer"]
    if tokenizer is not None:
        if not isinstance(tokenizer, str) or not tokenizer:
            raise ConfigError(
                f"{where}.tokenizer: {tokenizer!r}: give a Hugging Face tokenizer name or a "
                "tokenizer.json path, or leave it out to count in the model's own tokens"
            )
        if values["unit"] != "tokens":
            raise ConfigError(
                f"{where}.tokenizer: {tokenizer!r} with unit {values['unit']!r}: a tokenizer "
                "counts tokens; set unit: tokens, or drop tokenizer"
            )
        if tokenizer.endswith(".json") and base is not None:
            tokenizer = str((base / tokenizer).resolve())
    return ChunkingSettings(
        strategy=values["strategy"],
        size=values["size"],
        overlap=values["overlap"],
        unit=values["unit"],
        min_chunk_chars=values["min_chunk_chars"],
        tokenizer=tokenizer,
    )


def parse_extensions(raw: Any, where: str) -> tuple[str, ...] | None:
    """``extensions`` as written: a list of suffixes (``.pdf`` or ``pdf``, any case) among
    the types the documents reader knows; None when absent (every supported type)."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            f"{where}: {raw!r}: give a non-empty list of document types, e.g. [.pdf, .md]"
        )
    out = []
    for item in raw:
        if not isinstance(item, str) or not item.strip(". "):
            raise ConfigError(f"{where}: {item!r} is not a file extension such as '.pdf'")
        suffix = "." + item.strip().lstrip(".").lower()
        if suffix not in DOCUMENT_SUFFIXES:
            raise ConfigError(
                f"{where}: {item!r} is not a document type the reader knows"
                f"{did_you_mean(suffix, DOCUMENT_SUFFIXES) or '.'} Supported: "
                f"{list(DOCUMENT_SUFFIXES)}"
            )
        if suffix not in out:
            out.append(suffix)
    return tuple(out)


def check_gate_metric_names(raw: Any, where: str) -> None:
    """Every name in a gate's ``metrics`` list is a metric; a typo names ``where`` (file and
    key) and the closest gated metric. The list's shape is left to the gate's own parser."""
    from ..baseline import KEPT_METRICS

    if isinstance(raw, str) and len(split := raw.replace(",", " ").split()) > 1:
        raise ConfigError(
            f"{where}: {raw!r} is one string, not a list of metrics; write a list: "
            f"metrics: [{', '.join(split)}]"
        )
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list):
        return
    for name in names:
        try:
            parse_metric(name)
        except MetricError as exc:
            raise ConfigError(
                f"{where}: {name!r} is not a metric{did_you_mean(name, KEPT_METRICS)} ({exc}); "
                f"gated metrics are {list(KEPT_METRICS)}"
            ) from None


def _check_gate_metric_names(path: Path, gate: Mapping[str, Any]) -> None:
    check_gate_metric_names(gate.get("metrics"), f"{path}: gate.metrics")
    for section in ("models", "tests"):
        blocks = gate.get(section)
        if not isinstance(blocks, Mapping):
            continue
        for name, block in blocks.items():
            if isinstance(block, Mapping):
                check_gate_metric_names(
                    block.get("metrics"), f"{path}: gate.{section}.{name}.metrics"
                )


def check_provider_names(spec: ModelSpec, where: str) -> None:
    """A provider name that is a near miss of a registered one (``bm-25``) is a ConfigError
    naming ``where``. A name near none is left to the model's tests, which fail with the list
    of known providers (the provider may come from a plugin that is not loaded here)."""
    from ..models.providers import PROVIDERS, provider_class, split_hybrid

    specs = [spec.spec]
    while specs:
        current = ModelSpec(specs.pop())
        try:
            provider_class(current.provider)
        except UnknownProviderError:
            hint = did_you_mean(current.provider, PROVIDERS)
            if hint:
                raise ConfigError(
                    f"{where}: {spec.spec!r}: unknown provider {current.provider!r}{hint} "
                    f"Known providers: {sorted(PROVIDERS)}"
                ) from None
            continue
        if current.provider == "hybrid":
            try:
                specs.extend(split_hybrid(current.model))
            except ConfigError:
                continue  # a malformed hybrid fails its own tests, with the fix


def _parse_models(path: Path, raw: Any) -> tuple[ModelSpec, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, Sequence):
        raise _fail(path, "models", f"expected a list of model specs, got {raw!r}")
    specs = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            specs.append(ModelSpec(item))
        elif isinstance(item, Mapping) and isinstance(item.get("spec"), str):
            options = dict(item.get("options") or {})
            extra = sorted(set(item) - {"spec", "name", "options"})
            if extra:
                hint = unknown_hint(extra, ("spec", "name", "options"))
                message = f"unknown key(s) {extra}{hint}; use spec, name and options"
                raise _fail(path, f"models[{i}]", message)
            specs.append(ModelSpec(item["spec"], item.get("name"), **options))
        else:
            raise _fail(
                path, f"models[{i}]", f"{item!r}: give a spec string or {{spec: ..., name: ...}}"
            )
        check_provider_names(specs[-1], f"{path}: models[{i}]")
    return tuple(specs)
