"""``embedbench generate-evalset`` as a user runs it (issue 28, item 6): a folder it cannot
write to is the one "NOT written ... Fix:" line and exit 6 of a run's files, never a traceback;
a bad option exits 2 naming the flag the user typed; a server that does not answer in time names
``--request-timeout-s``. Real processes, real mounts, real loopback servers."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.cli import main

from ..helpers import run_module
from ..plugin.test_faults_plugin import full_folder, mount_point, read_only_folder
from ..providers.servers import OllamaChatServer, OpenAIChatServer
from .test_generate import DOCS, scripted_answerer

__all__ = ["mount_point"]  # the fixture, imported for the tests below

EXIT_ARTIFACT_FAILED = 6


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def write_docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_docs(tmp_path / "docs")


@pytest.fixture
def chat() -> Iterator[OllamaChatServer]:
    with OllamaChatServer(answerer=scripted_answerer()) as server:
        yield server


def embedbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The ``embedbench`` command in a real process."""
    env = {k: v for k, v in os.environ.items() if k not in ("OLLAMA_HOST", "OPENAI_BASE_URL")}
    return run_module("pytest_embedbench.cli", *args, cwd=cwd, env=env, timeout=120)


# -- a folder it cannot write to -----------------------------------------------------------


def test_a_read_only_folder_is_one_line_and_exit_6_before_any_question_is_asked(
    docs: Path, chat: OllamaChatServer, tmp_path: Path, mount_point: Any
) -> None:
    folder = read_only_folder(tmp_path, mount_point)
    out = folder / "evalset.jsonl"
    done = embedbench("generate-evalset", "--docs", str(docs), "-o", str(out), "--host", chat.url)
    assert done.returncode == EXIT_ARTIFACT_FAILED, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    reason = "Read-only file system" if os.geteuid() == 0 else "Permission denied"
    assert lines == [  # the OS reason alone: no temporary file named
        f"embedbench: the eval set {out} was NOT written: {reason}. Fix: make {folder} "
        "writable, or choose another --output"
    ]
    assert chat.chat_requests == []  # found out before the model spent minutes on questions
    assert list(folder.iterdir()) == []


def test_a_full_disk_is_one_line_and_exit_6_and_leaves_no_temporary_file(
    docs: Path, chat: OllamaChatServer, mount_point: Any
) -> None:
    folder = full_folder(mount_point)
    out = folder / "evalset.jsonl"
    argv = ["generate-evalset", "--docs", str(docs), "-o", str(out), "--host", chat.url]
    done = embedbench(*argv, "--questions-per-chunk", "2", "--seed", "7", "--no-progress")
    assert done.returncode == EXIT_ARTIFACT_FAILED, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "kept 5" in done.stderr  # the summary of what was generated comes first
    assert done.stderr.rstrip().splitlines()[-1] == (
        f"embedbench: the eval set {out} was NOT written: No space left on device. Fix: free "
        "space on that disk, or choose another --output"
    )
    assert sorted(p.name for p in folder.iterdir()) == ["filler"]


def test_a_configured_dataset_in_a_full_folder_is_one_line_and_exit_6(
    chat: OllamaChatServer, mount_point: Any
) -> None:
    folder = mount_point("size=256k")
    write_docs(folder / "docs")
    config = folder / "embedbench.yaml"
    config.write_text(
        "datasets:\n"
        "  handbook:\n"
        "    path: docs\n"
        f"    evalset: {{generate: {{host: '{chat.url}', questions_per_chunk: 2, seed: 7}}}}\n",
        encoding="utf-8",
    )
    full_folder(lambda _options: folder)  # fill what is left of it
    done = embedbench("generate-evalset", "--config", str(config), "--dataset", "handbook")
    assert done.returncode == EXIT_ARTIFACT_FAILED, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    target = folder / "handbook.generated.jsonl"
    assert done.stderr.rstrip().splitlines()[-1] == (
        f"embedbench: the eval set {target} was NOT written: No space left on device. Fix: free "
        f"space on that disk, or give datasets.handbook.evalset.generate in {config} an output: "
        "in a folder you can write to"
    )
    assert not target.exists() and not any(p.name.endswith(".tmp") for p in folder.iterdir())


# -- bad options ---------------------------------------------------------------------------


