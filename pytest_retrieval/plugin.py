"""pytest entry point of pytest-retrieval (``pytest11: retrieval``): hooks and fixtures only.

Inert until a golden set is configured (no output, no work, no import of yaml, numpy or
tabulate); then ``pytest_configure`` registers a :class:`RetrievalPlugin` whose methods are the
other hooks, as pytest-xdist registers its ``DSession``. Each hook delegates in a few lines
(docs/architecture.md, "The flow of one pytest run").
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Generator, Sequence
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from .gates.declared import Budget, Threshold
    from .golden.model import GoldenSet
    from .phases.finish import Finish
    from .scoring.evaluate import Evaluation
    from .session.session import RetrievalSession

_OUTPUT_KEY = "pytest_retrieval"
_USAGE_KEY = "pytest_retrieval_usage_error"
_STATE = pytest.StashKey["RetrievalPlugin"]()


def _active(config: pytest.Config) -> RetrievalPlugin | None:
    return config.stash.get(_STATE, None)


def _require(config: pytest.Config) -> RetrievalPlugin:
    active = _active(config)
    if active is None:
        from .run.factories import NO_GOLDEN

        # Only fixtures get here, from inside a test: the message is the whole story, a
        # traceback through the plugin would only hide it.
        pytest.fail(NO_GOLDEN, pytrace=False)
    return active


# --- options and configuration ---------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register every ``retrieval_*`` ini key and ``--retrieval-*`` flag (one help text each)."""
    from .settings.options import OPTIONS

    group = parser.getgroup("retrieval", "retrieval quality gates (pytest-retrieval)")
    for option in OPTIONS:
        if not option.flag_only:
            parser.addini(**option.addini_kwargs())
        if option.flag:
            group.addoption(option.flag_name, **option.addoption_kwargs())


def pytest_configure(config: pytest.Config) -> None:
    """Stay inert without a golden set; otherwise build the session and register the hooks."""
    config.addinivalue_line(
        "markers", "retrieval: a test that gates retrieval quality (added to config gates)"
    )
    golden = config.getoption("retrieval_golden", None) or config.getini("retrieval_golden")
    _preflight(config, golden=bool(golden))
    if not golden:
        return
    from .errors import InputError
    from .gates.gate import activate
    from .phases.start import start, unsealed_warning

    try:
        session = start(
            partial(config.getoption, default=None),
            config.getini,
            inipath=config.inipath,
            rootpath=config.rootpath,
            cli_base=config.invocation_params.dir,
            on_skip=pytest.skip,
            on_sealed=_skip,
        )
    except InputError as exc:
        raise pytest.UsageError(_safe(str(exc))) from None
    plugin = RetrievalPlugin(config, session)
    config.stash[_STATE] = plugin
    active = ExitStack()  # the gate helpers' session until pytest unconfigures
    active.enter_context(activate(session))
    config.add_cleanup(active.close)
    warning = unsealed_warning(session.settings, is_worker=plugin.is_worker)
    if warning is not None:
        config.issue_config_time_warning(pytest.PytestWarning(_safe(warning)), stacklevel=2)
    config.pluginmanager.register(plugin, "retrieval-session")


def _preflight(config: pytest.Config, *, golden: bool) -> None:
    """Stop on settings pytest misread and on a flag without a golden set (:mod:`.preflight`,
    cheap in every run)."""
    from .settings.preflight import refusal

    # pytest has no public list of the keys it read; its own check warns only after the run.
    unknown_keys = getattr(config, "_get_unknown_ini_keys", None)
    message = refusal(
        [str(a) for a in config.invocation_params.args],
        unknown_keys() if unknown_keys else [],
        getoption=config.getoption,
        golden=golden,
        invocation_dir=config.invocation_params.dir,
        rootpath=config.rootpath,
        inipath=config.inipath,
    )
    if message is not None:
        raise pytest.UsageError(_safe(message))


def _safe(text: str) -> str:
    """The plugin's one line writer's escaping (every line it prints, every usage error and
    warning goes through it): control characters and bidi overrides escaped in each line, no
    line starting as a GitHub Actions workflow command (``::``). User text escaped where the
    message was built is unchanged by it (:func:`~pytest_retrieval.text.terminal_text`)."""
    from .text import terminal_text

    return terminal_text(text)


