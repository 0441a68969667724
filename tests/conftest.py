"""Shared fixtures: tiny datasets written to tmp_path, the SciFact folder, real providers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import EmbeddingProvider, register_provider

REPO = Path(__file__).resolve().parent.parent
SCIFACT = Path(os.environ.get("EMBEDBENCH_SCIFACT", REPO.parent / "shared" / "data" / "scifact"))


@pytest.fixture(scope="session")
def scifact_path() -> Path:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact not found at {SCIFACT} (set EMBEDBENCH_SCIFACT)")
    return SCIFACT


def write_jsonl(path: Path, rows: list[dict], *, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        for row in rows:
            fh.write(json.dumps(row) + newline)
    return path


@pytest.fixture
def beir_folder(tmp_path: Path) -> Path:
    """A four-document BEIR folder with CRLF lines and a qrels header."""
    root = tmp_path / "tiny-beir"
    write_jsonl(
        root / "corpus.jsonl",
        [
            {"_id": "d1", "title": "Password reset", "text": "Reset your password from login."},
            {"_id": "d2", "title": "", "text": "Invoices are emailed every month."},
            {"_id": "d3", "title": "Export", "text": "Export data as CSV from settings."},
            {"_id": "d4", "title": "Billing", "text": "Change the card used for billing."},
        ],
        newline="\r\n",
    )
    write_jsonl(
        root / "queries.jsonl",
        [
            {"_id": "q1", "text": "how to reset password", "metadata": {"answer": "d1"}},
            {"_id": "q2", "text": "download my data as csv", "metadata": {}},
            {"_id": "q3", "text": "an unjudged query"},
        ],
        newline="\r\n",
    )
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_bytes(
        b"query-id\tcorpus-id\tscore\r\nq1\td1\t2\r\nq1\td4\t0\r\nq2\td3\t1\r\n"
    )
    return root


class HashingProvider(EmbeddingProvider):
    """A real, deterministic bag-of-words embedding (feature hashing), for engine tests.

    It records every text it was asked to embed so tests can check what a retriever saw.
    """

    name = "hashing"
    option_names = frozenset({"dim", "poison"})

    def load(self) -> None:
        self.dimension = int(self.options.get("dim", 64))
        self.seen: list[str] = []

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        self.seen.extend(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in text.lower().split():
                token = token.strip(".,?!")
                h = int.from_bytes(token.encode()[:8].ljust(8, b"\0"), "little")
                out[i, h % self.dimension] += 1.0
            out[i, -1] += 0.01  # never a zero vector
        poison = self.options.get("poison")
        if poison == "nan":
            out[0, 0] = np.nan
        elif poison == "dim":
            out = out[:, :-1]
        elif poison == "rows":
            out = out[:-1]
        return out


register_provider(HashingProvider)
