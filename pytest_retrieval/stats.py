"""Statistics for regression gates that do not flap.

A raw delta between two runs over a golden set of a few dozen queries moves by several points from
noise alone, so baseline comparisons are judged with statistics rather than by eye:

* :func:`bootstrap_ci` gives a percentile bootstrap confidence interval for a mean of per-query
  values (every mean the plugin reports).
* :func:`paired_comparison` compares per-query values of a current run against a baseline: the
  per-query deltas (current - baseline), a paired randomization (sign-flip) test, and a bootstrap
  confidence interval of the mean delta.
* :func:`minimum_detectable_drop` says how small a drop the golden set can detect at a given
  significance level and power; :func:`conservative_delta_sd` estimates the spread it needs when
  only one run exists.

Conventions shared by every function here:

* Inputs are per-query values that are defined (finite floats). NaN, None and infinities are
  rejected with :class:`ValueError`, as are empty inputs and paired inputs of unequal length.
* Randomness comes only from :func:`numpy.random.default_rng` seeded with ``seed``: the same inputs
  and seed give bit-identical results, so a rerun prints the same numbers.
* Resampling is done in chunks of at most :data:`CHUNK_ELEMENTS` matrix cells, so 7,000 queries x
  10,000 resamples never needs the whole 70-million-cell matrix in memory.

This module imports numpy at its top; nothing else in the package imports it at import time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

#: Direction of the alternative hypothesis, on the deltas ``current - baseline``: ``"less"`` means
#: the current run is worse (mean delta < 0), ``"greater"`` that it is better, ``"two-sided"``
#: that it differs either way.
Alternative: TypeAlias = Literal["less", "greater", "two-sided"]

#: Largest number of non-zero deltas for which the sign-flip test enumerates all ``2**m`` sign
#: patterns exactly. ``2**20`` sums take 8 MB and a few milliseconds; above it, Monte Carlo.
EXACT_CUTOFF = 20

#: Upper bound for the ``exact_cutoff`` argument: ``2**22`` float64 sums are 32 MB, and the
#: enumeration briefly holds twice that.
MAX_EXACT_CUTOFF = 22

#: Cells (rows x queries) of one resampling chunk: 2**21 cells keep a chunk's index matrix and
#: gathered values at 16 MB each, whatever the number of queries.
CHUNK_ELEMENTS = 2**21

# Two sums of the permutation distribution that differ by less than this fraction of the largest
# possible |sum| are the same value computed in a different order: float rounding must not turn a
# tie (which counts as "as extreme") into a strict inequality.
_RELATIVE_TOLERANCE = 1e-9

# The sign-flip test draws from its own child stream of ``seed``, so the interval of the mean
# delta in a comparison is exactly ``bootstrap_ci(deltas, seed=seed)``.
_SIGN_FLIP_STREAM = 1

FloatArray: TypeAlias = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A percentile bootstrap confidence interval of a mean.

    ``low <= mean <= high`` always holds. ``n`` is the number of values the mean is over and
    ``resamples`` the number of bootstrap resamples drawn (0 when the interval collapsed without
    resampling because all values were equal).
    """

    mean: float
    low: float
    high: float
    confidence: float
    n: int
    resamples: int

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low


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


