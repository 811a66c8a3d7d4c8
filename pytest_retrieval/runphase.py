"""The run phase: the retriever run over the golden set once per session, without pytest.

The first test that needs scores asks :meth:`RunPhase.ensure` for the run (through the plugin's
fixtures): it builds the retriever and the reranker, shares the queries out among xdist workers
(:func:`.runsource.sharded`), takes the run from :func:`.runsource.obtain` (run files, the cache
or the retriever), runs the determinism probe and any extra baseline runs
(:func:`.determinism.run_checks`; under xdist once per session, in the worker that completed the
run's last shard), stores it all in the session and refuses a run whose numbers would be
meaningless (:func:`.runchecks.refusal`).

What pytest does is passed in: the plugin gives a fixture getter, the shared temporary folder,
a warning, a progress line, and two ways to stop: ``fail`` fails the running test (and, with
:attr:`RunPhase.run_error` kept, every later one the same way), ``usage_error`` stops the
session with exit status 4.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .retriever import QueryOutcome, QueryRequest

if TYPE_CHECKING:
    from .determinism import DeterminismProbe
    from .report.payload import RunBundle
    from .runsource import Sharded
    from .session import RetrievalSession

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
) -> list[QueryOutcome]:
    """Call the retriever (and reranker) on every scorable query, at the session's depth;
    or only on ``requests`` (what the cache did not serve).

    Returns the outcomes (store them with :meth:`.RetrievalSession.set_outcomes`); a TypeError
    means the retriever object has no method we can call. ``only`` restricts the run to these
    ids (the determinism probe).
    """
    from .retriever import run_pipeline

    settings = session.settings
    if requests is None:
        queries = session.scorable_queries()
        if only is not None:
            wanted = set(only)
            queries = [q for q in queries if q.id in wanted]
        requests = [QueryRequest(q.id, q.text or "") for q in queries]
    return run_pipeline(
        requests,
        retriever,
        reranker,
        depth=session.effective_depth,
        concurrency=settings.concurrency,
        timeout=settings.timeout or None,
        batch_size=settings.batch_size,
        doc_id=doc_id,
        doc_map=doc_map,
        doc_id_separator=settings.doc_id_separator,
        progress=progress,
    )


@dataclass
class RunPhase:
    """The run of one session, made at most once (once in total under xdist)."""

    session: RetrievalSession
    rootdir: Path
    #: Fail the running test with this message (pytest.fail under the plugin).
    fail: Callable[[str], NoReturn]
    #: Stop the session with this usage error, exit status 4.
    usage_error: Callable[[str], NoReturn]
    #: Warn (the reasons the cache was not used).
    warn: Callable[[str], None]
    #: A progress line for a run over this many queries, or None.
    progress: Callable[[int], Progress | None]
    #: Why the run failed (every later test fails with it), or was refused.
    run_error: str | None = field(default=None, init=False)
    lock: threading.Lock = field(default_factory=threading.Lock, init=False)

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
        if session.has_run:
            return
        with self.lock:
            if session.outcomes is not None:  # another thread ran it meanwhile
                return
            if self.run_error:
                self.fail(self.run_error)
            retriever = reranker = None
            if not session.run_files:  # a stored run is gated without building the retriever
                retriever = fixture("retriever_under_test")
                reranker = fixture("reranker_under_test")

            from .runchecks import refusal
            from .runsource import describe_runs
            from .specs import corpus_ids, depth_hint, describe_callable

            distribute: Sharded | None = None
            if worker is not None and not session.run_files:
                from .runsource import sharded

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
            refused = refusal(session, corpus_ids(session.settings.corpus))
            if refused is not None:
                self.run_error = refused
                self.usage_error(refused)

    def _run(self, retriever: Any, reranker: Any, distribute: Sharded | None = None) -> RunBundle:
        """The run (shared out under xdist), then the determinism probe and any extra baseline
        runs (under xdist, only in the worker that completed the run's last shard)."""
        from .determinism import run_checks
        from .errors import InputError
        from .runsource import obtain
        from .specs import doc_id_option
        from .text import guard_lines

        session = self.session
        if session.run_files:  # gated as stored: no retriever, no doc-id mapping, no probe
            return obtain(session, rootdir=self.rootdir, compute=None), None, []
        try:
            doc_id, doc_map = doc_id_option(session.settings.doc_id, session.settings.doc_id_map)
        except InputError as exc:
            self.usage_error(str(exc))
        progress = self.progress(len(session.scorable_queries()))

        def compute(requests: Sequence[QueryRequest]) -> list[QueryOutcome]:
            return run_queries(
                session,
                retriever,
                reranker,
                doc_id=doc_id,
                doc_map=doc_map,
                progress=progress,
                requests=requests,
            )

        def rerun(only: Sequence[str] | None) -> list[QueryOutcome]:
            return run_queries(
                session, retriever, reranker, doc_id=doc_id, doc_map=doc_map, only=only
            )

        try:
            # The run files, the cache or the retriever: runsource decides (and records which).
            outcomes = obtain(
                session,
                rootdir=self.rootdir,
                compute=compute,
                retriever=retriever,
                reranker=reranker,
                warn=self.warn,
                distribute=distribute,
            )
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
                    compared=session.baseline is not None,
                )
        except InputError as exc:  # a replay the cache cannot serve
            self.usage_error(str(exc))
        except TypeError as exc:  # the retriever object has no usable method
            self.run_error = guard_lines(f"pytest-retrieval: {exc}")
            self.fail(self.run_error)
        return outcomes, probe, extra
