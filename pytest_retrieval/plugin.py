"""pytest entry point of pytest-retrieval (``pytest11: retrieval``): hooks and fixtures only.

The plugin loads in every pytest run of the environment it is installed in, so it stays inert
until a golden set is configured (``retrieval_golden`` / ``--retrieval-golden``): no output, no
work, and no import of yaml, numpy or tabulate. Once active, the work is done by
:class:`~pytest_retrieval.session.RetrievalSession` and friends; each hook here delegates in a few
lines.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from .baseline import Snapshot
    from .declared import Budget, Threshold
    from .evaluate import Evaluation
    from .golden import GoldenSet
    from .retriever import QueryOutcome
    from .session import RetrievalSession
    from .settings import Settings

_OUTPUT_KEY = "pytest_retrieval"
_USAGE_KEY = "pytest_retrieval_usage_error"


class _Active:
    """The plugin's state for one pytest session (kept in ``config.stash``)."""

    def __init__(
        self, config: pytest.Config, settings: Settings, session: RetrievalSession
    ) -> None:
        self.config = config
        self.settings = settings
        self.session = session
        self.lock = threading.Lock()
        self.thresholds: list[Threshold] = []
        self.budgets: list[Budget] = []
        self.artifact_error: str | None = None
        self.written: list[str] = []
        self.baseline_note: str | None = None
        self.baseline_error: str | None = None
        self.run_error: str | None = None
        self.usage_error: str | None = None  # a worker's, under xdist

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")


_STATE = pytest.StashKey[_Active]()


def _active(config: pytest.Config) -> _Active | None:
    return config.stash.get(_STATE, None)


def _require(config: pytest.Config) -> _Active:
    active = _active(config)
    if active is None:
        # Only fixtures get here, from inside a test: the message is the whole story, a
        # traceback through the plugin would only hide it.
        pytest.fail(
            "pytest-retrieval has no golden set: set retrieval_golden = PATH in your pytest "
            "configuration (e.g. [tool.pytest.ini_options] in pyproject.toml) or pass "
            "--retrieval-golden PATH",
            pytrace=False,
        )
    return active


# --- options ---------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register every ``retrieval_*`` ini key and ``--retrieval-*`` flag (one help text each)."""
    from .settings import OPTIONS

    group = parser.getgroup("retrieval", "retrieval quality gates (pytest-retrieval)")
    for option in OPTIONS:
        if not option.flag_only:
            # A bool is read as text and parsed by the setting itself: pytest's own bool parsing
            # fails with an INTERNALERROR on a value such as "maybe", where ours names the key.
            ini_type = "string" if option.ini_type == "bool" else option.ini_type
            parser.addini(option.ini, option.help, type=ini_type, default=None)
        if not option.flag:
            continue
        if option.store_true:
            group.addoption(
                option.flag_name,
                action="store_true",
                default=None,
                dest=f"retrieval_{option.name}",
                help=option.help,
            )
        else:
            group.addoption(
                option.flag_name,
                default=None,
                metavar=option.metavar,
                dest=f"retrieval_{option.name}",
                help=option.help,
            )


