"""The core objects: :class:`EvalSet` and :class:`RetrievalDataset` (validated when built;
every problem names its origin), over the :class:`Document` and :class:`Query` of
:mod:`pytest_embedbench.types` (re-exported here)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ...core.exceptions import DatasetError
from ...core.types import Document, Query

if TYPE_CHECKING:
    from ..chunking.settings import ChunkingSettings

__all__ = [
    "GRADE_RULE",
    "MAX_GRADE",
    "Document",
    "EvalSet",
    "Query",
    "RetrievalDataset",
    "chunking_identity",
    "format_problems",
]

#: The largest relevance grade. Real qrels grade 0-4 (TREC) or 0-100 at most; trec_eval (the
#: reference the metrics match) walks every grade level up to the largest, so its time grows
#: with the grade (65,535 costs 0.7 s a query in pytrec_eval; 2**30 crashes it) and a grade such
#: as 1e20 is a typing slip, not a judgement.
MAX_GRADE = 1000
GRADE_RULE = (
    f"grades must be integers >= 0 and <= {MAX_GRADE} "
    "(0 judged non-relevant, 1 relevant, 2 and up more relevant)"
)

#: At most this many problems are listed in one DatasetError; the count of the rest follows.
_MAX_LISTED = 20


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

    ``chunking`` (a :class:`~pytest_embedbench.chunking.ChunkingSettings`, or None) makes it a
    chunked dataset: a retriever searches the chunks, and each document takes the score of its
    best chunk (see :mod:`pytest_embedbench.docscore`). The settings are part of the
    fingerprint; :meth:`with_chunking` gives the same documents chunked another way.

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
        chunking: ChunkingSettings | None = None,
    ) -> None:
        self.name = name
        #: how documents are split before retrieval (None: each document is embedded whole)
        self.chunking = chunking
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
        #: the languages of the queries, in the order they first appear (() for a dataset in
        #: one language): each is reported on its own and the metrics are their macro average
        self.languages: tuple[str, ...] = tuple(
            dict.fromkeys(q.language for q in self.queries if q.language is not None)
        )

    # -- validation --------------------------------------------------------------------------

    def _validate(self, queries: Sequence[Query], qrels: Mapping[str, Mapping[str, int]]) -> None:
        problems: list[str] = []
        seen_docs = _check_documents(self.documents, problems)
        seen_queries = _check_queries(queries, problems)
        _check_languages(self.documents, queries, qrels, problems)
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
                elif grade > MAX_GRADE:
                    problems.append(
                        f"{at}: grade {grade!r} for ({qid!r}, {did!r}) is out of range; "
                        f"{GRADE_RULE}"
                    )
        if problems:
            raise DatasetError(format_problems(self.name, problems))

    def _origin_of(self, qid: str, did: str, fallback: str) -> str:
        return self._qrels_origins.get((qid, did), fallback)

    def judgement_origin(self, query_id: str, doc_id: str) -> str:
        """Where the judgement of ``doc_id`` for ``query_id`` was read ("evalset.jsonl line
        4"), or a description of it when it came from Python objects."""
        return self._origin_of(query_id, doc_id, f"qrels[{query_id!r}][{doc_id!r}]")

    # -- access ------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return (
            f"RetrievalDataset({self.name!r}, documents={len(self.documents)}, "
            f"queries={len(self.queries)}, judgements={sum(len(j) for j in self.qrels.values())})"
        )

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def separate_corpora(self) -> bool:
        """Whether each language has its own corpus (its documents carry a language, as
        :func:`~.languages.merge_languages` builds): a query then searches only the documents
        of its own language."""
        return bool(self.documents) and self.documents[0].language is not None

    def language_part(self, language: str) -> RetrievalDataset:
        """The queries in ``language`` and their judgements, over that language's documents
        when each language has its own corpus (else over every document), chunked alike.

        Usage::

            zh = ds.language_part("zh")
        """
        if language not in self.languages:
            raise DatasetError(
                f"dataset {self.name!r} has no language {language!r}; its languages are "
                f"{list(self.languages)}"
            )
        queries = [q for q in self.queries if q.language == language]
        documents = (
            [d for d in self.documents if d.language == language]
            if self.separate_corpora
            else self.documents
        )
        return RetrievalDataset(
            documents,
            queries,
            {q.id: self.qrels[q.id] for q in queries},
            name=f"{self.name}[{language}]",
            source=self.source,
            qrels_origins=self._qrels_origins,
            chunking=self.chunking,
        )

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

    @property
    def fingerprint(self) -> str:
        """SHA-256 over the content that decides numbers: documents, query texts and qrels.

        Names, origins and query metadata are left out, so a moved folder keeps its fingerprint.
        The chunking settings are in it: the same documents chunked another way are another
        dataset to a baseline.
        """
        if self._fingerprint is None:
            h = hashlib.sha256()
            for doc in sorted(self.documents, key=lambda d: d.id):
                # a language (a corpus of its own) is fed only when set: fingerprints of
                # datasets in one language are unchanged
                _feed(h, "d", doc.id, doc.title, doc.text, *_language(doc.language))
            for query in sorted(self.queries, key=lambda q: q.id):
                _feed(h, "q", query.id, query.text, *_language(query.language))
            for qid in sorted(self.qrels):
                for did, grade in sorted(self.qrels[qid].items()):
                    _feed(h, "r", qid, did, str(int(grade)))
            if self.chunking is not None:
                _feed(h, "c", json.dumps(chunking_identity(self.chunking), sort_keys=True))
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    # -- derived datasets --------------------------------------------------------------------

    def with_chunking(self, chunking: ChunkingSettings | None) -> RetrievalDataset:
        """The same documents, queries and judgements, chunked with ``chunking`` (None: whole
        documents). The dataset itself is left as it is.

        Usage::

            chunked = ds.with_chunking(ChunkingSettings(size=512, overlap=64))
        """
        out = copy.copy(self)
        out.chunking = chunking
        out._fingerprint = None
        return out

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
            chunking=self.chunking,
        )

    def without_queries(self, query_ids: Iterable[str], *, reason: str) -> RetrievalDataset:
        """The same documents with the queries ``query_ids`` (and their judgments) left out,
        e.g. the queries a fusion weight was tuned on (``reason`` says why, in the error when
        none would be left: nothing would be scored).

        Usage::

            held_out = ds.without_queries(tuned_ids, reason="fusion weight tuned on them")
        """
        drop = set(query_ids)
        kept = [q for q in self.queries if q.id not in drop]
        if not kept:
            raise DatasetError(
                f"dataset {self.name!r}: leaving out {len(drop)} queries ({reason}) leaves none"
            )
        if len(kept) == len(self.queries):
            return self
        out = copy.copy(self)
        out.queries = tuple(kept)
        out.qrels = MappingProxyType({q.id: self.qrels[q.id] for q in kept})
        out._fingerprint = None
        return out

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


