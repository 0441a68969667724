"""``evalset: {generate: ...}`` in embedbench.yaml, as a user runs it: the first run generates
the set beside the file (through the real ollama client and a loopback chat server), the next
reuses it, and a changed document fails collection with the command that regenerates it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..providers.servers import OllamaChatServer
from ..unit.test_generate import DOCS, scripted_answerer

TEST = """
import pytest

@pytest.mark.embedbench(dataset="handbook", models=["bm25"])
def test_search(retrieval):
    assert retrieval.recall(10) >= 0.5
"""


@pytest.fixture
def chat() -> Iterator[OllamaChatServer]:
    with OllamaChatServer(answerer=scripted_answerer()) as server:
        yield server


def _handbook_project(project: pytest.Pytester, chat: OllamaChatServer) -> Path:
    """The handbook documents, an embedbench.yaml that generates their eval set through
    ``chat``, and the test; the documents folder."""
    docs = project.path / "handbook"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    project.makefile(
        ".yaml",
        embedbench="datasets:\n"
        "  handbook:\n"
        "    path: handbook\n"
        f"    evalset: {{generate: {{host: '{chat.url}', request_timeout_s: 5}}}}\n",
    )
    project.makepyfile(test_handbook=TEST)
    return docs


def test_generated_once_reused_then_stale(
    project: pytest.Pytester, chat: OllamaChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("bm25s")
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    docs = _handbook_project(project, chat)
    first = project.runpytest("-p", "no:cacheprovider")
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(["*dataset 'handbook' (* queries, 7 documents)*"])
    assert (project.path / "handbook.generated.jsonl").is_file()
    # the run says what it wrote, what it kept and rejected, and that a person should review it
    first.stdout.fnmatch_lines(
        [
            "embedbench: generated the eval set of dataset 'handbook'*"
            f"{project.path / 'handbook.generated.jsonl'}",
            "  kept * of * question(s) returned*the filters rejected*",
            "  review handbook.generated.jsonl before you trust it*",
        ]
    )
    calls = len(chat.chat_requests)

    again = project.runpytest("-p", "no:cacheprovider")
    assert again.ret == 0 and len(chat.chat_requests) == calls  # reused, nothing asked
    assert "generated the eval set" not in again.stdout.str()  # said once, when written

    (docs / "c-refunds.md").write_text("Refunds are never given, whatever the plan.\n")
    stale = project.runpytest("-p", "no:cacheprovider")
    assert stale.ret != 0
    stale.stdout.fnmatch_lines(
        [
            "*generated eval set is stale: 1 document(s) changed ('c-refunds.md')*"
            "embedbench generate-evalset --config*--dataset handbook --regenerate*"
        ]
    )
    assert len(chat.chat_requests) == calls  # never regenerated behind the user's back


@pytest.mark.parametrize(
    ("dataset", "generate", "key", "escaped"),
    [
        ("../escaped", "{}", "datasets: name '../escaped' would choose a path", "escaped"),
        ("handbook", "{output: ../out.jsonl}", "datasets.handbook.evalset.generate.output", "out"),
    ],
    ids=["name", "output"],
)
def test_a_configured_name_never_writes_outside_the_config_folder(
    project: pytest.Pytester,
    chat: OllamaChatServer,
    monkeypatch: pytest.MonkeyPatch,
    dataset: str,
    generate: str,
    key: str,
    escaped: str,
) -> None:
    """Issue 28 item 3: a dataset named ``../../../x`` with ``evalset: {generate: ...}`` wrote
    ``x.generated.jsonl`` and its ``.meta.json`` three folders above embedbench.yaml. Names
    from the configuration (and ``output``) stay in the configuration's folder."""
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    sub = project.path / "sub"
    docs = sub / "handbook"
    docs.mkdir(parents=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    settings = generate.replace("{", f"{{host: '{chat.url}', request_timeout_s: 5, ", 1)
    (sub / "embedbench.yaml").write_text(
        f"datasets:\n  {dataset!r}:\n    path: handbook\n    evalset: {{generate: {settings}}}\n"
    )
    (sub / "test_handbook.py").write_text(TEST.replace('"handbook"', repr(dataset)))
    result = project.runpytest("sub", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()  # a collection error
    result.stdout.fnmatch_lines([f"*sub/embedbench.yaml: {key}*"])
    assert "outside" in result.stdout.str() or "plain name" in result.stdout.str()
    written = sorted(p.name for p in project.path.rglob(f"{escaped}*"))
    assert written == [], written  # nothing above sub/, not even the lock
    assert not chat.chat_requests  # refused before a question was asked


@pytest.mark.slow  # about 30 s: two xdist workers and a chat server
def test_a_set_generated_on_an_xdist_worker_is_said_by_the_controller(
    project: pytest.Pytester, chat: OllamaChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under xdist the workers read embedbench.yaml, so the one that generated the set sends
    what it wrote to the controller, which prints it once."""
    pytest.importorskip("bm25s")
    pytest.importorskip("xdist")
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    _handbook_project(project, chat)
    run = project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert run.ret == 0, run.stdout.str()
    out = run.stdout.str()
    assert out.count("embedbench: generated the eval set of dataset 'handbook'") == 1, out
    run.stdout.fnmatch_lines(["  review handbook.generated.jsonl before you trust it*"])
