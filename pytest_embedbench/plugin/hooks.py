"""The pytest plugin (entry point ``pytest11: embedbench``): wiring only.

Options, ini keys, the ``embedbench`` marker, fixtures and hooks live here; every decision is
made by :class:`~pytest_embedbench.plugin.session.EmbedBenchSession`, kept in ``config.stash``, and
the end of the run (gate, summary, reports, terminal section) by :mod:`.finish`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ..config.options import Options, option_specs
from ..core.exceptions import ConfigError, EmbedBenchError, MissingKeyError, StressUnavailableError
from ..core.text import inert
from ..data.datasets import Document, EvalSet, RetrievalDataset
from ..evaluation.evaluate import RetrievalResult
from ..evaluation.record import Status
from ..evaluation.workloads import Workload
from ..models.providers.base import Provider
from ..models.search import Searcher
from ..report.artifacts import EXIT_ARTIFACT_FAILED
from ..report.writers.ci import junit_properties, junit_suite_properties
from ..report.writers.terminal import ProgressLines, ProgressPrinter
from ..retrieval.indexes import close_engines
from . import finish, hookspec
from .assertrepr import explain_comparison
from .cases import MarkerArgs
from .exitcodes import skip_final_collection
from .gatekeeper import project_folder
from .handle import EmbedBenchHandle
from .session import Case, EmbedBenchSession
from .xdist import XDistHooks, configure_worker

SESSION_KEY = pytest.StashKey[EmbedBenchSession]()
CASE_KEY = pytest.StashKey[tuple[Case, RetrievalResult]]()
CONFIG_ERROR_KEY = pytest.StashKey[str]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Every option and ini key of the table in :mod:`~pytest_embedbench.config.options`."""
    group = parser.getgroup("embedbench", "retrieval benchmarks (pytest-embedbench)")
    for spec in option_specs().values():
        group.addoption(spec.flag, **spec.addoption_kwargs())
        if spec.ini is None:
            continue
        if spec.kind == "flag":
            parser.addini(spec.ini, spec.ini_help or spec.help, type="bool", default=False)
        else:
            parser.addini(spec.ini, spec.ini_help or spec.help, type="string", default="")


def build_options(config: pytest.Config) -> Options:
    """Command line over ini, parsed once into the frozen Options."""

    def ini(key: str) -> Any:
        try:
            return config.getini(key)
        except (ValueError, pytest.UsageError) as exc:  # a bool key: "invalid truth value"
            where = f" in {config.inipath}" if config.inipath else ""
            raise ConfigError(
                f"ini option {key}{where}: {exc}; use true or false (1/0, yes/no, on/off)"
            ) from None

    try:
        return Options.resolve(
            cli=config.getoption,
            ini=ini,
            cwd=config.invocation_params.dir,
            ini_base=config.inipath.parent if config.inipath else config.rootpath,
            verbosity=config.get_verbosity(),
        )
    except ConfigError as exc:
        raise pytest.UsageError(inert(str(exc))) from None


def project_dir(config: pytest.Config, options: Options) -> Path:
    """Where the default baseline lives (:func:`~plugin.gatekeeper.project_folder`)."""
    return project_folder(
        rootpath=config.rootpath,
        rootdir_given=bool(config.getoption("rootdir", None)),
        inipath=config.inipath,
        config=options.config,
        args=[str(arg) for arg in config.args],
        start=config.invocation_params.dir,
    )


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"embedbench({MarkerArgs.signature()}): "
        "evaluate retrieval models on a dataset, one test per model (and per stress workload "
        "point) (pytest-embedbench)",
    )
    options = build_options(config)
    # not on an xdist worker: execnet's channels close from finalizers at its exit (the hang
    # once put down to skipping them was the scheduler's, see _xdist; workers keep it anyway)
    skip_final_collection(not options.exit_gc and not _is_worker(config))
    progress = None
    if options.verbosity >= 0 and not _is_worker(config):
        lines = ProgressLines(config)
        config.pluginmanager.register(lines, "embedbench-progress")
        progress = ProgressPrinter(lines.write)
    try:
        session = EmbedBenchSession(
            options, config.rootpath, progress=progress, project_dir=project_dir(config, options)
        )
    except EmbedBenchError as exc:
        raise pytest.UsageError(inert(str(exc))) from None
    config.stash[SESSION_KEY] = session
    session.find_paraphraser = lambda: config.hook.pytest_embedbench_paraphraser(config=config)
    config.pluginmanager.register(
        SessionHooks(session, worker=_is_worker(config)), "embedbench-session"
    )
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XDistHooks(session), "embedbench-xdist")
        if _is_worker(config):
            configure_worker(config)
        # one model's tests on one worker, so each model loads once: loadgroup, unless the
        # user chose a distribution mode
        explicit = any(arg.startswith("--dist") for arg in config.invocation_params.args)
        if getattr(config.option, "dist", "no") == "load" and not explicit:
            config.option.dist = "loadgroup"


