"""Does the plugin scale? Prints figures; asserts nothing.

1. **The floor and the plugin.** Over synthetic golden sets (default 10,000 and 100,000 queries)
   with a trivial in-memory retriever returning 100 ids, the *floor* is the same work done
   plainly in one process: load the JSONL golden set, call the retriever on every query,
   score the run with our own ``evaluate`` on the same metrics (6 families at K=1,5,10,50,100),
   and write the same per-query content (id, text, split, slices, ranking, metric values,
   latency, error) with ``json.dumps``. The plugin is ``pytest --retrieval-json`` on the same
   project, with the same retriever function, then the same with ``--retrieval-markdown`` and
   with ``--retrieval-html`` (each printed as what it adds, a fraction of the floor). Each is a
   fresh process; the table shows its wall time, CPU time and peak RSS (``wait4``: the child
   and what it waited for), and the plugin's ratios to the floor.
2. **xdist.** A CPU-bound retriever (4 ms of CPU per query: threads cannot overlap it), 3,000
   queries, 4 test files whose tests all need the run: ``pytest -n 0`` against ``pytest -n 2``.
   Wall and CPU time of the whole run, the retrieval phase (first call's start to the last
   call's end, across processes, from the retriever's own log), the rest of the run (wall minus
   retrieval: what xdist must keep small to pay for itself), how many calls and how many
   processes made them.
3. **Ray.** ``pytest-retrieval run --executor local`` against ``--executor ray`` (a local Ray
   instance started by the command, 2 actors) on the CPU-bound retriever; whether the two run
   files hold the same rankings. Skipped with a note when Ray is not installed.
4. **Concurrency.** A retriever that sleeps 20 ms per query, at concurrency 1 and 32: the
   retrieval phase against the ideal n x latency / concurrency.

Every child runs with byte-code caches on (``PYTHONDONTWRITEBYTECODE`` removed from its
environment) after one warm-up run of each kind, as on a machine with a warm venv.

Every figure is the median of three runs (``--repeats``). ``--quick`` is a try in about a
minute (10,000 queries, one run each, 500 CPU-bound queries, no Ray).

Run: ``python benchmarks/bench_scale.py [--quick] [--repeats 3] [--sizes 10000,100000]
[--cpu-queries 3000] [--cpu-ms 4] [--ray-queries 1000] [--skip-ray] [--sleep-queries 400]
[--only floor|xdist|ray|sleep]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

#: The retriever, one module imported by the floor, the conftest and ``pytest-retrieval run``.
SEARCH = """
import os
import time

DEPTH = 100
CPU_SECONDS = float(os.environ.get("BENCH_CPU", "0"))
SLEEP_SECONDS = float(os.environ.get("BENCH_SLEEP", "0"))
LOG = os.environ.get("BENCH_LOG")


def search(text, k=DEPTH):
    start = time.perf_counter()
    if CPU_SECONDS:
        began = time.thread_time()
        while time.thread_time() - began < CPU_SECONDS:
            pass
    if SLEEP_SECONDS:
        time.sleep(SLEEP_SECONDS)
    n = int(text.split()[-1])
    # Relevant docs are d<n>-0..2; put one of them at rank (n % 50) + 1.
    ranking = [f"x{n}-{i}" for i in range(DEPTH)]
    ranking[n % 50] = f"d{n}-0"
    if LOG:
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {start} {time.perf_counter()}\\n")
    return ranking[:k]


def build():
    return search
"""

CONFTEST = """
import pytest

from search import search


@pytest.fixture(scope="session")
def retriever_under_test():
    return search
"""

TEST = """
from pytest_retrieval.gates.gate import assert_recall_at


def test_recall_{n}():
    assert_recall_at(100) >= 0.0
"""

#: The floor: the plugin's work done plainly, in one process.
FLOOR = """
import json
import sys
import time

from pytest_retrieval.scoring.evaluate import evaluate

from search import search

KS = (1, 5, 10, 50, 100)
METRICS = ("recall", "precision", "hit_rate", "ndcg", "map", "mrr")
specs = [f"{m}@{k}" for m in METRICS for k in KS]

with open("golden.jsonl", encoding="utf-8") as handle:
    lines = handle.read().splitlines()
