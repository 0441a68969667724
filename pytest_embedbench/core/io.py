"""Ground-floor file helpers: atomic writes, stale-temporary cleanup (YAML files are read by
:mod:`.yamlfile`).

Imports nothing of the package, so every floor can use it: the baseline store, the generated
eval sets, the reports and the xdist groups file all write through :func:`atomic_write_text`
(never half a file).
"""

from __future__ import annotations

import errno
import json
import math
import os
import platform
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "STALE_TEMP_SECONDS",
    "atomic_write_json",
    "atomic_write_text",
    "finite",
    "remove_stale_temps",
]


def finite(value: Any) -> Any:
    """NaN and infinities become null, in mappings, lists and tuples too: the file stays
    strict JSON. The one rule for it: the JSON writes here, the records' serial form
    (:func:`~pytest_embedbench.records.serial.to_data`) and the cut-offs' JSON use it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


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


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: never half a file.

    Stale temporary files of earlier, interrupted writes of ``path`` are removed first; on
    failure (a full disk, a read-only folder) this write's own temporary file is removed and
    the ``OSError`` raised.
    """
    if path.is_dir():  # else os.replace would fail naming the temporary file, not the path
        raise IsADirectoryError(errno.EISDIR, "it is a folder; give a file path", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            # mkstemp makes the file private; keep an existing file's mode, else a normal one
            os.fchmod(fh.fileno(), path.stat().st_mode & 0o777 if path.exists() else 0o644)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
