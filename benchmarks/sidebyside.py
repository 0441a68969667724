"""What the whole-process side-by-side benchmarks share (``bench_cold.py``, ``bench_ray.py``):
run a fresh Python process and time it, write a spec file, and summarise alternating rounds as
the ratio of medians and the median paired ratio (each of ours against the mean of the anchor
runs just before and after it, which cancels most of the drift of a shared machine)."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_process(code: str, spec_path: Path) -> tuple[float, dict]:
    """Wall time of a fresh ``python -c code spec`` process, and the JSON it printed last, with
    ``cpu_s`` (the process's user + system CPU seconds, all its threads: less moved by other
    processes than the wall time, though not immune), ``minor_faults`` (its minor page faults:
    a count, not a time, so load moves it little; it still varies ~5% between runs) and
    ``load`` (the 1-minute load average just before it started) added."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, str(spec_path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"benchmark process failed:\n{done.stderr[-4000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out.update(cpu_s=cpu, load=load, minor_faults=after.ru_minflt - before.ru_minflt)
    return wall, out


def write(path: Path, obj: dict) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def summarise(
    anchors: list[float],
    ours: list[float],
    target: float,
    *,
    anchor: str,
    mine: str,
    row: str,
    neighbours: list[tuple[float, float]] | None = None,
) -> dict:
    """The figures of ``len(ours)`` alternating rounds (``anchors`` has one more run, the one
    that closes the last pair), printed as one line ``row: anchor ... -> ratio``.
    ``neighbours``: the two anchor figures around each of ours, when the runs did not simply
    alternate (default: ``anchors[i], anchors[i + 1]`` around ``ours[i]``)."""
    if neighbours is None:
        # the anchor runs just before and after each of ours
        neighbours = [(anchors[i], anchors[i + 1]) for i in range(len(ours))]
    paired = [o / statistics.mean(pair) for o, pair in zip(ours, neighbours, strict=True)]
    ratio = statistics.median(ours) / statistics.median(anchors)
    print(
        f"{row}: {anchor} {statistics.median(anchors):.1f} s, {mine} "
        f"{statistics.median(ours):.1f} s -> {ratio:.3f}x "
        f"(paired {statistics.median(paired):.3f}x; target <= {target}x)"
    )
    return {
        "anchor_s": anchors,
        "ours_s": ours,
        "anchor_median_s": statistics.median(anchors),
        "ours_median_s": statistics.median(ours),
        "ratio_of_medians": ratio,
        "paired_ratio_median": statistics.median(paired),
        "paired_ratios": paired,
        "target": target,
    }
