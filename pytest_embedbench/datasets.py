"""Documents, queries, graded relevance judgements and the loaders that read them.

A :class:`RetrievalDataset` is what every model is evaluated on::

    from pytest_embedbench import load_dataset

    ds = load_dataset("../shared/data/scifact", split="test")   # a BEIR folder
    ds = load_dataset("examples/support")                      # documents folder + evalset.jsonl
    small = ds.subset(n_queries=50, n_distractors=500, seed=0)  # for CI

Every problem found while loading names the file and the line, and says how to fix it.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
import warnings
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from .exceptions import DatasetError, EmbedBenchWarning

__all__ = [
    "Document",
    "EvalSet",
    "Query",
    "RetrievalDataset",
    "load_beir",
    "load_dataset",
    "load_evalset",
]

#: Documents in a folder that the evalset loader reads (other formats come with ``ingest.py``).
TEXT_SUFFIXES = (".txt", ".md")
#: Prefix of the query ids derived from query texts (eval-set lines without ``query_id``).
QUERY_ID_PREFIX = "q-"
#: At most this many problems are listed in one DatasetError; the count of the rest follows.
_MAX_LISTED = 20


@dataclass(frozen=True)
class Document:
    """One document of a corpus.

    ``origin`` says where it was read ("corpus.jsonl line 3") and is not part of its identity.
    """

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    origin: str | None = field(default=None, compare=False)

    @property
    def embed_text(self) -> str:
        """The text a retriever sees: title, a space, then text, stripped (as BEIR and MTEB)."""
        return f"{self.title} {self.text}".strip()


@dataclass(frozen=True)
class Query:
    """One query. ``metadata`` is kept for reports and never shown to a retriever."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    origin: str | None = field(default=None, compare=False)


Qrels = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class EvalSet:
    """The judged queries of a dataset and their qrels (the ``evalset`` fixture)."""

    queries: tuple[Query, ...]
    qrels: Mapping[str, Mapping[str, int]]

    def __len__(self) -> int:
        return len(self.queries)

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries)

    def relevant(self, query_id: str, *, min_grade: int = 1) -> dict[str, int]:
        """Documents judged at least ``min_grade`` for ``query_id``."""
        return {d: g for d, g in self.qrels[query_id].items() if g >= min_grade}


