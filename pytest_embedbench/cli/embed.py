"""``embedbench embed --ray ADDRESS --model SPEC --dataset PATH``: fill the embedding cache
with a model's document vectors through Ray, ahead of a test run (a nightly job).

Usage::

    embedbench embed --ray auto --model hf:MODEL --dataset corpus/ --workers 8 --gpus-per-worker 1
    embedbench embed --ray local --model hf:MODEL --dataset ../shared/data/scifact --local-cpus 2
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields
from pathlib import Path

from ..core.exceptions import EmbedBenchError, ProviderError
from ..core.progress import StderrProgress
from ..core.text import print_inert
from ..distributed.engine import embed_dataset
from ..distributed.settings import RaySettings

__all__ = ["add_arguments", "run"]

#: the command, its line in embedbench --help, and its description
NAME = "embed"
HELP = "fill the embedding cache with a model's document vectors, through Ray"
DESCRIPTION = (
    "Embed a dataset's uncached documents with one model on a Ray cluster (one model copy per "
    "worker) and store them in the embedding cache, so the test run that follows is a cache "
    "hit. Hosted providers are refused: Ray gains little for them."
)


def add_arguments(embed: argparse.ArgumentParser) -> None:
    """The options of ``embedbench embed``."""
    # the Ray options are RaySettings' fields by name (--ray is its address)
    embed.add_argument(
        "--ray",
        required=True,
        dest="address",
        metavar="ADDRESS",
        help="'auto' (this machine's cluster), 'ray://HOST:PORT', or 'local' (start one here)",
    )
    embed.add_argument("--model", "-m", required=True, help="a model spec, e.g. hf:MODEL")
    embed.add_argument("--dataset", "-d", required=True, help="a dataset path (BEIR, eval set)")
    embed.add_argument("--split", default="test")
    embed.add_argument("--workers", type=int, default=2, help="Ray actors (default 2)")
    embed.add_argument("--cpus-per-worker", type=float, default=1.0, help="default 1")
    embed.add_argument("--gpus-per-worker", type=float, default=0.0, help="default 0")
    embed.add_argument("--batch-size", type=int, help="texts per batch (default: the model's)")
    embed.add_argument("--max-restarts", type=int, default=3, help="of a dead worker (default 3)")
    embed.add_argument("--max-task-retries", type=int, default=3, help="of a batch (default 3)")
    embed.add_argument("--local-cpus", type=int, help="CPUs of a 'local' Ray (default: all)")
    embed.add_argument("--cache", metavar="DIR", help="cache folder (default: the usual one)")
    embed.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


class _Bar(StderrProgress):
    """Documents done on stderr, fed by the batches as they come back from the workers
    (:class:`~pytest_embedbench.progressbar.StderrProgress`)."""

    def __init__(self, label: str, *, enabled: bool) -> None:
        super().__init__(enabled=enabled)
        self.label = label
        self.started = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * done // max(total, 1)
        elapsed = time.perf_counter() - self.started
        line = (
            f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} "
            f"documents, {elapsed:.0f} s"
        )
        self.show(line, done, total)


def run(args: argparse.Namespace) -> int:
    """``embedbench embed``: 0 when every document is in the cache, 1 when the provider
    failed, 2 for a bad argument (or a hosted provider)."""
    bar = _Bar(f"embed {args.model}", enabled=not args.quiet)
    ray_before = sys.modules.get("ray")
    was_running = ray_before is not None and ray_before.is_initialized()
    try:
        settings = RaySettings(**{f.name: getattr(args, f.name) for f in fields(RaySettings)})
        report = embed_dataset(
            args.model,
            args.dataset,
            cache=Path(args.cache) if args.cache else True,
            settings=settings,
            split=args.split,
            progress=bar,
        )
    except ProviderError as exc:
        bar.done()
        print_inert(f"embedbench embed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except (EmbedBenchError, ValueError) as exc:
        bar.done()
        print_inert(f"embedbench embed: {exc}", file=sys.stderr)
        return 2
    finally:
        ray = sys.modules.get("ray")
        if ray is not None and not was_running and ray.is_initialized():
            ray.shutdown()  # a Ray this command connected to or started
    bar.done()
    print_inert(report.line())
    return 0