def _skip(reason: str) -> NoReturn:
    """Skip the running test; hidden from the traceback, so the skip's location is the user's
    line (the session's and the gates' frames hide themselves too)."""
    __tracebackhide__ = True
    pytest.skip(reason)


# --- the plugin object: every other hook ------------------------------------------------------


class RetrievalPlugin:
    """The plugin while a golden set is configured: the session and the hooks that use it."""

    def __init__(self, config: pytest.Config, session: RetrievalSession) -> None:
        from .phases.items import homes
        from .phases.retrieve import RunPhase

        self.config = config
        self.session = session
        #: The retriever's run, made once on the first test that needs it (see :func:`_ensure_run`).
        self.run_phase = RunPhase(
            session,
            config.rootpath,
            fail=partial(pytest.fail, pytrace=False),
            usage_error=partial(_usage_error, config),
            warn=_warn,
            progress=partial(_progress, config),
        )
        self.usage_error: str | None = None  # a worker's, under xdist
        self.payloads: list[dict[str, Any]] = []
        self.finished: Finish | None = None
        #: The declared gates by the file they are collected from (see :func:`.gateitems.homes`).
        self.homes = homes(session.budgets, session.thresholds, config.inipath)

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Name the effective golden set (path, queries, fingerprint)."""
        from .phases.start import header

        return [_safe(header(self.session))]

    @pytest.fixture(autouse=True)
    def _retrieval_on_demand(self, request: pytest.FixtureRequest) -> Generator[None, None, None]:
        """Let gate helpers in any test run the retriever on first use, through its fixtures."""
        self.session.enter_test(None, ensure_run=lambda: _ensure_run(self, request))
        yield
        self.session.leave_test()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        """Name the running test for gate records; settle its Scores; warn of uncompared gates."""
        self.session.enter_test(item.nodeid)
        before = len(self.session.gate_outcomes)
        failed = False
        try:
            return (yield)
        except BaseException as exc:
            failed = not isinstance(exc, pytest.skip.Exception)
            raise
        finally:
            from .phases.items import end_of_call

            properties, messages = end_of_call(self.session, item.nodeid, before, failed=failed)
            if not isinstance(item, _GateItem):  # a declared gate sets its own
                item.user_properties.extend(properties)
            for message in messages:
                item.warn(pytest.PytestWarning(_safe(message)))

    def pytest_assertrepr_compare(
        self, config: pytest.Config, op: str, left: object, right: object
    ) -> list[str] | None:
        """Explain ``assert recall_at(50) >= 0.9`` with the score's worst queries."""
        gates = sys.modules.get("pytest_retrieval.gates.gate")
        # Cheap for every other assertion of the suite: only our own Score is explained.
        lines = None if gates is None else gates.explain_comparison(op, left, right)
        return None if lines is None else [_safe(line) for line in lines]

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> _DeclaredFile | None:
        """The gates file and the ini file collect their declared gates, as any test file
        collects its tests: a path selection, ``--lf``, ``-k`` and ``-m`` see them."""
        if file_path not in self.homes:
            return None
        return _DeclaredFile.from_parent(parent, path=file_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """When the run is the whole suite (no path given), add the declared gates whose file
        the walk did not reach (outside ``testpaths``), before -k/-m selection sees them."""
        from .phases.items import NO_FILE, NO_FILE_ID, uncollected, whole_suite

        if not whole_suite(config.args_source.name, config.invocation_params.dir, config.rootpath):
            return
        # pytest offers every file of the folders on the way to a path to pytest_collect_file,
        # and keeps only what the path names: the items tell which files were collected.
        present = {item.path for item in items if isinstance(item, _GateItem)}
        added: list[pytest.Item] = []
        for path, nodeid in uncollected(self.homes, present, config.rootpath):
            if path == NO_FILE:
                parent = _GatesCollector.from_parent(session, name=NO_FILE_ID, nodeid=NO_FILE_ID)
                added.extend(_gate_items(parent, self.homes[path]))
            else:
                added.extend(_DeclaredFile.from_parent(session, path=path, nodeid=nodeid).collect())
        items.extend(added)
        _report_collected(session, added)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Workers publish their report; the controller merges and settles the session."""
        if self.is_worker:
            from .phases.finish import worker_payload

            session.config.workeroutput[_OUTPUT_KEY] = worker_payload(self.session)  # type: ignore[attr-defined]
            return
        from .phases.finish import settle

        self.finished = settle(
            self.session,
            self.payloads,
            exit_status=int(session.exitstatus),
            verbosity=self.config.get_verbosity(),
            worker_usage_error=self.usage_error,
            reporter=self.config.pluginmanager.get_plugin("terminalreporter"),
        )
        session.exitstatus = self.finished.exit_status
        if self.finished.closing and not session.shouldfail:
            session.shouldfail = self.finished.closing  # printed before pytest's last line

    @pytest.hookimpl(optionalhook=True)  # xdist's hook: without xdist, never called
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """Keep a worker's report (and its usage error) for the controller's finish."""
        output = getattr(node, "workeroutput", {})
        if output.get(_USAGE_KEY) is not None:
            self.usage_error = output[_USAGE_KEY]
        if output.get(_OUTPUT_KEY) is not None:
            self.payloads.append(output[_OUTPUT_KEY])

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Print what :func:`~pytest_retrieval.phases.finish.finish` decided."""
        for title, text, markup in self.finished.output() if self.finished else ():
            if title:
                terminalreporter.write_sep("=", _safe(text), **markup)
            else:
                terminalreporter.write_line(_safe(text), **markup)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def golden_set(request: pytest.FixtureRequest) -> GoldenSet:
    """The configured golden set, without its held-out split."""
    return _require(request.config).session.visible_golden()


def _usage_error(config: pytest.Config, message: str) -> NoReturn:
    """Fail the running test with a usage error and end the session after it, as ``-x`` does
    (the end of the session sets exit status 4). pytest.exit would print the message last, as
    ``_pytest.outcomes.Exit: ...``, and leave the test unreported (JUnit would show no failure).

    An xdist worker goes on (its later tests fail with the same message); the controller exits
    with 4.
    """
    message = _safe(message)
    if hasattr(config, "workerinput"):
        config.workeroutput[_USAGE_KEY] = message  # type: ignore[attr-defined]
    elif (session := config.pluginmanager.get_plugin("session")) is not None:
        from .verdict import REFUSED_CLOSING

        session.shouldfail = REFUSED_CLOSING  # pytest's "!!! ... !!!" line says why it ended
    raise pytest.fail.Exception(message, pytrace=False) from None  # not "during handling"


def _build(config: pytest.Config, setting: str) -> Any:
    """What the ``module:function`` setting names (:meth:`.RunPhase.build`)."""
    return _require(config).run_phase.build(setting)


@pytest.fixture(scope="session")
def retriever_under_test(request: pytest.FixtureRequest) -> Any:
    """The retriever to gate. Override it in conftest.py, or set retrieval_retriever."""
    return _build(request.config, "retriever")


@pytest.fixture(scope="session")
def reranker_under_test(request: pytest.FixtureRequest) -> Any:
    """An optional second stage, ``reranker(query_text, candidates) -> ranking``; None if unset."""
    return _build(request.config, "reranker")


@pytest.fixture
def retrieval_session(request: pytest.FixtureRequest) -> RetrievalSession:
    """The session's scores and gates, with the retriever run (once per session)."""
    active = _require(request.config)
    _ensure_run(active, request)
    return active.session


@pytest.fixture
def retrieval_run(retrieval_session: RetrievalSession) -> dict[str, tuple[str, ...]]:
    """``{query id: ranking}`` of the final stage, for every non-held-out query."""
    return retrieval_session.visible_run()


@pytest.fixture
def retrieval_evaluation(retrieval_session: RetrievalSession) -> Evaluation:
    """The final stage scored on the configured metrics over the non-held-out queries."""
    return retrieval_session.visible_evaluation()


def _ensure_run(active: RetrievalPlugin, request: pytest.FixtureRequest) -> None:
    """Run the retriever over the golden set once per session (once in total under xdist)."""
    worker: dict[str, Any] | None = getattr(active.config, "workerinput", None)
    active.run_phase.ensure(request.getfixturevalue, worker=worker)


def _warn(message: str) -> None:
    warnings.warn(pytest.PytestWarning(_safe(f"pytest-retrieval: {message}")), stacklevel=1)


def _progress(config: pytest.Config, total: int) -> Callable[[int, int], None] | None:
    """A progress line on long runs, only on a terminal and not with -q."""
    if hasattr(config, "workerinput") or config.get_verbosity() < 0:
        return None
    from .phases.retrieve import progress_line

    capture = config.pluginmanager.getplugin("capturemanager")
    return progress_line(total, config.get_terminal_writer, capture)


# --- declared gates as items ----------------------------------------------------------------


class _GateFailed(AssertionError):
    """A declared gate failed; shown without a traceback."""


class _GateItem(pytest.Function):
    """A declared gate (ini ``retrieval_thresholds`` or the gates file) as a test item."""

    entry: Threshold | Budget | None = None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from .gates.gate import GateUsageError

        # A gate naming a stage the run does not have (stage=reranker without a reranker) is
        # the gate line's mistake: its message, without a traceback through the plugin.
        if isinstance(excinfo.value, (_GateFailed, GateUsageError)):
            return _safe(str(excinfo.value))
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        from .phases.items import report_line

        line = report_line(self.entry, in_file=isinstance(self.parent, pytest.File))
        shown = self.entry.name if self.entry is not None else self.name
        return self.path, line, f"retrieval gate {shown}"


class _GatesCollector(pytest.Collector):
    """The parent of declared gates that have no file (the default regression checks of a
    baseline given only on the command line, with no ini file): ``retrieval-gates::...``."""

    def collect(self) -> list[pytest.Item]:
        return []


class _DeclaredFile(pytest.File):
    """The gates file (``retrieval-gates.yaml``) or the ini file as a collector of its declared
    gates and budgets (pytest's "working with non-python tests" pattern)."""

    def collect(self) -> list[pytest.Item]:
        active = _active(self.config)
        entries = active.homes.get(self.path, []) if active is not None else []
        return _gate_items(self, entries)


def _gate_items(parent: pytest.Collector, entries: Sequence[Any]) -> list[pytest.Item]:
    """One item per declared gate or budget, named to be valid in ``-k`` and unique in its
    file, marked ``retrieval``, with the JUnit properties that say what it checks."""
    from .phases.items import declared_properties, item_names

    items: list[pytest.Item] = []
    for name, entry in item_names(entries):
        item = _GateItem.from_parent(parent, name=name, callobj=_gate_call(entry))
        item.entry = entry
        item.add_marker("retrieval")
        item.user_properties.extend(declared_properties(entry))
        items.append(item)
    return items


def _gate_call(entry: Threshold | Budget) -> Callable[..., None]:
    """The test function of a declared gate or budget item."""
    from .phases.items import run_declared

    # Properties go straight onto the item: the record_property fixture warns under xunit2
    # through item.warn, which needs a line number a declared gate does not have.
    def gate(retrieval_session: RetrievalSession, request: pytest.FixtureRequest) -> None:
        failure = run_declared(entry, retrieval_session, request.node.user_properties)
        if failure is not None:
            raise _GateFailed(failure)

    return gate


def _report_collected(session: pytest.Session, added: list[pytest.Item]) -> None:
    """Report the items added here as collected, as pytest does for the ones it collects, so
    that "collected N items" counts them (it would say "collected 0 items" and then run gates)."""
    by_parent: dict[str, list[pytest.Item]] = {}
    for item in added:
        by_parent.setdefault(item.parent.nodeid if item.parent else "", []).append(item)
    for nodeid, members in by_parent.items():
        report = pytest.CollectReport(nodeid, "passed", None, list(members))
        session.ihook.pytest_collectreport(report=report)
