"""The axes a test's models run along besides the models themselves: the index axis (issue
35: each embedding model once per index) and the reranking axis (issue 43: each model's first
stage, then each reranker over its top depth), read from ``--embedbench-indexes`` /
``--embedbench-rerankers``, the marker or embedbench.yaml, checked at collection, and crossed
with the test's cases (:func:`with_axes`).

Usage::

    cases = with_axes(cases, options, marker, cfg, "test_x.py: @pytest.mark.embedbench")
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.exceptions import ConfigError
from ..models.providers.registry import has_vectors
from ..retrieval.indexes import IndexSpec, named_indexes
from ..retrieval.rerank import RerankerSpec, parse_rerankers

if TYPE_CHECKING:
    from ..config.project import Options, ProjectConfig

__all__ = ["index_axis", "reranker_axis", "with_axes"]


def with_axes(
    cases: list[Any], options: Options, marker: Any, cfg: ProjectConfig, where: str
) -> list[Any]:
    """``cases`` (one per model) crossed with the index axis (embedding models only) and the
    reranking axis; neither goes with ``stress=`` (a ConfigError naming ``where``)."""
    indexes = index_axis(options, marker, cfg, where)
    if indexes:  # each embedding model x index, each its own test
        if marker.stress is not None:
            raise ConfigError(
                f"{where} gives both stress= and indexes=; measure them in separate tests"
            )
        cases = [
            replace(case, index=index, index_name=name) if has_vectors(case.model) else case
            for case in cases
            for name, index in (indexes if has_vectors(case.model) else ((None, None),))
        ]
    k = cases[0].k if cases else (10,)
    rerankers = reranker_axis(options, marker, cfg, where, k)
    if rerankers:  # each model's first stage x reranker, each its own test
        if marker.stress is not None:
            raise ConfigError(
                f"{where} gives both stress= and rerankers=; measure them in separate tests"
            )
        depths = tuple(sorted({r.depth for r in rerankers if not r.is_none}))
        cases = [
            replace(case, reranker=r, stage_depths=depths) for case in cases for r in rerankers
        ]
    return cases


def index_axis(
    options: Options, marker: Any, cfg: ProjectConfig, where: str
) -> tuple[tuple[str | None, IndexSpec], ...]:
    """``--embedbench-indexes`` (ini ``embedbench_indexes``), which replaces every test's
    index axis and gives one to the tests without (not to a stress test, which takes no
    index axis); else the marker's ``indexes=``, else
    embedbench.yaml's ``indexes:``; each index with its name (None: its spec names it).
    A bad spec is a ConfigError naming where, with a did-you-mean."""
    if options.indexes and marker.stress is None:
        found = named_indexes(options.indexes, "--embedbench-indexes")
    elif marker.indexes is not None:
        found = named_indexes(marker.indexes, f"{where} indexes")
    else:
        found = tuple((cfg.index_names.get(spec.spec), spec) for spec in cfg.indexes)
    # where each engine runs (embedbench.yaml index_engines:, a database's DSN)
    at, engines = f"{cfg.path}: index_engines", cfg.index_engines
    return tuple(
        (name, spec.with_settings(engines.get(spec.engine), f"{at}.{spec.engine}"))
        for name, spec in found
    )


def reranker_axis(
    options: Options, marker: Any, cfg: ProjectConfig, where: str, k: tuple[int, ...]
) -> tuple[RerankerSpec, ...]:
    """``--embedbench-rerankers`` (ini ``embedbench_rerankers``), which replaces every
    test's reranking axis (not a stress test's); else the marker's ``rerankers=``, else
    embedbench.yaml's ``rerankers:``. Each names a reranker or an embedding provider
    (did-you-mean otherwise) and reranks at least as deep as the test's largest cut-off;
    each takes its options from ``providers:`` of embedbench.yaml."""
    from ..evaluation.reranked import check_reranker, with_options

    if options.rerankers and marker.stress is None:
        origin = "--embedbench-rerankers"
        specs = parse_rerankers(list(options.rerankers), origin)
    elif marker.rerankers is not None:
        origin = f"{where} rerankers"
        specs = parse_rerankers(marker.rerankers, origin)
    else:
        origin, specs = f"{cfg.path}: rerankers", cfg.rerankers
    for spec in specs:
        check_reranker(spec, origin)
        if not spec.is_none and spec.depth < max(k):
            raise ConfigError(
                f"{origin}: reranker {spec.text!r} reranks the top {spec.depth}, but the "
                f"test computes k up to {max(k)} (k={list(k)}); give a depth >= {max(k)} "
                f"('{spec.spec}@{max(k)}'), or drop the cut-offs above {spec.depth}"
            )
    where_yaml = str(cfg.path or "embedbench.yaml")
    return tuple(with_options(s, cfg.providers, where_yaml) for s in specs)
