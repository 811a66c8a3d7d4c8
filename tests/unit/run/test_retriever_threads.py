"""The run phase's threads: calls in pytest's own thread when nothing needs another one, else
long-lived workers taking the queries in batches, each call still timed on its own.

A fast retriever (microseconds per call) makes the workers take many queries per batch, so a
slow or failing query below sits in the middle of a batch: the tests assert that it fails alone,
that the queries before and after it in its batch keep their own rankings and latencies, and
that the outcomes stay in the order of the requests.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from pytest_retrieval.run.retriever import QueryRequest, run_pipeline

N = 600
REQUESTS = [QueryRequest(f"q{i}", f"text {i}") for i in range(N)]


def ranking_of(text: str) -> list[str]:
    n = int(text.split()[-1])
    return [f"d{n}", f"e{n}"]


def test_a_timeout_in_the_middle_of_a_batch_names_that_query_and_the_rest_go_on() -> None:
    # Queries 0-399 and 401-599 answer at once, so batches hold many of them; query 400 hangs
    # for 3 s against a 0.3 s limit. The calls its worker made before it in the batch are
    # reported, and the ones after it are made by the worker started in its place.
    hang = threading.Event()

    def search(text: str) -> list[str]:
        if text == "text 400":
            hang.wait(3.0)
        return ranking_of(text)

    start = time.monotonic()
    try:
        outcomes = run_pipeline(REQUESTS, search, timeout=0.3, concurrency=2)
    finally:
        hang.set()
    assert time.monotonic() - start < 2.5
    slow = outcomes[400]
    assert (slow.query_id, slow.error_type, slow.error) == (
        "q400",
        "TimeoutError",
        "no answer within 0.3 s",
    )
    assert slow.rankings == {}
    assert slow.latency_ms["retriever"] >= 300.0
    for i, outcome in enumerate(outcomes):
        assert outcome.query_id == f"q{i}"
        if i != 400:
            assert outcome.error is None, (i, outcome.error)
            assert outcome.rankings["retriever"] == (f"d{i}", f"e{i}")


def test_results_keep_the_order_of_the_requests_and_each_its_own_latency() -> None:
    # Uneven latencies: every 10th query sleeps 30 ms, the others answer at once. Each outcome
    # sits at its request's position with its own ranking, and its latency is its own call's:
    # the sleepers at least 30 ms, never a batch's time shared out among its queries.
    def search(text: str) -> list[str]:
        if int(text.split()[-1]) % 10 == 0:
            time.sleep(0.03)
        return ranking_of(text)

    outcomes = run_pipeline(REQUESTS[:300], search, timeout=30.0, concurrency=3)
    assert [o.query_id for o in outcomes] == [f"q{i}" for i in range(300)]
    for i, outcome in enumerate(outcomes):
        assert outcome.rankings["retriever"] == (f"d{i}", f"e{i}")
        if i % 10 == 0:
            assert outcome.latency_ms["retriever"] >= 30.0, (i, outcome.latency_ms)
    fast = sorted(o.latency_ms["retriever"] for i, o in enumerate(outcomes) if i % 10)
    assert fast[len(fast) // 2] < 10.0  # the median fast call: far below a sleeper's 30 ms


def test_a_retriever_raising_for_some_queries_fails_those_alone_inside_a_batch() -> None:
    def search(text: str) -> list[str]:
        n = int(text.split()[-1])
        if n % 7 == 3:
            raise ValueError(f"index shard missing for {text!r}")
        return ranking_of(text)

    outcomes = run_pipeline(REQUESTS, search, timeout=30.0, concurrency=2)
    for i, outcome in enumerate(outcomes):
        if i % 7 == 3:
            assert (outcome.error_type, outcome.error) == (
                "ValueError",
                f"index shard missing for 'text {i}'",
            )
            assert outcome.rankings == {}
        else:
            assert outcome.error is None, (i, outcome.error)
            assert outcome.rankings["retriever"] == (f"d{i}", f"e{i}")


def test_no_timeout_and_one_query_at_a_time_calls_in_the_callers_thread() -> None:
    # retrieval_timeout = 0 (no limit) with retrieval_concurrency = 1: nothing for a thread to do,
    # so the calls run in the caller's thread, and a retriever bound to it works (a sqlite3
    # connection refuses any other thread). The slow call is not timed out: 0 means no limit.
    connection = sqlite3.connect(":memory:")
    connection.execute("create table docs (query text, doc text)")
    connection.executemany(
        "insert into docs values (?, ?)", [(f"text {i}", f"d{i}") for i in range(5)]
    )
    threads = set()

    def search(text: str) -> list[str]:
        threads.add(threading.get_ident())
        if text == "text 2":
            time.sleep(0.4)
        rows = connection.execute("select doc from docs where query = ?", (text,)).fetchall()
        return [doc for (doc,) in rows]

    outcomes = run_pipeline(REQUESTS[:5], search, timeout=None, concurrency=1)
    assert threads == {threading.get_ident()}
    assert [(o.error, o.rankings["retriever"]) for o in outcomes] == [
        (None, (f"d{i}",)) for i in range(5)
    ]
    assert outcomes[2].latency_ms["retriever"] >= 400.0


def test_with_a_timeout_the_calls_still_run_on_a_thread_that_can_be_abandoned() -> None:
    # Concurrency 1 but a limit: the call must be on another thread to be timed out.
    def search(text: str) -> list[str]:
        if text == "text 1":
            time.sleep(2.0)
        return ranking_of(text)

    start = time.monotonic()
    outcomes = run_pipeline(REQUESTS[:3], search, timeout=0.3, concurrency=1)
    assert time.monotonic() - start < 1.5
    assert [o.error for o in outcomes] == [None, "no answer within 0.3 s", None]
    assert outcomes[2].rankings["retriever"] == ("d2", "e2")


def test_ctrl_c_in_a_call_made_in_the_callers_thread_ends_the_run() -> None:
    # In the caller's thread a KeyboardInterrupt is Ctrl-C reaching pytest: the run stops there
    # (no further call), it is not one query's error.
    calls = []

    def search(text: str) -> list[str]:
        calls.append(text)
        if text == "text 1":
            raise KeyboardInterrupt
        return ranking_of(text)

    with pytest.raises(KeyboardInterrupt):
        run_pipeline(REQUESTS[:5], search, timeout=None, concurrency=1)
    assert calls == ["text 0", "text 1"]
