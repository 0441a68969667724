"""The judgments file under several processes appending at once (issue 46: "appends from
several processes safe"): real processes (multiprocessing), one file, each appending its
verdicts batch by batch, some pairs asked by two processes; afterwards every line is whole,
none is lost and none is there twice."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from pytest_embedbench.generate.judge import (
    COLUMNS,
    HEADER,
    JUDGE_PROMPT_SHA256,
    JudgmentsFile,
    Verdict,
)

PROCESSES = 4
BATCHES = 20
PER_BATCH = 5


def _verdicts(worker: int, batch: int) -> list[Verdict]:
    """Worker ``worker``'s batch: pairs of its own, and one pair its neighbour also asks."""
    own = [
        Verdict(f"q{worker}-{batch}", f"d{i}", i % 4, "judge", "m", "m", JUDGE_PROMPT_SHA256)
        for i in range(PER_BATCH)
    ]
    shared = Verdict(f"shared-{batch}", f"d{worker // 2}", 1, "judge", "m", "m", "x")
    return [*own, shared]


def _append_all(path: str, worker: int, start: Any) -> None:
    file = JudgmentsFile(Path(path))
    start.wait()  # every process appends from the same moment on
    for batch in range(BATCHES):
        file.append(_verdicts(worker, batch))


def test_processes_appending_at_once_lose_and_repeat_nothing(tmp_path: Path) -> None:
    path = tmp_path / "judgments.tsv"
    context = multiprocessing.get_context("fork")  # the test's own modules, no re-import
    start = context.Barrier(PROCESSES)
    workers = [
        context.Process(target=_append_all, args=(str(path), w, start)) for w in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""  # the file ends with a line end: no line cut short
    assert lines[0] == HEADER and lines[1].startswith(f"# prompt {JUDGE_PROMPT_SHA256} ")
    assert sum(line.startswith("#") for line in lines) == 2  # the header and prompt once
    rows = [line.split("\t") for line in lines[2:-1]]
    assert all(len(row) == len(COLUMNS) for row in rows)  # every line whole
    keys = [(row[0], row[1]) for row in rows]
    assert len(keys) == len(set(keys))  # none twice, a pair two processes asked included
    wanted = {
        (v.query_id, v.doc_id)
        for w in range(PROCESSES)
        for b in range(BATCHES)
        for v in _verdicts(w, b)
    }
    assert set(keys) == wanted  # none lost
    assert JudgmentsFile(path).read() == [
        Verdict(row[0], row[1], int(row[2]), *row[3:]) for row in rows
    ]
