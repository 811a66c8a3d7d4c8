"""Calibrate the regression gate: false alarms without a change, detection of true drops.

Plain script, no assertions: ``python benchmarks/bench_gate_calibration.py [--trials N]
[--quick]``. It simulates golden sets of 30, 100, 300 and 1,000 queries and judges each
simulated run against its baseline with the plugin's own rule, ``pytest_retrieval.baseline.compare``
(budget 0.01, alpha 0.05), beside the naive rule "fail when the mean drops by more than the
budget". It prints:

* A/A trials (no true change): the false-alarm rate, which for our rule must stay at or below
  alpha, whatever the size of the golden set;
* A/B trials with true mean drops of 1, 2, 5 and 10 points (0.01 .. 0.10 of NDCG@10): the
  detection rate;
* the time of the bootstrap and of the randomization (sign-flip) test for 7,000 queries x
  10,000 resamples, the largest golden set the plugin is meant for.

The per-query model (what a golden set and a code change look like):

* Each query has a true quality ``q ~ Beta(2, 1)``: the chance that the retriever puts its one
  relevant document first, and again at each later rank, so the rank is geometric in ``q``.
  The metric is NDCG@10 with one relevant document, ``1 / log2(rank + 1)`` inside the top 10 and
  0 below, so values are graded and discrete (1, 0.631, 0.5, ... 0.289, 0), as in real runs.
* A code change touches the ranking of 30% of the queries (each independently). A touched
  query's rank is drawn again: from the same quality in A/A trials (so its value may move either
  way, or not at all), from a lower quality ``q * (1 - s)`` in A/B trials. The other 70% keep
  their rank exactly, so most per-query deltas are exactly zero, as in real before/after runs.
* ``s`` is solved (bisection) so that the expected mean drop over the population is exactly the
  stated number of points: a "true drop of 2 points" is 0.02 of mean NDCG@10.

Everything is seeded: the same arguments print the same tables.
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from pytest_retrieval import stats
from pytest_retrieval.baseline import QuerySnapshot, Snapshot
from pytest_retrieval.declared import parse_budget
from pytest_retrieval.regression import CompareOptions, compare

SIZES = (30, 100, 300, 1000)
DROPS = (0.01, 0.02, 0.05, 0.10)
BUDGET = 0.01
ALPHA = 0.05
CUTOFF = 10
BETA = (2.0, 1.0)
TOUCHED = 0.3
STAGE = "retriever"
METRIC = f"ndcg@{CUTOFF}"

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")

#: NDCG@10 of one relevant document at rank r (index r - 1); 0 below the cutoff.
GAIN = np.array([1.0 / math.log2(r + 1) for r in range(1, CUTOFF + 1)])


def values(ranks: npt.NDArray[np.int64]) -> FloatArray:
    """Per-query NDCG@10 of the ranks of each query's relevant document."""
    out = np.zeros(ranks.shape, dtype=np.float64)
    inside = ranks <= CUTOFF
    out[inside] = GAIN[ranks[inside] - 1]
    return out


def expected_value(q: FloatArray) -> FloatArray:
    """E[NDCG@10 | q] = sum over r <= 10 of q (1 - q)^(r - 1) / log2(r + 1)."""
    r = np.arange(1, CUTOFF + 1)
    expected: FloatArray = np.sum(q[:, None] * (1.0 - q[:, None]) ** (r - 1) * GAIN, axis=1)
    return expected


def solve_shrink(drop: float, population: FloatArray) -> float:
    """The s for which touching 30% of queries with quality q * (1 - s) drops the mean by drop."""
    before = expected_value(population)

    def mean_drop(s: float) -> float:
        return TOUCHED * float(np.mean(before - expected_value(population * (1.0 - s))))

    low, high = 0.0, 1.0
    if mean_drop(high) < drop:
        raise SystemExit(f"a true drop of {drop} is not reachable in this model")
    for _ in range(60):
        middle = (low + high) / 2
        if mean_drop(middle) < drop:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def snapshot(per_query: FloatArray) -> Snapshot:
    return Snapshot(
        fingerprint="simulated",
        settings={},
        stages=(STAGE,),
        metrics=(METRIC,),
        queries={
            f"q{i}": QuerySnapshot("tune", (), "l", {STAGE: {METRIC: float(v)}}, {STAGE: {}}, {})
            for i, v in enumerate(per_query)
        },
    )


def rates(
    n: int, shrinks: Sequence[float], trials: int, resamples: int, rng: np.random.Generator
) -> list[tuple[float, float]]:
    """(our rate, naive rate) of failing, per shrink (0 = A/A), over ``trials`` golden sets."""
    budget = parse_budget(f"{METRIC} {BUDGET}")
    ours = [0] * len(shrinks)
    naive = [0] * len(shrinks)
    for trial in range(trials):
        q = rng.beta(*BETA, size=n)
        before_ranks = rng.geometric(q)
        baseline = snapshot(values(before_ranks))
        for column, s in enumerate(shrinks):
            touched = rng.random(n) < TOUCHED
            after_ranks = np.where(touched, rng.geometric(q * (1.0 - s)), before_ranks)
            outcome = compare(
                baseline,
                snapshot(values(after_ranks)),
                budget,
                stage=STAGE,
                options=CompareOptions(alpha=ALPHA, resamples=resamples, seed=trial),
            )
            assert outcome.delta is not None
            ours[column] += outcome.status == "regression"
            naive[column] += -outcome.delta > BUDGET
    return [(o / trials, v / trials) for o, v in zip(ours, naive)]


