"""The figure registry (records/figures.py) is the one place a figure is defined: its names,
where it is read from, its unit and scale, its direction and whether it is noisy. The columns,
the thresholds, the baseline gate, the storage figures and the writers read it (issue 41)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

import pytest_embedbench
from pytest_embedbench.baseline.settings import NOISY_FIGURES, GateConfig, figure_direction
from pytest_embedbench.baseline.thresholds import parse_rule
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.records.figures import (
    FIGURES,
    INDEX_FIGURES,
    MIB,
    NOISY,
    STORAGE,
    figure,
    gate_keys,
)
from pytest_embedbench.records.resultdata import ResourcesData, ResultData, storage_figures
from pytest_embedbench.report.summary.columns import (
    column_names,
    default_columns,
    direction,
    resolve_column,
)

PACKAGE = Path(pytest_embedbench.__file__).parent


def test_every_name_names_one_figure() -> None:
    names = [name for f in (*FIGURES, *INDEX_FIGURES) for name in f.names]
    assert len(names) == len(set(names))
    assert figure("bytes_per_doc") is figure("bytes_per_document")
    assert figure("docs_per_s") is figure("documents_per_s")
    assert figure("ndcg@10") is None and figure("no_such_figure") is None


def test_the_storage_figures_are_read_as_the_registry_says() -> None:
    """``bytes_per_doc`` and friends: each a registry figure read from the result's resources
    (MiB: 2**20 bytes), NaN and absent figures as None."""
    resources = ResourcesData(index_bytes=3 * MIB, bytes_per_document=1536.0, cache_bytes=MIB)
    assert storage_figures(resources, 250.0) == {
        "bytes_per_doc": 1536.0,
        "index_mb": 3.0,
        "cache_mb": 1.0,
        "docs_per_s": 250.0,
    }
    assert list(storage_figures(ResourcesData(), math.nan).values()) == [None] * 4
    result = ResultData(resources=resources, documents_per_s=250.0)
    for name in STORAGE:
        found = figure(name)
        assert found is not None and result.storage[name] == found.get(result)


def test_the_gate_reads_directions_and_noise_from_the_registry() -> None:
    """The figures the gate compares only on the baseline's machine, and which way each is
    better, are what the gate used before the registry (hand-written then)."""
    assert gate_keys() == (
        "bytes_per_doc",
        "index_mb",
        "cache_mb",
        "docs_per_s",
        "index.bytes",
        "index.bytes_per_document",
        "index.build_s",
        "index.qps",
        "index.p50_ms",
        "index.p95_ms",
        "rerank.p50_ms",
        "rerank.p95_ms",
    )
    assert (
        NOISY_FIGURES
        == NOISY
        == {
            "docs_per_s",
            "index.qps",
            "index.p50_ms",
            "index.p95_ms",
            "index.build_s",
            "rerank.p50_ms",
            "rerank.p95_ms",
        }
    )
    higher = {"docs_per_s", "index.qps", "index.neighbour_recall@10", "index.delta.ndcg@10"}
    higher.add("lift.ndcg@10")  # a reranker's lift over its first stage
    others = ["index.neighbour_recall@10", "index.delta.ndcg@10", "lift.ndcg@10", "nope"]
    for key in [*gate_keys(), *others]:
        assert figure_direction(key) is (key in higher), key


def test_a_storage_figure_is_a_threshold_key_by_its_gate_name() -> None:
    for name in STORAGE:
        assert parse_rule(name, ">= 0", "t").key == name
    with pytest.raises(ConfigError, match="bytes_per_document"):
        parse_rule("bytes_per_document", ">= 0", "t")  # the CSV's name is no threshold key


def test_columns_accept_a_figure_by_its_key_or_its_alias() -> None:
    by_alias, by_key = resolve_column("bytes_per_doc"), resolve_column("bytes_per_document")
    assert by_alias == by_key and by_key is not None and by_key.header == "bytes/doc"
    # docs/s is a default column (hidden by -q): its alias finds that column, not a copy
    docs = resolve_column("docs_per_s")
    assert docs == resolve_column("documents_per_s") and docs is not None and not docs.quiet
    assert "bytes_per_doc" not in column_names()  # --help lists each figure once, by key
    assert direction("p95_ms") is False and direction("ndcg@10") is True
    assert direction("dimension") is None


def test_the_default_figure_columns_take_header_and_format_from_the_registry() -> None:
    """The default table's figure columns (latency, docs/s, +RSS) are the registry's figures:
    a header or a number format changed there changes the table."""
    figures = {f.key: f for f in FIGURES}
    shown = [c for c in default_columns() if c.key in figures]
    assert [c.key for c in shown] == ["p50_ms", "p95_ms", "documents_per_s", "added_rss_mb"]
    for column in shown:
        assert (column.header, column.fmt) == (figures[column.key].header, figures[column.key].fmt)


def test_no_module_defines_a_figure_list_of_its_own() -> None:
    """The registry imports nothing of the package (every floor reads it), and the lists it
    replaced (the storage names in the thresholds and the gate settings, the columns'
    ``_ALIASES``) stay gone."""
    source = (PACKAGE / "records" / "figures.py").read_text(encoding="utf-8")
    imports = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)]
    assert all(
        n.level == 0 and not (n.module or "").startswith("pytest_embedbench") for n in imports
    )
    for path in PACKAGE.rglob("*.py"):
        if path.name == "figures.py" and path.parent.name == "records":
            continue
        text = path.read_text(encoding="utf-8")
        assert '("bytes_per_doc", "index_mb"' not in text, path
        if "report" in path.parts:
            assert "_ALIASES" not in text, path  # a figure's other name is in the registry


def test_the_reranking_gate_keys_are_checked() -> None:
    """``lift.<metric>`` and ``rerank.p50_ms``/``p95_ms`` are gate figures; a bad metric after
    ``lift.`` names the key and the form, a misspelt latency the key it meant."""
    parsed = GateConfig.parse({"figures": {"lift.NDCG@10": 0.01, "rerank.p95_ms": "20%"}}, "g")
    keys = {rule.key: rule for rule in parsed.defaults.figures}
    assert keys["lift.ndcg@10"].tolerance == 0.01 and keys["rerank.p95_ms"].relative
    with pytest.raises(ConfigError, match=r"g\.figures\.lift\.ndcgg@10: unknown metric 'ndcgg'"):
        GateConfig.parse({"figures": {"lift.ndcgg@10": 0}}, "g")
    with pytest.raises(ConfigError, match="'rerank.p96_ms'; did you mean 'rerank.p95_ms'"):
        GateConfig.parse({"figures": {"rerank.p96_ms": "5%"}}, "g")
