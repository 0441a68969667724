"""What an ``embedbench`` marker asks for: its :class:`Case` objects, read at collection.

All of collection happens here. :class:`MarkerArgs` checks a marker's keywords once (an unknown
one is an error with a did-you-mean); :class:`CaseBuilder` reads the project configuration
(``embedbench.yaml``) and the options, resolves the marker's dataset into a typed
:class:`DatasetRef` (a path, a configured name or a Python object), its models, cut-offs,
thresholds, gate settings, chunking and stress points, and checks every name before any model
loads, so a typo is a collection error that names the file and key. The session receives the
cases in one call and only evaluates them.

Usage (no pytest needed)::

    builder = CaseBuilder(Options(), rootdir=Path("."))
    (case,) = builder.cases({"models": ["bm25"], "dataset": ds}, Path("test_x.py"), "test_x")
    case.dataset.kind  # "object"
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from ..baseline import GateConfig, GateSettings, Threshold, ThresholdSet, load_thresholds
from ..baseline.thresholds import check_named, named_in, threshold_depth
from ..config.entries import dataset_key, load_entry
from ..config.project import (
    DatasetEntry,
    Options,
    ProjectConfig,
    check_gate_metric_names,
    check_provider_names,
    find_config,
    load_config,
    parse_chunking,
)
from ..core.exceptions import (
    ConfigError,
    EmbedBenchWarning,
    did_you_mean,
)
from ..core.names import check_keys, repeated
from ..core.yamlfile import read_yaml
from ..data.datasets import RetrievalDataset
from ..evaluation.metrics import parse_cutoffs, parse_metric
from ..evaluation.workloads import Workload, parse_workloads
from ..models.providers import ModelSpec, spec_fingerprint
from ..retrieval.indexes import IndexSpec
from ..retrieval.rerank import RerankerSpec
from .axes import with_axes

__all__ = [
    "MARKER_KEYS",
    "Case",
    "CaseBuilder",
    "DatasetRef",
    "MarkerArgs",
    "check_chunk_tokenizer",
    "check_thresholds_computed",
    "dataset_key",
]

MARKER = "@pytest.mark.embedbench"


class _Unset:
    """A marker keyword that was not given (``chunking=None`` means "no chunking")."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class MarkerArgs:
    """An ``embedbench`` marker's keyword arguments, checked once by :meth:`parse`; each is
    resolved by :class:`CaseBuilder` (a bad value is a ConfigError naming the keyword).

    Usage::

        MarkerArgs.parse({"models": ["bm25"], "dataset": "support"})
        MarkerArgs.parse({"modles": ["bm25"]})  # ConfigError: ... did you mean 'models'?
    """

    models: Any = None
    dataset: Any = None
    k: Any = None
    split: Any = None
    thresholds: Any = None
    gate: Any = None
    #: :data:`UNSET` when not given (None or False: no chunking)
    chunking: Any = UNSET
    stress: Any = None
    #: index specs (``["exact", "faiss:hnsw(M=32)"]``): each embedding model once per index
    indexes: Any = None
    #: reranker specs (``["none", "hf-ce:/models/ce@100"]``) or Reranker objects: each
    #: model's first stage once, then each reranker over its top depth
    rerankers: Any = None

    @classmethod
    def parse(cls, kwargs: Mapping[str, Any], args: Sequence[Any] = ()) -> MarkerArgs:
        """The marker's ``kwargs`` (``args``: its positional arguments, which it refuses)."""
        if args:
            raise ConfigError(f"{MARKER} takes keyword arguments only, got {tuple(args)!r}")
        check_keys(kwargs, MARKER_KEYS, f"{MARKER} got unknown keyword(s)", "it accepts")
        return cls(**kwargs)

    @property
    def has_chunking(self) -> bool:
        return self.chunking is not UNSET

    @staticmethod
    def signature() -> str:
        """The keywords as pytest's ``--markers`` lists them."""
        return ", ".join(f"{f.name}=None" for f in fields(MarkerArgs))


