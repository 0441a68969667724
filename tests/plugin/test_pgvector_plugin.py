"""pgvector through pytest (issue 45), as a user runs it on the bundled support dataset (59
documents, 52 judged queries): exact equals exact search, HNSW equals a direct psycopg query of
the same server on the same vectors, a database given by a DSN is used in a schema of its own
that is dropped afterwards, and no server or folder outlives a session that failed or was
interrupted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.test_pgvector import alive, require_pgvector

from .conftest import CONFTEST

SUPPORT = Path(__file__).resolve().parents[2] / "examples" / "support"
HNSW = "pgvector:hnsw(m=16,ef_construction=64,ef_search=40)"
IVF = "pgvector:ivfflat(lists=8,probes=1)"

pytestmark = pytest.mark.slow  # whole pytest runs with a PostgreSQL each: the full suite


@pytest.fixture()
def database() -> Iterator[str]:
    """A PostgreSQL of the test's own (the engine's self-started kind), as a user's database
    reached by a DSN; stopped after the test."""
    require_pgvector()
    from pytest_embedbench.retrieval.indexes.postgres import LocalPostgres

    server = LocalPostgres.start()
    try:
        yield server.conninfo
    finally:
        server.stop()


TESTS = f"""
import os

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

INDEXES = ["exact", "pgvector:exact", {HNSW!r}, {IVF!r}]


def direct(model, corpus, texts):
    # the same vectors, indexed and queried by psycopg directly on the same server, as
    # pgvector's README does it (its own schema, dropped after)
    docs = model.embed([d.embed_text for d in corpus], kind="document")
    queries = model.embed(texts, kind="query")
    with psycopg.connect(os.environ["BENCH_PG_DSN"], autocommit=True) as conn:
        conn.execute("CREATE SCHEMA direct")
        try:
            conn.execute("SET search_path TO direct, public")
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA direct")
            register_vector(conn)
            conn.execute(f"CREATE TABLE items (pos bigint, embedding vector({{docs.shape[1]}}))")
            with conn.cursor().copy("COPY items FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "vector"])
                for i, v in enumerate(docs):
                    copy.write_row((i, v))
            conn.execute("CREATE INDEX ON items USING hnsw (embedding vector_ip_ops) "
                         "WITH (m = 16, ef_construction = 64)")
            conn.execute("SET hnsw.ef_search = 40")
            conn.execute("SET enable_seqscan = off")
            return [
                [row[0] for row in conn.execute(
                    "SELECT pos FROM items ORDER BY embedding <#> %b LIMIT 10", (q,)
                )]
                for q in queries
            ]
        finally:
            conn.execute("DROP SCHEMA direct CASCADE")


@pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[1, 10],
                        indexes=INDEXES)
def test_pg(retrieval, model, corpus):
    run = retrieval.index
    spec = run.spec.spec
    recall, delta = retrieval.neighbour_recall(10), retrieval.delta_vs_exact("ndcg@10")
    if spec in ("exact", "pgvector:exact"):
        assert recall == 1.0 and float(delta) == 0.0 and (delta.low, delta.high) == (0.0, 0.0)
        assert retrieval.ndcg10 == retrieval.exact.ndcg10
    if spec == "pgvector:exact":
        assert run.deterministic and "Seq Scan" in run.description
        assert retrieval.rankings == retrieval.exact.rankings
    if spec == {HNSW!r}:
        ids = [d.id for d in corpus]
        want = direct(model, corpus, list(retrieval.query_texts.values()))
        assert list(retrieval.rankings.values()) == [[ids[p] for p in row] for row in want]
        assert "Index Scan using" in run.description and not run.deterministic
    if spec == {IVF!r}:  # one list of eight probed
        assert recall < 1.0 and "Index Scan using" in run.description
    if spec.startswith("pgvector"):
        assert run.nbytes > 0 and run.build_s > 0 and run.qps > 0
        assert "PostgreSQL 18" in run.description and "pgvector 0.8" in run.description
