"""Threshold rules: parse them (per default, model and test) and check a result.

A thresholds file (``--embedbench-thresholds``, or the ``thresholds`` key of
``embedbench.yaml``)::

    defaults:                       # every retrieval test
      ndcg@10: ">= 0.5"
      latency.p95_ms: "<= 200"
    models:                         # by model short name
      bm25: {ndcg@10: ">= 0.4"}
    tests:                          # by test function name
      test_support_search:
        recall@10: ">= 0.7"
        models:
          all-MiniLM-L6-v2: {ndcg@10: ">= 0.6"}

More specific entries replace less specific ones for the same key (defaults < models < tests <
tests.models). Keys are metric names (``ndcg@10``), ``latency.<p50_ms|p90_ms|p95_ms|p99_ms|
mean_ms|max_ms|qps>``, ``peak_rss_mb``, ``documents_per_s``, ``cache.hit_rate``,
``timings.<stage>_s`` and the storage and indexing figures ``bytes_per_doc``, ``index_mb``,
``cache_mb`` and ``docs_per_s`` (MB: MiB, 2**20 bytes; the figure registry's
:data:`~pytest_embedbench.records.figures.STORAGE`, each a
:class:`~pytest_embedbench.result.RetrievalResult` attribute of that name); with an index
axis (docs/indexes.md), ``index.neighbour_recall@K``, ``index.delta.<metric>`` (the paired
delta against exact search) and ``index.<qps|p50_ms|p95_ms|build_s|bytes>``; on a dataset in
several languages (where a metric key is the macro average), ``by_language.<language>.<metric>``
one language's mean (``by_language.zh.ndcg@10``); with a reranking axis (docs/rerankers.md),
``lift.<metric>`` (the reranker's paired lift over its first stage: ``lift.ndcg@10: ">= 0"``,
the reranker may not make it worse; a failure names the queries it hurt most and the relevant
documents it pushed out of the top); with ``--embedbench-concurrency`` and a provider on a
loopback server, ``query_load.c<N>.<qps|p50_ms|p95_ms|p99_ms>`` (its query embedding from N
threads, docs/indexes.md).
"""

from __future__ import annotations

import math
import operator
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.exceptions import ConfigError, DatasetError, MetricError, did_you_mean
from ..core.names import check_keys
from ..core.yamlfile import read_yaml
from ..data.datasets import check_language
from ..evaluation.metrics import METRICS, parse_metric
from ..models.providers.registry import has_vectors
from ..records.figures import INDEX_FIGURES, STORAGE
from .settings import checked_index_key

if TYPE_CHECKING:
    from ..evaluation.evaluate import RetrievalResult

