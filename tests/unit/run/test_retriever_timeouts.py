"""Honest timeouts: the whole call is timed, lazy results included, and one query fails alone.

Each test has one bad query among good ones and asserts three things: the bad query's message,
that the good queries finished with their rankings, and that the run ended long before the bad
call would have (the sleeps are 3 s, the timeout 0.3 s, the bound 2 s).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from pytest_retrieval.run.retriever import QueryOutcome, QueryRequest, run_pipeline

REQUESTS = [QueryRequest("a", "first"), QueryRequest("slow", "slow"), QueryRequest("c", "third")]
ANSWERS = {"first": ["a1", "a2"], "slow": ["s1"], "third": ["c1", "c2", "c3"]}
SLEEP = 3.0
TIMEOUT = 0.3
BOUND = 2.0


def run_timed(retriever: object, **options: object) -> tuple[list[QueryOutcome], float]:
    start = time.monotonic()
    outcomes = run_pipeline(REQUESTS, retriever, timeout=TIMEOUT, **options)  # type: ignore[arg-type]
    return outcomes, time.monotonic() - start


def assert_others_finished(outcomes: list[QueryOutcome]) -> None:
    by_id = {o.query_id: o for o in outcomes}
    for query_id, text in (("a", "first"), ("c", "third")):
        assert by_id[query_id].error is None, by_id[query_id].error
        assert by_id[query_id].rankings["retriever"] == tuple(ANSWERS[text])


def test_a_generator_that_sleeps_while_iterated_times_out() -> None:
    def search(text: str) -> Iterator[str]:
        for doc in ANSWERS[text]:
            if text == "slow":
                time.sleep(SLEEP)  # the call returned at once; the work is in the iteration
            yield doc

    outcomes, elapsed = run_timed(search)
    assert elapsed < BOUND
    slow = outcomes[1]
    assert (slow.error_type, slow.error) == ("TimeoutError", "no answer within 0.3 s")
    assert "retriever" not in slow.rankings
    assert_others_finished(outcomes)


def test_a_generator_returned_by_a_batch_method_is_timed_with_its_batch() -> None:
    class Batch:
        def retrieve_batch(self, texts: list[str]) -> list[Iterator[str]]:
            def lazy(text: str) -> Iterator[str]:
                if text == "slow":
                    time.sleep(SLEEP)
                yield from ANSWERS[text]

            return [lazy(text) for text in texts]

    # batch_size 1: each query is its own batch, so only the slow one's batch times out.
    outcomes, elapsed = run_timed(Batch(), batch_size=1)
    assert elapsed < BOUND
    assert outcomes[1].error == "no answer within 0.3 s"
    assert_others_finished(outcomes)


@pytest.mark.parametrize("concurrency", [1, 8])
def test_an_async_def_that_blocks_the_event_loop_cannot_stall_the_run(concurrency: int) -> None:
    calls: list[str] = []
    lock = threading.Lock()

    async def search(text: str) -> list[str]:
        with lock:
            calls.append(text)
        if text == "slow":
            time.sleep(SLEEP)  # blocking code in a coroutine: the loop cannot time it out
        await asyncio.sleep(0)
        return ANSWERS[text]

    outcomes, elapsed = run_timed(search, concurrency=concurrency)
    assert elapsed < BOUND
    slow = outcomes[1]
    assert slow.error_type == "TimeoutError"
    assert slow.error == (
        "no answer within 0.3 s (the event loop was blocked: an async def ran blocking code, "
        "such as time.sleep or a synchronous client, without await)"
    )
    assert_others_finished(outcomes)
    assert calls.count("slow") == 1
    if concurrency == 1:
        # "third" had not started when "slow" blocked the loop: it ran on a fresh loop, once.
        assert calls == ["first", "slow", "third"]
    else:
        # "first" and "third" were waiting on the blocked loop, which could never answer them in
        # time: they were started again on a fresh loop.
        assert set(calls) == {"first", "slow", "third"}


def test_an_async_def_that_awaits_too_long_times_out_from_inside_the_loop() -> None:
    async def search(text: str) -> list[str]:
        if text == "slow":
            await asyncio.sleep(SLEEP)
        return ANSWERS[text]

    outcomes, elapsed = run_timed(search)
    assert elapsed < BOUND
    # The loop was free: a plain timeout, no word about blocking.
    assert outcomes[1].error == "no answer within 0.3 s"
    assert_others_finished(outcomes)


def test_an_async_generator_is_iterated_inside_the_timeout() -> None:
    async def search(text: str) -> AsyncIterator[str]:
        for doc in ANSWERS[text]:
            if text == "slow":
                await asyncio.sleep(SLEEP)
            yield doc

    outcomes, elapsed = run_timed(search)
    assert elapsed < BOUND
    assert outcomes[1].error == "no answer within 0.3 s"
    assert_others_finished(outcomes)


def test_an_exception_while_a_generator_is_consumed_fails_that_query_only() -> None:
    def search(text: str) -> Iterator[str]:
        yield ANSWERS[text][0]
        if text == "slow":
            raise ConnectionError("index shard went away mid-stream")
        yield from ANSWERS[text][1:]

    outcomes, _elapsed = run_timed(search)
    slow = outcomes[1]
    assert (slow.error_type, slow.error) == ("ConnectionError", "index shard went away mid-stream")
    assert slow.error_stage == "retriever"
    assert_others_finished(outcomes)


def test_an_exception_while_an_async_generator_is_consumed_fails_that_query_only() -> None:
    async def search(text: str) -> AsyncIterator[str]:
        yield ANSWERS[text][0]
        if text == "slow":
            raise ConnectionError("stream reset")
        for doc in ANSWERS[text][1:]:
            yield doc

    outcomes, _elapsed = run_timed(search)
    assert (outcomes[1].error_type, outcomes[1].error) == ("ConnectionError", "stream reset")
    assert_others_finished(outcomes)


def test_an_exception_in_one_lazy_result_of_a_batch_fails_that_query_only() -> None:
    class Batch:
        def retrieve_batch(self, texts: list[str]) -> list[Iterator[str]]:
            def lazy(text: str) -> Iterator[str]:
                if text == "slow":
                    raise KeyError("slow")
                yield from ANSWERS[text]

            return [lazy(text) for text in texts]

    outcomes, _elapsed = run_timed(Batch(), batch_size=3)
    assert (outcomes[1].error_type, outcomes[1].error) == ("KeyError", "'slow'")
    assert_others_finished(outcomes)


def test_a_lazy_result_is_kept_for_the_reranker() -> None:
    # The generator is consumed once, inside the timed call; the reranker gets the items.
    def search(text: str) -> Iterator[str]:
        yield from ANSWERS[text]

    def rerank(text: str, candidates: list[str]) -> list[str]:
        return list(reversed(candidates))

    outcomes = run_pipeline(REQUESTS, search, rerank)
    assert [o.rankings["reranker"] for o in outcomes] == [("a2", "a1"), ("s1",), ("c3", "c2", "c1")]
