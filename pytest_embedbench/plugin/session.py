"""One EmbedBenchSession per pytest run: the result registry, records, xdist merge.

The plugin builds it from :class:`~pytest_embedbench.config.project.Options` and keeps it in
``config.stash``; nothing here imports pytest's config machinery, so it works without pytest.
Collection (markers, embedbench.yaml and options into cases) is
:class:`~pytest_embedbench.plugin.cases.CaseBuilder`'s: the session asks it once per marked test.
What a run's records add up to (comparisons, recommendations, notices) is computed once, at the
end, by :mod:`pytest_embedbench.report.summary.run`; this module keeps the run's state only.
A (model, dataset, k) result is computed once per process however many tests use it; a model
that fails to load fails every test that needs it, and only those. Thresholds, the baseline
gate and the baseline update are :class:`~pytest_embedbench.plugin.gatekeeper.Gatekeeper`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config.project import Options
from ..data.datasets import RetrievalDataset
from ..data.stress.noise import Paraphraser
from ..evaluation.evaluate import Evaluator, RetrievalResult
from ..evaluation.record import Status, TestRecord, as_record, dataset_parts, machine_fingerprint
from ..evaluation.workloads import PAIRED, evaluate_workload
from ..models.providers import ModelSpec, Provider
from ..models.search import Searcher
from .cases import MARKER_KEYS, Case, CaseBuilder, DatasetRef
from .gatekeeper import Gatekeeper

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
        #: path -> what an xdist worker read of that embedbench.yaml (see effective_configs)
        self._worker_configs: dict[str, dict[str, Any]] = {}
        #: what a worker's reading of embedbench.yaml generated (see :meth:`generated`)
        self._worker_generated: list[str] = []
        self._datasets: dict[str, RetrievalDataset] = {}
        self._results: dict[tuple[Any, ...], RetrievalResult | BaseException] = {}
        self._searchers: dict[tuple[Any, ...], Searcher | BaseException] = {}
        #: the rerankers built, by spec (one per run, shared by a depth sweep's tests)
        self._rerankers: dict[tuple[str, int, str], Any] = {}
        #: the provider's query embedding under load, per model and dataset (measured once)
        self._query_loads: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        #: nodeid -> record of every retrieval test that ran
        self.records: dict[str, TestRecord] = {}
        #: node ids of every collected test (before deselection), to find orphaned baselines
        self.collected: set[str] = set()
        #: node ids whose worker announced a record (under xdist), to find the ones never sent
        self.expected: set[str] = set()
        #: node ids of every benchmark test whose call phase ran (results or not)
        self.cases_ran: set[str] = set()
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
        #: what this run's records add up to, built once at its end (report.summary.Summary;
        #: the session imports nothing of the reports, so the plugin builds it)
        self.summary: Any = None
        #: finds the chat model of ``noise:paraphrase`` points (the plugin asks its hook);
        #: called once, when the first paraphrase point runs
        self.find_paraphraser: Callable[[], Paraphraser | None] = lambda: None
        self._paraphraser: list[Paraphraser | None] = []
        #: the configured chat paraphrasers (``paraphrase:`` of embedbench.yaml), by settings
        self._chat_paraphrasers: dict[Any, Any] = {}

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
                memory_budget=self.options.memory_budget,
            )
            if self.options.ray:
                from ..distributed import prefill_hook

                self._evaluator.prefill = prefill_hook(self.options.ray_settings())
        return self._evaluator

    def effective_configs(self) -> list[dict[str, Any]]:
        """Each embedbench.yaml this run read (``path``, ``content``), for the JSON report:
        this process's, and under xdist the ones its workers read (the controller collects
        nothing, so it reads none itself), by path."""
        found = {**self._worker_configs}
        found.update((c["path"], c) for c in self.builder.effective_configs())
        return [found[path] for path in sorted(found)]

    def merge_configs(
        self, configs: Iterable[Mapping[str, Any]], generated: Iterable[str] = ()
    ) -> None:
        """Add the configurations an xdist worker read (its :meth:`effective_configs`) and what
        reading them generated (:meth:`generated`)."""
        for config in configs:
            self._worker_configs[str(config["path"])] = dict(config)
        self._worker_generated.extend(g for g in generated if g not in self._worker_generated)

    def generated(self) -> list[str]:
        """The lines of every eval set this run generated from embedbench.yaml (the file, what
        was kept and rejected, the reminder to review it), here or on an xdist worker."""
        return [*self._worker_generated, *self.builder.generated()]

    # -- collection (the builder's) ---------------------------------------------------------

    def cases(
        self,
        marker_kwargs: Mapping[str, Any],
        test_path: Path,
        test: str = "",
        *,
        args: Sequence[Any] = (),
    ) -> list[Case]:
        """The cases an ``embedbench`` marker asks for (:meth:`.CaseBuilder.cases`); a
        ConfigError names any bad argument."""
        return self.builder.cases(marker_kwargs, test_path, test, args=args)

    def marker_dataset(self, marker_kwargs: Mapping[str, Any], test_path: Path) -> RetrievalDataset:
        """The dataset an ``embedbench`` marker names, loaded (the corpus and evalset fixtures)."""
        return self.dataset(self.builder.marker_dataset(marker_kwargs, test_path))

    def check_names(self) -> None:
        """Once collection ends: the names the configuration uses against every collected test
        (:meth:`.CaseBuilder.check_names`)."""
        self.builder.check_names(self.collected, self.rootdir)

    # -- evaluation ------------------------------------------------------------------------

    def dataset(self, ref: DatasetRef) -> RetrievalDataset:
        """The data ``ref`` names, read once per run."""
        if ref.key not in self._datasets:
            self._datasets[ref.key] = ref.load()
        return self._datasets[ref.key]

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
                if case.reranker is not None:
                    self._results[key] = self._reranked(case, ds)
                elif case.workload is not None:
                    self._results[key] = self._stressed(case, ds)
                elif case.index is not None:
                    from ..evaluation.indexed import evaluate_indexed

                    self._results[key] = evaluate_indexed(
                        self.evaluator,
                        case.model,
                        ds,
                        case.index,
                        k=case.k,
                        concurrency=self.options.concurrency or (),
                    )
                else:
                    self._results[key] = self.evaluator.evaluate(case.model, ds, k=case.k)
                self._judge(case, ds, self._results[key])
                if case.reranker is None and case.workload is None:
                    self._results[key].query_load = self._query_load(case, ds)  # type: ignore[union-attr]
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - isolate one model's failure
                self._results[key] = exc
        found = self._results[key]
        if isinstance(found, BaseException):
            raise found
        return found

    @staticmethod
    def _judge(case: Case, ds: RetrievalDataset, found: RetrievalResult | BaseException) -> None:
        """The case's LLM judge over its result's top k: a plain run, an index's or a
        reranker's (a reranker ``none`` is its first stage, judged once). A stress point is
        not judged (its queries or documents are altered; its clean run is)."""
        if case.judge is None or case.workload is not None or isinstance(found, BaseException):
            return
        if found.judge is None:
            from ..generate.judge import judge_result

            judge_result(found, ds, case.judge, Path(case.judge.file))

    def _query_load(self, case: Case, ds: RetrievalDataset) -> tuple[Any, ...]:
        """The provider's query embedding under ``--embedbench-concurrency``'s levels against
        its loopback server (none: no option, or no such server), once per model and dataset."""
        if not self.options.concurrency:
            return ()
        which = (case.model, case.dataset_key)
        if which not in self._query_loads:
            from ..evaluation.query_load import measure_query_load

            levels = measure_query_load(
                self.provider(case.model),
                [q.text for q in ds.queries],
                self.options.concurrency,
                seed=self.options.seed,
            )
            self._query_loads[which] = levels or ()
        return self._query_loads[which]

    def _reranked(self, case: Case, ds: RetrievalDataset) -> RetrievalResult:
        """A reranker's result over its model's first stage (computed once per model and
        shared by every reranker of the test: ``none`` is the first stage itself); each
        reranker is built once per run, whatever its depths."""
        from ..evaluation.reranked import create_reranker, evaluate_reranked

        assert case.reranker is not None
        stage1 = self.result(case.stage1)
        if case.reranker.is_none:
            return stage1
        spec = case.reranker
        # the options too: they take no part in a spec's equality, and two named rerankers
        # of one spec may have their own under providers:
        which = (spec.spec, id(spec.obj), repr(spec.options))
        if which not in self._rerankers:
            self._rerankers[which] = create_reranker(self.evaluator, spec)
        return evaluate_reranked(
            self.evaluator, stage1, ds, spec, k=case.k, reranker=self._rerankers[which]
        )

    def _stressed(self, case: Case, ds: RetrievalDataset) -> RetrievalResult:
        """A workload point's result; a noise point's clean run is the unstressed case's, so
        it is evaluated once per model and dataset and shared with the other tests."""
        assert case.workload is not None
        paraphraser = None
        if dict(case.workload.params).get("noise") == "paraphrase":
            paraphraser = self.paraphraser(case)
        paired = case.workload.kind in PAIRED  # noise, chunk sizes: compared with the clean run
        clean = self.result(replace(case, workload=None)) if paired else None
        before = dict(getattr(paraphraser, "counts", {}))
        result = evaluate_workload(
            self.evaluator,
            case.model,
            ds,
            case.workload,
            k=case.k,
            clean=clean,
            paraphraser=paraphraser,
        )
        counts_dict = getattr(paraphraser, "counts_dict", None)
        if counts_dict is not None:  # the configured chat model: this point's counts
            counts = counts_dict()
            result.info["paraphrase"] = {
                key: value - before.get(key, 0) if isinstance(value, int) else value
                for key, value in counts.items()
            }
        return result

    def paraphraser(self, case: Case) -> Paraphraser | None:
        """The chat model of a ``noise:paraphrase`` point: the ``pytest_embedbench_paraphraser``
        hook's (asked once per run), else the one its embedbench.yaml names (``paraphrase:``,
        one per configured model, caching in the run's cache folder), else None."""
        if not self._paraphraser:
            self._paraphraser.append(self.find_paraphraser())
        if self._paraphraser[0] is not None or case.paraphrase is None:
            return self._paraphraser[0]
        if case.paraphrase not in self._chat_paraphrasers:
            from ..cache.store import default_cache_dir
            from ..generate.paraphrase import ChatParaphraser

            cache_dir = None
            if not self.options.no_cache:
                cache_dir = self.options.cache_dir or default_cache_dir()
            self._chat_paraphrasers[case.paraphrase] = ChatParaphraser(case.paraphrase, cache_dir)
        return self._chat_paraphrasers[case.paraphrase]

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
        return self.result(self.builder.evaluation_case(model, dataset, k=k, test_path=here))

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

    # -- the end of a run ------------------------------------------------------------------

    @property
    def ran(self) -> bool:
        """Whether a benchmark test ran (here, or on an xdist worker that announced it): one
        with a result, or one using the searcher, model or workload fixture."""
        return bool(self.records or self.expected or self.cases_ran)

    def worker_output(self) -> str:
        """What an xdist worker sends the controller at its end: the node ids it collected and
        the embedbench.yaml files it read (the controller collects none itself); its records
        travel with each test's report, so they survive a worker that dies later."""
        payload = {
            "collected": sorted(self.collected),
            "configs": self.effective_configs(),
            "generated": self.builder.generated(),
        }
        return json.dumps(payload, default=str)