queries = [json.loads(line) for line in lines[1:]]
run, latency = {}, {}
for q in queries:
    start = time.perf_counter()
    run[q["id"]] = search(q["text"])
    latency[q["id"]] = (time.perf_counter() - start) * 1000
evaluation = evaluate(run, {q["id"]: q["relevant"] for q in queries}, specs)
per_query = evaluation.per_query
rows = [
    {
        "id": q["id"],
        "text": q["text"],
        "split": "test",
        "slices": q["slices"],
        "rankings": {"retriever": run[q["id"]]},
        "metrics": {"retriever": per_query[q["id"]]},
        "latency_ms": {"retriever": latency[q["id"]]},
        "error": None,
    }
    for q in queries
]
with open("floor.json", "w", encoding="utf-8") as out:
    out.write(json.dumps({"queries": rows}, ensure_ascii=False, separators=(",", ":")))
"""


def write_project(folder: Path, n: int, *, test_files: int = 1) -> None:
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
    (folder / "search.py").write_text(textwrap.dedent(SEARCH))
    (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (folder / "floor.py").write_text(textwrap.dedent(FLOOR))
    for i in range(test_files):
        (folder / f"test_scale_{i}.py").write_text(textwrap.dedent(TEST.format(n=i)))
    (folder / "pytest.ini").write_text(
        "[pytest]\nretrieval_golden = golden.jsonl\nretrieval_ks = 1,5,10,50,100\n"
    )


#: CPU seconds (user + system) of the last child measured: on a shared machine, where the wall
#: time also counts waiting for a core, the CPU time is the steadier figure.
LAST_CPU = [0.0]


def measure(
    folder: Path, argv: list[str], env: dict[str, str] | None = None
) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one child process (and its waited-for children)."""
    # The project folder first, then the caller's PYTHONPATH: a checkout measured with
    # PYTHONPATH=<checkout> (not the installed copy) is the plugin its children import.
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    environment = {**os.environ, "PYTHONPATH": path, **(env or {})}
    # Byte-code caches on, as on a developer's machine or a CI runner with a warm venv: without
    # them every process (each xdist worker too) compiles pytest, its plugins and ours again.
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    with open(folder / "out.log", "w") as out:
        start = time.perf_counter()
        child = subprocess.Popen(
            argv, cwd=folder, stdout=out, stderr=subprocess.STDOUT, env=environment
        )
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    LAST_CPU[0] = usage.ru_utime + usage.ru_stime
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        print((folder / "out.log").read_text()[-3000:], file=sys.stderr)
        raise SystemExit(f"{argv[:4]} exited {child.returncode} in {folder}")
    return wall, usage.ru_maxrss / 1024  # Linux: KiB


PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]

#: How many times each figure is measured (its median is printed); ``--repeats`` sets it.
REPEATS = [3]


def median_of(
    folder: Path, argv: list[str], env: dict[str, str] | None = None, before: Any = None
) -> tuple[float, float, float]:
    """Median (wall s, CPU s, peak MiB) of :data:`REPEATS` runs of one child; ``before`` (if
    given) runs before each repetition (removing a log, an output)."""
    walls, cpus, peaks = [], [], []
    for _ in range(REPEATS[0]):
        if before is not None:
            before()
        wall, peak = measure(folder, argv, env)
        walls.append(wall)
        cpus.append(LAST_CPU[0])
        peaks.append(peak)
    return statistics.median(walls), statistics.median(cpus), statistics.median(peaks)


