"""Calling the retriever under test: adapting what it returns, concurrency, errors, two stages.

A *retriever* is what the user's ``retriever_under_test`` fixture returns: a callable
``retrieve(query_text)`` or ``retrieve(query_text, k)`` (``k``/``top_k`` may also be keyword
parameters), an ``async def`` of the same shape, or an object with one of the methods
``retrieve_batch(texts)`` / ``batch(texts)`` (called in batches), ``invoke(text)`` (LangChain),
``retrieve(text)`` (LlamaIndex) or ``search(text)``.

It may return, per query, a sequence of: ids (``str`` or ``int``), ``(id, score)`` pairs, dicts
with an id key, objects with an id attribute, LangChain-style ``Document`` (id in ``.id`` or
``.metadata``), or LlamaIndex-style ``NodeWithScore`` (``.node.node_id``). Where the id lives can
be set (``doc_id="metadata.source"``) or computed (``doc_id=callable``).

Conventions:

* Ids are compared as strings: ``12`` and ``"12"`` are the same document.
* With a ``doc_id`` mapping (chunk id → document id, a callable or a mapping), the chunk ranking
  is collapsed to a document ranking: each document at the rank of its best chunk, later chunks of
  the same document removed. Without a mapping, duplicates are kept and the metrics count them
  once, at their first rank (later copies are non-relevant filler).
* An exception or a timeout in one query is recorded for that query (type and message); the other
  queries finish. A malformed return value (``None``, a string, a number, an item without an id)
  is recorded as an error naming what was returned.
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

RETRIEVER_STAGE = "retriever"
RERANKER_STAGE = "reranker"

_DEFAULT_ID_KEYS = ("id", "doc_id", "document_id", "_id", "node_id", "chunk_id")
_DEFAULT_METADATA_KEYS = ("id", "doc_id", "document_id", "source")

DocIdOption = str | Callable[[Any], Any] | None
DocMap = Callable[[str], str] | Mapping[str, str] | None


class RetrieverOutputError(ValueError):
    """The retriever returned something that is not a ranking."""


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """One query to send: its id (for messages) and its text."""

    id: str
    text: str


@dataclass(slots=True)
class QueryOutcome:
    """What happened to one query: its ranking per stage, latency, or the error it hit."""

    query_id: str
    rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    error_type: str | None = None
    error_stage: str | None = None


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _lookup_path(item: Any, path: str) -> Any:
    value = item
    for part in path.split("."):
        if isinstance(value, Mapping):
            if part not in value:
                return None
            value = value[part]
        else:
            value = getattr(value, part, None)
        if value is None:
            return None
    return value


def extract_doc_id(item: Any, doc_id: DocIdOption = None) -> str:
    """The document id of one returned item, as a string; RetrieverOutputError if none.

    ``doc_id`` may name where the id lives (``"metadata.source"``, ``"node.ref_doc_id"``: a dotted
    path through keys and attributes) or be a callable ``item -> id``.
    """
    if callable(doc_id):
        value = doc_id(item)
    elif isinstance(doc_id, str):
        value = _lookup_path(item, doc_id)
        if value is None:
            raise RetrieverOutputError(
                f"item {_describe(item)} has no {doc_id!r} (set by the doc id option)"
            )
    else:
        value = _default_id(item)
    if _is_integer(value):
        return str(int(value))  # numpy / FAISS integer ids too: "3", never "np.int64(3)"
    if not isinstance(value, str):
        raise RetrieverOutputError(
            f"item {_describe(item)} gave the id {_describe(value)}, expected a str or int"
        )
    return value


def _is_integer(value: object) -> bool:
    """An int or an integer-like id (numpy, FAISS), but never a bool."""
    # bool is an Integral to Python; typing's view of the numbers ABCs does not know it.
    return not isinstance(value, bool) and isinstance(value, Integral)


def _default_id(item: Any) -> Any:
    if isinstance(item, str) or _is_integer(item):
        return item
    if isinstance(item, tuple) and len(item) == 2:  # (id, score)
        return item[0]
    if isinstance(item, Mapping):
        for key in _DEFAULT_ID_KEYS:
            if item.get(key) is not None:
                return item[key]
        metadata = item.get("metadata")
        if isinstance(metadata, Mapping):
            for key in _DEFAULT_METADATA_KEYS:
                if metadata.get(key) is not None:
                    return metadata[key]
        raise RetrieverOutputError(
            f"dict item {_describe(item)} has none of the keys {', '.join(_DEFAULT_ID_KEYS)}; "
            "set retrieval_doc_id to the key that holds the document id"
        )
    node = getattr(item, "node", None)  # LlamaIndex NodeWithScore
    if node is not None and getattr(node, "node_id", None) is not None:
        return node.node_id
    for attribute in _DEFAULT_ID_KEYS:
        value = getattr(item, attribute, None)
        if value is not None:
            return value
    metadata = getattr(item, "metadata", None)  # LangChain Document
    if isinstance(metadata, Mapping):
        for key in _DEFAULT_METADATA_KEYS:
            if metadata.get(key) is not None:
                return metadata[key]
    raise RetrieverOutputError(
        f"cannot find a document id in {_describe(item)} ({type(item).__name__}); set "
        "retrieval_doc_id to an attribute or key path (e.g. metadata.source) or a callable"
    )


def adapt_ranking(
    result: Any, *, doc_id: DocIdOption = None, doc_map: DocMap = None
) -> tuple[str, ...]:
    """Turn one query's return value into a ranking of document id strings."""
    if result is None or isinstance(result, (str, bytes, int, float, Mapping)):
        raise RetrieverOutputError(
            f"returned {_describe(result)} ({type(result).__name__}); expected a list of ids, "
            "(id, score) pairs, dicts with an id, or Document/Node objects"
        )
    if not isinstance(result, Iterable):
        raise RetrieverOutputError(
            f"returned {_describe(result)} ({type(result).__name__}), which is not a list"
        )
    ids = [extract_doc_id(item, doc_id) for item in result]
    if doc_map is None:
        return tuple(ids)
    mapper: Callable[[str], Any] = doc_map.get if isinstance(doc_map, Mapping) else doc_map
    seen: dict[str, None] = {}
    for chunk in ids:
        mapped = mapper(chunk)
        if mapped is None:
            mapped = chunk  # not in the map: the id already names a document
        seen.setdefault(str(mapped), None)
    return tuple(seen)