def pytest_configure(config: pytest.Config) -> None:
    """Stay inert without a golden set; otherwise resolve settings and load the golden set."""
    config.addinivalue_line(
        "markers", "retrieval: a test that gates retrieval quality (added to config gates)"
    )
    if not (config.getoption("retrieval_golden", None) or config.getini("retrieval_golden")):
        _refuse_flags_without_golden(config)
        return
    from .declared import load_budgets, load_declared_gates
    from .errors import InputError
    from .gates import activate
    from .golden import DEFAULT_HELDOUT_SPLIT, load_golden
    from .session import RetrievalSession
    from .settings import OPTIONS, resolve

    ini_path = config.inipath
    try:
        settings = resolve(
            {o.name: config.getoption(f"retrieval_{o.name}", None) for o in OPTIONS if o.flag},
            {o.name: config.getini(o.ini) for o in OPTIONS if not o.flag_only},
            ini_source=ini_path.name if ini_path else "the ini file",
            ini_base=ini_path.parent if ini_path else config.rootpath,
            cli_base=config.invocation_params.dir,
        )
        _check_outputs(settings)
        golden = _load_golden_sets(settings, load_golden)
        thresholds = load_declared_gates(settings, golden, rootdir=config.rootpath)
        budgets = load_budgets(settings, golden, rootdir=config.rootpath)
        baseline = _load_baseline(settings)
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    if settings.heldout and not golden.heldout():
        raise pytest.UsageError(
            f"--retrieval-heldout: the golden set has no query in the held-out split "
            f"{settings.heldout_split!r} (splits: {', '.join(golden.splits)}); set "
            "retrieval_heldout_split to the split you hold out"
        )
    if settings.heldout_split != DEFAULT_HELDOUT_SPLIT and not golden.heldout():
        # A renamed held-out split that matches no query seals nothing: the queries meant to
        # be held out would be scored and shown like any other (a typo must not leak them).
        raise pytest.UsageError(
            f"retrieval_heldout_split = {settings.heldout_split}: the golden set has no query "
            f"in this split (splits: {', '.join(golden.splits)}), so nothing is held out; name "
            "the split your held-out queries are in, or remove the setting (default: heldout)"
        )
    session = RetrievalSession(settings=settings, golden=golden, baseline=baseline)
    session.on_sealed = _skip
    session.on_skip = lambda reason: pytest.skip(reason)
    active = _Active(config, settings, session)
    active.thresholds = thresholds
    active.budgets = budgets
    if settings.depth is None:
        # Ask the retriever for enough results for every declared gate and budget too.
        declared = [t.spec.k for t in thresholds] + [b.spec.k for b in budgets]
        session.depth = max([settings.retrieval_depth, *(k for k in declared if k)])
    config.stash[_STATE] = active
    context = activate(session)
    context.__enter__()

    def deactivate() -> None:
        context.__exit__(None, None, None)

    config.add_cleanup(deactivate)
    if settings.heldout and not os.environ.get("CI") and not active.is_worker:
        config.issue_config_time_warning(
            pytest.PytestWarning(
                "pytest-retrieval: the held-out split is unsealed outside CI; every look at "
                "the held-out numbers makes them less trustworthy"
            ),
            stacklevel=2,
        )
    config.pluginmanager.register(_OnDemand(active), "retrieval-on-demand")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(active), "retrieval-xdist")


def _refuse_flags_without_golden(config: pytest.Config) -> None:
    """A ``--retrieval-*`` flag without a golden set is a mistake, not a plain run: staying off
    would silently drop every declared gate."""
    from .settings import OPTIONS

    given = [o.flag_name for o in OPTIONS if o.flag and config.getoption(f"retrieval_{o.name}")]
    if not given:
        return
    ini = config.inipath or "none found"
    raise pytest.UsageError(
        f"{given[0]} is given but no golden set is configured, so pytest-retrieval is off "
        f"(rootdir {config.rootpath}, ini file {ini}); set retrieval_golden = PATH in the ini "
        "file or pass --retrieval-golden PATH. If the ini file does set it, pytest did not read "
        f"it: it takes an existing path after a plugin's flag for a test path when it looks for "
        f"the ini file, so write {given[0]}=PATH"
    )


def _skip(reason: str) -> NoReturn:
    """Skip the running test; hidden from the traceback, so the skip's location is the user's
    line (the session's and the gates' frames hide themselves too)."""
    __tracebackhide__ = True
    pytest.skip(reason)


class _OnDemand:
    """Registered only while the plugin is active: lets gate helpers in any test run the
    retriever on first use, through that test's fixture request."""

    def __init__(self, active: _Active) -> None:
        self.active = active

    @pytest.fixture(autouse=True)
    def _retrieval_on_demand(self, request: pytest.FixtureRequest) -> Generator[None, None, None]:
        session = self.active.session
        session.ensure_run = lambda: _ensure_run(self.active, request)
        yield
        session.ensure_run = None


def _check_outputs(settings: Settings) -> None:
    """Refuse a report path that can never be written (a directory, or a path through a file)
    before the retriever runs, not after a long run. (A baseline to update is checked when it
    is written: the run's verdict is shown first.)"""
    from .errors import InputError
    from .files import path_problem

    outputs = [
        (settings.json, "JSON artifact"),
        (settings.markdown, "Markdown report"),
        (settings.html, "HTML report"),
    ]
    problems = [path_problem(path, what=what) for path, what in outputs if path]
    found = [p for p in problems if p is not None]
    if found:
        raise InputError(found)