#: keyword arguments the ``embedbench`` marker accepts
MARKER_KEYS = frozenset(f.name for f in fields(MarkerArgs))

DatasetKind = Literal["path", "name", "object"]


@dataclass(frozen=True)
class DatasetRef:
    """Which dataset a case evaluates, resolved once at collection and passed down as is.

    ``kind`` says what the marker gave: a ``"path"`` (a file or folder), a ``"name"`` from
    embedbench.yaml (both read through ``entry``), or an ``"object"`` (a
    :class:`~pytest_embedbench.datasets.RetrievalDataset`, kept in ``dataset`` and identified by
    its ``fingerprint``). Two references are equal when they read the same data.

    Usage::

        ref = DatasetRef.of_object(ds)
        ref.kind, ref.name, ref.key  # "object", ds.name, "object:<fingerprint>"
        ref.load() is ds
    """

    kind: DatasetKind
    name: str
    #: how to read a path or a name (None for an object)
    entry: DatasetEntry | None = None
    #: the object's fingerprint (None for a path or a name)
    fingerprint: str | None = None
    #: the object itself (None for a path or a name)
    dataset: RetrievalDataset | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of_object(cls, ds: RetrievalDataset) -> DatasetRef:
        return cls("object", ds.name, fingerprint=ds.fingerprint, dataset=ds)

    @classmethod
    def of_entry(cls, kind: DatasetKind, entry: DatasetEntry) -> DatasetRef:
        return cls(kind, entry.name, entry=entry)

    @property
    def key(self) -> str:
        """What identifies the loaded data within a run (results and datasets are kept by it)."""
        if self.entry is None:
            return f"object:{self.fingerprint}"
        return dataset_key(self.entry)

    def __str__(self) -> str:
        return self.key

    @property
    def path(self) -> Path | None:
        """The file or folder a path or a name reads (None for an object)."""
        return None if self.entry is None else self.entry.path

    @property
    def chunking(self) -> Any:
        """The chunking settings the data is read with (None: documents whole)."""
        if self.dataset is not None:
            return self.dataset.chunking
        return None if self.entry is None else self.entry.chunking

    def with_chunking(self, raw: Any, where: str) -> DatasetRef:
        """The same data chunked as a marker's ``chunking=`` says, key by key over the chunking
        it has (None or False: whole documents); ``where`` names the keyword in errors."""
        settings = parse_chunking(raw, where, over=self.chunking)
        if self.dataset is not None:
            return DatasetRef.of_object(self.dataset.with_chunking(settings))
        assert self.entry is not None  # a path or a name always has its entry
        return replace(self, entry=replace(self.entry, chunking=settings))

    def load(self) -> RetrievalDataset:
        """The data: the object, or the entry read (:func:`load_entry`)."""
        if self.dataset is not None:
            return self.dataset
        assert self.entry is not None
        return load_entry(self.entry)


def check_provider_options(spec: ModelSpec, cfg: ProjectConfig, where: str) -> None:
    """An option ``spec``'s provider does not take, from the providers block of
    embedbench.yaml (by provider or by short name) or from the spec itself (``where``): a
    ConfigError at collection naming the file and key, with a did-you-mean, where the
    provider would have raised it only when the test ran."""
    from ..core.exceptions import UnknownProviderError
    from ..models.providers import provider_class

    try:
        allowed = provider_class(spec.provider).all_option_names()
    except UnknownProviderError:
        return  # a near miss is check_provider_names'; the rest fail in their own tests
    sources = [
        (f"{cfg.path}: providers.{key}", cfg.providers.get(key, {}))
        for key in dict.fromkeys((spec.provider, spec.short_name))
    ]
    for origin, options in [*sources, (f"{where}: {spec.spec!r}", spec.options)]:
        said = f"{origin}: provider {spec.provider!r} takes no option(s)"
        check_keys(options, allowed, said, "it accepts")
        for key, value in options.items():
            _check_option_value(spec, key, value, f"{origin}.{key}")


