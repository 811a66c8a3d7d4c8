"""Percentile bootstrap confidence intervals of a mean of per-query values.

:func:`bootstrap_ci` gives the interval of every mean the plugin reports; the paired comparison
(:mod:`.signflip`) reports the one of the mean delta with the same function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .conventions import (
    CHUNK_ELEMENTS,
    FloatArray,
    as_values,
    check_confidence,
    check_resamples,
    check_seed,
)


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
    data = as_values(values, "values")
    check_confidence(confidence)
    check_resamples(resamples)
    check_seed(seed)
    return resample_ci(data, confidence=confidence, resamples=resamples, seed=seed)


# --- internals -----------------------------------------------------------------------------------


def resample_ci(
    data: FloatArray, *, confidence: float, resamples: int, seed: int
) -> ConfidenceInterval:
    """:func:`bootstrap_ci` of values and options already checked (the paired delta interval
    checks its own): the method and degenerate cases are that function's."""
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
