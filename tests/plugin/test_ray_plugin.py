"""``--embedbench-ray=local`` in a real pytest run: MiniLM's document vectors are embedded by a
local Ray (two workers), the run passes, the cache it filled serves a later in-process run
without embedding anything, and the metrics equal an in-process run's on a fresh cache."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..raycluster import SKIP_REASON

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"

# batch_size 2: the six documents make three batches, so both Ray workers get work
CONFIG = f"""
datasets:
  tiny: {{path: data/tiny}}
models: [{MINILM}]
providers:
  all-MiniLM-L6-v2: {{batch_size: 2}}
"""

TEST = """
import pytest

@pytest.mark.embedbench(dataset="tiny")
def test_search(retrieval):
    assert retrieval.ndcg10 >= 0.5
"""


def close(a: Any, b: Any, path: str = "metrics") -> None:
    """``a`` equals ``b`` key by key, numbers to 1e-6."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            close(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, abs=1e-6, nan_ok=True), path
    else:
        assert a == b, path


@pytest.mark.slow  # 53-84 s on 2 cores: three pytest processes, a Ray start, five model loads
def test_ray_local_fills_the_cache_and_equals_in_process(project: pytest.Pytester) -> None:
    pytest.importorskip("ray", reason=SKIP_REASON)
    pytest.importorskip("ray.data", reason=SKIP_REASON)
    pytest.importorskip("sentence_transformers")
    project.makefile(".yaml", embedbench=CONFIG)
    project.makepyfile(test_ray=TEST)

    def run(name: str, *args: str) -> dict:
        # a subprocess: the Ray this run starts ends with it, not with the outer test process
        result = project.runpytest_subprocess("--embedbench-json", f"{name}.json", *args)
        result.assert_outcomes(passed=1)
        return json.loads((project.path / f"{name}.json").read_text())

    ray = run("ray", "--embedbench-ray=local", "--embedbench-cache-dir", "ray-cache")
    # a fresh cache, and the index build found every document in it: Ray embedded them all
    assert ray["cache"] == {"hits": 6, "misses": 0, "hit_rate": 1.0}
    again = run("again", "--embedbench-cache-dir", "ray-cache")  # in-process, no Ray
    assert again["cache"] == {"hits": 6, "misses": 0, "hit_rate": 1.0}
    plain = run("plain", "--embedbench-cache-dir", "plain-cache")  # in-process, fresh cache
    assert plain["cache"] == {"hits": 0, "misses": 6, "hit_rate": 0.0}

    def metrics(report: dict) -> dict:
        (test,) = report["tests"]
        assert test["model"] == "all-MiniLM-L6-v2"
        return test["result"]["metrics"]

    assert metrics(plain)["ndcg@10"]["value"] >= 0.5
    close(metrics(ray), metrics(plain))
    close(metrics(again), metrics(plain))