#: what a failed conversion in a provider's reading of an option asked for
_WANTED = {"int()": "an integer", "float": "a number"}


def _check_option_value(spec: ModelSpec, key: str, value: Any, where: str) -> None:
    """The provider reads option ``key`` = ``value`` without error (built and its namespace
    read, not loaded: weights and clients load later), else a ConfigError naming ``where``
    (file and key) at collection instead of a bare ``ValueError: invalid literal for int()``
    when the test runs. Where the provider cannot be built here even without the option (an
    SDK, an API key missing), nothing is checked: the test reports that."""
    from ..core.exceptions import EmbedBenchError
    from ..models.providers import provider_class

    cls = provider_class(spec.provider)
    try:
        cls(spec.model).namespace()
    except Exception:  # noqa: BLE001 - not buildable here: the option cannot be told apart
        return
    try:
        cls(spec.model, **{key: value}).namespace()
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except EmbedBenchError:
        return
    except (ValueError, TypeError) as exc:
        wanted = next((kind for word, kind in _WANTED.items() if word in str(exc)), None)
        fix = f"give {key} {wanted}" if wanted else f"give {key} a value of the type it takes"
        raise ConfigError(
            f"{where}: {value!r} is not a {key} provider {spec.provider!r} can use "
            f"({type(exc).__name__}: {exc}); {fix}, e.g. {key}: {_example(key)}"
        ) from None
    except Exception:  # noqa: BLE001 - what else building raises is the test's to report
        return


def _example(key: str) -> str:
    """A typical value of a provider option, for the fix of a bad one."""
    examples = {"batch_size": "64", "timeout": "30.0", "max_retries": "3", "k1": "1.2"}
    return examples.get(key, "...")


@dataclass(frozen=True)
class Case:
    """What one parametrised test evaluates: a model on a dataset at cut-offs k."""

    model: ModelSpec
    dataset: DatasetRef
    k: tuple[int, ...]
    thresholds: ThresholdSet
    #: the gate settings of this test and model, resolved once at collection
    gate: GateSettings = GateSettings()
    reference: str | None = None
    #: the stress workload point this case runs (None: the dataset as it is)
    workload: Workload | None = None
    #: the chat model of its configuration's ``paraphrase:`` (for ``noise:paraphrase``)
    paraphrase: Any = field(default=None, compare=False)
    #: the index its queries go through (None: the model's own exact search)
    index: IndexSpec | None = None
    #: the name the index axis gave it (its test id shows the name instead of the spec)
    index_name: str | None = None
    #: the LLM judge (a JudgeSettings whose ``file`` is the judgments file), or None
    judge: Any = field(default=None, compare=False)
    #: the reranker over its first stage (None: no reranking axis; ``none``: the first stage)
    reranker: RerankerSpec | None = None
    #: every depth the test's rerankers rerank to: the first stage retrieves that deep
    stage_depths: tuple[int, ...] = ()

    @property
    def settings_fingerprint(self) -> str:
        """What changes numbers besides the data and the weights: spec, options, k."""
        return spec_fingerprint(self.model, self.k)

    @property
    def stage1(self) -> Case:
        """The first stage of a reranked case: no reranker, retrieving as deep as the test's
        deepest reranker (computed once, shared by every reranker of the model)."""
        k = tuple(sorted({*self.k, *self.stage_depths}))
        return replace(self, reranker=None, stage_depths=(), k=k)

    @property
    def key(self) -> tuple[Any, ...]:
        if self.reranker is not None:
            return (*self.stage1.key, self.reranker, self.k)
        if self.workload is not None:
            return (self.model, self.dataset_key, self.k, self.workload)
        if self.index is not None:
            return (self.model, self.dataset_key, self.k, self.index)
        return (self.model, self.dataset_key, self.k)

    @property
    def id(self) -> str:
        """The pytest id: the model's short name, then the workload point's (``-typo``) or
        the index's (``-faiss:hnsw(M=32)``)."""
        name = self.model.short_name
        if self.index is not None:
            name = f"{name}-{self.index_name or self.index.id}"
        if self.reranker is not None:
            name = f"{name}-{self.reranker.id}"
        return name if self.workload is None else f"{name}-{self.workload.id}"

    @property
    def dataset_key(self) -> str:
        return self.dataset.key


