"""The embedding cache's size on disk and read speed against ``np.load`` (issue 33).

Writes ``--vectors`` random unit vectors of each ``--dims`` into a fresh cache, one provider
batch (``--batch``, 32 as the default provider's) per transaction, and reports the folder's
bytes (SQLite index and segment files) against the raw float32 bytes (target <= 1.1x). For
comparison it builds the same vectors in the schema-1 layout (one row per vector in a WITHOUT
ROWID table, as the cache stored them until issue 33), written the same way. Then, for the
first dimension, it reads every vector back by key with ``get_matrix`` (one matrix, as a search
wants it) in the stored order (a corpus read back in the order it was embedded, as a search
reads it) and in shuffled key order, and with ``get_many`` (a dict of vectors, shuffled),
alternating with ``np.load`` of the same array saved as .npy (the anchor) and with the floor
any layout pays for the shuffled order (the .npy read into memory, then gathered in key order
with ``np.take``); all from the page cache after a warm-up round. Prints the medians and the
ratios (target: within 3x ``np.load``) and the load average. Then the checksums' read cost
(issue 42; target at most 1.2x): the same reads from two copies of the cache, one whose batches
carry no checksum (read unchecked, as every read was before) and one with, alternating, with a 5%
subset (a shard: checked row by row), as wall and CPU time, beside one xxh3 and one crc32 pass
over the bytes.

Usage::

    python benchmarks/bench_cache.py [--vectors 100000] [--dims 384 768 1536] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from pytest_embedbench.cache import FILENAME, EmbeddingCache, text_key  # noqa: E402

NAMESPACE = "sentence-transformers:sentence-transformers/all-MiniLM-L6-v2:0123456789abcdef"


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def write_now(folder: Path, keys: list[bytes], vectors: np.ndarray, batch: int) -> None:
    cache = EmbeddingCache(folder)
    for start in range(0, len(keys), batch):
        cache.put_many(NAMESPACE, keys[start : start + batch], vectors[start : start + batch])
    cache.close()


def write_v1(folder: Path, keys: list[bytes], vectors: np.ndarray, batch: int) -> None:
    """The schema-1 layout, as the cache wrote it before issue 33."""
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / FILENAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        "CREATE TABLE vectors (ns TEXT NOT NULL, key BLOB NOT NULL, dim INTEGER NOT NULL,"
        " vec BLOB NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID"
    )
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    dim = vectors.shape[1]
    for start in range(0, len(keys), batch):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
            [
                (NAMESPACE, keys[i], dim, vectors[i].tobytes())
                for i in range(start, min(start + batch, len(keys)))
            ],
        )
        conn.execute("COMMIT")
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 768, 1536])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    keys = [text_key(f"document {i}") for i in range(args.vectors)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"{args.vectors} vectors written {args.batch} per transaction; bytes on disk / raw")
        for n, dim in enumerate(args.dims):
            vectors = rng.standard_normal((args.vectors, dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            t0 = time.perf_counter()
            write_now(root / f"now-{dim}", keys, vectors, args.batch)
            wrote = time.perf_counter() - t0
            write_v1(root / f"v1-{dim}", keys, vectors, args.batch)
            now = folder_bytes(root / f"now-{dim}") / vectors.nbytes
            v1 = folder_bytes(root / f"v1-{dim}") / vectors.nbytes
            print(
                f"dim {dim:5}: {now:.3f}x (target <= 1.1x; schema 1: {v1:.3f}x), "
                f"written in {wrote:.1f} s"
            )
            if n == 0:
                read_vectors = vectors
                read_dim = dim
        npy = root / "vectors.npy"
        np.save(npy, read_vectors)
        cache = EmbeddingCache(root / f"now-{read_dim}")
        perm = rng.permutation(len(keys))
        order = [keys[i] for i in perm]

        def gather_floor() -> np.ndarray:
            return np.take(np.load(npy), perm, axis=0, mode="clip")

        reads = {
            "np.load": lambda: np.load(npy),
            "get_matrix, stored order": lambda: cache.get_matrix(
                NAMESPACE, keys, dim=read_dim, unit_norm=True
            ),
            "get_matrix, shuffled": lambda: cache.get_matrix(
                NAMESPACE, order, dim=read_dim, unit_norm=True
            ),
            "get_many, shuffled": lambda: cache.get_many(
                NAMESPACE, order, dim=read_dim, unit_norm=True
            ),
            "floor: np.load + np.take": gather_floor,
        }
        matrix, missing = cache.get_matrix(NAMESPACE, order, dim=read_dim, unit_norm=True)
        assert not missing and np.array_equal(matrix, read_vectors[perm])
        del matrix
        times: dict[str, list[float]] = {name: [] for name in reads}
        for r in range(args.rounds + 1):
            for name, read in reads.items():  # alternating within each round
                t0 = time.perf_counter()
                read()
                if r:  # the first round warms the page cache
                    times[name].append(time.perf_counter() - t0)
        report(times, f"reading {args.vectors} vectors of dim {read_dim}", args.rounds)
        cache.close()
        checksum_cost(root / f"now-{read_dim}", keys, order, read_vectors, args.rounds)
        warm_run(root, read_vectors, args.rounds)


def report(times: dict[str, list[float]], what: str, rounds: int) -> None:
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{what}, median of {rounds} (load average {os.getloadavg()[0]:.1f}):")
    for key, value in med.items():
        ratio = value / med["np.load"]
        print(f"  {key:34} {1000 * value:8.1f} ms  {ratio:5.2f}x np.load")


def checksum_cost(
    folder: Path, keys: list[bytes], order: list[bytes], vectors: np.ndarray, rounds: int
) -> None:
    """Each read from two copies of ``folder``, one without checksums ("unchecked") and one
    with ("checked"), wall and CPU time. Both are copies: a file copied whole read ~20% faster
    from the page cache than the one written 32 rows at a time (likely larger folios in the
    page cache), so a copy against the cache itself counted that as the checksums' cost."""
    import shutil
    import zlib

    from pytest_embedbench.cache.segments import checksum

    bare, checked = (folder.with_name(f"{folder.name}-{w}") for w in ("unchecked", "checked"))
    for copy in (bare, checked):
        shutil.copytree(folder, copy)
    conn = sqlite3.connect(bare / FILENAME)
    conn.execute("UPDATE batches SET hash = NULL, row_hashes = NULL")
    conn.commit()
    conn.close()
    dim = vectors.shape[1]
    shard = keys[::20]
    caches = {"unchecked": EmbeddingCache(bare), "checked": EmbeddingCache(checked)}
    reads = {}
    for name, cache in caches.items():
        for what, asked in (("stored order", keys), ("shuffled", order), ("5% subset", shard)):
            reads[f"{what}, {name}"] = lambda c=cache, a=asked: c.get_matrix(
                NAMESPACE, a, dim=dim, unit_norm=True
            )
    raw = memoryview(vectors).cast("B")
    reads["xxh3 of the bytes"] = lambda: checksum(raw)
    reads["crc32 of the bytes"] = lambda: zlib.crc32(raw)
    reads["np.load"] = lambda: np.load(folder.parent / "vectors.npy")
    times: dict[str, list[float]] = {name: [] for name in reads}
    cpu: dict[str, list[float]] = {name: [] for name in reads}
    for r in range(rounds + 1):
        for name, read in reads.items():
            t0, c0 = time.perf_counter(), time.process_time()
            read()
            if r:
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"checksums' read cost, median of {rounds} (load average {os.getloadavg()[0]:.1f}):")
    for what in ("stored order", "shuffled", "5% subset"):
        for clock, got in (
            ("wall", med),
            ("CPU", {k: statistics.median(v) for k, v in cpu.items()}),
        ):
            before, after = got[f"{what}, unchecked"], got[f"{what}, checked"]
            print(
                f"  {what:14} {clock:4} unchecked {1000 * before:7.1f} ms  checked "
                f"{1000 * after:7.1f} ms  {after / before:5.2f}x (target <= 1.2x)"
            )
    for what in ("xxh3 of the bytes", "crc32 of the bytes", "np.load"):
        print(f"  {what:24} {1000 * med[what]:7.1f} ms")
    for cache in caches.values():
        cache.close()


