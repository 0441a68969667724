"""The eval-set loader: a JSONL eval set over a folder of documents, with query ids derived
from the query text when a line has none.

A folder of ``.txt``/``.md`` files only is read here as it always was; a folder holding PDF,
DOCX, HTML or ``.markdown`` files, or any folder when ``extensions`` are named, is read by
:func:`pytest_embedbench.ingest.load_documents` (same ids: the path relative to the folder).
"""

from __future__ import annotations

import hashlib
import unicodedata
import warnings
from collections.abc import Container, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..exceptions import DatasetError, EmbedBenchWarning
from ..ingest import SUPPORTED_EXTENSIONS
from .core import Document, Query, RetrievalDataset
from .files import as_id, closest, read_jsonl

__all__ = ["DOCUMENT_SUFFIXES", "QUERY_ID_PREFIX", "TEXT_SUFFIXES", "load_evalset"]

#: Documents of a plain-text folder, read without the ingest module.
TEXT_SUFFIXES = (".txt", ".md")
#: Every document type a documents folder may hold: the ones ``ingest.load_documents`` reads
DOCUMENT_SUFFIXES = SUPPORTED_EXTENSIONS
#: Prefix of the query ids derived from query texts (eval-set lines without ``query_id``).
QUERY_ID_PREFIX = "q-"


def _normalise_doc_id(raw: str) -> str:
    doc_id = unicodedata.normalize("NFC", raw).replace("\\", "/")
    while doc_id.startswith("./"):
        doc_id = doc_id[2:]
    return doc_id


def _read_documents_folder(
    folder: Path, *, skip: Sequence[Path] = ()
) -> tuple[list[Document], dict[str, str]]:
    """The documents of ``folder``, and why each other file in it is not one (by document id).

    Files of types the loader does not read are counted by extension in one warning, so a
    folder of PDFs is not silently an empty corpus.
    """
    skipped = {p.resolve() for p in skip}
    documents = []
    left_out: dict[str, str] = {}
    other_types: dict[str, int] = {}
    supported = ", ".join(DOCUMENT_SUFFIXES)  # the types a folder may hold (see load_evalset)
    for file in sorted(folder.rglob("*")):
        if not file.is_file() or (skipped and file.resolve() in skipped):
            continue
        # NFC: macOS writes names decomposed (NFD); eval sets are typed composed (NFC)
        doc_id = unicodedata.normalize("NFC", file.relative_to(folder).as_posix())
        if file.name.startswith("."):
            left_out[doc_id] = "is a hidden file (its name starts with '.'), which is not read"
            continue
        suffix = file.suffix.lower()
        if suffix not in TEXT_SUFFIXES:
            left_out[doc_id] = (
                f"is not read: only {supported} documents are loaded; convert it to one of "
                "those or drop it from this line"
            )
            # files under hidden folders (.git, .obsidian) are not worth a word
            if not any(part.startswith(".") for part in Path(doc_id).parts):
                ext = suffix or "(no extension)"
                other_types[ext] = other_types.get(ext, 0) + 1
            continue
        try:
            text = file.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                "convert it to UTF-8 or remove it"
            ) from None
        if not text.strip():
            warnings.warn(f"{file}: empty document skipped", EmbedBenchWarning, stacklevel=3)
            left_out[doc_id] = "is empty, so it is not a document; give it text"
            continue
        documents.append(Document(doc_id, text.replace("\r\n", "\n"), origin=str(file)))
    if other_types:
        counts = ", ".join(f"{ext} {n}" for ext, n in sorted(other_types.items()))
        total = sum(other_types.values())
        warnings.warn(
            f"{folder}: {total} file(s) skipped, of types the loader does not read ({counts}); "
            f"only {supported} documents are loaded: convert the files to include them",
            EmbedBenchWarning,
            stacklevel=3,
        )
    return documents, left_out


def _needs_ingest(folder: Path) -> bool:
    """Whether ``folder`` holds a document type beyond .txt/.md (outside hidden folders)."""
    for file in folder.rglob("*"):
        relative = file.relative_to(folder).parts
        if any(part.startswith(".") for part in relative):
            continue
        if file.suffix.lower() in DOCUMENT_SUFFIXES and file.suffix.lower() not in TEXT_SUFFIXES:
            return True
    return False