class RetrievalDataset:
    """Documents, judged queries and graded qrels (``query_id -> {doc_id: grade}``).

    Grades are integers >= 0; a grade of 1 or more is relevant for the binary metrics and nDCG
    uses the grade as its gain. Only queries that appear in the qrels are evaluated: they are
    :attr:`queries`, in the order given. The dataset is validated when it is built, and a
    :class:`~pytest_embedbench.exceptions.DatasetError` lists every problem with its origin.

    Usage::

        ds = RetrievalDataset(
            documents=[Document("d1", "Reset a password from the login page.")],
            queries=[Query("q1", "how do I reset my password")],
            qrels={"q1": {"d1": 1}},
            name="tiny",
        )
    """

    def __init__(
        self,
        documents: Iterable[Document],
        queries: Iterable[Query],
        qrels: Mapping[str, Mapping[str, int]],
        *,
        name: str = "dataset",
        source: str | None = None,
        qrels_origins: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        self.name = name
        self.source = source
        self.documents: tuple[Document, ...] = tuple(documents)
        all_queries = tuple(queries)
        self._qrels_origins = dict(qrels_origins or {})
        self._validate(all_queries, qrels)
        self.qrels: Mapping[str, Mapping[str, int]] = MappingProxyType(
            {qid: MappingProxyType(dict(judged)) for qid, judged in qrels.items()}
        )
        self.queries: tuple[Query, ...] = tuple(q for q in all_queries if q.id in self.qrels)
        self._doc_index = {d.id: i for i, d in enumerate(self.documents)}
        self._fingerprint: str | None = None

    # -- validation --------------------------------------------------------------------------

    def _validate(self, queries: Sequence[Query], qrels: Mapping[str, Mapping[str, int]]) -> None:
        problems: list[str] = []

        def where(origin: str | None, fallback: str) -> str:
            return origin if origin else fallback

        seen_docs: dict[str, Document] = {}
        for i, doc in enumerate(self.documents):
            at = where(doc.origin, f"documents[{i}]")
            if not isinstance(doc.id, str) or not doc.id:
                problems.append(f"{at}: document id {doc.id!r} must be a non-empty string")
                continue
            if not isinstance(doc.text, str) or not isinstance(doc.title, str):
                problems.append(f"{at}: document {doc.id!r} needs string 'title' and 'text'")
            elif not doc.embed_text:
                problems.append(f"{at}: document {doc.id!r} has no text; remove it or give it text")
            if doc.id in seen_docs:
                first = where(seen_docs[doc.id].origin, "an earlier document")
                problems.append(
                    f"{at}: duplicate document id {doc.id!r} (first at {first}); ids must be unique"
                )
            else:
                seen_docs[doc.id] = doc

        seen_queries: dict[str, Query] = {}
        for i, query in enumerate(queries):
            at = where(query.origin, f"queries[{i}]")
            if not isinstance(query.id, str) or not query.id:
                problems.append(f"{at}: query id {query.id!r} must be a non-empty string")
                continue
            if not isinstance(query.text, str) or not query.text.strip():
                problems.append(
                    f"{at}: query {query.id!r} has empty text; write the question or drop it"
                )
            if query.id in seen_queries:
                first = where(seen_queries[query.id].origin, "an earlier query")
                problems.append(
                    f"{at}: duplicate query id {query.id!r} (first at {first}); ids must be unique"
                )
            else:
                seen_queries[query.id] = query

        if not qrels:
            problems.append("no relevance judgements (qrels): nothing can be evaluated")
        for qid, judged in qrels.items():
            if qid not in seen_queries:
                at = self._origin_of(qid, next(iter(judged), ""), f"qrels[{qid!r}]")
                problems.append(f"{at}: query {qid!r} is not among the queries")
            for did, grade in judged.items():
                at = self._origin_of(qid, did, f"qrels[{qid!r}][{did!r}]")
                if did not in seen_docs:
                    problems.append(f"{at}: document {did!r} is not in the corpus")
                if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)):
                    problems.append(
                        f"{at}: grade {grade!r} for ({qid!r}, {did!r}) must be an integer >= 0"
                    )
                elif grade < 0:
                    problems.append(
                        f"{at}: grade {grade!r} for ({qid!r}, {did!r}) is negative; "
                        "use 0 for judged non-relevant"
                    )
        if problems:
            raise DatasetError(_format_problems(self.name, problems))

    def _origin_of(self, qid: str, did: str, fallback: str) -> str:
        return self._qrels_origins.get((qid, did), fallback)

    # -- access ------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return (
            f"RetrievalDataset({self.name!r}, documents={len(self.documents)}, "
            f"queries={len(self.queries)}, judgements={sum(len(j) for j in self.qrels.values())})"
        )

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def evalset(self) -> EvalSet:
        """The judged queries and their qrels."""
        return EvalSet(self.queries, self.qrels)

    def document(self, doc_id: str) -> Document:
        """The document with this id (KeyError names it when absent)."""
        try:
            return self.documents[self._doc_index[doc_id]]
        except KeyError:
            raise KeyError(f"document {doc_id!r} is not in dataset {self.name!r}") from None

    def doc_position(self, doc_id: str) -> int:
        """Index of ``doc_id`` in :attr:`documents`."""
        return self._doc_index[doc_id]

    @property
    def fingerprint(self) -> str:
        """SHA-256 over the content that decides numbers: documents, query texts and qrels.

        Names, origins and query metadata are left out, so a moved folder keeps its fingerprint.
        """
        if self._fingerprint is None:
            h = hashlib.sha256()
            for doc in sorted(self.documents, key=lambda d: d.id):
                _feed(h, "d", doc.id, doc.title, doc.text)
            for query in sorted(self.queries, key=lambda q: q.id):
                _feed(h, "q", query.id, query.text)
            for qid in sorted(self.qrels):
                for did, grade in sorted(self.qrels[qid].items()):
                    _feed(h, "r", qid, did, str(int(grade)))
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    # -- derived datasets --------------------------------------------------------------------

    def subset(
        self,
        n_queries: int | None = None,
        n_distractors: int | None = None,
        *,
        seed: int = 0,
    ) -> RetrievalDataset:
        """A smaller dataset, the same for the same arguments.

        Keeps ``n_queries`` judged queries drawn with ``seed`` (all when None), every document
        judged for them, and ``n_distractors`` other documents drawn with ``seed`` (all when
        None). Documents keep their original order, so rankings stay comparable.

        Usage::

            ci = load_dataset("../shared/data/scifact").subset(n_queries=50, n_distractors=1000)
        """
        rng = np.random.default_rng(seed)
        query_ids = [q.id for q in self.queries]
        if n_queries is not None:
            if n_queries < 1:
                raise DatasetError(f"subset(n_queries={n_queries!r}): must be at least 1")
            if n_queries < len(query_ids):
                picked = rng.choice(len(query_ids), size=n_queries, replace=False)
                query_ids = [query_ids[i] for i in sorted(picked)]
        keep_queries = set(query_ids)
        judged = {did for qid in query_ids for did in self.qrels[qid]}
        others = [d.id for d in self.documents if d.id not in judged]
        if n_distractors is not None:
            if n_distractors < 0:
                raise DatasetError(f"subset(n_distractors={n_distractors!r}): must be >= 0")
            if n_distractors < len(others):
                picked = rng.choice(len(others), size=n_distractors, replace=False)
                others = [others[i] for i in picked]
        keep_docs = judged | set(others)
        return RetrievalDataset(
            [d for d in self.documents if d.id in keep_docs],
            [q for q in self.queries if q.id in keep_queries],
            {qid: self.qrels[qid] for qid in query_ids},
            name=f"{self.name}[subset q={len(query_ids)} seed={seed}]",
            source=self.source,
            qrels_origins=self._qrels_origins,
        )

    @classmethod
    def from_dicts(
        cls,
        corpus: Mapping[str, str | Mapping[str, Any]],
        queries: Mapping[str, str],
        qrels: Mapping[str, Mapping[str, int]],
        *,
        name: str = "dataset",
    ) -> RetrievalDataset:
        """Build a dataset from plain Python objects.

        ``corpus`` maps a document id to its text or to ``{"title": ..., "text": ...}``.

        Usage::

            ds = RetrievalDataset.from_dicts(
                {"d1": "Reset a password from the login page."},
                {"q1": "how do I reset my password"},
                {"q1": {"d1": 1}},
            )
        """
        documents = []
        for did, value in corpus.items():
            if isinstance(value, str):
                documents.append(Document(str(did), value))
            elif isinstance(value, Mapping):
                unknown = set(value) - {"title", "text", "metadata"}
                if unknown or "text" not in value:
                    raise DatasetError(
                        f"corpus[{did!r}]: expected a string or a mapping with 'text' and "
                        f"optional 'title', 'metadata'; got keys {sorted(value)!r}"
                    )
                documents.append(
                    Document(
                        str(did),
                        value["text"],
                        value.get("title", "") or "",
                        dict(value.get("metadata") or {}),
                    )
                )
            else:
                raise DatasetError(
                    f"corpus[{did!r}]: expected a string or a mapping, got {type(value).__name__}"
                )
        query_objs = [Query(str(qid), text) for qid, text in queries.items()]
        return cls(documents, query_objs, qrels, name=name)


