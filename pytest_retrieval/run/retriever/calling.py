"""Calling the retriever: threads, async, batches, timeouts, per-query errors, two stages."""

from __future__ import annotations

import asyncio
import collections
import inspect
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..stages import RERANKER_STAGE, RETRIEVER_STAGE
from .context import NO_CONTEXT, ContextUse, reranker_route
from .items import (
    DocIdOption,
    DocMap,
    QueryOutcome,
    QueryRequest,
    RetrieverCall,
    RetrieverOutputError,
    RetrieverShape,
    RetrieverShapeError,
    adapt_fast,
    check_ranking,
    check_separator,
    deeper,
    describe,
    looks_like_one_item,
)
from .shapes import CallPlan, is_async_callable, plan_call


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _collect_async(iterable: Any) -> list[Any]:
    return [item async for item in iterable]


def _listed_if_lazy(value: Any) -> Any:
    """An iterator (generator, map) or another one-pass iterable as a list; others unchanged."""
    if isinstance(value, Iterator):
        return list(value)
    if (
        isinstance(value, (str, bytes, Sequence, Mapping, set, frozenset))
        or inspect.isclass(value)
        or looks_like_one_item(value)
        or not isinstance(value, Iterable)
    ):
        return value
    return list(value)  # numpy arrays too: their items are numpy ids, read later


def _materialise(value: Any) -> Any:
    """Await and iterate a result to the end, in the calling (timed) thread."""
    if inspect.isawaitable(value):
        # A coroutine from a sync-looking callable (a partial of an async def): this worker
        # thread has no running loop, so it gets its own.
        value = asyncio.run(_awaited(value))
    if hasattr(value, "__aiter__"):
        value = asyncio.run(_collect_async(value))
    return _listed_if_lazy(value)


async def _materialise_async(value: Any) -> Any:
    if inspect.isawaitable(value):
        value = await value
    if hasattr(value, "__aiter__"):
        value = await _collect_async(value)
    return _listed_if_lazy(value)


def _error_text(exc: BaseException) -> tuple[str, str]:
    message = str(exc) or type(exc).__name__
    return type(exc).__name__, message if len(message) <= 500 else message[:497] + "..."


Done = Callable[[int, Any, BaseException | None, float], None]

#: What one batch of calls should take: long enough that a batch's one hand-off between threads
#: is noise next to its calls (a retriever answering in microseconds spent most of its run in
#: hand-offs when each call was one), short enough that the workers finish together, the
#: progress line moves and a run stops soon after Ctrl-C.
_BATCH_SECONDS = 0.02
#: The largest batch: the results a worker holds before it hands them over.
_MAX_BATCH = 256


#: How much process CPU per second of wall time (in cores) a run at full concurrency may use and
#: still be bound by one core (the GIL): threads cannot overlap such calls, only add hand-offs.
_ONE_CORE = 0.75
#: A window of the run measures at least this long and this many calls per worker thread.
_WINDOW_SECONDS = 0.1
_WINDOW_CALLS = 2
#: One thread is kept when it makes at least this share of the calls per second that all of
#: them made (threads that gain less than ~10% do not pay for their hand-offs).
_ONE_IS_ENOUGH = 1 / 1.1


