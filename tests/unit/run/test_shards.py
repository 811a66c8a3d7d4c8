"""The shard store that xdist workers share (pytest_retrieval.run.shards), and what it rests on: the
compact outcome codec, the shard plan, merging run infos, the chunked JSON writer and the lazy
containers the artifact is written from, the runner's plain-string fast path.

Several processes here are real processes (multiprocessing), so claims are tested across
processes as xdist workers make them; each process logs the requests it ran to a file, so "each
request once" is counted outside the store.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_retrieval.files import LazyList, LazyMapping, write_json
from pytest_retrieval.run.retriever import QueryOutcome, QueryRequest, adapt_scored
from pytest_retrieval.run.shards import (
    ShardStore,
    decode_outcome,
    decode_outcomes,
    encode_outcome,
    encode_outcomes,
    run_key,
    run_sharded,
    shard_size,
)
from pytest_retrieval.run.source import RunInfo, merge_infos


def requests(n: int) -> list[QueryRequest]:
    return [QueryRequest(f"q{i}", f"text {i}") for i in range(n)]


def outcome_of(request: QueryRequest) -> QueryOutcome:
    i = int(request.id[1:])
    return QueryOutcome(
        request.id, rankings={"retriever": (f"d{i}", "x")}, latency_ms={"retriever": 1.0}
    )


#: The info of a shard whose worker died (the store's callers say where the run comes from).
def crashed_info(count: int) -> RunInfo:
    return RunInfo(called=count)


def as_json(info: RunInfo) -> str:
    return json.dumps(info.to_dict())


def from_json(text: str) -> RunInfo:
    return RunInfo.from_dict(json.loads(text))


def logged(log: Path, fail_on: str | None = None):  # type: ignore[no-untyped-def]
    def process(part: Sequence[QueryRequest]) -> tuple[list[QueryOutcome], RunInfo]:
        if fail_on is not None and any(r.id == fail_on for r in part):
            raise RuntimeError(f"cannot run {fail_on}")
        with open(log, "a", encoding="utf-8") as out:
            out.writelines(f"{os.getpid()} {r.id}\n" for r in part)
        return [outcome_of(r) for r in part], RunInfo(called=len(part))

    return process


# --- the codec -------------------------------------------------------------------------------


def test_the_codec_keeps_every_field_of_an_outcome() -> None:
    full = QueryOutcome(
        "q\udc80",  # a lone surrogate survives (the store is text, escaped by json)
        rankings={"retriever": ("a", "b"), "reranker": ("b",)},
        latency_ms={"retriever": 2.5, "reranker": 0.25},
        error="boom",
        error_type="RuntimeError",
        error_stage="reranker",
        scores={"retriever": (0.5, None)},
    )
    plain = QueryOutcome("q2", rankings={"retriever": ("a",)}, latency_ms={"retriever": 1.0})
    failed = QueryOutcome(
        "q3", latency_ms={"retriever": 3.0}, error="x", error_type="E", error_stage="retriever"
    )
    for outcome in (full, plain, failed, QueryOutcome("q4")):
        assert decode_outcome(json.loads(json.dumps(encode_outcome(outcome)))) == outcome
    assert decode_outcomes(encode_outcomes([full, plain])) == [full, plain]
    # Compact: a plain outcome is three fields, no empty error fields.
    assert encode_outcome(plain) == ["q2", {"retriever": ("a",)}, {"retriever": 1.0}]


# --- the plan ----------------------------------------------------------------------------------


@given(st.integers(1, 50_000), st.integers(1, 16), st.integers(1, 128))
def test_shard_size_is_a_whole_number_of_batches_and_gives_each_worker_several(
    total: int, workers: int, batch: int
) -> None:
    size = shard_size(total, workers, batch)
    assert size >= 1
    assert size % batch == 0
    assert size <= max(1000, batch)
    if total >= workers * 8 * batch and total <= 8000:
        assert -(-total // size) >= workers  # every worker can have a shard of its own


def test_run_key_changes_with_ids_texts_order_and_the_extra() -> None:
    base = run_key(requests(3), "use depth=10")
    assert run_key(requests(3), "use depth=10") == base
    assert run_key(requests(3), "use depth=20") != base
    assert run_key(list(reversed(requests(3))), "use depth=10") != base
    assert run_key([QueryRequest("q0", "other"), *requests(3)[1:]], "use depth=10") != base


def test_merged_infos_sum_the_counts_and_keep_each_warning_once() -> None:
    parts = [
        RunInfo(cache_mode="use", cache_path="c", cached=2, called=3, stored=3, warnings=("w1",)),
        RunInfo(
            cache_mode="use", cache_path="c", cached=5, called=0, stored=0, warnings=("w1", "w2")
        ),
    ]
    merged = merge_infos(parts)
    assert (merged.cached, merged.called, merged.stored) == (7, 3, 3)
    assert merged.warnings == ("w1", "w2")
    assert (merged.cache_mode, merged.cache_path) == ("use", "c")


# --- one process -------------------------------------------------------------------------------


def test_one_process_runs_every_shard_in_order(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    todo = requests(23)
    outcomes, infos, last = run_sharded(
        tmp_path / "s.sqlite3", todo, logged(log), size=5,
        info_to_json=as_json, info_from_json=from_json, crashed_info=crashed_info,
    )  # fmt: skip
    assert last  # the one process completed the last shard
    assert [o.query_id for o in outcomes] == [r.id for r in todo]
    assert outcomes == [outcome_of(r) for r in todo]
    assert [i.called for i in infos] == [5, 5, 5, 5, 3]  # ceil(23 / 5) shards
    ran = [line.split()[1] for line in log.read_text().splitlines()]
    assert sorted(ran) == sorted(r.id for r in todo)


def test_a_store_of_another_run_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with ShardStore(path, key="one", total=4, size=2):
        pass
    with pytest.raises(RuntimeError, match="belongs to another run"):
        ShardStore(path, key="two", total=4, size=2)


def test_a_failing_shard_is_given_back_and_the_next_worker_runs_it(tmp_path: Path) -> None:
    path, log = tmp_path / "s.sqlite3", tmp_path / "calls.log"
    todo = requests(10)
    common = {
        "size": 4, "info_to_json": as_json, "info_from_json": from_json,
        "crashed_info": crashed_info,
    }  # fmt: skip
    with pytest.raises(RuntimeError, match="cannot run q5"):
        run_sharded(path, todo, logged(log, fail_on="q5"), **common)  # type: ignore[arg-type]
    # The first shard (q0..q3) is done, the failing one is back to todo, none is stuck claimed.
    states = sqlite3.connect(path).execute("SELECT state FROM shards ORDER BY id").fetchall()
    assert [s for (s,) in states] == ["done", "todo", "todo"]
    outcomes, _infos, _last = run_sharded(path, todo, logged(log), **common)  # type: ignore[arg-type]
    assert outcomes == [outcome_of(r) for r in todo]
    ran = [line.split()[1] for line in log.read_text().splitlines()]
    assert sorted(ran) == sorted(r.id for r in todo)  # q0..q3 were not run again


#: A worker that claims the first shard of a six-query run and dies in it, as a retriever that
#: calls os._exit (or crashes in a native library) kills an xdist worker.
_DYING = """
import os, sys
from pathlib import Path
from pytest_retrieval.run.retriever import QueryRequest
from pytest_retrieval.run.shards import ShardStore, run_key

