"""``--embedbench-ray=local`` in a real pytest run: MiniLM's document vectors are embedded by a
local Ray (one worker, batches of three, set with the ``--embedbench-ray-*`` options), the
run passes, the cache it filled serves a later in-process run
without embedding anything, and the metrics equal an in-process run's on a fresh cache."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from ..raycluster import SKIP_REASON

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


def _installed(package: str, submodule: str | None = None) -> bool:
    """Whether ``package`` (and its ``submodule`` folder) is installed, without importing it.

    Not ``pytest.importorskip`` inside the test: ``pytester`` restores ``sys.modules`` when the
    test ends, so ``ray.data`` imported there is dropped, and the next in-process import
    defines its Arrow tensor types again while pyarrow keeps the first ones registered; every
    later Ray Data call in this process then fails ("Casting from 'extension<ray.data.
    arrow_tensor_v2...>' to different extension type ... not permitted")."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        return False
    folders = spec.submodule_search_locations or []
    return submodule is None or any((Path(f) / submodule).is_dir() for f in folders)


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
@pytest.mark.skipif(not _installed("ray", "data"), reason=SKIP_REASON)
@pytest.mark.skipif(
    not _installed("sentence_transformers"), reason="sentence-transformers is not installed"
)
def test_ray_local_fills_the_cache_and_equals_in_process(project: pytest.Pytester) -> None:
    project.makefile(".yaml", embedbench=CONFIG)
    project.makepyfile(test_ray=TEST)

    def run(name: str, *args: str) -> dict:
        # a subprocess: the Ray this run starts ends with it, not with the outer test process
        result = project.runpytest_subprocess("--embedbench-json", f"{name}.json", *args)
        result.assert_outcomes(passed=1)
        return json.loads((project.path / f"{name}.json").read_text())

    # one worker, batches of 3 (two batches): the --embedbench-ray-* options reach Ray
    ray = run(
        "ray",
        "--embedbench-ray=local",
        "--embedbench-ray-workers=1",
        "--embedbench-ray-batch-size=3",
        "--embedbench-cache-dir",
        "ray-cache",
    )
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