def _load_baseline(settings: Settings) -> Snapshot | None:
    """The committed baseline (None when missing: the regression gates then say how to make it).

    A corrupt or foreign file is a usage error. Updating needs a path to write to.
    """
    from .baseline import load_baseline
    from .errors import InputError, Problem

    if settings.update_baseline and not settings.baseline:
        raise InputError(
            Problem(
                "--retrieval-update-baseline needs to know where the baseline lives",
                fix="pass --retrieval-baseline PATH or set retrieval_baseline = PATH",
            )
        )
    if not settings.baseline or settings.update_baseline:
        return None
    try:
        return load_baseline(settings.baseline)
    except FileNotFoundError:
        return None


def _load_golden_sets(settings: Settings, load: Callable[..., GoldenSet]) -> GoldenSet:
    """Load every configured golden set file and join them (ids must stay unique)."""
    from .golden import GoldenSet

    sets = [
        load(
            path,
            format=settings.golden_format,
            corpus=settings.corpus,
            heldout_split=settings.heldout_split,
        )
        for path in settings.golden
    ]
    if len(sets) == 1:
        return sets[0]
    return GoldenSet(
        tuple(q for s in sets for q in s),
        source=", ".join(str(s.source) for s in sets),
        name=sets[0].name,
        corpus_version=sets[0].corpus_version,
        heldout_split=settings.heldout_split,
    )


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """Name the effective golden set (path, queries, fingerprint) when the plugin is in use."""
    active = _active(config)
    if active is None:
        return None
    golden = active.session.golden
    state = "unsealed" if active.settings.heldout else "sealed"
    return [
        f"retrieval: golden set {golden.source} ({len(golden)} queries, fingerprint "
        f"{golden.short_fingerprint}), held-out split {active.settings.heldout_split!r} {state}"
    ]


# --- fixtures --------------------------------------------------------------------------------

_CONFTEST_SNIPPET = """\
# conftest.py
import pytest

@pytest.fixture(scope="session")
def retriever_under_test():
    from myapp.search import search      # your code: query text -> ranked doc ids
    return search
"""


@pytest.fixture(scope="session")
def golden_set(request: pytest.FixtureRequest) -> GoldenSet:
    """The configured golden set, without its held-out split."""
    return _require(request.config).session.visible_golden()


def _usage_error(config: pytest.Config, message: str) -> NoReturn:
    """Stop the session with a usage error (exit status 4) from inside a fixture.

    In an xdist worker, pytest.exit would crash the controller (an INTERNALERROR that loses the
    message): there the test fails with the message, and the controller exits with 4.
    """
    if hasattr(config, "workerinput"):
        config.workeroutput[_USAGE_KEY] = message  # type: ignore[attr-defined]
        raise pytest.fail.Exception(message, pytrace=False) from None  # not "during handling"
    pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)


def _import_object(config: pytest.Config, spec: str, what: str) -> Any:
    """The object named by ``module:attribute`` (exits with a usage error if there is none)."""
    from importlib import import_module

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        _usage_error(
            config,
            f"{what} = {spec!r}: expected module:function, e.g. myapp.search:build",
        )
    try:
        module = import_module(module_name)
    except ImportError as exc:
        _usage_error(
            config,
            f"{what} = {spec!r}: cannot import {module_name!r} ({exc}); check the module "
            "path and that it is importable from the rootdir",
        )
    found = getattr(module, attribute, None)
    if found is None:
        _usage_error(
            config,
            f"{what} = {spec!r}: module {module_name!r} has no attribute {attribute!r}; check "
            "the name after the ':'",
        )
    return found


def _import_factory(config: pytest.Config, spec: str, what: str) -> Any:
    """Call the factory named by ``module:function`` and return what it builds."""
    factory = _import_object(config, spec, what)
    return factory() if callable(factory) else factory


@pytest.fixture(scope="session")
def retriever_under_test(request: pytest.FixtureRequest) -> Any:
    """The retriever to gate. Override it in conftest.py, or set retrieval_retriever."""
    config = request.config
    active = _require(config)
    if active.settings.retriever:
        return _import_factory(config, active.settings.retriever, "retrieval_retriever")
    _usage_error(
        config,
        "pytest-retrieval: no retriever to test. Define the retriever_under_test fixture:\n\n"
        + _CONFTEST_SNIPPET
        + "\nor name a factory in your pytest configuration: "
        "retrieval_retriever = myapp.search:build\n(Declared gates, the retrieval-gates::... "
        "items, see the fixtures of the rootdir's conftest.py: define it there.)",
    )


