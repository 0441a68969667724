"""The judgments file under several processes appending at once (issue 46: "appends from
several processes safe"): real processes (multiprocessing), one file, each appending its
verdicts batch by batch, some pairs asked by two processes; afterwards every line is whole,
none is lost and none is there twice. And its format: a pair without a grade (``-`` and the
reason), two lines of one pair that disagree (a merge), the header, ids a TSV line cannot
hold."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.generate.judge import (
    COLUMNS,
    HEADER,
    JUDGE_PROMPT_SHA256,
    JudgmentsError,
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


def _line(*cells: str) -> str:
    return "\t".join(cells) + "\n"


GRADED = _line("q1", "d1", "2", "judge", "m", "m", "sha")
UNGRADED = _line("q1", "d2", "-", "judge", "m", "m", "sha", "no_grade: 'I cannot tell.'")


def test_a_pair_without_a_grade_is_read_and_written_as_a_dash(tmp_path: Path) -> None:
    path = tmp_path / "judgments.tsv"
    path.write_text(HEADER + "\n" + GRADED + UNGRADED)
    assert JudgmentsFile(path).read() == [
        Verdict("q1", "d1", 2, "judge", "m", "m", "sha"),
        Verdict("q1", "d2", None, "judge", "m", "m", "sha", "no_grade: 'I cannot tell.'"),
    ]
    # written: a '-' grade and the note, its tabs and line breaks folded to spaces
    other = tmp_path / "other.tsv"
    JudgmentsFile(other).append(
        [Verdict("q2", "d1", None, "j", "m", "", "sha", "request_refused: Bad\trequest.\n")]
    )
    assert other.read_text().splitlines()[2] == _line(
        "q2", "d1", "-", "j", "m", "", "sha", "request_refused: Bad request."
    ).rstrip("\n")
    (found,) = JudgmentsFile(other).read()
    assert found.grade is None and found.note == "request_refused: Bad request."


def test_conflicting_lines_of_one_pair_name_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "judgments.tsv"
    conflict = GRADED.replace("\t2\t", "\t3\t")
    path.write_text(HEADER + "\n" + GRADED + UNGRADED + conflict)
    with pytest.raises(JudgmentsError) as info:
        JudgmentsFile(path).read()
    message = str(info.value)
    assert message.startswith(f"{path} lines 2 and 4: judge judge grades query 'q1', document")
    assert "twice, 2 and 3" in message and "delete the line you do not want" in message
    # a grade against no grade conflicts too
    path.write_text(HEADER + "\n" + UNGRADED + GRADED.replace("\td1\t", "\td2\t"))
    with pytest.raises(JudgmentsError, match=r"lines 2 and 3: .* twice, - \(no grade\) and 2"):
        JudgmentsFile(path).read()
    # the same verdict twice (one merged from both sides) is read once; another judge's
    # verdict on the same pair is its own
    other_judge = GRADED.replace("\tjudge\t", "\tother\t").replace("\t2\t", "\t0\t")
    path.write_text(HEADER + "\n" + GRADED + other_judge + GRADED)
    assert [(v.judge_id, v.grade) for v in JudgmentsFile(path).read()] == [
        ("judge", 2),
        ("other", 0),
    ]


def test_the_header_line_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "judgments.tsv"
    path.write_text(GRADED)  # no header: not a judgments file
    with pytest.raises(JudgmentsError, match=r"line 1: 'q1\\td1.*' is not a judgments file"):
        JudgmentsFile(path).read()
    path.write_text("# embedbench judgments 2\n" + GRADED)
    with pytest.raises(JudgmentsError, match="line 1: judgments file version 2, newer than the 1"):
        JudgmentsFile(path).read()
    # an empty file holds no verdicts and gets its header on the first append
    path.write_text("\n")
    assert JudgmentsFile(path).read() == []
    JudgmentsFile(path).append([Verdict("q1", "d1", 1, "j", "m", "m", "sha")])
    assert JudgmentsFile(path).read() == [Verdict("q1", "d1", 1, "j", "m", "m", "sha")]
    # line ends of Windows (a checkout with autocrlf) read the same
    path.write_text((HEADER + "\n" + GRADED).replace("\n", "\r\n"))
    assert JudgmentsFile(path).read() == [Verdict("q1", "d1", 2, "judge", "m", "m", "sha")]


@pytest.mark.parametrize("bad", ["q\t1", "q\n1", "q\r1"])
def test_an_id_with_a_tab_or_a_line_break_is_refused(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "judgments.tsv"
    for verdict, what in (
        (Verdict(bad, "d1", 1, "j", "m", "m", "sha"), "query"),
        (Verdict("q1", bad, 1, "j", "m", "m", "sha"), "document"),
    ):
        with pytest.raises(JudgmentsError) as info:
            JudgmentsFile(path).append([verdict])
        assert str(info.value).startswith(f"{path}: {what} id {bad!r} holds a tab or a line")
        assert not path.exists()  # nothing written
    # another Unicode line break is no line end of the file: such an id round-trips
    odd = Verdict("q\u20281", "d\x1c1", 1, "j", "m", "m", "sha")
    JudgmentsFile(path).append([odd])
    assert JudgmentsFile(path).read() == [odd]
