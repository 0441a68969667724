"""Reading a folder of user documents: :func:`load_documents` (issue 12).

``.txt``/``.md``/``.markdown``, ``.pdf`` (pypdf), ``.docx`` (python-docx) and ``.html``/``.htm``
(beautifulsoup4) become :class:`~pytest_embedbench.datasets.core.Document` objects whose id is the
path relative to the folder with ``/`` separators and whose ``metadata`` has ``format`` and, for
PDFs, ``pages``: a list of ``{"start": int, "end": int, "label": str}`` character spans.

What is left out, and how it is said:

- hidden files and folders (a name starting with ``.``): silently;
- files of other extensions: silently, unless ``extensions`` names one (then an error);
- empty files (no text after extraction) and PDFs without a text layer (scans): an
  :class:`IngestWarning` naming the file, whatever ``on_error`` says;
- symlinks that point outside the folder: an :class:`IngestWarning` naming the link;
- a file that cannot be read (invalid UTF-8, a corrupt or encrypted PDF, a ``.docx`` that is not
  a Word document): a :class:`~pytest_embedbench.exceptions.DatasetError` naming the file, or,
  under ``on_error="skip"``, an :class:`IngestWarning` naming it while the others load;
- two ids that differ only by case (``A.md`` and ``a.md``): always a ``DatasetError`` naming
  both, since eval sets written on macOS or Windows could not tell them apart.

Usage::

    from pytest_embedbench.ingest import load_documents

    docs = load_documents("handbook/", on_error="skip")
    docs[0].id, docs[0].metadata["format"]        # ('guide/intro.pdf', 'pdf')
"""

from __future__ import annotations

import importlib
import os
import re
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from .datasets.core import Document
from .exceptions import ConfigError, DatasetError, EmbedBenchWarning, MissingExtraError

__all__ = ["SUPPORTED_EXTENSIONS", "IngestWarning", "load_documents"]


class IngestWarning(EmbedBenchWarning):
    """A document file was left out (empty, a scan, a symlink leaving the folder, unreadable
    under ``on_error="skip"``); the message names the file."""


class _Unreadable(Exception):
    """Internal: this file cannot be read; the message says why and how to fix it."""


class _Skip(Exception):
    """Internal: this file is left out with a warning whatever ``on_error`` says."""


# ---------------------------------------------------------------------------------------------
# text cleaning shared by the readers


_SPACES = re.compile(r"[^\S\n]+")  # whitespace except newlines
_MANY_NEWLINES = re.compile(r"\n{3,}")


def _tidy(text: str) -> str:
    """Spaces collapsed within lines, lines stripped, at most one empty line in a row."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------------------------------------
# plain text and Markdown


def _read_text(file: Path) -> tuple[str, str, dict[str, Any]]:
    data = file.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Unreadable(
            f"not UTF-8 text ({exc.reason} at byte {exc.start}); convert it to UTF-8 "
            "(iconv -t UTF-8) or remove it"
        ) from None
    if "\x00" in text:
        raise _Unreadable(
            f"has a NUL byte at character {text.index(chr(0))}: a binary file, not text; "
            "remove it or give it another extension"
        )
    return "", _newlines(text), {}


# ---------------------------------------------------------------------------------------------
# PDF

_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[ivxlcdm]+$", re.IGNORECASE)
#: lines at the top and at the bottom of a page that are checked for running headers/footers
_EDGE_LINES = 2


def _edge_key(line: str) -> str:
    """A line with its numbers masked, so 'Page 3 of 9' and 'Page 4 of 9' compare equal."""
    key = _DIGITS.sub("#", " ".join(line.split())).lower()
    return "#" if _ROMAN.match(key) else key


def _strip_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """Remove running headers and footers: a line (numbers masked) among the first or last
    :data:`_EDGE_LINES` lines of more than half of the pages, when there are at least 3 pages.
    Bare page numbers at a page's edge go the same way."""
    if len(pages) < 3:
        return pages
    top: Counter[str] = Counter()
    bottom: Counter[str] = Counter()
    for lines in pages:
        top.update({_edge_key(line) for line in lines[:_EDGE_LINES]})
        bottom.update({_edge_key(line) for line in lines[-_EDGE_LINES:]})
    need = len(pages) / 2
    heads = {k for k, n in top.items() if n > need} | {"#"}
    feet = {k for k, n in bottom.items() if n > need} | {"#"}
    cleaned = []
    for lines in pages:
        lo, hi = 0, len(lines)
        while lo < hi and lo < _EDGE_LINES and _edge_key(lines[lo]) in heads:
            lo += 1
        cut = 0
        while hi > lo and cut < _EDGE_LINES and _edge_key(lines[hi - 1]) in feet:
            hi -= 1
            cut += 1
        cleaned.append(lines[lo:hi])
    return cleaned