@dataclass(slots=True)
class _Tuner:
    """Whether the worker threads pay for themselves, decided once, early in a run.

    The run starts at full ``concurrency`` (a retriever waiting on a network or a disk, the
    case concurrency is for, is never slowed). After a first window (:data:`_WINDOW_SECONDS`
    and :data:`_WINDOW_CALLS` calls per thread), if the process used about one core or more
    (:data:`_ONE_CORE`: the calls compute rather than wait), one thread runs alone for a second
    window; when it makes at least :data:`_ONE_IS_ENOUGH` of the calls per second that all of
    them did (pure-Python work holding the GIL, where threads only add switches), it is kept
    alone, else every thread comes back. Each call keeps its own timeout either way; what is
    decided changes how fast the run goes, never what it returns.
    """

    concurrency: int
    clock: Callable[[], float] = time.perf_counter
    cpu_clock: Callable[[], float] = time.process_time
    #: How many worker threads may claim batches now.
    allowed: int = 0
    #: "full" (the first window), "draining" (waiting for one thread to be left), "one" (the
    #: second window), "done".
    state: str = "full"
    began: float = 0.0
    cpu_began: float = 0.0
    calls: int = 0
    full_rate: float = 0.0

    #: What an earlier run of the same callable in this process decided (True: one thread),
    #: or None: decide in this run.
    alone: bool | None = None

    def __post_init__(self) -> None:
        self.allowed = 1 if self.alone and self.concurrency > 1 else self.concurrency
        decided = self.concurrency <= 1 or self.alone is not None
        self.state = "done" if decided else "full"
        self.began, self.cpu_began = self.clock(), self.cpu_clock()

    @property
    def decision(self) -> bool | None:
        """Whether one thread was kept (None: nothing decided in this run)."""
        if self.state != "done" or self.concurrency <= 1 or self.alone is not None:
            return None
        return self.allowed == 1

    def called(self, alive: int) -> int | None:
        """One call finished (under the run's lock), ``alive`` worker threads running: the new
        :attr:`allowed` when it changes (more than ``alive``: start threads), else None."""
        if self.state == "done":
            return None
        now = self.clock()
        if self.state == "draining":
            if alive <= 1:  # the others have handed in their batches: the second window opens
                self.state, self.began, self.calls = "one", now, 0
            return None
        self.calls += 1
        elapsed = now - self.began
        if elapsed < _WINDOW_SECONDS or self.calls < _WINDOW_CALLS * self.allowed:
            return None
        rate = self.calls / elapsed
        if self.state == "full":
            cores = (self.cpu_clock() - self.cpu_began) / elapsed
            if cores < _ONE_CORE:
                self.state = "done"  # the calls wait: threads overlap the waits
                return None
            self.state, self.full_rate, self.allowed = "draining", rate, 1
            return 1
        self.state = "done"
        if rate >= self.full_rate * _ONE_IS_ENOUGH:
            return None
        self.allowed = self.concurrency
        return self.allowed


#: What :class:`_Tuner` decided per callable in this process ((id, stage) -> (callable, one
#: thread)): the shards of an xdist worker and the deeper calls of a run are decided once. The
#: callable is held so that its id cannot be reused; the oldest are dropped past
#: :data:`_DECISIONS_KEPT`.
_DECISIONS: dict[tuple[int, str], tuple[object, bool]] = {}
_DECISIONS_KEPT = 16


def _decided(key: tuple[object, str] | None) -> bool | None:
    if key is None:
        return None
    found = _DECISIONS.get((id(key[0]), key[1]))
    return found[1] if found is not None and found[0] is key[0] else None


def _decide(key: tuple[object, str] | None, alone: bool | None) -> None:
    if key is None or alone is None:
        return
    _DECISIONS[(id(key[0]), key[1])] = (key[0], alone)
    while len(_DECISIONS) > _DECISIONS_KEPT:
        del _DECISIONS[next(iter(_DECISIONS))]


def _has_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_inline(fn: Callable[[int], Any], count: int, on_done: Done) -> None:
    """Call ``fn(i)`` for i in range(count) in this thread, one after the other: no timeout to
    enforce and one query at a time, so a thread would only add its hand-offs (and a retriever
    bound to the thread that built it, such as a ``sqlite3`` connection, works).

    What a call raises is that query's error, as in a worker thread; a KeyboardInterrupt is
    Ctrl-C reaching pytest's own thread, so it ends the run instead.
    """
    for job in range(count):
        start = time.perf_counter()
        value: Any = None
        error: BaseException | None = None
        try:
            value = fn(job)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            error = exc
        on_done(job, value, error, time.perf_counter() - start)


@dataclass(slots=True)
class _Slot:
    """One worker thread's batch (mutable, shared with the waiting thread under the run's lock):
    the call under way (``current``, a position in ``batch``, since ``started``) and the results
    the worker holds until it hands the batch over."""

    batch: list[int]
    started: float
    current: int = 0
    results: list[tuple[int, Any, BaseException | None, float]] = field(default_factory=list)
    abandoned: bool = False


