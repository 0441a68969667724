"""A real, deterministic embedding provider for engine and plugin tests (no model download),
:func:`word_dataset`, a seeded dataset for it, and :func:`run_module`, a fresh Python process."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pytest_embedbench import EmbeddingProvider, RetrievalDataset, register_provider


class HashingProvider(EmbeddingProvider):
    """A real, deterministic bag-of-words embedding (feature hashing), for engine tests.

    It records every text it was asked to embed so tests can check what a retriever saw.
    """

    name = "hashing"
    option_names = frozenset({"dim", "poison", "sleep"})

    def load(self) -> None:
        self.dimension = int(self.options.get("dim", 64))
        self.seen: list[str] = []

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        self.seen.extend(texts)
        time.sleep(float(self.options.get("sleep", 0.0)))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in text.lower().split():
                token = token.strip(".,?!")
                h = int.from_bytes(token.encode()[:8].ljust(8, b"\0"), "little")
                out[i, h % self.dimension] += 1.0
            out[i, -1] += 0.01  # never a zero vector
        poison = self.options.get("poison")
        if poison == "nan":
            out[0, 0] = np.nan
        elif poison == "dim":
            out = out[:, :-1]
        elif poison == "rows":
            out = out[:-1]
        return out


register_provider(HashingProvider)


#: the words of :func:`word_dataset`'s documents
WORDS = (
    "password invoice export billing card login csv report refund account email team "
    "token search index model cache disk vector query latency batch worker shard replica"
).split()


def word_dataset(
    n_docs: int, n_queries: int = 16, *, name: str, graded_zero: bool = False
) -> RetrievalDataset:
    """Documents of four of :data:`WORDS` each (seed 7); query j asks with three words of
    document 3j, its one relevant document; ``graded_zero`` also judges document 3j + 1, at
    grade 0."""
    rng = np.random.default_rng(7)
    corpus = {f"d{i:03d}": " ".join(rng.choice(WORDS, 4, replace=False)) for i in range(n_docs)}
    ids = sorted(corpus)
    queries = {f"q{j:02d}": " ".join(corpus[ids[3 * j]].split()[:3]) for j in range(n_queries)}
    qrels = {
        f"q{j:02d}": {ids[3 * j]: 1, **({ids[3 * j + 1]: 0} if graded_zero else {})}
        for j in range(n_queries)
    }
    return RetrievalDataset.from_dicts(corpus, queries, qrels, name=name)


def length_provider(cls: str, name: str, *, register: bool) -> str:
    """The source of a user's provider module: class ``cls``, provider ``name``, embedding a
    text as ``[1.0, its length]``; ``register``: decorated with ``@register_provider``, as a
    ``plugins:`` file registers itself (an entry point's class goes undecorated)."""
    decorator = "@register_provider\n" if register else ""
    return f"""from pytest_embedbench import EmbeddingProvider, register_provider


{decorator}class {cls}(EmbeddingProvider):
    name = {name!r}

    def load(self):
        self.dimension = 2

    def embed_batch(self, texts, *, kind):
        return [[1.0, float(len(t))] for t in texts]
"""


def run_module(
    module: str,
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` in a fresh process, its output captured as text; the exit
    status is the caller's to check."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