def chunking_identity(chunking: ChunkingSettings) -> dict[str, Any]:
    """The chunking settings as the fingerprint sees them: a tokenizer file counts by its
    content (``tokenizer.json sha256:<12 hex>``), not its path, so a moved project keeps its
    fingerprint and an edited tokenizer changes it."""
    out = chunking.as_dict()
    tokenizer = out.get("tokenizer")
    if isinstance(tokenizer, str):
        path = Path(tokenizer)
        if path.is_dir():
            path = path / "tokenizer.json"
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
            out["tokenizer"] = f"{path.name} sha256:{digest}"
    return out


def _language(language: str | None) -> tuple[str, ...]:
    return () if language is None else ("language", language)


def _check_languages(
    documents: Sequence[Document],
    queries: Sequence[Query],
    qrels: Mapping[str, Mapping[str, int]],
    problems: list[str],
) -> None:
    """Languages all or none: every query with one when any has one (a query without would
    belong to no row of the per-language table), every document with one when any has one,
    and with document languages (each language its own corpus) each query judges only
    documents of its own language."""
    judged = [q for q in queries if q.id in qrels]
    with_language = [q for q in judged if q.language is not None]
    if with_language and len(with_language) < len(judged):
        missing = next(q for q in judged if q.language is None)
        problems.append(
            f"{missing.origin or f'query {missing.id!r}'}: query {missing.id!r} has no language "
            f"while {len(with_language)} other(s) have one (e.g. {with_language[0].id!r}: "
            f"{with_language[0].language!r}); give every query a language, or none"
        )
    doc_languages = {d.id: d.language for d in documents}
    with_doc_language = [d for d in documents if d.language is not None]
    if not with_doc_language:
        return
    if len(with_doc_language) < len(documents):
        missing_doc = next(d for d in documents if d.language is None)
        problems.append(
            f"{missing_doc.origin or f'document {missing_doc.id!r}'}: document "
            f"{missing_doc.id!r} has no language while others do; in a dataset whose languages "
            "each have a corpus, every document belongs to one"
        )
        return
    for query in judged:
        if query.language is None:
            continue
        for did in qrels[query.id]:
            if doc_languages.get(did, query.language) != query.language:
                problems.append(
                    f"query {query.id!r} ({query.language}) judges document {did!r} "
                    f"({doc_languages[did]}): each language's queries search only its own "
                    "corpus; judge a document of the query's language"
                )
    without_corpus = sorted(
        {str(q.language) for q in with_language} - {str(d.language) for d in with_doc_language}
    )
    if without_corpus:
        problems.append(
            f"language(s) {without_corpus} have queries but no documents: each language's "
            "queries search its own corpus"
        )


