"""Files a run writes over symlinks, a baseline path that is a folder, and a job summary on a
full disk (issue 42 item 5), from pytest runs as a user runs them.

A symlink is written through: every writer (JSON, HTML, CSV, Markdown, PR comment, baseline,
job summary) updates the file the link points to, creating it when the link dangles, and the
link stays a link. The job summary is appended whole or not at all: a full disk, a size limit
or ``/dev/full`` leaves the file as it was and the run exits 6 naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.report.artifacts import EXIT_ARTIFACT_FAILED

from . import test_faults_plugin
from .conftest import fill, run_size_limited
from .test_plugin import BASIC

#: ``mount(options)``: a fresh tmpfs (skips where mounting is not allowed)
mount_point = test_faults_plugin.mount_point

#: an earlier step's job summary, kept byte for byte when this run's block cannot be appended
EARLIER = "## Lint\n\nall clean\n"


@pytest.fixture(autouse=True)
def _outside_github(monkeypatch: pytest.MonkeyPatch) -> None:
    """No job summary unless a test asks for one (this suite may itself run in Actions)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def run_not_writing(pytester: pytest.Pytester, *args: str, line: str) -> pytest.RunResult:
    """``pytester.runpytest(*args)``, checked: both tests pass, the run exits 6 (a file it
    could not write), and its output has ``line`` (an fnmatch pattern)."""
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=2)
    assert result.ret == EXIT_ARTIFACT_FAILED
    result.stdout.fnmatch_lines([line])
    return result


# -- symlinks ----------------------------------------------------------------------------------


def test_every_writer_writes_through_a_symlink_and_keeps_the_link(
    project: pytest.Pytester, tmp_path: Path
) -> None:
    """Absolute paths (relative ones are resolved with the options): links to existing files
    get their targets replaced, dangling links get their targets created (folders too)."""
    project.makepyfile(test_basic=BASIC)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    links = project.mkdir("links")
    csv_dir = project.mkdir("csv")
    targets = {
        "r.json": elsewhere / "r.json",  # present: replaced
        "r.html": elsewhere / "r.html",
        "r.md": elsewhere / "new" / "r.md",  # dangling, its folder absent: created
        "comment.md": elsewhere / "comment.md",  # dangling
        "baseline.json": elsewhere / "baseline.json",  # dangling
        "summary.md": elsewhere / "summary.md",  # present: appended to
    }
    for name in ("r.json", "r.html"):
        targets[name].write_text("old\n")
    targets["summary.md"].write_text(EARLIER)
    for name, target in targets.items():
        (links / name).symlink_to(target)
    (csv_dir / "results.csv").symlink_to(elsewhere / "results.csv")  # dangling, in the folder

    result = project.runpytest(
        f"--embedbench-json={links / 'r.json'}",
        f"--embedbench-html={links / 'r.html'}",
        f"--embedbench-md={links / 'r.md'}",
        f"--embedbench-csv={csv_dir}",
        f"--embedbench-pr-comment={links / 'comment.md'}",
        f"--embedbench-github-summary={links / 'summary.md'}",
        f"--embedbench-baseline={links / 'baseline.json'}",
        "--embedbench-update-baseline",
    )
    result.assert_outcomes(passed=2)
    assert result.ret == 0, result.stdout.str()
    assert "NOT written" not in result.stdout.str()
    for name, target in [*targets.items(), ("results.csv", elsewhere / "results.csv")]:
        link = (csv_dir if name == "results.csv" else links) / name
        assert link.is_symlink() and link.readlink() == target, name  # the link as it was
        assert target.is_file(), name
    report = json.loads(targets["r.json"].read_text())
    assert {t["model"] for t in report["tests"]} == {"h", "bm25"}
    assert "<html" in targets["r.html"].read_text().lower()
    assert targets["r.md"].read_text().lstrip().startswith(("#", "|"))
    assert (elsewhere / "results.csv").read_text().startswith("test,")
    baseline = json.loads(targets["baseline.json"].read_text())
    assert len(baseline["entries"]) == 2
    summary = targets["summary.md"].read_text()
    assert summary.startswith(EARLIER + "\n## Embedding retrieval benchmark")
    # the lock lies beside the file written, not beside the link
    assert (elsewhere / ".baseline.json.lock").exists()
    assert not (links / ".baseline.json.lock").exists()
    leftovers = [p for p in [*links.iterdir(), *elsewhere.iterdir()] if p.name.endswith(".tmp")]
    assert leftovers == []

    gated = project.runpytest(f"--embedbench-baseline={links / 'baseline.json'}")
    gated.assert_outcomes(passed=2)  # the entries are read back through the link
    assert "have no baseline" not in gated.stdout.str()
    gated.stdout.fnmatch_lines(["model *Δ nDCG@10 vs baseline*"])  # gated against the entries


