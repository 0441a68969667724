"""The ``embedbench`` console command."""

from __future__ import annotations

import json
import subprocess
import sys

from pytest_embedbench.cli import main
from pytest_embedbench.config.options import CSV_FILES

from ..helpers import run_module


def test_providers_table(capsys) -> None:
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    for name in ("bedrock", "bm25", "cohere", "hf", "hybrid", "ollama", "openai", "voyage"):
        assert f"\n{name} " in out
    assert "OPENAI_API_KEY" in out and "COHERE_API_KEY" in out and "VOYAGE_API_KEY" in out
    assert "List prices in USD per million tokens, as read on 20" in out
    assert "openai:text-embedding-3-small" in out and "0.020" in out


def test_providers_json_through_the_console_script() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_embedbench.cli", "providers", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(proc.stdout)
    providers = {p["provider"]: p for p in data["providers"]}
    assert providers["voyage"]["key_variables"] == ["VOYAGE_API_KEY"]
    assert providers["openai"]["install"] == "pip install 'pytest-embedbench[openai]'"
    assert providers["bm25"]["kind"] == "ranking"
    models = {(m["provider"], m["model"]): m for m in data["models"]}
    e5 = models[("hf", "intfloat/e5-small-v2")]
    assert (e5["query_prompt"], e5["document_prompt"]) == ("query: ", "passage: ")
    gemma = models[("ollama", "embeddinggemma")]
    assert gemma["query_prompt"] == "task: search result | query: "
    assert gemma["document_prompt"] == "title: none | text: "
    assert models[("openai", "text-embedding-3-large")]["price_per_1m_tokens"] == 0.13
    assert data["prices_as_of"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_module("pytest_embedbench.cli", *args)


def test_version_comes_from_the_package_metadata() -> None:
    from importlib import metadata

    proc = _cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        == f"embedbench (pytest-embedbench) {metadata.version('pytest-embedbench')}"
    )


def test_help_lists_every_command_with_its_help() -> None:
    proc = _cli("--help")
    assert proc.returncode == 0
    assert "list providers, extras, key variables and list prices" in proc.stdout
    assert "print the comparison table of a saved JSON report" in proc.stdout
    assert "--version" in proc.stdout


def _saved_report(tmp_path):  # type: ignore[no-untyped-def]
    """A saved JSON report of one bm25 test on a four-query dataset."""
    metrics = {"ndcg@10": {"value": 0.5, "low": 0.4, "high": 0.6, "n": 4}}
    test = {
        "nodeid": "t.py::test[bm25]",
        "test": "test",
        "model": "bm25",
        "dataset": "tiny",
        "status": "passed",
        "error": None,
        "result": {"metrics": metrics, "queries": 4, "documents": 6},
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": 1, "tests": [test]}))
    return path


def test_report_prints_the_table_of_a_saved_report(tmp_path, capsys) -> None:
    path = _saved_report(tmp_path)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "dataset 'tiny' (4 queries, 6 documents)" in out
    assert "bm25" in out and "0.5000 [0.400, 0.600]" in out
    missing = _cli("report", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "none.json: no such file" in missing.stderr


def test_report_renders_html_csv_and_markdown(tmp_path, capsys) -> None:
    path = _saved_report(tmp_path)
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    args = ["report", str(path), "-o", str(html), "--csv", str(tmp_path), "--md", str(md)]
    assert main([*args, "--title", "Nightly <run>"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"HTML report: {html}",
        *(f"CSV: {tmp_path / name}" for name in CSV_FILES),
        f"Markdown: {md}",
    ]
    assert "<title>Nightly &lt;run&gt;</title>" in html.read_text()
    assert "| bm25 | 0.5000 [0.400, 0.600] |" in md.read_text()
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert main(["report", str(path), "-o", str(blocked / "x.html")]) == 1
    assert "the HTML report" in capsys.readouterr().err


def test_report_never_writes_over_the_report_it_reads(tmp_path, capsys) -> None:
    path = _saved_report(tmp_path)
    before = path.read_bytes()
    for extra in (["-o", str(path)], ["--md", str(tmp_path / "." / "r.json")]):
        assert main(["report", str(path), *extra]) == 2
        err = capsys.readouterr().err
        assert f"is also the report it reads ({path}): writing it would overwrite" in err
        assert path.read_bytes() == before
    same = str(tmp_path / "out.txt")
    assert main(["report", str(path), "-o", same, "--md", same]) == 2
    assert f"--md {same} is also -o {same}" in capsys.readouterr().err
    assert not (tmp_path / "out.txt").exists()


def test_embed_options_are_the_ray_settings_by_name(monkeypatch, capsys) -> None:
    """``embedbench embed`` hands its options to RaySettings field by field (``--ray`` is the
    address); the run itself needs Ray (tests/unit/test_distributed.py)."""
    from pytest_embedbench.cli import embed
    from pytest_embedbench.distributed.settings import RaySettings

    seen: list[RaySettings] = []

    def fake_embed(model, dataset, *, settings, **kwargs):
        seen.append(settings)
        raise ValueError("stop here")

    monkeypatch.setattr(embed, "embed_dataset", fake_embed)
    argv = ["embed", "--ray", "ray://h:1", "-m", "hashing:h", "-d", "data", "-q"]
    assert main(argv) == 2
    assert main([*argv, "--workers", "8", "--cpus-per-worker", "2", "--gpus-per-worker", "0.5",
                 "--batch-size", "7", "--max-restarts", "1", "--max-task-retries", "2",
                 "--local-cpus", "3"]) == 2  # fmt: skip
    assert seen == [
        RaySettings(address="ray://h:1"),
        RaySettings("ray://h:1", 8, 2.0, 0.5, 7, max_restarts=1, max_task_retries=2, local_cpus=3),
    ]
    assert capsys.readouterr().err.count("embedbench embed: stop here") == 2