def _feed(h: Any, *parts: str) -> None:
    for part in parts:
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)


def _format_problems(name: str, problems: list[str]) -> str:
    shown = problems[:_MAX_LISTED]
    more = len(problems) - len(shown)
    lines = [f"dataset {name!r} has {len(problems)} problem(s):"] + [f"  {p}" for p in shown]
    if more:
        lines.append(f"  ... and {more} more")
    return "\n".join(lines)


# -- file readers ---------------------------------------------------------------------------


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, line) with CRLF or LF endings removed; a BOM is dropped."""
    try:
        with path.open("r", encoding="utf-8-sig", newline=None) as fh:
            for number, line in enumerate(fh, start=1):
                yield number, line.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except FileNotFoundError:
        raise DatasetError(f"{path}: file not found") from None


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in _read_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{path} line {number}: malformed JSON ({exc.msg} at column {exc.colno}); "
                "each line must be one JSON object"
            ) from None
        if not isinstance(obj, dict):
            raise DatasetError(
                f"{path} line {number}: expected a JSON object, got {type(obj).__name__}"
            )
        yield number, obj


def _as_id(value: Any, path: Path, number: int, key: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise DatasetError(
            f"{path} line {number}: {key!r} must be a non-empty string, got {value!r}"
        )
    # NFC, so an id typed on one system matches the same id (or file name) written on another
    return unicodedata.normalize("NFC", str(value))


def _as_text(obj: Mapping[str, Any], key: str, path: Path, number: int, default: Any = None) -> str:
    value = obj.get(key, default)
    if value is None:
        raise DatasetError(f"{path} line {number}: missing key {key!r}")
    if not isinstance(value, str):
        raise DatasetError(
            f"{path} line {number}: {key!r} must be a string, got {type(value).__name__}"
        )
    return value


def load_beir(
    path: str | Path, split: str = "test", *, name: str | None = None
) -> RetrievalDataset:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

    Lines may end in CRLF or LF; the qrels may start with a header line. Only the queries judged
    in the split are evaluated; their metadata (SciFact's holds the answers) is kept but never
    shown to a retriever.
    """
    root = Path(path)
    corpus_path, queries_path = root / "corpus.jsonl", root / "queries.jsonl"
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise DatasetError(
            f"{qrels_path}: no qrels for split {split!r}; available splits: {available!r}"
        )
    documents = []
    for number, obj in _read_jsonl(corpus_path):
        documents.append(
            Document(
                _as_id(obj.get("_id"), corpus_path, number, "_id"),
                _as_text(obj, "text", corpus_path, number),
                _as_text(obj, "title", corpus_path, number, default="") or "",
                obj.get("metadata") or {},
                origin=f"{corpus_path} line {number}",
            )
        )
    queries = []
    for number, obj in _read_jsonl(queries_path):
        queries.append(
            Query(
                _as_id(obj.get("_id"), queries_path, number, "_id"),
                _as_text(obj, "text", queries_path, number),
                obj.get("metadata") or {},
                origin=f"{queries_path} line {number}",
            )
        )
    qrels: dict[str, dict[str, int]] = {}
    origins: dict[tuple[str, str], str] = {}
    first = True
    for number, line in _read_lines(qrels_path):
        if not line.strip():
            continue
        cols = line.split("\t") if "\t" in line else line.split()
        if len(cols) == 4:  # TREC style: qid iteration docid grade
            cols = [cols[0], cols[2], cols[3]]
        if len(cols) != 3:
            raise DatasetError(
                f"{qrels_path} line {number}: expected 3 tab-separated columns "
                f"(query-id, corpus-id, score), got {len(cols)}: {line!r}"
            )
        qid, did, raw = (unicodedata.normalize("NFC", c.strip()) for c in cols)
        grade = _parse_grade(raw, f"{qrels_path} line {number}")
        if grade is None:
            # a header ("query-id corpus-id score") is known by its text: a score that is not
            # a number, on the first line; a numeric first line is always a judgement
            if first:
                first = False
                continue
            raise DatasetError(
                f"{qrels_path} line {number}: score {raw!r} is not an integer grade; "
                "grades must be integers >= 0"
            )
        first = False
        if did in qrels.get(qid, {}):
            raise DatasetError(
                f"{qrels_path} line {number}: ({qid!r}, {did!r}) is judged twice "
                f"(first at {origins[(qid, did)]})"
            )
        qrels.setdefault(qid, {})[did] = grade
        origins[(qid, did)] = f"{qrels_path} line {number}"
    if not qrels:
        raise DatasetError(
            f"{qrels_path}: no judgements; write one 'query-id<TAB>corpus-id<TAB>score' line per "
            "judged pair (integer score >= 0; a header line is optional)"
        )
    return RetrievalDataset(
        documents,
        queries,
        qrels,
        name=name or root.resolve().name,
        source=str(root),
        qrels_origins=origins,
    )