def _ingest_documents_folder(
    folder: Path, extensions: Sequence[str] | None, *, skip: Sequence[Path] = ()
) -> tuple[list[Document], dict[str, str]]:
    """The documents of ``folder`` read by ``ingest.load_documents``, and why each other file
    is not one (by document id), as :func:`_read_documents_folder` says it."""
    from ..ingest import load_documents

    kinds = tuple(extensions) if extensions else DOCUMENT_SUFFIXES
    documents = [
        replace(
            doc, id=unicodedata.normalize("NFC", doc.id), origin=doc.origin or str(folder / doc.id)
        )
        for doc in load_documents(folder, extensions=kinds)
    ]
    read = {doc.id for doc in documents}
    skipped = {p.resolve() for p in skip}
    left_out: dict[str, str] = {}
    other_types: dict[str, int] = {}
    listed = ", ".join(kinds)
    for file in sorted(folder.rglob("*")):
        doc_id = unicodedata.normalize("NFC", file.relative_to(folder).as_posix())
        if not file.is_file() or doc_id in read or file.resolve() in skipped:
            continue
        hidden = any(part.startswith(".") for part in Path(doc_id).parts)
        if hidden:
            left_out[doc_id] = "is a hidden file (its name starts with '.'), which is not read"
        elif file.suffix.lower() not in kinds:
            left_out[doc_id] = (
                f"is not read: only {listed} documents are loaded; convert it to one of "
                "those or drop it from this line"
            )
            if file.suffix.lower() not in DOCUMENT_SUFFIXES:
                ext = file.suffix.lower() or "(no extension)"
                other_types[ext] = other_types.get(ext, 0) + 1
        else:
            left_out[doc_id] = (
                "gave no text (empty, or a PDF without extractable text: see the warnings); "
                "give it text or drop it from this line"
            )
    if other_types:
        counts = ", ".join(f"{ext} {n}" for ext, n in sorted(other_types.items()))
        warnings.warn(
            f"{folder}: {sum(other_types.values())} file(s) skipped, of types the loader does "
            f"not read ({counts}); the documents read are {', '.join(DOCUMENT_SUFFIXES)}",
            EmbedBenchWarning,
            stacklevel=3,
        )
    return documents, left_out


def load_evalset(
    evalset: str | Path,
    docs: str | Path,
    *,
    name: str | None = None,
    extensions: Sequence[str] | None = None,
) -> RetrievalDataset:
    """Load a JSONL eval set over a folder of documents.

    A folder of .txt/.md files only is read directly; one holding PDF, DOCX, HTML or
    .markdown files, or any folder when ``extensions`` (suffixes such as ``".pdf"``) limit
    the types read, goes through :func:`pytest_embedbench.ingest.load_documents`.

    One JSON object a line::

        {"query_id": "q001", "query": "What is the maximum payload size?",
         "relevant_doc_ids": ["api.md"], "answer": "5 MB"}

    ``relevant_doc_ids`` are paths relative to the folder (``./`` and backslashes are
    normalised) and count as grade 1; ``relevance`` (``{"api.md": 2}``) gives graded judgements
    and wins over ``relevant_doc_ids`` for the documents it names. Document ids and query ids
    are Unicode NFC, like the file names they are matched with. ``query_id`` is optional: a line
    without one gets ``q-`` and the first 12 hex digits of the SHA-256 of its text (NFKC,
    case-folded, whitespace collapsed), so inserting, removing or reordering lines never changes
    another query's id; a repeated text adds ``-2``, ``-3``... by occurrence. ``answer``,
    ``source_chunk_id`` and unknown fields are kept under the query's metadata. A duplicate
    query id is an error; a duplicate query text is a warning (it double-weights that query).
    """
    evalset_path, folder = Path(evalset), Path(docs)
    if not folder.is_dir():
        raise DatasetError(
            f"{folder}: documents folder not found (for eval set {evalset_path}); pass the "
            "folder as docs= (the 'docs' key of a dataset in embedbench.yaml) or put the "
            "documents in a docs/ folder beside the eval set"
        )
    if extensions is not None or _needs_ingest(folder):
        documents, left_out = _ingest_documents_folder(folder, extensions, skip=[evalset_path])
    else:
        documents, left_out = _read_documents_folder(folder, skip=[evalset_path])
    rows = list(read_jsonl(evalset_path))
    reader = _QueryReader(evalset_path, folder, {d.id for d in documents}, left_out, rows)
    for number, obj in rows:
        reader.add(number, obj)
    if not reader.queries:
        raise DatasetError(f"{evalset_path}: no queries; write one JSON object a line")
    return RetrievalDataset(
        documents,
        reader.queries,
        reader.qrels,
        name=name or folder.resolve().name,
        source=str(evalset_path),
        qrels_origins=reader.origins,
    )


#: the keys of an eval-set line that are not kept under the query's metadata
_QUERY_KEYS = frozenset({"query_id", "query", "relevant_doc_ids", "relevance"})


