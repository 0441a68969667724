"""Workload points: the ``stress=[...]`` strings of the marker, parsed, and their evaluation.

``"noise:typo"``, ``"noise:truncate:0.5"``, ``"noise:typo*10"`` (ten seeds, averaged per
query), ``"chunk-size:128,256"`` (tokens), ``"needle:2k,8k@0,0.5,1"`` (lengths x depths;
``"needle:zh:2k@0,1"``: Chinese haystacks) each
become one or more
:class:`Workload` points; each point is its own test, with an id such as ``typo``,
``typo-x10``, ``truncate-50``, ``chunk-256`` or ``needle-8k-d50``.

:func:`evaluate_workload` runs one point for one model without pytest and returns a
:class:`StressedResult`: a :class:`~pytest_embedbench.result.RetrievalResult` of the stressed
dataset with ``clean`` (the same model on the unstressed dataset) and ``delta(metric)``, the
paired bootstrap difference stressed - clean.

Usage::

    from pytest_embedbench import Evaluator
    from pytest_embedbench.evaluation.workloads import evaluate_workload, parse_workloads

    ev = Evaluator(seed=0)
    for point in parse_workloads(["noise:typo*5", "needle:2k@0,1"]):
        result = evaluate_workload(ev, "bm25", dataset, point)
        print(point.id, result.ndcg10, result.delta("ndcg@10") if result.clean else "")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.exceptions import ConfigError
from ..core.names import repeated
from ..data.datasets import RetrievalDataset
from ..data.stress.chunks import chunk_size_dataset, parse_size
from ..data.stress.needle import depth_id, length_id, needle_dataset, parse_length
from ..data.stress.noise import Paraphraser, noisy_dataset, parse_noise
from ..records.resultdata import MetricData, ResultData, StressData
from ..records.serial import from_data
from .metrics import parse_metric
from .result import RetrievalResult
from .stats import Estimate

if TYPE_CHECKING:
    from ..models.providers import ModelSpec, Provider
    from .evaluate import Evaluator

__all__ = ["STRESS", "StressedResult", "Workload", "evaluate_workload", "parse_workloads"]

#: most seeds one noise point may average (``noise:typo*N``)
MAX_SEEDS = 100
#: kinds compared query by query with the unstressed dataset (``clean`` and ``delta``)
PAIRED = frozenset({"noise", "chunk-size"})


@dataclass(frozen=True)
class Workload:
    """One stress point: its kind (``noise``, ``needle``), parameters, seeds and test id."""

    kind: str
    #: sorted (name, value) pairs: noise -> (("noise", "typo"),); needle -> length, depth
    params: tuple[tuple[str, Any], ...]
    seeds: tuple[int, ...]
    #: the pytest id part: ``typo``, ``typo-x10``, ``needle-8k-d50``
    id: str
    #: the marker string it came from
    spec: str

    def param(self, name: str) -> Any:
        return dict(self.params)[name]

    @property
    def seed(self) -> int:
        """The first seed (a noise point averages over all of :attr:`seeds`)."""
        return self.seeds[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "spec": self.spec,
            "params": dict(self.params),
            "seeds": list(self.seeds),
        }


def _parse_noise(spec: str, arg: str, seed: int) -> list[Workload]:
    body, star, count = arg.partition("*")
    try:
        n = int(count) if star else 1
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_SEEDS:
        raise ConfigError(
            f"stress {spec!r}: '*N' repeats a noise point over N seeds, 1 <= N <= {MAX_SEEDS} "
            "(e.g. 'noise:typo*10')"
        )
    points = []
    for kind in body.split(","):
        noise = parse_noise(kind)
        ident = noise.id + (f"-x{n}" if n > 1 else "")
        seeds = tuple(seed + i for i in range(n))
        points.append(Workload("noise", (("noise", str(noise)),), seeds, ident, spec))
    return points


def _parse_needle(spec: str, arg: str, seed: int) -> list[Workload]:
    """``needle:2k,8k@0,0.5,1``, or with the haystacks' language first,
    ``needle:zh:2k,8k@0,0.5,1`` (:func:`~..data.stress.needle.needle_dataset`'s ``language``;
    English when none is given)."""
    from ..data.stress.needle import LANGUAGES as NEEDLE_LANGUAGES

    language = "en"
    head, colon, rest = arg.partition(":")
    if colon:
        if head.strip() not in NEEDLE_LANGUAGES:
            raise ConfigError(
                f"stress {spec!r}: haystack language {head.strip()!r} is not written; use one "
                f"of {sorted(NEEDLE_LANGUAGES)}, e.g. 'needle:zh:2k@0,0.5,1'"
            )
        language, arg = head.strip(), rest
    sizes, at, depths_text = arg.partition("@")
    if not sizes.strip():
        raise ConfigError(
            f"stress {spec!r}: give haystack lengths in tokens and depths, e.g. "
            "'needle:2k,8k@0,0.5,1'"
        )
    lengths = [parse_length(s) for s in sizes.split(",")]
    depths: list[float] = []
    for text in (depths_text if at else "0,0.5,1").split(","):
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0.0 <= value <= 1.0:
            raise ConfigError(
                f"stress {spec!r}: depth {text!r} must be a fraction from 0 (start) to 1 (end)"
            )
        depths.append(value)
    # English points keep their parameters and ids; another language is in both
    named = () if language == "en" else (("language", language),)
    prefix = "needle" if language == "en" else f"needle-{language}"
    return [
        Workload(
            "needle",
            (("depth", depth), *named, ("length", length)),
            (seed,),
            f"{prefix}-{length_id(length)}-{depth_id(depth)}",
            spec,
        )
        for length in lengths
        for depth in depths
    ]


def _parse_chunks(spec: str, arg: str, seed: int) -> list[Workload]:
    if not arg.strip():
        raise ConfigError(f"stress {spec!r}: give chunk sizes in tokens, e.g. 'chunk-size:128,256'")
    sizes = [parse_size(s) for s in arg.split(",")]
    return [Workload("chunk-size", (("size", s),), (seed,), f"chunk-{s}", spec) for s in sizes]


#: workload kinds by name: ``parse(spec, argument, seed) -> points``
STRESS: dict[str, Callable[[str, str, int], list[Workload]]] = {
    "chunk-size": _parse_chunks,
    "needle": _parse_needle,
    "noise": _parse_noise,
}


def parse_workloads(specs: str | Iterable[str], *, seed: int = 0) -> list[Workload]:
    """Every point of ``specs`` in order; duplicate ids and unknown kinds are ConfigErrors."""
    items = [specs] if isinstance(specs, str) else list(specs)
    points: list[Workload] = []
    for spec in items:
        if not isinstance(spec, str) or ":" not in spec:
            raise ConfigError(
                f"stress workload {spec!r}: write 'kind:arguments', e.g. 'noise:typo' or "
                f"'needle:2k,8k@0,0.5,1'; kinds: {sorted(STRESS)}"
            )
        kind, _, arg = spec.partition(":")
        if kind.strip() not in STRESS:
            raise ConfigError(
                f"stress workload {spec!r}: unknown kind {kind!r}; kinds: {sorted(STRESS)}"
            )
        points.extend(STRESS[kind.strip()](spec, arg.strip(), int(seed)))
    dupes = repeated(p.id for p in points)
    if dupes:
        raise ConfigError(f"stress workloads {items!r} give the point(s) {dupes} more than once")
    return points


class StressedResult(RetrievalResult):
    """A model on a stressed dataset: a RetrievalResult whose per-query values are the mean
    over the point's seeds (rankings, latency and resources are the first seed's run).

    ``clean`` is the same model on the unstressed dataset (None for needles, which have no
    clean counterpart); ``delta(metric)`` the paired bootstrap difference stressed - clean;
    ``workload`` the point; ``info`` what the workload measured (the needle's position, and
    whether the model's maximum sequence length cut it off).
    """

    def __init__(
        self,
        runs: Sequence[RetrievalResult],
        *,
        workload: Workload,
        clean: RetrievalResult | None,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        if not runs:
            raise ConfigError(f"workload {workload.id!r}: no run to report")
        # the first seed's run is this result's body; metrics are recomputed as means
        self.__dict__.update(runs[0].__dict__)
        self._per_query = {}
        self._estimates = {}
        self.runs = tuple(runs)
        self.workload = workload
        self.clean = clean
        self.info: dict[str, Any] = dict(info or {})
        self._deltas: dict[str, Estimate] = {}

    def __repr__(self) -> str:
        return f"StressedResult({self.name!r}, {self.workload.id!r}, seeds={len(self.runs)})"

    def per_query(self, name: str) -> np.ndarray:
        if len(self.runs) == 1:
            return super().per_query(name)
        key = str(parse_metric(name))
        if key not in self._per_query:
            self._per_query[key] = np.mean([r.per_query(name) for r in self.runs], axis=0)
        return self._per_query[key]

    def delta(self, name: str = "ndcg@10") -> Estimate:
        """Stressed - clean on ``name``, query by query, with its paired bootstrap interval;
        ``delta("ndcg@10").low > -0.05`` reads "the drop is surely under 0.05"."""
        if self.clean is None:
            raise ConfigError(
                f"workload {self.workload.id!r} has no clean counterpart (a needle point is "
                "its own dataset); assert on its metrics, e.g. retrieval.hit(1)"
            )
        name = str(parse_metric(name))
        if name not in self._deltas:
            est = self._paired(self.clean, name, f"{name} {self.workload.id} - clean")
            est.query_ids = self.query_ids
            est.context = f"{self.name} on {self.dataset_name}"
            self._deltas[name] = est
        return self._deltas[name]

    def data(self, *, per_query: bool = False) -> ResultData:
        """The result's data with its ``stress`` part: the workload, what it measured and,
        paired with the clean run, the clean figures and the differences."""
        headline = [f"{family}@{k}" for family in ("ndcg", "recall") for k in self.k]
        clean = delta = None
        if self.clean is not None:
            clean = {m: MetricData.of(self.clean.metric(m)) for m in headline}
            delta = {m: MetricData.of(self.delta(m)) for m in headline}
        stress = from_data(StressData, {**self.workload.to_dict(), "info": dict(self.info)})
        return replace(
            super().data(per_query=per_query), stress=replace(stress, clean=clean, delta=delta)
        )


def stressed_dataset(
    workload: Workload,
    dataset: RetrievalDataset | None,
    seed: int,
    *,
    tokenizer: Any = "all-MiniLM-L6-v2",
    max_seq_length: int | None = None,
    paraphraser: Paraphraser | None = None,
) -> tuple[RetrievalDataset, dict[str, Any]]:
    """The dataset of one seed of ``workload`` and what it says about itself."""
    if workload.kind == "noise":
        if dataset is None:
            raise ConfigError(f"workload {workload.id!r} perturbs a dataset's queries: give one")
        noisy = noisy_dataset(dataset, workload.param("noise"), seed, paraphraser=paraphraser)
        return noisy, {}
    if workload.kind == "chunk-size":
        if dataset is None:
            raise ConfigError(f"workload {workload.id!r} re-chunks a dataset: give one")
        return chunk_size_dataset(dataset, workload.param("size")), {"size": workload.param("size")}
    if workload.kind == "needle":
        point = needle_dataset(
            workload.param("length"),
            workload.param("depth"),
            seed=seed,
            tokenizer=tokenizer,
            max_seq_length=max_seq_length,
            language=dict(workload.params).get("language", "en"),
        )
        return point.dataset, point.info
    raise ConfigError(f"workload kind {workload.kind!r} is unknown; kinds: {sorted(STRESS)}")


def model_tokenizer(provider: Provider) -> tuple[Any, int | None]:
    """The tokenizer that counts a model's tokens (its own for sentence-transformers, else
    all-MiniLM-L6-v2's) and its maximum sequence length (None when it reads whole texts)."""
    inner = getattr(provider, "_model", None)
    tokenizer = getattr(inner, "tokenizer", None)
    limit = provider.info.get("max_seq_length")
    return (tokenizer or "all-MiniLM-L6-v2"), (int(limit) if limit else None)


def evaluate_workload(
    evaluator: Evaluator,
    model: str | ModelSpec,
    dataset: RetrievalDataset | None,
    workload: Workload,
    *,
    k: Iterable[int] | None = None,
    clean: RetrievalResult | None = None,
    paraphraser: Paraphraser | None = None,
) -> StressedResult:
    """``model`` on ``workload``'s stressed dataset, once per seed, with its clean result.

    ``dataset`` may be None for a needle point (it builds its own). ``clean`` is reused when
    given (else evaluated here, for noise points); the embedding
    cache makes the documents of every noisy run free, so only the queries are embedded again.
    """
    provider = evaluator.provider(model)
    tokenizer, limit = model_tokenizer(provider)
    runs = []
    info: dict[str, Any] = {}
    # query noise keeps the documents: one index serves every seed (not a chunked dataset's:
    # its pooled retriever keeps per-search depths, which each run reports)
    shared = None
    if (
        workload.kind == "noise"
        and dataset is not None
        and dataset.chunking is None
        and len(workload.seeds) > 1
    ):
        shared = evaluator.build_retriever(provider, dataset)
    for seed in workload.seeds:
        ds, info = stressed_dataset(
            workload,
            dataset,
            seed,
            tokenizer=tokenizer,
            max_seq_length=limit,
            paraphraser=paraphraser,
        )
        runs.append(evaluator.evaluate(model, ds, k=k, retriever=shared))
    paired = workload.kind in PAIRED
    if paired and clean is None and dataset is not None:
        clean = evaluator.evaluate(model, dataset, k=k)
    return StressedResult(runs, workload=workload, clean=clean if paired else None, info=info)
