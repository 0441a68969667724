"""What the benchmarks over SciFact share: where the data set lies (``../shared/data/scifact``
beside the repository), the model they time by default, and the two options that name them."""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


def scifact_parser(doc: str) -> argparse.ArgumentParser:
    """The command line of a SciFact benchmark, described by the first line of its ``doc``:
    ``--data`` (default: SciFact) and ``--model`` (default: all-MiniLM-L6-v2) to begin with."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--data", default=str(SCIFACT))
    parser.add_argument("--model", default=MINILM)
    return parser
