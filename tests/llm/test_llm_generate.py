"""``embedbench generate-evalset`` against a real small model (SmolLM2-135M under
llama-cpp-python's server): the structured-output fallback, the messy answers parsed or
rejected with a counted reason, nothing lost silently, the same bytes for the same seed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import LocalLLM

pytestmark = [pytest.mark.llm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SUPPORT = REPO / "examples" / "support" / "docs"


def generate(llm: LocalLLM, output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The command as a user types it, on a handful of chunks of the support documents."""
    command = [
        sys.executable,
        "-m",
        "pytest_embedbench.cli",
        "generate-evalset",
        "--docs",
        str(SUPPORT),
        "--output",
        str(output),
        "--model",
        llm.spec,
        "--host",
        llm.base_url,
        "--max-chunks",
        "4",
        "--questions-per-chunk",
        "2",
        "--seed",
        "42",
        "--no-progress",
        *extra,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO)


def test_generate_evalset_on_the_support_docs_with_a_real_model(
    local_llm: LocalLLM, tmp_path: Path
) -> None:
    first = generate(local_llm, tmp_path / "a.jsonl")
    assert first.returncode in (0, 1), first.stderr  # 1: nothing kept, said so
    assert "Traceback" not in first.stderr
    assert f"generated with openai:{local_llm.model} at {local_llm.base_url}" in first.stderr
    if first.returncode == 1:
        pytest.fail(f"the real model kept no question:\n{first.stderr}")
    meta = json.loads((tmp_path / "a.jsonl.meta.json").read_text())
    report = meta["report"]
    # llama.cpp's Python server refuses json_schema (HTTP 500, 'Input should be 'text' or
    # 'json_object''): refused once, json_object with the schema for the rest of the run
    assert report["structured_output"] in ("json_schema", "json_object"), report
    if report["structured_output"] == "json_object":
        (refusal,) = report["format_refusals"]
        assert refusal.startswith("json_schema: HTTP "), refusal
        assert "json_object" in refusal
        assert "structured output: json_object (the server refused json_schema" in first.stderr
    assert not report["failed_chunks"].get("request_failed"), first.stderr
    assert not report["failed_chunks"].get("request_refused"), first.stderr
    # every question the model returned is either kept or counted under a reason
    assert report["kept"] + sum(report["rejected"].values()) == report["candidates"]
    assert report["sampled_chunks"] == 4 and report["chunks_done"] == 4
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(rows) == report["kept"] >= 1
    for row in rows:
        assert row["query"].endswith("?") and "{" not in row["query"] and "}" not in row["query"]
        assert row["relevant_doc_ids"][0] == row["source_chunk_id"].rsplit("#", 1)[0]
        assert row["generator"]["model"] == local_llm.model
        assert (SUPPORT / row["relevant_doc_ids"][0]).is_file()
    # temperature 0 and the same seed: the same bytes
    second = generate(local_llm, tmp_path / "b.jsonl")
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