def _session(config: pytest.Config) -> EmbedBenchSession:
    return config.stash[SESSION_KEY]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("embedbench")
    if marker is None or not {"retrieval", "model", "searcher", "workload"} & set(
        metafunc.fixturenames
    ):
        return
    try:
        cases = _session(metafunc.config).cases(
            marker.kwargs,
            Path(metafunc.definition.path),
            metafunc.function.__name__,
            args=marker.args,
        )
    except EmbedBenchError as exc:
        raise pytest.Collector.CollectError(inert(f"{metafunc.definition.nodeid}: {exc}")) from None
    xdist = metafunc.config.pluginmanager.hasplugin("xdist")
    metafunc.parametrize(
        "_embedbench_case",
        [
            pytest.param(
                case,
                id=case.id,
                marks=[pytest.mark.xdist_group(case.model.short_name)] if xdist else [],
            )
            for case in cases
        ],
        indirect=True,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # before -k/-m deselect: a baseline entry is orphaned only if its test is really gone
    _session(config).collected.update(item.nodeid for item in items)
    try:  # every test's models are known now: check the names the configuration uses
        _session(config).check_names()
    except EmbedBenchError as exc:
        if not _is_worker(config):
            raise pytest.UsageError(inert(str(exc))) from None
        # an xdist worker cannot end the run with a usage error (xdist reports an internal
        # error): each retrieval test fails with the message instead
        config.stash[CONFIG_ERROR_KEY] = inert(str(exc))


@pytest.fixture
def _embedbench_case(request: pytest.FixtureRequest) -> Case:
    case = getattr(request, "param", None)
    if not isinstance(case, Case):
        pytest.fail(
            f"{request.node.nodeid}: the retrieval and model fixtures need "
            "@pytest.mark.embedbench(models=[...], dataset=...)",
            pytrace=False,
        )
    error = request.config.stash.get(CONFIG_ERROR_KEY, None)
    if error is not None:
        pytest.fail(error, pytrace=False)
    return case


def _marker_dataset(request: pytest.FixtureRequest) -> RetrievalDataset:
    marker = request.node.get_closest_marker("embedbench")
    if marker is None:
        pytest.fail(
            f"{request.node.nodeid}: the corpus and evalset fixtures need "
            "@pytest.mark.embedbench(dataset=...)",
            pytrace=False,
        )
    message = ""
    try:
        return _session(request.config).marker_dataset(marker.kwargs, Path(request.node.path))
    except EmbedBenchError as exc:
        message = str(exc)
    pytest.fail(inert(f"{request.node.nodeid}: {message}"), pytrace=False)


@pytest.fixture
def retrieval(request: pytest.FixtureRequest, _embedbench_case: Case) -> RetrievalResult:
    """The RetrievalResult of this test's model on its dataset (computed once per session)."""
    session = _session(request.config)
    case = _embedbench_case
    test = getattr(request.node, "originalname", request.node.name)

    def compute() -> RetrievalResult:
        try:
            return session.result(case)
        except Exception as exc:
            session.record(request.node.nodeid, test, case, None, exc)
            if isinstance(exc, (MissingKeyError, StressUnavailableError)):
                session.records[request.node.nodeid].status = Status.SKIPPED
            raise

    result = _or_fail(compute, case, f"on dataset {case.dataset.name!r} failed")
    session.record(request.node.nodeid, test, case, result, None)
    request.node.stash[CASE_KEY] = (case, result)
    return result


T = TypeVar("T")


def _or_fail(get: Callable[[], T], case: Case, doing: str) -> T:
    """``get()``, or skip (missing API key) or fail this test with the model's error; outside
    the except block, so the message carries no chained traceback."""
    failure: BaseException | None = None
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - one model's failure fails only its tests
        failure = exc
    if isinstance(failure, (MissingKeyError, StressUnavailableError)):
        pytest.skip(inert(str(failure)))  # one matrix serves laptops and CI: skip, say why
    # the error's text may quote a server's reply or the user's data: its controls are shown
    message = f"embedbench: model {case.model.short_name!r} {doing}: {type(failure).__name__}: "
    pytest.fail(inert(f"{message}{failure}"), pytrace=False)


@pytest.fixture
def workload(_embedbench_case: Case) -> Workload | None:
    """The stress workload point of this test (kind, params, seeds, id); None when the marker
    has no ``stress=``."""
    return _embedbench_case.workload


@pytest.fixture
def model(request: pytest.FixtureRequest, _embedbench_case: Case) -> Provider:
    """The loaded provider of this test's model (loaded once per session)."""
    session = _session(request.config)
    return _or_fail(
        lambda: session.provider(_embedbench_case.model), _embedbench_case, "could not be loaded"
    )


@pytest.fixture
def searcher(request: pytest.FixtureRequest, _embedbench_case: Case) -> Searcher:
    """This test's model with its index built: ``searcher.search(query, k)``, for timing
    with pytest-benchmark's ``benchmark`` fixture."""
    session = _session(request.config)
    return _or_fail(
        lambda: session.searcher(_embedbench_case), _embedbench_case, "could not build its index"
    )


@pytest.fixture
def corpus(request: pytest.FixtureRequest) -> tuple[Document, ...]:
    """The documents of this test's dataset."""
    return _marker_dataset(request).documents


@pytest.fixture
def evalset(request: pytest.FixtureRequest) -> EvalSet:
    """The judged queries and qrels of this test's dataset."""
    return _marker_dataset(request).evalset


@pytest.fixture
def embedbench(request: pytest.FixtureRequest) -> EmbedBenchHandle:
    """The session handle: ``embedbench.evaluate(model, dataset)`` inside a test."""
    return EmbedBenchHandle(_session(request.config), Path(request.node.path))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    outcome = yield
    found = item.stash.get(CASE_KEY, None)
    if found is not None:
        case, result = found
        test = getattr(item, "originalname", item.name)
        failures = _session(item.config).after_test(item.nodeid, test, case, result)
        if failures:
            pytest.fail(
                f"embedbench checks failed for {case.model.short_name!r} on "
                f"{case.dataset.name!r} ({len(result.query_ids)} queries):\n  "
                + inert("\n  ".join(failures)),  # they quote query and document ids
                pytrace=False,
            )
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, Any]:
    if call.when == "call" and item.config.getoption("xmlpath", None):
        # --junitxml: the test's figures and gate verdict as <property> elements; set before
        # the report is made, so they travel with it (to an xdist controller too)
        record = _session(item.config).records.get(item.nodeid)
        if record is not None and item.stash.get(CASE_KEY, None) is not None:
            item.user_properties.extend(junit_properties(record))
    report = yield
    if report.when == "call" and "_embedbench_case" in getattr(item, "fixturenames", ()):
        # a benchmark test ran (retrieval, searcher, model or workload): known to the
        # controller under xdist too, since the flag travels with the report
        report.embedbench_case = True
    if not _is_worker(item.config):
        return report
    record = _session(item.config).records.get(item.nodeid)
    if record is not None and report.when in ("setup", "call"):
        if report.when == "call" or not report.passed:
            # the record travels with the report: it reaches the controller even if this
            # worker dies later, and a test whose record never arrives is known as such
            report.embedbench_record = json.dumps(record.to_dict())
        else:
            report.embedbench_expects_record = True
    return report


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> Any:
    return explain_comparison(op, left, right)


