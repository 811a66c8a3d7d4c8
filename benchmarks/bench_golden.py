"""Golden-set loading at scale: load time, fingerprint time and peak RSS, 10k vs 100k queries.

Writes a synthetic JSONL golden set per size (5 graded judgments, one slice, 1 in 5 queries
held out), then loads it in a fresh subprocess so that each size's peak RSS is its own. Loading
should scale linearly: the 100k row should take about ten times the 10k row.

    python benchmarks/bench_golden.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def write_synthetic(path: str, size: int) -> None:
    """A valid JSONL golden set of ``size`` queries with 5 judgments each."""
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"version": 1, "name": f"synthetic-{size}"}) + "\n")
        for i in range(size):
            record = {
                "id": f"q{i}",
                "text": f"synthetic question number {i} about topic {i % 997}",
                "relevant": {f"doc-{(i * 7 + j) % (size * 2)}": (j % 3) for j in range(5)},
                "slices": [f"slice-{i % 10}"],
                "split": "heldout" if i % 5 == 0 else "tune",
            }
            out.write(json.dumps(record) + "\n")


def _peak_rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def child(path: str) -> None:
    """Load ``path`` once and print the measurements as JSON (runs in its own process)."""
    from pytest_retrieval.formats.golden_io import load_golden

    baseline = _peak_rss_mib()
    start = time.perf_counter()
    golden = load_golden(path)
    loaded = time.perf_counter()
    fingerprint = golden.fingerprint
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "queries": len(golden),
                "load_s": loaded - start,
                "fingerprint_s": done - loaded,
                "peak_rss_mib": _peak_rss_mib(),
                "baseline_rss_mib": baseline,
                "fingerprint": fingerprint[:12],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--child", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            path = os.path.join(folder, f"golden-{size}.jsonl")
            write_synthetic(path, size)
            out = subprocess.run(
                [sys.executable, __file__, "--child", path],
                check=True,
                capture_output=True,
                text=True,
            )
            rows.append((size, os.path.getsize(path), json.loads(out.stdout)))
    print(
        f"{'queries':>9} {'file MiB':>9} {'load s':>8} {'fingerprint s':>14} "
        f"{'us/query':>9} {'peak RSS MiB':>13} {'(python+imports)':>17}"
    )
    for size, file_size, m in rows:
        per_query = (m["load_s"] + m["fingerprint_s"]) / size * 1e6
        print(
            f"{size:>9,} {file_size / 2**20:>9.1f} {m['load_s']:>8.2f} {m['fingerprint_s']:>14.3f} "
            f"{per_query:>9.1f} {m['peak_rss_mib']:>13.0f} {m['baseline_rss_mib']:>17.0f}"
        )
    if len(rows) >= 2:
        (small, _, a), (large, _, b) = rows[0], rows[-1]
        ratio = (b["load_s"] + b["fingerprint_s"]) / (a["load_s"] + a["fingerprint_s"])
        print(f"\ntime ratio {large:,}/{small:,}: {ratio:.1f}x for {large / small:.0f}x queries")


if __name__ == "__main__":
    main()
