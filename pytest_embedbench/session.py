"""One EmbedBenchSession per pytest run: cases, the result registry, records, xdist merge.

The plugin builds it from :class:`~pytest_embedbench.config.Options` and keeps it in
``config.stash``; nothing here imports pytest's config machinery, so it works without pytest.
What a run's records add up to (comparisons, recommendations, notices) is computed once, at the
end, by :mod:`pytest_embedbench.report.summary`; this module keeps the run's state only.
A (model, dataset, k) result is computed once per process however many tests use it; a model
that fails to load fails every test that needs it, and only those. Thresholds, the baseline
gate and the baseline update are :class:`~pytest_embedbench.gatekeeper.Gatekeeper`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .baseline.thresholds import ThresholdSet
from .cases import (
    MARKER_KEYS,
    Case,
    CaseBuilder,
    check_chunk_tokenizer,
    check_thresholds_computed,
    dataset_key,
    load_entry,
)
from .config import DatasetEntry, Options
from .datasets import RetrievalDataset
from .evaluate import Evaluator, RetrievalResult
from .exceptions import ConfigError
from .gatekeeper import Gatekeeper
from .metrics import parse_cutoffs
from .providers import ModelSpec, Provider
from .records import Status, TestRecord, as_record, dataset_parts, machine_fingerprint
from .search import Searcher
from .stress.noise import Paraphraser
from .stress.workloads import PAIRED, Workload, evaluate_workload, parse_workloads

__all__ = ["MARKER_KEYS", "Case", "EmbedBenchSession"]


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
        #: reads markers and embedbench.yaml files into cases
        self.builder = CaseBuilder(options, rootdir)
        self.project_config = self.builder.project_config
        self.dataset_entry = self.builder.dataset_entry
        self.check_names = lambda: self.builder.check_names(self.collected, self.rootdir)
        #: path -> what an xdist worker read of that embedbench.yaml (see effective_configs)
        self._worker_configs: dict[str, dict[str, Any]] = {}
        self._datasets: dict[str, RetrievalDataset] = {}
        self._results: dict[tuple[Any, ...], RetrievalResult | BaseException] = {}
        self._searchers: dict[tuple[Any, ...], Searcher | BaseException] = {}
        #: nodeid -> record of every retrieval test that ran
        self.records: dict[str, TestRecord] = {}
        #: node ids of every collected test (before deselection), to find orphaned baselines
        self.collected: set[str] = set()
        #: node ids whose worker announced a record (under xdist), to find the ones never sent
        self.expected: set[str] = set()
        #: thresholds and the baseline gate per test, the baseline update at the end
        self.gatekeeper = Gatekeeper(options, rootdir, self.project_dir)
        self.baseline = self.gatekeeper.baseline
        self._dataset_parts: dict[str, dict[str, Any]] = {}
        #: artifacts (JSON report, baseline) that could not be written, one line each
        self.write_failures: list[str] = []
        self.json_written = False
        #: (label, path) of every report file this run wrote, in order
        self.artifacts: list[tuple[str, Any]] = []
        self._machine: str | None = None
        #: what this run's records add up to, built once at its end (report.summary.Summary)
        self.summary: Any = None
        #: finds the chat model of ``noise:paraphrase`` points (the plugin asks its hook);
        #: called once, when the first paraphrase point runs
        self.find_paraphraser: Callable[[], Paraphraser | None] = lambda: None
        self._paraphraser: list[Paraphraser | None] = []

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
                latency_sample=self.options.latency_sample,
            )
            if self.options.ray:
                from .distributed import prefill_hook

                self._evaluator.prefill = prefill_hook(self.options.ray_settings())
        return self._evaluator

    def effective_configs(self) -> list[dict[str, Any]]:
        """Each embedbench.yaml this run read (``path``, ``content``), for the JSON report:
        this process's, and under xdist the ones its workers read (the controller collects
        nothing, so it reads none itself), by path."""
        found = {**self._worker_configs}
        found.update((c["path"], c) for c in self.builder.effective_configs())
        return [found[path] for path in sorted(found)]

    def merge_configs(self, configs: Iterable[Mapping[str, Any]]) -> None:
        """Add the configurations an xdist worker read (its :meth:`effective_configs`)."""
        for config in configs:
            self._worker_configs[str(config["path"])] = dict(config)

    # -- collection ------------------------------------------------------------------------

    def cases(
        self, marker_kwargs: Mapping[str, Any], test_path: Path, test: str = ""
    ) -> list[Case]:
        """The cases an ``embedbench`` marker asks for; ConfigError names any bad argument.

        ``test`` is the test function's name (for per-test gate settings, resolved now)."""
        build = self.builder
        build.check_marker_keys(marker_kwargs)
        cfg = self.project_config(test_path)
        dataset = self.dataset_entry(marker_kwargs.get("dataset"), cfg, test_path, marker_kwargs)
        k = _k_tuple(marker_kwargs.get("k"), cfg.k, f"{test_path.name}: @pytest.mark.embedbench k")
        thresholds = build.marker_thresholds(marker_kwargs, cfg, test_path)
        gate_config, marker_gate = build.gate_config(marker_kwargs, cfg, test_path)
        specs = build.distinct_specs(marker_kwargs.get("models"), cfg, test_path)
        for spec in specs:
            check_thresholds_computed(thresholds.for_test(test, spec.short_name), test, k)
        chunking, where = self._chunking_of(dataset, marker_kwargs, cfg, test_path)
        check_chunk_tokenizer(chunking, specs, where)
        cases = [
            Case(
                spec,
                dataset,
                k,
                thresholds,
                build.gate_settings(gate_config, marker_gate, test, spec, k, cfg),
                cfg.reference,
            )
            for spec in specs
        ]
        build.model_names.update(spec.short_name for spec in specs)
        points = self._workloads(marker_kwargs.get("stress"), test_path)
        if points:  # model x workload point, each its own test
            return [replace(case, workload=point) for case in cases for point in points]
        return cases

    def _workloads(self, stress: Any, test_path: Path) -> list[Workload]:
        """The marker's ``stress=`` points (ConfigError naming the test file when bad)."""
        if stress is None:
            return []
        try:
            return parse_workloads(stress, seed=self.options.seed)
        except ConfigError as exc:
            raise ConfigError(f"{test_path.name}: @pytest.mark.embedbench stress: {exc}") from None

    def _chunking_of(
        self, entry: DatasetEntry, marker_kwargs: Mapping[str, Any], cfg: Any, test_path: Path
    ) -> tuple[Any, str]:
        """The chunking settings of a case's dataset and where they were set (for errors)."""
        marker = f"{test_path.name}: @pytest.mark.embedbench chunking"
        if str(entry.path).startswith("object:"):
            ds = self.builder.objects[str(entry.path)]
            where = f"dataset {ds.name!r}: chunking"
            return ds.chunking, marker if "chunking" in marker_kwargs else where
        if "chunking" in marker_kwargs:
            return entry.chunking, marker
        return entry.chunking, f"{cfg.path}: datasets.{marker_kwargs.get('dataset')}.chunking"

    # -- evaluation ------------------------------------------------------------------------

    def dataset(self, entry: DatasetEntry) -> RetrievalDataset:
        key = str(entry.path) if str(entry.path).startswith("object:") else None
        if key is not None:
            return self.builder.objects[key]
        case_key = dataset_key(entry)
        if case_key not in self._datasets:
            ds = load_entry(entry)
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
                retriever = self.evaluator.build_retriever(provider, ds)
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
                if case.workload is not None:
                    self._results[key] = self._stressed(case, ds)
                else:
                    self._results[key] = self.evaluator.evaluate(case.model, ds, k=case.k)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - isolate one model's failure
                self._results[key] = exc
        found = self._results[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def _stressed(self, case: Case, ds: RetrievalDataset) -> RetrievalResult:
        """A workload point's result; a noise point's clean run is the unstressed case's, so
        it is evaluated once per model and dataset and shared with the other tests."""
        assert case.workload is not None
        paraphraser = None
        if dict(case.workload.params).get("noise") == "paraphrase":
            if not self._paraphraser:
                self._paraphraser.append(self.find_paraphraser())
            paraphraser = self._paraphraser[0]
        paired = case.workload.kind in PAIRED  # noise, chunk sizes: compared with the clean run
        clean = self.result(replace(case, workload=None)) if paired else None
        return evaluate_workload(
            self.evaluator,
            case.model,
            ds,
            case.workload,
            k=case.k,
            clean=clean,
            paraphraser=paraphraser,
        )

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
        case = Case(spec, entry, _k_tuple(k, cfg.k, "embedbench.evaluate k"), ThresholdSet.empty())
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
        parts = self.dataset_parts(case) if result is not None else None
        record = TestRecord.of(nodeid, test, case, result, error, parts, self.machine_fingerprint)
        self.records[nodeid] = record
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
        record = self.records.get(nodeid)
        return self.gatekeeper.check(
            nodeid, record, test, case, result, lambda: self.dataset(case.dataset)
        )

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

    def baseline_key(self, nodeid: str) -> str:
        """The baseline entry key of a node id (see :meth:`.Gatekeeper.key`)."""
        return self.gatekeeper.key(nodeid)

    def not_recorded(self) -> list[str]:
        """Tests whose result never reached this process (their xdist worker died)."""
        return sorted(self.expected - set(self.records))


def _k_tuple(k: Any, default: tuple[int, ...] | None, where: str) -> tuple[int, ...]:
    """The cut-offs of a case: ``k`` (the marker's or evaluate()'s), else the config's, else
    DEFAULT_K, checked by the one validator (:func:`~.metrics.parse_cutoffs`)."""
    return parse_cutoffs(default if k is None else k, where)