def _parse_grade(raw: str, at: str) -> int | None:
    """The integer grade written as ``raw`` (``2``, ``2.0``), or None when it is not a number.

    A number that is not a whole one (``1.5``, ``nan``) is an error: grades are integers >= 0.
    """
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        value = float(raw)
    except ValueError:
        return None
    if not math.isfinite(value) or not value.is_integer():
        raise DatasetError(
            f"{at}: grade {raw!r} is not a whole number; grades must be integers >= 0 "
            "(0 judged non-relevant, 1 relevant, 2 and up more relevant)"
        )
    return int(value)


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
    supported = ", ".join(TEXT_SUFFIXES)
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


def load_evalset(
    evalset: str | Path,
    docs: str | Path,
    *,
    name: str | None = None,
) -> RetrievalDataset:
    """Load a JSONL eval set over a folder of .txt/.md documents.

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
    documents, left_out = _read_documents_folder(folder, skip=[evalset_path])
    known = {d.id for d in documents}
    rows = list(_read_jsonl(evalset_path))
    given_ids = {
        unicodedata.normalize("NFC", str(obj["query_id"]))
        for _, obj in rows
        if obj.get("query_id") not in (None, "")
    }
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    origins: dict[tuple[str, str], str] = {}
    seen_ids: dict[str, int] = {}
    seen_texts: dict[str, tuple[int, str]] = {}
    occurrences: dict[str, int] = {}
    for number, obj in rows:
        at = f"{evalset_path} line {number}"
        text = obj.get("query")
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{at}: 'query' is missing or empty; every line needs a question")
        key = _query_key(text)
        if obj.get("query_id") in (None, ""):
            qid = _text_query_id(key, occurrences, taken=(given_ids, seen_ids))
        else:
            qid = _as_id(obj["query_id"], evalset_path, number, "query_id")
        if qid in seen_ids:
            raise DatasetError(f"{at}: duplicate query_id {qid!r} (first at line {seen_ids[qid]})")
        seen_ids[qid] = number
        if key in seen_texts:
            first_line, first_id = seen_texts[key]
            warnings.warn(
                f"{at}: query text {text!r} repeats line {first_line} of {evalset_path.name} "
                f"(ids {first_id!r} and {qid!r}); it will count twice: drop one of the lines",
                EmbedBenchWarning,
                stacklevel=2,
            )
        seen_texts.setdefault(key, (number, qid))
        judged = _parse_judgements(obj, at)
        for did in judged:
            if did not in known:
                if did in left_out:
                    raise DatasetError(f"{at}: document {did!r} is in {folder} but {left_out[did]}")
                hint = _closest(did, known)
                raise DatasetError(
                    f"{at}: document {did!r} is not in {folder}"
                    + (f"; did you mean {hint!r}?" if hint else "")
                )
            origins[(qid, did)] = at
        metadata = {
            k: v
            for k, v in obj.items()
            if k not in {"query_id", "query", "relevant_doc_ids", "relevance"}
        }
        queries.append(Query(qid, text, metadata, origin=at))
        qrels[qid] = judged
    if not queries:
        raise DatasetError(f"{evalset_path}: no queries; write one JSON object a line")
    return RetrievalDataset(
        documents,
        queries,
        qrels,
        name=name or folder.resolve().name,
        source=str(evalset_path),
        qrels_origins=origins,
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


def _closest(name: str, known: Iterable[str]) -> str | None:
    import difflib

    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def load_dataset(
    path: str | Path | RetrievalDataset,
    split: str = "test",
    *,
    docs: str | Path | None = None,
    name: str | None = None,
) -> RetrievalDataset:
    """Load a dataset from a path, whatever its layout.

    * a folder with ``corpus.jsonl`` and ``qrels/``: a BEIR dataset (``split`` picks the qrels);
    * a folder with ``evalset.jsonl``: its documents are ``docs`` when given, else
      ``<folder>/docs`` when that exists, otherwise the folder itself;
    * a ``.jsonl`` eval set file: documents from ``docs`` (default: ``docs/`` beside it).

    An eval set has one split: ``split`` other than ``"test"`` (the default) is an error there.
    A :class:`RetrievalDataset` is returned as it is.
    """
    if isinstance(path, RetrievalDataset):
        return path
    root = Path(path)
    if root.is_dir():
        if (root / "corpus.jsonl").is_file():
            return load_beir(root, split, name=name)
        if (root / "evalset.jsonl").is_file():
            _check_single_split(split, root / "evalset.jsonl")
            folder = Path(docs) if docs else (root / "docs" if (root / "docs").is_dir() else root)
            return load_evalset(root / "evalset.jsonl", folder, name=name or root.resolve().name)
        raise DatasetError(
            f"{root}: not a dataset folder; looked for {root / 'corpus.jsonl'} (BEIR, with "
            f"qrels/{split}.tsv) and {root / 'evalset.jsonl'}. {_EVALSET_RULES}"
            + _evalset_hint(root)
        )
    if root.is_file() and root.suffix == ".jsonl":
        _check_single_split(split, root)
        folder = Path(docs) if docs else root.parent / "docs"
        return load_evalset(root, folder, name=name)
    raise DatasetError(
        f"{root}: no such dataset folder or .jsonl eval set. {_EVALSET_RULES}"
        + (_evalset_hint(root.parent) if root.parent.is_dir() else "")
    )


#: Where an eval set and its documents are looked for; said in every "not found" error.
_EVALSET_RULES = (
    "A dataset path is a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), a folder "
    "holding evalset.jsonl (documents: docs= if given, else its docs/ subfolder if there is "
    "one, else the folder itself), or a .jsonl eval set file (documents: docs= if given, else "
    "the docs/ folder beside it)."
)


def _evalset_hint(folder: Path) -> str:
    """A pointer to the eval set a user probably meant, or ""."""
    found = sorted(p.name for p in folder.glob("*.jsonl") if p.is_file())
    if found:
        return f" Found {found!r} in {folder}: point the dataset at one of these files."
    # pointed at the documents folder rather than the folder holding the eval set
    parent = folder.parent if folder.name not in ("", "..") else folder.resolve().parent
    if (parent / "evalset.jsonl").is_file():
        return f" {parent / 'evalset.jsonl'} exists: point the dataset at {parent}."
    return ""


def _check_single_split(split: str | None, evalset: Path) -> None:
    if split not in (None, "test"):
        raise DatasetError(
            f"{evalset}: split={split!r} does not apply to an eval set, which has one split "
            "('test'); remove split=, or keep one eval set file per split and point the "
            "dataset at that file"
        )
