"""What the retriever-output cache saves: the example project uncached against a cached re-run.

Runs the example project's gates (``example_project/``, 119 scored queries through BM25 and
the reranker) in fresh pytest processes:

* ``off``: ``--retrieval-cache=off``, the retriever and reranker called for every query;
* ``use, cold``: ``--retrieval-cache=use`` on an empty cache (every query called and stored);
* ``use, warm``: the same again: every query served from the cache, nothing called.

Each is run ``--repeat`` times (default 3); the table shows the median and the fastest wall time
of the whole pytest process (interpreter start, collection, gates, reports) and the queries
the artifact says were served from the cache. The cache lives in a temporary folder.

Run: ``python benchmarks/bench_cache.py [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"


def run(cache_dir: Path, mode: str, artifact: Path) -> tuple[float, dict[str, object]]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")]),
    }
    for name in ("ACME_TOKENIZER", "ACME_RERANKER", "ACME_CHUNK_SIZE", "ACME_CHUNK_OVERLAP"):
        environment.pop(name, None)
    start = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--retrieval-cache={mode}",
            f"--retrieval-cache-dir={cache_dir}",
            f"--retrieval-json={artifact}",
        ],
        cwd=EXAMPLE,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"pytest exited {result.returncode}:\n{result.stdout[-2000:]}{result.stderr}")
    document = json.loads(artifact.read_text(encoding="utf-8"))
    return elapsed, document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {"off": [], "use, cold": [], "use, warm": []}
    served: dict[str, int] = {}
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        for i in range(args.repeat):
            cache = base / f"cache-{i}"
            for label, mode in (("off", "off"), ("use, cold", "use"), ("use, warm", "use")):
                seconds, document = run(cache, mode, base / "report.json")
                rows[label].append(seconds)
                info = document["run"]
                assert isinstance(info, dict)
                served[label] = int(info["cache"]["cached"])
                results[label] = document["results"]
    if not (results["off"] == results["use, cold"] == results["use, warm"]):
        sys.exit("the cached run's numbers differ from the uncached run's")
    print(f"example project, {args.repeat} runs each (wall time of the whole pytest process)")
    print()
    print(f"{'run':<12} {'median s':>9} {'fastest s':>10} {'served from cache':>18}")
    for label, times in rows.items():
        print(
            f"{label:<12} {statistics.median(times):>9.2f} {min(times):>10.2f} "
            f"{served[label]:>14}/119"
        )
    saved = statistics.median(rows["off"]) - statistics.median(rows["use, warm"])
    ratio = statistics.median(rows["use, warm"]) / statistics.median(rows["off"])
    print()
    print(
        f"warm cache: {saved:.2f} s saved per run ({ratio:.0%} of the uncached wall time); "
        "the numbers are identical"
    )


if __name__ == "__main__":
    main()