def bootstrap_ci(
    values: Sequence[float] | FloatArray,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> ConfidenceInterval:
    """Percentile bootstrap confidence interval of the mean of ``values``.

    Method: draw ``resamples`` samples of size n with replacement from ``values``, take each
    sample's mean, and report the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
    of those means (numpy's default linear interpolation between order statistics). The interval
    is widened, if float rounding ever requires it, so that it contains the sample mean.

    Degenerate cases: no values raises :class:`ValueError` (a mean of nothing has no interval);
    one value, or all values equal, gives the interval collapsed onto that value without
    resampling (``resamples`` is then 0 in the result).

    Deterministic: the same values, ``confidence``, ``resamples`` and ``seed`` give a bit-identical
    result. Memory is bounded by resampling in chunks of :data:`CHUNK_ELEMENTS` cells.
    """
    data = _as_values(values, "values")
    _check_confidence(confidence)
    _check_resamples(resamples)
    _check_seed(seed)
    return _bootstrap_ci(data, confidence=confidence, resamples=resamples, seed=seed)


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
    null with probability at most ``alpha``. ``ci`` is :func:`bootstrap_ci` of the deltas with the
    same ``confidence``, ``resamples`` and ``seed`` (so it equals ``bootstrap_ci(deltas, ...)``);
    the sign-flip draws use an independent child stream of ``seed``.

    Raises :class:`ValueError` when the inputs are empty, of different lengths (both lengths are
    named), or contain NaN/None/infinite values, and for out-of-range options.
    """
    base = _as_values(baseline, "baseline")
    curr = _as_values(current, "current")
    if base.shape != curr.shape:
        raise ValueError(
            f"paired comparison needs one value per query in both runs, but baseline has "
            f"{base.size} values and current has {curr.size}"
        )
    _check_probability(alpha, "alpha")
    _check_alternative(alternative)
    _check_resamples(resamples)
    _check_seed(seed)
    _check_confidence(confidence)
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
        p_value = _monte_carlo_sign_flip_p_value(nonzero, alternative, resamples, rng)
        method = "monte-carlo"
        drawn = resamples

    ci = _bootstrap_ci(deltas, confidence=confidence, resamples=resamples, seed=seed)
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


def minimum_detectable_drop(
    deltas_or_sd: Sequence[float] | FloatArray | float,
    n: int | None = None,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: Alternative = "less",
) -> float:
    """Smallest true mean drop (a positive number, in metric units) detectable with ``power``.

    Formula (normal approximation to the paired test of the mean delta)::

        (z_{1 - alpha} + z_{power}) * sd / sqrt(n)

    with ``z_{1 - alpha / 2}`` instead of ``z_{1 - alpha}`` for ``alternative="two-sided"``;
    ``"less"`` and ``"greater"`` give the same magnitude. ``z_q`` is the standard normal
    quantile. ``sd`` is the standard deviation of the per-query paired deltas:

    * given a sequence of deltas, ``sd`` is their sample standard deviation (``ddof=1``) and
      ``n`` defaults to their count (at least 2 deltas are needed);
    * given a number, it is taken as ``sd`` and ``n`` is required. With a single run and no
      baseline yet, pass :func:`conservative_delta_sd` of that run's per-query values.

    Assumption: the mean delta is approximately normal (n not tiny) and the spread of the deltas
    under the alternative is the one given. The result is floored at 0.

    The sign-flip test cannot reach ``alpha`` at all with too few queries: its smallest possible
    p-value is ``2**-n`` (one-sided) or ``2**(1 - n)`` (two-sided). When that exceeds ``alpha``,
    no drop is detectable and the result is ``math.inf``.
    """
    _check_probability(alpha, "alpha")
    _check_probability(power, "power")
    _check_alternative(alternative)
    if isinstance(deltas_or_sd, int | float):
        sd = float(deltas_or_sd)
        if not math.isfinite(sd) or sd < 0:
            raise ValueError(f"sd must be a finite number >= 0, got {deltas_or_sd!r}")
        if n is None:
            raise ValueError("n (the number of queries) is required when an sd is given")
    else:
        deltas = _as_values(deltas_or_sd, "deltas")
        if deltas.size < 2:
            raise ValueError(
                f"estimating the spread of the deltas needs at least 2 of them, got {deltas.size}"
            )
        sd = float(np.std(deltas, ddof=1))
        if n is None:
            n = int(deltas.size)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")

    smallest_p = 2.0 ** (-n) if alternative != "two-sided" else 2.0 ** (1 - n)
    if smallest_p > alpha:
        return math.inf
    tail = alpha / 2 if alternative == "two-sided" else alpha
    normal = NormalDist()
    z_sum = normal.inv_cdf(1.0 - tail) + normal.inv_cdf(power)
    return max(0.0, z_sum * sd / math.sqrt(n))


def conservative_delta_sd(values: Sequence[float] | FloatArray) -> float:
    """Conservative standard deviation of paired deltas, estimated from a single run.

    With one run there are no deltas, only per-query values. If a future run's score on a query
    were independent of this run's and had the same spread ``s`` (sample standard deviation of
    ``values``, ``ddof=1``), the deltas would have standard deviation ``s * sqrt(2)``. Real runs
    of the same system on the same queries are positively correlated (hard queries stay hard),
    which only shrinks the spread of the deltas (``Var = 2 s**2 (1 - rho)``), so this is an upper
    estimate and the :func:`minimum_detectable_drop` it feeds errs towards "cannot detect".

    Needs at least 2 values.
    """
    data = _as_values(values, "values")
    if data.size < 2:
        raise ValueError(f"estimating a spread needs at least 2 values, got {data.size}")
    return float(np.std(data, ddof=1)) * math.sqrt(2.0)


# --- internals -----------------------------------------------------------------------------------


def _bootstrap_ci(
    data: FloatArray, *, confidence: float, resamples: int, seed: int
) -> ConfidenceInterval:
    n = int(data.size)
    mean = float(np.mean(data))
    if np.all(data == data[0]):
        # Every resample would have this mean; returning it directly avoids rounding noise in
        # the last digit making a constant metric look uncertain.
        value = float(data[0])
        return ConfidenceInterval(value, value, value, confidence, n, 0)

    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    rows = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        # intp indices gather without an internal cast/copy of the index matrix.
        indices = rng.integers(0, n, size=(stop - start, n), dtype=np.intp)
        np.mean(data[indices], axis=1, out=means[start:stop])
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return ConfidenceInterval(
        mean=mean,
        low=min(float(low), mean),
        high=max(float(high), mean),
        confidence=confidence,
        n=n,
        resamples=resamples,
    )


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


def _monte_carlo_sign_flip_p_value(
    nonzero: FloatArray, alternative: Alternative, resamples: int, rng: np.random.Generator
) -> float:
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
    tolerance = _RELATIVE_TOLERANCE * float(np.sum(np.abs(nonzero)))
    if alternative == "less":
        hits = sums <= observed + tolerance
    elif alternative == "greater":
        hits = sums >= observed - tolerance
    else:
        hits = np.abs(sums) >= abs(observed) - tolerance
    return int(np.count_nonzero(hits))


def _as_values(values: Sequence[float] | FloatArray, name: str) -> FloatArray:
    try:
        # None becomes NaN under a float dtype and is reported with the NaNs below.
        data = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a sequence of numbers: {error}") from None
    if data.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one value per query), got {data.shape}")
    if data.size == 0:
        raise ValueError(f"{name} is empty: statistics need at least one per-query value")
    bad = ~np.isfinite(data)
    if bad.any():
        positions = np.flatnonzero(bad)
        shown = ", ".join(str(int(p)) for p in positions[:10])
        more = f" and {positions.size - 10} more" if positions.size > 10 else ""
        raise ValueError(
            f"{name} contains NaN, None or infinite values at positions {shown}{more}; "
            f"pass only defined per-query values"
        )
    return data


def _check_probability(value: float, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")


def _check_confidence(confidence: float) -> None:
    _check_probability(confidence, "confidence")


def _check_resamples(resamples: int) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def _check_alternative(alternative: str) -> None:
    if alternative not in get_args(Alternative):
        choices = ", ".join(repr(a) for a in get_args(Alternative))
        raise ValueError(f"alternative must be one of {choices}, got {alternative!r}")
