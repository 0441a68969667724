"""The ground floor's writers over symlinks and special files (issue 42 item 5):
:func:`write_target` is the one rule, :func:`atomic_write_text` and :func:`append_text` follow
it. The pytest runs through every report writer are in tests/plugin/test_write_through.py."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from pytest_embedbench.core.io import append_text, atomic_write_text, write_target


def test_a_chain_of_links_is_written_through_to_the_last_file_and_keeps_its_mode(
    tmp_path: Path,
) -> None:
    final = tmp_path / "real" / "latest.json"
    final.parent.mkdir()
    final.write_text("old\n")
    final.chmod(0o640)
    middle = tmp_path / "middle.json"
    middle.symlink_to(final)
    link = tmp_path / "reports" / "latest.json"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(middle, link.parent))  # relative, as `ln -s ../x` makes

    assert write_target(link) == final
    atomic_write_text(link, "new\n")
    assert final.read_text() == "new\n" and final.stat().st_mode & 0o777 == 0o640
    assert link.is_symlink() and middle.is_symlink()
    assert [p.name for p in final.parent.iterdir()] == ["latest.json"]  # no temporary file


def test_a_dangling_link_gets_its_target_created(tmp_path: Path) -> None:
    link = tmp_path / "r.md"
    link.symlink_to(tmp_path / "out" / "deep" / "r.md")
    atomic_write_text(link, "# r\n")
    assert link.is_symlink() and (tmp_path / "out" / "deep" / "r.md").read_text() == "# r\n"

    summary = tmp_path / "summary.md"
    summary.symlink_to(tmp_path / "gh" / "summary.md")
    append_text(summary, "one\n", separator="\n")
    append_text(summary, "two\n", separator="\n")
    assert summary.is_symlink()
    assert (tmp_path / "gh" / "summary.md").read_text() == "one\n\ntwo\n"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda p, t: p.symlink_to(p), "it is a symlink loop", id="loop"),
        pytest.param(lambda p, t: p.mkdir(), "it is a folder; give a file path", id="folder"),
        pytest.param(
            lambda p, t: p.symlink_to(t, target_is_directory=True),
            "it is a symlink to {t}, a folder; give a file path",
            id="link-to-folder",
        ),
        pytest.param(
            lambda p, t: p.symlink_to("/dev/null"),
            "it is a symlink to /dev/null, not a regular file",
            id="device",
        ),
    ],
)
def test_what_no_file_write_can_take_is_refused_naming_the_path(
    tmp_path: Path, make, message: str
) -> None:
    path = tmp_path / "r.json"
    make(path, tmp_path)
    with pytest.raises(OSError) as caught:
        atomic_write_text(path, "x")
    assert caught.value.filename == str(path)
    assert message.format(t=tmp_path) in str(caught.value.strerror)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # nothing beside it
    assert os.path.lexists(path)  # the link or folder as it was


def test_append_goes_to_a_device_as_it_is_and_fails_whole_on_a_full_one(tmp_path: Path) -> None:
    append_text(Path("/dev/null"), "fine\n")  # a device (or /dev/stdout) is appended to
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with pytest.raises(OSError) as caught:
        append_text(Path("/dev/full"), "x" * 10_000)
    assert caught.value.errno == errno.ENOSPC


def test_a_refused_write_through_a_link_names_the_targets_folder_to_make_writable(
    tmp_path: Path,
) -> None:
    from pytest_embedbench.report.artifacts import write_failure

    (tmp_path / "runs").mkdir()
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "runs" / "42.json")
    refused = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "runs" / "x.tmp"))
    line = write_failure("JSON report", link, refused, "choose another path")
    assert f"Fix: make {tmp_path / 'runs'} writable, or choose another path" in line