@pytest.fixture(scope="session")
def reranker_under_test(request: pytest.FixtureRequest) -> Any:
    """An optional second stage, ``reranker(query_text, candidates) -> ranking``; None if unset."""
    active = _require(request.config)
    if active.settings.reranker:
        return _import_factory(request.config, active.settings.reranker, "retrieval_reranker")
    return None


@pytest.fixture
def retrieval_session(request: pytest.FixtureRequest) -> RetrievalSession:
    """The session's scores and gates, with the retriever run (once per session)."""
    active = _require(request.config)
    _ensure_run(active, request)
    return active.session


@pytest.fixture
def retrieval_run(retrieval_session: RetrievalSession) -> dict[str, tuple[str, ...]]:
    """``{query id: ranking}`` of the final stage, for every non-held-out query."""
    stage = retrieval_session.default_stage
    return {
        q.id: retrieval_session.ranking(q.id, stage) for q in retrieval_session.visible_golden()
    }


@pytest.fixture
def retrieval_evaluation(retrieval_session: RetrievalSession) -> Evaluation:
    """The final stage scored on the configured metrics over the non-held-out queries."""
    evaluation = retrieval_session.evaluation(
        retrieval_session.default_stage, retrieval_session.settings.metric_specs
    )
    return evaluation.restrict(q.id for q in retrieval_session.visible_golden())


def _describe_callable(obj: Any) -> str:
    if obj is None:
        return "None"
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    module = getattr(obj, "__module__", None) or type(obj).__module__
    return f"{module}.{name}"


def _ensure_run(active: _Active, request: pytest.FixtureRequest) -> None:
    """Run the retriever over the golden set once per session (once in total under xdist)."""
    session = active.session
    if session.has_run:
        return
    with active.lock:
        if active.session.outcomes is not None:  # another thread ran it meanwhile
            return
        if active.run_error:
            pytest.fail(active.run_error, pytrace=False)
        retriever = request.getfixturevalue("retriever_under_test")
        reranker = request.getfixturevalue("reranker_under_test")
        session.retriever_name = _describe_callable(retriever)

        def compute() -> list[QueryOutcome]:
            return _run(active, retriever, reranker)

        worker: dict[str, Any] | None = getattr(active.config, "workerinput", None)
        if worker is not None:
            factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
            outcomes = _shared_run(factory.getbasetemp().parent, worker["testrunuid"], compute)
        else:
            outcomes = compute()
        session.set_outcomes(outcomes)


def _run(active: _Active, retriever: Any, reranker: Any) -> list[QueryOutcome]:
    from .retriever import QueryRequest, run_pipeline

    settings = active.settings
    queries = active.session.scorable_queries()
    # retrieval_doc_id is either a key/attribute path to the id inside each returned item, or
    # module:function mapping each returned id (a chunk id) to its document id.
    doc_id: str | None = settings.doc_id
    doc_map: Any = None
    if doc_id and ":" in doc_id:
        doc_map = _import_object(active.config, doc_id, "retrieval_doc_id")
        doc_id = None
    if settings.doc_id_map:
        doc_map = _load_doc_map(active.config, settings.doc_id_map)
    try:
        return run_pipeline(
            [QueryRequest(q.id, q.text or "") for q in queries],
            retriever,
            reranker,
            depth=active.session.effective_depth,
            concurrency=settings.concurrency,
            timeout=settings.timeout or None,
            batch_size=settings.batch_size,
            doc_id=doc_id,
            doc_map=doc_map,
            progress=_progress(active.config, len(queries)),
        )
    except TypeError as exc:  # the retriever object has no usable method
        active.run_error = f"pytest-retrieval: {exc}"
        pytest.fail(active.run_error, pytrace=False)


def _load_doc_map(config: pytest.Config, path: str) -> dict[str, str]:
    import json

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        _usage_error(
            config,
            f"retrieval_doc_id_map = {path}: cannot be read ({exc.strerror})",
        )
    if path.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            _usage_error(
                config,
                f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})",
            )
        if not isinstance(data, dict):
            _usage_error(
                config,
                f"{path}: expected a JSON object of chunk id -> document id",
            )
        return {str(k): str(v) for k, v in data.items()}
    mapping = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            _usage_error(
                config,
                f"{path}:{number}: expected 'chunk id<TAB>document id'",
            )
        mapping[parts[0].strip()] = parts[1].strip()
    return mapping


