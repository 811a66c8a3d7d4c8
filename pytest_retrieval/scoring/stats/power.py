"""How small a drop a golden set can detect.

* :func:`minimum_detectable_drop` says how small a drop the golden set can detect at a given
  significance level and power (normal approximation, from a spread of the deltas);
  :func:`conservative_delta_sd` estimates that spread when only one run exists.
* :func:`detectable_drop` says it for one comparison, from its own deltas: the power of the
  sign-flip test (:mod:`.signflip`) if the drop fell on the queries that changed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .conventions import (
    RELATIVE_TOLERANCE,
    Alternative,
    FloatArray,
    as_values,
    check_alternative,
    check_probability,
)
from .signflip import EXACT_CUTOFF


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
    check_probability(alpha, "alpha")
    check_probability(power, "power")
    check_alternative(alternative)
    if isinstance(deltas_or_sd, int | float):
        sd = float(deltas_or_sd)
        if not math.isfinite(sd) or sd < 0:
            raise ValueError(f"sd must be a finite number >= 0, got {deltas_or_sd!r}")
        if n is None:
            raise ValueError("n (the number of queries) is required when an sd is given")
    else:
        deltas = as_values(deltas_or_sd, "deltas")
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
    data = as_values(values, "values")
    if data.size < 2:
        raise ValueError(f"estimating a spread needs at least 2 values, got {data.size}")
    return float(np.std(data, ddof=1)) * math.sqrt(2.0)


@dataclass(frozen=True, slots=True)
class DetectableDrop:
    """The smallest drop of the mean this comparison could detect, or None with the reason."""

    drop: float | None
    reason: str | None
    n: int
    n_changed: int
    alpha: float
    power: float


def detectable_drop(
    deltas: Sequence[float] | FloatArray,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> DetectableDrop:
    """Smallest mean drop detectable with ``power`` if it fell on the queries that changed.

    Model: the m queries whose delta is non-zero move by a common extra shift ``-x`` on top of
    their observed spread ``s`` (sample sd of the non-zero deltas, ddof=1); the other queries do
    not move, as in the comparison seen. The sign-flip test over the m changed deltas rejects
    when ``sum d <= -z * sqrt(sum d**2)`` (its flip spread); with ``sum d ~ N(-m x, m s**2)`` and
    ``sum d**2 ~ m (s**2 + x**2)`` the power is ``Phi((sqrt(m) x - z sqrt(s**2 + x**2)) / s)``,
    solved for x (bisection), ``z`` the normal quantile of ``1 - alpha``. For m <= 20, where the
    exact test is discrete and that approximation is optimistic, the power is instead simulated:
    400 seeded draws of m normal deltas ``-x + s e``, each judged by the sign-flip test itself
    (all ``2**m`` patterns for m <= 10, 1,023 fixed random ones above). The drop of the mean
    over all n queries is ``x * m / n``: sparse changes need a large shift of the few changed
    queries to move the mean at all.

    Returns ``drop=None`` with a reason when no drop is detectable: fewer than 2 changed queries,
    ``2**-m > alpha`` (the exact test can never reach alpha), or no shift reaches the power.
    When every changed query moved by the same amount (s = 0) any uniform shift is detectable
    and ``drop`` is 0.
    """
    data = as_values(deltas, "deltas")
    check_probability(alpha, "alpha")
    check_probability(power, "power")
    n = int(data.size)
    changed = data[data != 0.0]
    m = int(changed.size)

    def none(reason: str) -> DetectableDrop:
        return DetectableDrop(None, reason, n, m, alpha, power)

    needed = math.ceil(math.log2(1.0 / alpha))
    if m < 2 or 2.0**-m > alpha:
        return none(
            f"only {m} of {n} queries changed; the sign-flip test needs at least {needed} "
            f"changed queries to ever reach alpha {alpha:g}"
        )
    # Every changed query moved by the same amount: compared as values, since the sd of m equal
    # floats is rounding noise (6e-17 for six 0.333333), which the search below would turn
    # into a "smallest detectable drop" of 1e-16 instead of this case's 0.
    if bool(np.all(changed == changed[0])):
        return DetectableDrop(0.0, None, n, m, alpha, power)
    s = float(np.std(changed, ddof=1))
    if m <= EXACT_CUTOFF:
        excess = _simulated_power(m, s, alpha, power)
    else:
        normal = NormalDist()
        z = normal.inv_cdf(1.0 - alpha)
        target = normal.inv_cdf(power)
        root = math.sqrt(m)

        def excess(x: float) -> float:
            return (root * x - z * math.sqrt(s * s + x * x)) / s - target

    high = s
    for _ in range(60):
        if excess(high) >= 0.0:
            break
        high *= 2.0
    else:
        return none(f"no shift of the {m} changed queries reaches power {power:g}")
    low = 0.0
    for _ in range(50):
        middle = (low + high) / 2.0
        if excess(middle) < 0.0:
            low = middle
        else:
            high = middle
    return DetectableDrop(high * m / n, None, n, m, alpha, power)


# --- internals -----------------------------------------------------------------------------------


def _simulated_power(m: int, s: float, alpha: float, power: float) -> Callable[[float], float]:
    """power(x) - power of the sign-flip test on m deltas ~ N(-x, s**2), common random numbers."""
    rng = np.random.default_rng(np.random.SeedSequence(0, spawn_key=(_POWER_STREAM,)))
    noise = rng.standard_normal((m, 400))
    if m <= 10:
        bits = (np.arange(2**m)[:, None] >> np.arange(m)) & 1
        extra = 0
    else:
        bits = rng.integers(0, 2, size=(1023, m))
        extra = 1
    signs = 1.0 - 2.0 * bits  # row of zeros in bits: the observed pattern
    total = signs.shape[0] + extra

    def excess(x: float) -> float:
        deltas = -x + s * noise
        observed = deltas.sum(axis=0)
        tolerance = RELATIVE_TOLERANCE * np.abs(deltas).sum(axis=0)
        # |d| under every pattern: flipping signs of |d| is what the test does.
        sums = signs @ np.abs(deltas)
        counts = np.count_nonzero(sums <= observed + tolerance, axis=0) + extra
        return float(np.mean(counts / total <= alpha)) - power

    return excess


_POWER_STREAM = 3
