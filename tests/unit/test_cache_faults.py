"""Cache faults with real processes, real files and a real full disk (issue 9, items 3, 4, 6).

* four processes creating one fresh cache at the same instant: nothing moved aside, no loss;
* a populated cache on a full disk (a small tmpfs mounted by the test; where mounting is not
  allowed, a file-size limit set with ``setrlimit(RLIMIT_FSIZE)`` in a subprocess makes the
  kernel refuse the writes instead): kept, the run completes with the clean results and one
  warning;
* damaged rows written into a real cache file (NaN, +-inf, zeros, a wrong byte length, another
  dimension, random bytes): dropped, embedded again, overwritten, with the clean results, also
  where the model has not told its dimension yet;
* a cold run killed with SIGKILL in the middle of embedding keeps every batch it finished.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import EmbedBenchWarning, EmbeddingCache, Evaluator, RetrievalDataset
from pytest_embedbench.cache import faults
from pytest_embedbench.cache.store import FILENAME, text_key

from ..cacherows import rows as cache_rows
from ..cacherows import set_vector, set_vectors
from ..helpers import word_dataset

REPO = Path(__file__).resolve().parents[2]


def _dataset() -> RetrievalDataset:
    """Documents of four words each; every query shares words with exactly one document."""
    return word_dataset(48, name="faults", graded_zero=True)


def _aside(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".corrupt-" in p.name)


# -- four processes create one fresh cache at the same instant -------------------------------


def _race_worker(base: str, worker: int, trials: int, barrier, results) -> None:  # noqa: ANN001
    """Open the trial's fresh cache together with the others and write ten rows."""
    messages: list[str] = []
    for trial in range(trials):
        barrier.wait(timeout=120)  # all open the same fresh file at once
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                cache = EmbeddingCache(Path(base) / str(trial))
                keys = [text_key(f"w{worker}-{i}") for i in range(10)]
                cache.put_many("ns", keys, np.full((10, 4), worker + 1.0, dtype=np.float32))
                cache.close()
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails
                messages.append(f"trial {trial}: {type(exc).__name__}: {exc}")
        messages += [f"trial {trial}: {w.message}" for w in caught]
    results.put((worker, messages))


