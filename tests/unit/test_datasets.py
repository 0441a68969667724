"""Dataset loaders, validation errors with file and line, fingerprints and subsets."""

from __future__ import annotations

import hashlib
import json
import unicodedata
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from ..docfiles import error_while_unreadable, world_readable_folder


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


@pytest.mark.parametrize("split", ["../../outside/test", "../test", "/etc/test", ".hidden", "a/b"])
def test_split_that_would_read_outside_the_folder_is_refused(
    beir_folder: Path, tmp_path: Path, split: str
) -> None:
    # a qrels file planted outside the dataset folder is never read through ``split``
    outside = beir_folder.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    with pytest.raises(DatasetError, match=r"is not a split name.*qrels/<split>.tsv.*\['test'\]"):
        load_beir(beir_folder, split=split)


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


def evalset_error(tmp_path: Path, rows: list[dict[str, Any]]) -> tuple[Path, str]:
    """The eval set of ``rows`` over :func:`make_docs`'s folder, and the message of the
    DatasetError that loading it raises."""
    docs = make_docs(tmp_path)
    path = write_jsonl(tmp_path / "evalset.jsonl", rows)
    with pytest.raises(DatasetError) as info:
        load_evalset(path, docs)
    return path, str(info.value)


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


# -- query ids derived from the text (issue 8 item 1) ---------------------------------------


def text_id(text: str) -> str:
    return "q-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def test_query_ids_survive_an_insertion_at_the_top(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    rows = [
        {"query": "max payload?", "relevant_doc_ids": ["api.md"]},
        {"query": "how to install", "relevant_doc_ids": ["guides/install.txt"]},
        {"query": "retention", "relevant_doc_ids": ["security.md"]},
    ]
    path = write_jsonl(tmp_path / "evalset.jsonl", rows)
    before = {q.text: q.id for q in load_evalset(path, docs).queries}
    write_jsonl(path, [{"query": "a new question", "relevant_doc_ids": ["api.md"]}, *rows])
    after = {q.text: q.id for q in load_evalset(path, docs).queries}
    assert {t: after[t] for t in before} == before
    assert len(set(after.values())) == 4
    assert before["retention"] == text_id("retention")


