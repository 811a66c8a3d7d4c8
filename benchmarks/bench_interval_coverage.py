"""Coverage of intervals of the mean delta at small n: which method to print beside a verdict.

Plain script, no assertions: ``python benchmarks/bench_interval_coverage.py [--trials N]``.
For n = 10, 30, 100 and several models of per-query deltas with a known true mean, it measures
how often each method's one-sided 95% upper bound is at or above the true mean (target 0.95:
the bound that matches the one-sided test at alpha 0.05) and how often the two-sided 90%
interval contains it (target 0.90), plus how often the interval collapsed to a point.

Methods: the percentile bootstrap (``stats.bootstrap_ci``, what the plugin printed), BCa
(bias-corrected and accelerated bootstrap, jackknife acceleration), the Student t interval, and
the sign-flip test inversion (``stats.delta_interval``, which agrees with the test by
construction). Seeded: the same arguments print the same table.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from pytest_retrieval.scoring import stats

FloatArray = npt.NDArray[np.float64]
ALPHA = 0.05
SIZES = (10, 30, 100)
#: t quantiles t_{0.95, n-1} for the sizes above (no scipy dependency).
T95 = {10: 1.8331, 30: 1.6991, 100: 1.6604}
NORMAL = NormalDist()


def ndcg_like(rng: np.random.Generator, size: int) -> FloatArray:
    """Differences of two graded values in {1, .63, .5, .43, .39, 0}: discrete, bounded."""
    grades = np.array([1.0, 0.631, 0.5, 0.431, 0.387, 0.0])
    before = rng.choice(grades, size=size, p=[0.4, 0.2, 0.1, 0.1, 0.1, 0.1])
    after = rng.choice(grades, size=size, p=[0.35, 0.2, 0.12, 0.1, 0.11, 0.12])
    return after - before


# Model name -> (sampler of n deltas, true mean).
def models(seed: int) -> dict[str, tuple[Callable[[np.random.Generator, int], FloatArray], float]]:
    big = ndcg_like(np.random.default_rng(seed), 2_000_000)
    ndcg_mean = float(np.mean(big))

    def sparse(share: float) -> Callable[[np.random.Generator, int], FloatArray]:
        def draw(rng: np.random.Generator, n: int) -> FloatArray:
            return np.where(rng.random(n) < share, ndcg_like(rng, n), 0.0)

        return draw

    return {
        "normal(-0.02, 0.1)": (lambda r, n: r.normal(-0.02, 0.1, n), -0.02),
        "skewed, mean 0": (lambda r, n: 0.1 * (r.exponential(1.0, n) - 1.0), 0.0),
        "graded, all change": (ndcg_like, ndcg_mean),
        "graded, 30% change": (sparse(0.3), 0.3 * ndcg_mean),
        "graded, 5% change": (sparse(0.05), 0.05 * ndcg_mean),
        "hit rate (Bernoulli)": (
            lambda r, n: (r.random(n) < 0.7).astype(float) - (r.random(n) < 0.75).astype(float),
            -0.05,
        ),
    }


def percentile(d: FloatArray, seed: int, resamples: int) -> tuple[float, float]:
    ci = stats.bootstrap_ci(d, confidence=1 - 2 * ALPHA, resamples=resamples, seed=seed)
    return ci.low, ci.high


def bca(d: FloatArray, seed: int, resamples: int) -> tuple[float, float]:
    n = d.size
    mean = float(np.mean(d))
    if np.all(d == d[0]):
        return mean, mean
    rng = np.random.default_rng(seed)
    means = np.mean(d[rng.integers(0, n, size=(resamples, n))], axis=1)
    share = (np.count_nonzero(means < mean) + 0.5 * np.count_nonzero(means == mean)) / resamples
    z0 = NORMAL.inv_cdf(min(max(share, 1e-6), 1 - 1e-6))
    jack = (d.sum() - d) / (n - 1)
    diff = jack.mean() - jack
    denominator = 6.0 * float(np.sum(diff**2)) ** 1.5
    a = float(np.sum(diff**3)) / denominator if denominator > 0 else 0.0
    ends = []
    for q in (ALPHA, 1 - ALPHA):
        z = NORMAL.inv_cdf(q)
        ends.append(NORMAL.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))
    low, high = np.quantile(means, ends)
    return float(low), float(high)


def student(d: FloatArray, seed: int, resamples: int) -> tuple[float, float]:
    del seed, resamples
    half = T95[d.size] * float(np.std(d, ddof=1)) / math.sqrt(d.size)
    mean = float(np.mean(d))
    return mean - half, mean + half


def inversion(d: FloatArray, seed: int, resamples: int) -> tuple[float, float]:
    interval = stats.delta_interval(d, alpha=ALPHA, seed=seed, resamples=resamples)
    return interval.low, interval.high


METHODS: dict[str, Callable[[FloatArray, int, int], tuple[float, float]]] = {
    "percentile": percentile,
    "BCa": bca,
    "t": student,
    "sign-flip inv.": inversion,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="samples per cell (1000)")
    parser.add_argument("--resamples", type=int, default=1000, help="per interval (1000)")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    started = time.perf_counter()
    error = math.sqrt(0.95 * 0.05 / args.trials)
    print(
        f"{args.trials} samples per cell, {args.resamples} resamples, seed {args.seed}; "
        f"Monte Carlo error of a 0.95 rate +-{error:.3f}"
    )
    print("cells: one-sided 95% upper bound coverage / two-sided 90% coverage / collapsed share")
    header = "".join(f"  {name:>20}" for name in METHODS)
    for model, (draw, truth) in models(args.seed).items():
        print(f"\n{model} (true mean {truth:+.4f})")
        print(f"{'n':>5}{header}")
        for n in SIZES:
            rng = np.random.default_rng([args.seed, n])
            upper = dict.fromkeys(METHODS, 0)
            both = dict.fromkeys(METHODS, 0)
            flat = dict.fromkeys(METHODS, 0)
            for trial in range(args.trials):
                d = draw(rng, n)
                for name, method in METHODS.items():
                    if np.all(d == d[0]):
                        low = high = float(d[0])
                    else:
                        low, high = method(d, trial, args.resamples)
                    upper[name] += high >= truth - 1e-12
                    both[name] += low - 1e-12 <= truth <= high + 1e-12
                    flat[name] += low == high
            cells = "".join(
                f"  {upper[m] / args.trials:6.3f}/{both[m] / args.trials:5.3f}/"
                f"{flat[m] / args.trials:5.3f}"
                for m in METHODS
            )
            print(f"{n:>5}{cells}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
