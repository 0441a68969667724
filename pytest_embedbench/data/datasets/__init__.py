"""Documents, queries, graded relevance judgements and the loaders that read them.

A :class:`RetrievalDataset` is what every model is evaluated on::

    from pytest_embedbench import load_dataset

    ds = load_dataset("../shared/data/scifact", split="test")   # a BEIR folder
    ds = load_dataset("examples/support")                      # documents folder + evalset.jsonl
    small = ds.subset(n_queries=50, n_distractors=500, seed=0)  # for CI

Every problem found while loading names the file and the line, and says how to fix it.

The package by job: :mod:`.core` (the objects), :mod:`.files` (line readers), :mod:`.beir`
(BEIR folders), :mod:`.evalset` (eval sets over a documents folder); :func:`load_dataset`,
here, picks the loader from the path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ...core.exceptions import DatasetError
from .beir import load_beir
from .core import Document, EvalSet, Query, RetrievalDataset
from .evalset import DOCUMENT_SUFFIXES, QUERY_ID_PREFIX, load_evalset
from .languages import check_language, merge_languages

__all__ = [
    "DOCUMENT_SUFFIXES",
    "QUERY_ID_PREFIX",
    "Document",
    "EvalSet",
    "Query",
    "RetrievalDataset",
    "check_language",
    "load_beir",
    "load_dataset",
    "load_evalset",
    "merge_languages",
]


def load_dataset(
    path: str | Path | RetrievalDataset | Mapping[str, str | Path | RetrievalDataset],
    split: str = "test",
    *,
    docs: str | Path | None = None,
    name: str | None = None,
    extensions: Sequence[str] | None = None,
) -> RetrievalDataset:
    """Load a dataset from a path, whatever its layout.

    * a folder with ``corpus.jsonl`` and ``qrels/``: a BEIR dataset (``split`` picks the qrels);
    * a folder with ``evalset.jsonl``: its documents are ``docs`` when given, else
      ``<folder>/docs`` when that exists, otherwise the folder itself;
    * a ``.jsonl`` eval set file: documents from ``docs`` (default: ``docs/`` beside it).

    An eval set has one split: ``split`` other than ``"test"`` (the default) is an error there.
    ``extensions`` limits the document types read from an eval set's documents folder.
    A :class:`RetrievalDataset` is returned as it is. A mapping of language code to any of
    these (``{"en": "faq-en/", "zh": "faq-zh/"}``) is a dataset in several languages, each
    searched on its own corpus (:func:`~.languages.merge_languages`; ids prefixed ``zh:``).
    """
    if isinstance(path, RetrievalDataset):
        return path
    if isinstance(path, Mapping):
        parts = {
            str(language): load_dataset(part, split, docs=docs, extensions=extensions)
            for language, part in path.items()
        }
        return merge_languages(parts, name=name or "+".join(parts))
    root = Path(path)
    if root.is_dir():
        if (root / "corpus.jsonl").is_file():
            if extensions is not None:
                raise DatasetError(
                    f"{root}: extensions {list(extensions)!r} apply to a documents folder, and "
                    "this is a BEIR folder (corpus.jsonl); drop extensions"
                )
            return load_beir(root, split, name=name)
        if (root / "evalset.jsonl").is_file():
            _check_single_split(split, root / "evalset.jsonl")
            folder = Path(docs) if docs else (root / "docs" if (root / "docs").is_dir() else root)
            return load_evalset(
                root / "evalset.jsonl",
                folder,
                name=name or root.resolve().name,
                extensions=extensions,
            )
        raise DatasetError(
            f"{root}: not a dataset folder; looked for {root / 'corpus.jsonl'} (BEIR, with "
            f"qrels/{split}.tsv) and {root / 'evalset.jsonl'}. {_EVALSET_RULES}"
            + _evalset_hint(root)
        )
    if root.is_file() and root.suffix == ".jsonl":
        _check_single_split(split, root)
        folder = Path(docs) if docs else root.parent / "docs"
        return load_evalset(root, folder, name=name, extensions=extensions)
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
