"""Crash safety: a process killed with SIGKILL while it writes the artifact or the baseline never
leaves a torn file behind.

A cancelled CI job kills pytest without warning, possibly in the middle of a write. Here writer
processes rewrite one target again and again with a large payload (several MB, so that most of
their time is spent writing) through the real writers: ``files.atomic_write_json`` and
``atomic_write_text`` for the artifact, ``baseline.dump_baseline`` + ``atomic_write_text`` for the
baseline, as the plugin does. Each is killed at a seeded random moment; after every kill the
target must be a whole document, the old one or a newer one, never a mix.

To keep 30 kills per target fast, a small "zygote" process imports everything and builds the
payload once, then forks one writer per attempt (forking a single-threaded process is safe).
"""

from __future__ import annotations

import functools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_retrieval.files import atomic_write_json, atomic_write_text
from pytest_retrieval.regression.baseline import dump_baseline, load_baseline
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "SIGKILL") or not hasattr(os, "fork"),
    reason="no SIGKILL (nor fork) on this platform (Windows)",
)

ATTEMPTS = 30
SEED = 20260508
ARTIFACT_ROWS = 18_000  # about 3 MB of JSON
BASELINE_QUERIES = 2_500  # about 3 MB of indented baseline JSON
METRICS = ("recall@10", "ndcg@10", "mrr", "map@10", "precision@10")


# --- the writers (run in the forked children) and readers (run here) --------------------------


@functools.cache
def artifact_rows() -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "text": "x" * 80, "ranking": [f"d{j}" for j in range(10)]}
        for i in range(ARTIFACT_ROWS)
    ]


def write_artifact(target: Path, generation: int) -> None:
    """One artifact write, alternating the two writers the plugin uses."""
    document = {"generation": generation, "rows": artifact_rows(), "end": generation}
    if generation % 2:
        atomic_write_json(target, document, what="JSON artifact")
    else:
        atomic_write_text(target, json.dumps(document), what="JSON artifact")


def read_artifact(path: Path) -> int:
    """The generation of a whole artifact (fails on anything torn)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["generation"] == document["end"]
    assert len(document["rows"]) == ARTIFACT_ROWS
    assert document["rows"][-1] == artifact_rows()[-1]
    generation: int = document["generation"]
    return generation


@functools.cache
def baseline_queries() -> dict[str, QuerySnapshot]:
    return {
        f"q{i:05d}": QuerySnapshot(
            split="tune",
            slices=("multi-hop",),
            labels="0" * 16,
            metrics={"retriever": dict.fromkeys(METRICS, 0.5)},
            relevant_ranks={"retriever": {"d1": 1, "d2": None}},
            top={"retriever": tuple(f"d{j}" for j in range(10))},
        )
        for i in range(BASELINE_QUERIES)
    }


def write_baseline(target: Path, generation: int) -> None:
    """One baseline write, as plugin._update_baseline does it."""
    snapshot = Snapshot(
        fingerprint=f"{generation:064x}",
        settings={"gain": "exponential", "min_grade": 1, "no_relevant": "skip"},
        stages=("retriever",),
        metrics=METRICS,
        queries=baseline_queries(),
        plugin_version="crash-test",
        created=str(generation),
    )
    atomic_write_text(target, dump_baseline(snapshot), what="baseline")


def read_baseline(path: Path) -> int:
    """The generation of a whole baseline, read as the plugin reads one."""
    snapshot = load_baseline(path)
    assert len(snapshot.queries) == BASELINE_QUERIES
    generation = int(snapshot.fingerprint, 16)
    assert snapshot.created == str(generation)
    return generation


WRITERS: dict[str, tuple[Callable[[Path, int], None], Callable[[Path], int]]] = {
    "artifact": (write_artifact, read_artifact),
    "baseline": (write_baseline, read_baseline),
}


def zygote(kind: str, target: str) -> None:
    """The child side: for each generation read from stdin, fork a writer that rewrites the
    target forever from that generation on; print its pid, then its wait status once killed."""
    write = WRITERS[kind][0]
    artifact_rows()
    baseline_queries()
    print("ready", flush=True)
    for line in sys.stdin:
        generation = int(line)
        pid = os.fork()
        if pid == 0:  # the writer: runs until killed
            try:
                while True:
                    generation += 1
                    write(Path(target), generation)
            finally:
                os._exit(1)
        print(pid, flush=True)
        print(os.waitpid(pid, 0)[1], flush=True)


# --- the test -----------------------------------------------------------------------------------


def wait_until(condition: Callable[[], bool], *, timeout: float) -> None:
    """Poll the condition every half millisecond until it holds or the timeout passes."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline and not condition():
        time.sleep(0.0005)


