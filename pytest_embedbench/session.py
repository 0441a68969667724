"""One EmbedBenchSession per pytest run: cases, the result registry, records, xdist merge.

The plugin builds it from :class:`~pytest_embedbench.config.Options` and keeps it in
``config.stash``; nothing here imports pytest's config machinery, so it works without pytest.
What a run's records add up to (comparisons, recommendations, notices) is computed once, at the
end, by :mod:`pytest_embedbench.report.summary`; this module keeps the run's state only.
A (model, dataset, k) result is computed once per process however many tests use it; a model
that fails to load fails every test that needs it, and only those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .baseline import (
    DEFAULT_BASELINE,
    BaselineFile,
    GateConfig,
    GateSettings,
    ThresholdSet,
    check_thresholds,
    entry_from_record,
    gate,
    load_thresholds,
)
from .config import (
    DatasetEntry,
    Options,
    ProjectConfig,
    check_gate_metric_names,
    check_provider_names,
    find_config,
    load_config,
)
from .datasets import RetrievalDataset, load_dataset
from .evaluate import DEFAULT_K, Evaluator, RetrievalResult
from .exceptions import ConfigError, EmbedBenchWarning, did_you_mean
from .metrics import parse_metric
from .providers.base import ModelSpec, Provider
from .records import (
    Status,
    TestRecord,
    as_record,
    case_fingerprint,
    dataset_parts,
    machine_fingerprint,
    settings_fingerprint,
    settings_of,
)

__all__ = ["MARKER_KEYS", "Case", "EmbedBenchSession", "Searcher"]

#: keyword arguments the ``embedbench`` marker accepts
MARKER_KEYS = frozenset({"models", "dataset", "k", "split", "thresholds", "gate"})


@dataclass(frozen=True)
class Case:
    """What one parametrised test evaluates: a model on a dataset at cut-offs k."""

    model: ModelSpec
    dataset: DatasetEntry
    k: tuple[int, ...]
    thresholds: ThresholdSet
    #: the gate settings of this test and model, resolved once at collection
    gate: GateSettings = GateSettings()
    reference: str | None = None

    @property
    def settings_fingerprint(self) -> str:
        """What changes numbers besides the data and the weights: spec, options, k."""
        return case_fingerprint(self.model, self.k)

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.model, self.dataset_key, self.k)

    @property
    def dataset_key(self) -> str:
        return dataset_key(self.dataset)


def dataset_key(entry: DatasetEntry) -> str:
    """What identifies a loaded dataset: its path, split, documents folder and subset."""
    return f"{entry.path}|{entry.split}|{entry.docs}|{sorted((entry.subset or {}).items())}"


class EmbedBenchSession:
    """State of one run: configs, datasets, results and the records reports are built from."""

    def __init__(
        self,
        options: Options,
        rootdir: Path,
        *,
        progress: Callable[[str, int, int], None] | None = None,
        project_dir: Path | None = None,
    ) -> None:
        self.options = options
        self.rootdir = rootdir
        #: the folder the default baseline lives in and its entries' test paths are relative
        #: to, whatever folder pytest starts in (see ``plugin.project_dir``)
        self.project_dir = project_dir or rootdir
        self.progress = progress
        self._evaluator: Evaluator | None = None
        self._configs: dict[Path | None, ProjectConfig] = {}
        self._datasets: dict[str, RetrievalDataset] = {}
        self._results: dict[tuple[Any, ...], RetrievalResult | BaseException] = {}
        self._objects: dict[str, RetrievalDataset] = {}
        self._searchers: dict[tuple[Any, ...], Searcher | BaseException] = {}
        self._cli_thresholds = (
            load_thresholds(options.thresholds) if options.thresholds else ThresholdSet.empty()
        )
        #: nodeid -> record of every retrieval test that ran
        self.records: dict[str, TestRecord] = {}
        #: node ids of every collected test (before deselection), to find orphaned baselines
        self.collected: set[str] = set()
        #: short names of every model a collected test uses (to check names in the config)
        self.model_names: set[str] = set()
        #: node ids whose worker announced a record (under xdist), to find the ones never sent
        self.expected: set[str] = set()
        self.baseline = BaselineFile.load(options.baseline or self.project_dir / DEFAULT_BASELINE)
        self._dataset_parts: dict[str, dict[str, Any]] = {}
        #: artifacts (JSON report, baseline) that could not be written, one line each
        self.write_failures: list[str] = []
        self.json_written = False
        self._machine: str | None = None
        #: what this run's records add up to, built once at its end (report.summary.Summary)
        self.summary: Any = None

    # -- configuration ---------------------------------------------------------------------

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            cache: bool | Path = False if self.options.no_cache else True
            if not self.options.no_cache and self.options.cache_dir is not None:
                cache = self.options.cache_dir
            self._evaluator = Evaluator(
                cache=cache,
                seed=self.options.seed,
                n_resamples=self.options.bootstrap,
                progress=self.progress,
                latency_passes=self.options.latency_passes,
            )
        return self._evaluator

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

    # -- collection ------------------------------------------------------------------------

    def cases(
        self, marker_kwargs: Mapping[str, Any], test_path: Path, test: str = ""
    ) -> list[Case]:
        """The cases an ``embedbench`` marker asks for; ConfigError names any bad argument.

        ``test`` is the test function's name (for per-test gate settings)."""
        unknown = sorted(set(marker_kwargs) - MARKER_KEYS)
        if unknown:
            raise ConfigError(
                f"@pytest.mark.embedbench got unknown keyword(s) {unknown}; "
                f"it accepts {sorted(MARKER_KEYS)}"
            )
        cfg = self.project_config(test_path)
        dataset = self.dataset_entry(marker_kwargs.get("dataset"), cfg, test_path, marker_kwargs)
        k = _k_tuple(marker_kwargs.get("k"), cfg.k)
        thresholds = self.thresholds(cfg)
        marker_rules = marker_kwargs.get("thresholds")
        if marker_rules is not None:
            if not isinstance(marker_rules, Mapping):
                raise ConfigError(
                    f"@pytest.mark.embedbench(thresholds={marker_rules!r}): give a mapping such "
                    'as {"ndcg@10": ">= 0.6"}'
                )
            thresholds = thresholds.merged(
                ThresholdSet.parse({"defaults": marker_rules}, f"{test_path.name} marker")
            )
        marker_gate = marker_kwargs.get("gate")
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
        specs = self.model_specs(marker_kwargs.get("models"), cfg, test_path)
        names = [s.short_name for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(
                f"models {dupes} appear more than once in one test; give each a distinct "
                "name with ModelSpec(spec, name=...)"
            )
        gates = [
            self._gate_settings(gate_config, marker_gate, test, spec, k, cfg) for spec in specs
        ]
        self.model_names.update(names)
        return [
            Case(spec, dataset, k, thresholds, settings, cfg.reference)
            for spec, settings in zip(specs, gates, strict=True)
        ]

    def model_specs(self, models: Any, cfg: ProjectConfig, test_path: Path) -> list[ModelSpec]:
        if self.options.models:
            raw: Iterable[Any] = self.options.models
        elif models is not None:
            raw = [models] if isinstance(models, (str, ModelSpec)) else models
        else:
            raw = cfg.models
        specs = []
        for item in raw:
            if not isinstance(item, (str, ModelSpec)):
                raise ConfigError(
                    f"model {item!r}: give a spec string such as 'bm25' or a ModelSpec"
                )
            spec = ModelSpec.coerce(item)
            where = (
                "--embedbench-models"
                if self.options.models
                else f"{test_path.name}: @pytest.mark.embedbench models"
                if models is not None
                else f"{cfg.path}: models"
            )
            check_provider_names(spec, where)
            specs.append(cfg.apply_provider_options(spec))
        if not specs:
            where = f"{cfg.path}" if cfg.path else "an embedbench.yaml"
            raise ConfigError(
                f"no models for {test_path.name}: pass models=[...] to the embedbench marker, "
                f"list 'models' in {where}, or use --embedbench-models"
            )
        return specs

    @staticmethod
    def _gate_settings(
        gate_config: GateConfig,
        marker_gate: Mapping[str, Any] | None,
        test: str,
        spec: ModelSpec,
        k: tuple[int, ...],
        cfg: ProjectConfig,
    ) -> GateSettings:
        """The case's gate settings. A gated metric this case does not compute is an error
        naming where the gate's metrics were set, instead of a "not gated" note on every run."""
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
        else:
            where = f"{cfg.path}: gate.metrics"
        cutoffs = sorted({parse_metric(m).k for m in missing})
        raise ConfigError(
            f"{where}: {missing} gated, but {test or 'the test'} computes k={list(k)} only "
            f"(model {spec.short_name!r}); add {cutoffs} to k (in {cfg.path or 'the marker'}"
            f" or the marker's k=), or gate a metric at one of {list(k)}"
        )

    def check_names(self) -> None:
        """Once collection ends: the reference and every ``providers`` key must name a model
        of the run (or, for ``providers``, a provider). A near miss (``bm52``, a different
        case) is a ConfigError naming the file and key; a providers key near nothing only
        warns, since it may serve tests that were not collected this time."""
        import warnings

        from .providers.base import PROVIDERS, provider_class

        if not self.model_names:
            return  # no retrieval test collected: nothing uses the names
        provider_class("bm25")  # the built-in providers and entry points are registered
        for cfg in self._configs.values():
            known = self.model_names | {m.short_name for m in cfg.models}
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

    def effective_configs(self) -> list[dict[str, Any]]:
        """Each embedbench.yaml this run read, as written, for the JSON report (the report
        redacts secrets)."""
        return [
            {"path": str(cfg.path), "content": dict(cfg.raw)}
            for path, cfg in sorted(self._configs.items(), key=lambda kv: str(kv[0]))
            if path is not None
        ]

    def dataset_entry(
        self,
        ref: Any,
        cfg: ProjectConfig,
        test_path: Path,
        marker_kwargs: Mapping[str, Any],
    ) -> DatasetEntry:
        split = marker_kwargs.get("split")
        if ref is None:
            raise ConfigError(
                "@pytest.mark.embedbench needs dataset=: a name from embedbench.yaml "
                f"(known: {sorted(cfg.datasets)}) or a path"
            )
        if isinstance(ref, RetrievalDataset):
            key = f"object:{ref.fingerprint}"
            self._objects[key] = ref
            return DatasetEntry(name=ref.name, path=Path(key))
        if not isinstance(ref, (str, Path)):
            raise ConfigError(f"dataset={ref!r}: give a name, a path or a RetrievalDataset")
        if isinstance(ref, str) and ref in cfg.datasets:
            entry = cfg.datasets[ref]
            if split:
                entry = DatasetEntry(entry.name, entry.path, str(split), entry.docs, entry.subset)
            return entry
        path = Path(ref)
        candidates = (
            [path] if path.is_absolute() else [test_path.parent / path, self.rootdir / path]
        )
        for candidate in candidates:
            if candidate.exists():
                resolved = candidate.resolve()
                return DatasetEntry(name=resolved.name, path=resolved, split=str(split or "test"))
        raise ConfigError(
            f"dataset {str(ref)!r} is neither a name in "
            f"{cfg.path if cfg.path else 'embedbench.yaml (none found)'} "
            f"(known: {sorted(cfg.datasets)}) nor an existing path"
        )

    # -- evaluation ------------------------------------------------------------------------

    def dataset(self, entry: DatasetEntry) -> RetrievalDataset:
        key = str(entry.path) if str(entry.path).startswith("object:") else None
        if key is not None:
            return self._objects[key]
        case_key = dataset_key(entry)
        if case_key not in self._datasets:
            ds = load_dataset(entry.path, split=entry.split, docs=entry.docs, name=entry.name)
            if entry.subset:
                ds = ds.subset(**entry.subset)
                ds.name = entry.name
            self._datasets[case_key] = ds
        return self._datasets[case_key]

    def provider(self, spec: ModelSpec) -> Provider:
        return self.evaluator.provider(spec)

    def searcher(self, case: Case) -> Searcher:
        """The model with its index built over the case's documents (built once)."""
        key = (case.model, case.dataset_key)
        if key not in self._searchers:
            try:
                ds = self.dataset(case.dataset)
                provider = self.provider(case.model)
                retriever = provider.build(ds.documents, cache=self.evaluator.cache)
                self._searchers[key] = Searcher(case.model, provider, retriever)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001
                self._searchers[key] = exc
        found = self._searchers[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def result(self, case: Case) -> RetrievalResult:
        """The result for ``case``, computed once; a failure is remembered and raised again."""
        key = case.key
        if key not in self._results:
            try:
                ds = self.dataset(case.dataset)
                self._results[key] = self.evaluator.evaluate(case.model, ds, k=case.k)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - isolate one model's failure
                self._results[key] = exc
        found = self._results[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def evaluate(
        self,
        model: str | ModelSpec,
        dataset: str | Path | RetrievalDataset,
        *,
        k: Iterable[int] | None = None,
        test_path: Path | None = None,
    ) -> RetrievalResult:
        """Ad-hoc evaluation inside a test (the ``embedbench`` fixture): memoised too."""
        here = test_path or self.rootdir / "conftest.py"
        cfg = self.project_config(here)
        entry = self.dataset_entry(dataset, cfg, here, {})
        spec = cfg.apply_provider_options(ModelSpec.coerce(model))
        case = Case(spec, entry, _k_tuple(k, cfg.k), ThresholdSet.empty())
        return self.result(case)

    # -- records ---------------------------------------------------------------------------

    def record(
        self,
        nodeid: str,
        test: str,
        case: Case,
        result: RetrievalResult | None,
        error: BaseException | None,
    ) -> TestRecord:
        """Record what a retrieval test produced (its status follows with :meth:`set_status`)."""
        record = self.records[nodeid] = TestRecord(
            nodeid=nodeid,
            test=test,
            model=case.model.short_name,
            spec=case.model.spec,
            dataset=case.dataset.name,
            k=list(case.k),
            status=Status.ERROR if error is not None else Status.RUNNING,
            error=f"{type(error).__name__}: {error}" if error is not None else None,
            result=result.to_dict(per_query=True) if result is not None else None,
            settings_fingerprint=settings_fingerprint(case.model, case.k, result),
            settings=settings_of(case.model, case.k, result),
            dataset_parts=self.dataset_parts(case) if result is not None else None,
            machine_fingerprint=self.machine_fingerprint,
            reference=case.reference,
        )
        if record.result is not None:  # the latency gate compares distributions, not two p95s
            latency = record.result["latency"]
            latency["per_query_ms"] = [float(v) for v in result.latency.per_query_ms]  # type: ignore[union-attr]
        return record

    def dataset_parts(self, case: Case) -> dict[str, Any]:
        """Size and fingerprint of each part of the case's dataset (computed once)."""
        key = case.dataset_key
        if key not in self._dataset_parts:
            self._dataset_parts[key] = dataset_parts(self.dataset(case.dataset))
        return self._dataset_parts[key]

    @property
    def machine_fingerprint(self) -> str:
        """Hardware and Python that decide timings (not the host name)."""
        if self._machine is None:
            self._machine = machine_fingerprint()
        return self._machine

    def after_test(self, nodeid: str, test: str, case: Case, result: RetrievalResult) -> list[str]:
        """Thresholds, then the baseline gate: every failure line for this test."""
        failures = check_thresholds(result, case.thresholds.for_test(test, case.model.short_name))
        record = self.records.get(nodeid)
        if record is None or record.result is None:
            return failures
        if self.options.update_baseline == "all":
            return failures  # accepting the current numbers: nothing to gate against
        bad = self.baseline.problem or self.baseline.damaged.get(nodeid)
        if bad and self.options.update_baseline is None:
            return [*failures, bad]  # only the tests gated against a bad file or entry fail
        outcome = gate(
            record,
            self.baseline.entries.get(self.baseline_key(nodeid)),
            case.gate,
            seed=self.options.seed,
            n_resamples=self.options.bootstrap,
            query_texts={q.id: q.text for q in self.dataset(case.dataset).queries},
        )
        record.baseline = outcome.to_dict()
        return failures + outcome.failures

    def set_status(self, nodeid: str, when: str, outcome: str, message: str | None) -> None:
        """Fold a test phase's outcome into its record (setup/teardown failures are errors)."""
        record = self.records.get(nodeid)
        if record is None:
            return
        if when == "call":
            record.status = Status(outcome)
        elif outcome in ("failed", "skipped"):
            record.status = Status.ERROR if outcome == "failed" else Status.SKIPPED
        if outcome == "failed" and message and not record.error:
            record.error = message

    def merge(self, records: Iterable[TestRecord | Mapping[str, Any]]) -> None:
        """Add records sent by an xdist worker (as :meth:`TestRecord.to_dict` data)."""
        for record in records:
            found = as_record(record)
            self.records[found.nodeid] = found

    def write_baseline(self) -> list[str]:
        """In update mode, store the entries of this run's tests; lines saying what was done.

        The entries are merged into the file as it is on disk at the end of the run (under a
        lock), so concurrent updates keep each other's entries. Raises ``OSError`` or
        :class:`~pytest_embedbench.exceptions.BaselineError` when nothing could be written.
        """
        mode = self.options.update_baseline
        if mode is None:
            return []
        entries = {
            self.baseline_key(nodeid): entry_from_record(record)
            for nodeid, record in sorted(self.records.items())
            if record.result is not None
        }
        done = self.baseline.update(entries, replace=mode != "new")
        added, replaced = done.added, done.replaced
        return [
            f"baseline {self.baseline.path}: {added} entr{'y' if added == 1 else 'ies'} added, "
            f"{replaced} replaced (mode {mode!r})",
            *done.notes,
        ]

    def baseline_key(self, nodeid: str) -> str:
        """The baseline entry key of a node id: its file relative to :attr:`project_dir`, so
        ``pytest myproj`` from the parent folder finds the entries ``pytest`` in ``myproj``
        recorded (node ids are relative to the rootdir, which follows the start folder)."""
        path, sep, rest = nodeid.partition("::")
        try:
            relative = (self.rootdir / path).resolve().relative_to(self.project_dir.resolve())
        except ValueError:  # a test outside the project folder keeps its node id
            return nodeid
        return relative.as_posix() + sep + rest

    def not_recorded(self) -> list[str]:
        """Tests whose result never reached this process (their xdist worker died)."""
        return sorted(self.expected - set(self.records))


#: cut-offs every case computes, whatever k says: the table shows nDCG@10 and Recall@100 and
#: the default gate compares them
ALWAYS_K = frozenset({10, 100})


def _k_tuple(k: Any, default: tuple[int, ...] | None) -> tuple[int, ...]:
    """The cut-offs of a case: ``k`` (the marker's or evaluate()'s), else the config's, else
    DEFAULT_K; always with 10 and 100 added, so ``k=10`` and ``k: 10`` both mean (10, 100)."""
    if k is None:
        return tuple(sorted(set(default or DEFAULT_K) | ALWAYS_K))
    values = [k] if isinstance(k, int) else list(k)
    if not values or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values
    ):
        raise ConfigError(f"k={k!r}: give cut-offs as integers >= 1, e.g. k=(1, 10, 100)")
    return tuple(sorted(set(values) | ALWAYS_K))


class Searcher:
    """A model plus its built index: ``search(query, k)`` for timing with pytest-benchmark.

    Usage::

        @pytest.mark.embedbench(dataset="support", models=["bm25"])
        def test_search_speed(searcher, benchmark):
            hits = benchmark(searcher.search, "how do I reset my password", 10)
            assert len(hits) == 10
    """

    def __init__(self, spec: ModelSpec, provider: Provider, retriever: Any) -> None:
        self.spec = spec
        self.provider = provider
        self.retriever = retriever

    @property
    def name(self) -> str:
        return self.spec.short_name

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The top-k ``(document id, score)`` pairs for one query text, best first."""
        ids, scores = self.retriever.search(query, k)
        return list(zip(ids, scores, strict=True))
