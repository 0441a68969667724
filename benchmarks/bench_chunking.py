"""Ingestion pages/s, chunking MB/s, and token chunking side by side with semchunk and
langchain-text-splitters (target: no slower than the faster of them).

Usage::

    python benchmarks/bench_chunking.py [--pdfs 20] [--pages 10] [--mb 1.0] [--rounds 5]

The corpus is generated (tests/docfiles.py): PDFs with running headers and page numbers, and
plain text documents of random sentences in paragraphs. Token chunking runs the same texts
through all three with the same tokenizer (all-MiniLM-L6-v2's tokenizer.json, padding off),
the same size and overlap, alternating within each round; the medians are compared.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_embedbench.data.chunking import chunk_documents, load_tokenizer  # noqa: E402
from pytest_embedbench.data.datasets.core import Document  # noqa: E402
from pytest_embedbench.data.ingest import load_documents  # noqa: E402
from tests.docfiles import make_pdf, paragraphs  # noqa: E402


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_ingestion(n_pdfs: int, n_pages: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paras = paragraphs(n_pdfs * n_pages * 3, seed=11)
        for i in range(n_pdfs):
            body = paras[i * n_pages * 3 : (i + 1) * n_pages * 3]
            make_pdf(folder / f"doc{i:03d}.pdf", [body[p * 3 : p * 3 + 3] for p in range(n_pages)])
        pages = n_pdfs * n_pages
        times = [timed(lambda: load_documents(folder)) for _ in range(rounds)]
        median = statistics.median(times)
        print(
            f"ingestion: {pages} PDF pages ({n_pdfs} files): median {median:.2f} s, "
            f"{pages / median:.0f} pages/s (best {pages / min(times):.0f})"
        )


def corpus(mb: float) -> list[Document]:
    paras = paragraphs(int(mb * 2600), seed=3)
    return [
        Document(f"d{i}", "\n\n".join(paras[i * 50 : (i + 1) * 50]))
        for i in range(len(paras) // 50)
    ]


def bench_chars(docs: list[Document], rounds: int) -> None:
    mb = sum(len(d.text) for d in docs) / 1e6
    for strategy in ("fixed", "sentence", "recursive"):
        times = [
            timed(lambda s=strategy: chunk_documents(docs, strategy=s, size=800, overlap=120))
            for _ in range(rounds)
        ]
        print(
            f"chunking {strategy:9s} 800 chars / 120 overlap: {mb:.2f} MB, median "
            f"{statistics.median(times) * 1000:.0f} ms, {mb / statistics.median(times):.1f} MB/s"
        )


def bench_tokens(docs: list[Document], rounds: int, size: int, overlap: int) -> None:
    import semchunk
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    tokenizer = load_tokenizer("all-MiniLM-L6-v2")  # padding and truncation off
    texts = [d.text for d in docs]
    mb = sum(map(len, texts)) / 1e6

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def ours() -> int:
        return len(
            chunk_documents(docs, size=size, overlap=overlap, unit="tokens", tokenizer=tokenizer)
        )

    def semchunk_run() -> int:
        # a new chunker each round: its memoised token counter would otherwise answer from cache
        chunker = semchunk.chunkerify(tokenizer, size)
        return sum(len(c) for c in chunker(texts, offsets=True, overlap=overlap)[0])

    def langchain_run() -> int:
        splitter = RecursiveCharacterTextSplitter(
            chunk_size=size, chunk_overlap=overlap, length_function=count, add_start_index=True
        )
        return len(splitter.create_documents(texts))

    runs = {"ours": ours, "semchunk": semchunk_run, "langchain": langchain_run}
    times: dict[str, list[float]] = {name: [] for name in runs}
    counts = {name: fn() for name, fn in runs.items()}  # warm-up (imports, caches), chunk counts
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(timed(fn))
    medians = {name: statistics.median(t) for name, t in times.items()}
    fastest_other = min(medians["semchunk"], medians["langchain"])
    print(
        f"token chunking, {mb:.2f} MB, {size} tokens / {overlap} overlap, MiniLM tokenizer, "
        f"median of {rounds}:"
    )
    for name in runs:
        print(
            f"  {name:10s} {medians[name] * 1000:7.0f} ms  {mb / medians[name]:5.2f} MB/s  "
            f"{counts[name]} chunks"
        )
    ratio = medians["ours"] / fastest_other
    print(f"  ours / fastest other: {ratio:.2f}x [target <= 1.0x]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdfs", type=int, default=20)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--overlap", type=int, default=32)
    args = parser.parse_args()
    bench_ingestion(args.pdfs, args.pages, max(3, args.rounds // 2))
    docs = corpus(args.mb)
    bench_chars(docs, args.rounds)
    bench_tokens(docs, args.rounds, args.size, args.overlap)


if __name__ == "__main__":
    main()
