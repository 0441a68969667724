"""Documents a probe found misread (issue 42 items 7 and 8): a DOCX without its main part, a
PDF of one line a page (2,000 pages) that came back empty."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import pytest

from pytest_embedbench.core.exceptions import DatasetError
from pytest_embedbench.data.ingest import load_documents

from ..docfiles import make_docx, make_pdf, paragraphs


def _without(source: Path, target: Path, part: str) -> Path:
    """A copy of the zip ``source`` at ``target`` with every member but ``part``."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as out:
        for info in src.infolist():
            if info.filename != part:
                out.writestr(info, src.read(info))
    return target


@pytest.mark.parametrize("part", ["word/document.xml", "[Content_Types].xml"])
def test_a_docx_without_a_part_names_the_file_and_the_part(tmp_path: Path, part: str) -> None:
    full = make_docx(tmp_path / "full.docx", "Title", paragraphs(2), [["a", "b"]])
    folder = tmp_path / "docs"
    folder.mkdir()
    broken = _without(full, folder / "broken.docx", part)
    with pytest.raises(DatasetError) as info:
        load_documents(folder)
    assert str(info.value).startswith(
        f"{broken}: is not a Word .docx document: no {part} in the archive; open it in Word"
    )
    assert "KeyError" not in str(info.value)


def test_a_docx_that_is_no_zip_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.docx").write_text("{\\rtf1 an RTF file renamed}")
    with pytest.raises(
        DatasetError, match=r"notes\.docx: is not a Word \.docx document: not a zip"
    ):
        load_documents(tmp_path)


def test_a_docx_whose_main_part_is_elsewhere_is_read(tmp_path: Path) -> None:
    """The main part is where ``_rels/.rels`` points, not always word/document.xml."""
    full = make_docx(tmp_path / "full.docx", "Moved body", ["The moved paragraph."], [["a"]])
    folder = tmp_path / "docs"
    folder.mkdir()
    with zipfile.ZipFile(full) as src, zipfile.ZipFile(folder / "moved.docx", "w") as out:
        for info in src.infolist():
            data = src.read(info)
            name = info.filename
            if name == "word/document.xml":
                name = "word/document2.xml"
            elif name in ("_rels/.rels", "[Content_Types].xml"):
                data = data.replace(b"word/document.xml", b"word/document2.xml")
            out.writestr(name, data)
    (doc,) = load_documents(folder)
    assert "The moved paragraph." in doc.text


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_a_2000_page_pdf_of_one_line_a_page_reads_every_page(tmp_path: Path) -> None:
    # the probe's file: one line a page, the lines alike but for their numbers, so every line
    # looked like a running header and the document came back empty
    n = 2000
    make_pdf(
        tmp_path / "audit.pdf",
        [[f"Finding {i + 1} of the audit is closed."] for i in range(n)],
        header=None,
        page_numbers=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: nothing is left out
        (doc,) = load_documents(tmp_path)
    pages = doc.metadata["pages"]
    assert len(pages) == n
    for i in (0, 999, n - 1):
        span = pages[i]
        assert doc.text[span["start"] : span["end"]] == f"Finding {i + 1} of the audit is closed."
    assert doc.text.count("of the audit is closed.") == n


def test_a_page_repeated_is_body_but_running_lines_around_a_body_go(tmp_path: Path) -> None:
    make_pdf(tmp_path / "same.pdf", [["The same notice on every page."]] * 3)
    body = paragraphs(3, seed=3)
    make_pdf(tmp_path / "manual.pdf", [[p] for p in body])
    docs = {d.id: d for d in load_documents(tmp_path)}
    # a running header and "Page n" around a body still go; the repeated notice is the body
    assert docs["same.pdf"].text.split("\n\n") == ["The same notice on every page."] * 3
    manual = docs["manual.pdf"].text
    assert "Page 1" not in manual and "Page 2" not in manual
    assert all(" ".join(p.split()[:4]) in " ".join(manual.split()) for p in body)