def _shared_run(
    base: Path, uid: str, compute: Callable[[], list[QueryOutcome]]
) -> list[QueryOutcome]:
    """Under xdist: the first worker runs the retriever, the others read its cached run."""
    import json

    from .files import atomic_write_text, file_lock
    from .report import outcome_from_dict, outcome_to_dict

    cache = base / f"pytest-retrieval-run-{uid}.json"
    with file_lock(base / f"pytest-retrieval-run-{uid}.lock"):
        if cache.exists():
            return [outcome_from_dict(o) for o in json.loads(cache.read_text(encoding="utf-8"))]
        outcomes = compute()
        atomic_write_text(
            cache, json.dumps([outcome_to_dict(o) for o in outcomes]), what="run cache"
        )
        return outcomes


def _progress(config: pytest.Config, total: int) -> Callable[[int, int], None] | None:
    """A progress line on long runs, only on a terminal and not with -q."""
    if hasattr(config, "workerinput") or config.get_verbosity() < 0 or total < 50:
        return None
    stdout = sys.__stdout__
    if stdout is None or not stdout.isatty():
        return None
    capture = config.pluginmanager.getplugin("capturemanager")
    writer = config.get_terminal_writer()
    last = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < 0.2:
            return
        last[0] = now
        text = f"\rretrieval: {done}/{total} queries" + (" done\n" if done >= total else "")
        if capture is not None:
            with capture.global_and_fixture_disabled():
                writer.write(text, flush=True)
        else:
            writer.write(text, flush=True)

    return show


# --- gates -----------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Name the running test for gate records; warn about gates created but never compared."""
    active = _active(item.config)
    if active is None:
        return (yield)
    active.session.current_test = item.nodeid
    try:
        return (yield)
    finally:
        for gate in active.session.take_uncompared():
            item.warn(
                pytest.PytestWarning(
                    f"{item.nodeid}: the gate {gate!r} was created but never compared, so it "
                    f"gates nothing; write e.g. `assert_{gate.spec.name}_at(...) >= 0.9`"
                )
            )
        active.session.current_test = None


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """Explain ``assert recall_at(50) >= 0.9`` with the score's worst queries."""
    gates = sys.modules.get("pytest_retrieval.gates")
    if gates is None:
        return None
    if isinstance(left, gates.Score):
        score, other = left, right
    elif isinstance(right, gates.Score):
        # `0.9 <= recall_at(50)`: said score first, with the comparison turned to match
        score, other = right, left
        op = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}.get(op, op)
    else:
        return None
    where = gates.Selection(score.stage, score.split or "overall", score.slice).label()
    shown = "n/a" if score.value is None else f"{score.value:.4f}"
    return [f"{score.spec} = {shown} {op} {other!r} does not hold [{where}]", *score.explanation]


class _GateFailed(AssertionError):
    """A declared gate failed; shown without a traceback."""