class CaseBuilder:
    """Reads project configurations, options and markers into cases (one per run, kept by the
    session): :meth:`cases` for a marked test, :meth:`marker_dataset` for the ``corpus`` and
    ``evalset`` fixtures, :meth:`evaluation_case` for ``embedbench.evaluate``; once collection
    ends, :meth:`check_names` checks the names the configuration uses.

    Usage::

        builder = CaseBuilder(Options(), rootdir=Path("."))
        cases = builder.cases({"models": ["bm25"], "dataset": "support"}, Path("test_x.py"))
    """

    def __init__(self, options: Options, rootdir: Path) -> None:
        self.options = options
        self.rootdir = rootdir
        self._configs: dict[Path | None, ProjectConfig] = {}
        self._cli_thresholds = (
            load_thresholds(options.thresholds) if options.thresholds else ThresholdSet.empty()
        )
        #: short names of every model a collected test uses (to check names in the config)
        self.model_names: set[str] = set()
        #: names, short names and families of the rerankers of the collected tests (keys
        #: ``providers:`` may have beside providers and models)
        self.reranker_names: set[str] = set()

    # -- what a marker, a fixture or embedbench.evaluate asks for ---------------------------

    def cases(
        self,
        marker: MarkerArgs | Mapping[str, Any],
        test_path: Path,
        test: str = "",
        *,
        args: Sequence[Any] = (),
    ) -> list[Case]:
        """The cases a marker asks for (``marker``: its keywords, ``args``: its positional
        arguments), one per model and stress point; a ConfigError names any bad argument.

        ``test`` is the test function's name (for per-test gate settings, resolved now)."""
        marker = marker if isinstance(marker, MarkerArgs) else MarkerArgs.parse(marker, args)
        cfg = self.project_config(test_path)
        dataset = self._marker_dataset(marker, cfg, test_path)
        k = _cutoffs(marker.k, cfg.k, f"{test_path.name}: {MARKER} k")
        thresholds = self.marker_thresholds(marker.thresholds, cfg, test_path)
        gate_config = self.gate_config(marker.gate, cfg, test_path)
        specs = self.distinct_specs(marker.models, cfg, test_path)
        for spec in specs:
            check_thresholds_computed(thresholds.for_test(test, spec.short_name), test, k)
        where = self._chunking_origin(dataset, marker, cfg, test_path)
        check_chunk_tokenizer(dataset.chunking, specs, where)
        cases = [
            Case(
                spec,
                dataset,
                k,
                thresholds,
                self.gate_settings(gate_config, marker.gate, test, spec, k, cfg),
                cfg.reference,
                paraphrase=cfg.paraphrase,
                judge=self._judge(cfg, dataset, test_path),
            )
            for spec in specs
        ]
        self.model_names.update(spec.short_name for spec in specs)
        cases = with_axes(cases, self.options, marker, cfg, f"{test_path.name}: {MARKER}")
        self.reranker_names.update(
            n
            for c in cases
            if c.reranker is not None and not c.reranker.is_none
            for n in (c.reranker.name, c.reranker.short_name, c.reranker.family)
            if n
        )
        points = self._workloads(marker.stress, test_path)
        if points:  # model x workload point, each its own test
            return [replace(case, workload=point) for case in cases for point in points]
        return cases

    def marker_dataset(self, marker: MarkerArgs | Mapping[str, Any], test_path: Path) -> DatasetRef:
        """The dataset a marker names (for the ``corpus`` and ``evalset`` fixtures)."""
        marker = marker if isinstance(marker, MarkerArgs) else MarkerArgs.parse(marker)
        return self._marker_dataset(marker, self.project_config(test_path), test_path)

    def evaluation_case(
        self, model: str | ModelSpec, dataset: Any, *, k: Any = None, test_path: Path
    ) -> Case:
        """The case of ``embedbench.evaluate(model, dataset, k=...)`` in a test at
        ``test_path``: no thresholds, no gate."""
        cfg = self.project_config(test_path)
        ref = self.dataset(dataset, cfg, test_path)
        spec = cfg.apply_provider_options(ModelSpec.coerce(model))
        return Case(spec, ref, _cutoffs(k, cfg.k, "embedbench.evaluate k"), ThresholdSet.empty())

    def dataset(
        self, value: Any, cfg: ProjectConfig, test_path: Path, *, split: Any = None
    ) -> DatasetRef:
        """What ``value`` names (a name in ``cfg``, a path relative to the test file or the
        rootdir, or a RetrievalDataset), with ``split`` over a configured name's."""
        if value is None:
            raise ConfigError(
                f"{MARKER} needs dataset=: a name from embedbench.yaml "
                f"(known: {sorted(cfg.datasets)}) or a path"
            )
        if isinstance(value, RetrievalDataset):
            return DatasetRef.of_object(value)
        if not isinstance(value, (str, Path)):
            raise ConfigError(f"dataset={value!r}: give a name, a path or a RetrievalDataset")
        if isinstance(value, str) and value in cfg.datasets:
            entry = cfg.datasets[value]
            if split:
                entry = replace(entry, split=str(split))
            return DatasetRef.of_entry("name", entry)
        path = Path(value)
        candidates = (
            [path] if path.is_absolute() else [test_path.parent / path, self.rootdir / path]
        )
        for candidate in candidates:
            if candidate.exists():
                resolved = candidate.resolve()
                entry = DatasetEntry(name=resolved.name, path=resolved, split=str(split or "test"))
                return DatasetRef.of_entry("path", entry)
        raise ConfigError(
            f"dataset {str(value)!r} is neither a name in "
            f"{cfg.path if cfg.path else 'embedbench.yaml (none found)'} "
            f"(known: {sorted(cfg.datasets)}) nor an existing path"
            f"{did_you_mean(value, cfg.datasets)}"
        )

    def _judge(self, cfg: ProjectConfig, dataset: DatasetRef, test_path: Path) -> Any:
        """The case's LLM judge (:func:`~pytest_embedbench.generate.judge.case_judge`)."""
        from ..generate.judge import case_judge

        base = cfg.path.parent if cfg.path is not None else test_path.parent
        source = dataset.entry.path if dataset.entry is not None else None
        return case_judge(cfg.judge, self.options.judge, self.options.judge_depth, source, base)

    def _marker_dataset(
        self, marker: MarkerArgs, cfg: ProjectConfig, test_path: Path
    ) -> DatasetRef:
        """The marker's dataset, with its ``chunking=`` over the configured chunking: key by
        key, or None/False for none."""
        ref = self.dataset(marker.dataset, cfg, test_path, split=marker.split)
        if not marker.has_chunking:
            return ref
        return ref.with_chunking(marker.chunking, f"{test_path.name}: {MARKER} chunking")

    @staticmethod
    def _chunking_origin(
        ref: DatasetRef, marker: MarkerArgs, cfg: ProjectConfig, test_path: Path
    ) -> str:
        """Where the chunking of a case's dataset was set (for errors)."""
        if marker.has_chunking:
            return f"{test_path.name}: {MARKER} chunking"
        if ref.kind == "object":
            return f"dataset {ref.name!r}: chunking"
        return f"{cfg.path}: datasets.{marker.dataset}.chunking"

    def _workloads(self, stress: Any, test_path: Path) -> list[Workload]:
        """The marker's ``stress=`` points (ConfigError naming the test file when bad)."""
        if stress is None:
            return []
        try:
            return parse_workloads(stress, seed=self.options.seed)
        except ConfigError as exc:
            raise ConfigError(f"{test_path.name}: {MARKER} stress: {exc}") from None

    # -- the parts of a case ----------------------------------------------------------------

    def project_config(self, test_path: Path) -> ProjectConfig:
        """``--embedbench-config`` when given, else the nearest embedbench.yaml (or none)."""
        path = self.options.config or find_config(test_path.parent, self.rootdir)
        if path not in self._configs:
            self._configs[path] = load_config(path) if path is not None else ProjectConfig()
        return self._configs[path]

    def thresholds(self, cfg: ProjectConfig) -> ThresholdSet:
        base = (
            ThresholdSet.parse(cfg.thresholds, f"{cfg.path}: thresholds")
            if cfg.thresholds
            else ThresholdSet.empty()
        )
        return base.merged(self._cli_thresholds)

    def marker_thresholds(
        self, marker_rules: Any, cfg: ProjectConfig, test_path: Path
    ) -> ThresholdSet:
        """The configuration's thresholds with the CLI's and the marker's merged in."""
        thresholds = self.thresholds(cfg)
        if marker_rules is None:
            return thresholds
        if not isinstance(marker_rules, Mapping):
            raise ConfigError(
                f"@pytest.mark.embedbench(thresholds={marker_rules!r}): give a mapping such "
                'as {"ndcg@10": ">= 0.6"}'
            )
        return thresholds.merged(
            ThresholdSet.parse({"defaults": marker_rules}, f"{test_path.name} marker")
        )

    @staticmethod
    def gate_config(marker_gate: Any, cfg: ProjectConfig, test_path: Path) -> GateConfig:
        """The configuration's gate settings, with the marker's ``gate=`` checked."""
        if marker_gate is not None and not isinstance(marker_gate, Mapping):
            raise ConfigError(
                f"@pytest.mark.embedbench(gate={marker_gate!r}): give a mapping such as "
                '{"metrics": ["ndcg@10"], "tolerance": 0.02}'
            )
        gate_config = GateConfig.parse(cfg.gate, f"{cfg.path}: gate")
        if marker_gate:  # checked now, so a typo is a collection error
            check_gate_metric_names(
                marker_gate.get("metrics"),
                f"{test_path.name}: @pytest.mark.embedbench gate.metrics",
            )
            gate_config.for_test("", "", marker_gate)
        return gate_config

    def distinct_specs(self, models: Any, cfg: ProjectConfig, test_path: Path) -> list[ModelSpec]:
        """:meth:`model_specs`, each short name at most once."""
        specs = self.model_specs(models, cfg, test_path)
        dupes = repeated(s.short_name for s in specs)
        if dupes:
            raise ConfigError(
                f"models {dupes} appear more than once in one test; give each a distinct "
                "name with ModelSpec(spec, name=...)"
            )
        return specs

    def model_specs(self, models: Any, cfg: ProjectConfig, test_path: Path) -> list[ModelSpec]:
        if self.options.models:
            raw: Iterable[Any] = self.options.models
        elif models is not None:
            raw = [models] if isinstance(models, (str, ModelSpec)) else models
            if not isinstance(raw, (list, tuple)):  # a set or a generator has no fixed order
                raise ConfigError(
                    f"{test_path.name}: {MARKER}(models={models!r}): give a spec string such "
                    "as 'bm25', a ModelSpec, or a list of them, e.g. models=['bm25', "
                    "'hf:sentence-transformers/all-MiniLM-L6-v2']"
                )
        else:
            raw = cfg.models
        where = (
            "--embedbench-models"
            if self.options.models
            else f"{test_path.name}: {MARKER} models"
            if models is not None
            else f"{cfg.path}: models"
        )
        specs = []
        for item in raw:
            if not isinstance(item, (str, ModelSpec)):
                raise ConfigError(
                    f"{where}: {item!r}: give a spec string such as 'bm25' or a ModelSpec"
                )
            spec = ModelSpec.coerce(item)
            check_provider_names(spec, where)
            check_provider_options(spec, cfg, where)
            specs.append(cfg.apply_provider_options(spec))
        if not specs:
            where = f"{cfg.path}" if cfg.path else "an embedbench.yaml"
            raise ConfigError(
                f"no models for {test_path.name}: pass models=[...] to the embedbench marker, "
                f"list 'models' in {where}, or use --embedbench-models"
            )
        return specs

    @staticmethod
    def gate_settings(
        gate_config: GateConfig,
        marker_gate: Mapping[str, Any] | None,
        test: str,
        spec: ModelSpec,
        k: tuple[int, ...],
        cfg: ProjectConfig,
    ) -> GateSettings:
        """The case's gate settings. A gated metric this case does not compute is an error
        naming where the gate's metrics were set, instead of a "not gated" note on every run;
        the default metrics (nDCG@10, Recall@100) are gated only where the case computes them
        (a run with ``k: [1, 5, 10]`` gates nDCG@10 and not Recall@100)."""
        settings = gate_config.for_test(test, spec.short_name, marker_gate)
        missing = [m for m in settings.metrics if parse_metric(m).k not in k]
        if not missing:
            return settings
        if marker_gate and "metrics" in marker_gate:
            where = "@pytest.mark.embedbench(gate={'metrics': ...})"
        elif "metrics" in (gate_config.tests.get(test) or {}):
            where = f"{cfg.path}: gate.tests.{test}.metrics"
        elif "metrics" in (gate_config.models.get(spec.short_name) or {}):
            where = f"{cfg.path}: gate.models.{spec.short_name}.metrics"
        elif "metrics" in cfg.gate:
            where = f"{cfg.path}: gate.metrics"
        else:  # the implicit defaults: only the metrics this case computes are gated
            computed = tuple(m for m in settings.metrics if parse_metric(m).k in k)
            return replace(settings, metrics=computed)
        cutoffs = sorted({parse_metric(m).k for m in missing})
        raise ConfigError(
            f"{where}: {missing} gated, but {test or 'the test'} computes k={list(k)} only "
            f"(model {spec.short_name!r}); add {cutoffs} to k (in {cfg.path or 'the marker'}"
            f" or the marker's k=), or gate a metric at one of {list(k)}"
        )

    def check_names(self, collected: Iterable[str], root: Path) -> None:
        """Once collection ends, the names the configuration gives against every collected
        test's (``collected``: their node ids, before ``-k`` deselects): the reference and
        ``providers`` keys (:meth:`_check_providers`), then
        :func:`~pytest_embedbench.baseline.thresholds.check_named` over each configuration read
        and the ``--embedbench-thresholds`` file."""
        self._check_providers()
        if not self.model_names:
            return  # no retrieval test collected: nothing uses the names
        tests = {nodeid.rpartition("::")[2].partition("[")[0] for nodeid in collected}
        configs = [c for c in self._configs.values() if c.path is not None]
        named = [
            n
            for c in configs
            for key in ("thresholds", "gate")
            for n in named_in(getattr(c, key), f"{c.path}: {key}.")
        ]
        if self.options.thresholds is not None:
            path = self.options.thresholds
            named += named_in(read_yaml(path, "thresholds file", ConfigError), f"{path}: ")
        models = self.model_names | {m.short_name for c in configs for m in c.models}
        check_named(named, {"model": models, "test": tests}, root)

    def _check_providers(self) -> None:
        """The reference and every ``providers`` key must name a model of the run (or, for
        ``providers``, a provider). A near miss (``bm52``, a different case) is a ConfigError
        naming the file and key; a providers key near nothing only warns, since it may serve
        tests that were not collected this time."""
        import warnings

        from ..models.providers import PROVIDERS, provider_class

        if not self.model_names:
            return  # no retrieval test collected: nothing uses the names
        provider_class("bm25")  # the built-in providers and entry points are registered
        for cfg in self._configs.values():
            known = self.model_names | {m.short_name for m in cfg.models} | self.reranker_names
            for key in cfg.providers:
                if key in PROVIDERS or key in known:
                    continue
                hint = did_you_mean(key, known | set(PROVIDERS))
                message = (
                    f"{cfg.path}: providers.{key}: {key!r} is neither a provider nor a model "
                    f"of this run, so its options apply to nothing{hint or '.'} Keys are "
                    f"provider names {sorted(PROVIDERS)} or model short names "
                    f"{sorted(known)}"
                )
                if hint:
                    raise ConfigError(message)
                warnings.warn(message, EmbedBenchWarning, stacklevel=1)
            if cfg.reference is not None and not self.options.reference:
                self._check_reference(cfg.reference, f"{cfg.path}: reference", known)
        if self.options.reference:
            known = self.model_names | {
                m.short_name for c in self._configs.values() for m in c.models
            }
            self._check_reference(self.options.reference, "--embedbench-reference", known)

    @staticmethod
    def _check_reference(name: str, where: str, known: set[str]) -> None:
        if name in known:
            return
        raise ConfigError(
            f"{where}: {name!r} is not a model of this run{did_you_mean(name, known) or '.'} "
            f"The reference is a model short name: one of {sorted(known)}"
        )

    def generated(self) -> list[str]:
        """What the configurations read so far generated (their eval sets' summary lines)."""
        return [
            line
            for _, cfg in sorted(self._configs.items(), key=lambda kv: str(kv[0]))
            for line in cfg.generated
        ]

    def effective_configs(self) -> list[dict[str, Any]]:
        """Each embedbench.yaml this run read, as written, for the JSON report (the report
        redacts secrets)."""
        return [
            {"path": str(cfg.path), "content": dict(cfg.raw)}
            for path, cfg in sorted(self._configs.items(), key=lambda kv: str(kv[0]))
            if path is not None
        ]