def test_a_symlink_loop_or_a_link_to_a_folder_is_refused_naming_the_link(
    project: pytest.Pytester, tmp_path: Path
) -> None:
    project.makepyfile(test_basic=BASIC)
    loop = project.path / "loop.json"
    loop.symlink_to(project.path / "loop.json")
    folder = project.mkdir("a-folder")
    to_folder = project.path / "to-folder.html"
    to_folder.symlink_to(folder)

    relative_loop = project.path / "loop.md"  # relative on the command line: resolved first
    relative_loop.symlink_to("loop.md")

    result = project.runpytest(
        f"--embedbench-json={loop}", f"--embedbench-html={to_folder}", "--embedbench-md=loop.md"
    )
    result.assert_outcomes(passed=2)
    assert result.ret == EXIT_ARTIFACT_FAILED
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            f"embedbench: the JSON report {loop} was NOT written: it is a symlink loop; point "
            "it at a file, or remove it. Fix: choose another path with --embedbench-json=PATH",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            f"embedbench: the HTML report {to_folder} was NOT written: it is a symlink to "
            f"{folder}, a folder; give a file path. Fix: choose another path with "
            "--embedbench-html",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            f"embedbench: the Markdown file {relative_loop} was NOT written: it is a symlink "
            "loop; point it at a file, or remove it. Fix: *--embedbench-md",
        ]
    )
    assert loop.is_symlink() and to_folder.is_symlink() and relative_loop.is_symlink()
    assert list(folder.iterdir()) == []


# -- a baseline path that is a folder ----------------------------------------------------------


def test_a_baseline_path_that_is_a_folder_is_named_and_leaves_no_lock(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_basic=BASIC)
    folder = project.mkdir("baselines")

    run_not_writing(
        project,
        f"--embedbench-baseline={folder}",
        "--embedbench-update-baseline",
        line=f"embedbench: the baseline {folder} was NOT written: it is a folder; give a file "
        "path. Fix: choose another file with --embedbench-baseline=PATH and re-run the update",
    )
    assert not (project.path / ".baselines.lock").exists()  # no stray lock beside it
    assert [p.name for p in project.path.iterdir() if p.name.startswith(".baselines")] == []
    assert list(folder.iterdir()) == []

    gated = project.runpytest(f"--embedbench-baseline={folder}")
    gated.assert_outcomes(failed=2)  # not "no baseline": the path is wrong, and said so
    gated.stdout.fnmatch_lines(
        [
            f"*{folder}: is a folder, not a baseline file; give a file path with "
            "--embedbench-baseline=PATH*"
        ]
    )
    assert not (project.path / ".baselines.lock").exists()


# -- the job summary on a full disk ------------------------------------------------------------


def an_earlier_summary(path: Path, page: int) -> bytes:
    """Write an earlier step's summary to ``path`` that ends 100 bytes short of ``page``
    bytes, so the first bytes of this run's block fit and the rest does not; its bytes."""
    before = (EARLIER + "x" * (page - 100 - len(EARLIER) - 1) + "\n").encode()
    path.write_bytes(before)
    return before


def test_a_full_disk_leaves_the_job_summary_as_it_was_and_exits_6(
    project: pytest.Pytester, mount_point: Any
) -> None:
    """The earlier summary ends 100 bytes short of a page: the first bytes of this run's
    block fit in its last page and the rest does not, the partial append of the probe."""
    project.makepyfile(test_basic=BASIC)
    folder = mount_point("size=64k")
    summary = folder / "step-summary.md"
    before = an_earlier_summary(summary, 4096)  # a tmpfs page
    fill(folder, 512)

    result = run_not_writing(
        project,
        f"--embedbench-github-summary={summary}",
        line=f"embedbench: the GitHub job summary {summary} was NOT written: No space left on "
        "device. Fix: free space on that disk, or choose another path with "
        "--embedbench-github-summary",
    )
    assert f"GitHub job summary: {summary}" not in result.stdout.str()  # not claimed written
    assert summary.read_bytes() == before  # the whole block or nothing


def test_dev_full_as_the_job_summary_exits_6_naming_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    project.makepyfile(test_basic=BASIC)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "/dev/full")  # as GitHub Actions names it
    run_not_writing(
        project,
        line="embedbench: the GitHub job summary /dev/full was NOT written: No space left on "
        "device. Fix: free space on that disk, or *",
    )


@pytest.mark.slow  # a pytest run in a subprocess: the full suite
def test_a_size_limit_leaves_the_job_summary_as_it_was_where_no_tmpfs_can_be_mounted(
    project: pytest.Pytester,
) -> None:
    """RLIMIT_FSIZE makes the kernel refuse every byte past a size (EFBIG; Python ignores
    SIGXFSZ): the block's first bytes fit under the limit and the rest does not."""
    project.makepyfile(test_basic=BASIC)
    limit = 8192
    summary = project.path / "step-summary.md"
    before = an_earlier_summary(summary, limit)
    code, out = run_size_limited(project.path, limit, f"--embedbench-github-summary={summary}")
    assert "2 passed" in out, out
    assert code == EXIT_ARTIFACT_FAILED, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    line = f"embedbench: the GitHub job summary {summary} was NOT written: File too large. Fix:"
    assert line in out, out
    assert summary.read_bytes() == before
