"""load_documents: real PDF/DOCX/HTML files built from known text, read back with token-level
F1 against that text; bad files named in errors (or warnings under on_error='skip')."""

from __future__ import annotations

import os
import unicodedata
import zipfile
from pathlib import Path

import pytest

from pytest_embedbench.core.exceptions import ConfigError, DatasetError
from pytest_embedbench.data.ingest import IngestWarning, load_documents

from ..docfiles import (
    HEADER,
    error_while_unreadable,
    f1,
    make_docx,
    make_encrypted_pdf,
    make_html,
    make_image_pdf,
    make_pdf,
    paragraphs,
    random_bytes,
    world_readable_folder,
)

PARAS = paragraphs(12, seed=7)
TABLE = [["Plan", "Monthly price", "Seats"], ["Basic", "10 dollars", "5 seats"]]
ITEMS = ["rotate the signing keys", "notify the security desk"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "guide").mkdir()
    (root / "notes.txt").write_bytes(b"\xef\xbb\xbf" + "\r\n\r\n".join(PARAS[:3]).encode())
    (root / "guide" / "intro.md").write_text("# Intro\n\n" + "\n\n".join(PARAS[3:6]))
    make_pdf(root / "guide" / "manual.pdf", [PARAS[i : i + 2] for i in range(0, 12, 2)],
             roman_front=2)  # fmt: skip
    make_docx(root / "policy.docx", "Refund policy", PARAS[:6], TABLE)
    make_html(root / "page.html", "Storage guide | Globex", "Storage guide", PARAS[6:9], ITEMS)
    (root / "image.png").write_bytes(b"\x89PNG not read")
    (root / ".hidden.md").write_text("hidden text")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.md").write_text("hidden folder")
    return root


@pytest.fixture(scope="module")
def loaded(corpus: Path) -> dict[str, object]:
    return {d.id: d for d in load_documents(corpus)}


def test_ids_sorted_relative_posix_and_formats(corpus: Path, loaded: dict) -> None:
    docs = load_documents(corpus)
    assert [d.id for d in docs] == [
        "guide/intro.md",
        "guide/manual.pdf",
        "notes.txt",
        "page.html",
        "policy.docx",
    ]
    assert [d.metadata["format"] for d in docs] == ["md", "pdf", "txt", "html", "docx"]
    assert docs[0].origin == str(corpus / "guide" / "intro.md")


def test_text_and_markdown_fidelity(loaded: dict) -> None:
    notes = loaded["notes.txt"]
    assert notes.text == "\n\n".join(PARAS[:3])  # BOM gone, CRLF -> LF
    assert f1(notes.text, " ".join(PARAS[:3])) >= 0.98
    assert f1(loaded["guide/intro.md"].text, "Intro " + " ".join(PARAS[3:6])) >= 0.98


def test_pdf_fidelity_headers_footers_and_page_labels(loaded: dict) -> None:
    pdf = loaded["guide/manual.pdf"]
    assert f1(pdf.text, " ".join(PARAS)) >= 0.95
    assert HEADER not in pdf.text and "Page 3" not in pdf.text
    pages = pdf.metadata["pages"]
    assert [p["label"] for p in pages] == ["i", "ii", "1", "2", "3", "4"]
    for n, page in enumerate(pages):
        span = pdf.text[page["start"] : page["end"]]
        assert f1(span, " ".join(PARAS[2 * n : 2 * n + 2])) >= 0.95
    assert all(a["end"] <= b["start"] for a, b in zip(pages, pages[1:], strict=False))


def test_docx_fidelity_table_in_order_header_left_out(loaded: dict) -> None:
    docx = loaded["policy.docx"]
    cells = " ".join(c for row in TABLE for c in row)
    expected = f"Refund policy {' '.join(PARAS[:3])} {cells} Details {' '.join(PARAS[3:6])}"
    assert f1(docx.text, expected) >= 0.98
    assert HEADER not in docx.text
    # the table sits between the two halves of the body, as in the document
    assert (
        docx.text.index(PARAS[2])
        < docx.text.index("Basic | 10 dollars")
        < docx.text.index("Details")
    )


def test_html_fidelity_boilerplate_dropped_title_kept(loaded: dict) -> None:
    page = loaded["page.html"]
    assert page.title == "Storage guide | Globex"
    assert f1(page.text, "Storage guide " + " ".join(PARAS[6:9] + ITEMS)) >= 0.98
    for boilerplate in ("Homepage", "analytics", "beacon", "Copyright", "Globex", "Sponsored",
                        "javascript", "font-family"):  # fmt: skip
        assert boilerplate not in page.text
    assert "\n" in page.text  # block elements are line breaks


def test_extensions_filter_and_unsupported(corpus: Path) -> None:
    assert [d.id for d in load_documents(corpus, extensions=["PDF", ".md"])] == [
        "guide/intro.md",
        "guide/manual.pdf",
    ]
    with pytest.raises(ConfigError, match=r"'\.rtf'.*supported: \.txt, \.md"):
        load_documents(corpus, extensions=[".rtf"])