def test_documents_that_are_not_a_folder_and_an_output_that_is_one_exit_2(
    docs: Path, tmp_path: Path
) -> None:
    out = str(tmp_path / "x.jsonl")
    for args, message in (
        (["--docs", "/nonexistent", "-o", out], "--docs /nonexistent: no such folder"),
        (
            ["--docs", str(docs / "a-backups.md"), "-o", out],
            f"--docs {docs / 'a-backups.md'}: is a file, not a folder",
        ),
        (["--docs", str(docs), "-o", str(tmp_path)], f"--output {tmp_path}: is a folder"),
    ):
        done = embedbench("generate-evalset", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith(f"embedbench generate-evalset: {message}"), done.stderr
        assert "Traceback" not in done.stderr
    assert not Path(out).exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--questions-per-chunk", "9"],
            "--questions-per-chunk 9 must be a whole number from 1 to 5",
        ),
        (
            ["--chunk-size", "0"],
            "--chunk-size 0 must be a whole number >= 1 (the most characters a chunk holds), "
            "e.g. --chunk-size 800",
        ),
        (
            ["--chunk-size", "100", "--chunk-overlap", "200"],
            "--chunk-overlap 200 is not below --chunk-size 100; a chunk would repeat the one "
            "before it: make --chunk-overlap smaller than --chunk-size",
        ),
        (["--chunk-min-chars", "-2"], "--chunk-min-chars -2 must be a whole number >= 0"),
        (["--min-chunk-chars", "-1"], "--min-chunk-chars -1 must be a whole number >= 0"),
        (
            ["--min-question-words", "10", "--max-question-words", "5"],
            "--max-question-words 5 is below --min-question-words 10",
        ),
        (["--max-chunks", "0"], "--max-chunks 0 must be a whole number >= 1 (leave it out"),
        (["--dedupe-threshold", "0.1"], "--dedupe-threshold 0.1 must be between 0.5 and 1.0"),
        (["--request-timeout-s", "0"], "--request-timeout-s 0.0 must be at least 0.001"),
        (["--round-trip-k", "0"], "--round-trip-k 0 must be a whole number >= 1"),
        (["--min-margin", "2"], "--min-margin 2.0 must be a number between -1.0 and 1.0"),
        (["--model", "hf:x"], "--model 'hf:x': questions come from 'ollama:MODEL'"),
    ],
)
def test_option_errors_name_the_flag_the_user_typed(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "x.jsonl"
    assert main(["generate-evalset", "--docs", str(docs), "-o", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"embedbench generate-evalset: {message}"), err
    for key in ("questions_per_chunk", "chunking.", "_chunk_", "question_words", "<flags>"):
        assert key not in err
    assert not out.exists()


# -- a server that does not answer in time -------------------------------------------------


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_an_openai_server_that_stalls_names_the_timeout_flag(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    with OpenAIChatServer(answerer=scripted_answerer()) as server:
        url = server.url
        server.script(*["hang:30"] * 20)  # every request waits longer than the client does
        started = time.monotonic()
        done = embedbench(
            "generate-evalset",
            "--docs",
            str(docs),
            "-o",
            str(out),
            "--model",
            "openai:qwen2.5-7b-instruct",
            "--host",
            server.url + "/v1",
            "--request-timeout-s",
            "0.3",
            "--no-progress",
        )
        requests = len(server.chat_requests)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(
        f"embedbench generate-evalset: the openai server at {url}/v1 did not answer "
        "within 0.3 s (3 tries): APITimeoutError. Fix: raise the timeout (--request-timeout-s "
        "SECONDS"
    ), line
    # it stops at the first chunk rather than wait as long for every one of the seven
    assert requests == 3 and time.monotonic() - started < 30
    assert not out.exists()


def test_an_ollama_server_that_accepts_and_never_answers_names_the_timeout_flag(
    docs: Path, tmp_path: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:  # connects, never answers
        port = listener.getsockname()[1]
        done = embedbench(
            "generate-evalset",
            "--docs",
            str(docs),
            "-o",
            str(tmp_path / "x.jsonl"),
            "--host",
            f"http://127.0.0.1:{port}",
            "--request-timeout-s",
            "0.3",
        )
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert (
        f"the ollama server at http://127.0.0.1:{port} did not answer within 0.3 s: ReadTimeout. "
        "Fix: raise the timeout (--request-timeout-s SECONDS"
    ) in line, line
    assert "Traceback" not in done.stderr


def test_min_margin_flag_takes_a_number_or_off() -> None:
    import argparse

    from pytest_embedbench.cli import generate
    from pytest_embedbench.cli.generate import _settings_from_flags
    from pytest_embedbench.cli.main import add_command

    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(), generate)

    def margin(*flags: str) -> float | None:
        args = parser.parse_args(["generate-evalset", "--embedding-model", "bm25", *flags])
        return _settings_from_flags(args).min_margin

    assert margin() == 0.02
    assert margin("--min-margin", "0.1") == 0.1
    assert margin("--min-margin", "off") is None