def _run_threads(
    fn: Callable[[int], Any],
    count: int,
    *,
    concurrency: int,
    timeout: float | None,
    on_done: Done,
    tuned: tuple[object, str] | None = None,
) -> None:
    """Call ``fn(i)`` for i in range(count) and report each result via ``on_done`` (in this
    thread): in this thread when there is no timeout and one query at a time
    (:func:`_run_inline`), otherwise on ``concurrency`` long-lived daemon threads.

    The threads take the queries in batches, one hand-off each way per batch: a batch is sized
    from the mean latency of the calls made so far to last about :data:`_BATCH_SECONDS` (one
    query while nothing is known, and never more than an even share of what is left). Each call
    has its own ``timeout``: a call that runs past it is reported as a TimeoutError and
    abandoned with its thread (a daemon, so a hanging retriever cannot hang pytest); the results
    of that batch already made are reported, and its queries not yet called go to a fresh
    worker.
    """
    if timeout is None and concurrency == 1 and not _has_running_loop():
        _run_inline(fn, count, on_done)
        return
    lock = threading.Lock()
    running: dict[int, _Slot] = {}  # worker id -> its batch
    left: collections.deque[int] = collections.deque(range(count))
    latency = [0.0, 0]  # seconds of the calls made so far, how many
    workers = min(concurrency, count)
    # ``tuned``: (the callable behind fn, its stage), whose earlier decision is reused.
    tuner = _Tuner(workers, alone=_decided(tuned))
    next_worker = [0]
    alive = [0]  # workers not yet gone (out of queries, or abandoned with a timed-out call)
    done_batches: queue.SimpleQueue[list[tuple[int, Any, BaseException | None, float]]] = (
        queue.SimpleQueue()
    )
    # Set when the run ends early (Ctrl-C reaches the waiting main thread): no worker starts
    # another query, so an interrupted run stops calling (and billing) the retriever at once.
    stop = threading.Event()

    def claim(wid: int) -> _Slot | None:
        with lock:
            if stop.is_set() or not left or alive[0] > tuner.allowed:
                alive[0] -= 1
                return None
            size = 1
            if latency[1]:
                mean = latency[0] / latency[1]
                size = int(_BATCH_SECONDS / mean) if mean > 0 else _MAX_BATCH
            size = max(1, min(size, _MAX_BATCH, len(left) // workers))
            slot = _Slot([left.popleft() for _ in range(size)], time.perf_counter())
            running[wid] = slot
            return slot

    def work(wid: int) -> None:
        while (slot := claim(wid)) is not None:
            for position, job in enumerate(slot.batch):
                start = slot.started  # set by this thread, under the lock, before the call
                value: Any = None
                error: BaseException | None = None
                try:
                    value = fn(job)
                except BaseException as exc:
                    error = exc
                elapsed = time.perf_counter() - start
                # One lock per call: the result handed in and the next call's start recorded
                # together, so the waiting thread never sees a finished call as under way.
                with lock:
                    if slot.abandoned:
                        return  # timed out and replaced: drop the late result
                    slot.results.append((job, value, error, elapsed))
                    latency[0] += elapsed
                    latency[1] += 1
                    if stop.is_set():
                        alive[0] -= 1
                        return
                    slot.current = position + 1
                    more = tuner.called(alive[0])
                    slot.started = time.perf_counter()
                if more is not None and more > 1:
                    spawn()  # the threads paid for themselves after all: all come back
            with lock:
                if slot.abandoned:
                    return
                del running[wid]
            done_batches.put(slot.results)

    def spawn() -> None:
        """Start workers until ``workers`` are alive or each query left has one (after a
        timeout: the abandoned worker's place, and of any that ran out of queries meanwhile)."""
        with lock:
            fresh = min(tuner.allowed - alive[0], len(left))
            alive[0] += max(0, fresh)
        for _ in range(fresh):
            wid = next_worker[0]
            next_worker[0] += 1
            threading.Thread(target=work, args=(wid,), name=f"retrieval-{wid}", daemon=True).start()

    spawn()
    try:
        _collect(count, timeout, done_batches, running, left, lock, alive, on_done, spawn)
    finally:
        stop.set()
        with lock:
            _decide(tuned, tuner.decision)


def _collect(
    count: int,
    timeout: float | None,
    done_batches: queue.SimpleQueue[list[tuple[int, Any, BaseException | None, float]]],
    running: dict[int, _Slot],
    left: collections.deque[int],
    lock: threading.Lock,
    alive: list[int],
    on_done: Done,
    spawn: Callable[[], None],
) -> None:
    """Wait for every query's result (or its timeout) and report it; the main loop of
    :func:`_run_threads`. A timed-out call's batch is abandoned: what it made is reported, the
    call is a TimeoutError naming the limit, and the rest of its batch goes back to the front of
    ``left`` for the fresh worker spawned in its place."""
    done = 0
    while done < count:
        wait: float | None = None
        if timeout is not None:
            with lock:
                starts = [slot.started for slot in running.values()]
            now = time.perf_counter()
            wait = max(0.0, min((s + timeout - now for s in starts), default=timeout)) + 0.005
        try:
            batch = done_batches.get(timeout=wait)
        except queue.Empty:
            now = time.perf_counter()
            expired: list[_Slot] = []
            with lock:
                for wid, slot in list(running.items()):
                    under_way = slot.current < len(slot.batch)  # else handing the batch in
                    if under_way and timeout is not None and now - slot.started >= timeout:
                        del running[wid]
                        slot.abandoned = True
                        alive[0] -= 1
                        left.extendleft(reversed(slot.batch[slot.current + 1 :]))
                        expired.append(slot)
            for slot in expired:
                for job, value, error, elapsed in slot.results:
                    on_done(job, value, error, elapsed)
                job = slot.batch[slot.current]
                error = TimeoutError(f"no answer within {timeout:g} s")
                on_done(job, None, error, now - slot.started)
                done += len(slot.results) + 1
            if expired:
                spawn()
            continue
        for job, value, error, elapsed in batch:
            on_done(job, value, error, elapsed)
        done += len(batch)


#: How long the event loop may stay silent (its heartbeat ticks every _HEARTBEAT s) before the run
#: counts it as blocked by a coroutine running blocking code.
_LOOP_GRACE = 0.25
_HEARTBEAT = 0.05


def _running_query(thread: threading.Thread, code: Any) -> int | None:
    """The query whose ``call`` coroutine is executing on ``thread`` right now, if any."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code is code:
            value = frame.f_locals.get("i")
            return value if isinstance(value, int) else None
        frame = frame.f_back
    return None


def _run_async(
    fn: Callable[[Any], Any],
    payloads: Sequence[Any],
    *,
    concurrency: int,
    timeout: float | None,
    on_done: Done,
) -> None:
    """Await ``fn(payload)`` for every payload on one private event loop, ``concurrency`` at once.

    One loop for the whole run, so that async clients bound to a loop keep working. The loop
    times its queries out itself (``wait_for``). A coroutine that blocks the loop cannot be timed
    out from inside it, so this thread watches the deadlines and the loop's heartbeat: when a
    query is past its deadline and the loop is silent, the query blocking it (found from the
    loop thread's stack) is timed out from here, the loop is abandoned (a daemon thread), and the
    other queries it held, started or not, are run again on a fresh loop.
    """
    count = len(payloads)
    lock = threading.Lock()
    pending = collections.deque(range(count))
    running: dict[int, tuple[float, int]] = {}  # query -> (start, loop generation)
    finished: set[int] = set()
    beats: dict[int, float] = {}
    generation = [0]
    results: queue.SimpleQueue[tuple[int, Any, BaseException | None, float]] = queue.SimpleQueue()
    threads: dict[int, threading.Thread] = {}
    abandoned: set[int] = set()  # generations whose loop was blocked

    def claim(gen: int) -> tuple[int, float] | None:
        with lock:
            if gen != generation[0] or not pending:
                return None
            i = pending.popleft()
            start = time.perf_counter()
            running[i] = (start, gen)
            return i, start

    async def call(i: int, gen: int, start: float) -> None:
        with lock:
            if running.get(i, (0.0, -1))[1] != gen:
                return  # moved to a fresh loop while this one was blocked
        # What the call raised is reported, not raised: asyncio lets a SystemExit escape the
        # event loop (failing every query), and it must fail this query only, as in a thread.
        value: Any = None
        error: BaseException | None = None
        try:
            value = await _materialise_async(fn(payloads[i]))
        except asyncio.CancelledError:  # the timeout cancelling the call
            raise
        except BaseException as exc:
            error = exc
        # Reported the moment it is known: the worker's own resumption may be held up behind
        # another query that blocks the loop.
        results.put((i, value, error, time.perf_counter() - start))

    async def worker(gen: int) -> None:
        while (claimed := claim(gen)) is not None:
            i, start = claimed
            try:
                await asyncio.wait_for(call(i, gen, start), timeout)
            except asyncio.TimeoutError:
                error = TimeoutError(f"no answer within {timeout:g} s")
                results.put((i, None, error, time.perf_counter() - start))

    async def ticker(gen: int) -> None:
        while True:
            beats[gen] = time.perf_counter()
            await asyncio.sleep(_HEARTBEAT)

    async def main(gen: int) -> None:
        beat = asyncio.ensure_future(ticker(gen))
        try:
            await asyncio.gather(*(worker(gen) for _ in range(min(concurrency, count))))
        finally:
            beat.cancel()

    def start_loop(gen: int) -> None:
        beats[gen] = time.perf_counter()

        def runner() -> None:
            try:
                asyncio.run(main(gen))
            except BaseException as exc:  # our own failure: surface it, do not hang
                results.put((-1, None, exc, 0.0))

        thread = threading.Thread(target=runner, name=f"retrieval-async-{gen}", daemon=True)
        threads[gen] = thread
        thread.start()

    blocked_message = (
        f"no answer within {timeout:g} s (the event loop was blocked: an async def ran blocking "
        "code, such as time.sleep or a synchronous client, without await)"
    )
    start_loop(0)
    done = 0
    while done < count:
        wait: float | None = None
        if timeout is not None:
            with lock:
                starts = [start for start, _g in running.values()]
            now = time.perf_counter()
            deadline = min((s + timeout + _LOOP_GRACE - now for s in starts), default=_LOOP_GRACE)
            wait = max(0.0, min(deadline, _LOOP_GRACE)) + 0.005
        try:
            i, value, error, elapsed = results.get(timeout=wait)
        except queue.Empty:
            pass
        else:
            if i < 0:
                assert error is not None
                raise error
            with lock:
                running.pop(i, None)
                late = i in finished
                finished.add(i)
            if not late:  # not already reported as timed out from here
                on_done(i, value, error, elapsed)
                done += 1
            continue
        assert timeout is not None  # without a timeout the wait above has none either
        now = time.perf_counter()
        timed_out: list[tuple[int, float, str]] = []
        with lock:
            current = generation[0]
            blocked = now - beats.get(current, now) > _LOOP_GRACE
            mine = {i: start for i, (start, g) in running.items() if g == current}
            if blocked and any(now - start >= timeout for start in mine.values()):
                culprit = _running_query(threads[current], call.__code__)
                for i, start in mine.items():
                    if i == culprit or (culprit is None and now - start >= timeout):
                        if now - start >= timeout:
                            timed_out.append((i, now - start, blocked_message))
                        continue  # a culprit not yet due stays, timed out when it is
                    del running[i]
                    pending.appendleft(i)  # held up by the culprit: run again on a fresh loop
                abandoned.add(current)
                generation[0] += 1
            reported = {t for t, _e, _m in timed_out}
            for i, (start, g) in running.items():  # past the deadline and not timed out inside:
                if now - start >= timeout + _LOOP_GRACE and i not in reported:
                    # A culprit on a loop it blocked, or a call that ignores its cancellation.
                    message = (
                        blocked_message if g in abandoned else f"no answer within {timeout:g} s"
                    )
                    timed_out.append((i, now - start, message))
            for i, _elapsed, _message in timed_out:
                finished.add(i)
                del running[i]
        for i, elapsed, message in timed_out:
            on_done(i, None, TimeoutError(message), elapsed)
            done += 1
        if generation[0] != current:
            start_loop(generation[0])
    threads[generation[0]].join(_LOOP_GRACE)  # a healthy loop is closing; a blocked one is left


Progress = Callable[[int, int], None]


def _batch_results(
    value: Any, texts: list[str], requests: Sequence[QueryRequest], shown: str
) -> list[tuple[Any, BaseException | None]]:
    """A batch call's return value as one (result, error) per query, materialised."""
    ids = ", ".join(r.id for r in requests)
    if isinstance(value, (Mapping, str, bytes, set, frozenset)) or not isinstance(value, Iterable):
        raise RetrieverOutputError(
            f"the batch method {shown} returned {describe(value)} ({type(value).__name__}) for "
            f"the queries {ids}; return a list with one ranking per query text, in order"
        )
    values = list(value)
    if len(values) != len(texts):
        raise RetrieverOutputError(
            f"the batch method returned {len(values)} results for {len(texts)} queries ({ids}); "
            "return a list with one ranking per query text, in order"
        )
    out: list[tuple[Any, BaseException | None]] = []
    for item in values:
        if isinstance(item, BaseException):  # LangChain's return_exceptions=True
            out.append((None, item))
            continue
        try:
            out.append((_materialise(item), None))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a lazy result raising while consumed: that query only
            out.append((None, exc))
    return out


def _stage_call(
    plan: CallPlan,
    requests: Sequence[QueryRequest],
    inputs: Sequence[Any],
    *,
    concurrency: int,
    timeout: float | None,
    batch_size: int,
    on_result: Done,
    tuned: tuple[object, str] | None = None,
) -> None:
    """Call one stage over ``inputs``: ``(text, context)`` per query, ``(text, candidates,
    context)`` for the reranker (the plan's callables take them in that order)."""
    count = len(requests)
    if plan.batch is not None:
        batch = plan.batch
        chunks = [list(range(i, min(i + batch_size, count))) for i in range(0, count, batch_size)]

        def call_chunk(c: int) -> list[tuple[Any, BaseException | None]]:
            texts = [inputs[i][0] for i in chunks[c]]
            result = batch(texts, [inputs[i][-1] for i in chunks[c]])
            if inspect.isawaitable(result):
                # An async batch method: each worker thread runs it on its own event loop.
                result = asyncio.run(_awaited(result))
            return _batch_results(result, texts, [requests[i] for i in chunks[c]], plan.shape.call)

        def chunk_done(c: int, value: Any, error: BaseException | None, elapsed: float) -> None:
            members = chunks[c]
            for position, i in enumerate(members):
                item, item_error = (None, error) if error is not None else value[position]
                on_result(i, item, item_error, elapsed / len(members))

        _run_threads(
            call_chunk,
            len(chunks),
            concurrency=concurrency,
            timeout=timeout,
            on_done=chunk_done,
            tuned=tuned,
        )
        return
    single = plan.single
    assert single is not None
    if plan.is_async:
        _run_async(
            lambda payload: single(*payload),
            [tuple(inputs[i]) for i in range(count)],
            concurrency=concurrency,
            timeout=timeout,
            on_done=on_result,
        )
        return

    def one(i: int) -> Any:
        return _materialise(single(*inputs[i]))

    _run_threads(
        one, count, concurrency=concurrency, timeout=timeout, on_done=on_result, tuned=tuned
    )


def _reranker_call(fn: Callable[..., Any], use: ContextUse) -> tuple[Callable[..., Any], str]:
    """``call(text, candidates, context)`` of a reranker (``context=`` when it declares it)."""
    route = reranker_route(fn, use)
    if route is None:
        return (lambda text, candidates, _context: fn(text, candidates)), ""
    extra = route.kwargs
    return (
        lambda text, candidates, context: fn(text, candidates, **extra(context))
    ), f", {route.shown}"


def _reranker_plan(reranker: Any, use: ContextUse = NO_CONTEXT) -> CallPlan:
    if inspect.isclass(reranker):
        name = reranker.__qualname__
        raise RetrieverShapeError(
            f"the reranker under test is the class {name}, not an instance of it: return "
            f"{name}(...) from the reranker_under_test fixture, not {name}",
            stage=RERANKER_STAGE,
        )
    if callable(reranker):
        call, shown = _reranker_call(reranker, use)
        return CallPlan(
            RetrieverShape(
                "function", f"fn(text, candidates{shown})", True, context=shown[2:] or None
            ),
            single=call,
            is_async=is_async_callable(reranker),
        )
    for name in ("invoke", "retrieve", "search", "get_relevant_documents", "rerank"):
        method = getattr(reranker, name, None)
        if callable(method):
            call, shown = _reranker_call(method, use)
            return CallPlan(
                RetrieverShape(
                    f"object.{name}",
                    f"{name}(text, candidates{shown})",
                    True,
                    context=shown[2:] or None,
                ),
                single=call,
                is_async=is_async_callable(method),
            )
    raise RetrieverShapeError(
        f"the reranker under test is a {type(reranker).__name__}, which is neither callable nor "
        "has an invoke/rerank/retrieve/search method; return a function "
        "`rerank(query_text, candidates) -> ranked ids` from the reranker_under_test fixture",
        stage=RERANKER_STAGE,
    )


def run_pipeline(
    requests: Sequence[QueryRequest],
    retriever: Any,
    reranker: Any = None,
    *,
    depth: int | None = None,
    concurrency: int = 8,
    timeout: float | None = 60.0,
    batch_size: int = 32,
    doc_id: DocIdOption = None,
    doc_map: DocMap = None,
    doc_id_separator: str | None = None,
    progress: Progress | None = None,
    fill: int | None = None,
    max_depth: int | None = None,
    on_call: Callable[[RetrieverCall], None] | None = None,
    context: ContextUse | None = None,
) -> list[QueryOutcome]:
    """Run every query through the retriever (and the reranker, if any); one outcome per query.

    Stage ``retriever`` is the candidate list, asked for ``depth`` results where the shape
    allows (:func:`describe_retriever`), or for a request's own ``depth`` when it has one;
    stage ``reranker`` (when a reranker is given) is ``reranker(query_text, candidates)`` on
    the retriever's raw (materialised) candidates of its last call. A query whose retriever
    call failed is not sent to the reranker. ``doc_id``, ``doc_map`` and ``doc_id_separator``
    turn returned items into document ids (the module's chunk → document rule).

    ``fill`` (with ``max_depth``): when the depth reaches the retriever, a query whose results
    collapsed into fewer than ``fill`` documents while its call came back full is asked again
    deeper, as :func:`.items.deeper` says, until it holds ``fill`` documents, returns fewer
    results than asked or reaches ``max_depth``; only those queries are asked again.
    ``on_call`` receives every successful retriever call (each depth is its own cache entry).

    Each request's ``context`` reaches both stages as :mod:`.context` says, planned for
    ``context`` (the run's :class:`~.context.ContextUse`: every key of the whole run and the
    ``retrieval_context_filter`` function; by default the keys of these requests and no
    filter function). Raises :class:`RetrieverShapeError` (a TypeError) for a retriever it
    cannot call or hand the context to.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    check_separator(doc_id_separator)
    use = context if context is not None else ContextUse.of(r.context for r in requests)
    plans: dict[int | None, CallPlan] = {depth: plan_call(retriever, depth, use)}

    def plan_at(asked: int | None) -> CallPlan:
        if asked not in plans:
            plans[asked] = plan_call(retriever, asked, use)
        return plans[asked]

    deepens = fill is not None and max_depth is not None and plans[depth].shape.depth_passed
    rerank_plan = _reranker_plan(reranker, use) if reranker is not None else None
    outcomes = [QueryOutcome(r.id) for r in requests]
    raw: list[Any] = [None] * len(requests)
    total = len(requests) * (2 if reranker is not None else 1)
    finished = [0]
    lock = threading.Lock()

    def tick() -> None:
        if progress is not None:
            with lock:
                finished[0] += 1
                progress(finished[0], total)

    def adapt(
        value: Any,
    ) -> tuple[tuple[str, ...], tuple[float | None, ...] | None, tuple[str, ...] | None]:
        return adapt_fast(value, doc_id=doc_id, doc_map=doc_map, doc_id_separator=doc_id_separator)

    def fail(outcome: QueryOutcome, stage: str, error: BaseException) -> None:
        outcome.error_type, outcome.error = _error_text(error)
        outcome.error_stage = stage

    again: dict[int, int] = {}  # request position -> the depth to ask next

    def first_stage(asked: int | None, members: Sequence[int]) -> Done:
        def on_result(j: int, value: Any, error: BaseException | None, elapsed: float) -> None:
            i = members[j]
            outcome = outcomes[i]
            deeper_call = RETRIEVER_STAGE in outcome.rankings  # a query asked again
            outcome.latency_ms[RETRIEVER_STAGE] = (
                outcome.latency_ms.get(RETRIEVER_STAGE, 0.0) + elapsed * 1000.0
            )
            adapted = None
            if error is None:
                try:
                    adapted = adapt(value)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # a user doc_id / doc_map callable, SystemExit too
                    error = exc
            if adapted is None:
                assert error is not None
                if deeper_call:  # the answer of the last successful call stands
                    kind, message = _error_text(error)
                    outcome.deeper_error = f"asking {asked} failed: {kind}: {message}"
                else:
                    fail(outcome, RETRIEVER_STAGE, error)
                tick()
                return
            ranking, scores, returned = adapted
            outcome.rankings[RETRIEVER_STAGE] = ranking
            outcome.scores.pop(RETRIEVER_STAGE, None)
            outcome.returned.pop(RETRIEVER_STAGE, None)
            if scores is not None:
                outcome.scores[RETRIEVER_STAGE] = scores
            if returned is not None:
                outcome.returned[RETRIEVER_STAGE] = returned
            outcome.asked = asked if asked != depth else None
            if rerank_plan is not None:  # the reranker is handed the retriever's own items
                raw[i] = check_ranking(value)
            if on_call is not None:
                on_call(RetrieverCall(i, asked, ranking, returned, scores, elapsed * 1000.0))
            size = len(returned) if returned is not None else len(ranking)
            if deepens and asked is not None:
                assert fill is not None
                assert max_depth is not None
                more = deeper(asked, size, len(ranking), fill=fill, max_depth=max_depth)
                if more is not None:
                    again[i] = more
                    return
            tick()

        return on_result

    texts = [r.text for r in requests]
    contexts = [r.context for r in requests]
    pending: dict[int, int | None] = {
        i: r.depth if r.depth is not None else depth for i, r in enumerate(requests)
    }
    while pending:
        by_depth: dict[int | None, list[int]] = {}
        for i, asked in pending.items():
            by_depth.setdefault(asked, []).append(i)
        for asked, members in by_depth.items():
            _stage_call(
                plan_at(asked),
                [requests[i] for i in members],
                [(texts[i], contexts[i]) for i in members],
                concurrency=concurrency,
                timeout=timeout,
                batch_size=batch_size,
                on_result=first_stage(asked, members),
                tuned=(retriever, RETRIEVER_STAGE),
            )
        pending = dict(sorted(again.items()))
        again.clear()
    if rerank_plan is None:
        return outcomes
    ok = [i for i, o in enumerate(outcomes) if o.error is None]
    for _ in range(len(requests) - len(ok)):
        tick()
    rerank_requests = [requests[i] for i in ok]
    rerank_inputs = [(texts[i], raw[i], contexts[i]) for i in ok]

    def second_stage(j: int, value: Any, error: BaseException | None, elapsed: float) -> None:
        outcome = outcomes[ok[j]]
        outcome.latency_ms[RERANKER_STAGE] = elapsed * 1000.0
        if error is None:
            try:
                ranking, scores, returned = adapt(value)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                error = exc
            else:
                outcome.rankings[RERANKER_STAGE] = ranking
                if scores is not None:
                    outcome.scores[RERANKER_STAGE] = scores
                if returned is not None:
                    outcome.returned[RERANKER_STAGE] = returned
        if error is not None:
            fail(outcome, RERANKER_STAGE, error)
        tick()

    _stage_call(
        rerank_plan,
        rerank_requests,
        rerank_inputs,
        concurrency=concurrency,
        timeout=timeout,
        batch_size=batch_size,
        on_result=second_stage,
        tuned=(reranker, RERANKER_STAGE),
    )
    return outcomes
