"""Hosted and server providers through the plugin, against loopback servers: the table, skips
for missing keys, and no key anywhere in the output, the report or the log."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pytest_embedbench.report.writers.tabular import CSV_FILES

from ..helpers import run_module
from .conftest import KEYS
from .servers import OllamaServer, OpenAIServer

REPO = Path(__file__).resolve().parents[2]

CORPUS = {
    "d1": "Reset your password from the login page.",
    "d2": "Invoices are emailed every month as PDF.",
    "d3": "Export workspace data as CSV from settings.",
    "d4": "Change the card used for billing payments.",
}
QUERIES = {"q1": "reset password login", "q2": "export data csv", "q3": "monthly invoices pdf"}


def write_project(root: Path, openai: OpenAIServer, ollama: OllamaServer) -> None:
    data = root / "data" / "tiny"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in CORPUS.items())
    )
    (data / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items())
    )
    (data / "qrels" / "test.tsv").write_text("q1\td1\t1\nq2\td3\t1\nq3\td2\t1\n")
    (root / "embedbench.yaml").write_text(
        f"""
datasets:
  tiny: {{path: data/tiny}}
models:
  - {{spec: "openai:text-embedding-3-small", name: openai-small}}
  - {{spec: "ollama:nomic-embed-text", name: nomic}}
  - {{spec: "cohere:embed-english-v3.0", name: cohere}}
  - bm25
providers:
  openai: {{base_url: "{openai.url}/v1"}}
  ollama: {{host: "{ollama.url}"}}
"""
    )
    (root / "test_search.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.embedbench(dataset='tiny')\n"
        "def test_search(retrieval):\n"
        "    assert retrieval.ndcg10 >= 0.3\n"
    )
    (root / "pytest.ini").write_text("[pytest]\n")


def run(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run_module("pytest", "-p", "no:cacheprovider", *args, cwd=root, env=env, timeout=600)


@pytest.mark.parametrize(
    "mode",
    [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)],
)
def test_providers_through_the_plugin_and_no_key_leaks(tmp_path: Path, mode: list[str]) -> None:
    with OpenAIServer(dim=32) as openai, OllamaServer(dim=32) as ollama:
        write_project(tmp_path, openai, ollama)  # type: ignore[arg-type]
        env = {**os.environ, "OPENAI_API_KEY": KEYS["OPENAI_API_KEY"]}
        env["EMBEDBENCH_CACHE_DIR"] = str(tmp_path / "cache")
        proc = run(
            tmp_path,
            "-rs",
            "--embedbench-json",
            "report.json",
            "--log-file",
            "run.log",
            "--log-file-level",
            "DEBUG",
            *mode,
            env=env,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        out = proc.stdout + proc.stderr
        assert "3 passed, 1 skipped" in out
        assert "COHERE_API_KEY" in out  # the skip reason names the variable
        table = out.split("= embedbench =")[1]
        for name in ("openai-small", "nomic", "bm25"):
            assert any(line.startswith(name + " ") for line in table.splitlines()), name
        assert any(line.startswith("cohere ") and "skipped" in line for line in table.splitlines())
        # the key was really sent, and never written anywhere
        assert any(
            r.headers.get("authorization") == f"Bearer {KEYS['OPENAI_API_KEY']}"
            for r in openai.requests
        )
        assert ollama.embed_calls > 0
        secret = KEYS["OPENAI_API_KEY"]
        report = (tmp_path / "report.json").read_text()
        log = (tmp_path / "run.log").read_text()
        assert secret not in out and secret not in report and secret not in log
        data = json.loads(report)
        models = {t["model"]: t for t in data["tests"]}
        assert models["cohere"]["status"] == "skipped"
        assert models["nomic"]["result"]["peak_rss_mb"] > 0
        assert models["openai-small"]["result"]["cost"]["price_per_1m_tokens"] == 0.02


@pytest.mark.slow
def test_examples_with_an_openai_compatible_server(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    with OpenAIServer(dim=64) as openai:
        env = {
            **os.environ,
            "OPENAI_API_KEY": KEYS["OPENAI_API_KEY"],
            "OPENAI_BASE_URL": f"{openai.url}/v1",  # type: ignore[attr-defined]
            "EMBEDBENCH_CACHE_DIR": str(tmp_path / "cache"),
        }
        proc = run(
            REPO,
            "examples",
            "-k",
            "test_support_search",
            "--embedbench-models",
            "openai:text-embedding-3-small,bm25",
            env=env,
        )
        out = proc.stdout + proc.stderr
        table = out.split("= embedbench =")[1]
        row = next(line for line in table.splitlines() if line.startswith("text-embedding-3-small"))
        assert "0." in row  # metrics were computed from the server's vectors
        assert openai.embed_calls > 0  # type: ignore[attr-defined]
        assert KEYS["OPENAI_API_KEY"] not in out


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_a_password_in_a_base_url_is_in_no_report_or_baseline(tmp_path: Path) -> None:
    """A base_url with user info (``http://admin:PW@host/v1``) works, and the password is
    masked in the JSON, HTML, CSV and Markdown reports and in the baseline file."""
    with OpenAIServer(dim=32) as openai:
        write_project(tmp_path, openai, openai)  # type: ignore[arg-type]
        with_password = openai.url.replace("http://", "http://admin:hunter2pw@")
        yaml = (tmp_path / "embedbench.yaml").read_text()
        yaml = yaml.replace(f'base_url: "{openai.url}/v1"', f'base_url: "{with_password}/v1"')
        yaml = yaml.replace(
            "models:\n", 'models:\n  - {spec: "openai:text-embedding-3-small", name: only}\n', 1
        )
        (tmp_path / "embedbench.yaml").write_text(yaml)
        env = {**os.environ, "OPENAI_API_KEY": KEYS["OPENAI_API_KEY"]}
        env["EMBEDBENCH_CACHE_DIR"] = str(tmp_path / "cache")
        outputs = ["--embedbench-json", "r.json", "--embedbench-html", "r.html"]
        outputs += ["--embedbench-csv", "csv", "--embedbench-md", "r.md"]
        proc = run(tmp_path, "-k", "only", "--embedbench-update-baseline", *outputs, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert openai.requests, "the server was never called"
    report = json.loads((tmp_path / "r.json").read_text())
    (test,) = report["tests"]
    assert test["settings"]["options"]["base_url"] == (
        with_password.replace("admin:hunter2pw", "***") + "/v1"
    )
    written = [tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.md"]
    written += sorted((tmp_path / "csv").glob("*.csv"))
    written += sorted((tmp_path / ".embedbench").glob("*.json"))
    assert len(written) == 4 + len(CSV_FILES), written  # every CSV file, the baseline
    for path in written:
        text = path.read_text()
        assert "hunter2pw" not in text, path
    assert "hunter2pw" not in proc.stdout + proc.stderr
