"""The run phase: the retriever run over the golden set once per session, without pytest.

The first test that needs scores asks :meth:`RunPhase.ensure` for the run (through the plugin's
fixtures): it builds the retriever and the reranker, shares the queries out among xdist workers
(:func:`.runsource.sharded`), takes the run from :func:`.runsource.obtain` (run files, the cache
or the retriever) and where it came from, runs the determinism probe and any extra baseline runs
(:func:`.determinism.run_checks`; under xdist once per session, in the worker that completed the
run's last shard), stores it all in the session and stops a run that has no
meaningful numbers (:meth:`RunPhase.stop`): refused when they would be meaningless
(:func:`.findings.refusal`, a doc-id option or a replay that cannot be served, a retriever
object with no method to call, any other bad input found on the way), errored when nothing ran
(the retriever could not be built, every query failed, the run phase raised). The stop is kept
in the session, so every report says so, with no score, and no baseline is written from it.

What pytest does is passed in: the plugin gives a fixture getter, the shared temporary folder,
a warning, a progress line, and two ways to stop: ``fail`` fails the running test (and, with
:attr:`RunPhase.run_error` kept, every later one the same way), ``usage_error`` fails it and
ends the session after it (exit status 4, set at the end).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..run.retriever import RETRIEVER_STAGE, QueryOutcome, QueryRequest, RetrieverShapeError
from ..verdict import Stop

if TYPE_CHECKING:
    from ..run.determinism import DeterminismProbe
    from ..run.retriever.context import ContextUse
    from ..run.retriever.items import RetrieverCall
    from ..run.source import Compute, Sharded
    from ..session.payload import RunBundle
    from ..session.session import RetrievalSession

#: ``progress(done, total)``: reports how far the retriever has got.
Progress = Callable[[int, int], None]


def _stdout_is_a_terminal() -> bool:
    stdout = sys.__stdout__
    return stdout is not None and stdout.isatty()


def progress_line(total: int, terminal: Callable[[], Any], capture: Any) -> Progress | None:
    """A progress line (``retrieval: 120/500 queries``, written at most every 0.2 s, then
    ``done``) on long runs, only on a terminal; None when the run has fewer than 50 queries or
    stdout is no terminal. ``terminal()`` gives pytest's terminal writer; ``capture``, pytest's
    capture manager (or None), is suspended while the line is written, so it shows past the
    tests' output capture."""
    if total < 50:
        return None
    # pytest's capture points the stdout file descriptor at a temporary file while a test runs:
    # ask whether it is a terminal with the capture suspended, as the line is written.
    if capture is None:
        on_terminal = _stdout_is_a_terminal()
    else:
        with capture.global_and_fixture_disabled():
            on_terminal = _stdout_is_a_terminal()
    if not on_terminal:
        return None
    writer = terminal()

    def write(text: str) -> None:
        if capture is None:
            writer.write(text, flush=True)
            return
        with capture.global_and_fixture_disabled():
            writer.write(text, flush=True)

    last = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < 0.2:
            return
        last[0] = now
        write(f"\rretrieval: {done}/{total} queries" + (" done\n" if done >= total else ""))

    return show