def test_query_id_ignores_case_width_and_spacing(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    path = write_jsonl(
        tmp_path / "evalset.jsonl",
        # full-width letters, capitals, a tab and a trailing space: the same query
        [{"query": "Ｍax\tPayload? ", "relevant_doc_ids": ["api.md"]}],
    )
    (query,) = load_evalset(path, docs).queries
    assert query.id == text_id("max payload?")
    assert query.text == "Ｍax\tPayload? "  # the text itself is what the retriever sees


def test_duplicate_texts_get_distinct_stable_ids_and_a_warning(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    path = write_jsonl(
        tmp_path / "evalset.jsonl",
        [
            {"query": "Max payload?", "relevant_doc_ids": ["api.md"]},
            {"query": "retention", "relevant_doc_ids": ["security.md"]},
            {"query": "max  payload?", "relevant_doc_ids": ["api.md"]},
            {"query": "MAX PAYLOAD?", "relevant_doc_ids": ["api.md"]},
        ],
    )
    base = text_id("max payload?")
    with pytest.warns(EmbedBenchWarning) as caught:
        ds = load_evalset(path, docs)
    assert [q.id for q in ds.queries] == [base, text_id("retention"), f"{base}-2", f"{base}-3"]
    messages = [str(w.message) for w in caught]
    assert messages[0] == (
        f"{path} line 3: query text 'max  payload?' repeats line 1 of evalset.jsonl "
        f"(ids {base!r} and '{base}-2'); it will count twice: drop one of the lines"
    )
    assert messages[1].startswith(f"{path} line 4: query text 'MAX PAYLOAD?' repeats line 1 ")
    # the same file gives the same ids, byte for byte
    with pytest.warns(EmbedBenchWarning):
        again = load_evalset(path, docs)
    assert [q.id for q in again.queries] == [q.id for q in ds.queries]
    assert again.fingerprint == ds.fingerprint


def test_derived_ids_never_take_a_given_id(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    taken = text_id("retention")
    path = write_jsonl(
        tmp_path / "evalset.jsonl",
        [
            {"query": "retention", "relevant_doc_ids": ["security.md"]},
            {"query_id": taken, "query": "max payload?", "relevant_doc_ids": ["api.md"]},
        ],
    )
    assert [q.id for q in load_evalset(path, docs).queries] == [f"{taken}-2", taken]


# -- qrels: header by its text, integral grades (issue 9 item 6) ----------------------------


def test_qrels_without_header_keep_their_first_line(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text("q1\td1\t2.0\nq1\td4\t0\nq2\td3\t1.0\n")
    ds = load_dataset(beir_folder)
    assert dict(ds.qrels["q1"]) == {"d1": 2, "d4": 0}
    assert dict(ds.qrels["q2"]) == {"d3": 1}
    assert all(type(g) is int for j in ds.qrels.values() for g in j.values())
    # every grade 1.0, no header: nothing is dropped
    qrels.write_text("q1\td1\t1.0\nq2\td3\t1.0\n")
    assert sum(len(j) for j in load_dataset(beir_folder).qrels.values()) == 2


def test_a_fractional_grade_is_an_error_naming_file_line_and_value(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text("q1\td1\t1.5\nq2\td3\t1\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(beir_folder)
    assert str(info.value).startswith(
        f"{qrels} line 1: grade '1.5' is not a whole number; grades must be integers >= 0"
    )
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\tnan\n")
    with pytest.raises(DatasetError, match=r"test\.tsv line 3: grade 'nan' is not a whole number"):
        load_dataset(beir_folder)


def test_only_the_first_line_can_be_a_header(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text("\nquery-id\tcorpus-id\tscore\nq1\td1\t1\n")  # a blank line first is fine
    assert dict(load_dataset(beir_folder).qrels) == {"q1": {"d1": 1}}
    qrels.write_text("query-id\tcorpus-id\tscore\nq-id\tc-id\tscore\nq1\td1\t1\n")
    with pytest.raises(DatasetError, match=r"line 2: score 'score' is not an integer grade"):
        load_dataset(beir_folder)


def test_qrels_with_no_judgement_name_the_file(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(beir_folder)
    assert str(info.value).startswith(f"{qrels}: no judgements; write one 'query-id<TAB>")


def test_evalset_accepts_integral_float_grades(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    path = write_jsonl(
        tmp_path / "evalset.jsonl",
        [{"query_id": "a", "query": "x", "relevance": {"api.md": 2.0, "security.md": 0.0}}],
    )
    assert dict(load_evalset(path, docs).qrels["a"]) == {"api.md": 2, "security.md": 0}
    write_jsonl(path, [{"query_id": "a", "query": "x", "relevance": {"api.md": 1.5}}])
    with pytest.raises(DatasetError, match=r"line 1: grade 1.5 for 'api.md' must be an integer"):
        load_evalset(path, docs)


# -- Unicode normalisation (issue 9 item 6) -------------------------------------------------


def test_nfd_file_name_matches_nfc_evalset_id(tmp_path: Path) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café.txt"), unicodedata.normalize("NFD", "café.txt")
    assert nfc != nfd
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / nfd).write_text("The café opens at eight.\n")  # as macOS writes names
    path = write_jsonl(
        tmp_path / "evalset.jsonl",
        [{"query_id": unicodedata.normalize("NFD", "qé"), "query": "x", "relevant_doc_ids": [nfc]}],
    )
    ds = load_evalset(path, docs)
    assert [d.id for d in ds.documents] == [nfc]
    assert [q.id for q in ds.queries] == [unicodedata.normalize("NFC", "qé")]
    # and the other way round: an NFD id in the eval set finds the document too
    write_jsonl(path, [{"query_id": "a", "query": "x", "relevance": {nfd: 1}}])
    assert dict(load_evalset(path, docs).qrels["a"]) == {nfc: 1}


def test_beir_ids_are_nfc(beir_folder: Path) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "dé"), unicodedata.normalize("NFD", "dé")
    write_jsonl(beir_folder / "corpus.jsonl", [{"_id": nfc, "text": "an accent"}])
    write_jsonl(beir_folder / "queries.jsonl", [{"_id": "q1", "text": "accent"}])
    (beir_folder / "qrels" / "test.tsv").write_text(f"q1\t{nfd}\t1\n")
    assert dict(load_dataset(beir_folder).qrels["q1"]) == {nfc: 1}


# -- documents folder rough edges (issue 8 item 9) ------------------------------------------


def test_skipped_file_types_are_counted_in_a_warning(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    (docs / "manual.xlsx").write_bytes(b"PK")
    (docs / "guides" / "setup.xlsx").write_bytes(b"PK")
    (docs / "notes.pptx").write_bytes(b"PK")
    (docs / "LICENSE").write_text("MIT")
    (docs / ".git").mkdir()
    (docs / ".git" / "HEAD").write_text("ref")  # hidden folders are not worth a word
    path = write_jsonl(tmp_path / "evalset.jsonl", [{"query": "x", "relevant_doc_ids": ["api.md"]}])
    with pytest.warns(EmbedBenchWarning) as caught:
        ds = load_evalset(path, docs)
    assert [str(w.message) for w in caught] == [
        f"{docs}: 4 file(s) skipped, of types the loader does not read "
        "((no extension) 1, .pptx 1, .xlsx 2); only .txt, .md, .markdown, .pdf, .docx, .html, "
        ".htm documents are loaded: convert the files to include them"
    ]
    assert len(ds.documents) == 3


def test_evalset_naming_an_unread_file_says_so(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    (docs / "manual.xlsx").write_bytes(b"PK")
    (docs / ".hidden.md").write_text("secret")
    (docs / "empty.md").write_text("  \n")
    path = tmp_path / "evalset.jsonl"
    write_jsonl(path, [{"query": "x", "relevant_doc_ids": ["manual.xlsx"]}])
    with pytest.raises(DatasetError) as info, pytest.warns(EmbedBenchWarning):
        load_evalset(path, docs)
    assert str(info.value) == (
        f"{path} line 1: document 'manual.xlsx' is in {docs} but is not read: only .txt, .md, "
        ".markdown, .pdf, .docx, .html, .htm documents are loaded; convert it to one of those "
        "(or drop it from this line)"
    )
    write_jsonl(path, [{"query": "x", "relevant_doc_ids": [".hidden.md"]}])
    with pytest.raises(DatasetError, match=r"'.hidden.md' is in .* but is a hidden file"):
        with pytest.warns(EmbedBenchWarning):
            load_evalset(path, docs)
    write_jsonl(path, [{"query": "x", "relevant_doc_ids": ["empty.md"]}])
    with pytest.raises(DatasetError, match=r"'empty.md' is in .* but gave no text \(an empty md"):
        with pytest.warns(EmbedBenchWarning):
            load_evalset(path, docs)


HTML_PAGE = (
    "<html><head><title>Manual</title></head><body><p>The manual, as its text.</p></body></html>"
)


def test_a_folder_with_pdf_docx_or_html_is_read_like_any_other(tmp_path: Path) -> None:
    pytest.importorskip("bs4")
    docs = make_docs(tmp_path)
    (docs / "manual.html").write_text(HTML_PAGE)
    path = write_jsonl(
        tmp_path / "evalset.jsonl",
        [{"query": "x", "relevant_doc_ids": ["manual.html", "guides/install.txt"]}],
    )
    ds = load_evalset(path, docs)
    assert [d.id for d in ds.documents] == [
        "api.md",
        "guides/install.txt",
        "manual.html",
        "security.md",
    ]
    assert ds.document("manual.html").text == "The manual, as its text."
    assert dict(ds.qrels[ds.queries[0].id]) == {"manual.html": 1, "guides/install.txt": 1}


def test_extensions_limit_the_types_read_and_name_the_rest(tmp_path: Path) -> None:
    pytest.importorskip("bs4")
    docs = make_docs(tmp_path)
    (docs / "manual.html").write_text(HTML_PAGE)
    path = write_jsonl(tmp_path / "evalset.jsonl", [{"query": "x", "relevant_doc_ids": ["api.md"]}])
    with pytest.raises(DatasetError) as info:
        load_dataset(path, docs=docs, extensions=(".html",))
    assert str(info.value) == (
        f"{path} line 1: document 'api.md' is in {docs} but is not read: only .html documents "
        "are loaded; convert it to one of those (or drop it from this line)"
    )
    write_jsonl(path, [{"query": "x", "relevant_doc_ids": ["manual.html"]}])
    ds = load_dataset(path, docs=docs, extensions=(".html",))
    assert [d.id for d in ds.documents] == ["manual.html"]


def test_split_on_an_evalset_is_an_error_naming_it(tmp_path: Path) -> None:
    make_docs(tmp_path)
    path = write_jsonl(tmp_path / "evalset.jsonl", [{"query": "x", "relevant_doc_ids": ["api.md"]}])
    assert len(load_dataset(tmp_path, split="test")) == 1  # the default is its one split
    for target in (tmp_path, path):
        with pytest.raises(DatasetError) as info:
            load_dataset(target, split="dev")
        assert str(info.value).startswith(
            f"{path}: split='dev' does not apply to an eval set, which has one split ('test')"
        )


def test_dataset_not_found_states_the_location_rules(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    write_jsonl(tmp_path / "evalset.jsonl", [{"query": "x", "relevant_doc_ids": ["api.md"]}])
    rules = "a folder holding evalset.jsonl (documents: docs= if given, else its docs/ subfolder"
    # pointed at the documents folder instead of the folder holding the eval set
    with pytest.raises(DatasetError) as info:
        load_dataset(docs)
    message = str(info.value)
    assert f"looked for {docs / 'corpus.jsonl'} (BEIR, with qrels/test.tsv) and " in message
    assert rules in message
    assert message.endswith(
        f"{tmp_path / 'evalset.jsonl'} exists: point the dataset at {tmp_path}."
    )
    # an eval set under another name
    other = tmp_path / "other"
    other.mkdir()
    write_jsonl(other / "eval-v2.jsonl", [])
    with pytest.raises(DatasetError) as info:
        load_dataset(other)
    assert str(info.value).endswith(
        f"Found ['eval-v2.jsonl'] in {other}: point the dataset at one of these files."
    )
    # a typo in the file name: the eval sets beside it are named
    with pytest.raises(DatasetError, match=r"no such dataset .* Found \['eval-v2.jsonl'\] in "):
        load_dataset(other / "eval-v2.json")
    with pytest.raises(DatasetError, match=rf"no such dataset folder .*{rules[:30]}"):
        load_dataset(tmp_path / "missing")
    # a .jsonl eval set without a docs/ folder beside it
    with pytest.raises(DatasetError, match=r"documents folder not found .* docs/ folder beside"):
        load_dataset(other / "eval-v2.jsonl")


# -- eval-set lines with conflicting or unknown keys (issue 28 item 7) ------------------------


def test_a_line_with_both_judgement_keys_is_an_error_naming_file_line_and_keys(
    tmp_path: Path,
) -> None:
    path, message = evalset_error(
        tmp_path,
        [
            {"query": "max payload?", "relevant_doc_ids": ["api.md"]},
            {"query": "retention", "relevant_doc_ids": ["api.md"], "relevance": {"security.md": 2}},
        ],
    )
    assert message == (
        f"{path} line 2: has both 'relevant_doc_ids' and 'relevance'; use one: "
        "'relevant_doc_ids' lists documents of grade 1, 'relevance' maps each document to its "
        'grade ({"api.md": 2, "faq.md": 1})'
    )


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("relevent_doc_ids", "relevant_doc_ids"),
        ("relevant_docs", "relevant_doc_ids"),
        ("relevances", "relevance"),
        ("queryId", "query_id"),
        ("Query", "query"),
    ],
)
def test_a_typo_of_a_key_is_an_error_naming_it_and_the_key_meant(
    tmp_path: Path, typo: str, meant: str
) -> None:
    line = {"query_id": "q1", "query": "max payload?", "relevant_doc_ids": ["api.md"]}
    line = {(typo if key == meant else key): value for key, value in line.items()}
    line.setdefault(typo, {"api.md": 1})  # a key not on the line: added under its typo
    path, message = evalset_error(
        tmp_path, [{"query": "retention", "relevant_doc_ids": ["security.md"]}, line]
    )
    assert message == (
        f"{path} line 2: unknown key {typo!r}; did you mean {meant!r}? The keys read are "
        "'query_id', 'query', 'relevant_doc_ids', 'relevance', 'language'; other keys are kept "
        "as the query's metadata, but one this close to a key read is taken for a typo: rename it"
    )


def test_other_keys_stay_the_querys_metadata(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    extra = {
        "answer": "5 MB",
        "source_chunk_id": "api.md#0",
        "generator": {"model": "llama3.2"},
        "category": "limits",
        "query_type": "factoid",
        "notes": "",
    }
    row = {"query": "max payload?", "relevant_doc_ids": ["api.md"], **extra}
    path = write_jsonl(tmp_path / "evalset.jsonl", [row])
    assert load_evalset(path, docs).queries[0].metadata == extra


def test_a_line_without_judgements_names_the_key_that_looks_like_one(tmp_path: Path) -> None:
    path, message = evalset_error(tmp_path, [{"query": "x", "doc_ids": ["api.md"]}])
    assert message == (
        f"{path} line 1: needs 'relevant_doc_ids' (a list of document paths) or 'relevance' "
        "(a mapping of document path to grade); did you mean 'relevant_doc_ids' for 'doc_ids'?"
    )
    write_jsonl(path, [{"query": "x", "category": "setup"}])
    with pytest.raises(DatasetError, match=r"line 1: needs .*; its other keys \('category'\) are"):
        load_evalset(path, tmp_path / "docs")


# -- one reader for every documents folder (issue 29 step 3) ---------------------------------
#
# A folder of .md/.txt files only was read by a second, older reader that followed a symlink
# out of the folder, took Backup.md and backup.md as two documents, took a binary .txt and let a
# bare PermissionError out. Each case below is run on a .md/.txt-only folder and on the same
# folder with an HTML page added, and both must answer alike (the page aside).


def _docs_folder(root: Path, *, mixed: bool) -> Path:
    docs = root / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "api.md").write_text("The maximum payload size is 5 MB.\n")
    (docs / "guides" / "install.txt").write_text("Install with pip.\n")
    if mixed:
        (docs / "manual.html").write_text(HTML_PAGE)
    return docs


def _outcome(root: Path, names: list[str], call: Any = None) -> tuple[str, list[str], list[str]]:
    """What loading ``root``'s eval set (one line naming ``names``) over its docs/ gives: the
    error ("" when none), the warnings and the document ids, with ``root`` written ROOT."""
    docs = root / "docs"
    path = write_jsonl(root / "evalset.jsonl", [{"query": "x", "relevant_doc_ids": names}])
    ids: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if call is not None:
            error = call(lambda: load_evalset(path, docs))
        else:
            try:
                ids = [d.id for d in load_evalset(path, docs).documents if d.id != "manual.html"]
                error = ""
            except Exception as exc:  # the comparison is the test: any error is compared
                error = f"{type(exc).__name__}: {exc}"
    said = [str(w.message) for w in caught]
    clean = [s.replace(str(root.resolve()), "ROOT").replace(str(root), "ROOT") for s in said]
    return error.replace(str(root), "ROOT"), clean, ids


def _either_way(
    root: Path, add: Callable[[Path], None], names: list[str]
) -> tuple[str, list[str], list[str]]:
    """:func:`_outcome` of a documents folder that ``add`` adds a file to, once .md/.txt only
    and once with an HTML page too: the two must be alike; the one outcome."""
    results = []
    for kind in (False, True):
        folder = root / f"mixed-{kind}"
        add(_docs_folder(folder, mixed=kind))
        results.append(_outcome(folder, names))
    assert results[0] == results[1]
    return results[0]


def test_a_symlink_out_of_the_folder_is_skipped_with_a_warning(tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("a file from elsewhere")
    pytest.importorskip("bs4")

    def leak(docs: Path) -> None:
        (docs / "leak.md").symlink_to(outside)

    _, said, ids = _either_way(tmp_path / "api", leak, ["api.md"])
    error, _, _ = _either_way(tmp_path / "leak", leak, ["leak.md"])
    leak = f"ROOT/docs/leak.md: skipped, a symlink to {outside.resolve()}, outside ROOT/docs"
    assert said == [f"{leak}; copy the file into the folder to include it"]
    assert ids == ["api.md", "guides/install.txt"]
    assert error == (
        "DatasetError: ROOT/evalset.jsonl line 1: document 'leak.md' is in ROOT/docs but is a "
        f"symlink to {outside.resolve()}, outside ROOT/docs; copy the file into the folder to "
        "include it (or drop it from this line)"
    )


def test_two_ids_differing_only_by_case_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("bs4")

    def two_cases(docs: Path) -> None:
        (docs / "Backup.md").write_text("Backups run nightly.")
        (docs / "backup.md").write_text("Backups are kept 35 days.")
        if len({p.name for p in docs.iterdir()} & {"Backup.md", "backup.md"}) < 2:
            pytest.skip("case-insensitive file system")  # pragma: no cover

    assert _either_way(tmp_path, two_cases, ["api.md"]) == (
        "DatasetError: ROOT/docs/Backup.md and ROOT/docs/backup.md: two documents whose ids "
        "differ only by case or Unicode form ('Backup.md' and 'backup.md'); rename one",
        [],
        [],
    )


def test_a_binary_txt_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("bs4")

    def binary(docs: Path) -> None:
        (docs / "core.txt").write_bytes(b"ELF\x00\x01\x02 valid UTF-8, yet no text")

    assert _either_way(tmp_path, binary, ["api.md"])[0] == (
        "DatasetError: ROOT/docs/core.txt: has a NUL byte at character 3: a binary file, not "
        "text; remove it or give it another extension (or load with on_error='skip')"
    )


def test_an_unreadable_file_is_a_dataset_error_naming_it() -> None:
    pytest.importorskip("bs4")
    results = []
    for kind in (False, True):
        with world_readable_folder() as root:
            docs = _docs_folder(root, mixed=kind)
            locked = docs / "locked.md"
            locked.write_text("no one may read this")
            result = _outcome(
                root, ["api.md"], lambda load, file=locked: error_while_unreadable(file, load)
            )
            if result[0].startswith("skip: "):  # pragma: no cover - root that may not switch
                pytest.skip(result[0][6:])
            results.append(result)
    assert results[0] == results[1]
    assert results[0][0] == (
        "DatasetError: ROOT/docs/locked.md: [Errno 13] Permission denied: 'ROOT/docs/locked.md' "
        "(or load with on_error='skip')"
    )


# -- qrels: the header known by its words, grades in range (issue 42 items 2 and 7) ----------


@pytest.mark.parametrize("raw", ["1x", "high", "score1", "-", "1,0"])
def test_a_bad_grade_on_the_first_line_is_an_error_not_a_header(
    beir_folder: Path, raw: str
) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text(f"q1\td1\t{raw}\nq2\td3\t1\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(beir_folder)
    assert str(info.value).startswith(
        f"{qrels} line 1: score {raw!r} is not an integer grade; grades must be integers >= 0"
    )
    assert "a header line's score column is one of ['grade', 'judgement'" in str(info.value)


@pytest.mark.parametrize(
    "header", ["query-id\tcorpus-id\tscore", "qid\tdocid\trel", "Query_ID Doc_ID Relevance"]
)
def test_a_header_is_known_by_its_words(beir_folder: Path, header: str) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text(f"{header}\nq1\td1\t2\nq2\td3\t1\n")
    assert {q: dict(j) for q, j in load_dataset(beir_folder).qrels.items()} == {
        "q1": {"d1": 2},
        "q2": {"d3": 1},
    }


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("1e20", "out of range"),
        ("100000000000000000000", "out of range"),
        ("1001", "out of range"),
        ("-1", "out of range"),
        ("1e400", "not a whole number"),
        ("inf", "not a whole number"),
    ],
)
def test_a_grade_out_of_range_names_file_and_line(beir_folder: Path, raw: str, why: str) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t{raw}\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(beir_folder)
    assert str(info.value).startswith(f"{qrels} line 3: grade {raw!r} is {why}; grades must be")
    assert "<= 1000" in str(info.value)


def test_the_largest_grade_is_kept(beir_folder: Path) -> None:
    qrels = beir_folder / "qrels" / "test.tsv"
    qrels.write_text("q1\td1\t1000\nq2\td3\t1e3\n")
    ds = load_dataset(beir_folder)
    assert (ds.qrels["q1"]["d1"], ds.qrels["q2"]["d3"]) == (1000, 1000)


def test_an_evalset_grade_out_of_range_names_its_line(tmp_path: Path) -> None:
    docs = make_docs(tmp_path)
    path = tmp_path / "evalset.jsonl"
    path.write_text(
        '{"query_id": "a", "query": "x", "relevance": {"api.md": 1}}\n'
        '{"query_id": "b", "query": "y", "relevance": {"api.md": 1e20}}\n'
    )
    with pytest.raises(DatasetError, match=rf"{path} line 2: grade 100000000000000000000 for "):
        load_evalset(path, docs)


def test_a_python_grade_out_of_range_is_an_error() -> None:
    with pytest.raises(DatasetError, match=r"grade 1001 for \('q', 'd'\) is out of range"):
        RetrievalDataset([Document("d", "text")], [Query("q", "text")], {"q": {"d": 1001}})
