"""The eval-set loader: a JSONL eval set over a folder of documents, with query ids derived
from the query text when a line has none.

The documents folder, whatever its file types, is read by the one documents-folder reader,
:func:`pytest_embedbench.ingest.read_documents_folder` (ids: the path relative to the folder).
"""

from __future__ import annotations

import difflib
import hashlib
import unicodedata
import warnings
from collections.abc import Container, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.exceptions import DatasetError, EmbedBenchWarning
from ..ingest import SUPPORTED_EXTENSIONS, DocumentsFolder, read_documents_folder
from .core import Query, RetrievalDataset
from .files import as_id, closest, read_jsonl
from .languages import check_language

__all__ = ["DOCUMENT_SUFFIXES", "QUERY_ID_PREFIX", "load_evalset"]

#: Every document type a documents folder may hold: the ones ``ingest.load_documents`` reads
DOCUMENT_SUFFIXES = SUPPORTED_EXTENSIONS
#: Prefix of the query ids derived from query texts (eval-set lines without ``query_id``).
QUERY_ID_PREFIX = "q-"


def _normalise_doc_id(raw: str) -> str:
    doc_id = unicodedata.normalize("NFC", raw).replace("\\", "/")
    while doc_id.startswith("./"):
        doc_id = doc_id[2:]
    return doc_id


def _read_documents(
    folder: Path, extensions: Sequence[str] | None, *, evalset: Path
) -> DocumentsFolder:
    """The documents of ``folder``, read by :func:`pytest_embedbench.ingest.read_documents_folder`
    (the one reader of a documents folder, whatever its file types), with files of types no
    reader reads counted by extension in one warning, so a folder of spreadsheets is not
    silently an empty corpus. The eval set itself, when it lies in the folder, is not counted.
    """
    read = read_documents_folder(folder, extensions=extensions or DOCUMENT_SUFFIXES)
    try:
        own = unicodedata.normalize(
            "NFC", evalset.resolve().relative_to(folder.resolve()).as_posix()
        )
    except ValueError:  # the eval set lies outside the folder
        own = None
    other_types: dict[str, int] = {}
    for doc_id, ext in read.unsupported.items():
        if doc_id != own:
            other_types[ext] = other_types.get(ext, 0) + 1
    if other_types:
        counts = ", ".join(f"{ext} {n}" for ext, n in sorted(other_types.items()))
        total = sum(other_types.values())
        warnings.warn(
            f"{folder}: {total} file(s) skipped, of types the loader does not read ({counts}); "
            f"only {', '.join(DOCUMENT_SUFFIXES)} documents are loaded: convert the files to "
            "include them",
            EmbedBenchWarning,
            stacklevel=3,
        )
    return read


