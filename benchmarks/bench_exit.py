"""How long a pytest process takes to exit: ``pytest examples`` with the plugin's default (Python's
final garbage collection skipped) against ``--embedbench-exit-gc`` (kept, as without the plugin).

Each run is a fresh ``python -m pytest examples -q -p no:cacheprovider`` process with the
examples' embedding cache warm (one untimed run first). Its outside time is the process's wall
time minus the session time pytest prints (``13 passed in 25.90s``): interpreter start,
imports before the session, and the exit after it. Only the exit differs between the two
variants, so the difference of their outside times is what the skipped collection saves. A round
is (default, kept); the summary gives the medians and the median of the per-round differences.

Usage::

    python benchmarks/bench_exit.py [--rounds 3] [--json /tmp/exit.json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from sidebyside import ROOT  # noqa: E402

COMMAND = [sys.executable, "-m", "pytest", "examples", "-q", "-p", "no:cacheprovider"]
SESSION = re.compile(r" in ([0-9.]+)s")


def run(extra: list[str]) -> tuple[float, float]:
    """Wall seconds of one pytest process, and the seconds outside its session."""
    t0 = time.perf_counter()
    done = subprocess.run([*COMMAND, *extra], cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(extra)} failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}")
    found = SESSION.findall(done.stdout.strip().splitlines()[-1])
    if not found:
        sys.exit(f"no session time in pytest's last line: {done.stdout.strip()[-200:]!r}")
    return wall, wall - float(found[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    print(f"pytest examples: exit without and with the final collection; {args.rounds} rounds")
    run([])  # untimed: fills the examples' embedding cache
    runs: dict[str, list[tuple[float, float]]] = {"skipped": [], "kept": []}
    for r in range(1, args.rounds + 1):
        for name, extra in (("skipped", []), ("kept", ["--embedbench-exit-gc"])):
            runs[name].append(run(extra))
        (sw, so), (kw, ko) = runs["skipped"][-1], runs["kept"][-1]
        print(
            f"  round {r}: default {sw:.1f} s ({so:.2f} s outside the session), "
            f"--embedbench-exit-gc {kw:.1f} s ({ko:.2f} s outside)"
        )
    saved = [k[1] - s[1] for s, k in zip(runs["skipped"], runs["kept"], strict=True)]
    figures = {
        name: {
            "wall_s": statistics.median(w for w, _ in values),
            "outside_s": statistics.median(o for _, o in values),
        }
        for name, values in runs.items()
    }
    figures["saved_s"] = statistics.median(saved)
    print(
        f"default: {figures['skipped']['wall_s']:.1f} s, "
        f"{figures['skipped']['outside_s']:.2f} s outside; --embedbench-exit-gc: "
        f"{figures['kept']['wall_s']:.1f} s, {figures['kept']['outside_s']:.2f} s outside; "
        f"saved per run (median of rounds) {figures['saved_s']:.2f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