"""


def test_pgvector_on_a_database_named_by_a_dsn(project: pytest.Pytester, database: str) -> None:
    project.makefile(".yaml", embedbench="index_engines:\n  pgvector: {dsn_env: BENCH_PG_DSN}\n")
    project.makepyfile(test_pg=TESTS)
    os.environ["BENCH_PG_DSN"] = database
    try:
        result = project.runpytest(
            "-p", "no:randomly", "--embedbench-json=out.json", "--embedbench-concurrency=1,4"
        )
    finally:
        del os.environ["BENCH_PG_DSN"]
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "indexes on 'support': each against exact search on the same queries",
            "test_pg.py::test_pg *h*pgvector:exact*+0.0000 [[]+0.000, +0.000]*1.0000 [[]1.000, "
            "1.000]*passed",
            f"*h {HNSW}: not deterministic: pgvector draws its HNSW levels*takes no seed*",
        ]
    )
    report = json.loads((project.path / "out.json").read_text())
    figures = {t["result"]["index"]["spec"]: t["result"]["index"] for t in report["tests"]}
    assert figures["pgvector:exact"]["deterministic"] is True
    assert "dbname=postgres user=postgres" in figures[HNSW]["description"]
    # under load each index answered from 1 and 4 threads (a connection each from its pool)
    assert [lv["concurrency"] for lv in figures[HNSW]["load"]] == [1, 4]
    assert all(lv["requests"] > 0 and lv["qps"] > 0 for lv in figures[HNSW]["load"])
    # the session's schema is gone with its tables; the database is otherwise as it was
    import psycopg

    with psycopg.connect(database) as conn:
        left = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'embedbench%'")
        assert left.fetchall() == []
        # and no connection of the session's (its pools' and its indexes' included) is left
        # open: a closed one's backend leaves pg_stat_activity within moments
        clients = (
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        deadline = time.monotonic() + 10
        while conn.execute(clients).fetchone() != (0,) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert conn.execute(clients).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'")
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)


#: records the self-started server of the run (its folder and process) into server.txt, then
#: fails, or stops the run as a Ctrl-C does (SIGINT to itself), as TEST_END says
ENDINGS = f"""
import os
import signal

import pytest
from pytest_embedbench.retrieval.indexes.postgres import running


@pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[10],
                        indexes=["pgvector:exact", {HNSW!r}])
def test_pg(retrieval):
    with open("server.txt", "w") as out:
        out.write(" ".join(f"{{s.root}} {{s.pid}}" for s in running()))
    if os.environ["TEST_END"] == "interrupt":
        # a Ctrl-C raises KeyboardInterrupt even where SIGINT came in ignored (a suite started
        # as a background job of a non-interactive shell: Python then installs no handler)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.kill(os.getpid(), signal.SIGINT)
    assert retrieval.neighbour_recall(10) > 2, "a failing test"
"""


@pytest.mark.parametrize("end", ["fail", "interrupt"])
def test_no_server_outlives_a_failed_or_interrupted_session(
    project: pytest.Pytester, end: str
) -> None:
    require_pgvector()
    project.makeconftest(CONFTEST)
    project.makepyfile(test_pg=ENDINGS)
    env = {**os.environ, "TEST_END": end, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=project.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = done.stdout + done.stderr
    if end == "fail":
        assert done.returncode == 1, said
        assert "2 failed" in said
    else:
        assert done.returncode == 2 and "KeyboardInterrupt" in said, said
    root, pid = (project.path / "server.txt").read_text().split()
    deadline = time.monotonic() + 30  # the watchdog's stop, should the run's own have missed
    while (Path(root).exists() or alive(int(pid))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(int(pid)), f"postgres {pid} outlived the session: {said}"
    assert not Path(root).exists(), f"{root} outlived the session"


def test_a_session_without_pgvector_index_starts_no_server(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_plain=f"""
        import pytest
        from pytest_embedbench.retrieval.indexes.postgres import running

        @pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[10],
                                indexes=["exact"])
        def test_plain(retrieval):
            assert running() == ()
        """
    )
    project.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