def best_of(repeats: int, function: Callable[[], T]) -> tuple[float, T]:
    best = math.inf
    result: T | None = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def timing(queries: int, resamples: int, repeats: int) -> None:
    rng = np.random.default_rng(7)
    q = rng.beta(*BETA, size=queries)
    ranks = rng.geometric(q)
    touched = rng.random(queries) < TOUCHED
    before = values(ranks)
    after = values(np.where(touched, rng.geometric(q * 0.9), ranks))
    deltas = after - before
    sparse = deltas[deltas != 0.0]
    # The worst case for the test: every query moved (continuous scores), all deltas non-zero.
    dense = rng.normal(-0.003, 0.1, size=queries)
    print(f"\nTiming: {queries:,} queries x {resamples:,} resamples, best of {repeats}")
    rows: list[tuple[str, Callable[[], object]]] = [
        ("bootstrap CI of the mean delta", lambda: stats.bootstrap_ci(deltas, resamples=resamples)),
        # The Monte Carlo sign-flip test alone (private: paired_comparison adds the bootstrap).
        (
            f"sign-flip test, {dense.size:,} non-zero deltas",
            lambda: stats._monte_carlo_sign_flip_p_value(
                dense, "less", resamples, np.random.default_rng(0)
            ),
        ),
        (
            f"sign-flip test, {sparse.size:,} non-zero deltas (model)",
            lambda: stats._monte_carlo_sign_flip_p_value(
                sparse, "less", resamples, np.random.default_rng(0)
            ),
        ),
        (
            "paired_comparison (test + bootstrap)",
            lambda: stats.paired_comparison(before, after, resamples=resamples),
        ),
    ]
    base, current = snapshot(before), snapshot(after)
    budget = parse_budget(f"{METRIC} {BUDGET}")
    options = CompareOptions(resamples=resamples)
    rows.append(
        (
            "compare(), one budget (2 tests, 2 bootstraps)",
            lambda: compare(base, current, budget, stage=STAGE, options=options),
        )
    )
    for label, function in rows:
        seconds, _ = best_of(repeats, function)
        print(f"  {label:<48} {seconds:6.2f} s")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400, help="golden sets per row (400)")
    parser.add_argument(
        "--resamples", type=int, default=2000, help="resamples inside the simulation (2000)"
    )
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument(
        "--quick", action="store_true", help="100 trials, 1000 resamples, one timing repeat"
    )
    parser.add_argument("--no-timing", action="store_true", help="skip the 7,000-query timing")
    args = parser.parse_args(argv)
    trials = 100 if args.quick else args.trials
    resamples = 1000 if args.quick else args.resamples
    started = time.perf_counter()

    population = np.random.default_rng(args.seed + 1).beta(*BETA, size=200_000)
    shrinks = [solve_shrink(d, population) for d in DROPS]
    mean_value = float(np.mean(expected_value(population)))
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(
        f"Model: q ~ Beta{BETA}, rank ~ Geometric(q), value = NDCG@{CUTOFF} of one relevant "
        f"document (population mean {mean_value:.3f}); a change redraws the rank of "
        f"{TOUCHED:.0%} of queries"
    )
    print(
        "  true drop -> quality shrink of touched queries: "
        + ", ".join(f"{d * 100:g} pt -> q x {1 - s:.3f}" for d, s in zip(DROPS, shrinks))
    )
    print(
        f"Rule: ours = drop > {BUDGET} AND one-sided sign-flip p <= {ALPHA} "
        f"(pytest_retrieval.baseline.compare, {resamples:,} resamples); naive = drop > {BUDGET}"
    )
    print(f"{trials} trials per cell, seed {args.seed}")

    rng = np.random.default_rng(args.seed)
    table = {n: rates(n, [0.0, *shrinks], trials, resamples, rng) for n in SIZES}
    error = math.sqrt(ALPHA * (1 - ALPHA) / trials)
    print(
        f"\nFalse alarms, A/A (no true change): ours must stay <= alpha = {ALPHA} "
        f"(Monte Carlo error at {ALPHA}: +-{error:.3f})"
    )
    print(f"{'n':>6}  {'ours':>6}  {'naive':>6}")
    for n in SIZES:
        ours, naive = table[n][0]
        print(f"{n:>6}  {ours:6.3f}  {naive:6.3f}")

    print("\nDetection, A/B (true drop of d points), ours / naive")
    header = "".join(f"  {f'd = {d * 100:g} pt':>15}" for d in DROPS)
    print(f"{'n':>6}{header}")
    for n in SIZES:
        cells = "".join(f"  {f'{o:.3f} / {v:.3f}':>15}" for o, v in table[n][1:])
        print(f"{n:>6}{cells}")
    print(f"\nsimulation: {time.perf_counter() - started:.0f} s")

    if not args.no_timing:
        timing(7_000, 10_000, 1 if args.quick else 3)


if __name__ == "__main__":
    main()
