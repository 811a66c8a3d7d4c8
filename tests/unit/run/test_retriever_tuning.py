"""Whether the worker threads pay for themselves (``calling._Tuner``): a run starts at full
concurrency; when its calls compute (about a core of CPU or more) one thread runs alone for a
window, and stays alone when it keeps up. The decision is the tuner's alone (fake clocks), then
its effect on a real run (which threads made the last calls)."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from pytest_retrieval.run.retriever import QueryRequest, calling, run_pipeline


class Clocks:
    """A wall clock and a process-CPU clock the test moves by hand."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def tick(self, seconds: float, cores: float) -> None:
        self.wall += seconds
        self.cpu += seconds * cores


def tuner(concurrency: int, clocks: Clocks) -> calling._Tuner:
    return calling._Tuner(concurrency, clock=lambda: clocks.wall, cpu_clock=lambda: clocks.cpu)


def window(t: calling._Tuner, clocks: Clocks, calls: int, seconds: float, cores: float, alive: int):
    """``calls`` calls finishing evenly over ``seconds``; the last answer of the tuner."""
    said = None
    for _ in range(calls):
        clocks.tick(seconds / calls, cores)
        said = t.called(alive)
        if said is not None:
            return said
    return said


def test_calls_that_wait_keep_every_thread() -> None:
    clocks = Clocks()
    t = tuner(8, clocks)
    assert window(t, clocks, 100, 0.2, cores=0.05, alive=8) is None
    assert (t.state, t.allowed) == ("done", 8)


def drained_to_one(clocks: Clocks, cores: float) -> calling._Tuner:
    """A tuner of 8 threads whose first window (500 calls/s, ``cores`` busy) sent it to one."""
    t = tuner(8, clocks)
    # The window closes at 0.1 s (50 calls, more than 2 per thread): 500 calls/s.
    assert window(t, clocks, 100, 0.2, cores=cores, alive=8) == 1
    assert t.state == "draining"
    assert t.called(alive=3) is None  # the others are still finishing their batches
    assert t.state == "draining"
    assert t.called(alive=1) is None
    assert t.state == "one"
    return t


def test_calls_holding_one_core_run_on_one_thread_when_it_keeps_up() -> None:
    clocks = Clocks()
    t = drained_to_one(clocks, cores=1.0)
    # Alone, 60 calls in 0.1 s (600/s against 500/s with eight): one thread is kept.
    assert window(t, clocks, 60, 0.1, cores=1.0, alive=1) is None
    assert (t.state, t.allowed) == ("done", 1)


def test_threads_come_back_when_one_thread_falls_behind() -> None:
    clocks = Clocks()
    t = drained_to_one(clocks, cores=1.2)
    # Alone: 20 calls in 0.1 s (200/s against 500/s): every thread again.
    assert window(t, clocks, 20, 0.1, cores=1.0, alive=1) == 8
    assert (t.state, t.allowed) == ("done", 8)


def test_a_window_needs_its_time_and_its_calls() -> None:
    clocks = Clocks()
    t = tuner(4, clocks)
    assert window(t, clocks, 7, 1.0, cores=1.0, alive=4) is None  # 1 s, but 7 < 2 x 4 calls
    assert t.state == "full"
    assert window(t, clocks, 50, 0.05, cores=1.0, alive=4) == 1  # now 8 calls, 1.05 s
    assert t.state == "draining"


def test_one_thread_asked_for_is_never_tuned() -> None:
    clocks = Clocks()
    t = tuner(1, clocks)
    assert window(t, clocks, 100, 1.0, cores=1.0, alive=1) is None
    assert (t.state, t.allowed) == ("done", 1)


# --- in a run ---------------------------------------------------------------------------------

N = 1500
REQUESTS = [QueryRequest(f"q{i}", f"text {i}") for i in range(N)]


def recording_search(calls: list[tuple[float, float, int]]):
    lock = threading.Lock()

    def search(text: str) -> list[str]:
        start = time.perf_counter()
        time.sleep(0.001)
        with lock:
            calls.append((start, time.perf_counter(), threading.get_ident()))
        return [f"d{text.split()[-1]}"]

    return search


def reads_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process clock of every tuner reads one full core (as for pure-Python work), so
    every run probes."""
    real = calling._Tuner

    def one_core(concurrency: int, alone: bool | None = None) -> calling._Tuner:
        return real(concurrency, cpu_clock=time.perf_counter, alone=alone)

    monkeypatch.setattr(calling, "_Tuner", one_core)


def last_calls(calls: list[tuple[float, float, int]], n: int) -> list[tuple[float, float, int]]:
    return sorted(calls)[-n:]


@pytest.mark.parametrize(
    ("enough", "alone"),
    [(0.0, True), (10.0, False)],
    ids=["one-thread-keeps-up", "one-thread-falls-behind"],
)
def test_a_run_keeps_one_thread_or_all_of_them_as_the_tuner_says(
    monkeypatch: pytest.MonkeyPatch, enough: float, alone: bool
) -> None:
    # Whether one thread "keeps up" is set by the share it must reach.
    monkeypatch.setattr(calling, "_ONE_IS_ENOUGH", enough)
    reads_one_core(monkeypatch)
    calls: list[tuple[float, float, int]] = []
    search = recording_search(calls)
    outcomes = run_pipeline(REQUESTS, search, timeout=30.0, concurrency=4)
    assert [o.rankings["retriever"] for o in outcomes] == [(f"d{i}",) for i in range(N)]
    tail = last_calls(calls, 150)
    threads = {ident for _s, _e, ident in tail}
    overlapping = any(b[0] < a[1] for a, b in itertools.pairwise(tail))
    if alone:
        assert len(threads) == 1
        assert not overlapping
    else:
        assert len(threads) > 1
        assert overlapping


def test_a_run_whose_calls_wait_keeps_every_thread() -> None:
    calls: list[tuple[float, float, int]] = []
    outcomes = run_pipeline(REQUESTS, recording_search(calls), timeout=30.0, concurrency=4)
    assert len(outcomes) == N
    tail = last_calls(calls, 150)
    assert len({ident for _s, _e, ident in tail}) > 1


def test_the_next_run_of_the_same_retriever_starts_with_the_decision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As an xdist worker's shards: the first run decides (one thread), the second is called
    # on one thread from its first query (another retriever decides anew).
    monkeypatch.setattr(calling, "_ONE_IS_ENOUGH", 0.0)
    reads_one_core(monkeypatch)
    calls: list[tuple[float, float, int]] = []
    search = recording_search(calls)
    run_pipeline(REQUESTS, search, timeout=30.0, concurrency=4)
    calls.clear()
    outcomes = run_pipeline(REQUESTS[:200], search, timeout=30.0, concurrency=4)
    assert [o.rankings["retriever"] for o in outcomes] == [(f"d{i}",) for i in range(200)]
    assert len({ident for _s, _e, ident in calls}) == 1
    other: list[tuple[float, float, int]] = []
    run_pipeline(REQUESTS[:200], recording_search(other), timeout=30.0, concurrency=4)
    assert len({ident for _s, _e, ident in other}) > 1
