"""Ground-floor file helpers: atomic writes, whole appends, stale-temporary cleanup (YAML
files are read by :mod:`.yamlfile`).

Imports nothing of the package, so every floor can use it: the baseline store, the generated
eval sets, the reports and the xdist groups file all write through :func:`atomic_write_text`
(never half a file), the GitHub job summary is appended by :func:`append_text` (the whole block
or nothing).

A path that is a symlink is written through: both writers update the file the link points to
(created when the link dangles) and leave the link itself as it was; :func:`write_target` is
that one rule.
"""

from __future__ import annotations

import errno
import json
import math
import os
import platform
import re
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "STALE_TEMP_SECONDS",
    "append_text",
    "atomic_write_json",
    "atomic_write_text",
    "finite",
    "missing",
    "remove_stale_temps",
    "write_target",
]


def finite(value: Any, *, digits: int | None = None) -> Any:
    """NaN and infinities become null, in mappings, lists and tuples too: the file stays
    strict JSON. The one rule for it: the JSON writes here, the records' serial form
    (:func:`~pytest_embedbench.records.serial.to_data`), the cut-offs' JSON, a reranker's
    latencies and the baseline's entries use it (the baseline also rounds every finite float
    to ``digits`` decimals). A value it turns into null is :func:`missing`."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return value if digits is None else round(value, digits)
    if isinstance(value, Mapping):
        return {k: finite(v, digits=digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v, digits=digits) for v in value]
    return value


def missing(value: Any) -> bool:
    """Whether a figure was not measured: None, or a float that :func:`finite` turns into
    null (NaN or an infinity)."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


#: a temporary file of an interrupted write is removed after this long (or once its pid is gone)
STALE_TEMP_SECONDS = 3600.0
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", platform.node()) or "host"


def _temp_prefix(path: Path) -> str:
    """``.<name>.<pid>@<host>.``: who created a temporary file, so a stale one can be told."""
    return f".{path.name}.{os.getpid()}@{_HOST}."


def _pid_alive(pid: int) -> bool:
    # psutil, not os.kill(pid, 0): on Windows that call terminates the process
    import psutil

    return bool(psutil.pid_exists(pid))


def remove_stale_temps(path: Path, *, max_age: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove the temporary files that interrupted writes of ``path`` left behind.

    One is stale when it is older than ``max_age`` seconds, or when the process that created
    it (its name carries pid and host) ran on this host and is gone. A write in progress in a
    live process is never touched. Returns what was removed.
    """
    pattern = re.compile(
        rf"^\.{re.escape(path.name)}\.(?:(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)\.)?[^/]*\.tmp$"
    )
    removed: list[Path] = []
    try:
        candidates = list(path.parent.iterdir())
    except OSError:
        return removed
    now = time.time()
    for candidate in candidates:
        match = pattern.match(candidate.name)
        if match is None:
            continue
        pid = match.group("pid")
        try:
            old = now - candidate.lstat().st_mtime > max_age
            gone = (
                pid is not None
                and match.group("host") == _HOST
                and int(pid) != os.getpid()
                and not _pid_alive(int(pid))
            )
            if old or gone:
                candidate.unlink()
                removed.append(candidate)
        except OSError:  # removed by another run meanwhile, or not ours to remove
            continue
    return removed


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (see :func:`atomic_write_text`)."""
    text = json.dumps(finite(data), indent=2, sort_keys=True, allow_nan=False) + "\n"
    atomic_write_text(path, text)


def write_target(path: Path) -> Path:
    """The file a write of ``path`` replaces: ``path`` itself, or, when it is a symlink, the
    file at the end of its links (absent when the link dangles: the write creates it).

    A symlink is written through, never replaced by a regular file: a user who links
    ``reports/latest.json`` to a file elsewhere expects that file updated (as a shell's ``>``
    does). Raises ``OSError`` naming ``path`` for what no file write can take: a folder, a
    link to a folder, a link loop, an existing file that is not a regular one (a device or a
    pipe cannot be replaced atomically).
    """
    try:
        found = os.stat(path)  # follows the links
    except FileNotFoundError:
        found = None  # absent, or a dangling link: the write creates its target
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(
                errno.ELOOP, "it is a symlink loop; point it at a file, or remove it", str(path)
            ) from None
        raise
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    linked = f"it is a symlink to {target}, " if target != path else "it is "
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{linked}a folder; give a file path", str(path))
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise OSError(
            errno.EINVAL,
            f"{linked}not a regular file (a device, pipe or socket); give a file path",
            str(path),
        )
    return target


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: never half a file.

    A symlink is written through to its target (:func:`write_target`). Stale temporary files
    of earlier, interrupted writes are removed first; on failure (a full disk, a read-only
    folder) this write's own temporary file is removed and the ``OSError`` raised.
    """
    # the temporary file lies beside the target: a rename within its file system, and the
    # rename replaces the target, not the link to it
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            # mkstemp makes the file private; keep an existing file's mode, else a normal one
            os.fchmod(fh.fileno(), target.stat().st_mode & 0o777 if target.exists() else 0o644)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_text(path: Path, text: str, *, separator: str = "") -> None:
    """Append ``text`` to ``path`` (created when absent), the whole of it or nothing.

    ``separator`` goes first when the file already holds something. One ``O_APPEND`` write
    (continued after a short one) and an ``fsync``; when either fails (a full disk, a size
    limit) a regular file is truncated back to its size before, so it is left as it was, and
    the ``OSError`` is raised. A symlink is written through (:func:`write_target`'s rule); a
    device or pipe (``/dev/stdout``) is appended to as it is.
    """
    if not path.exists():  # absent, or a dangling link: create what it names, folders first
        path = write_target(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "it is a folder; give a file path", str(path))
    # an existing link is opened as it is: the kernel follows it (/dev/stdout's too)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        found = os.fstat(fd)
        regular, size = stat.S_ISREG(found.st_mode), found.st_size
        data = ((separator if size else "") + text).encode("utf-8")
        try:
            view = memoryview(data)
            while view:  # a short write is continued; the next one says why it stopped
                view = view[os.write(fd, view) :]
            if regular:  # a file system may report a full disk only here
                os.fsync(fd)
        except BaseException:
            if regular:  # the whole block or nothing: back to the size it had
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)