class _GateItem(pytest.Function):
    """A declared gate (ini ``retrieval_thresholds`` or the gates file) as a test item."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from .gates import GateUsageError

        # A gate naming a stage the run does not have (stage=reranker without a reranker) is
        # the gate line's mistake: its message, without a traceback through the plugin.
        if isinstance(excinfo.value, (_GateFailed, GateUsageError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"retrieval gate {self.name}"


class _GatesCollector(pytest.Collector):
    """The parent of declared gate items (node id ``retrieval-gates::...``)."""

    def collect(self) -> list[pytest.Item]:
        return []


def _gate_function(threshold: Threshold, kind: str) -> Callable[..., None]:
    # Properties go straight onto the item: the record_property fixture warns under xunit2
    # through item.warn, which needs a line number a declared gate does not have.
    def gate(retrieval_session: RetrievalSession, request: pytest.FixtureRequest) -> None:
        outcome = retrieval_session.check(
            threshold.spec,
            threshold.selection,
            threshold.op,
            threshold.value,
            kind=kind,
            name=threshold.name,
        )
        request.node.user_properties.extend([("value", outcome.value), ("passed", outcome.passed)])
        if not outcome.passed:
            raise _GateFailed(outcome.message)

    return gate


def _regression_function(budget: Budget, active: _Active) -> Callable[..., None]:
    def regression(retrieval_session: RetrievalSession, request: pytest.FixtureRequest) -> None:
        outcome = retrieval_session.regression(budget, baseline_path=str(active.settings.baseline))
        properties = request.node.user_properties
        for key in ("baseline_mean", "current_mean", "delta", "p_value", "detectable"):
            properties.append((key, getattr(outcome, key)))
        if outcome.ci is not None:
            properties.extend([("ci_low", outcome.ci[0]), ("ci_high", outcome.ci[1])])
        properties.append(("status", outcome.status))
        if not outcome.passed:
            raise _GateFailed(outcome.message)

    return regression


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Add one item per declared gate, before -k/-m selection sees the items."""
    active = _active(config)
    if active is None:
        return
    start = len(items)
    if active.budgets:
        regressions = _GatesCollector.from_parent(
            session, name="retrieval-regressions", nodeid="retrieval-regressions"
        )
        for budget in active.budgets:
            item = _GateItem.from_parent(
                regressions, name=budget.name, callobj=_regression_function(budget, active)
            )
            item.user_properties.extend(
                [
                    ("metric", str(budget.spec)),
                    ("budget", budget.describe()),
                    ("stage", budget.selection.stage or "default"),
                    ("split", budget.selection.split or "overall"),
                    ("slice", budget.selection.slice or "all"),
                ]
            )
            items.append(item)
    if active.thresholds:
        parent = _GatesCollector.from_parent(
            session, name="retrieval-gates", nodeid="retrieval-gates"
        )
        for threshold in active.thresholds:
            item = _GateItem.from_parent(
                parent, name=threshold.name, callobj=_gate_function(threshold, "threshold")
            )
            item.user_properties.extend(
                [
                    ("metric", str(threshold.spec)),
                    ("op", threshold.op),
                    ("threshold", threshold.value),
                    ("stage", threshold.selection.stage or "default"),
                    ("split", threshold.selection.split or "overall"),
                    ("slice", threshold.selection.slice or "all"),
                ]
            )
            items.append(item)
    _report_collected(session, items[start:])


def _report_collected(session: pytest.Session, added: list[pytest.Item]) -> None:
    """Report the items added here as collected, as pytest does for the ones it collects, so
    that "collected N items" counts them (it would say "collected 0 items" and then run gates)."""
    by_parent: dict[str, list[pytest.Item]] = {}
    for item in added:
        by_parent.setdefault(item.parent.nodeid if item.parent else "", []).append(item)
    for nodeid, members in by_parent.items():
        report = pytest.CollectReport(nodeid, "passed", None, list(members))
        session.ihook.pytest_collectreport(report=report)


# --- the end of the session ------------------------------------------------------------------