def warm_run(root: Path, vectors: np.ndarray, rounds: int) -> None:
    """A warm run's document read as ``build_dense`` does it, from a cache that a cold run
    filled the way the model's length-sorted batches wrote it (so no key order matches the
    stored one): the keys of the texts, the cache read and the vectors in the index's order
    (descending id). "Before": the flow until this commit, ``get_many`` (a dict), the rows
    copied one by one in corpus order, then ``ExactIndex`` gathering them into its order;
    "now": ``embed_cached(order=storage_order(ids))``, one read gathered straight into the
    index's order, kept as is by ``ExactIndex(stored_order=...)``."""
    from pytest_embedbench.models.providers.base import EmbeddingProvider
    from pytest_embedbench.retrieval.dense import cache_keys, embed_cached
    from pytest_embedbench.retrieval.exact import ExactIndex, storage_order

    n, dim = vectors.shape
    texts = [f"document {i} " + "word " * (i % 13) for i in range(n)]
    by_text = dict(zip(texts, vectors, strict=True))
    ids = [f"doc{i:07d}" for i in np.random.default_rng(1).permutation(n)]

    class Fixed(EmbeddingProvider):
        name = "fixed"
        default_batch_size = 32

        def load(self) -> None:
            self.dimension = dim

        def embed_batch(self, batch: list[str], *, kind: str) -> np.ndarray:
            return np.stack([by_text[t] for t in batch])

    provider = Fixed("fixed-model")
    provider.ensure_loaded()
    folder = root / "warm"
    cold = EmbeddingCache(folder)
    embed_cached(provider, texts, cold, kind="document")  # the cold run: length-sorted batches
    cold.close()
    cache = EmbeddingCache(folder)
    npy = root / "vectors.npy"

    def before() -> None:
        namespace, keys = cache_keys(provider, texts, "document")
        found, missing = cache.get_many(namespace, keys, dim=dim, unit_norm=True)
        assert not missing
        out = np.empty((n, dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        ExactIndex(out, ids, backend="numpy")

    def now() -> None:
        order = storage_order(ids)
        out, missed = embed_cached(provider, texts, cache, kind="document", order=order)
        assert missed == 0
        ExactIndex(out, ids, backend="numpy", stored_order=order)

    def keys_only() -> None:
        cache_keys(provider, texts, "document")

    reads = {
        "np.load": lambda: np.load(npy),
        "warm read, before": before,
        "warm read, now": now,
        "of which: the texts' keys": keys_only,
    }
    times: dict[str, list[float]] = {name: [] for name in reads}
    for r in range(rounds + 1):
        for name, read in reads.items():
            t0 = time.perf_counter()
            read()
            if r:
                times[name].append(time.perf_counter() - t0)
    report(times, f"a warm run's read of {n} document vectors into the index's order", rounds)
    cache.close()


if __name__ == "__main__":
    main()
