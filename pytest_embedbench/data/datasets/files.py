"""Line readers shared by the loaders: JSONL and text lines, ids and texts checked with the
file and line of every problem."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...core.exceptions import DatasetError

__all__ = ["as_id", "as_text", "closest", "read_jsonl", "read_lines"]


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, line) with CRLF or LF endings removed; a BOM is dropped."""
    try:
        with path.open("r", encoding="utf-8-sig", newline=None) as fh:
            for number, line in enumerate(fh, start=1):
                yield number, line.rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except FileNotFoundError:
        raise DatasetError(f"{path}: file not found") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in read_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{path} line {number}: malformed JSON ({exc.msg} at column {exc.colno}); "
                "each line must be one JSON object"
            ) from None
        if not isinstance(obj, dict):
            raise DatasetError(
                f"{path} line {number}: expected a JSON object, got {type(obj).__name__}"
            )
        yield number, obj


def as_id(value: Any, path: Path, number: int, key: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise DatasetError(
            f"{path} line {number}: {key!r} must be a non-empty string, got {value!r}"
        )
    # NFC, so an id typed on one system matches the same id (or file name) written on another
    return unicodedata.normalize("NFC", str(value))


def as_text(obj: Mapping[str, Any], key: str, path: Path, number: int, default: Any = None) -> str:
    value = obj.get(key, default)
    if value is None:
        raise DatasetError(f"{path} line {number}: missing key {key!r}")
    if not isinstance(value, str):
        raise DatasetError(
            f"{path} line {number}: {key!r} must be a string, got {type(value).__name__}"
        )
    return value


def closest(name: str, known: Iterable[str]) -> str | None:
    import difflib

    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None