@pytest.hookimpl(trylast=True)
def pytest_embedbench_generate_json(
    config: pytest.Config, records: list[dict[str, Any]]
) -> dict[str, Any]:
    return finish.json_report(config, _session(config), records)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = _session(config)
    if _is_worker(config):
        # records travel with each test's report (they survive a worker that dies later)
        # and the embedbench.yaml files it read: the controller collects none (JSON report)
        config.workeroutput["embedbench"] = state.worker_output()  # type: ignore[attr-defined]
        return
    if finish.end_of_run(config, state) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = EXIT_ARTIFACT_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    # what the index engines hold for the session (pgvector's server and schema) goes at the
    # end of every run: passed, failed, errored or interrupted (Ctrl-C reaches here too)
    close_engines()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    finish.terminal_summary(terminalreporter, _session(config), config.get_verbosity())


class SessionHooks:
    """Hooks that need the session but receive no config (registered per config)."""

    def __init__(self, session: EmbedBenchSession, *, worker: bool = False) -> None:
        self.session = session
        self.worker = worker

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, "embedbench_case", False):
            self.session.cases_ran.add(report.nodeid)
        if not self.worker:  # an xdist worker's record arrives with the test's report
            raw = getattr(report, "embedbench_record", None)
            if raw:
                self.session.merge([json.loads(raw)])
            if getattr(report, "embedbench_expects_record", False):
                self.session.expected.add(report.nodeid)
        message = None
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            message = getattr(crash, "message", None) or str(report.longrepr).strip()
            message = message.removeprefix("Failed: ")
        self.session.set_status(report.nodeid, report.when, report.outcome, message)

    @pytest.hookimpl(tryfirst=True)  # before junitxml's, which writes the file
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """With ``--junitxml``: the figures of the run as a whole (a reranker's Holm-adjusted
        p needs every reranker of its model) as ``<testsuite>`` properties."""
        from _pytest.junitxml import xml_key  # what pytest's record_testsuite_property uses

        xml = session.config.stash.get(xml_key, None)
        if self.worker or xml is None:
            return
        for name, value in junit_suite_properties(list(self.session.records.values())):
            xml.add_global_property(name, value)


__all__ = ["EmbedBenchHandle", "ProgressLines", "SessionHooks", "XDistHooks"]