class _XdistHooks:
    """xdist-only hooks, registered only when xdist is present (so -p no:xdist works)."""

    def __init__(self, active: _Active) -> None:
        self.active = active
        self.payloads: list[dict[str, Any]] = []

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        usage_error = getattr(node, "workeroutput", {}).get(_USAGE_KEY)
        if usage_error is not None:
            self.active.usage_error = usage_error
        payload = getattr(node, "workeroutput", {}).get(_OUTPUT_KEY)
        if payload is not None:
            self.payloads.append(payload)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Workers publish their report; the controller merges, writes artifacts, sets the verdict."""
    active = _active(session.config)
    if active is None:
        return
    from .report import Report, merge_all

    if active.is_worker:
        session.config.workeroutput[_OUTPUT_KEY] = Report.from_session(active.session).to_dict()  # type: ignore[attr-defined]
        return
    xdist = session.config.pluginmanager.get_plugin("retrieval-xdist")
    if isinstance(xdist, _XdistHooks) and xdist.payloads:
        merged = merge_all(Report.from_dict(p) for p in xdist.payloads)
        merged.apply_to(active.session)
    retrieval = active.session
    failed_gates = any(not g.passed for g in retrieval.gate_outcomes) or any(
        not r.passed for r in retrieval.regression_outcomes
    )
    if (retrieval.failed_queries() or failed_gates) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if active.usage_error is not None:  # a worker's (see _usage_error)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    if active.settings.update_baseline:
        _update_baseline(active, session)
    if retrieval.has_run:
        _write_reports(active, session)


def _update_baseline(active: _Active, session: pytest.Session) -> None:
    """Write the baseline from this run (controller only; never from an xdist worker)."""
    from . import __version__
    from .baseline import dump_baseline, stamp
    from .errors import InputError
    from .files import atomic_write_text

    if active.is_worker:  # pragma: no cover - callers return early on workers
        raise RuntimeError("the baseline is written by the controller, never by a worker")
    retrieval = active.session
    path = active.settings.baseline
    assert path is not None
    if not retrieval.has_run:
        active.baseline_error = (
            f"baseline not written to {path}: no test ran the retriever (select at least one "
            "retrieval gate)"
        )
    elif retrieval.failed_queries():
        active.baseline_error = (
            f"baseline not written to {path}: {len(retrieval.failed_queries())} queries failed "
            "in the retriever, and a baseline must not record failures as quality"
        )
    if active.baseline_error:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    snapshot = stamp(
        retrieval.snapshot(extra=[b.spec for b in active.budgets]), plugin_version=__version__
    )
    try:
        atomic_write_text(path, dump_baseline(snapshot), what="baseline")
    except InputError as exc:
        active.baseline_error = str(exc)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    active.baseline_note = (
        f"baseline written to {path} ({len(snapshot.queries)} queries, golden fingerprint "
        f"{snapshot.fingerprint[:12]}): review the diff and commit it"
    )


def _write_reports(active: _Active, session: pytest.Session) -> None:
    """The JSON artifact, the Markdown and HTML reports and the GitHub step summary, each only
    when asked for, all rendered from one artifact document (controller only)."""
    settings = active.settings
    step_summary = settings.step_summary and bool(os.environ.get("GITHUB_STEP_SUMMARY"))
    if not (settings.json or settings.markdown or settings.html or step_summary):
        return
    from . import __version__
    from .errors import InputError
    from .files import atomic_write_json, atomic_write_text
    from .report import build_artifact

    document = build_artifact(
        active.session,
        plugin_version=__version__,
        extra_specs=[b.spec for b in active.budgets],
        declared={
            "thresholds": [str(t) for t in active.thresholds],
            "regressions": [b.line for b in active.budgets],
        },
    )
    baseline = active.session.baseline
    try:
        if settings.json:
            atomic_write_json(settings.json, document, what="JSON artifact")
            active.written.append(f"JSON artifact written to {settings.json}")
        if settings.markdown or step_summary:
            from .report_markdown import append_step_summary, render_markdown

            markdown = render_markdown(document, baseline=baseline)
            if settings.markdown:
                atomic_write_text(settings.markdown, markdown, what="Markdown report")
                active.written.append(f"Markdown report written to {settings.markdown}")
            if step_summary:
                try:
                    append_step_summary(markdown)
                except OSError as exc:
                    active.written.append(
                        f"warning: could not append to $GITHUB_STEP_SUMMARY ({exc.strerror})"
                    )
        if settings.html:
            from .report_html import render_html

            atomic_write_text(
                settings.html, render_html(document, baseline=baseline), what="HTML report"
            )
            active.written.append(f"HTML report written to {settings.html}")
    except InputError as exc:
        active.artifact_error = str(exc)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """The ``retrieval`` section (tables, errors, latency) and the ``retrieval gates`` verdicts."""
    active = _active(config)
    if active is None or active.is_worker:
        return
    from .report import render_gates, render_summary

    quiet = config.get_verbosity() < 0
    retrieval = active.session
    if retrieval.has_run:
        lines = render_summary(retrieval, quiet=quiet)
        if lines:
            terminalreporter.write_sep("=", "retrieval")
            for line in lines:
                terminalreporter.write_line(line)
    gate_lines = render_gates(retrieval, quiet=quiet)
    if gate_lines:
        failed = sum(1 for g in retrieval.gate_outcomes if not g.passed) + sum(
            1 for r in retrieval.regression_outcomes if not r.passed
        )
        terminalreporter.write_sep(
            "=",
            f"retrieval gates: {failed} failed" if failed else "retrieval gates: all passed",
            red=bool(failed),
            green=not failed,
        )
        for line in gate_lines:
            terminalreporter.write_line(line)
    if active.baseline_error:
        terminalreporter.write_line(f"pytest-retrieval: {active.baseline_error}", red=True)
    elif active.baseline_note:
        terminalreporter.write_line(f"retrieval: {active.baseline_note}", green=True)
    if not quiet:
        for line in active.written:
            terminalreporter.write_line(f"retrieval: {line}")
    if active.artifact_error:
        terminalreporter.write_line(f"pytest-retrieval: {active.artifact_error}", red=True)