def _read_pdf(file: Path) -> tuple[str, str, dict[str, Any]]:
    pypdf = _require("pypdf", ".pdf")
    try:
        reader = pypdf.PdfReader(file)
        if reader.is_encrypted:
            # an owner password alone (printing/copying restrictions) still opens with ""
            try:
                opened = reader.decrypt("")
            except Exception as exc:  # pypdf needs cryptography for AES: same fix either way
                opened = 0
                detail = f" ({exc})"
            else:
                detail = ""
            if not opened:
                raise _Unreadable(
                    f"is an encrypted PDF that needs a password{detail}; save a decrypted copy "
                    "(qpdf --decrypt --password=... in.pdf out.pdf) and read that"
                )
        if not len(reader.pages):
            raise _Unreadable("is a PDF without pages; re-export it")
        raw = [page.extract_text() or "" for page in reader.pages]
        labels = list(reader.page_labels)
    except _Unreadable:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files; all mean the same here
        raise _Unreadable(
            f"is not a readable PDF ({type(exc).__name__}: {exc}); re-export or repair it "
            "(qpdf in.pdf out.pdf)"
        ) from None
    if not any(text.strip() for text in raw):
        raise _Skip(
            f"has no text layer ({len(raw)} page(s), probably a scan); OCR it first "
            "(ocrmypdf in.pdf out.pdf) to include it"
        )
    pages = [[ln for ln in (_tidy(_newlines(t)).split("\n")) if ln.strip()] for t in raw]
    pages = _strip_running_lines(pages)
    parts: list[str] = []
    spans: list[dict[str, Any]] = []
    pos = 0
    for i, lines in enumerate(pages):
        body = "\n".join(lines)
        if parts and body:
            pos += 2  # the "\n\n" between pages belongs to neither
        start = pos
        if body:
            parts.append(body)
            pos += len(body)
        label = labels[i] if i < len(labels) else str(i + 1)
        spans.append({"start": start, "end": pos, "label": str(label)})
    return "", "\n\n".join(parts), {"pages": spans}


# ---------------------------------------------------------------------------------------------
# DOCX

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _docx_blocks(element: Any, paragraph: Callable[[Any], str]) -> Iterator[str]:
    """Paragraphs and tables of a body (or content control), in document order."""
    for child in element.iterchildren():
        tag = child.tag
        if tag == f"{_W}p":
            text = paragraph(child)
            if text.strip():
                yield text
        elif tag == f"{_W}tbl":
            rows = []
            for tr in child.iterchildren(f"{_W}tr"):
                cells = []
                for tc in tr.iterchildren(f"{_W}tc"):
                    cell = "\n".join(_docx_blocks(tc, paragraph)).strip()
                    if cell:
                        cells.append(cell)
                if cells:
                    rows.append(" | ".join(cells))
            if rows:
                yield "\n".join(rows)
        elif tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _docx_blocks(content, paragraph)