def test_missing_folder_and_file_instead_of_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="nowhere.*not found"):
        load_documents(tmp_path / "nowhere")
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(DatasetError, match="a.txt: is a file"):
        load_documents(tmp_path / "a.txt")


def test_case_only_duplicate_ids_are_an_error_naming_both(tmp_path: Path) -> None:
    (tmp_path / "A.md").write_text("upper")
    try:
        (tmp_path / "a.md").write_text("lower")
    except OSError:  # pragma: no cover - a case-insensitive file system
        pytest.skip("case-insensitive file system")
    if len(os.listdir(tmp_path)) < 2:  # pragma: no cover
        pytest.skip("case-insensitive file system")
    with pytest.raises(DatasetError, match=r"A\.md and .*a\.md: .*differ only by case"):
        load_documents(tmp_path, on_error="skip")


def test_nfd_file_names_become_nfc_ids(tmp_path: Path) -> None:
    (tmp_path / unicodedata.normalize("NFD", "café.md")).write_text("menu")
    assert [d.id for d in load_documents(tmp_path)] == ["café.md"]


def test_symlinks_inside_followed_outside_warned(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside.md"
    root.mkdir()
    outside.write_text("secret from elsewhere")
    (root / "real.md").write_text("real text")
    (root / "alias.md").symlink_to(root / "real.md")
    (root / "leak.md").symlink_to(outside)
    with pytest.warns(IngestWarning, match=r"leak\.md: skipped, a symlink to .*outside"):
        docs = load_documents(root)
    assert [d.id for d in docs] == ["alias.md", "real.md"]


BAD = ["binary.txt", "corrupt.pdf", "empty.md", "encrypted.pdf", "fake.docx", "latin1.txt"]
BAD += ["scan.pdf"]


@pytest.fixture(scope="module")
def bad_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad")
    good_pdf = make_pdf(root / "good.pdf", [PARAS[:1], PARAS[1:2]])
    (root / "corrupt.pdf").write_bytes(good_pdf.read_bytes()[:1500])
    make_encrypted_pdf(root / "encrypted.pdf", good_pdf)
    make_image_pdf(root / "scan.pdf")
    (root / "empty.md").write_bytes(b"")
    (root / "blank.pdf").write_bytes(b"")
    with zipfile.ZipFile(root / "fake.docx", "w") as archive:
        archive.writestr("photos/readme.txt", "a zip of something else")
    (root / "latin1.txt").write_bytes("café au lait".encode("latin-1"))
    (root / "binary.txt").write_bytes(b"ELF\x00\x01\x02")
    (root / "good.md").write_text("Good text.")
    return root


#: the files of bad_folder that stop a load, and the message naming each
UNREADABLE = [
    ("corrupt.pdf", r"corrupt\.pdf: is not a readable PDF .*repair"),
    ("encrypted.pdf", r"encrypted\.pdf: is an encrypted PDF that needs a password"),
    ("fake.docx", r"fake\.docx: is not a Word \.docx document"),
    ("latin1.txt", r"latin1\.txt: not UTF-8 text \(invalid continuation byte at byte 3\)"),
    ("binary.txt", r"binary\.txt: has a NUL byte at character 3: a binary file"),
]
#: the files of bad_folder that are skipped with a warning, even under on_error="raise"
TEXTLESS = [
    ("scan.pdf", r"scan\.pdf: skipped, has no text layer \(2 page\(s\), probably a scan\)"),
    ("empty.md", r"empty\.md: skipped, it has no text"),
    ("blank.pdf", r"blank\.pdf: skipped, it has no text"),
]


def _alone(folder: Path, bad_folder: Path, name: str) -> Path:
    """``folder`` holding a copy of ``bad_folder``'s file ``name`` and nothing else."""
    (folder / name).write_bytes((bad_folder / name).read_bytes())
    return folder


@pytest.mark.parametrize(("name", "message"), UNREADABLE)
def test_bad_file_is_an_error_naming_it(tmp_path: Path, bad_folder: Path, name: str,
                                        message: str) -> None:  # fmt: skip
    with pytest.raises(DatasetError, match=message):
        load_documents(_alone(tmp_path, bad_folder, name))


@pytest.mark.parametrize(("name", "message"), TEXTLESS)
def test_scans_and_empty_files_warn_even_under_raise(tmp_path: Path, bad_folder: Path, name: str,
                                                     message: str) -> None:  # fmt: skip
    with pytest.warns(IngestWarning, match=message):
        assert load_documents(_alone(tmp_path, bad_folder, name)) == []


def test_skip_warns_for_each_bad_file_and_loads_the_rest(bad_folder: Path) -> None:
    with pytest.warns(IngestWarning) as record:
        docs = load_documents(bad_folder, on_error="skip")
    assert [d.id for d in docs] == ["good.md", "good.pdf"]
    messages = sorted(str(w.message) for w in record)
    for name in BAD + ["blank.pdf"]:
        assert sum(name in m for m in messages) == 1, (name, messages)
    assert all(w.category is IngestWarning for w in record)


def test_on_error_value_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="on_error='ignore'"):
        load_documents(tmp_path, on_error="ignore")  # type: ignore[arg-type]


