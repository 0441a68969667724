"""Dataset loaders, validation errors with file and line, fingerprints and subsets."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_embedbench import (
    DatasetError,
    Document,
    EmbedBenchWarning,
    Query,
    RetrievalDataset,
    load_beir,
    load_dataset,
    load_evalset,
)

from ..conftest import write_jsonl


def test_beir_folder_with_crlf_and_header(beir_folder: Path) -> None:
    ds = load_dataset(beir_folder)
    assert [d.id for d in ds.documents] == ["d1", "d2", "d3", "d4"]
    # only judged queries are evaluated, in file order
    assert [q.id for q in ds.queries] == ["q1", "q2"]
    assert dict(ds.qrels["q1"]) == {"d1": 2, "d4": 0}
    # title, a space, then text (BEIR/MTEB); an empty title leaves the text alone
    assert ds.document("d1").embed_text == "Password reset Reset your password from login."
    assert ds.document("d2").embed_text == "Invoices are emailed every month."
    # metadata is kept for reports but is not part of the text
    q1 = ds.queries[0]
    assert q1.metadata == {"answer": "d1"}
    assert q1.text == "how to reset password"
    assert ds.name == "tiny-beir"


def test_unknown_split_lists_available(beir_folder: Path) -> None:
    with pytest.raises(DatasetError, match=r"split 'dev'.*\['test'\]"):
        load_beir(beir_folder, split="dev")


def test_malformed_json_line_names_file_and_line(beir_folder: Path) -> None:
    corpus = beir_folder / "corpus.jsonl"
    lines = corpus.read_text().splitlines()
    lines.insert(2, '{"_id": "d9", "text": ')
    corpus.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"corpus\.jsonl line 3: malformed JSON"):
        load_dataset(beir_folder)


def test_qrels_naming_missing_document(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q2\tnope\t1\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(beir_folder)
    assert "test.tsv line 5: document 'nope' is not in the corpus" in str(info.value)


def test_qrels_naming_missing_query(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q77\td1\t1\n")
    with pytest.raises(DatasetError, match=r"test\.tsv line 5: query 'q77' is not among"):
        load_dataset(beir_folder)


def test_qrels_bad_grade_and_columns(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    base = qrels.read_text()
    qrels.write_text(base + "q2\td1\thigh\n")
    with pytest.raises(DatasetError, match=r"line 5: score 'high' is not an integer"):
        load_dataset(beir_folder)
    qrels.write_text(base + "q2 d1\n")
    with pytest.raises(DatasetError, match=r"line 5: expected 3 tab-separated columns"):
        load_dataset(beir_folder)
    qrels.write_text(base + "q2\td3\t2\n")
    with pytest.raises(DatasetError, match=r"line 5: \('q2', 'd3'\) is judged twice .*line 4"):
        load_dataset(beir_folder)


def test_duplicate_ids_name_both_lines(beir_folder: Path) -> None:
    corpus = beir_folder / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + json.dumps({"_id": "d2", "text": "again"}) + "\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(beir_folder)
    message = str(info.value)
    assert "corpus.jsonl line 5: duplicate document id 'd2'" in message
    assert "corpus.jsonl line 2" in message


def test_duplicate_query_id(beir_folder: Path) -> None:
    queries = beir_folder / "queries.jsonl"
    queries.write_text(queries.read_text() + json.dumps({"_id": "q1", "text": "x"}) + "\n")
    with pytest.raises(DatasetError, match=r"queries\.jsonl line 4: duplicate query id 'q1'"):
        load_dataset(beir_folder)


def test_empty_query_text(beir_folder: Path) -> None:
    write_jsonl(
        beir_folder / "queries.jsonl",
        [{"_id": "q1", "text": "   "}, {"_id": "q2", "text": "csv export"}],
    )
    with pytest.raises(DatasetError, match=r"queries\.jsonl line 1: query 'q1' has empty text"):
        load_dataset(beir_folder)


def test_missing_key_and_wrong_type(beir_folder: Path) -> None:
    write_jsonl(beir_folder / "corpus.jsonl", [{"_id": "d1", "body": "x"}])
    with pytest.raises(DatasetError, match=r"corpus\.jsonl line 1: missing key 'text'"):
        load_dataset(beir_folder)
    write_jsonl(beir_folder / "corpus.jsonl", [["not", "an", "object"]])
    with pytest.raises(DatasetError, match=r"line 1: expected a JSON object, got list"):
        load_dataset(beir_folder)


def test_not_a_dataset_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"not a dataset folder"):
        load_dataset(tmp_path)
    with pytest.raises(DatasetError, match=r"no such dataset"):
        load_dataset(tmp_path / "missing")


def make_docs(folder: Path) -> Path:
    (folder / "docs" / "guides").mkdir(parents=True)
    (folder / "docs" / "api.md").write_text("# API\nThe maximum payload size is 5 MB.\n")
    (folder / "docs" / "guides" / "install.txt").write_text("Install with pip.\r\n")
    (folder / "docs" / "security.md").write_text("Records are retained for 30 days.\n")
    return folder / "docs"


def test_evalset_over_documents_folder(tmp_path: Path) -> None:
    make_docs(tmp_path)
    write_jsonl(
        tmp_path / "evalset.jsonl",
        [
            {
                "query_id": "q0001",
                "query": "max payload?",
                "relevant_doc_ids": ["./api.md"],
                "answer": "5 MB",
            },
            {
                "query": "how to install",
                "relevant_doc_ids": ["guides\\install.txt"],
                "category": "setup",
            },
            {"query": "retention", "relevance": {"security.md": 3, "api.md": 0}},
        ],
    )
    ds = load_dataset(tmp_path)
    assert [d.id for d in ds.documents] == ["api.md", "guides/install.txt", "security.md"]
    # a line without query_id gets q- and 12 hex digits of SHA-256 of its normalised text
    install = "q-" + hashlib.sha256(b"how to install").hexdigest()[:12]
    retention = "q-" + hashlib.sha256(b"retention").hexdigest()[:12]
    assert [q.id for q in ds.queries] == ["q0001", install, retention]
    assert dict(ds.qrels[install]) == {"guides/install.txt": 1}
    assert dict(ds.qrels[retention]) == {"security.md": 3, "api.md": 0}
    assert ds.queries[0].metadata == {"answer": "5 MB"}
    assert ds.queries[1].metadata == {"category": "setup"}
    assert ds.document("guides/install.txt").text == "Install with pip.\n"


def test_evalset_errors_name_line_and_fix(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    path = tmp_path / "evalset.jsonl"
    write_jsonl(path, [{"query": "x", "relevant_doc_ids": ["apii.md"]}])
    with pytest.raises(
        DatasetError, match=r"line 1: document 'apii.md' is not in .*did you mean 'api.md'"
    ):
        load_evalset(path, docs)
    write_jsonl(path, [{"query": "", "relevant_doc_ids": ["api.md"]}])
    with pytest.raises(DatasetError, match=r"line 1: 'query' is missing or empty"):
        load_evalset(path, docs)
    write_jsonl(path, [{"query": "x", "relevant_doc_ids": []}])
    with pytest.raises(DatasetError, match=r"'relevant_doc_ids' must be a non-empty list"):
        load_evalset(path, docs)
    write_jsonl(path, [{"query": "x"}])
    with pytest.raises(DatasetError, match=r"needs 'relevant_doc_ids'"):
        load_evalset(path, docs)
    write_jsonl(path, [{"query": "x", "relevance": {"api.md": -1}}])
    with pytest.raises(DatasetError, match=r"grade -1 for 'api.md' must be an integer >= 0"):
        load_evalset(path, docs)
    write_jsonl(
        path,
        [
            {"query_id": "a", "query": "x", "relevant_doc_ids": ["api.md"]},
            {"query_id": "a", "query": "y", "relevant_doc_ids": ["api.md"]},
        ],
    )
    with pytest.raises(DatasetError, match=r"line 2: duplicate query_id 'a' \(first at line 1\)"):
        load_evalset(path, docs)


def test_duplicate_query_text_warns(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    path = write_jsonl(
        tmp_path / "evalset.jsonl",
        [
            {"query": "Max payload?", "relevant_doc_ids": ["api.md"]},
            {"query": "max  payload?", "relevant_doc_ids": ["api.md"]},
        ],
    )
    with pytest.warns(EmbedBenchWarning, match=r"line 2: query text .* repeats line 1"):
        ds = load_evalset(path, docs)
    assert len(ds.queries) == 2


def test_python_objects_and_validation() -> None:
    ds = RetrievalDataset.from_dicts(
        {"d1": "alpha", "d2": {"title": "T", "text": "beta"}},
        {"q1": "find alpha"},
        {"q1": {"d1": 1}},
        name="objs",
    )
    assert ds.document("d2").embed_text == "T beta"
    with pytest.raises(DatasetError) as info:
        RetrievalDataset(
            [Document("d1", "a"), Document("d1", "b"), Document("d3", "")],
            [Query("q1", "")],
            {"q1": {"d9": 1, "d1": -2}},
        )
    message = str(info.value)
    assert "documents[1]: duplicate document id 'd1'" in message
    assert "documents[2]: document 'd3' has no text" in message
    assert "queries[0]: query 'q1' has empty text" in message
    assert "document 'd9' is not in the corpus" in message
    assert "grade -2" in message


def test_fingerprint_tracks_content_not_names(beir_folder: Path, tmp_path: Path) -> None:
    a = load_dataset(beir_folder)
    b = load_beir(beir_folder, name="renamed")
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 64
    corpus = beir_folder / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("every month", "every week"))
    assert load_dataset(beir_folder).fingerprint != a.fingerprint


def test_subset_is_deterministic_and_keeps_judged(scifact_path: Path) -> None:
    full = load_dataset(scifact_path)
    assert (len(full.documents), len(full.queries)) == (5183, 300)
    small = full.subset(n_queries=20, n_distractors=100, seed=3)
    again = full.subset(n_queries=20, n_distractors=100, seed=3)
    other = full.subset(n_queries=20, n_distractors=100, seed=4)
    assert small.fingerprint == again.fingerprint != other.fingerprint
    assert len(small.queries) == 20
    judged = {d for qid in small.qrels for d in small.qrels[qid]}
    ids = {d.id for d in small.documents}
    assert judged <= ids
    assert len(ids) == len(judged) + 100
    # queries keep their original relative order
    order = [q.id for q in full.queries]
    assert [q.id for q in small.queries] == sorted((q.id for q in small.queries), key=order.index)
    with pytest.raises(DatasetError, match="n_queries=0"):
        full.subset(n_queries=0)
