"""What a summary reads of a run, as protocols: the run's options and its state (the pytest
layer's session is one), declared here so the summary needs nothing above it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from ...baseline import BaselineFile
    from ...evaluation.record import TestRecord

__all__ = ["RunOptions", "RunState"]


class RunOptions(Protocol):
    """The run options a summary reads (:class:`~config.options.Options` has them);
    declared here, so the reports import nothing of the options table, which imports the
    reports' column list."""

    @property
    def reference(self) -> str | None: ...
    @property
    def priority(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def bootstrap(self) -> int: ...
    @property
    def update_baseline(self) -> str | None: ...


class RunState(Protocol):
    """What a summary reads of a run: the session of the pytest layer is one
    (:class:`~plugin.session.EmbedBenchSession`), declared here so the outputs need
    nothing above them."""

    @property
    def options(self) -> RunOptions: ...
    @property
    def records(self) -> Mapping[str, TestRecord]: ...
    @property
    def collected(self) -> set[str]: ...
    @property
    def project_dir(self) -> Path: ...
    @property
    def baseline(self) -> BaselineFile: ...
    def baseline_key(self, nodeid: str) -> str: ...
    def not_recorded(self) -> list[str]: ...