requests = [QueryRequest(f"q{i}", f"text {i}") for i in range(6)]
store = ShardStore(Path(sys.argv[1]), key=run_key(requests), total=6, size=3, worker="gw7")
assert tuple(store.claim()) == (0, 0, 3, None)
print("claimed", flush=True)
os._exit(3)
"""


def test_a_worker_that_died_with_a_claim_fails_its_shard_even_as_an_unreaped_zombie(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys
    import threading

    path, log = tmp_path / "s.sqlite3", tmp_path / "calls.log"
    todo = requests(6)
    dying = subprocess.Popen(
        [sys.executable, "-c", _DYING, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert dying.stdout is not None
    assert dying.stdout.readline() == "claimed\n"
    # Not waited for: the dead worker stays a zombie, as a crashed xdist worker does until its
    # controller reaps it, and kill(pid, 0), the old liveness test, finds it alive.
    deadline = time.monotonic() + 10
    while not _dead(dying.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _dead(dying.pid)
    os.kill(dying.pid, 0)  # does not raise: the process "exists"

    found: list[object] = []
    runner = threading.Thread(
        target=lambda: found.append(
            run_sharded(
                path, todo, logged(log), size=3, info_to_json=as_json, info_from_json=from_json,
                crashed_info=crashed_info, poll=0.01,
            )
        ),
        daemon=True,
    )  # fmt: skip
    runner.start()
    runner.join(30)
    assert not runner.is_alive(), "the shard of the dead worker was never handed on"
    dying.wait()
    (run,) = found
    outcomes, infos, last = run  # type: ignore[misc]
    assert last
    # The dead worker's shard (q0..q2): failed, naming the worker, and not run again; the
    # other shard ran as usual.
    for outcome in outcomes[:3]:
        assert outcome.rankings == {}
        assert outcome.error_type == "WorkerCrashed"
        assert outcome.error_stage == "retriever"
        assert outcome.error.startswith("worker crashed: the xdist worker gw7 died")
        assert "its shard of 3 queries" in outcome.error
    assert outcomes[3:] == [outcome_of(r) for r in todo[3:]]
    assert sorted(line.split()[1] for line in log.read_text().splitlines()) == ["q3", "q4", "q5"]
    assert [i.called for i in infos] == [3, 3]


def _dead(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie, on Linux: state Z in /proc; elsewhere, the
    process table is asked through ps)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.exists():
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    import subprocess

    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return state.stdout.strip().startswith("Z")


def test_a_live_claimant_is_never_taken_for_dead(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with ShardStore(path, key="k", total=6, size=3, worker="gw0") as mine:
        assert mine.claim() == (0, 0, 3, None)
        # A second store of this process (SQLite keeps one process's locks apart) and one in
        # another process both see the claim as alive: they get the next shard, then nothing.
        with ShardStore(path, key="k", total=6, size=3, worker="gw1") as other:
            assert other.claim() == (1, 3, 6, None)
            assert other.claim() is None
        code = (
            "import sys; from pathlib import Path; from pytest_retrieval.run.shards import "
            "ShardStore; s = ShardStore(Path(sys.argv[1]), key='k', total=6, size=3); "
            "print(s.claim())"
        )
        import subprocess
        import sys

        seen = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
        )
        # Shard 1's claimant closed its store without completing it: dead to the others.
        assert seen.stdout.strip() == "Claim(shard=1, start=3, stop=6, crashed='gw1')"


def test_exactly_one_of_the_processes_completes_the_last_shard(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with (
        ShardStore(path, key="k", total=4, size=2) as one,
        ShardStore(path, key="k", total=4, size=2) as two,
    ):
        first, second = one.claim(), two.claim()
        assert first is not None
        assert second is not None
        assert one.complete(first.shard, "[]", "{}") is False
        assert two.complete(second.shard, "[]", "{}") is True

    # A claimant taken for dead (its store closed with the claim) that completes afterwards
    # changes nothing: the shard keeps what the process that took it over stored.
    path = tmp_path / "t.sqlite3"
    late = ShardStore(path, key="k", total=2, size=2)
    claim = late.claim()
    assert claim is not None
    late._life.close()  # as if it had died
    with ShardStore(path, key="k", total=2, size=2, worker="gw1") as other:
        taken = other.claim()
        assert taken == (0, 0, 2, f"(pid {os.getpid()})")
        assert other.complete(taken.shard, '["taken over"]', "{}") is True
    assert late.complete(claim.shard, '["late"]', "{}") is False
    assert late.results() == (['["taken over"]'], ["{}"])
    late._db.close()


# --- several processes -------------------------------------------------------------------------


def _worker(path: str, log: str, n: int, result: str, start: Any) -> None:
    import time

    def process(part: Sequence[QueryRequest]) -> tuple[list[QueryOutcome], RunInfo]:
        time.sleep(0.05)  # long enough for the other processes to claim shards meanwhile
        return logged(Path(log))(part)

    # Every process starts claiming at once: a spawned process imports for a second or more, and
    # under load the first one up could otherwise run every shard before the others exist.
    start.wait(60)

    outcomes, infos, last = run_sharded(
        Path(path), requests(n), process, size=4, info_to_json=as_json, info_from_json=from_json,
        crashed_info=crashed_info,
    )  # fmt: skip
    Path(result).write_text(
        json.dumps([encode_outcomes(outcomes), sum(i.called for i in infos), last]),
        encoding="utf-8",
    )


def test_three_processes_share_the_shards_each_request_run_once(tmp_path: Path) -> None:
    n = 120
    path, log = tmp_path / "s.sqlite3", tmp_path / "calls.log"
    context = multiprocessing.get_context("spawn")
    results = [tmp_path / f"result-{i}.json" for i in range(3)]
    start = context.Barrier(3)
    workers = [
        context.Process(target=_worker, args=(str(path), str(log), n, str(result), start))
        for result in results
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    lines = [line.split() for line in log.read_text().splitlines()]
    assert sorted(qid for _pid, qid in lines) == sorted(f"q{i}" for i in range(n))
    assert len({pid for pid, _qid in lines}) >= 2  # the work was shared, not done by one
    expected = [outcome_of(r) for r in requests(n)]
    lasts = []
    for result in results:
        text, called, last = json.loads(result.read_text(encoding="utf-8"))
        assert decode_outcomes(text) == expected  # every process reads the whole run back
        assert called == n  # and the same merged count
        lasts.append(last)
    assert sorted(lasts) == [False, False, True]  # one of them completed the last shard


# --- the chunked JSON writer and the lazy containers -------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=300)
        | st.dictionaries(st.text(max_size=5), children, max_size=300)
    ),
    max_leaves=2000,
)


@given(json_values)
def test_write_json_writes_exactly_what_json_dumps_gives(value: object) -> None:
    out = io.StringIO()
    write_json(out, value)
    assert out.getvalue() == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_write_json_slices_large_containers_and_converts_keys_as_json_does() -> None:
    value = {
        "rows": [{"id": f"q{i}", "r": [i, i / 3]} for i in range(1000)],
        "by_id": {f"q{i}": {"v": [i]} for i in range(600)},
        1: "int key",
        None: "null key",
        2.5: True,
        "t": (1, 2),
    }
    out = io.StringIO()
    write_json(out, value)
    assert out.getvalue() == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_lazy_containers_build_items_on_access_and_write_as_their_contents() -> None:
    built: list[int] = []

    def row(i: int) -> dict[str, int]:
        built.append(i)
        return {"i": i}

    rows = LazyList(700, row)
    assert len(rows) == 700
    assert built == []
    assert rows[3] == {"i": 3}
    assert rows[-1] == {"i": 699}
    assert rows[1:3] == [{"i": 1}, {"i": 2}]
    with pytest.raises(IndexError):
        rows[700]
    by_id = LazyMapping(["b", "a"], lambda key: key * 2)
    assert list(by_id) == ["b", "a"]
    assert by_id["a"] == "aa"
    assert by_id.get("c") is None
    document = {"rows": rows, "nested": {"by_id": by_id, "small": LazyList(2, lambda i: i)}}
    out = io.StringIO()
    write_json(out, document)
    expected = {
        "rows": [{"i": i} for i in range(700)],
        "nested": {"by_id": {"b": "bb", "a": "aa"}, "small": [0, 1]},
    }
    assert json.loads(out.getvalue()) == expected
    assert out.getvalue() == json.dumps(expected, separators=(",", ":"))


# --- the runner's plain-string fast path -------------------------------------------------------


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "12", ""]), max_size=30))
def test_plain_string_ids_rank_as_the_general_rule_ranks_them(items: list[str]) -> None:
    # By hand: each document at its first rank, later copies removed, no scores.
    expected = tuple(x for i, x in enumerate(items) if x not in items[:i])
    for given_as in (items, tuple(items), iter(items)):
        ranking, scores = adapt_scored(given_as)
        assert ranking == expected
        assert scores == (None,) * len(expected)


def test_a_list_mixing_strings_and_scored_pairs_keeps_the_scores() -> None:
    ranking, scores = adapt_scored(["a", ("b", 0.5), "a", 7])
    assert ranking == ("a", "b", "7")
    assert scores == (None, 0.5, None)
