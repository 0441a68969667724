"""The LLM judge with a real small model (SmolLM2-135M under llama-cpp-python's server) on a
dataset whose qrels lost a seeded half of each query's judgments: the judgments file is written,
the report gives judged@10 before and after, metrics with LLM grades beside the official ones
and kappa on the human pairs (low, honestly: so small a model grades poorly), and a second run
sends the server no request (counted at a loopback proxy in front of it) and gives the same
JSON figures."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ..plugin.conftest import BENCH, set_ini, thinned_dataset, write_tiny
from .conftest import LocalLLM

pytestmark = [pytest.mark.llm, pytest.mark.slow]


class CountingProxy:
    """A loopback HTTP proxy in front of the model's server that counts the chat requests it
    forwards (what the server was asked), stopped when the test ends."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.chat_requests = 0
        #: (request body, status, answer body) of every chat request forwarded, in order
        self.exchanges: list[tuple[bytes, int, bytes]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.path.rstrip("/").endswith("/chat/completions"):
                    proxy.chat_requests += 1
                origin = proxy.upstream.rsplit("/v1", 1)[0]
                request = urllib.request.Request(
                    origin + self.path,
                    data=body,
                    method=method,
                    headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
                )
                try:
                    with urllib.request.urlopen(request, timeout=300) as answer:
                        status, data = answer.status, answer.read()
                except urllib.error.HTTPError as exc:
                    status, data = exc.code, exc.read()
                if self.path.rstrip("/").endswith("/chat/completions"):
                    proxy.exchanges.append((body or b"", status, data))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> CountingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def proxy(local_llm: LocalLLM) -> Iterator[CountingProxy]:
    with CountingProxy(local_llm.base_url) as found:
        yield found


def test_a_real_judge_fills_the_holes_and_a_rerun_asks_nothing(
    pytester: pytest.Pytester, local_llm: LocalLLM, proxy: CountingProxy
) -> None:
    write_tiny(pytester)
    # 2 queries: about 20 requests, each seconds long for a CPU-served model
    thinned_dataset(pytester.path / "data" / "thin", n_queries=2)
    judge = {
        "model": local_llm.spec,
        "base_url": proxy.base_url,
        "depth": 10,
        "agreement_sample": 4,
        "seed": 3,
        "max_tokens": 8,
    }
    pytester.makefile(
        ".yaml",
        embedbench="datasets:\n  thin: {path: data/thin}\njudge: " + json.dumps(judge) + "\n",
    )
    set_ini(pytester)
    pytester.makepyfile(test_thin=BENCH.format(extra="", body="pass"))
    first = pytester.runpytest_subprocess("--embedbench-json=r1.json")
    first.assert_outcomes(passed=1)
    asked = proxy.chat_requests
    one = json.loads((pytester.path / "r1.json").read_text())["tests"][0]["result"]
    judge_data = one["judge"]
    assert asked == judge_data["requests"] > 0
    file = pytester.path / "data" / "thin" / "judgments.tsv"
    lines = [line for line in file.read_text().splitlines() if not line.startswith("#")]
    assert len(lines) == judge_data["asked"] > 0
    assert {line.split("\t")[4] for line in lines} == {local_llm.spec}
    # before and after, the metrics with LLM grades beside the official ones, kappa
    assert judge_data["judged_before"] < 0.9
    assert judge_data["judged_after"] >= judge_data["judged_before"]
    assert judge_data["llm_grades"] > 0
    assert set(judge_data["metrics"]) >= {"ndcg@10", "judged@10"}
    agreement = judge_data["agreement"]
    assert agreement["pairs"] > 0 and sum(agreement["confusion"].values()) == agreement["pairs"]
    first.stdout.fnmatch_lines(
        [
            "*LLM judge openai:smollm2: judged@10 0.* -> *; ndcg@10 * (human) / * (human + * "
            "LLM grades); kappa * binary, * graded on * human pairs*"
        ]
    )
    if agreement["kappa_binary"] is None or agreement["kappa_binary"] < 0.4:
        first.stdout.fnmatch_lines(["*low agreement, do not trust these grades on this data*"])
    # the second run: no request reaches the server, the same figures
    second = pytester.runpytest_subprocess("--embedbench-json=r2.json")
    second.assert_outcomes(passed=1)
    assert proxy.chat_requests == asked
    two = json.loads((pytester.path / "r2.json").read_text())["tests"][0]["result"]
    assert two["judge"]["requests"] == 0 and two["judge"]["replayed"] == judge_data["asked"]
    for key in ("metrics", "agreement", "judged_before", "judged_after", "llm_grades"):
        assert json.dumps(two["judge"][key], sort_keys=True) == json.dumps(
            judge_data[key], sort_keys=True
        )
    assert json.dumps(two["metrics"], sort_keys=True) == json.dumps(one["metrics"], sort_keys=True)