def run_queries(
    session: RetrievalSession,
    retriever: Any,
    reranker: Any,
    *,
    doc_id: Any = None,
    doc_map: Any = None,
    progress: Progress | None = None,
    requests: Sequence[QueryRequest] | None = None,
    only: Sequence[str] | None = None,
    at_depth: Mapping[str, int] | None = None,
    on_call: Callable[[RetrieverCall], None] | None = None,
    context: ContextUse | None = None,
) -> list[QueryOutcome]:
    """Call the retriever (and reranker) on every scorable query, at the session's depth plan
    (:attr:`.RetrievalSession.depth_plan`: the first depth, queries whose chunks collapse into
    too few documents asked again deeper); or only on ``requests`` (what the cache did not
    serve).

    Returns the outcomes (store them with :meth:`.RetrievalSession.set_outcomes`); a TypeError
    means the retriever object has no method we can call. ``only`` restricts the run to these
    ids (the determinism probe), each asked first at its depth in ``at_depth`` (the depth its
    ranking came from); ``on_call`` receives every successful retriever call (the cache).
    ``context`` is the run's :class:`~.retriever.context.ContextUse` (the keys of the whole
    golden set and the filter function): each query's context reaches the retriever as it
    says, the same whichever queries the cache left to call.
    """
    from ..run.retriever import run_pipeline

    settings = session.settings
    plan = session.depth_plan
    if requests is None:
        queries = session.scorable_queries()
        if only is not None:
            wanted = set(only)
            queries = [q for q in queries if q.id in wanted]
        depths = at_depth or {}
        requests = [QueryRequest.of(q, depths.get(q.id)) for q in queries]
    return run_pipeline(
        requests,
        retriever,
        reranker,
        depth=session.first_depth,
        concurrency=settings.concurrency,
        timeout=settings.timeout or None,
        batch_size=settings.batch_size,
        doc_id=doc_id,
        doc_map=doc_map,
        doc_id_separator=settings.doc_id_separator,
        progress=progress,
        fill=plan.fill if plan is not None else None,
        max_depth=plan.max_depth if plan is not None else None,
        on_call=on_call,
        context=context,
    )