# --- calling ------------------------------------------------------------------------------


def _accepts_k(fn: Callable[..., Any]) -> str | None:
    """How to pass the cutoff: "positional", "k", "top_k", or None when it takes only a query."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    for name in ("k", "top_k"):
        if name in signature.parameters:
            return name
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # Only a *required* second parameter is taken for the cutoff. An optional one may be
    # anything (LangChain's ``invoke(input, config=None)``), and ``*args`` is usually a
    # decorator's wrapper around ``search(text)``: passing the cutoff there breaks every call.
    if len(positional) >= 2 and positional[1].default is inspect.Parameter.empty:
        return "positional"
    return None


def _single_caller(retriever: Any) -> Callable[..., Any]:
    if callable(retriever) and not inspect.isclass(retriever):
        return retriever  # type: ignore[no-any-return]
    for name in ("invoke", "retrieve", "search", "get_relevant_documents"):
        method = getattr(retriever, name, None)
        if callable(method):
            return method  # type: ignore[no-any-return]
    raise TypeError(
        f"the retriever under test is a {type(retriever).__name__}, which is neither callable nor "
        "has an invoke/retrieve/search/retrieve_batch/batch method; return a function "
        "`retrieve(query_text) -> ranked ids` from the retriever_under_test fixture"
    )


def _with_k(fn: Callable[..., Any], depth: int | None) -> Callable[[str], Any]:
    how = _accepts_k(fn) if depth is not None else None
    if how is None:
        return fn
    if how == "positional":
        return lambda text: fn(text, depth)
    return lambda text: fn(text, **{how: depth})


def _error_text(exc: BaseException) -> tuple[str, str]:
    message = str(exc) or type(exc).__name__
    return type(exc).__name__, message if len(message) <= 500 else message[:497] + "..."


def _run_threads(
    fn: Callable[[int], Any],
    count: int,
    *,
    concurrency: int,
    timeout: float | None,
    on_done: Callable[[int, Any, BaseException | None, float], None],
) -> None:
    """Call ``fn(i)`` for i in range(count) on daemon threads; report each result via on_done.

    A call that runs past ``timeout`` seconds is reported as a TimeoutError and abandoned: its
    thread is a daemon, replaced by a fresh worker, so a hanging retriever cannot hang pytest.
    """
    jobs: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    results: queue.SimpleQueue[tuple[int, Any, BaseException | None, float]] = queue.SimpleQueue()
    lock = threading.Lock()
    running: dict[int, tuple[int, float]] = {}  # worker id -> (job, start)
    next_worker = [0]

    def work(wid: int) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            start = time.perf_counter()
            with lock:
                running[wid] = (job, start)
            value: Any = None
            error: BaseException | None = None
            try:
                value = fn(job)
            except BaseException as exc:
                error = exc
            elapsed = time.perf_counter() - start
            with lock:
                mine = running.pop(wid, None)
            if mine is None:
                return  # timed out and replaced: drop the late result
            results.put((job, value, error, elapsed))

    def spawn() -> None:
        wid = next_worker[0]
        next_worker[0] += 1
        threading.Thread(target=work, args=(wid,), name=f"retrieval-{wid}", daemon=True).start()

    for job in range(count):
        jobs.put(job)
    for _ in range(min(concurrency, count)):
        spawn()
    done = 0
    while done < count:
        wait: float | None = None
        if timeout is not None:
            with lock:
                starts = [start for _job, start in running.values()]
            now = time.perf_counter()
            wait = max(0.0, min((s + timeout - now for s in starts), default=timeout)) + 0.005
        try:
            job, value, error, elapsed = results.get(timeout=wait)
        except queue.Empty:
            now = time.perf_counter()
            expired = []
            with lock:
                for wid, (job, start) in list(running.items()):
                    if timeout is not None and now - start >= timeout:
                        del running[wid]
                        expired.append((job, now - start))
            for job, elapsed in expired:
                on_done(job, None, TimeoutError(f"no answer within {timeout:g} s"), elapsed)
                done += 1
                spawn()
            continue
        on_done(job, value, error, elapsed)
        done += 1
    for _ in range(next_worker[0]):
        jobs.put(None)


def _run_async(
    fn: Callable[[str], Any],
    texts: Sequence[str],
    *,
    concurrency: int,
    timeout: float | None,
    on_done: Callable[[int, Any, BaseException | None, float], None],
) -> None:
    """Await ``fn(text)`` for every text on a private event loop, ``concurrency`` at a time."""

    async def guarded(i: int) -> tuple[Any, BaseException | None]:
        # What the call raised is returned, not raised: asyncio lets a SystemExit escape the
        # event loop (failing every query), and it must fail this query only, as in a thread.
        try:
            return await fn(texts[i]), None
        except asyncio.CancelledError:  # the timeout cancelling the call
            raise
        except BaseException as exc:
            return None, exc

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                start = time.perf_counter()
                try:
                    value, error = await asyncio.wait_for(guarded(i), timeout)
                except asyncio.TimeoutError:
                    error = TimeoutError(f"no answer within {timeout:g} s")
                    on_done(i, None, error, time.perf_counter() - start)
                else:
                    on_done(i, value, error, time.perf_counter() - start)

        await asyncio.gather(*(one(i) for i in range(len(texts))))

    # A private thread, so that a loop already running in this thread (pytest-asyncio) is no
    # obstacle.
    failure: list[BaseException] = []

    def runner() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=runner, name="retrieval-async", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


def _batch_method(retriever: Any) -> Callable[[list[str]], Any] | None:
    for name in ("retrieve_batch", "batch"):
        method = getattr(retriever, name, None)
        if callable(method):
            return method  # type: ignore[no-any-return]
    return None


Progress = Callable[[int, int], None]


def _stage_call(
    stage_fn: Any,
    requests: Sequence[QueryRequest],
    inputs: Sequence[Any],
    *,
    stage: str,
    depth: int | None,
    concurrency: int,
    timeout: float | None,
    batch_size: int,
    on_result: Callable[[int, Any, BaseException | None, float], None],
) -> None:
    """Call one stage over ``inputs`` (texts, or (text, candidates) for the reranker)."""
    count = len(requests)
    if stage == RETRIEVER_STAGE:
        batch = _batch_method(stage_fn)
        if batch is not None:
            chunks = [
                list(range(i, min(i + batch_size, count))) for i in range(0, count, batch_size)
            ]

            def call_chunk(c: int) -> Any:
                result = batch([inputs[i] for i in chunks[c]])
                if inspect.isawaitable(result):
                    # An async batch method: each worker thread runs it on its own event loop.
                    return asyncio.run(_awaited(result))
                return result

            def chunk_done(c: int, value: Any, error: BaseException | None, elapsed: float) -> None:
                members = chunks[c]
                if error is None:
                    try:
                        values = list(value)
                    except TypeError:
                        values = []
                    if len(values) != len(members):
                        error = RetrieverOutputError(
                            f"the batch method returned {len(values)} results for "
                            f"{len(members)} queries"
                        )
                for position, i in enumerate(members):
                    on_result(
                        i,
                        values[position] if error is None else None,
                        error,
                        elapsed / len(members),
                    )

            _run_threads(
                call_chunk,
                len(chunks),
                concurrency=concurrency,
                timeout=timeout,
                on_done=chunk_done,
            )
            return
        single = _single_caller(stage_fn)
        # Asked before _with_k wraps an ``async def search(text, k)`` in a plain lambda, which
        # would hide that its calls return coroutines to await.
        is_async = _is_async(single)
        call = _with_k(single, depth)
        args: Callable[[int], tuple[Any, ...]] = lambda i: (inputs[i],)  # noqa: E731
    else:
        call = _single_caller(stage_fn)
        is_async = _is_async(call)
        args = lambda i: tuple(inputs[i])  # noqa: E731
    if is_async:
        _run_async(
            lambda payload: call(*payload),
            [args(i) for i in range(count)],  # type: ignore[misc]
            concurrency=concurrency,
            timeout=timeout,
            on_done=on_result,
        )
        return
    _run_threads(
        lambda i: call(*args(i)), count, concurrency=concurrency, timeout=timeout, on_done=on_result
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
    progress: Progress | None = None,
) -> list[QueryOutcome]:
    """Run every query through the retriever (and the reranker, if any); one outcome per query.

    Stage ``retriever`` is the candidate list; stage ``reranker`` (when a reranker is given) is
    ``reranker(query_text, candidates)`` on the retriever's raw candidates. A query whose
    retriever call failed is not sent to the reranker.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    outcomes = [QueryOutcome(r.id) for r in requests]
    raw: list[Any] = [None] * len(requests)
    total = len(requests) * (2 if reranker is not None else 1)
    finished = [0]
    lock = threading.Lock()

    def record(stage: str) -> Callable[[int, Any, BaseException | None, float], None]:
        def on_result(i: int, value: Any, error: BaseException | None, elapsed: float) -> None:
            outcome = outcomes[i]
            outcome.latency_ms[stage] = elapsed * 1000.0
            if error is None:
                if isinstance(value, Iterable) and not isinstance(value, (Sequence, Mapping)):
                    value = list(value)  # a generator: keep it for the reranker too
                try:
                    outcome.rankings[stage] = adapt_ranking(value, doc_id=doc_id, doc_map=doc_map)
                    raw[i] = value
                except RetrieverOutputError as exc:
                    error = exc
                except BaseException as exc:  # a doc-id function's SystemExit & co. too
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    error = exc
            if error is not None:
                outcome.error_type, outcome.error = _error_text(error)
                outcome.error_stage = stage
            if progress is not None:
                with lock:
                    finished[0] += 1
                    progress(finished[0], total)

        return on_result

    texts = [r.text for r in requests]
    _stage_call(
        retriever,
        requests,
        texts,
        stage=RETRIEVER_STAGE,
        depth=depth,
        concurrency=concurrency,
        timeout=timeout,
        batch_size=batch_size,
        on_result=record(RETRIEVER_STAGE),
    )
    if reranker is None:
        return outcomes
    ok = [i for i, o in enumerate(outcomes) if o.error is None]
    if len(ok) < len(requests) and progress is not None:
        with lock:
            finished[0] += len(requests) - len(ok)
    rerank_requests = [requests[i] for i in ok]
    rerank_inputs = [(texts[i], raw[i]) for i in ok]
    remember = record(RERANKER_STAGE)
    _stage_call(
        reranker,
        rerank_requests,
        rerank_inputs,
        stage=RERANKER_STAGE,
        depth=None,
        concurrency=concurrency,
        timeout=timeout,
        batch_size=batch_size,
        on_result=lambda j, value, error, elapsed: remember(ok[j], value, error, elapsed),
    )
    return outcomes
