"""The run's baseline file at work: each test's thresholds and gate, the entries written at the end.

:class:`Gatekeeper` holds the baseline file an
:class:`~plugin.session.EmbedBenchSession` gates against and the folder its entry keys
are relative to; the session keeps one and hands it the records. Usable without pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..baseline import DEFAULT_BASELINE, BaselineFile, check_thresholds, entry_from_record, gate
from ..config.project import Options, find_config
from ..core.exceptions import EmbedBenchError
from ..data.datasets import RetrievalDataset
from ..evaluation.evaluate import RetrievalResult
from ..evaluation.record import TestRecord
from ..report.artifacts import write_failure
from .cases import Case

__all__ = ["Gatekeeper", "project_folder"]


def project_folder(
    *,
    rootpath: Path,
    rootdir_given: bool,
    inipath: Path | None,
    config: Path | None,
    args: Iterable[str],
    start: Path,
) -> Path:
    """The folder the default baseline (``.embedbench/baseline.json``) lives in and its entry
    keys are relative to: pytest's rootdir (``rootpath``) where it is a project's (given by
    ``--rootdir``, ``rootdir_given``, or the folder of the ini file ``inipath``), else the
    folder of embedbench.yaml (``config``, the one ``--embedbench-config`` names, or the nearest
    to the first of the command line's paths ``args``, relative to the ``start`` folder), else
    the rootdir, never a system folder.

    Without an ini file pytest's rootdir follows the folder it starts in, so ``pytest myproj``
    from the parent folder must not look for the baseline in the parent. An ini path that is not
    a regular file (``-c /dev/null``, the usual way to run without ini files) holds no project:
    its folder (``/dev``) is never the project's, even where an older pytest roots there.
    """
    if rootdir_given:  # the user said where the project is
        return rootpath.resolve()
    if inipath is not None and inipath.is_file():  # pytest roots at the ini file's folder
        return inipath.parent.resolve()
    if config is not None:
        return config.parent.resolve()
    for arg in args:
        path = Path(start, str(arg).split("::", 1)[0])
        found = find_config(path if path.is_dir() else path.parent, rootpath)
        if found is not None:
            return found.parent.resolve()
    if inipath is not None and rootpath == inipath.parent:  # pytest < 9 roots -c /dev/null at /dev
        return start
    return rootpath


class Gatekeeper:
    """Thresholds and the baseline gate per test; the baseline update at the end of a run."""

    def __init__(self, options: Options, rootdir: Path, project_dir: Path) -> None:
        self.options = options
        self.rootdir = rootdir
        self.project_dir = project_dir
        self.baseline = BaselineFile.load(options.baseline or project_dir / DEFAULT_BASELINE)

    def check(
        self,
        nodeid: str,
        record: TestRecord | None,
        test: str,
        case: Case,
        result: RetrievalResult,
        dataset: Callable[[], RetrievalDataset],
    ) -> list[str]:
        """Thresholds, then the baseline gate: every failure line for this test's ``record``
        (``dataset`` gives the case's dataset, read only when the gate runs)."""
        rules = case.thresholds.for_test(test, case.model.short_name)
        if case.reranker is not None and case.reranker.is_none:  # the first stage: no lift
            rules = [rule for rule in rules if not rule.key.startswith("lift.")]
        failures = check_thresholds(result, rules)
        if record is None or record.result is None:
            return failures
        measured = result.measured_cutoffs
        if measured is not None:  # the test read retrieval.cutoffs: the report keeps them
            record.result = replace(record.result, cutoffs=measured.to_dict())
        if self.options.update_baseline == "all":
            return failures  # accepting the current numbers: nothing to gate against
        bad = self.baseline.problem or self.baseline.damaged.get(self.key(nodeid))
        if bad and self.options.update_baseline is None:
            return [*failures, bad]  # only the tests gated against a bad file or entry fail
        outcome = gate(
            record,
            self.baseline.entries.get(self.key(nodeid)),
            case.gate,
            seed=self.options.seed,
            n_resamples=self.options.bootstrap,
            query_texts={q.id: q.text for q in dataset().queries},
        )
        record.baseline = outcome
        return failures + outcome.failures

    def write(self, records: Mapping[str, TestRecord]) -> list[str]:
        """In update mode, store the entries of this run's tests; lines saying what was done.

        The entries are merged into the file as it is on disk at the end of the run (under a
        lock), so concurrent updates keep each other's entries. Raises ``OSError`` or
        :class:`~pytest_embedbench.exceptions.BaselineError` when nothing could be written.
        """
        mode = self.options.update_baseline
        if mode is None:
            return []
        entries = {
            self.key(nodeid): entry_from_record(record)
            for nodeid, record in sorted(records.items())
            if record.result is not None
        }
        done = self.baseline.update(entries, replace=mode != "new")
        added, replaced = done.added, done.replaced
        if added or replaced:
            counts = f"{added} entr{'y' if added == 1 else 'ies'} added, {replaced} replaced"
        elif done.notes:  # only repaired: the notes say what was written
            return done.notes
        elif entries:
            counts = "unchanged, every test of this run already has an entry"
        else:
            counts = "not written, no test of this run recorded a result"
        return [f"baseline {self.baseline.path}: {counts} (mode {mode!r})", *done.notes]

    def finish(
        self, records: Mapping[str, TestRecord], missing: Sequence[str]
    ) -> tuple[list[str], list[str]]:
        """The end of a run: write the baseline when asked (:meth:`write`); the notes for the
        summary and the failure lines (a file that could not be written, results of
        ``missing`` tests, whose xdist worker died, absent from an update)."""
        failures: list[str] = []
        notes: list[str] = []
        if self.baseline.problem and self.options.update_baseline is None:
            notes.append(self.baseline.problem)
        try:
            notes.extend(self.write(records))
        except (OSError, EmbedBenchError) as exc:
            failures.append(
                write_failure(
                    "baseline",
                    self.baseline.path,
                    exc,
                    "choose another file with --embedbench-baseline=PATH and re-run the update",
                )
            )
        if missing:
            line = (
                f"embedbench: {len(missing)} result{'s were' if len(missing) != 1 else ' was'} "
                "not recorded (the xdist worker running "
                f"{'them' if len(missing) != 1 else 'it'} died before sending it): "
                + ", ".join(missing[:10])
                + (" ..." if len(missing) > 10 else "")
            )
            if self.options.update_baseline is not None:
                failures.append(f"{line}; they are not in the baseline. Re-run the update for them")
            else:
                notes.append(line)
        return notes, failures

    def key(self, nodeid: str) -> str:
        """The baseline entry key of a node id: its file relative to :attr:`project_dir`, so
        ``pytest myproj`` from the parent folder finds the entries ``pytest`` in ``myproj``
        recorded (node ids are relative to the rootdir, which follows the start folder)."""
        path, sep, rest = nodeid.partition("::")
        try:
            relative = (self.rootdir / path).resolve().relative_to(self.project_dir.resolve())
        except ValueError:  # a test outside the project folder keeps its node id
            return nodeid
        return relative.as_posix() + sep + rest
