"""Reading a folder of user documents: :func:`load_documents` (issue 12).

``.txt``/``.md``/``.markdown``, ``.pdf`` (pypdf), ``.docx`` (python-docx) and ``.html``/``.htm``
(beautifulsoup4) become :class:`~pytest_embedbench.types.Document` objects whose id is the
path relative to the folder with ``/`` separators and whose ``metadata`` has ``format`` and, for
PDFs, ``pages``: a list of ``{"start": int, "end": int, "label": str}`` character spans.

What is left out, and how it is said:

- hidden files and folders (a name starting with ``.``): silently;
- files of other extensions: silently, unless ``extensions`` names one (then an error);
- empty files (no text after extraction) and PDFs without a text layer (scans): an
  :class:`IngestWarning` naming the file, whatever ``on_error`` says;
- symlinks that point outside the folder, symlink loops (a link to itself, or to a folder
  above it): an :class:`IngestWarning` naming the link, whatever its name;
- broken symlinks, FIFOs, sockets and devices named as a document type: an
  :class:`IngestWarning` naming them (a FIFO is never opened: reading it would wait forever);
- a file that cannot be read (invalid UTF-8, a binary file: a NUL, or control characters in
  more than 1 in 100 characters, in a ``.txt``/``.md`` or ``.html``; a corrupt or encrypted
  PDF, a ``.docx`` that is not a Word document; a file the OS will not open): a
  :class:`~pytest_embedbench.exceptions.DatasetError` naming the file, or, under
  ``on_error="skip"``, an :class:`IngestWarning` naming it while the others load;
- two ids that differ only by case (``A.md`` and ``a.md``): always a ``DatasetError`` naming
  both, since eval sets written on macOS or Windows could not tell them apart.

Usage::

    from pytest_embedbench.ingest import load_documents

    docs = load_documents("handbook/", on_error="skip")
    docs[0].id, docs[0].metadata["format"]        # ('guide/intro.pdf', 'pdf')

:func:`read_documents_folder` is the same walk, with why each other entry was left out: it is
the one reader of a documents folder (the eval-set loader reads through it too).
"""

from __future__ import annotations

import os
import sys
import unicodedata
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core.exceptions import ConfigError, DatasetError, EmbedBenchWarning
from ..core.types import Document
from .docformats import READERS, Skip, Unreadable

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "DocumentsFolder",
    "IngestWarning",
    "load_documents",
    "read_documents_folder",
]


class IngestWarning(EmbedBenchWarning):
    """A document file was left out (empty, a scan, a symlink leaving the folder, unreadable
    under ``on_error="skip"``); the message names the file."""


#: every extension :func:`load_documents` reads (lowercase, with the dot)
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(READERS)


def _parse_extensions(extensions: Iterable[str] | None) -> frozenset[str]:
    if extensions is None:
        return frozenset(READERS)
    if isinstance(extensions, str):
        extensions = [extensions]
    wanted = set()
    for ext in extensions:
        norm = "." + str(ext).strip().lower().lstrip(".")
        if norm not in READERS:
            raise ConfigError(
                f"extensions: {ext!r} is not a supported document type; supported: "
                f"{', '.join(READERS)}"
            )
        wanted.add(norm)
    return frozenset(wanted)


#: this package's folder: a warning names the first caller outside it
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _warn(message: str) -> None:
    """An :class:`IngestWarning` attributed to the first caller outside this package, however
    deep the walk (the user's code, or pytest's when the plugin loads a dataset)."""
    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, IngestWarning, stacklevel=level)


_OUTSIDE = "is a symlink to {target}, outside {root}; copy the file into the folder to include it"
_SPECIAL = (
    "is not a regular file (a FIFO, socket or device), which is never read; put the file itself "
    "there"
)

#: how :func:`_walk` classes each entry it passes over (a regular file is ``"file"``)
_Kind = Literal["file", "hidden", "outside", "loop", "broken", "special"]


def _walk(
    root: Path, real_root: Path, folder: Path, seen: set[Path]
) -> Iterator[tuple[Path, _Kind, str]]:
    """Every entry under ``folder`` in sorted order, with its kind and what to say of it.

    Hidden entries are not entered; a symlink is followed only when it stays inside the
    folder; a folder already read (a second link to it, a link back up) is not read again.
    """
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise DatasetError(f"{folder}: cannot list the folder ({exc})") from None
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith("."):
            what = "folder" if path.is_dir() else "file"
            yield path, "hidden", f"is a hidden {what} (its name starts with '.'), not read"
            continue
        if entry.is_symlink():
            try:
                target = path.resolve()
            except (OSError, RuntimeError):  # a loop: RuntimeError before Python 3.13
                yield path, "loop", "is a symlink loop (it leads back to itself); remove it"
                continue
            if target != real_root and real_root not in target.parents:
                yield path, "outside", _OUTSIDE.format(target=target, root=root)
                continue
            if not target.exists():
                yield path, "broken", f"is a broken symlink (to {target}); fix or remove it"
                continue
        if path.is_dir():
            real = path.resolve()
            if real in seen:
                parent = path.parent.resolve()
                if real == parent or real in parent.parents:
                    yield path, "loop", f"is a symlink to {real}, a folder above it; remove it"
                continue  # else a second link to a folder already read: its files are in
            seen.add(real)
            yield from _walk(root, real_root, path, seen)
        elif path.is_file():
            yield path, "file", ""
        else:  # reading a FIFO would wait for a writer forever
            yield path, "special", _SPECIAL