def floor_and_plugin(sizes: list[int]) -> None:
    print(
        "1. the plugin against the floor: trivial retriever returning 100 ids, 30 metrics "
        f"(median of {REPEATS[0]})"
    )
    print(
        f"{'queries':>9}  {'output':>11}  {'wall s':>7}  {'CPU s':>7}  {'MiB':>6}  "
        f"{'time x':>6}  {'CPU x':>6}  {'memory x':>8}  {'ms/query':>8}"
    )
    outputs = (
        ("JSON", ["--retrieval-json", "report.json"]),
        ("+ Markdown", ["--retrieval-json", "report.json", "--retrieval-markdown", "report.md"]),
        ("+ HTML", ["--retrieval-json", "report.json", "--retrieval-html", "report.html"]),
    )
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_project(folder, n)
            floor_s, floor_cpu, floor_mb = median_of(folder, [sys.executable, "floor.py"])
            print(
                f"{n:>9,}  {'floor':>11}  {floor_s:7.2f}  {floor_cpu:7.2f}  {floor_mb:6.0f}  "
                f"{'1.00':>6}  {'1.00':>6}  {'1.00':>8}  {floor_s / n * 1000:8.3f}"
            )
            json_s = json_cpu = 0.0
            for label, flags in outputs:
                wall, cpu, peak = median_of(folder, [*PYTEST, *flags])
                print(
                    f"{n:>9,}  {label:>11}  {wall:7.2f}  {cpu:7.2f}  {peak:6.0f}  "
                    f"{wall / floor_s:6.2f}  {cpu / floor_cpu:6.2f}  {peak / floor_mb:8.2f}  "
                    f"{wall / n * 1000:8.3f}"
                )
                if label == "JSON":
                    json_s, json_cpu = wall, cpu
                else:
                    print(
                        f"{n:>9,}  {label:>11}  adds {(wall - json_s) / floor_s:+.2f}x the "
                        f"floor's wall time, {(cpu - json_cpu) / floor_cpu:+.2f}x its CPU time"
                    )
    print(
        "floor = load the JSONL, call the retriever, evaluate(), json.dumps the per-query rows; "
        "JSON = pytest --retrieval-json (golden-set checks, summary, gates, snapshot, artifact); "
        "+ Markdown / + HTML = the same with that report written too; time x, CPU x, memory x: "
        "over the floor's wall, CPU (user + system) seconds and peak RSS."
    )


def _calls(log: Path) -> tuple[int, int, float]:
    """(calls, processes that called, retrieval span in seconds) from the retriever's log."""
    rows = [line.split() for line in log.read_text().splitlines()]
    starts = [float(r[1]) for r in rows]
    ends = [float(r[2]) for r in rows]
    return len(rows), len({r[0] for r in rows}), max(ends) - min(starts)


def xdist(n: int, cpu_ms: float) -> None:
    print()
    print(
        f"2. xdist: {n:,} queries, a retriever burning {cpu_ms:g} ms of CPU per query, "
        f"4 test files (median of {REPEATS[0]})"
    )
    print(
        f"{'mode':>6}  {'wall s':>7}  {'CPU s':>7}  {'retrieval s':>11}  {'other s':>7}  "
        f"{'calls':>6}  {'processes calling':>17}"
    )
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, n, test_files=4)
        log = folder / "calls.log"
        env = {"BENCH_CPU": str(cpu_ms / 1000), "BENCH_LOG": str(log)}
        for mode in ("0", "2"):
            walls, cpus, spans, others = [], [], [], []
            for _ in range(REPEATS[0]):
                if log.exists():
                    log.unlink()
                wall, _rss = measure(folder, [*PYTEST, "-n", mode], env=env)
                calls, processes, span = _calls(log)
                if calls != n:
                    raise SystemExit(f"-n {mode}: {calls} retriever calls for {n} queries")
                walls.append(wall)
                cpus.append(LAST_CPU[0])
                spans.append(span)
                others.append(wall - span)
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            span, other = statistics.median(spans), statistics.median(others)
            figures[mode] = (wall, span)
            label = "serial" if mode == "0" else f"-n {mode}"
            print(
                f"{label:>6}  {wall:7.2f}  {cpu:7.2f}  {span:11.2f}  {other:7.2f}  {calls:>6}  "
                f"{processes:>17}"
            )
    (serial_wall, serial_span), (two_wall, two_span) = figures["0"], figures["2"]
    print(
        f"speedup of -n 2: {serial_span / two_span:.2f}x on the retrieval phase, "
        f"{serial_wall / two_wall:.2f}x on the whole run (which includes starting the workers)"
    )
    print(
        "retrieval s = the first call's start to the last call's end, across processes (from the "
        "retriever's own log); other s = wall - retrieval: start-up, collection, the golden set, "
        "scoring, the reports, and under xdist the workers' start-up and the shard hand-offs"
    )


