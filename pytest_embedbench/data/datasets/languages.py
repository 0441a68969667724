"""Datasets in several languages: one :class:`~.core.RetrievalDataset` made of one dataset
per language (:func:`merge_languages`), and the check of a language code.

Each language keeps its own corpus, as the seed study's MIRACL comparison evaluates Korean,
Chinese and English each on its own passages: a query searches only the documents of its own
language (the Evaluator builds one index per language), and its metrics count in its language's
mean. Ids are prefixed with the language (``zh:d1``, ``zh:q1``), so two languages' ``d1`` stay
two documents. Metrics are reported per language and as their macro average, the mean of the
per-language means, whose bootstrap resamples within each language (see
:func:`~pytest_embedbench.evaluation.stats.bootstrap`'s ``macro``).

Usage::

    ds = merge_languages({"en": load_dataset("en/"), "zh": load_dataset("zh/")}, name="faq")
    ds.languages                  # ('en', 'zh')
    ds.language_part("zh")        # the Chinese queries over the Chinese documents
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...core.exceptions import DatasetError
from .core import RetrievalDataset

__all__ = ["LANGUAGE_RULE", "check_language", "merge_languages"]

#: a language code: a BCP 47 primary tag of 2-3 letters, optionally with subtags (zh-Hant)
_CODE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{1,8})*")
LANGUAGE_RULE = (
    "a language code is 2-3 lowercase letters, optionally with subtags (en, zh, ja, zh-Hant)"
)


def check_language(value: Any, where: str) -> str:
    """``value`` as a language code, or a DatasetError naming ``where``, the value and the
    rule."""
    if not isinstance(value, str) or not _CODE.fullmatch(value):
        raise DatasetError(f"{where}: language {value!r} is not a language code; {LANGUAGE_RULE}")
    return value


def merge_languages(
    parts: Mapping[str, RetrievalDataset], *, name: str = "dataset"
) -> RetrievalDataset:
    """One dataset of ``parts`` (language code -> that language's dataset), each language
    searched on its own corpus; ids prefixed ``<language>:``. The parts must be unchunked or
    chunked alike (the merged dataset takes their chunking).

    Usage::

        ds = merge_languages({"en": en, "zh": zh, "ja": ja}, name="django")
    """
    if not isinstance(parts, Mapping) or len(parts) < 2:
        raise DatasetError(
            f"dataset {name!r}: languages needs two or more languages, each a dataset "
            "({en: path, zh: path}); got "
            + (f"{sorted(parts)!r}" if isinstance(parts, Mapping) else f"{parts!r}")
        )
    documents, queries, qrels, origins = [], [], {}, {}
    chunkings = {str(ds.chunking) for ds in parts.values()}
    if len(chunkings) > 1:
        raise DatasetError(
            f"dataset {name!r}: its languages are chunked differently ({sorted(chunkings)}); "
            "chunk the merged dataset once instead (chunking: on the dataset)"
        )
    for language, ds in parts.items():
        check_language(language, f"dataset {name!r}: languages")
        if not isinstance(ds, RetrievalDataset):
            raise DatasetError(
                f"dataset {name!r}: languages.{language} is a {type(ds).__name__}; give a "
                "RetrievalDataset (load_dataset(path))"
            )
        for doc in ds.documents:
            documents.append(replace(doc, id=f"{language}:{doc.id}", language=language))
        for query in ds.queries:
            if query.language not in (None, language):
                raise DatasetError(
                    f"{query.origin or f'dataset {name!r}: query {query.id!r}'}: language "
                    f"{query.language!r} in the dataset given as languages.{language}; drop the "
                    "query's language or move it to that language's dataset"
                )
            queries.append(replace(query, id=f"{language}:{query.id}", language=language))
        for qid, judged in ds.qrels.items():
            qrels[f"{language}:{qid}"] = {f"{language}:{d}": g for d, g in judged.items()}
            for did in judged:
                origins[(f"{language}:{qid}", f"{language}:{did}")] = ds.judgement_origin(qid, did)
    return RetrievalDataset(
        documents,
        queries,
        qrels,
        name=name,
        qrels_origins=origins,
        chunking=next(iter(parts.values())).chunking,
    )