@dataclass(frozen=True)
class DocumentsFolder:
    """A documents folder as :func:`read_documents_folder` read it.

    ``documents`` are :func:`load_documents`' answer. ``left_out`` says, by id (the path
    relative to the folder, NFC), why each other entry it met is not a document, as a phrase
    that follows the id: ``"is a hidden file (its name starts with '.'), not read"``; a hidden
    folder is one entry, its files are not listed. ``unsupported`` gives the extension (or
    ``"(no extension)"``) of each file of a type no reader reads, outside hidden folders.
    """

    documents: tuple[Document, ...]
    left_out: Mapping[str, str]
    unsupported: Mapping[str, str]


def load_documents(
    path: str | Path,
    *,
    extensions: Iterable[str] | None = None,
    on_error: Literal["raise", "skip"] = "raise",
) -> list[Document]:
    """Every supported file under ``path``, sorted by id.

    ``extensions`` narrows the types read (``[".md", "pdf"]``: case-insensitive, the dot
    optional); ``on_error="skip"`` turns an unreadable file into an :class:`IngestWarning` and
    goes on with the others. See the module docstring for what is left out.

    Usage::

        docs = load_documents("docs/", extensions=["md", "pdf"])
    """
    return list(read_documents_folder(path, extensions=extensions, on_error=on_error).documents)


def read_documents_folder(
    path: str | Path,
    *,
    extensions: Iterable[str] | None = None,
    on_error: Literal["raise", "skip"] = "raise",
) -> DocumentsFolder:
    """:func:`load_documents`, with what it left out and why: the one reader of a documents
    folder, which the eval-set loader uses too, so its messages can say why a document an eval
    set names is not there.

    Usage::

        folder = read_documents_folder("docs/")
        folder.left_out.get("notes.rtf")   # 'is not read: only .txt, .md, ... are loaded; ...'
    """
    if on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error={on_error!r}: use 'raise' or 'skip'")
    wanted = _parse_extensions(extensions)
    root = _folder(path)
    real_root = root.resolve()
    listed = ", ".join(ext for ext in READERS if ext in wanted)
    not_read = f"is not read: only {listed} documents are loaded; convert it to one of those"
    documents: list[Document] = []
    left_out: dict[str, str] = {}
    unsupported: dict[str, str] = {}
    by_folded: dict[str, Path] = {}
    for file, kind, why in _walk(root, real_root, root, {real_root}):
        # NFC: macOS writes names decomposed (NFD); eval sets are typed composed (NFC)
        doc_id = unicodedata.normalize("NFC", file.relative_to(root).as_posix())
        suffix = file.suffix.lower()
        # links leaving the folder and loops are said whatever their names (a link to a folder
        # may hold documents); a broken link or a FIFO only when its name is a document's
        loud = kind in ("outside", "loop") or (kind != "hidden" and suffix in wanted)
        if kind != "file" and (loud or kind == "hidden"):
            if loud:
                _warn(f"{file}: skipped, {why.removeprefix('is ')}")
            left_out[doc_id] = why
            continue
        if suffix not in wanted:
            left_out[doc_id] = not_read
            if suffix not in READERS:
                unsupported[doc_id] = suffix or "(no extension)"
            continue
        folded = doc_id.casefold()
        if folded in by_folded:
            raise DatasetError(
                f"{by_folded[folded]} and {file}: two documents whose ids differ only by case "
                f"or Unicode form ({by_folded[folded].relative_to(root).as_posix()!r} and "
                f"{doc_id!r}); rename one"
            )
        by_folded[folded] = file
        document = _read_document(file, doc_id, on_error)
        if isinstance(document, str):
            left_out[doc_id] = document
        else:
            documents.append(document)
    documents.sort(key=lambda d: d.id)
    return DocumentsFolder(tuple(documents), left_out, unsupported)


def _folder(path: str | Path) -> Path:
    root = Path(path)
    if not root.exists():
        raise DatasetError(f"{root}: documents folder not found; check the path")
    if not root.is_dir():
        raise DatasetError(f"{root}: is a file, not a folder; pass the folder that holds it")
    return root


def _read_document(file: Path, doc_id: str, on_error: Literal["raise", "skip"]) -> Document | str:
    """``file`` read by its type's reader as the Document ``doc_id``; for a file skipped (one
    its reader skips, one without text, or an unreadable one under ``on_error="skip"``), an
    :class:`IngestWarning` and why it was skipped."""
    fmt, reader = READERS[file.suffix.lower()]
    metadata: dict[str, Any]
    try:
        if file.stat().st_size == 0:  # the same word for every format (pypdf would fail)
            title, text, metadata = "", "", {}
        else:
            # the parsers' own warnings (bs4's "looks like a URL", pypdf's repairs) would
            # be errors under filterwarnings=error and say nothing the result does not
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                title, text, metadata = reader(file)
    except Skip as exc:
        _warn(f"{file}: skipped, {exc}")
        return str(exc)
    except (Unreadable, OSError) as exc:
        message = f"{file}: {exc}"
        if on_error == "raise":
            raise DatasetError(message + " (or load with on_error='skip')") from None
        _warn(f"skipped {message}")
        return f"cannot be read: {exc}"
    if not text.strip():
        _warn(
            f"{file}: skipped, it has no text (an empty {fmt} document); give it text or remove it"
        )
        return f"gave no text (an empty {fmt} document); give it text"
    return Document(
        doc_id, text, title=title, metadata={"format": fmt, **metadata}, origin=str(file)
    )