def load_evalset(
    evalset: str | Path,
    docs: str | Path,
    *,
    name: str | None = None,
    extensions: Sequence[str] | None = None,
) -> RetrievalDataset:
    """Load a JSONL eval set over a folder of documents.

    The folder is read by :func:`pytest_embedbench.ingest.load_documents`, whatever its file
    types (``extensions``, suffixes such as ``".pdf"``, limit the types read), with its rules:
    hidden files and symlinks leaving the folder left out, binary files and ids that differ
    only by case refused.

    One JSON object a line::

        {"query_id": "q001", "query": "What is the maximum payload size?",
         "relevant_doc_ids": ["api.md"], "answer": "5 MB"}

    ``relevant_doc_ids`` are paths relative to the folder (``./`` and backslashes are
    normalised) and count as grade 1; ``relevance`` (``{"api.md": 2}``) gives graded judgements
    instead (a line with both is an error). Document ids and query ids
    are Unicode NFC, like the file names they are matched with. ``query_id`` is optional: a line
    without one gets ``q-`` and the first 12 hex digits of the SHA-256 of its text (NFKC,
    case-folded, whitespace collapsed), so inserting, removing or reordering lines never changes
    another query's id; a repeated text adds ``-2``, ``-3``... by occurrence. ``answer``,
    ``source_chunk_id`` and other fields are kept under the query's metadata, except a key so
    close to one read (``relevent_doc_ids``) that it is taken for a typo: an error naming the
    file, the line, the key and the one it resembles. A duplicate
    query id is an error; a duplicate query text is a warning (it double-weights that query).
    """
    evalset_path, folder = Path(evalset), Path(docs)
    if not folder.is_dir():
        raise DatasetError(
            f"{folder}: documents folder not found (for eval set {evalset_path}); pass the "
            "folder as docs= (the 'docs' key of a dataset in embedbench.yaml) or put the "
            "documents in a docs/ folder beside the eval set"
        )
    read = _read_documents(folder, extensions, evalset=evalset_path)
    documents = read.documents
    rows = list(read_jsonl(evalset_path))
    reader = _QueryReader(evalset_path, folder, {d.id for d in documents}, read.left_out, rows)
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
_QUERY_KEYS = ("query_id", "query", "relevant_doc_ids", "relevance", "language")
#: how close (difflib's ratio) an unread key must be to a read one to be taken for its typo:
#: ``relevent_doc_ids``, ``queryId`` and ``relevances`` are; ``category``, ``answer``,
#: ``source_chunk_id`` and ``query_type`` (metadata) are not
_TYPO_CUTOFF = 0.8


def _check_keys(obj: Mapping[str, Any], at: str) -> None:
    """Refuse a line whose keys say something other than what would be read: an unread key
    that is a typo of a read one (it would be kept as metadata while the line lost its
    judgements or its id), and both judgement keys on one line (which one would count?)."""
    for key in obj:
        if key in _QUERY_KEYS:
            continue
        folded = str(key).casefold().replace("-", "_").replace(" ", "_")
        match = difflib.get_close_matches(folded, _QUERY_KEYS, n=1, cutoff=_TYPO_CUTOFF)
        if match:
            raise DatasetError(
                f"{at}: unknown key {key!r}; did you mean {match[0]!r}? The keys read are "
                f"{', '.join(map(repr, _QUERY_KEYS))}; other keys are kept as the query's "
                "metadata, but one this close to a key read is taken for a typo: rename it"
            )
    if "relevant_doc_ids" in obj and "relevance" in obj:
        raise DatasetError(
            f"{at}: has both 'relevant_doc_ids' and 'relevance'; use one: 'relevant_doc_ids' "
            "lists documents of grade 1, 'relevance' maps each document to its grade "
            '({"api.md": 2, "faq.md": 1})'
        )


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
        _check_keys(obj, at)
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
        language = obj.get("language")
        if language is not None:
            language = check_language(language, f"{at}: 'language'")
        self.queries.append(Query(qid, text, metadata, origin=at, language=language))
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
                f"{at}: document {did!r} is in {self.folder} but {self.left_out[did]} "
                "(or drop it from this line)"
            )
        parts = did.split("/")
        for n in range(1, len(parts)):  # under a folder left out whole (hidden, a link out)
            above = "/".join(parts[:n])
            if above in self.left_out:
                raise DatasetError(
                    f"{at}: document {did!r} is under {above!r} in {self.folder}, which "
                    f"{self.left_out[above]} (or drop it from this line)"
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
            f"(a mapping of document path to grade){_other_keys(obj)}"
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


def _other_keys(obj: Mapping[str, Any]) -> str:
    """What a line without judgements holds instead: a did-you-mean for the key nearest a
    judgement key (looser than a typo), else the keys kept as metadata; "" when none."""
    others = [str(key) for key in obj if key not in _QUERY_KEYS]
    for key in others:
        match = difflib.get_close_matches(key.casefold(), _QUERY_KEYS[2:], n=1)
        if match:
            return f"; did you mean {match[0]!r} for {key!r}?"
    if others:
        return f"; its other keys ({', '.join(map(repr, others))}) are kept as metadata"
    return ""
