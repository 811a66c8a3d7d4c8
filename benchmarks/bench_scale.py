"""Does the plugin scale? Prints figures; asserts nothing.

1. The plugin, through pytest, over synthetic golden sets of 1,000, 10,000 and 100,000 queries
   with a trivial in-memory retriever returning 100 ids: wall time and peak RSS of each run (a
   fresh pytest process each), and the time per query, so linear growth is visible.
2. A retriever that sleeps 20 ms per query, at concurrency 1 and 32: wall time of the retrieval
   against the ideal n x latency / concurrency.

Each run writes the JSON artifact too, as CI would.

Run: ``python benchmarks/bench_scale.py [--sizes 1000,10000,100000] [--sleep-queries 400]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CONFTEST = """
import json
import os
import time

import pytest

DEPTH = 100
SPAN = []  # [first call's start, last call's end]: the retrieval phase, timed from inside


@pytest.fixture(scope="session")
def retriever_under_test():
    sleep = float(os.environ.get("BENCH_SLEEP", "0"))

    def search(text):
        start = time.perf_counter()
        if sleep:
            time.sleep(sleep)
        n = int(text.split()[-1])
        # Relevant docs are d<n>-0..2; put one of them at rank (n % 50) + 1.
        ranking = [f"x{n}-{i}" for i in range(DEPTH)]
        ranking[n % 50] = f"d{n}-0"
        end = time.perf_counter()
        SPAN[:] = [min(SPAN[0], start), max(SPAN[1], end)] if SPAN else [start, end]
        return ranking

    return search


def pytest_sessionfinish(session):
    with open("span.json", "w") as out:
        json.dump(SPAN, out)
"""

TEST = """
from pytest_retrieval.gates import assert_recall_at


def test_recall():
    assert_recall_at(100) >= 0.0
"""


def write_project(folder: Path, n: int) -> None:
    rng = random.Random(n)
    with open(folder / "golden.jsonl", "w", encoding="utf-8") as out:
        out.write(json.dumps({"version": 1, "name": f"synthetic-{n}"}) + "\n")
        for q in range(n):
            grades = {f"d{q}-{j}": rng.choice((1, 2, 3)) for j in range(3)}
            row = {
                "id": f"q{q}",
                "text": f"synthetic query number {q}",
                "relevant": grades,
                "slices": [f"s{q % 5}"],
            }
            out.write(json.dumps(row) + "\n")
    (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (folder / "test_scale.py").write_text(textwrap.dedent(TEST))
    (folder / "pytest.ini").write_text(
        "[pytest]\nretrieval_golden = golden.jsonl\nretrieval_ks = 1,5,10,50,100\n"
    )


def run_pytest(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB of the pytest child, last output line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--retrieval-json",
            str(folder / "report.json"),
            *args,
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"pytest exited {result.returncode} in {folder}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    # ru_maxrss of children is the largest child so far: each size runs after the smaller ones,
    # so the figure is this run's peak (the runs grow).
    return wall, max(peak, before) / 1024, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--sleep-queries", type=int, default=400)
    parser.add_argument("--sleep-ms", type=float, default=20.0)
    args = parser.parse_args()

    sizes = [int(s) for s in args.sizes.split(",")]
    print("1. scale: trivial retriever returning 100 ids, full metric table at K=1,5,10,50,100")
    print(f"{'queries':>9}  {'wall s':>8}  {'ms/query':>9}  {'peak RSS MiB':>12}")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_project(folder, n)
            wall, rss, _last = run_pytest(folder)
            print(f"{n:>9,}  {wall:8.2f}  {wall / n * 1000:9.3f}  {rss:12.0f}")

    n = args.sleep_queries
    latency = args.sleep_ms / 1000
    print()
    print(f"2. concurrency: {n} queries, retriever sleeps {args.sleep_ms:g} ms per query")
    print(f"{'concurrency':>11}  {'retrieval s':>11}  {'ideal s':>8}  {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, n)
        for concurrency in (1, 32):
            run_pytest(
                folder,
                f"--retrieval-concurrency={concurrency}",
                env={"BENCH_SLEEP": str(latency)},
            )
            first, last = json.loads((folder / "span.json").read_text())
            retrieval = last - first
            ideal = n * latency / concurrency
            print(f"{concurrency:>11}  {retrieval:11.2f}  {ideal:8.2f}  {retrieval / ideal:6.2f}")
    print()
    print(
        "retrieval s = from the start of the first retriever call to the end of the last one, "
        "inside the pytest run; ideal = queries x latency / concurrency."
    )


if __name__ == "__main__":
    main()
