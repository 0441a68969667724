"""bm25 indexing per language: ``BM25Index`` beside its tokeniser alone (issue 44).

For each ``--languages`` (``en``, ``zh``, ``ja``, ``ko``, ``th``, ``auto``, ``subword``) a
seeded corpus of ``--docs`` documents, each five of Django's translated messages in that
language (the ``.po`` files of the django wheel; ``auto`` and ``subword``: the four CJK/Thai
corpora and the English one mixed), is
indexed per round, alternating: the tokeniser alone (``tokenizer.tokenize(texts)``: every
document's terms) and ``BM25Index(texts, ids, tokenizer=...)`` (the same tokeniser, the terms
counted, the score matrix built). The tokeniser is made (its dictionary or model loaded) before
the rounds, as the provider does at load. Prints the median wall and CPU seconds per 1,000
documents of each and their ratio (index / tokeniser alone: what the index adds over the
segmentation it cannot avoid).

Usage::

    python benchmarks/bench_tokenize.py [--docs 5000] [--rounds 5] [--languages zh ja ko th en auto]
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_embedbench.retrieval.lexical.bm25 import BM25Index  # noqa: E402
from pytest_embedbench.retrieval.lexical.languages import make_tokenizer  # noqa: E402
from tests.unit.test_bm25_language import messages  # noqa: E402

LOCALES = {"en": "en", "zh": "zh_Hans", "ja": "ja", "ko": "ko", "th": "th"}


def corpus(language: str, n: int, seed: int = 0) -> list[str]:
    """``n`` documents of five messages each, seeded."""
    rng = random.Random(seed)
    if language == "subword":  # MiniLM's subword tokens, over the five corpora mixed
        return corpus("auto", n, seed)
    if language == "auto":
        parts = [corpus(code, n // 5 + 1, seed + i) for i, code in enumerate(LOCALES)]
        mixed = [text for part in parts for text in part][:n]
        rng.shuffle(mixed)
        return mixed
    if language == "en":  # the English side of the messages
        pool = sorted(messages("zh_Hans"))
    else:
        pool = sorted(messages(LOCALES[language]).values())
    return [" ".join(rng.choice(pool) for _ in range(5)) for _ in range(n)]


def timed(fn: object) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()  # type: ignore[operator]
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--languages", nargs="+", default=["en", "zh", "ja", "ko", "th", "auto", "subword"]
    )
    args = parser.parse_args()
    print(
        "| language | tokeniser alone, wall s / 1k | BM25Index, wall s / 1k | ratio | "
        "tokeniser alone, CPU s / 1k | BM25Index, CPU s / 1k | ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for language in args.languages:
        texts = corpus(language, args.docs)
        ids = [f"d{i}" for i in range(len(texts))]
        tokenizer = make_tokenizer(language)
        tokenizer.tokenize(texts[:50])  # every library loaded before the clock starts
        alone, index = [], []
        for r in range(args.rounds):
            steps = [
                (alone, functools.partial(tokenizer.tokenize, texts)),
                (index, functools.partial(BM25Index, texts, ids, tokenizer=tokenizer)),
            ]
            for store, fn in steps if r % 2 == 0 else steps[::-1]:
                store.append(timed(fn))
        per_k = 1000 / len(texts)
        a_wall = statistics.median(w for w, _ in alone) * per_k
        i_wall = statistics.median(w for w, _ in index) * per_k
        a_cpu = statistics.median(c for _, c in alone) * per_k
        i_cpu = statistics.median(c for _, c in index) * per_k
        print(
            f"| {language} | {a_wall:.4f} | {i_wall:.4f} | {i_wall / a_wall:.2f}x | "
            f"{a_cpu:.4f} | {i_cpu:.4f} | {i_cpu / a_cpu:.2f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
