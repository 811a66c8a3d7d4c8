"""Several processes writing one cache file at once (xdist workers, two pytest runs) lose
nothing: every entry each of them wrote is there afterwards, with its own value."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from pytest_retrieval.run.cachekey import CacheKey
from pytest_retrieval.run.store import RunCache

WRITERS = 3
KEYS_PER_WRITER = 150

WRITER = """
import dataclasses, sys, time
from pathlib import Path
from pytest_retrieval.run.store import CacheEntry, CacheKey, RunCache

path, writer, count, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
while not start.exists():  # all writers begin together, the file not yet created
    time.sleep(0.005)
base = CacheKey("retriever", "", 10, "m.retrieve")
with RunCache(path) as cache:
    for i in range(count):
        key = dataclasses.replace(base, query=f"writer {writer} query {i}")
        if i % 10 == 0:  # some batches, mostly single puts: many small transactions
            batch = [
                (dataclasses.replace(base, query=f"writer {writer} batch {i} {j}"),
                 CacheEntry((f"w{writer}-b{i}-{j}",)))
                for j in range(5)
            ]
            cache.put_many(batch)
        cache.put(key, CacheEntry((f"w{writer}-d{i}", "shared"), (1.0, 0.5), float(i)))
        cache.get(key)  # readers interleaved with writers
print("ok")
"""


def test_concurrent_writers_lose_no_entry(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "runs.sqlite3"
    start = tmp_path / "start"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(w), str(KEYS_PER_WRITER), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    time.sleep(0.3)  # let every interpreter start and wait at the gate
    start.touch()
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        assert out.strip() == "ok"
    base = CacheKey("retriever", "", 10, "m.retrieve")
    with RunCache(path) as cache:
        singles = {
            (w, i): CacheKey(**{**base.to_dict(), "query": f"writer {w} query {i}"})
            for w in range(WRITERS)
            for i in range(KEYS_PER_WRITER)
        }
        hits = cache.get_many(singles)
        assert len(hits) == WRITERS * KEYS_PER_WRITER
        for (w, i), entry in hits.items():
            assert entry.ranking == (f"w{w}-d{i}", "shared")
            assert entry.latency_ms == float(i)
        batches = WRITERS * len(range(0, KEYS_PER_WRITER, 10)) * 5
        assert len(cache) == WRITERS * KEYS_PER_WRITER + batches
        assert cache.stats().by_stage == {"retriever": len(cache)}
        cache.check()


OPENER = """
import sys
from pytest_retrieval.run.store import CacheCorrupt, RunCache


def open_one(path, barrier, failures):
    barrier.wait()  # every process opens the new file at the same moment
    try:
        RunCache(path).close()
    except CacheCorrupt as exc:
        failures.put(str(exc))


if __name__ == "__main__":
    import multiprocessing

    context = multiprocessing.get_context("fork")
    folder, rounds, openers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    failures = context.Queue()
    for round_ in range(rounds):
        path = f"{folder}/{round_}/runs.sqlite3"
        barrier = context.Barrier(openers)
        processes = [
            context.Process(target=open_one, args=(path, barrier, failures))
            for _ in range(openers)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
    found = []
    while not failures.empty():
        found.append(failures.get())
    print(len(found))
    print(found[:3])
"""


def test_processes_opening_one_new_cache_together_all_get_it(tmp_path: Path) -> None:
    # xdist workers start together on a fresh cache. Each open used to read the file's identity
    # in separate statements (a creator committing in between made the new cache look like
    # another program's file) and to switch it to WAL without waiting ("database is locked"):
    # about 1 open in 60 failed so. 20 rounds of 6 processes: 120 opens, none may fail.
    script = tmp_path / "opener.py"
    script.write_text(OPENER, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path), "20", "6"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    count, examples = result.stdout.splitlines()
    assert count == "0", examples
