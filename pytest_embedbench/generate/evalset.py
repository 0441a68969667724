"""The eval-set file: its lines, the atomic write, the fingerprint of the documents and
settings it was made from (the ``.meta.json`` sidecar) and the check that it is not stale."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.datasets.core import Document
from .prompts import PROMPT_VERSION
from .report import GenerationReport
from .settings import GenerationSettings, StaleEvalsetError


def evalset_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The JSONL text of ``rows``: one compact object a line, UTF-8 as is, ``\\n`` endings."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def evalset_rows(
    rows: Sequence[dict[str, Any]], settings: GenerationSettings, host: str
) -> list[dict[str, Any]]:
    """The kept questions as eval-set lines: numbered ``q0001``... in corpus order, with the
    generator that wrote them (``host`` redacted)."""
    for number, row in enumerate(rows, 1):
        row["query_id"] = f"q{number:04d}"
    generator_info = {
        "provider": settings.provider,
        "model": settings.model_name,
        "host": host,
        "prompt_version": PROMPT_VERSION,
    }
    out = []
    for row in rows:  # a fixed key order: the same answers give the same bytes
        out.append(
            {
                "query_id": row["query_id"],
                "query": row["query"],
                "relevant_doc_ids": row["relevant_doc_ids"],
                "answer": row["answer"],
                "source_chunk_id": row["source_chunk_id"],
                "generator": {**generator_info, "seed": row["seed"]},
            }
        )
    return out


def write_evalset(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write the eval set atomically; the path written."""
    target = Path(path)
    from ..core.io import atomic_write_text

    atomic_write_text(target, evalset_text(rows))
    return target


def evalset_fingerprint(
    documents: Sequence[Document], settings: GenerationSettings
) -> dict[str, Any]:
    """What a generated set was made from: each document's SHA-256 and the settings that
    decide the questions, with one digest over both."""
    docs = {d.id: hashlib.sha256(d.text.encode("utf-8")).hexdigest() for d in documents}
    identity = settings.identity()
    blob = json.dumps({"documents": docs, "settings": identity}, sort_keys=True)
    return {
        "digest": hashlib.sha256(blob.encode("utf-8")).hexdigest(),
        "documents": dict(sorted(docs.items())),
        "settings": identity,
    }


SIDECAR_SCHEMA = 1


def sidecar_path(evalset: Path) -> Path:
    """``generated.jsonl`` -> ``generated.jsonl.meta.json``: the fingerprint and the report."""
    return evalset.with_name(evalset.name + ".meta.json")


def write_sidecar(evalset: Path, fingerprint: Mapping[str, Any], report: GenerationReport) -> Path:
    path = sidecar_path(evalset)
    data = {"schema": SIDECAR_SCHEMA, "fingerprint": fingerprint, "report": report.to_dict()}
    from ..core.io import atomic_write_text

    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write_text(path, text)
    return path


def _staleness(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """What changed between two fingerprints, in words, or None."""
    if old.get("digest") == new["digest"]:
        return None
    parts = []
    before, after = old.get("documents") or {}, new["documents"]
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(d for d in set(after) & set(before) if after[d] != before[d])
    for word, ids in (("added", added), ("removed", removed), ("changed", changed)):
        if ids:
            shown = ", ".join(repr(i) for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
            parts.append(f"{len(ids)} document(s) {word} ({shown})")
    settings_before, settings_after = old.get("settings") or {}, new["settings"]
    keys = sorted(
        k
        for k in set(settings_before) | set(settings_after)
        if settings_before.get(k) != settings_after.get(k)
    )
    if keys:
        parts.append(f"settings changed ({', '.join(keys)})")
    return "; ".join(parts) or "its fingerprint differs"


def _check_fresh(target: Path, fingerprint: Mapping[str, Any], config_dir: Path, name: str) -> None:
    """Raise StaleEvalsetError when ``target`` was made from other documents or settings."""
    sidecar = sidecar_path(target)
    try:
        old = json.loads(sidecar.read_text(encoding="utf-8"))["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        old = None
    what = (
        "its sidecar file is missing or unreadable"
        if not isinstance(old, Mapping)
        else _staleness(old, fingerprint)
    )
    if what is None:
        return
    raise StaleEvalsetError(
        f"{target}: the generated eval set is stale: {what}. Regenerate it with "
        f"`embedbench generate-evalset --config {config_dir / 'embedbench.yaml'} "
        f"--dataset {name} --regenerate` (or delete {target.name} and {sidecar.name}), then "
        "review the new questions before you commit them"
    )
