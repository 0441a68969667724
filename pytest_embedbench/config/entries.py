"""What reads a dataset named in ``embedbench.yaml`` (a :class:`~.project.DatasetEntry`):
:func:`load_entry` loads, merges (a dataset in several languages), subsets and chunks it, and
:func:`dataset_key` is what identifies the data so loaded within a run."""

from __future__ import annotations

from ..core.exceptions import DatasetError
from ..data.datasets import RetrievalDataset, load_dataset, merge_languages
from .project import DatasetEntry

__all__ = ["dataset_key", "load_entry"]


def dataset_key(entry: DatasetEntry) -> str:
    """What identifies a loaded dataset: its path, split, documents folder, subset, document
    types and chunking."""
    key = (
        f"{entry.path}|{entry.split}|{entry.docs}|{sorted((entry.subset or {}).items())}"
        f"|{entry.extensions}|{entry.chunking}"
    )
    if entry.languages:
        key += "|" + "|".join(f"{lang}={dataset_key(e)}" for lang, e in entry.languages.items())
    return key


def load_entry(entry: DatasetEntry) -> RetrievalDataset:
    """The dataset of ``entry``: loaded, subset and chunked as it says. A DatasetError names
    the entry's place in embedbench.yaml (``datasets.NAME``) when it has one. A dataset in
    several languages (``languages:``) reads each language and merges them (ids prefixed
    with the language, each language searched on its own corpus)."""
    if entry.languages:
        parts = {language: load_entry(part) for language, part in entry.languages.items()}
        try:
            ds = merge_languages(parts, name=entry.name)
        except DatasetError as exc:
            raise DatasetError(f"{entry.origin}: {exc}") from None
        return _subset_and_chunk(ds, entry)
    try:
        ds = load_dataset(
            entry.path,
            split=entry.split,
            docs=entry.docs,
            name=entry.name,
            extensions=entry.extensions,
        )
    except DatasetError as exc:
        if entry.origin is None:
            raise
        raise DatasetError(f"{entry.origin}: {exc}") from None
    return _subset_and_chunk(ds, entry)


def _subset_and_chunk(ds: RetrievalDataset, entry: DatasetEntry) -> RetrievalDataset:
    """``ds`` subset and chunked as ``entry`` says."""
    if entry.subset:
        ds = ds.subset(**entry.subset)
        ds.name = entry.name
    if entry.chunking is not None:
        ds = ds.with_chunking(entry.chunking)
    return ds
