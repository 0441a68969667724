"""The BEIR loader: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path

from ...core.exceptions import DatasetError
from .core import GRADE_RULE, MAX_GRADE, Document, Query, RetrievalDataset
from .files import as_id, as_text, read_jsonl, read_lines
from .languages import check_language

__all__ = ["HEADER_WORDS", "load_beir", "parse_grade"]

#: the score column of a qrels header line (casefolded): BEIR writes ``query-id corpus-id
#: score``; a first line whose score is anything else is a judgement
HEADER_WORDS = frozenset({"score", "grade", "rel", "relevance", "label", "judgement", "judgment"})
_INTEGER = re.compile(r"[+-]?[0-9]+")


def load_beir(
    path: str | Path, split: str = "test", *, name: str | None = None
) -> RetrievalDataset:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

    Lines may end in CRLF or LF; the qrels may start with a header line. Only the queries judged
    in the split are evaluated; their metadata (SciFact's holds the answers) is kept but never
    shown to a retriever.
    """
    root = Path(path)
    available = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
    if not isinstance(split, str) or not _is_split_name(split):
        raise DatasetError(
            f"{root}: split {split!r} is not a split name: a split names a file "
            f"qrels/<split>.tsv inside the dataset folder (no path separators, no leading dot); "
            f"available splits: {available!r}"
        )
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        raise DatasetError(
            f"{qrels_path}: no qrels for split {split!r}; available splits: {available!r}"
        )
    documents = _read_corpus(root / "corpus.jsonl")
    queries = _read_queries(root / "queries.jsonl")
    qrels, origins = _read_qrels(qrels_path)
    return RetrievalDataset(
        documents,
        queries,
        qrels,
        name=name or root.resolve().name,
        source=str(root),
        qrels_origins=origins,
    )


def _is_split_name(split: str) -> bool:
    """Whether ``split`` is a bare file stem (``test``, ``dev-small``), so that
    ``qrels/<split>.tsv`` stays inside the dataset folder."""
    return (
        bool(split)
        and not split.startswith(".")
        and "/" not in split
        and "\\" not in split
        and "\0" not in split
        and Path(split).name == split
    )


def _read_corpus(path: Path) -> list[Document]:
    """``corpus.jsonl``: one ``{"_id", "title", "text", "metadata"}`` object a line."""
    return [
        Document(
            as_id(obj.get("_id"), path, number, "_id"),
            as_text(obj, "text", path, number),
            as_text(obj, "title", path, number, default="") or "",
            obj.get("metadata") or {},
            origin=f"{path} line {number}",
        )
        for number, obj in read_jsonl(path)
    ]


def _read_queries(path: Path) -> list[Query]:
    """``queries.jsonl``: one ``{"_id", "text", "metadata"}`` object a line."""
    return [
        Query(
            as_id(obj.get("_id"), path, number, "_id"),
            as_text(obj, "text", path, number),
            obj.get("metadata") or {},
            origin=f"{path} line {number}",
            language=(
                None
                if obj.get("language") is None
                else check_language(obj["language"], f"{path} line {number}: 'language'")
            ),
        )
        for number, obj in read_jsonl(path)
    ]


def _read_qrels(path: Path) -> tuple[dict[str, dict[str, int]], dict[tuple[str, str], str]]:
    """``qrels/<split>.tsv``: the judgements and the line each came from.

    The first non-empty line is a header when its score column is a header word
    (:data:`HEADER_WORDS`: ``query-id corpus-id score`` and the like); any other line is a
    judgement, and a score that is not an integer grade is an error naming the line.
    """
    qrels: dict[str, dict[str, int]] = {}
    origins: dict[tuple[str, str], str] = {}
    first = True
    for number, line in read_lines(path):
        if not line.strip():
            continue
        at = f"{path} line {number}"
        qid, did, raw = _qrels_columns(line, at)
        if first and raw.casefold() in HEADER_WORDS:
            first = False
            continue
        grade = parse_grade(raw, at, header_hint=first)
        first = False
        if did in qrels.get(qid, {}):
            raise DatasetError(
                f"{at}: ({qid!r}, {did!r}) is judged twice (first at {origins[(qid, did)]})"
            )
        qrels.setdefault(qid, {})[did] = grade
        origins[(qid, did)] = at
    if not qrels:
        raise DatasetError(
            f"{path}: no judgements; write one 'query-id<TAB>corpus-id<TAB>score' line per "
            "judged pair (integer score >= 0; a header line is optional)"
        )
    return qrels, origins


def _qrels_columns(line: str, at: str) -> tuple[str, str, str]:
    """Query id, document id and raw score of a qrels line (TREC's 4 columns too), NFC."""
    cols = line.split("\t") if "\t" in line else line.split()
    if len(cols) == 4:  # TREC style: qid iteration docid grade
        cols = [cols[0], cols[2], cols[3]]
    if len(cols) != 3:
        raise DatasetError(
            f"{at}: expected 3 tab-separated columns "
            f"(query-id, corpus-id, score), got {len(cols)}: {line!r}"
        )
    qid, did, raw = (unicodedata.normalize("NFC", c.strip()) for c in cols)
    return qid, did, raw


def parse_grade(raw: str, at: str, *, header_hint: bool = False) -> int:
    """The integer grade written as ``raw`` (``2``, ``2.0``), 0 to :data:`MAX_GRADE`.

    Anything else (``1x``, ``1.5``, ``nan``, ``1e20``, ``-1``) is an error naming ``at`` and the
    value; ``header_hint`` (the first line) adds the header words to the message.
    """
    if _INTEGER.fullmatch(raw):
        grade = int(raw) if len(raw) < 20 else MAX_GRADE + 1  # a 20-digit grade is out of range
    else:
        try:
            value = float(raw)
        except ValueError:
            header = (
                f"; a header line's score column is one of {sorted(HEADER_WORDS)!r}"
                if header_hint
                else ""
            )
            raise DatasetError(
                f"{at}: score {raw!r} is not an integer grade; {GRADE_RULE}{header}"
            ) from None
        if not math.isfinite(value) or not value.is_integer():
            raise DatasetError(f"{at}: grade {raw!r} is not a whole number; {GRADE_RULE}")
        grade = int(value)
    if not 0 <= grade <= MAX_GRADE:
        raise DatasetError(f"{at}: grade {raw!r} is out of range; {GRADE_RULE}")
    return grade