def _read_docx(file: Path) -> tuple[str, str, dict[str, Any]]:
    docx = _require("docx", ".docx")
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(file))
    except Exception as exc:  # a zip of something else, a renamed .doc, a damaged file
        raise _Unreadable(
            f"is not a Word .docx document ({type(exc).__name__}: {exc}); open it in Word or "
            "LibreOffice and save it as .docx, or remove it"
        ) from None
    body = document.element.body

    def paragraph(p: Any) -> str:
        return str(Paragraph(p, document).text)

    # section headers and footers are not read: they repeat on every page (like a PDF's)
    text = "\n\n".join(block.strip() for block in _docx_blocks(body, paragraph))
    return "", _tidy(_newlines(text)), {}


# ---------------------------------------------------------------------------------------------
# HTML

#: elements whose text is not the document's (navigation, code, boilerplate)
_HTML_DROP = (
    "script",
    "style",
    "nav",
    "footer",
    "header",
    "aside",
    "noscript",
    "svg",
    "template",
    "form",
    "head",
    "title",
    "iframe",
    "object",
    "button",
    "select",
)
_HTML_PARAGRAPH = frozenset(
    "p h1 h2 h3 h4 h5 h6 blockquote pre table ul ol dl section article main figure "
    "address details summary fieldset hr".split()
)
_HTML_LINE = frozenset("div li tr br dt dd caption figcaption legend option".split())
_HTML_CELL = frozenset(("td", "th"))
_HTML_SPACE = re.compile(r"\s+")


def _html_text(root: Any) -> str:
    from bs4 import NavigableString, Tag
    from bs4.element import CData, Comment, Declaration, Doctype, ProcessingInstruction

    skip_strings = (Comment, Declaration, Doctype, ProcessingInstruction, CData)
    out: list[str] = []
    # (node, leaving): an explicit stack, so deeply nested pages do not hit the recursion limit
    stack: list[tuple[Any, bool, bool]] = [(root, False, False)]
    while stack:
        node, leaving, in_pre = stack.pop()
        if isinstance(node, NavigableString):
            if isinstance(node, skip_strings):
                continue
            # HTML whitespace: a run is one space, except inside <pre>, whose lines are kept
            out.append(str(node) if in_pre else _HTML_SPACE.sub(" ", str(node)))
            continue
        if not isinstance(node, Tag):
            continue
        name = node.name
        if leaving:
            if name in _HTML_PARAGRAPH:
                out.append("\n\n")
            elif name in _HTML_LINE:
                out.append("\n")
            elif name in _HTML_CELL:
                out.append(" | ")
            continue
        if name in _HTML_PARAGRAPH:
            out.append("\n\n")
        elif name in _HTML_LINE:
            out.append("\n")
        stack.append((node, True, in_pre))
        pre = in_pre or name in ("pre", "textarea")
        stack.extend((child, False, pre) for child in reversed(node.contents))
    text = "".join(out)
    # a cell separator at a line's end (the row's last cell) goes
    text = re.sub(r"( \| )+(?=\s*(\n|$))", "", text)
    return _tidy(text)


