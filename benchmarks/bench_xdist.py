"""Whole-process side by side: ``pytest examples`` in one process against ``-n 2`` (pytest-xdist
workers), with each worker's thread pools at its share of the CPUs (the default) and at one
thread per CPU (``OMP_NUM_THREADS`` set to the CPU count: what every worker did before the
plugin capped them).

Each figure is the wall time of a fresh ``python -m pytest examples -q -p no:cacheprovider``
process, from start to exit, with the examples' embedding cache warm (one untimed run first), so
the work is the same in all three: load the models, embed the queries, time them, score and
bootstrap. A round is (serial, capped, uncapped), in that order; the summary gives each xdist
variant against serial as the ratio of medians and the median paired ratio (against the mean of
the serial runs just before and after it).

Target: ``-n 2`` with the default cap no slower than 1.5x serial on a 2-core machine (the
examples' four models split over two workers, one of which gets MiniLM's long tests; the cap is
there so that xdist never costs what oversubscription did).

Usage::

    python benchmarks/bench_xdist.py [--rounds 3] [--json /tmp/xdist.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from sidebyside import ROOT, summarise  # noqa: E402

from pytest_embedbench.evaluation.measure import POOL_ENV_VARS, THREAD_ENV_VARS  # noqa: E402

TARGET = 1.5
COMMAND = [sys.executable, "-m", "pytest", "examples", "-q", "-p", "no:cacheprovider"]


def run(extra: list[str], threads: int | None) -> float:
    """Wall seconds of one pytest process; ``threads``: set the pools to that many per process."""
    # none of the variables set, else the workers would leave their pools alone (share_cores)
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV_VARS}
    if threads is not None:
        env.update(dict.fromkeys(POOL_ENV_VARS, str(threads)))
    t0 = time.perf_counter()
    done = subprocess.run(
        [*COMMAND, *extra], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(extra)} failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0))
    print(f"pytest examples: serial against -n 2; {args.rounds} rounds; {cpus} CPUs")
    run([], None)  # untimed: fills the examples' embedding cache
    serial: list[float] = []
    capped: list[float] = []
    uncapped: list[float] = []
    for r in range(1, args.rounds + 1):
        serial.append(run([], None))
        capped.append(run(["-n", "2"], None))
        uncapped.append(run(["-n", "2"], cpus))
        print(
            f"  round {r}: serial {serial[-1]:.1f} s, -n 2 capped {capped[-1]:.1f} s, "
            f"-n 2 with {cpus} threads per worker {uncapped[-1]:.1f} s"
        )
    serial.append(run([], None))  # closes the last pair
    figures = {
        "capped": summarise(
            serial, capped, TARGET, anchor="serial", mine="-n 2", row="-n 2 (capped) / serial"
        ),
        "uncapped": summarise(
            serial,
            uncapped,
            TARGET,
            anchor="serial",
            mine="-n 2",
            row=f"-n 2 ({cpus} threads per worker) / serial",
        ),
        "cpus": cpus,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
