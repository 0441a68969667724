"""Real PDF, DOCX and HTML files built from known text, for the ingestion tests and benchmark.

Each builder writes a file whose body is exactly ``paragraphs`` (plus a heading or table where
said) and adds the boilerplate a loader must drop: running headers and page numbers (PDF), a
section header (DOCX), nav/script/style/footer (HTML).
"""

from __future__ import annotations

import contextlib
import html
import os
import random
import re
import shutil
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

_WORDS = (
    "invoice account password reset billing export report quarterly retention policy "
    "encryption backup restore customer ticket escalation latency throughput cluster node "
    "replica shard index query vector embedding model benchmark dataset schema migration "
    "deployment rollback incident review audit compliance region storage archive network "
    "gateway certificate token session timeout webhook payload limit quota invoice refund"
).split()

HEADER = "ACME Operations Handbook - Internal"


def paragraphs(n: int, seed: int = 0, sentences: int = 5) -> list[str]:
    """``n`` paragraphs of plain ASCII sentences (core PDF fonts are Latin-1 only)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(sentences):
            words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 14))]
            words[0] = words[0].capitalize()
            if rng.random() < 0.3:
                words.insert(rng.randint(1, len(words) - 1), str(rng.randint(2, 9999)))
            parts.append(" ".join(words) + rng.choice(".!?"))
        out.append(" ".join(parts))
    return out


def f1(found: str, expected: str) -> float:
    """Token-level F1 of two texts (lowercased ``\\w+`` tokens, as bags)."""
    a = Counter(re.findall(r"\w+", found.lower()))
    b = Counter(re.findall(r"\w+", expected.lower()))
    common = sum((a & b).values())
    if not common:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def make_pdf(
    path: Path,
    pages: Sequence[Sequence[str]],
    *,
    header: str | None = HEADER,
    page_numbers: bool = True,
    roman_front: int = 0,
) -> Path:
    """One PDF page per item of ``pages`` (its paragraphs), with a running header and a
    'Page n' footer on each; the first ``roman_front`` pages get labels i, ii, ... and the rest
    1, 2, ... (through pypdf's page labels)."""
    from fpdf import FPDF

    class _Doc(FPDF):
        def header(self) -> None:
            if header:
                self.set_font("Helvetica", size=9)
                self.cell(0, 8, header, new_x="LMARGIN", new_y="NEXT")
                self.ln(4)

        def footer(self) -> None:
            if page_numbers:
                self.set_y(-15)
                self.set_font("Helvetica", size=9)
                self.cell(0, 10, f"Page {self.page_no()}", align="C")

    pdf = _Doc()
    pdf.set_auto_page_break(False)
    for body in pages:
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        for para in body:
            pdf.multi_cell(0, 5.5, para, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    pdf.output(str(path))
    if roman_front:
        from pypdf import PdfWriter

        writer = PdfWriter(clone_from=str(path))
        writer.set_page_label(0, roman_front - 1, "/r")
        writer.set_page_label(roman_front, len(pages) - 1, "/D", start=1)
        writer.write(str(path))
    return path


def make_image_pdf(path: Path, n_pages: int = 2) -> Path:
    """A 'scan': pages with an image and no text layer."""
    from fpdf import FPDF
    from PIL import Image

    image = Image.new("RGB", (60, 40), (200, 30, 30))
    pdf = FPDF()
    for _ in range(n_pages):
        pdf.add_page()
        pdf.image(image, x=10, y=10, w=120)
    pdf.output(str(path))
    return path


def make_encrypted_pdf(path: Path, source: Path, password: str = "s3cret") -> Path:
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(source))
    writer.encrypt(password, algorithm="RC4-128")  # RC4 needs no cryptography package
    writer.write(str(path))
    return path


def make_docx(path: Path, title: str, body: Sequence[str], table: Sequence[Sequence[str]]) -> Path:
    """A heading, the first half of ``body``, a table, a subheading, the rest; a section header
    that must not be read."""
    import docx

    document = docx.Document()
    document.sections[0].header.paragraphs[0].text = HEADER
    document.add_heading(title, level=1)
    half = len(body) // 2
    for para in body[:half]:
        document.add_paragraph(para)
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, cell in enumerate(row):
            grid.cell(r, c).text = cell
    document.add_heading("Details", level=2)
    for para in body[half:]:
        document.add_paragraph(para)
    document.save(str(path))
    return path


def make_html(
    path: Path, title: str, heading: str, body: Sequence[str], items: Sequence[str]
) -> Path:
    """An article page wrapped in the boilerplate a reader must drop."""
    esc = html.escape
    paras = "\n".join(f"    <p>{esc(p)}</p>" for p in body)
    lis = "".join(f"<li>{esc(i)}</li>" for i in items)
    path.write_text(
        f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>body {{ font-family: sans-serif; }} .navlink {{ color: red; }}</style>
<script>var trackingPixel = "analytics collector"; function beacon() {{ return 1; }}</script>
</head>
<body>
  <header><div class="logo">Globex Portal</div></header>
  <nav><a href="/home">Homepage</a> <a href="/pricing">Pricing plans</a></nav>
  <main><article>
    <header><h1>{esc(heading)}</h1></header>
{paras}
    <ul>{lis}</ul>
  </article></main>
  <aside>Sponsored sidebar advert</aside>
  <noscript>Enable javascript please</noscript>
  <footer>Copyright Globex Corporation, all rights reserved</footer>
  <script>beacon();</script>
</body></html>
""",
        encoding="utf-8",
    )
    return path


def random_bytes(n: int, seed: int = 0) -> bytes:
    """``n`` reproducible random bytes: a binary file that any text parser would still take."""
    return random.Random(seed).randbytes(n)


#: the user a root test process becomes to meet a permission (uid and gid of ``nobody``)
NOBODY = 65534


def error_while_unreadable(file: Path, call: Callable[[], object]) -> str:
    """What ``call()`` raises, as ``"TypeName: message"`` ("" when nothing), while ``file``
    cannot be opened (mode 000).

    Root opens any file whatever its mode, so as root ``call`` runs in a forked child that
    has become ``nobody``: the file's folders must then be open to all (see
    :func:`world_readable_folder`). Returns ``"skip: ..."`` when the child may not switch user.
    """
    file.chmod(0)
    try:
        if os.geteuid() != 0:
            return _error_of(call)
        read_end, write_end = os.pipe()
        with warnings.catch_warnings():  # 3.12+ warns of fork in a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            try:
                os.close(read_end)
                try:
                    os.setgroups([])
                    os.setgid(NOBODY)
                    os.setuid(NOBODY)
                except OSError as exc:
                    answer = f"skip: cannot become nobody ({exc})"
                else:
                    answer = _error_of(call)
                os.write(write_end, answer.encode())
            finally:
                os._exit(0)
        os.close(write_end)
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
        os.close(read_end)
        os.waitpid(pid, 0)
        return b"".join(chunks).decode()
    finally:
        file.chmod(0o644)


def _error_of(call: Callable[[], object]) -> str:
    try:
        call()
    except BaseException as exc:  # what escapes is the answer, whatever it is
        return f"{type(exc).__name__}: {exc}"
    return ""


@contextlib.contextmanager
def world_readable_folder() -> Iterator[Path]:
    """A fresh folder that every user may enter (pytest's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="embedbench-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