def _read_html(file: Path) -> tuple[str, str, dict[str, Any]]:
    bs4 = _require("bs4", ".html")
    # always the stdlib parser: lxml, when installed, splits malformed pages differently, and
    # the same file must give the same text on every machine
    soup = bs4.BeautifulSoup(file.read_bytes(), "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else ""
    for tag in soup.find_all(_HTML_DROP):
        # a page's header is boilerplate; an <article>'s own <header> holds its headline
        if tag.name == "header" and tag.find_parent("article") is not None:
            continue
        tag.decompose()
    return title, _html_text(soup), {}


# ---------------------------------------------------------------------------------------------
# the folder walk

_READERS: dict[str, tuple[str, Callable[[Path], tuple[str, str, dict[str, Any]]]]] = {
    ".txt": ("txt", _read_text),
    ".md": ("md", _read_text),
    ".markdown": ("md", _read_text),
    ".pdf": ("pdf", _read_pdf),
    ".docx": ("docx", _read_docx),
    ".html": ("html", _read_html),
    ".htm": ("html", _read_html),
}

#: every extension :func:`load_documents` reads (lowercase, with the dot)
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(_READERS)

_EXTRA = {"pypdf": "pypdf", "docx": "python-docx", "bs4": "beautifulsoup4"}


def _require(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"reading {what} files needs the {_EXTRA[module]} package: "
            "pip install 'pytest-embedbench[docs]'"
        ) from None


def _parse_extensions(extensions: Iterable[str] | None) -> frozenset[str]:
    if extensions is None:
        return frozenset(_READERS)
    if isinstance(extensions, str):
        extensions = [extensions]
    wanted = set()
    for ext in extensions:
        norm = "." + str(ext).strip().lower().lstrip(".")
        if norm not in _READERS:
            raise ConfigError(
                f"extensions: {ext!r} is not a supported document type; supported: "
                f"{', '.join(_READERS)}"
            )
        wanted.add(norm)
    return frozenset(wanted)


def _walk(root: Path, real_root: Path, folder: Path, seen: set[Path]) -> Iterator[Path]:
    """Files under ``folder`` in sorted order, hidden ones left out, symlinks kept inside."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise DatasetError(f"{folder}: cannot list the folder ({exc})") from None
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        if entry.is_symlink():
            target = path.resolve()
            if target != real_root and real_root not in target.parents:
                warnings.warn(
                    f"{path}: skipped, a symlink to {target}, outside {root}; copy the file "
                    "into the folder to include it",
                    IngestWarning,
                    stacklevel=4,
                )
                continue
        if path.is_dir():
            real = path.resolve()
            if real in seen:  # a symlink loop, or a second link to a folder already read
                continue
            seen.add(real)
            yield from _walk(root, real_root, path, seen)
        elif path.is_file():
            yield path


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
    if on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error={on_error!r}: use 'raise' or 'skip'")
    wanted = _parse_extensions(extensions)
    root = Path(path)
    if not root.exists():
        raise DatasetError(f"{root}: documents folder not found; check the path")
    if not root.is_dir():
        raise DatasetError(f"{root}: is a file, not a folder; pass the folder that holds it")
    real_root = root.resolve()
    documents: list[Document] = []
    by_folded: dict[str, Path] = {}
    for file in _walk(root, real_root, root, {real_root}):
        suffix = file.suffix.lower()
        if suffix not in wanted:
            continue
        # NFC: macOS writes names decomposed (NFD); eval sets are typed composed (NFC)
        doc_id = unicodedata.normalize("NFC", file.relative_to(root).as_posix())
        folded = doc_id.casefold()
        if folded in by_folded:
            raise DatasetError(
                f"{by_folded[folded]} and {file}: two documents whose ids differ only by case "
                f"or Unicode form ({by_folded[folded].relative_to(root).as_posix()!r} and "
                f"{doc_id!r}); rename one"
            )
        by_folded[folded] = file
        document = _read_document(file, doc_id, on_error)
        if document is not None:
            documents.append(document)
    documents.sort(key=lambda d: d.id)
    return documents


def _read_document(file: Path, doc_id: str, on_error: Literal["raise", "skip"]) -> Document | None:
    """``file`` read by its type's reader as the Document ``doc_id``; None (after an
    :class:`IngestWarning`) for a file skipped: one its reader skips, one without text, or an
    unreadable one under ``on_error="skip"``. Warnings name :func:`load_documents`' caller."""
    fmt, reader = _READERS[file.suffix.lower()]
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
    except _Skip as exc:
        warnings.warn(f"{file}: skipped, {exc}", IngestWarning, stacklevel=3)
        return None
    except (_Unreadable, OSError) as exc:
        message = f"{file}: {exc}"
        if on_error == "raise":
            raise DatasetError(message + " (or load with on_error='skip')") from None
        warnings.warn(f"skipped {message}", IngestWarning, stacklevel=3)
        return None
    if not text.strip():
        warnings.warn(
            f"{file}: skipped, it has no text (an empty {fmt} document); give it text or remove it",
            IngestWarning,
            stacklevel=3,
        )
        return None
    return Document(
        doc_id, text, title=title, metadata={"format": fmt, **metadata}, origin=str(file)
    )
