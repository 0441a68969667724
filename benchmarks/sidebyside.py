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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from pytest_embedbench.evaluation.measure import POOL_ENV_VARS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _command(code: str, spec_path: Path) -> list[str]:
    """The command line of one benchmark process: ``python -c code spec``."""
    return [sys.executable, "-c", code, str(spec_path)]


def run_process(code: str, spec_path: Path) -> tuple[float, dict]:
    """Wall time of a fresh ``python -c code spec`` process, and the JSON it printed last, with
    ``cpu_s`` (the process's user + system CPU seconds, all its threads: less moved by other
    processes than the wall time, though not immune; ``user_s`` and ``system_s`` apart, the
    kernel's share being mostly page faults), ``minor_faults`` (its minor page faults:
    a count, not a time, so load moves it little; it still varies ~5% between runs) and
    ``load`` (the 1-minute load average just before it started) added."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        _command(code, spec_path), capture_output=True, text=True, check=False, cwd=ROOT
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"benchmark process failed:\n{done.stderr[-4000:]}")
    return wall, _figures(
        done.stdout,
        load,
        after.ru_utime - before.ru_utime,
        after.ru_stime - before.ru_stime,
        after.ru_minflt - before.ru_minflt,
    )


def _figures(stdout: str, load: float, user: float, system: float, faults: int) -> dict:
    """The JSON a benchmark process printed last, with its CPU seconds (``cpu_s``, ``user_s``,
    ``system_s``), ``minor_faults`` and the ``load`` before it started added."""
    out = json.loads(stdout.strip().splitlines()[-1])
    out.update(cpu_s=user + system, user_s=user, system_s=system, load=load, minor_faults=faults)
    return out


#: the thread pools a concurrent run limits to one thread per process
ONE_THREAD = dict.fromkeys(POOL_ENV_VARS, "1")


def run_concurrent(jobs: list[tuple[str, Path, int]]) -> list[tuple[float, dict]]:
    """Several fresh ``python -c code spec`` processes at the same time, each pinned to its own
    CPU (``(code, spec, cpu)``) with one thread: whatever slows the machine meanwhile (other
    tenants, the host's clock) slows them alike, so their ratio is far steadier than that of
    runs one after the other. Each gets its own wall time and its own ``getrusage`` figures
    (``cpu_s``, ``user_s``, ``system_s``, ``minor_faults``), in the order of ``jobs``."""
    if len({cpu for _, _, cpu in jobs}) != len(jobs):
        sys.exit("run_concurrent: give each process its own CPU")
    usable = os.sched_getaffinity(0)
    missing = {cpu for _, _, cpu in jobs} - usable
    if missing:
        sys.exit(f"run_concurrent: CPUs {sorted(missing)} are not usable here ({sorted(usable)})")
    load = os.getloadavg()[0]
    env = {**os.environ, **ONE_THREAD}
    # the Popen objects stay referenced: one collected early could reap its child before wait4
    started: dict[int, tuple[int, Path, float, subprocess.Popen]] = {}
    for i, (code, spec_path, cpu) in enumerate(jobs):
        # output to files beside the spec, never a pipe a child could fill while it waits
        with (
            spec_path.with_suffix(".out").open("w") as out_fh,
            spec_path.with_suffix(".err").open("w") as err_fh,
        ):
            proc = subprocess.Popen(
                _command(code, spec_path),
                stdout=out_fh,
                stderr=err_fh,
                cwd=ROOT,
                env=env,
                preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu}),  # noqa: PLW1509
            )
        started[proc.pid] = (i, spec_path, time.perf_counter(), proc)
    results: list[tuple[float, dict] | None] = [None] * len(jobs)
    while started:
        pid, status, usage = os.wait4(-1, 0)  # each child's own rusage, as it exits
        if pid not in started:
            continue
        i, spec_path, t0, proc = started.pop(pid)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if proc.returncode != 0:
            err = spec_path.with_suffix(".err").read_text(errors="replace")
            sys.exit(f"benchmark process failed:\n{err[-4000:]}")
        stdout = spec_path.with_suffix(".out").read_text()
        results[i] = (
            wall,
            _figures(stdout, load, usage.ru_utime, usage.ru_stime, usage.ru_minflt),
        )
    return [r for r in results if r is not None]


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