@dataclass
class RunPhase:
    """The run of one session, made at most once (once in total under xdist)."""

    session: RetrievalSession
    rootdir: Path
    #: Fail the running test with this message (pytest.fail under the plugin).
    fail: Callable[[str], NoReturn]
    #: Fail the running test with this usage error and end the session after it (exit status
    #: 4, which the end of the session sets from the recorded stop).
    usage_error: Callable[[str], NoReturn]
    #: Warn (the reasons the cache was not used).
    warn: Callable[[str], None]
    #: A progress line for a run over this many queries, or None.
    progress: Callable[[int], Progress | None]
    #: Why the run failed (every later test fails with it), or was refused.
    run_error: str | None = field(default=None, init=False)
    lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    #: The ``module:function`` spec each stage was built from by the plugin's own fixture
    #: (``retrieval_retriever``, ``retrieval_reranker``); a stage the user's conftest fixture
    #: returned is not here. What a shape refusal names as the place to fix.
    built_from: dict[str, str] = field(default_factory=dict, init=False)

    def ensure(
        self,
        fixture: Callable[[str], Any],
        *,
        worker: Mapping[str, Any] | None,
    ) -> None:
        """Run the retriever over the golden set unless the session has its run.

        ``fixture`` gets a fixture by name (``retriever_under_test``, ``reranker_under_test``;
        under xdist ``tmp_path_factory``, whose base folder's parent the workers share), and
        ``worker`` is the xdist worker's input (None outside xdist).
        """
        session = self.session
        if session.has_run and self.run_error is None:
            return
        with self.lock:
            if self.run_error:  # stopped: every later test fails with the reason
                self.fail(self.run_error)
            if session.outcomes is not None:  # another thread ran it meanwhile
                return
            try:
                self._ensure(fixture, worker)
            except Exception as exc:  # the stops themselves are pytest outcomes, not these
                from ..errors import InputError
                from ..text import for_terminal

                if isinstance(exc, InputError):  # bad input found on the way: a usage error
                    self.stop(Stop.refused(*exc.reason_and_fix()))
                # Not the user's input: the traceback (pytest shows it) says where, and the
                # reports say the run errored instead of going missing (a stop recorded on the
                # way, the retriever fixture's, is the one kept).
                self.run_error = _stop_text(
                    session,
                    Stop.errored(
                        f"the run phase raised {type(exc).__name__}: {for_terminal(exc)}",
                        "see the traceback of the first test that needed the run",
                    ),
                )
                raise

    def build(self, setting: str) -> Any:
        """What the ``module:function`` setting (``retriever``, ``reranker``) names, built if
        it is a factory (the plugin's default fixtures; None without a reranker); the missing
        retriever, or a spec that does not import, refuses the run."""
        from ..errors import InputError
        from ..run.factories import NO_RETRIEVER, NO_RETRIEVER_FIX, build

        spec = getattr(self.session.settings, setting)
        if not spec and setting == "retriever":
            self.stop(Stop.refused(NO_RETRIEVER, NO_RETRIEVER_FIX))
        try:
            built = build(spec, f"retrieval_{setting}") if spec else None
            if spec:
                self.built_from[setting] = spec
            return built
        except InputError as exc:
            self.stop(Stop.refused(*exc.reason_and_fix()))

    def stop(self, found: Stop) -> NoReturn:
        """Record why the run has no numbers, then stop: a refusal fails the running test as a
        usage error (exit status 4), an error fails it; every later test that needs the run
        fails with the same text."""
        self.run_error = _stop_text(self.session, found)
        if found.is_refusal:
            self.usage_error(self.run_error)
        self.fail(self.run_error)

    def _ensure(self, fixture: Callable[[str], Any], worker: Mapping[str, Any] | None) -> None:
        session = self.session
        retriever = reranker = None
        if not session.run_files:  # a stored run is gated without building the retriever
            retriever = self._build(fixture, "retriever_under_test")
            reranker = self._build(fixture, "reranker_under_test")
            session.plan_depth(retriever)  # how deep it is asked, and why

        from ..run.factories import corpus_ids, depth_hint, describe_callable
        from ..run.source import describe_runs
        from ..session.findings import every_query_failed, refusal

        distribute: Sharded | None = None
        if worker is not None and not session.run_files:
            from ..run.source import sharded

            # Workers that need the run share its queries: shards in the session's shared
            # temporary folder, each query run by one worker (see shards.py).
            distribute = sharded(
                fixture("tmp_path_factory").getbasetemp().parent,
                worker["testrunuid"],
                workers=int(worker.get("workercount", 1)),
                batch_size=session.settings.batch_size,
                key=f"{session.settings.cache} depth={session.effective_depth}",
                worker=str(worker.get("workerid", "")) or None,
            )
        # Under xdist one worker probes the run (and makes a multi-run baseline's extra
        # runs): the one that completed its last shard; its payload brings them to the
        # controller.
        outcomes, probe, extra = self._run(retriever, reranker, distribute)
        session.set_checks(probe, extra)
        name = describe_runs(session.run_files) if session.run_files else None
        session.set_outcomes(
            outcomes,
            retriever_name=name or describe_callable(retriever),
            depth_hint=None if session.run_files else depth_hint(retriever),
        )
        stopped = refusal(session, corpus_ids(session.settings.corpus)) or every_query_failed(
            session
        )
        if stopped is not None:
            self.stop(stopped)

    def _build(self, fixture: Callable[[str], Any], name: str) -> Any:
        """The fixture's retriever (or reranker); an exception of the user's fixture makes the
        run errored, and goes on to pytest (its traceback is the user's code)."""
        try:
            return fixture(name)
        except Exception as exc:
            from ..text import for_terminal

            self.run_error = _stop_text(
                self.session,
                Stop.errored(
                    f"the {name} fixture raised {type(exc).__name__}: {for_terminal(exc)}",
                    f"fix {name} (or the factory it calls): its traceback is in the first "
                    "test that needed the run",
                ),
            )
            raise

    def _run(self, retriever: Any, reranker: Any, distribute: Sharded | None = None) -> RunBundle:
        """The run (shared out under xdist), then the determinism probe and any extra baseline
        runs (under xdist, only in the worker that completed the run's last shard)."""
        from ..run.determinism import run_checks
        from ..run.factories import context_option, doc_id_option
        from ..run.retriever.shapes import context_warning
        from ..run.source import obtain

        session = self.session

        def take(compute: Compute | None, **live: Any) -> list[QueryOutcome]:
            # The run files, the cache or the retriever: runsource decides, and says which.
            outcomes, info = obtain(
                session.settings,
                session.scorable_queries(),
                rootdir=self.rootdir,
                compute=compute,
                redacted=session.scope.redacted,
                golden_ids=[q.id for q in session.golden],
                run_files=session.run_files,
                depth=session.first_depth,
                plan=session.depth_plan,
                **live,
            )
            session.set_run_info(info)
            return outcomes

        if session.run_files:  # gated as stored: no retriever, no doc-id mapping, no probe
            return take(None, warn=self.warn), None, []
        doc_id, doc_map = doc_id_option(session.settings.doc_id, session.settings.doc_id_map)
        use = context_option(session.golden.context_keys, session.settings.context_filter)
        scoped = sum(1 for q in session.scorable_queries() if q.context)
        unused = context_warning(retriever, session.first_depth, use, scoped) if scoped else None
        if unused is not None:
            self.warn(unused)
        progress = self.progress(len(session.scorable_queries()))

        def compute(
            requests: Sequence[QueryRequest],
            on_call: Callable[[RetrieverCall], None] | None = None,
        ) -> list[QueryOutcome]:
            return run_queries(
                session,
                retriever,
                reranker,
                doc_id=doc_id,
                doc_map=doc_map,
                progress=progress,
                requests=requests,
                on_call=on_call,
                context=use,
            )

        first: dict[str, int] = {}

        def rerun(only: Sequence[str] | None) -> list[QueryOutcome]:
            # The probe re-runs a query at the depth its ranking came from (its last call's).
            return run_queries(
                session,
                retriever,
                reranker,
                doc_id=doc_id,
                doc_map=doc_map,
                only=only,
                at_depth=first if only is not None else None,
                context=use,
            )

        try:
            outcomes = take(
                compute,
                retriever=retriever,
                reranker=reranker,
                warn=self.warn,
                distribute=distribute,
            )
            first.update((o.query_id, o.asked) for o in outcomes if o.asked is not None)
            probe: DeterminismProbe | None = None
            extra: list[list[QueryOutcome]] = []
            # Replay never calls the retriever: no probe. Under xdist, once per session.
            once = distribute is None or distribute.last
            if session.settings.cache != "replay" and once:
                probe, extra = run_checks(
                    session.settings,
                    session.scorable_queries(),
                    outcomes,
                    rerun,
                    compared=session.baseline is not None
                    or any(b.snapshot is not None for b in session.ledger_baselines.values()),
                )
        except TypeError as exc:  # the retriever object has no usable method
            # A refusal with its own fix (drop retrieval_context_filter, build the retriever
            # without a filter) carries it; the general one is for a shape the plugin can't call,
            # and names where the object came from: the fixture, or the factory setting.
            own = getattr(exc, "fix", None)
            message, origin = str(exc), f"the {RETRIEVER_STAGE}_under_test fixture"
            if isinstance(exc, RetrieverShapeError):
                # The shape's message names the fixture (describe_retriever's reader has one);
                # a stage the plugin built from its setting has no fixture to fix.
                spec = self.built_from.get(exc.stage)
                origin = (
                    exc.fixture
                    if spec is None
                    else f"your factory (retrieval_{exc.stage} = {spec})"
                )
                message = exc.naming(origin)
            self.stop(
                Stop.refused(
                    message,
                    own
                    if isinstance(own, str)
                    else f"return an object the plugin can call from {origin}, as said above "
                    "(docs/frameworks.md lists each framework's shape)",
                )
            )
        return outcomes, probe, extra


def _stop_text(session: RetrievalSession, found: Stop) -> str:
    """Record ``found`` in the session (the first stop is kept) and return the text every test
    that needs the run fails with (escaped for terminals and CI logs, line by line)."""
    from ..text import terminal_text

    session.set_stop(found)
    stop = session.stop
    assert stop is not None
    return terminal_text(stop.text)
