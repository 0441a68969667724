"""Reading a folder of user documents: :func:`load_documents` (issue 12).

``.txt``/``.md``/``.markdown``, ``.pdf`` (pypdf), ``.docx`` (python-docx) and ``.html``/``.htm``
(beautifulsoup4) become :class:`~pytest_embedbench.datasets.core.Document` objects whose id is the
path relative to the folder with ``/`` separators and whose ``metadata`` has ``format`` and, for
PDFs, ``pages``: a list of ``{"start": int, "end": int, "label": str}`` character spans.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .datasets.core import Document

__all__ = ["load_documents"]


def load_documents(
    path: str | Path,
    *,
    extensions: Iterable[str] | None = None,
    on_error: Literal["raise", "skip"] = "raise",
) -> list[Document]:
    """Every supported file under ``path``, sorted by id."""
    raise NotImplementedError("issue 12: ingestion is being built")