def _creator(base: str, trials: int, barrier, hold_s: float) -> None:  # noqa: ANN001
    """A process in the middle of creating the fresh file: it holds the write lock while the
    others open it (SQLite then answers their switch to WAL "database is locked" at once,
    whatever the busy timeout), which makes the race of the issue happen on every trial."""
    for trial in range(trials):
        folder = Path(base) / str(trial)
        folder.mkdir()
        conn = sqlite3.connect(folder / FILENAME, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        barrier.wait(timeout=120)
        time.sleep(hold_s)
        conn.execute("COMMIT")
        conn.close()


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_four_processes_creating_a_fresh_cache_at_once_keep_all_their_rows(
    tmp_path: Path,
) -> None:
    trials = 6
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(5), ctx.Queue()
    procs = [
        ctx.Process(
            target=_race_worker, args=(str(tmp_path), w, trials, barrier, results), daemon=True
        )
        for w in range(4)
    ]
    procs.append(
        ctx.Process(target=_creator, args=(str(tmp_path), trials, barrier, 0.5), daemon=True)
    )
    for p in procs:
        p.start()
    try:
        reports = dict(results.get(timeout=120) for _ in range(4))  # the old code hung
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    assert reports == {w: [] for w in range(4)}, "no warning, no error in any process"
    for trial in range(trials):
        folder = tmp_path / str(trial)
        assert _aside(folder) == [], f"trial {trial} moved a healthy cache aside"
        cache = EmbeddingCache(folder)
        assert cache.count("ns") == 40
        for w in range(4):
            found, missing = cache.get_many("ns", [text_key(f"w{w}-{i}") for i in range(10)])
            assert missing == [] and all((v == w + 1.0).all() for v in found.values())
        cache.close()


# -- a full disk -----------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path):  # noqa: ANN201
    """A 1 MiB tmpfs mounted for this test (skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); see the rlimit test")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> Path:
    """Write a file until the disk refuses with ENOSPC; return it (delete it to free space)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == 28, exc  # ENOSPC: the disk is full now
    finally:
        os.close(fd)
    return filler


def test_a_populated_cache_on_a_full_disk_is_kept_and_the_run_completes(
    small_disk: Path,
) -> None:
    ds = _dataset()
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    first = Evaluator(cache=small_disk)
    assert first.evaluate("hashing:h", ds).run == clean.run
    first.cache.close()  # type: ignore[union-attr]
    stored = (small_disk / FILENAME).stat().st_size
    filler = _fill(small_disk)

    with pytest.warns(EmbedBenchWarning) as caught:
        result = Evaluator(cache=small_disk).evaluate("hashing:h", ds)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert str(small_disk / FILENAME) in messages[0]
    assert "the disk is full" in messages[0] and "left as it is" in messages[0]
    assert result.run == clean.run and float(result.ndcg10) == float(clean.ndcg10)
    assert _aside(small_disk) == []
    assert (small_disk / FILENAME).stat().st_size == stored

    filler.unlink()  # space again: the same file serves every document
    warm = Evaluator(cache=small_disk).evaluate("hashing:h", ds)
    assert (warm.cache.hits, warm.cache.misses) == (48, 0)
    assert warm.run == clean.run


def test_a_write_onto_a_full_disk_stops_writes_but_keeps_reads(small_disk: Path) -> None:
    ds = _dataset()
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    half = RetrievalDataset(
        ds.documents[:24], ds.queries[:8], {q.id: ds.qrels[q.id] for q in ds.queries[:8]}
    )
    holder = Evaluator(cache=small_disk)  # stays open, so the journal files exist
    holder.evaluate("hashing:h", half)
    _fill(small_disk)

    with pytest.warns(EmbedBenchWarning, match="cannot store vectors") as caught:
        result = Evaluator(cache=small_disk).evaluate("hashing:h", ds)
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert "disk is full" in str(caught[0].message)
    assert (result.cache.hits, result.cache.misses) == (24, 24)  # the 24 stored still read
    n_queries = len(ds.queries)
    assert (result.query_cache.hits, result.query_cache.misses) == (8, n_queries - 8)
    assert result.run == clean.run
    assert _aside(small_disk) == []
    # the first run's 24 documents and 8 queries, nothing of this one
    assert holder.cache.count() == 24 + 8  # type: ignore[union-attr]


# -- a lock another process holds too long ----------------------------------------------------

#: holds the index's write lock (a pending write) until a line arrives on stdin
_HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO meta VALUES ('held', 'by another process')")
print("held", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_a_lock_held_too_long_skips_those_writes_and_counts_their_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faults, "BUSY_WAIT_S", 0.3)
    monkeypatch.setattr(faults, "LOCK_WAIT_S", 0.1)
    ds = _dataset()
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    EmbeddingCache(tmp_path).close()  # the index exists, empty
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(tmp_path / FILENAME)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            blocked = Evaluator(cache=tmp_path).evaluate("hashing:h", ds)
    finally:
        holder.communicate("\n", timeout=60)
    messages = [str(w.message) for w in caught]
    pattern = re.compile(
        r"embedding cache '.*': database is locked \(SQLITE_BUSY\) while writing to it; other "
        r"processes held it locked for over 0 s; this time its (\d+) vector\(s\) are not "
        r"stored, results are unaffected"
    )
    counts = [int(m.group(1)) for m in map(pattern.fullmatch, messages) if m]
    assert len(counts) == len(messages) >= 2, messages  # one warning per skipped batch
    misses = blocked.cache.misses + blocked.query_cache.misses
    assert sum(counts) == misses == 48 + len(ds.queries)
    assert blocked.run == clean.run
    assert _aside(tmp_path) == []

    stored = Evaluator(cache=tmp_path).evaluate("hashing:h", ds)  # the lock is gone: stored
    assert stored.cache.misses == 48
    warm = Evaluator(cache=tmp_path).evaluate("hashing:h", ds)
    assert (warm.cache.hits, warm.cache.misses) == (48, 0)
    assert warm.run == clean.run


# -- damaged rows ------------------------------------------------------------------------------


def _damage(path: Path, namespace: str, how: dict[str, bytes]) -> None:
    """Overwrite the stored vectors of the given keys (hex) in the real SQLite file."""
    dim = {key: d for ns, key, d, _ in cache_rows(path) if ns == namespace}
    changes = [(namespace, bytes.fromhex(k), dim[bytes.fromhex(k)], b) for k, b in how.items()]
    assert set_vectors(path, changes) == len(how)


def test_damaged_rows_are_dropped_embedded_again_and_overwritten(tmp_path: Path) -> None:
    ds = _dataset()
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    first = Evaluator(cache=tmp_path)
    assert first.evaluate("hashing:h", ds).run == clean.run
    namespace = first.provider("hashing:h").namespace_key()
    first.cache.close()  # type: ignore[union-attr]
    sound = {key: vec for ns, key, _, vec in cache_rows(tmp_path / FILENAME) if ns == namespace}
    # the documents relevant to the first queries, so a bad vector moves the metrics
    targets = [text_key(ds.document(f"d{3 * j:03d}").embed_text).hex() for j in range(4)]
    rng = np.random.default_rng(1)
    _damage(
        tmp_path / FILENAME,
        namespace,
        {
            targets[0]: np.full(64, np.nan, dtype=np.float32).tobytes(),
            targets[1]: np.zeros(64, dtype=np.float32).tobytes(),
            targets[2]: sound[bytes.fromhex(targets[2])][:-4],  # one value short
            targets[3]: rng.bytes(64 * 4),
        },
    )

    ev = Evaluator(cache=tmp_path)
    with pytest.warns(EmbedBenchWarning) as caught:
        result = ev.evaluate("hashing:h", ds)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert f"4 damaged vector(s) in namespace {namespace!r}" in messages[0]
    assert str(tmp_path / FILENAME) in messages[0]
    assert (result.cache.hits, result.cache.misses) == (44, 4)
    assert result.run == clean.run and float(result.ndcg10) == float(clean.ndcg10)
    repaired = {k: v for ns, k, _, v in cache_rows(tmp_path / FILENAME) if ns == namespace}
    assert repaired == sound  # every damaged row was overwritten with the right vector
    assert _aside(tmp_path) == []


def test_a_non_normalising_namespace_keeps_vectors_of_any_norm(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    keys = [text_key("a"), text_key("b")]
    cache.put_many("raw", keys, np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    found, missing = cache.get_many("raw", keys, dim=2, unit_norm=False)
    assert missing == [] and float(np.linalg.norm(found[keys[0]])) == 5.0
    with pytest.warns(EmbedBenchWarning, match=r"2 damaged vector.*2 with a norm other than 1"):
        found, missing = cache.get_many("raw", keys, dim=2, unit_norm=True)
    assert missing == [0, 1]
    with pytest.warns(EmbedBenchWarning, match=r"2 with a dimension other than 3"):
        assert cache.get_many("raw", keys, dim=3)[1] == [0, 1]


def _spoil(path: Path) -> dict[str, list[str]]:
    """In every namespace of the real cache file, one row each of: a NaN, +inf, -inf, a zero
    vector, and a sound unit vector of another dimension (its dim column and byte length
    agree, so only the dimension tells). The hex keys spoiled, by namespace and kind."""
    rows = cache_rows(path)
    spoiled: dict[str, list[str]] = {}
    conn = sqlite3.connect(path)
    with conn:
        for ns in sorted({r[0] for r in rows}):
            mine = [r for r in rows if r[0] == ns]
            kinds = ("nan", "+inf", "-inf", "zero", "dim")
            for (_, key, dim, blob), kind in zip(mine, kinds, strict=False):
                vec = np.frombuffer(blob, dtype=np.float32).copy()
                if kind == "dim":
                    vec = vec[:-3] / np.linalg.norm(vec[:-3])
                    dim -= 3
                elif kind == "zero":
                    vec[:] = 0.0
                else:
                    vec[1] = {"nan": np.nan, "+inf": np.inf, "-inf": -np.inf}[kind]
                set_vector(conn, ns, key, dim, vec.astype(np.float32).tobytes())
                spoiled.setdefault(ns, []).append(bytes(key).hex())
    conn.close()
    return spoiled


def _stored(path: Path) -> dict[tuple[str, bytes], tuple[int, bytes]]:
    return {(ns, key): (dim, vec) for ns, key, dim, vec in cache_rows(path)}


def test_inf_zero_and_wrong_dimension_rows_beside_nan_are_embedded_again(tmp_path: Path) -> None:
    """Issue 28: every kind of damaged row, in the documents' and the queries' namespaces of a
    normalising model, is dropped, embedded again and overwritten like a NaN row."""
    ds = _dataset()
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    first = Evaluator(cache=tmp_path)
    first.evaluate("hashing:h", ds)
    first.cache.close()  # type: ignore[union-attr]
    sound = _stored(tmp_path / FILENAME)
    spoiled = _spoil(tmp_path / FILENAME)
    assert len(spoiled) == 2 and all(len(keys) == 5 for keys in spoiled.values())

    with pytest.warns(EmbedBenchWarning) as caught:
        result = Evaluator(cache=tmp_path).evaluate("hashing:h", ds)
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2, messages  # one for the documents, one for the queries
    for message, namespace in zip(messages, sorted(spoiled), strict=True):
        assert f"5 damaged vector(s) in namespace {namespace!r}" in message, message
        assert "3 with NaN or infinite values" in message
        assert "1 with a dimension other than 64" in message
        assert "1 with a norm other than 1" in message
    assert (result.cache.hits, result.cache.misses) == (43, 5)
    assert (result.query_cache.hits, result.query_cache.misses) == (11, 5)
    assert result.run == clean.run and float(result.ndcg10) == float(clean.ndcg10)
    assert _stored(tmp_path / FILENAME) == sound  # every spoiled row overwritten as it was
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warm = Evaluator(cache=tmp_path).evaluate("hashing:h", ds)
    assert (warm.cache.misses, warm.query_cache.misses) == (0, 0) and warm.run == clean.run


def _wrong_dimension(path: Path, share: float) -> None:
    """Give ``share`` of every namespace's rows a sound vector of 3 dimensions fewer."""
    rows = cache_rows(path)
    conn = sqlite3.connect(path)
    with conn:
        for ns in {r[0] for r in rows}:
            mine = [r for r in rows if r[0] == ns]
            for _, key, dim, blob in mine[: int(len(mine) * share)]:
                vec = np.frombuffer(blob, dtype=np.float32)[:-3]
                vec = (vec / np.linalg.norm(vec)).astype(np.float32)
                set_vector(conn, ns, key, dim - 3, vec.tobytes())
    conn.close()


@pytest.mark.parametrize("share", [0.1, 0.6])
def test_wrong_dimension_rows_of_a_model_that_has_not_told_its_dimension(
    tmp_path: Path, share: float
) -> None:
    """An API model learns its dimension from its first answer, so the cache cannot check the
    rows against it: when they disagree, guessing the dimension most rows have failed the run
    ("embedding dimension 16 differs from the model's 13") once the damaged rows were the most.
    A real Ollama client against a loopback server."""
    from pytest_embedbench import ModelSpec

    from ..providers.servers import OllamaServer

    ds = _dataset()
    with OllamaServer(dim=16) as server:
        spec = ModelSpec("ollama:all-minilm", host=server.url)
        clean = Evaluator(cache=False).evaluate(spec, ds)
        first = Evaluator(cache=tmp_path)
        first.evaluate(spec, ds)
        first.cache.close()  # type: ignore[union-attr]
        _wrong_dimension(tmp_path / FILENAME, share)
        with pytest.warns(EmbedBenchWarning) as caught:
            result = Evaluator(cache=tmp_path).evaluate(spec, ds)
        messages = [str(w.message) for w in caught]
        assert result.run == clean.run, messages
        documents = next(m for m in messages if "/query" not in m)
        assert "have 2 dimensions (13, 16) and the model has not told its own yet" in documents
        assert result.cache.misses == 48  # none could be trusted: all embedded again
        warm = Evaluator(cache=tmp_path).evaluate(spec, ds)
        assert (warm.cache.misses, warm.query_cache.misses) == (0, 0) and warm.run == clean.run


# -- a cold run killed in the middle of embedding ---------------------------------------------

_KILLED_RUN = textwrap.dedent(
    """
    import json, sys, threading
    from pathlib import Path
    from pytest_embedbench import Evaluator, RetrievalDataset, register_provider
    from tests.helpers import HashingProvider

    out, block_after = Path(sys.argv[1]), int(sys.argv[2])

    class Stalling(HashingProvider):
        # embeds like "hashing", then blocks forever in batch number block_after
        name = "stalling"

        def embed_batch(self, texts, *, kind):
            if kind == "document":
                self.batches = getattr(self, "batches", 0) + 1
                if self.batches > block_after:
                    (out / "stalled").write_text(json.dumps(self.namespace_key()))
                    threading.Event().wait()
                with (out / "embedded.jsonl").open("a") as fh:
                    fh.write(json.dumps(texts) + "\\n")
            return super().embed_batch(texts, kind=kind)

    register_provider(Stalling)
    corpus = {f"d{i:03d}": f"document {i} about topic {i % 7} and item {i * 13 % 101}"
              for i in range(100)}
    ds = RetrievalDataset.from_dicts(corpus, {"q": "topic 3"}, {"q": {"d003": 1}})
    result = Evaluator(cache=out / "cache").evaluate("stalling:s", ds)
    print(json.dumps([result.cache.hits, result.cache.misses]))
    """
)


def test_a_cold_run_killed_mid_embedding_keeps_every_finished_batch(tmp_path: Path) -> None:
    """100 documents in batches of 32 (the old code stored nothing below 256 documents)."""
    script = tmp_path / "run.py"
    script.write_text(_KILLED_RUN)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), "2"], env=env)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "stalled").exists():
            assert proc.poll() is None, "the run ended before it stalled"
            assert time.monotonic() < deadline, "the run never reached its third batch"
            time.sleep(0.05)
        time.sleep(0.1)  # let the stalled file's write finish; the process waits forever
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    namespace = json.loads((tmp_path / "stalled").read_text())
    batches = [json.loads(line) for line in (tmp_path / "embedded.jsonl").read_text().splitlines()]
    assert [len(b) for b in batches] == [32, 32]

    cache = EmbeddingCache(tmp_path / "cache")
    assert cache.count(namespace) == 64
    found, missing = cache.get_many(
        namespace, [text_key(t) for b in batches for t in b], dim=64, unit_norm=True
    )
    assert missing == [] and len(found) == 64
    cache.close()

    # the next run embeds only the 36 documents the killed one did not finish
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), "99"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [64, 36]