def a_temporary_file_in(folder: Path) -> Callable[[], bool]:
    return lambda: any(entry.name.endswith(".tmp") for entry in os.scandir(folder))


def a_new_file_at(target: Path, inode: int) -> Callable[[], bool]:
    """A rename has put a new file (a new inode) at the target."""
    return lambda: os.stat(target).st_ino != inode


def kill_while_writing(tmp_path: Path, kind: str) -> tuple[int, int]:
    """Kill ATTEMPTS writers at random moments; check the target after each kill.

    Returns (kills that left a torn temporary file, kills after which the target had moved on).
    """
    write, read = WRITERS[kind]
    target = tmp_path / f"{kind}.json"
    # The old file every first write replaces; timing the writes scales the kill delays to this
    # machine, so that kills land before, inside and after whole writes.
    times = []
    for first in (0, 1):  # the artifact alternates two writers: time the slower
        started = time.perf_counter()
        write(target, first)
        times.append(time.perf_counter() - started)
    write_time = max(times)
    generation = read(target)
    replaced = os.stat(target).st_ino
    rng = random.Random(f"{SEED}-{kind}")
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"from test_crash_safety import zygote; zygote({kind!r}, {str(target)!r})"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None
    assert child.stdout is not None
    torn = advanced = 0
    try:
        assert child.stdout.readline() == "ready\n"
        for attempt in range(ATTEMPTS):
            child.stdin.write(f"{generation}\n")
            child.stdin.flush()
            pid = int(child.stdout.readline())
            if attempt % 3 == 0:
                # Any moment: before, inside or between writes.
                time.sleep(rng.uniform(0.0, 1.5 * write_time))
            elif attempt % 3 == 1:
                # Inside a write: once its temporary file exists (rendering a baseline takes
                # longer than writing it, so random moments would rarely land there).
                wait_until(a_temporary_file_in(tmp_path), timeout=max(5 * write_time, 10.0))
                time.sleep(rng.uniform(0.0, 0.002))
            else:
                # Just after a whole write: once the rename has replaced the target. Timed
                # delays alone cannot promise this on a loaded machine, where a write can take
                # many times longer than it did when measured above.
                wait_until(a_new_file_at(target, replaced), timeout=max(20 * write_time, 30.0))
                time.sleep(rng.uniform(0.0, 0.002))
            os.kill(pid, signal.SIGKILL)
            status = int(child.stdout.readline())
            assert os.WIFSIGNALED(status)
            assert os.WTERMSIG(status) == signal.SIGKILL
            temporaries = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
            torn += bool(temporaries)
            for temporary in temporaries:  # a killed writer cannot clean up after itself
                temporary.unlink()
            now = read(target)
            replaced = os.stat(target).st_ino
            assert now >= generation, f"attempt {attempt}: went back from {generation} to {now}"
            advanced += now > generation
            generation = now
    finally:
        child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()
    return torn, advanced


@pytest.mark.parametrize("kind", ["artifact", "baseline"])
def test_a_writer_killed_at_any_moment_leaves_the_old_or_a_new_whole_file(
    tmp_path: Path, kind: str
) -> None:
    torn, advanced = kill_while_writing(tmp_path, kind)
    # Both sides of the rename were exercised: kills inside a write (a temporary file was left
    # behind) and kills after a whole write (the target moved on). A third of the kills wait for
    # each side, so neither count depends on how loaded the machine is.
    assert torn > 0
    assert advanced > 0
