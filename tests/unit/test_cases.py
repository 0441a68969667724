"""Collection without pytest: the CaseBuilder turns a marker's keywords, embedbench.yaml and the
options into cases, with a typed dataset reference (a path, a configured name or a Python
object) and one check of the marker's keywords."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_embedbench import ConfigError, Document, Query, RetrievalDataset
from pytest_embedbench.config.project import Options
from pytest_embedbench.data.chunking import ChunkingSettings
from pytest_embedbench.plugin.cases import (
    MARKER_KEYS,
    CaseBuilder,
    DatasetRef,
    MarkerArgs,
    dataset_key,
)
from pytest_embedbench.plugin.session import EmbedBenchSession


def tiny() -> RetrievalDataset:
    return RetrievalDataset(
        documents=[
            Document("d1", "Reset your password from the login page."),
            Document("d2", "Invoices are emailed every month as PDF."),
        ],
        queries=[Query("q1", "reset my password"), Query("q2", "monthly invoices")],
        qrels={"q1": {"d1": 1}, "q2": {"d2": 1}},
        name="tiny",
    )


def builder(tmp_path: Path, **options: object) -> CaseBuilder:
    return CaseBuilder(Options(**options), tmp_path)  # type: ignore[arg-type]


def test_a_path_becomes_a_path_reference(tmp_path: Path, beir_folder: Path) -> None:
    test_file = tmp_path / "test_x.py"
    first, second = builder(tmp_path).cases(
        {"models": ["bm25", "hashing"], "dataset": "tiny-beir", "k": [1, 10]}, test_file, "test_x"
    )
    ref = first.dataset
    assert ref.kind == "path"
    assert ref.name == "tiny-beir" and ref.path == beir_folder.resolve()
    assert ref.entry is not None and ref.entry.split == "test"
    assert ref.fingerprint is None and ref.dataset is None
    assert ref.key == dataset_key(ref.entry) and str(ref) == ref.key
    assert second.dataset == ref  # one reference, built once, shared by the models' cases
    assert [d.id for d in ref.load().documents] == ["d1", "d2", "d3", "d4"]


def test_a_configured_name_becomes_a_name_reference_with_the_marker_over_it(
    tmp_path: Path, beir_folder: Path
) -> None:
    (tmp_path / "embedbench.yaml").write_text(
        "datasets:\n  support: {path: tiny-beir, chunking: {size: 200, overlap: 20}}\n",
        encoding="utf-8",
    )
    build = builder(tmp_path)
    test_file = tmp_path / "test_x.py"
    (plain,) = build.cases({"models": ["bm25"], "dataset": "support"}, test_file)
    assert plain.dataset.kind == "name" and plain.dataset.name == "support"
    assert plain.dataset.path == beir_folder.resolve()
    assert plain.dataset.chunking == ChunkingSettings(size=200, overlap=20)
    marker = {"models": ["bm25"], "dataset": "support", "split": "dev", "chunking": {"size": 100}}
    (case,) = build.cases(marker, test_file)
    entry = case.dataset.entry
    assert entry is not None and entry.split == "dev"
    # the marker's chunking goes key by key over the configured one
    assert case.dataset.chunking == ChunkingSettings(size=100, overlap=20)
    assert case.dataset.key != plain.dataset.key
    # chunking=None in the marker turns chunking off: it is not the same as leaving it out
    (whole,) = build.cases({"models": ["bm25"], "dataset": "support", "chunking": None}, test_file)
    assert whole.dataset.chunking is None


def test_a_python_object_becomes_an_object_reference(tmp_path: Path) -> None:
    ds = tiny()
    build = builder(tmp_path)
    test_file = tmp_path / "test_x.py"
    (case,) = build.cases({"models": ["bm25"], "dataset": ds}, test_file)
    ref = case.dataset
    assert ref == DatasetRef.of_object(ds)
    assert (ref.kind, ref.name, ref.path, ref.entry) == ("object", "tiny", None, None)
    assert ref.fingerprint == ds.fingerprint and ref.key == f"object:{ds.fingerprint}"
    assert ref.load() is ds
    # the marker's chunking gives another object (and key); the test's own object is untouched
    marker = {"models": ["bm25"], "dataset": ds, "chunking": {"size": 100, "overlap": 10}}
    (chunked,) = build.cases(marker, test_file)
    assert chunked.dataset.kind == "object" and chunked.dataset.name == "tiny"
    assert chunked.dataset.chunking == ChunkingSettings(size=100, overlap=10)
    assert chunked.dataset.fingerprint != ds.fingerprint and ds.chunking is None
    # the session reads an object reference as the object (no lookup by a string)
    state = EmbedBenchSession(Options(no_cache=True), tmp_path)
    assert state.dataset(ref) is ds
    assert state.dataset(chunked.dataset).chunking == ChunkingSettings(size=100, overlap=10)
    assert state.marker_dataset({"dataset": ds}, test_file) is ds


def test_an_unknown_marker_keyword_is_named_with_a_did_you_mean(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown keyword\(s\) \['modles'\].*'models'"):
        MarkerArgs.parse({"modles": ["bm25"], "dataset": "x"})
    build = builder(tmp_path)
    test_file = tmp_path / "test_x.py"
    # checked before anything else (the dataset "x" does not exist)
    with pytest.raises(ConfigError, match=r"\['datset'\].*did you mean 'dataset'"):
        build.cases({"models": ["bm25"], "datset": tiny()}, test_file)
    # the corpus and evalset fixtures' way in checks the same keywords
    with pytest.raises(ConfigError, match=r"\['splt'\].*'split'"):
        build.marker_dataset({"dataset": tiny(), "splt": "dev"}, test_file)
    with pytest.raises(ConfigError, match="keyword arguments only"):
        build.cases({"models": ["bm25"]}, test_file, args=("bm25",))
    assert {f for f in MARKER_KEYS} == set(MarkerArgs.__dataclass_fields__)
    assert "chunking=None" in MarkerArgs.signature()


def test_bad_dataset_values_name_the_fix(tmp_path: Path) -> None:
    build = builder(tmp_path)
    test_file = tmp_path / "test_x.py"
    with pytest.raises(ConfigError, match="needs dataset="):
        build.cases({"models": ["bm25"]}, test_file)
    with pytest.raises(ConfigError, match="give a name, a path or a RetrievalDataset"):
        build.cases({"models": ["bm25"], "dataset": 3}, test_file)
    with pytest.raises(ConfigError, match="neither a name .* nor an existing path"):
        build.cases({"models": ["bm25"], "dataset": "nowhere"}, test_file)


def test_an_evaluation_case_reads_the_configuration_too(tmp_path: Path) -> None:
    (tmp_path / "embedbench.yaml").write_text("k: [3]\n", encoding="utf-8")
    case = builder(tmp_path).evaluation_case("bm25", tiny(), test_path=tmp_path / "test_x.py")
    assert case.k == (3,) and case.dataset.kind == "object"
    assert case.thresholds.for_test("", "bm25") == []