def _check_documents(documents: Sequence[Document], problems: list[str]) -> dict[str, Document]:
    """Append each document's problem to ``problems``; the documents by id."""
    return _check_ids(documents, "document", "documents", _document_text_problem, problems)


def _check_queries(queries: Sequence[Query], problems: list[str]) -> dict[str, Query]:
    """Append each query's problem to ``problems``; the queries by id."""
    return _check_ids(queries, "query", "queries", _query_text_problem, problems)


def _document_text_problem(doc: Document) -> str | None:
    if not isinstance(doc.text, str) or not isinstance(doc.title, str):
        return f"document {doc.id!r} needs string 'title' and 'text'"
    if not doc.embed_text:
        return f"document {doc.id!r} has no text; remove it or give it text"
    return None


def _query_text_problem(query: Query) -> str | None:
    if not isinstance(query.text, str) or not query.text.strip():
        return f"query {query.id!r} has empty text; write the question or drop it"
    return None


_Item = TypeVar("_Item", Document, Query)


def _check_ids(
    items: Sequence[_Item],
    kind: str,
    listed_as: str,
    text_problem: Callable[[_Item], str | None],
    problems: list[str],
) -> dict[str, _Item]:
    """The one check of documents and queries alike: each ``kind``'s id (a non-empty string,
    unique) and its text (``text_problem``); each problem, located by the item's origin or
    ``listed_as[i]``, appended to ``problems``. The items by id, the first of each id."""
    seen: dict[str, _Item] = {}
    for i, item in enumerate(items):
        at = item.origin or f"{listed_as}[{i}]"
        if not isinstance(item.id, str) or not item.id:
            problems.append(f"{at}: {kind} id {item.id!r} must be a non-empty string")
            continue
        problem = text_problem(item)
        if problem is not None:
            problems.append(f"{at}: {problem}")
        if item.id in seen:
            first = seen[item.id].origin or f"an earlier {kind}"
            problems.append(
                f"{at}: duplicate {kind} id {item.id!r} (first at {first}); ids must be unique"
            )
        else:
            seen[item.id] = item
    return seen


def _feed(h: Any, *parts: str) -> None:
    for part in parts:
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)


def format_problems(name: str, problems: list[str]) -> str:
    """One :class:`~pytest_embedbench.exceptions.DatasetError` message for ``problems`` of
    dataset ``name``: a count, then at most :data:`_MAX_LISTED` of them, then how many more."""
    shown = problems[:_MAX_LISTED]
    more = len(problems) - len(shown)
    lines = [f"dataset {name!r} has {len(problems)} problem(s):"] + [f"  {p}" for p in shown]
    if more:
        lines.append(f"  ... and {more} more")
    return "\n".join(lines)
