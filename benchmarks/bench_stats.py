"""Time the statistics of pytest_retrieval.scoring.stats at scale: 7,000 queries x 10,000 resamples.

Plain script, no assertions: ``python benchmarks/bench_stats.py``. Prints the wall time of
``bootstrap_ci`` and of ``paired_comparison`` (sign-flip randomization test plus the bootstrap
interval of the mean delta), the time of an exact sign-flip test at the cutoff, and the peak RSS
of the process.
"""

from __future__ import annotations

import platform
import resource
import sys
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from pytest_retrieval.scoring.stats import EXACT_CUTOFF, bootstrap_ci, paired_comparison

QUERIES = 7_000
RESAMPLES = 10_000
REPEATS = 3

T = TypeVar("T")


def best_of(repeats: int, function: Callable[[], T]) -> tuple[float, T]:
    """Best wall time in seconds over ``repeats`` calls, and the last result."""
    best = float("inf")
    result: T | None = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main() -> None:
    rng = np.random.default_rng(2024)
    # nDCG-like per-query scores in [0, 1], and a current run that is slightly worse.
    baseline = rng.beta(2.0, 2.0, size=QUERIES)
    current = np.clip(baseline + rng.normal(-0.003, 0.1, size=QUERIES), 0.0, 1.0)
    baseline_list, current_list = baseline.tolist(), current.tolist()

    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(f"{QUERIES:,} queries x {RESAMPLES:,} resamples, best of {REPEATS}")
    print(f"peak RSS before timing: {peak_rss_mb():.0f} MB")

    seconds, ci = best_of(REPEATS, lambda: bootstrap_ci(baseline_list, resamples=RESAMPLES))
    print(f"bootstrap_ci:      {seconds:.3f} s  mean {ci.mean:.4f} [{ci.low:.4f}, {ci.high:.4f}]")

    seconds, comparison = best_of(
        REPEATS, lambda: paired_comparison(baseline_list, current_list, resamples=RESAMPLES)
    )
    print(
        f"paired_comparison: {seconds:.3f} s  "
        f"mean delta {comparison.mean_delta:+.4f} "
        f"[{comparison.ci.low:+.4f}, {comparison.ci.high:+.4f}], "
        f"p = {comparison.p_value:.4f} ({comparison.method}, {comparison.n_nonzero:,} non-zero)"
    )

    small_baseline = rng.random(EXACT_CUTOFF).tolist()
    small_current = rng.random(EXACT_CUTOFF).tolist()
    seconds, exact = best_of(
        REPEATS, lambda: paired_comparison(small_baseline, small_current, resamples=RESAMPLES)
    )
    print(
        f"exact test, {EXACT_CUTOFF} non-zero deltas (2**{EXACT_CUTOFF} patterns) "
        f"+ its interval: {seconds:.3f} s  p = {exact.p_value:.4f} ({exact.method})"
    )

    print(f"peak RSS: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