def has_own_tokenizer(spec: ModelSpec) -> bool:
    """Whether ``spec``'s model brings its own tokenizer (a hybrid: either leg); an unknown
    provider counts as having one, its own tests fail with the list of providers."""
    from ..core.exceptions import UnknownProviderError
    from ..models.providers import provider_class, split_hybrid

    try:
        cls = provider_class(spec.provider)
    except UnknownProviderError:
        return True
    if spec.provider == "hybrid":
        try:
            return any(has_own_tokenizer(ModelSpec(leg)) for leg in split_hybrid(spec.model))
        except ConfigError:
            return True
    return cls.has_tokenizer


def check_chunk_tokenizer(chunking: Any, specs: Iterable[ModelSpec], where: str) -> None:
    """Chunks counted in tokens with no tokenizer named are counted in each model's own
    tokens: a model without one is an error at collection, naming ``where`` and the fix."""
    if chunking is None or chunking.unit != "tokens" or chunking.tokenizer is not None:
        return
    for spec in specs:
        if not has_own_tokenizer(spec):
            raise ConfigError(
                f"{where}: unit 'tokens' with no tokenizer counts in the model's own tokens, "
                f"and {spec.short_name!r} ({spec.spec}) has no tokenizer of its own; name one "
                "with chunking.tokenizer (a tokenizer.json path, or 'all-MiniLM-L6-v2'), or "
                "use unit: chars"
            )


def check_thresholds_computed(rules: Iterable[Threshold], test: str, k: tuple[int, ...]) -> None:
    """A threshold on a metric deeper than the case retrieves (``recall@100`` with ``k: [1,
    5, 10]``) is an error naming the rule's file and key, at collection, not a failing test."""
    for rule in rules:
        depth = threshold_depth(rule.key)
        if depth is not None and depth > max(k):
            raise ConfigError(
                f"{rule.origin}: threshold {rule.key}, but {test or 'the test'} computes "
                f"k={list(k)} only; add {depth} to k (embedbench.yaml k: or the marker's k=), "
                f"or set the threshold at a cut-off up to {max(k)}"
            )


def _cutoffs(k: Any, default: tuple[int, ...] | None, where: str) -> tuple[int, ...]:
    """The cut-offs of a case: ``k`` (the marker's or evaluate()'s), else the config's, else
    DEFAULT_K, checked by the one validator (:func:`~.metrics.parse_cutoffs`)."""
    return parse_cutoffs(default if k is None else k, where)
