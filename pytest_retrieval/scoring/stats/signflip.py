"""The paired randomization (sign-flip) test of per-query deltas, and its inversion.

* :func:`paired_comparison` compares per-query values of a current run against a baseline: the
  per-query deltas (current - baseline), the sign-flip test, and a bootstrap confidence interval
  of the mean delta.
* :func:`delta_interval` inverts the one-sided test into bounds on the mean delta that agree with
  its verdict; :func:`budget_test` is the shifted test (the drop is larger than a budget), from
  the same sign patterns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .bootstrap import ConfidenceInterval, resample_ci
from .conventions import (
    CHUNK_ELEMENTS,
    RELATIVE_TOLERANCE,
    Alternative,
    FloatArray,
    as_values,
    check_alternative,
    check_confidence,
    check_probability,
    check_resamples,
    check_seed,
)

#: Largest number of non-zero deltas for which the sign-flip test enumerates all ``2**m`` sign
#: patterns exactly. ``2**20`` sums take 8 MB and a few milliseconds; above it, Monte Carlo.
EXACT_CUTOFF = 20

#: Upper bound for the ``exact_cutoff`` argument: ``2**22`` float64 sums are 32 MB, and the
#: enumeration briefly holds twice that.
MAX_EXACT_CUTOFF = 22

# The sign-flip test draws from its own child stream of ``seed``, so the interval of the mean
# delta in a comparison is exactly ``bootstrap_ci(deltas, seed=seed)``.
_SIGN_FLIP_STREAM = 1


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """A paired comparison of a current run against a baseline over the same queries.

    ``deltas`` are the per-query differences ``current - baseline`` in input order. ``p_value`` is
    the sign-flip test's p-value for ``alternative``; ``significant`` is ``p_value <= alpha``.
    ``method`` says whether the p-value was enumerated exactly or estimated by Monte Carlo,
    ``n_nonzero`` how many deltas were non-zero (only those take part in the test) and
    ``resamples`` how many random sign patterns were drawn (0 for the exact test). ``ci`` is the
    percentile bootstrap interval of the mean delta.
    """

    n: int
    deltas: tuple[float, ...]
    mean_baseline: float
    mean_current: float
    mean_delta: float
    p_value: float
    alternative: Alternative
    alpha: float
    significant: bool
    method: Literal["exact", "monte-carlo"]
    n_nonzero: int
    resamples: int
    ci: ConfidenceInterval


def paired_comparison(
    baseline: Sequence[float] | FloatArray,
    current: Sequence[float] | FloatArray,
    *,
    alpha: float = 0.05,
    alternative: Alternative = "less",
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    exact_cutoff: int = EXACT_CUTOFF,
) -> PairedComparison:
    """Compare per-query values of ``current`` against ``baseline`` (same queries, same order).

    The deltas are ``current - baseline`` per query. Their mean is tested with a paired
    randomization (sign-flip) test: under the null hypothesis each delta is as likely to have had
    the opposite sign, so the observed mean is compared with the means of the deltas under every
    assignment of signs. A zero delta is the same under both signs and contributes nothing, so
    the test runs over the m non-zero deltas only.

    * ``alternative="less"`` (default; H1: current is worse, mean delta < 0) counts sign patterns
      whose mean is <= the observed mean; ``"greater"`` counts those >= it; ``"two-sided"``
      those whose absolute mean is >= the observed absolute mean. Means equal up to a relative
      tolerance of 1e-9 (of the largest possible absolute sum) count as ties, and ties count as
      "as extreme".
    * Exact when ``m <= exact_cutoff`` (default :data:`EXACT_CUTOFF` = 20): all ``2**m``
      patterns are enumerated, the observed one included, and the p-value is the fraction
      counted. With no non-zero delta the p-value is 1.
    * Monte Carlo otherwise: ``resamples`` patterns of independent fair signs are drawn and the
      p-value is ``(count + 1) / (resamples + 1)``, counting the observed pattern once, so it is
      never 0 and the test stays valid.

    ``significant`` is ``p_value <= alpha``, the rule under which a valid p-value rejects a true
    null with probability at most ``alpha``. ``ci`` is :func:`~.bootstrap.bootstrap_ci` of the
    deltas with the same ``confidence``, ``resamples`` and ``seed`` (so it equals
    ``bootstrap_ci(deltas, ...)``); the sign-flip draws use an independent child stream of
    ``seed``.

    Raises :class:`ValueError` when the inputs are empty, of different lengths (both lengths are
    named), or contain NaN/None/infinite values, and for out-of-range options.
    """
    base = as_values(baseline, "baseline")
    curr = as_values(current, "current")
    if base.shape != curr.shape:
        raise ValueError(
            f"paired comparison needs one value per query in both runs, but baseline has "
            f"{base.size} values and current has {curr.size}"
        )
    check_probability(alpha, "alpha")
    check_alternative(alternative)
    check_resamples(resamples)
    check_seed(seed)
    check_confidence(confidence)
    if not (isinstance(exact_cutoff, int) and 0 <= exact_cutoff <= MAX_EXACT_CUTOFF):
        raise ValueError(
            f"exact_cutoff must be an integer from 0 to {MAX_EXACT_CUTOFF}, got {exact_cutoff!r}"
        )

    deltas = curr - base
    n = int(deltas.size)
    nonzero = deltas[deltas != 0.0]
    m = int(nonzero.size)
    if m <= exact_cutoff:
        p_value = _exact_sign_flip_p_value(nonzero, alternative)
        method: Literal["exact", "monte-carlo"] = "exact"
        drawn = 0
    else:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_SIGN_FLIP_STREAM,)))
        p_value = monte_carlo_sign_flip_p_value(nonzero, alternative, resamples, rng)
        method = "monte-carlo"
        drawn = resamples

    ci = resample_ci(deltas, confidence=confidence, resamples=resamples, seed=seed)
    return PairedComparison(
        n=n,
        deltas=tuple(deltas.tolist()),
        mean_baseline=float(np.mean(base)),
        mean_current=float(np.mean(curr)),
        mean_delta=ci.mean,
        p_value=p_value,
        alternative=alternative,
        alpha=alpha,
        significant=p_value <= alpha,
        method=method,
        n_nonzero=m,
        resamples=drawn,
        ci=ci,
    )


@dataclass(frozen=True, slots=True)
class DeltaInterval:
    """Bounds on the mean delta that match the one-sided sign-flip test at ``alpha``.

    ``high`` is the one-sided ``1 - alpha`` upper bound of the mean delta: the largest shift
    ``theta`` that the one-sided (drop) sign-flip test of H0: mean delta = theta does not reject
    at ``alpha``. So ``high < 0`` exactly when the drop test rejects (``p_value <= alpha``, with
    ``p_value`` computed from the same sign patterns), and ``high < -budget`` exactly when the
    budget test (:func:`budget_test`) rejects. ``[low, high]`` is the two-sided ``1 - 2 alpha``
    interval (the same inversion from the other side). Either may be infinite when the test can
    never reject (too few queries changed). ``collapsed`` is true when ``low == high``; ``reason``
    says why the interval is degenerate or cannot exclude 0, else it is None.
    """

    mean: float
    low: float
    high: float
    alpha: float
    n: int
    n_nonzero: int
    p_value: float
    method: Literal["exact", "monte-carlo"]
    resamples: int
    collapsed: bool
    reason: str | None

    @property
    def upper_level(self) -> float:
        """Coverage of ``high`` alone: ``1 - alpha``."""
        return 1.0 - self.alpha

    @property
    def two_sided_level(self) -> float:
        """Coverage of ``[low, high]``: ``1 - 2 alpha``."""
        return 1.0 - 2.0 * self.alpha

    def describe(self) -> str:
        """``one-sided 95% upper bound -0.0040 (90% interval [-0.0310, -0.0040])``."""
        text = (
            f"one-sided {self.upper_level:.0%} upper bound {self.high:+.4f} "
            f"({self.two_sided_level:.0%} interval [{self.low:+.4f}, {self.high:+.4f}])"
        )
        return text + (f"; {self.reason}" if self.reason else "")


def delta_interval(
    deltas: Sequence[float] | FloatArray,
    *,
    alpha: float = 0.05,
    resamples: int = 10_000,
    seed: int = 0,
    exact_cells: int = 2**21,
) -> DeltaInterval:
    """Invert the one-sided sign-flip test into bounds on the mean delta (see DeltaInterval).

    Method. Testing H0: mean = theta flips the signs of ``d_i - theta``. A pattern that flips
    the set F of queries is at least as extreme (drop direction) as the observed one exactly when
    ``sum over F of (d_i - theta) >= 0``, i.e. ``theta <= mean of d over F``. So the test's
    p-value is the share of patterns whose flipped-set mean is ``>= theta`` (the empty set
    always counts): it falls as theta rises, and the bound is a quantile of the flipped-set
    means. No bisection, no search: one set of sign patterns gives the p-value at 0, the bound
    and the budget test at once, consistently.

    The patterns are enumerated exactly when the m non-zero deltas allow it (zero deltas only
    enter through how many of them are flipped, a binomial count, so ``2**m * (n - m + 1)``
    weighted points; exact when that is at most ``exact_cells``): then ``p_value`` equals
    :func:`paired_comparison`'s exact p-value. Otherwise ``resamples`` patterns are drawn from
    an own child stream of ``seed`` with p-values ``(count + 1) / (resamples + 1)``.

    Why this method: ``benchmarks/bench_interval_coverage.py`` measures coverage at n = 10, 30,
    100 (symmetric, skewed, graded, sparse and Bernoulli deltas). The one-sided upper bound, the
    end that matches the drop test, covers at or near 0.95 for the inversion and the t interval
    (0.93-1.00 except zero-mean skewed deltas at n = 10, 0.86 for every method); the percentile
    bootstrap and BCa under-cover at n = 10 (0.84-0.94) and BCa badly on sparse deltas. The
    inversion alone agrees with the verdict by construction, so it is the one shown. The lower
    end under-covers on sparse changes for every method (a rare large drop is often absent from
    the sample): show the upper bound first, and ``reason`` when few queries changed.
    """
    data = as_values(deltas, "deltas")
    check_probability(alpha, "alpha")
    if alpha >= 0.5:
        raise ValueError(
            f"alpha must be below 0.5 for a two-sided 1 - 2 alpha interval, got {alpha!r}"
        )
    check_resamples(resamples)
    check_seed(seed)
    means, weights, identity, method, drawn = _flipped_means(data, resamples, seed, exact_cells)
    n = int(data.size)
    m = int(np.count_nonzero(data))
    high = _bound(means, weights, identity, alpha, upper=True)
    low = _bound(means, weights, identity, alpha, upper=False)
    p_value = _p_at(means, weights, identity, 0.0, float(np.max(np.abs(data))))
    mean = float(np.mean(data))
    reason = None
    if m == 0:
        reason = "no query changed: the interval collapses onto 0"
    elif 2.0**-m > alpha:
        reason = (
            f"only {m} of {n} queries changed: the sign-flip test needs at least "
            f"{math.ceil(math.log2(1.0 / alpha))} changed queries to reach alpha {alpha:g}, so "
            "the bound cannot exclude 0"
        )
    return DeltaInterval(
        mean=mean,
        low=low,
        high=high,
        alpha=alpha,
        n=n,
        n_nonzero=m,
        p_value=p_value,
        method=method,
        resamples=drawn,
        collapsed=low == high,
        reason=reason,
    )


def budget_test(
    deltas: Sequence[float] | FloatArray,
    budget: float,
    *,
    alpha: float = 0.05,
    resamples: int = 10_000,
    seed: int = 0,
    exact_cells: int = 2**21,
) -> tuple[float, bool]:
    """(p-value, significant) of the shifted test H0: mean delta >= -budget, H1: it is lower.

    For teams that want "we are confident it got worse by more than the budget": the sign-flip
    test of the deltas shifted by ``+budget``, from the same patterns as :func:`delta_interval`
    (so it rejects exactly when ``delta_interval(...).high < -budget``). With ``budget > 0``
    every query takes part, zeros included (a zero delta is ``budget`` above ``-budget``). The
    test assumes the deltas are symmetric about their mean under H0, which holds asymptotically
    and is checked in ``benchmarks/bench_gate_calibration.py``; with ``budget = 0`` it is the
    exact plain test.
    """
    data = as_values(deltas, "deltas")
    if (
        isinstance(budget, bool)
        or not isinstance(budget, int | float)
        or not (math.isfinite(budget) and budget >= 0)
    ):
        raise ValueError(f"budget must be a finite number >= 0, got {budget!r}")
    check_probability(alpha, "alpha")
    check_resamples(resamples)
    check_seed(seed)
    means, weights, identity, _method, _drawn = _flipped_means(data, resamples, seed, exact_cells)
    scale = float(np.max(np.abs(data))) + budget
    p_value = _p_at(means, weights, identity, -float(budget), scale)
    return p_value, p_value <= alpha


# --- internals -----------------------------------------------------------------------------------


def _exact_sign_flip_p_value(nonzero: FloatArray, alternative: Alternative) -> float:
    if nonzero.size == 0:
        return 1.0
    magnitudes = np.abs(nonzero)
    # Doubling: after k steps ``sums`` holds the signed sums of the first k magnitudes under all
    # 2**k sign patterns, so all 2**m sums cost about 2**(m+1) additions in total.
    sums = np.zeros(1, dtype=np.float64)
    for magnitude in magnitudes:
        sums = np.concatenate((sums + magnitude, sums - magnitude))
    count = _count_as_extreme(sums, nonzero, alternative)
    return count / sums.size


def monte_carlo_sign_flip_p_value(
    nonzero: FloatArray, alternative: Alternative, resamples: int, rng: np.random.Generator
) -> float:
    """The sign-flip p-value of the non-zero deltas estimated from ``resamples`` random sign
    vectors (above the exact cutoff; public for the calibration benchmark)."""
    m = int(nonzero.size)
    magnitudes = np.abs(nonzero)
    total = float(np.sum(magnitudes))
    rows = max(1, CHUNK_ELEMENTS // m)
    width = (m + 7) // 8
    count = 0
    for start in range(0, resamples, rows):
        chunk = min(rows, resamples - start)
        # One random byte yields eight fair signs, an eighth of the draws of one value per cell.
        raw = np.frombuffer(rng.bytes(chunk * width), dtype=np.uint8).reshape(chunk, width)
        plus = np.unpackbits(raw, axis=1, count=m).astype(np.float64)
        # sum(s_i * |d_i|) with s_i = +1 where the bit is set, -1 elsewhere.
        sums = 2.0 * (plus @ magnitudes) - total
        count += _count_as_extreme(sums, nonzero, alternative)
    return (count + 1) / (resamples + 1)


def _count_as_extreme(sums: FloatArray, nonzero: FloatArray, alternative: Alternative) -> int:
    # Sums rather than means: over the same m deltas they order the patterns identically.
    observed = float(np.sum(nonzero))
    tolerance = RELATIVE_TOLERANCE * float(np.sum(np.abs(nonzero)))
    if alternative == "less":
        hits = sums <= observed + tolerance
    elif alternative == "greater":
        hits = sums >= observed - tolerance
    else:
        hits = np.abs(sums) >= abs(observed) - tolerance
    return int(np.count_nonzero(hits))


# The interval's sign patterns use their own child stream of ``seed``.
_INTERVAL_STREAM = 2


def _flipped_means(
    data: FloatArray, resamples: int, seed: int, exact_cells: int
) -> tuple[FloatArray, FloatArray, float, Literal["exact", "monte-carlo"], int]:
    """Means of d over the flipped set F of each sign pattern (F non-empty), their weights, and
    the weight of the empty set (always as extreme as the observed pattern)."""
    n = int(data.size)
    nonzero = data[data != 0.0]
    m = int(nonzero.size)
    zeros = n - m
    if m <= MAX_EXACT_CUTOFF and 2**m * (zeros + 1) <= exact_cells:
        # Sums over the subsets G of the non-zero deltas (doubling), then j flipped zeros.
        sums = np.zeros(1, dtype=np.float64)
        sizes = np.zeros(1, dtype=np.int64)
        for value in nonzero:
            sums = np.concatenate((sums, sums + value))
            sizes = np.concatenate((sizes, sizes + 1))
        _snap(sums, nonzero)
        j = np.arange(zeros + 1)
        log_choose = np.array(
            [math.lgamma(zeros + 1) - math.lgamma(i + 1) - math.lgamma(zeros - i + 1) for i in j]
        )
        zero_weights = np.exp(log_choose - log_choose.max())
        zero_weights /= zero_weights.sum()
        total = sizes[:, None] + j[None, :]
        weights = (zero_weights[None, :] * 2.0**-m) * np.ones_like(total, dtype=np.float64)
        empty = total == 0
        means = sums[:, None] / np.where(empty, 1, total)
        identity = float(weights[empty].sum())
        keep = ~empty
        return means[keep], weights[keep], identity, "exact", 0
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_INTERVAL_STREAM,)))
    means = np.empty(resamples, dtype=np.float64)
    flipped_sizes = np.empty(resamples, dtype=np.int64)
    rows = max(1, CHUNK_ELEMENTS // n)
    width = (n + 7) // 8
    for start in range(0, resamples, rows):
        chunk = min(rows, resamples - start)
        raw = np.frombuffer(rng.bytes(chunk * width), dtype=np.uint8).reshape(chunk, width)
        flips = np.unpackbits(raw, axis=1, count=n).astype(np.float64)
        sums = flips @ data
        _snap(sums, nonzero)
        count = flips.sum(axis=1).astype(np.int64)
        flipped_sizes[start : start + chunk] = count
        means[start : start + chunk] = sums / np.maximum(count, 1)
    weight = 1.0 / (resamples + 1)
    # A drawn empty set is as extreme as the observed pattern on both sides.
    empty = flipped_sizes == 0
    identity = weight * (1 + int(np.count_nonzero(empty)))
    keep = ~empty
    return means[keep], np.full(int(keep.sum()), weight), identity, "monte-carlo", resamples


def _snap(sums: FloatArray, nonzero: FloatArray) -> None:
    # Subset sums that cancel up to float rounding are ties at 0, as in the per-check test.
    tolerance = RELATIVE_TOLERANCE * float(np.sum(np.abs(nonzero)))
    sums[np.abs(sums) <= tolerance] = 0.0


def _p_at(
    means: FloatArray, weights: FloatArray, identity: float, theta: float, scale: float
) -> float:
    """One-sided (drop) p-value of H0: mean = theta: weight of flipped-set means >= theta."""
    tolerance = RELATIVE_TOLERANCE * scale
    return min(1.0, identity + float(weights[means >= theta - tolerance].sum()))


def _bound(
    means: FloatArray, weights: FloatArray, identity: float, alpha: float, *, upper: bool
) -> float:
    """Largest theta the drop test keeps (upper) or smallest the rise test keeps (lower)."""
    if identity > alpha:
        return math.inf if upper else -math.inf
    order = np.argsort(-means if upper else means, kind="stable")
    cumulative = identity + np.cumsum(weights[order])
    # First position where the p-value exceeds alpha: up to that mean, H0 is kept. Relative
    # slack keeps float sums of equal weights (exact 1/2**m) from crossing alpha by rounding.
    position = int(np.searchsorted(cumulative, alpha * (1.0 + 1e-12), side="right"))
    if position >= cumulative.size:
        return -math.inf if upper else math.inf
    return float(means[order][position])