_LIMITED_RUN = textwrap.dedent(
    """
    import json, resource, signal, sys, warnings
    from pytest_embedbench import Evaluator
    from tests.helpers import HashingProvider  # registers "hashing"
    from tests.unit.test_cache_faults import _dataset

    # no file of this process may grow past 16 KiB: the kernel refuses the write (EFBIG)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16384, resource.RLIM_INFINITY))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = Evaluator(cache=sys.argv[1]).evaluate("hashing:h", _dataset())
    print(json.dumps({"run": result.run, "warnings": [str(w.message) for w in caught]}))
    """
)


def test_a_cache_whose_writes_the_kernel_refuses_is_kept(tmp_path: Path) -> None:
    """The stand-in for a full disk where a tmpfs cannot be mounted: RLIMIT_FSIZE."""
    ds = _dataset()
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    first = Evaluator(cache=tmp_path)
    first.evaluate("hashing:h", ds)
    first.cache.close()  # type: ignore[union-attr]
    stored = (tmp_path / FILENAME).stat().st_size
    assert stored > 16384
    script = tmp_path / "limited.py"
    script.write_text(_LIMITED_RUN)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert len(report["warnings"]) == 1, report["warnings"]
    assert str(tmp_path / FILENAME) in report["warnings"][0]
    assert "disk I/O error" in report["warnings"][0]
    assert report["run"] == json.loads(json.dumps(clean.run))
    assert _aside(tmp_path) == [] and (tmp_path / FILENAME).stat().st_size == stored
    warm = Evaluator(cache=tmp_path).evaluate("hashing:h", ds)
    assert (warm.cache.hits, warm.cache.misses) == (48, 0)


def test_a_cache_folder_that_is_a_file_names_both_ways_out(tmp_path: Path) -> None:
    from pytest_embedbench.core.exceptions import CacheError

    blocked = tmp_path / "cache"
    blocked.write_text("a file, not a folder")
    with pytest.raises(CacheError, match=r"cannot create the embedding cache folder") as info:
        EmbeddingCache(blocked)
    assert "--embedbench-cache-dir" in str(info.value)
    assert "--embedbench-no-cache" in str(info.value) and "cache=False" in str(info.value)
    assert blocked.read_text() == "a file, not a folder"
