"""A real, deterministic embedding provider for engine and plugin tests (no model download),
and :func:`run_module`, a fresh Python process."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pytest_embedbench import EmbeddingProvider, register_provider


class HashingProvider(EmbeddingProvider):
    """A real, deterministic bag-of-words embedding (feature hashing), for engine tests.

    It records every text it was asked to embed so tests can check what a retriever saw.
    """

    name = "hashing"
    option_names = frozenset({"dim", "poison", "sleep"})

    def load(self) -> None:
        self.dimension = int(self.options.get("dim", 64))
        self.seen: list[str] = []

    def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
        self.seen.extend(texts)
        time.sleep(float(self.options.get("sleep", 0.0)))
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


def run_module(
    module: str,
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` in a fresh process, its output captured as text; the exit
    status is the caller's to check."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
