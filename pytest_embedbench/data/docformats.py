"""One reader per document format: a file becomes ``(title, text, metadata)``.

The readers behind :func:`pytest_embedbench.ingest.load_documents` (which walks the folder and
decides what is left out): ``.txt``/``.md``/``.markdown`` as UTF-8, ``.pdf`` with pypdf,
``.docx`` with python-docx, ``.html``/``.htm`` with beautifulsoup4 (the extras are imported
when a file of theirs is read). A reader raises :class:`Unreadable` for a file it cannot read
(the message says why and the fix) and :class:`Skip` for one that is readable but holds no text
to index (a scanned PDF).
"""

from __future__ import annotations

import codecs
import importlib
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.exceptions import MissingExtraError

__all__ = ["READERS", "Skip", "Unreadable"]


class Unreadable(Exception):
    """This file cannot be read; the message says why and how to fix it."""


class Skip(Exception):
    """This file is readable but holds no text to index: left out with a warning, never an
    error."""


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
        raise Unreadable(
            f"not UTF-8 text ({exc.reason} at byte {exc.start}); convert it to UTF-8 "
            "(iconv -t UTF-8) or remove it"
        ) from None
    _refuse_binary(text)
    return "", _newlines(text), {}


#: C0 control characters that text does not hold (tab, the line breaks, form feed and ESC, which
#: ISO-2022 text uses, are text); random bytes are about one in ten of these
_CONTROLS = re.compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]")


def _refuse_binary(text: str) -> None:
    """Raise :class:`Unreadable` when ``text`` (a file's content, decoded) is a binary file's:
    it holds a NUL, or control characters make more than 1 in 100 of its characters. The one
    check for every text format, so a binary ``.txt`` and a binary ``.html`` are refused alike."""
    if "\x00" in text:
        why = f"has a NUL byte at character {text.index(chr(0))}"
    else:
        controls = len(_CONTROLS.findall(text))
        if controls < 2 or controls * 100 <= len(text):
            return
        why = f"has {controls} control characters in {len(text)}"
    raise Unreadable(f"{why}: a binary file, not text; remove it or give it another extension")


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


def _running(line: str, running: set[str], left: int) -> bool:
    """Whether ``line`` at a page's edge goes: a running line while more than it is left on the
    page, a bare page number always."""
    key = _edge_key(line)
    return key == "#" or (key in running and left > 1)


def _strip_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """Remove running headers and footers: a line (numbers masked) among the first or last
    :data:`_EDGE_LINES` lines of more than half of the pages, when there are at least 3 pages.
    Bare page numbers at a page's edge go the same way.

    A running line frames a body, so the last line left on a page is its body and stays (a bare
    page number aside): a report of one line a page ("Finding 7 of the audit is closed", the
    same notice on every page), read as all headers, came back as an empty document.
    """
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
        at_top = at_bottom = True
        # outer lines first, one level a side at a time; the last line of a page stays
        for _ in range(_EDGE_LINES):
            at_top = at_top and lo < hi and _running(lines[lo], heads, hi - lo)
            lo += at_top
            at_bottom = at_bottom and lo < hi and _running(lines[hi - 1], feet, hi - lo)
            hi -= at_bottom
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
                raise Unreadable(
                    f"is an encrypted PDF that needs a password{detail}; save a decrypted copy "
                    "(qpdf --decrypt --password=... in.pdf out.pdf) and read that"
                )
        if not len(reader.pages):
            raise Unreadable("is a PDF without pages; re-export it")
        raw = [page.extract_text() or "" for page in reader.pages]
        labels = list(reader.page_labels)
    except Unreadable:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files; all mean the same here
        raise Unreadable(
            f"is not a readable PDF ({type(exc).__name__}: {exc}); re-export or repair it "
            "(qpdf in.pdf out.pdf)"
        ) from None
    if not any(text.strip() for text in raw):
        raise Skip(
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


_OFFICE_DOCUMENT = re.compile(
    r"<Relationship\b[^>]*\bType=\"[^\"]*/officeDocument\"[^>]*>", re.IGNORECASE
)
_TARGET = re.compile(r"\bTarget=\"([^\"]*)\"")


def _check_docx_parts(file: Path) -> None:
    """The parts python-docx opens, present: a zip with ``[Content_Types].xml`` and the main
    document (``word/document.xml``, or where ``_rels/.rels`` points). python-docx reports a
    missing part as a bare ``KeyError`` of the archive; this names the part instead."""
    import zipfile

    fix = "open it in Word or LibreOffice and save it as .docx, or remove it"
    try:
        with zipfile.ZipFile(file) as archive:
            names = set(archive.namelist())
            rels = archive.read("_rels/.rels") if "_rels/.rels" in names else b""
    except zipfile.BadZipFile:
        raise Unreadable(
            f"is not a Word .docx document: not a zip archive (a renamed .doc or .rtf?); {fix}"
        ) from None
    main = "word/document.xml"
    found = _OFFICE_DOCUMENT.search(rels.decode("utf-8", "replace"))
    target = _TARGET.search(found.group(0)) if found else None
    if target and target.group(1).strip("/"):
        main = target.group(1).lstrip("/")
    for part in ("[Content_Types].xml", main):
        if part not in names:
            raise Unreadable(f"is not a Word .docx document: no {part} in the archive; {fix}")


def _read_docx(file: Path) -> tuple[str, str, dict[str, Any]]:
    docx = _require("docx", ".docx")
    from docx.text.paragraph import Paragraph

    _check_docx_parts(file)
    try:
        document = docx.Document(str(file))
    except Exception as exc:  # a zip of something else, a renamed .doc, a damaged file
        raise Unreadable(
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


#: byte-order marks of the encodings whose text holds NUL bytes (UTF-32 first: its
#: little-endian mark begins with UTF-16's)
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _html_chars(data: bytes) -> str:
    """``data`` as characters for the binary check: decoded by its byte-order mark when it has
    a UTF-16/32 one, else byte for byte (Latin-1), which keeps every ASCII control character
    where it is whatever the page's encoding (bs4 decodes the page itself)."""
    for bom, codec in _WIDE_BOMS:
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    return data.decode("latin-1")


def _read_html(file: Path) -> tuple[str, str, dict[str, Any]]:
    bs4 = _require("bs4", ".html")
    data = file.read_bytes()
    # bs4 parses anything (random bytes included) with at most a warning: refuse binary first
    _refuse_binary(_html_chars(data))
    # always the stdlib parser: lxml, when installed, splits malformed pages differently, and
    # the same file must give the same text on every machine
    soup = bs4.BeautifulSoup(data, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else ""
    for tag in soup.find_all(_HTML_DROP):
        # a page's header is boilerplate; an <article>'s own <header> holds its headline
        if tag.name == "header" and tag.find_parent("article") is not None:
            continue
        tag.decompose()
    return title, _html_text(soup), {}


#: extension -> (the format's name in ``metadata["format"]``, its reader)
READERS: dict[str, tuple[str, Callable[[Path], tuple[str, str, dict[str, Any]]]]] = {
    ".txt": ("txt", _read_text),
    ".md": ("md", _read_text),
    ".markdown": ("md", _read_text),
    ".pdf": ("pdf", _read_pdf),
    ".docx": ("docx", _read_docx),
    ".html": ("html", _read_html),
    ".htm": ("html", _read_html),
}

_EXTRA = {"pypdf": "pypdf", "docx": "python-docx", "bs4": "beautifulsoup4"}


def _require(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"reading {what} files needs the {_EXTRA[module]} package: "
            "pip install 'pytest-embedbench[docs]'"
        ) from None