def ray(n: int) -> None:
    print()
    print(f"3. pytest-retrieval run: {n:,} queries, the 4 ms CPU-bound retriever")
    try:
        import ray as _ray  # noqa: F401
    except ImportError:
        print("skipped: Ray is not installed (pip install 'pytest-retrieval[ray]')")
        return
    print(f"{'executor':>9}  {'wall s':>7}")
    outputs = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, n)
        env = {"BENCH_CPU": "0.004"}
        for executor, extra in (("local", ["--concurrency", "8"]), ("ray", ["--concurrency", "2"])):
            output = folder / f"{executor}.jsonl"
            argv = [
                sys.executable, "-m", "pytest_retrieval.cli", "run", "golden.jsonl",
                "--retriever", "search:build", "--output", str(output),
                "--executor", executor, "--batch-size", "50", *extra,
            ]  # fmt: skip
            wall, _rss = measure(folder, argv, env=env)
            outputs[executor] = [
                (r["query_id"], r["ranking"])
                for r in map(json.loads, output.read_text().splitlines())
            ]
            print(f"{executor:>9}  {wall:7.2f}")
    same = outputs["local"] == outputs["ray"]
    print(
        f"run files equal (query ids and rankings, in order): {same}; the ray figure includes "
        "starting a local Ray instance (2 CPUs, one actor per CPU, each building the retriever once)"
    )


def concurrency(n: int, sleep_ms: float) -> None:
    print()
    print(f"4. concurrency: {n} queries, retriever sleeps {sleep_ms:g} ms per query")
    print(f"{'concurrency':>11}  {'retrieval s':>11}  {'ideal s':>8}  {'ratio':>6}")
    latency = sleep_ms / 1000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, n)
        log = folder / "calls.log"
        for level in (1, 32):
            if log.exists():
                log.unlink()
            env = {"BENCH_SLEEP": str(latency), "BENCH_LOG": str(log)}
            measure(folder, [*PYTEST, f"--retrieval-concurrency={level}"], env=env)
            _calls_made, _processes, span = _calls(log)
            ideal = n * latency / level
            print(f"{level:>11}  {span:11.2f}  {ideal:8.2f}  {span / ideal:6.2f}")
    print("retrieval s = first call's start to last call's end; ideal = n x latency / concurrency")


def warm_up() -> None:
    """One small run of each kind first, so that every figure is measured with warm byte-code
    caches (the first process to import a module writes its cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, 100, test_files=2)
        measure(folder, [sys.executable, "floor.py"])
        measure(folder, [*PYTEST, "-n", "2", "--retrieval-json", "report.json"])
        measure(folder, [*PYTEST, "-n", "0"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="golden-set sizes (default 10000,100000)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per figure (default 3)")
    parser.add_argument("--cpu-queries", type=int, default=None, help="default 3000")
    parser.add_argument("--cpu-ms", type=float, default=4.0)
    parser.add_argument("--ray-queries", type=int, default=1000)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--sleep-queries", type=int, default=None, help="default 400")
    parser.add_argument("--sleep-ms", type=float, default=20.0)
    parser.add_argument("--only", choices=("floor", "xdist", "ray", "sleep"), default=None)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a try in about a minute: 10,000 queries, 1 run per figure, 500 CPU-bound "
        "queries, 100 sleeping ones, no Ray (the flags above still win)",
    )
    args = parser.parse_args()
    quick = args.quick
    sizes = args.sizes or ("10000" if quick else "10000,100000")
    REPEATS[0] = args.repeats or (1 if quick else 3)
    cpu_queries = args.cpu_queries or (500 if quick else 3000)
    sleep_queries = args.sleep_queries or (100 if quick else 400)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
        f"median of {REPEATS[0]}"
    )
    warm_up()
    if args.only in (None, "floor"):
        floor_and_plugin([int(s) for s in sizes.split(",")])
    if args.only in (None, "xdist"):
        xdist(cpu_queries, args.cpu_ms)
    if args.only in (None, "ray") and not (args.skip_ray or quick):
        ray(args.ray_queries)
    if args.only in (None, "sleep"):
        concurrency(sleep_queries, args.sleep_ms)


if __name__ == "__main__":
    main()