class _QueryReader:
    """Reads the lines of one eval set into queries, qrels and the line of each judgement,
    checking ids, repeated texts and the documents each line names."""

    def __init__(
        self,
        path: Path,
        folder: Path,
        known: set[str],
        left_out: Mapping[str, str],
        rows: Sequence[tuple[int, Mapping[str, Any]]],
    ) -> None:
        self.path, self.folder, self.known, self.left_out = path, folder, known, left_out
        self.queries: list[Query] = []
        self.qrels: dict[str, dict[str, int]] = {}
        self.origins: dict[tuple[str, str], str] = {}
        self.seen_ids: dict[str, int] = {}
        self.seen_texts: dict[str, tuple[int, str]] = {}
        self.occurrences: dict[str, int] = {}
        # ids written in the file hold them: a derived id never takes one
        self.given_ids = {
            unicodedata.normalize("NFC", str(obj["query_id"]))
            for _, obj in rows
            if obj.get("query_id") not in (None, "")
        }

    def add(self, number: int, obj: Mapping[str, Any]) -> None:
        at = f"{self.path} line {number}"
        text = obj.get("query")
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{at}: 'query' is missing or empty; every line needs a question")
        key = _query_key(text)
        qid = self._query_id(number, obj, key)
        self._warn_repeated_text(at, number, key, text, qid)
        judged = _parse_judgements(obj, at)
        for did in judged:
            self._check_document(did, at)
            self.origins[(qid, did)] = at
        metadata = {k: v for k, v in obj.items() if k not in _QUERY_KEYS}
        self.queries.append(Query(qid, text, metadata, origin=at))
        self.qrels[qid] = judged

    def _query_id(self, number: int, obj: Mapping[str, Any], key: str) -> str:
        if obj.get("query_id") in (None, ""):
            qid = _text_query_id(key, self.occurrences, taken=(self.given_ids, self.seen_ids))
        else:
            qid = as_id(obj["query_id"], self.path, number, "query_id")
        if qid in self.seen_ids:
            raise DatasetError(
                f"{self.path} line {number}: duplicate query_id {qid!r} "
                f"(first at line {self.seen_ids[qid]})"
            )
        self.seen_ids[qid] = number
        return qid

    def _warn_repeated_text(self, at: str, number: int, key: str, text: str, qid: str) -> None:
        if key in self.seen_texts:
            first_line, first_id = self.seen_texts[key]
            warnings.warn(
                f"{at}: query text {text!r} repeats line {first_line} of {self.path.name} "
                f"(ids {first_id!r} and {qid!r}); it will count twice: drop one of the lines",
                EmbedBenchWarning,
                stacklevel=4,
            )
        self.seen_texts.setdefault(key, (number, qid))

    def _check_document(self, did: str, at: str) -> None:
        if did in self.known:
            return
        if did in self.left_out:
            raise DatasetError(
                f"{at}: document {did!r} is in {self.folder} but {self.left_out[did]}"
            )
        hint = closest(did, self.known)
        raise DatasetError(
            f"{at}: document {did!r} is not in {self.folder}"
            + (f"; did you mean {hint!r}?" if hint else "")
        )


def _query_key(text: str) -> str:
    """What makes two query texts the same: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _text_query_id(
    key: str, occurrences: dict[str, int], *, taken: Sequence[Container[str]]
) -> str:
    """``q-`` + 12 hex digits of SHA-256(key); the n-th repeat of a text adds ``-n``.

    Derived from the text, not the line, so edits elsewhere in the file keep every id (and a
    baseline's per-query pairing) intact. ``occurrences`` counts the texts seen so far.
    """
    base = QUERY_ID_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    n = occurrences.get(key, 0) + 1
    qid = base if n == 1 else f"{base}-{n}"
    # an id written in the file (or given to an earlier line) holds it: take the next suffix
    while any(qid in ids for ids in taken):
        n += 1
        qid = f"{base}-{n}"
    occurrences[key] = n
    return qid


def _parse_judgements(obj: Mapping[str, Any], at: str) -> dict[str, int]:
    judged: dict[str, int] = {}
    ids = obj.get("relevant_doc_ids")
    graded = obj.get("relevance")
    if ids is None and graded is None:
        raise DatasetError(
            f"{at}: needs 'relevant_doc_ids' (a list of document paths) or 'relevance' "
            "(a mapping of document path to grade)"
        )
    if ids is not None:
        if not isinstance(ids, list) or not ids:
            raise DatasetError(f"{at}: 'relevant_doc_ids' must be a non-empty list, got {ids!r}")
        for raw in ids:
            if not isinstance(raw, str) or not raw:
                raise DatasetError(f"{at}: document id {raw!r} must be a non-empty string")
            judged[_normalise_doc_id(raw)] = 1
    if graded is not None:
        if not isinstance(graded, Mapping) or not graded:
            raise DatasetError(
                f"{at}: 'relevance' must be a non-empty mapping of document to grade, "
                f"got {graded!r}"
            )
        for raw, grade in graded.items():
            if isinstance(grade, float) and grade.is_integer():
                grade = int(grade)  # 1.0 is grade 1, as in the qrels
            if isinstance(grade, bool) or not isinstance(grade, int) or grade < 0:
                raise DatasetError(f"{at}: grade {grade!r} for {raw!r} must be an integer >= 0")
            judged[_normalise_doc_id(raw)] = grade
    if not any(g > 0 for g in judged.values()):
        raise DatasetError(f"{at}: no document has a grade above 0; the query cannot be scored")
    return judged