def test_parser_warnings_do_not_become_errors(tmp_path: Path) -> None:
    # bs4 warns that this "looks like a URL"; under filterwarnings=error it must still load
    (tmp_path / "link.html").write_text("https://example.invalid/page")
    assert [d.text for d in load_documents(tmp_path)] == ["https://example.invalid/page"]


# -- binary HTML, loops, FIFOs, broken links, unreadable files (issues 28 and 29) ------------


def test_html_of_random_bytes_is_refused_like_a_binary_txt(tmp_path: Path) -> None:
    pytest.importorskip("bs4")
    (tmp_path / "noise.html").write_bytes(random_bytes(4096))
    with pytest.raises(DatasetError, match=r"noise\.html: has a NUL byte .*: a binary file"):
        load_documents(tmp_path)
    with pytest.warns(IngestWarning, match=r"skipped .*noise\.html: .*a binary file"):
        assert load_documents(tmp_path, on_error="skip") == []


def test_html_binary_check_counts_control_characters_when_there_is_no_nul(
    tmp_path: Path,
) -> None:
    pytest.importorskip("bs4")
    noise = random_bytes(4096, seed=3).replace(b"\x00", b"")
    (tmp_path / "noise.html").write_bytes(noise)
    with pytest.raises(DatasetError, match=r"noise\.html: has \d+ control characters in \d+"):
        load_documents(tmp_path)


def test_html_in_other_encodings_is_still_text(tmp_path: Path) -> None:
    pytest.importorskip("bs4")
    page = "<html><head><meta charset='{}'></head><body><p>Café crème: 5 €</p></body></html>"
    (tmp_path / "cp1252.html").write_bytes(page.format("windows-1252").encode("cp1252"))
    (tmp_path / "utf16.html").write_bytes(page.format("utf-16").encode("utf-16"))
    sjis = "<html><head><meta charset='shift_jis'></head><body><p>日本語の文書</p></body></html>"
    (tmp_path / "sjis.html").write_bytes(sjis.encode("shift_jis"))
    docs = {d.id: d.text for d in load_documents(tmp_path)}
    assert docs == {
        "cp1252.html": "Café crème: 5 €",
        "sjis.html": "日本語の文書",
        "utf16.html": "Café crème: 5 €",
    }


def test_symlink_loops_are_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("real text")
    (tmp_path / "self.md").symlink_to(tmp_path / "self.md")  # resolves to itself
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to(tmp_path)  # walking it would never end
    with pytest.warns(IngestWarning) as record:
        docs = load_documents(tmp_path)
    assert [d.id for d in docs] == ["real.md"]
    messages = [str(w.message) for w in record]
    assert messages == [
        f"{tmp_path / 'self.md'}: skipped, a symlink loop (it leads back to itself); remove it",
        f"{tmp_path / 'sub' / 'up'}: skipped, a symlink to {tmp_path.resolve()}, a folder above "
        "it; remove it",
    ]


def test_fifos_and_broken_links_are_skipped_with_a_warning_not_waited_on(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):  # pragma: no cover - Windows
        pytest.skip("no FIFOs on this platform")
    (tmp_path / "real.md").write_text("real text")
    os.mkfifo(tmp_path / "pipe.md")  # opening it would wait for a writer forever
    os.mkfifo(tmp_path / "pipe")  # not named as a document: no word
    (tmp_path / "gone.txt").symlink_to(tmp_path / "deleted.txt")
    with pytest.warns(IngestWarning) as record:
        docs = load_documents(tmp_path)
    assert [d.id for d in docs] == ["real.md"]
    assert [str(w.message) for w in record] == [
        f"{tmp_path / 'gone.txt'}: skipped, a broken symlink (to "
        f"{tmp_path.resolve() / 'deleted.txt'}); fix or remove it",
        f"{tmp_path / 'pipe.md'}: skipped, not a regular file (a FIFO, socket or device), which "
        "is never read; put the file itself there",
    ]


def test_an_unreadable_file_is_a_dataset_error_naming_it() -> None:
    with world_readable_folder() as folder:
        (folder / "open.md").write_text("readable")
        locked = folder / "locked.md"
        locked.write_text("no one may read this")
        error = error_while_unreadable(locked, lambda: load_documents(folder))
        if error.startswith("skip: "):  # pragma: no cover - a root that may not switch user
            pytest.skip(error[6:])
        assert error.startswith(f"DatasetError: {locked}: [Errno 13] Permission denied")
        assert error.endswith("(or load with on_error='skip')")