__all__ = [
    "Threshold",
    "ThresholdSet",
    "check_named",
    "named_in",
    "check_thresholds",
    "load_thresholds",
    "parse_rule",
    "value_of",
]

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_RULE = re.compile(r"^\s*(>=|<=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_LATENCY = {"p50_ms", "p90_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms", "qps"}
_TIMINGS = {
    "model_load_s",
    "document_embedding_s",
    "index_build_s",
    "query_embedding_s",
    "search_s",
    "encode_s",
    "total_s",
}
#: what a storage figure that is NaN lacks (``docs_per_s`` NaN passes: every document came
#: from the cache, nothing was embedded to time)
_NOT_MEASURED = {
    "bytes_per_doc": "the model does not report its index size",
    "index_mb": "the model does not report its index size",
    "cache_mb": "the run used no embedding cache (--embedbench-no-cache, or the cache was "
    "unavailable)",
}

#: a load figure's key prefix (then ``c<threads>.``) -> what a run that sent no queries at that
#: concurrency did not do, and how to make it (``{level}``: the thread count)
_UNSENT_LOAD = {
    "index.load.": "the run sent no queries from {level} threads; run with "
    "--embedbench-concurrency naming {level} (e.g. 1,{level})",
    "query_load.": "the run sent the provider's server no queries from {level} threads; run "
    "with --embedbench-concurrency naming {level} (e.g. 1,{level}) and a provider whose "
    "base_url or host is on loopback (127.0.0.1)",
}
_PLAIN = {"peak_rss_mb", "documents_per_s", "cache.hit_rate", *STORAGE}
#: the index axis's figures (``index.<name>``, the registry's); ``index.neighbour_recall@K``
#: and ``index.delta.<metric>`` (the paired delta against exact) take a cut-off
_INDEX = {f.key.removeprefix("index.") for f in INDEX_FIGURES}
_SECTIONS = {"defaults", "models", "tests"}
#: ``query_load.c<N>.<figure>``: one level of a provider's query embedding under load
_QUERY_LOAD = re.compile(r"^query_load\.c([0-9]+)\.(qps|p50_ms|p95_ms|p99_ms)$")
#: the keys under a prefix: ``latency.<name>`` and ``timings.<stage>_s``
_GROUPS = {"latency.": ("latency", _LATENCY), "timings.": ("timing", _TIMINGS)}


def _unsent_load(key: str) -> str | None:
    """Why the load figure ``key`` (``index.load.c4.qps``) has no value: the thread count it
    was not measured at, and the fix (None: not a load figure)."""
    for prefix, why in _UNSENT_LOAD.items():
        if key.startswith(prefix):
            return why.format(level=key.removeprefix(prefix + "c").partition(".")[0])
    return None


@dataclass(frozen=True)
class Threshold:
    """One rule: ``key op limit`` (e.g. ``ndcg@10 >= 0.6``), with where it was written."""

    key: str
    op: str
    limit: float
    origin: str

    def check(self, value: float) -> bool:
        """Whether ``value`` meets the rule; NaN (not measured, e.g. docs/s on a warm cache)
        passes."""
        return math.isnan(value) or _OPS[self.op](value, self.limit)

    def __str__(self) -> str:
        return f"{self.key} {self.op} {self.limit:g}"


def _check_key(key: str, origin: str) -> str:
    if key.startswith("by_language."):
        return _check_language_key(key, origin)
    for prefix, (what, names) in _GROUPS.items():
        if key.startswith(prefix):
            if key.split(".", 1)[1] not in names:
                raise ConfigError(
                    f"{origin}: unknown {what} key {key!r}"
                    f"{did_you_mean(key, _key_names(key)) or '.'} Use {sorted(names)}"
                )
            return key
    if key.startswith("index."):
        return _check_index_key(key, origin)
    if key.startswith("query_load."):
        found = _QUERY_LOAD.match(key)
        if found is None or int(found.group(1)) < 1:
            raise ConfigError(
                f"{origin}: unknown query load key {key!r}; write "
                "query_load.c<N>.<qps|p50_ms|p95_ms|p99_ms> with N a level of "
                "--embedbench-concurrency, e.g. query_load.c4.qps"
            )
        return f"query_load.c{int(found.group(1))}.{found.group(2)}"
    if key.startswith("lift."):
        try:
            return f"lift.{parse_metric(key.split('.', 1)[1])}"
        except MetricError as exc:
            raise ConfigError(
                f"{origin}: threshold key {key!r}: {exc}; write lift.<metric>, e.g. lift.ndcg@10"
            ) from None
    if key in _PLAIN:
        return key
    try:
        return str(parse_metric(key))
    except MetricError as exc:
        raise ConfigError(
            f"{origin}: threshold key {key!r} is neither a metric ({exc}) nor one of "
            f"{sorted(_PLAIN)}, latency.*, timings.*{did_you_mean(key, _key_names(key))}"
        ) from None


def _check_language_key(key: str, origin: str) -> str:
    """``by_language.<language>.<metric>``: one language's mean on a dataset in several
    languages (``by_language.zh.ndcg@10``)."""
    _, _, rest = key.partition(".")
    language, _, metric = rest.partition(".")
    try:
        check_language(language, f"{origin}: threshold key {key!r}")
        return f"by_language.{language}.{parse_metric(metric)}"
    except (DatasetError, MetricError) as exc:
        raise ConfigError(
            f"{origin}: threshold key {key!r}: {exc}; write by_language.<language>.<metric>, "
            "e.g. by_language.zh.ndcg@10"
        ) from None


def _check_index_key(key: str, origin: str) -> str:
    """``index.qps`` and the like, ``index.neighbour_recall@K``, ``index.delta.<metric>``."""
    found = checked_index_key(key, f"{origin}: threshold key {key!r}")
    if found is not None:
        return found
    raise ConfigError(
        f"{origin}: unknown index key {key!r}{did_you_mean(key, _key_names(key)) or '.'} "
        f"Use index.neighbour_recall@K, index.delta.<metric> (e.g. index.delta.ndcg@10), "
        "index.load.c<N>.<qps|p50_ms|p95_ms|p99_ms> (with --embedbench-concurrency) or "
        f"{sorted(f'index.{n}' for n in _INDEX)}"
    )


def threshold_depth(key: str) -> int | None:
    """The cut-off a threshold key needs computed (None: none)."""
    if key.startswith("by_language."):
        return parse_metric(key.split(".", 2)[2]).k
    if key.startswith("index.neighbour_recall@"):
        return int(key.rpartition("@")[2])
    if key.startswith("index.delta."):
        return parse_metric(key.split(".", 2)[2]).k
    if key.startswith("lift."):
        return parse_metric(key.split(".", 1)[1]).k
    if "@" in key and not key.startswith("index."):
        return parse_metric(key).k
    return None


def _key_names(key: str) -> list[str]:
    """The threshold keys a misspelt ``key`` may have meant: every metric at its cut-off
    (``ndgc@10`` -> ``ndcg@10``), the plain keys, and the latency and timing keys."""
    depth = key.rpartition("@")[2]
    metrics = [f"{name}@{depth if depth.isdigit() else 10}" for name in METRICS]
    latency = [f"latency.{name}" for name in _LATENCY]
    index = [f"index.{name}" for name in _INDEX]
    index += [f"index.neighbour_recall@{depth if depth.isdigit() else 10}"]
    return [
        *metrics,
        *_PLAIN,
        *latency,
        *(f"timings.{name}" for name in _TIMINGS),
        *index,
    ]


def parse_rule(key: str, rule: Any, origin: str) -> Threshold:
    """``("ndcg@10", ">= 0.6")`` into a Threshold; a bad rule names key, value and the fix."""
    name = _check_key(str(key), origin)
    match = _RULE.match(str(rule)) if isinstance(rule, (str, int, float)) else None
    if not match or isinstance(rule, bool):
        raise ConfigError(
            f'{origin}: threshold {key}: {rule!r} is not a rule; write it as ">= 0.6" or '
            '"<= 100" (quoted, an operator and a number)'
        )
    threshold = Threshold(name, match.group(1), float(match.group(2)), origin)
    _check_possible(threshold, rule)
    return threshold


def _check_possible(threshold: Threshold, rule: Any) -> None:
    """A rule no value can meet (``ndcg@10 >= 1.5``, ``recall@10 < 0``) is a ConfigError: every
    metric and the cache hit rate lie in [0, 1], and nothing measured is negative."""
    op, limit = threshold.op, threshold.limit
    if threshold.key.startswith(("index.delta.", "lift.")):  # a difference of two metrics
        if (op in (">=", ">") and limit >= 1) or (op in ("<=", "<") and limit <= -1):
            what = "a lift" if threshold.key.startswith("lift.") else "a delta against exact"
            raise ConfigError(
                f"{threshold.origin}: threshold {threshold.key} {rule!r} can never hold: "
                f"{what} lies in [-1, 1]; a gate on it reads like "
                '">= -0.01" (at most 0.01 lost)'
            )
        return
    bounded = threshold.key == "cache.hit_rate" or "@" in threshold.key
    high = 1.0 if bounded else math.inf
    impossible = (
        (op == ">=" and limit > high)
        or (op == ">" and limit >= high)
        or (op == "<=" and limit < 0)
        or (op == "<" and limit <= 0)
    )
    if impossible:
        span = "lies in [0, 1]" if bounded else "is never negative"
        raise ConfigError(
            f"{threshold.origin}: threshold {threshold.key}: {rule!r} can never hold: "
            f"{threshold.key} {span}. Write a limit that a result can meet, e.g. "
            f'"{">=" if op in (">=", ">") else "<="} {0.6 if bounded else 100:g}"'
        )


def _rules(block: Any, origin: str) -> dict[str, Threshold]:
    if not isinstance(block, Mapping):
        raise ConfigError(f"{origin}: expected a mapping of key to rule, got {block!r}")
    return {
        t.key: t
        for t in (parse_rule(k, v, f"{origin}.{k}") for k, v in block.items() if k != "models")
    }


@dataclass(frozen=True)
class ThresholdSet:
    """Parsed thresholds, resolved per test and model with :meth:`for_test`."""

    defaults: Mapping[str, Threshold]
    models: Mapping[str, Mapping[str, Threshold]]
    tests: Mapping[str, Mapping[str, Threshold]]
    test_models: Mapping[tuple[str, str], Mapping[str, Threshold]]

    @classmethod
    def empty(cls) -> ThresholdSet:
        return cls({}, {}, {}, {})

    @classmethod
    def parse(cls, raw: Mapping[str, Any], origin: str) -> ThresholdSet:
        check_keys(raw, _SECTIONS, f"{origin}: unknown threshold section(s)", "use")
        defaults = _rules(raw.get("defaults") or {}, f"{origin}: defaults")
        models = {
            str(m): _rules(block, f"{origin}: models.{m}")
            for m, block in (raw.get("models") or {}).items()
        }
        tests: dict[str, dict[str, Threshold]] = {}
        test_models: dict[tuple[str, str], dict[str, Threshold]] = {}
        for test, block in (raw.get("tests") or {}).items():
            where = f"{origin}: tests.{test}"
            tests[str(test)] = _rules(block, where)
            per_model = block.get("models") if isinstance(block, Mapping) else None
            for m, sub in (per_model or {}).items():
                test_models[(str(test), str(m))] = _rules(sub, f"{where}.models.{m}")
        return cls(defaults, models, tests, test_models)

    def merged(self, other: ThresholdSet) -> ThresholdSet:
        """``other``'s rules over this set's, section by section."""

        def merge(a: Mapping[Any, Mapping[str, Threshold]], b: Mapping[Any, Any]) -> dict:
            out = {key: dict(value) for key, value in a.items()}
            for key, value in b.items():
                out.setdefault(key, {}).update(value)
            return out

        return ThresholdSet(
            {**self.defaults, **other.defaults},
            merge(self.models, other.models),
            merge(self.tests, other.tests),
            merge(self.test_models, other.test_models),
        )

    def for_test(self, test: str, model: str) -> list[Threshold]:
        """The rules that apply to ``test`` (function name) and ``model`` (short name)."""
        rules: dict[str, Threshold] = dict(self.defaults)
        rules.update(self.models.get(model, {}))
        rules.update(self.tests.get(test, {}))
        rules.update(self.test_models.get((test, model), {}))
        return [rules[key] for key in sorted(rules)]


def load_thresholds(path: Path) -> ThresholdSet:
    """Read a thresholds YAML file."""
    raw = read_yaml(path, "thresholds file", ConfigError)
    if raw is None:
        return ThresholdSet.empty()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping with defaults, models or tests")
    return ThresholdSet.parse(raw, str(path))


def value_of(result: RetrievalResult, key: str) -> tuple[float, str]:
    """The value ``key`` names on ``result`` and how to show it (with its interval)."""
    if key.startswith("latency."):
        value = float(getattr(result.latency, key.split(".", 1)[1]))
        return value, f"{value:.4g}"
    if key.startswith("timings."):
        value = float(getattr(result.timings, key.split(".", 1)[1]))
        return value, f"{value:.4g}"
    if key.startswith("index."):
        return _index_value(result, key.split(".", 1)[1])
    if key.startswith("query_load.c"):  # a level of the provider's query embedding under load
        level, _, which = key.removeprefix("query_load.c").partition(".")
        at = next((lv for lv in result.query_load if lv.concurrency == int(level)), None)
        value = math.nan if at is None else float(getattr(at, which))
        return value, f"{value:.4g}"
    if key.startswith("by_language."):
        _, language, metric = key.split(".", 2)
        est = result.by_language[language].metric(metric)
        return float(est), f"{float(est):.4f} [{est.low:.4f}, {est.high:.4f}]"
    if key.startswith("lift."):
        est = result.lift(key.split(".", 1)[1])
        p = getattr(est, "p_value", math.nan)
        return float(est), f"{float(est):+.4f} [{est.low:+.4f}, {est.high:+.4f}] p={p:.3g}"
    if key == "peak_rss_mb":
        return result.peak_rss_mb, f"{result.peak_rss_mb:.1f}"
    if key == "documents_per_s":
        return result.documents_per_s, f"{result.documents_per_s:.1f}"
    if key == "cache.hit_rate":
        return result.cache.hit_rate, f"{result.cache.hit_rate:.3f}"
    if key in STORAGE:
        value = float(getattr(result, key))
        return value, f"{value:.4g}"
    est = result.metric(key)
    return float(est), f"{float(est):.4f} [{est.low:.4f}, {est.high:.4f}]"


def _index_value(result: RetrievalResult, name: str) -> tuple[float, str]:
    """An ``index.<name>`` figure of ``result`` (which has an index axis)."""
    if name.startswith("neighbour_recall@"):
        est = result.neighbour_recall(int(name.rpartition("@")[2]))
    elif name.startswith("delta."):
        est = result.delta_vs_exact(name.split(".", 1)[1])
    elif name.startswith("load.c"):  # one level of --embedbench-concurrency (NaN: not run)
        level, _, which = name.removeprefix("load.c").partition(".")
        assert result.index is not None
        at = next((lv for lv in result.index.load if lv.concurrency == int(level)), None)
        value = math.nan if at is None else float(getattr(at, which))
        return value, f"{value:.4g}"
    else:
        run = result.index
        assert run is not None
        found = run.nbytes if name == "bytes" else getattr(run, name)
        value = math.nan if found is None else float(found)
        return value, f"{value:.4g}"
    return float(est), f"{float(est):.4f} [{est.low:.4f}, {est.high:.4f}]"


def check_thresholds(result: RetrievalResult, rules: list[Threshold]) -> list[str]:
    """One line per violated rule (empty when all hold)."""
    failures = []
    for rule in rules:
        if rule.key.startswith("latency.") and result.latency.n == 0:
            failures.append(
                f"{rule.key}: not measured, the run timed no query (latency_passes=0); set "
                f"--embedbench-latency-passes to 1 or more, or drop the rule  ({rule.origin})"
            )
            continue
        if rule.key.startswith("index.") and result.index is None:
            if not has_vectors(result.model):
                continue  # a lexical model or a ranker runs once, without the index axis
            failures.append(
                f"{rule.key}: not measured, the test has no index axis; give the marker "
                f"indexes=[...] (or indexes: in embedbench.yaml), or drop the rule  "
                f"({rule.origin})"
            )
            continue
        if rule.key.startswith("by_language.") and rule.key.split(".")[1] not in (
            result.by_language
        ):
            failures.append(
                f"{rule.key}: not measured, dataset {result.dataset_name!r} has no language "
                f"{rule.key.split('.')[1]!r} (its languages: {list(result.languages)}); give "
                f"the dataset that language (languages: in embedbench.yaml), or drop the rule  "
                f"({rule.origin})"
            )
            continue
        if rule.key.startswith("lift.") and result.stage1 is None:
            failures.append(
                f"{rule.key}: not measured, the test has no reranker; give the marker "
                "rerankers=['none', 'hf-ce:/models/my-ce@100'] (or rerankers: in "
                f"embedbench.yaml), or drop the rule  ({rule.origin})"
            )
            continue
        value, shown = value_of(result, rule.key)
        unsent = _unsent_load(rule.key) if math.isnan(value) else None
        if unsent is not None:
            failures.append(
                f"{rule.key}: not measured, {unsent}, or drop the rule  ({rule.origin})"
            )
            continue
        if rule.key in _NOT_MEASURED and math.isnan(value):
            if rule.key == "cache_mb" and not has_vectors(result.model):
                continue  # a lexical model or a ranker caches no vectors
            failures.append(
                f"{rule.key}: not measured, {_NOT_MEASURED[rule.key]}; drop the rule for this "
                f"model  ({rule.origin})"
            )
            continue
        if not rule.check(value):
            failures.append(
                f"{rule.key} = {shown} is not {rule.op} {rule.limit:g}  ({rule.origin})"
            )
            if rule.key.startswith("lift."):
                failures.extend(_hurt(result, rule.key.split(".", 1)[1]))
    return failures


def _hurt(result: RetrievalResult, metric: str) -> list[str]:
    """Under a failing lift: the queries the reranker hurt most, against its first stage,
    with the relevant documents it pushed out of the top (``lost``), brought in, and pushed
    down among its candidates (with their ranks before and after)."""
    from ..records.querydiff import failure_lines, query_diff

    assert result.stage1 is not None and result.rerank is not None
    diff = query_diff(
        result.data(per_query=True),
        result.stage1.data(per_query=True),
        metric=metric,
        against="the first stage",
        candidates=result.rerank.depth,
    )
    return [] if diff is None else ["  " + line for line in failure_lines(diff)]


def check_named(
    named: Iterable[tuple[str, str, str]], known: Mapping[str, set[str]], root: Path
) -> None:
    """Every model and test function that a per-model or per-test key names (``named``: kind
    ``"model"`` or ``"test"``, the name, the file and key; from ``thresholds: models``,
    ``thresholds: tests`` and their ``models``, ``gate: models``, ``gate: tests``) must exist,
    else its settings apply to nothing while the user believes a gate is on: a ConfigError
    naming the file and key, with a did-you-mean.

    A name exists when it is ``known`` (the models and tests of every collected test, the
    models a configuration lists) or appears in a Python file under ``root``: a test file not
    collected this time (``pytest tests/test_a.py``) may use it, and its neighbour's name
    (``test_manuals_search`` beside ``test_support_search``) is no typo."""
    source: list[str] = []
    for kind, name, where in named:
        if name in known[kind]:
            continue
        source = source or [_python_source(root)]
        if re.search(_USE[kind].format(re.escape(name)), source[0]):
            continue
        defined = set(re.findall(_USE["test"].format(r"(test\w*)"), source[0]))
        hint = did_you_mean(name, known[kind] | (defined if kind == "test" else set()))
        noun = "model" if kind == "model" else "test function"
        names = sorted(known[kind])
        shown = f"{names[:10]}" if len(names) <= 10 else f"{names[:10]} and {len(names) - 10} more"
        raise ConfigError(
            f"{where}: {name!r} is no {noun} of this run, nor named in a Python file under "
            f"{root}, so its settings apply to nothing{hint or '.'} The {noun}s of this run: "
            f"{shown}"
        )


#: how a Python file uses a model short name (a spec or a name) or defines a test function
_USE = {"model": r"(?<![\w-]){}(?![\w-])", "test": r"\bdef\s+{}\s*\("}


def named_in(raw: Any, prefix: str) -> list[tuple[str, str, str]]:
    """``(kind, name, where)`` for each model (kind ``"model"``) and test (``"test"``) that a
    thresholds or gate mapping names, where is the file and key (``...: thresholds.models.x``)."""
    if not isinstance(raw, Mapping):
        return []
    out = [("model", str(m), f"{prefix}models.{m}") for m in _keys(raw.get("models"))]
    for test, block in _mapping(raw.get("tests")).items():
        out.append(("test", str(test), f"{prefix}tests.{test}"))
        sub = block.get("models") if isinstance(block, Mapping) else None
        out += [("model", str(m), f"{prefix}tests.{test}.models.{m}") for m in _keys(sub)]
    return out


def _mapping(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def _keys(value: Any) -> list[Any]:
    return list(_mapping(value))


def _python_source(root: Path) -> str:
    """The text of the Python files under ``root`` (hidden folders, virtual environments and
    caches left out; files over 1 MB too): where a name missing from this run's tests may be
    used by a test file that was not collected. Read only when such a name is met."""
    texts = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in ("__pycache__", "node_modules", "site-packages")
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        ]
        for name in files:
            path = os.path.join(folder, name)
            try:
                if name.endswith(".py") and os.path.getsize(path) <= 1 << 20:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        texts.append(fh.read())
            except OSError:  # unreadable, or a link to nothing: it uses no name
                continue
    return "\n".join(texts)
