"""The progress bar of the ``embedbench`` subcommands on stderr (``embedbench embed``,
``embedbench generate-evalset``): each caller passes its own line and its done/total counts.

On a terminal the line is rewritten in place (``\\r\\033[K``); otherwise (CI logs) a line is
printed each time another tenth of the way is reached. :meth:`StderrProgress.done` ends the
rewritten line with a newline, once."""

from __future__ import annotations

import sys

from .text import inert

__all__ = ["StderrProgress"]


class StderrProgress:
    """One progress line on stderr; ``enabled=False`` shows nothing."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.shown = False
        self.last_tenth = -1

    def show(self, line: str, done: int, total: int) -> None:
        """Show ``line``, ``done`` of ``total`` of the way."""
        if not self.enabled:
            return
        line = inert(line, keep="")  # its words may quote the user's data or a server's
        if self.tty:
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
            self.shown = True
            return
        tenth = 10 * done // max(total, 1)
        if tenth != self.last_tenth:
            self.last_tenth = tenth
            print(line, file=sys.stderr, flush=True)

    def done(self) -> None:
        """End a line rewritten in place (nothing when none was shown)."""
        if self.shown:
            print(file=sys.stderr)
            self.shown = False
