"""One EmbedBenchSession per pytest run: cases, the result registry, records, xdist merge.

The plugin builds it from :class:`~pytest_embedbench.config.Options` and keeps it in
``config.stash``; nothing here imports pytest's config machinery, so it is usable (and tested)
on its own. A (model, dataset, k) result is computed once per process however many tests use
it; a model that fails to load fails every test that needs it, and only those.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .baseline import ThresholdSet, check_thresholds, load_thresholds
from .config import DatasetEntry, Options, ProjectConfig, find_config, load_config
from .datasets import RetrievalDataset, load_dataset
from .evaluate import DEFAULT_K, Evaluator, RetrievalResult
from .exceptions import ConfigError
from .providers.base import ModelSpec, Provider

__all__ = ["MARKER_KEYS", "Case", "EmbedBenchSession", "ProgressPrinter"]

#: keyword arguments the ``embedbench`` marker accepts
MARKER_KEYS = frozenset({"models", "dataset", "k", "split", "thresholds"})


@dataclass(frozen=True)
class Case:
    """What one parametrised test evaluates: a model on a dataset at cut-offs k."""

    model: ModelSpec
    dataset: DatasetEntry
    k: tuple[int, ...]
    thresholds: ThresholdSet

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.model, self.dataset_key, self.k)

    @property
    def dataset_key(self) -> str:
        entry = self.dataset
        return f"{entry.path}|{entry.split}|{entry.docs}|{sorted((entry.subset or {}).items())}"


class EmbedBenchSession:
    """State of one run: configs, datasets, results and the records reports are built from."""

    def __init__(
        self,
        options: Options,
        rootdir: Path,
        *,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.options = options
        self.rootdir = rootdir
        self.progress = progress
        self._evaluator: Evaluator | None = None
        self._configs: dict[Path | None, ProjectConfig] = {}
        self._datasets: dict[str, RetrievalDataset] = {}
        self._results: dict[tuple[Any, ...], RetrievalResult | BaseException] = {}
        self._objects: dict[str, RetrievalDataset] = {}
        self._cli_thresholds = (
            load_thresholds(options.thresholds) if options.thresholds else ThresholdSet.empty()
        )
        #: nodeid -> record (JSON-ready dict) of every retrieval test that ran
        self.records: dict[str, dict[str, Any]] = {}

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

    def cases(self, marker_kwargs: Mapping[str, Any], test_path: Path) -> list[Case]:
        """The cases an ``embedbench`` marker asks for; ConfigError names any bad argument."""
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
        specs = self.model_specs(marker_kwargs.get("models"), cfg, test_path)
        names = [s.short_name for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(
                f"models {dupes} appear more than once in one test; give each a distinct "
                "name with ModelSpec(spec, name=...)"
            )
        return [Case(spec, dataset, k, thresholds) for spec in specs]

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
            specs.append(cfg.apply_provider_options(ModelSpec.coerce(item)))
        if not specs:
            where = f"{cfg.path}" if cfg.path else "an embedbench.yaml"
            raise ConfigError(
                f"no models for {test_path.name}: pass models=[...] to the embedbench marker, "
                f"list 'models' in {where}, or use --embedbench-models"
            )
        return specs

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
        case_key = f"{entry.path}|{entry.split}|{entry.docs}|{sorted((entry.subset or {}).items())}"
        if case_key not in self._datasets:
            ds = load_dataset(entry.path, split=entry.split, docs=entry.docs, name=entry.name)
            if entry.subset:
                ds = ds.subset(**entry.subset)
                ds.name = entry.name
            self._datasets[case_key] = ds
        return self._datasets[case_key]

    def provider(self, spec: ModelSpec) -> Provider:
        return self.evaluator.provider(spec)

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
    ) -> None:
        self.records[nodeid] = {
            "nodeid": nodeid,
            "test": test,
            "model": case.model.short_name,
            "spec": case.model.spec,
            "dataset": case.dataset.name,
            "k": list(case.k),
            "status": "error" if error is not None else "running",
            "error": _describe(error) if error is not None else None,
            "result": result.to_dict(per_query=True) if result is not None else None,
        }

    def set_status(self, nodeid: str, when: str, outcome: str, message: str | None) -> None:
        """Fold a test phase's outcome into its record (setup/teardown failures are errors)."""
        record = self.records.get(nodeid)
        if record is None:
            return
        if when == "call":
            record["status"] = outcome
        elif outcome in ("failed", "skipped"):
            record["status"] = "error" if outcome == "failed" else "skipped"
        if outcome == "failed" and message and not record.get("error"):
            record["error"] = message

    def merge(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Add records sent by an xdist worker."""
        for record in records:
            self.records[record["nodeid"]] = dict(record)

    def check_thresholds(self, case: Case, result: RetrievalResult, test: str) -> list[str]:
        return check_thresholds(result, case.thresholds.for_test(test, case.model.short_name))


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _k_tuple(k: Any, default: tuple[int, ...] | None) -> tuple[int, ...]:
    if k is None:
        return default or DEFAULT_K
    values = [k] if isinstance(k, int) else list(k)
    if not values or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values
    ):
        raise ConfigError(f"k={k!r}: give cut-offs as integers >= 1, e.g. k=(1, 10, 100)")
    # 10 and 100 are always computed: the summary table shows nDCG@10 and Recall@100
    return tuple(sorted(set(values) | {10, 100}))


class ProgressPrinter:
    """Prints document-embedding progress (done, rate) when a cold embedding runs long.

    ``write(line)`` must reach the terminal outside captured output. Nothing is printed for a
    run that finishes within ``delay`` seconds, so warm-cache runs stay quiet.
    """

    def __init__(self, write: Callable[[str], None], *, delay: float = 2.0, every: float = 2.0):
        self.write = write
        self.delay = delay
        self.every = every
        self._start: float | None = None
        self._last = 0.0
        self._printed = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != "documents":
            return
        now = time.perf_counter()
        if self._start is None or done <= 0:
            self._start, self._last, self._printed = now, now, False
        if done <= 0:
            return
        elapsed = now - self._start
        finished = done >= total
        if (elapsed >= self.delay and now - self._last >= self.every) or (
            finished and self._printed
        ):
            rate = done / elapsed if elapsed > 0 else math.inf
            self.write(
                f"embedbench: embedded {done}/{total} documents ({rate:.0f} docs/s)"
                + (" done" if finished else "")
            )
            self._last = now
            self._printed = True
        if finished:
            self._start = None
