"""The conventions every statistic of this package shares.

* Inputs are per-query values that are defined (finite floats): :func:`as_values` rejects NaN,
  None and infinities with :class:`ValueError`, as it does empty inputs; the ``_check_*``
  functions reject out-of-range options the same way.
* Resampling is done in chunks of at most :data:`CHUNK_ELEMENTS` matrix cells.
* Sums equal up to :data:`RELATIVE_TOLERANCE` of the largest possible ``|sum|`` are ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

#: Direction of the alternative hypothesis, on the deltas ``current - baseline``: ``"less"`` means
#: the current run is worse (mean delta < 0), ``"greater"`` that it is better, ``"two-sided"``
#: that it differs either way. The deltas are of higher-is-better values: the regression rule
#: hands a lower-is-better metric's (``stale@K``) oriented by the metric table
#: (:meth:`pytest_retrieval.scoring.metrics.Metric.oriented`), so "worse" stays ``"less"`` here.
Alternative: TypeAlias = Literal["less", "greater", "two-sided"]

#: Cells (rows x queries) of one resampling chunk: 2**21 cells keep a chunk's index matrix and
#: gathered values at 16 MB each, whatever the number of queries.
CHUNK_ELEMENTS = 2**21

# Two sums of the permutation distribution that differ by less than this fraction of the largest
# possible |sum| are the same value computed in a different order: float rounding must not turn a
# tie (which counts as "as extreme") into a strict inequality.
RELATIVE_TOLERANCE = 1e-9

FloatArray: TypeAlias = npt.NDArray[np.float64]


def as_values(values: Sequence[float] | FloatArray, name: str) -> FloatArray:
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


def check_probability(value: float, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")


def check_confidence(confidence: float) -> None:
    check_probability(confidence, "confidence")


def check_resamples(resamples: int) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")


def check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def check_alternative(alternative: str) -> None:
    if alternative not in get_args(Alternative):
        choices = ", ".join(repr(a) for a in get_args(Alternative))
        raise ValueError(f"alternative must be one of {choices}, got {alternative!r}")
