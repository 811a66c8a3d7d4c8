"""Family-wise control of the regression checks of one session.

Each regression check (metric x stage x split x slice) alone keeps its false-alarm rate at or
below alpha, but a build fails when *any* check fails, so with k checks the build's false-alarm
rate grows towards ``k * alpha``. :func:`adjust_family` turns the per-check p-values into
adjusted p-values whose rule "fail when adjusted p <= alpha" keeps the probability that the build
turns red without any true change (A/A) at or below alpha, whatever the number of checks.

Methods:

* ``"maxt"`` (default): Westfall-Young step-down maxT over *joint* sign flips. One random sign
  per query id, shared by every check, flips that query's delta in every check at once, so the
  flip distribution keeps the correlation between checks (recall@50 and NDCG@10 over the same
  queries move together). That is what keeps its power above Holm's: a family of ten nearly
  identical checks is adjusted almost like one check, not like ten.
* ``"holm"``: Holm's step-down on the per-check p-values; valid under any dependence, simpler,
  loses power as the family grows.
* ``"none"``: the per-check p-values unadjusted (each check alone at alpha).

Conventions:

* Each :class:`FamilyItem` carries per-query deltas ``current - baseline`` keyed by query id.
  Checks may cover different queries (a slice covers a subset): a query's flip is shared by every
  check that contains it, and a check ignores queries it does not contain.
* The test is one-sided in the drop direction (H1: the mean delta is below ``-shift``), the same
  test as :func:`pytest_retrieval.scoring.stats.paired_comparison` with ``alternative="less"``. With
  ``shift = 0`` a zero delta is the same under both signs and takes no part; with a budget shift
  (H0: mean delta >= -budget, see ``FamilyItem.shift``) every query of the check takes part.
* Each check's statistic is standardized by its own flip spread, ``sum(s_q d_q) /
  sqrt(sum d_q**2)``, whose flip distribution has variance 1 for every check: checks on different
  scales (recall near 1, MRR) then weigh equally in the maximum, and a check's own ordering of
  sign patterns, hence its raw p-value, is unchanged.
* Exact when at most ``exact_cutoff`` queries have a non-zero (shifted) delta in some check:
  all ``2**m`` joint sign patterns are enumerated, and then every raw p-value equals the exact
  ``paired_comparison`` p-value. Otherwise ``resamples`` random joint patterns are drawn from
  ``numpy.random.default_rng(seed)`` and p-values are ``(count + 1) / (resamples + 1)``.
* Same inputs and seed give bit-identical results. numpy is imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Method: TypeAlias = Literal["maxt", "minp", "holm", "none"]
METHODS: tuple[Method, ...] = ("maxt", "minp", "holm", "none")

#: Same tie tolerance as the per-check test: sums of one check within this fraction of its
#: largest possible |sum| are one value computed in two orders.
_RELATIVE_TOLERANCE = 1e-9
#: Exact enumeration builds the first this-many queries' patterns by doubling (2**16 rows), then
#: walks the remaining bits block by block, so memory stays at 2**16 x checks values.
_BLOCK_BITS = 16
#: Random sign patterns drawn per chunk (x queries x 1 byte/8 signs, then float64 signs).
_CHUNK_CELLS = 2**21
#: Largest exact enumeration allowed (2**22 joint patterns).
MAX_EXACT_CUTOFF = 22
#: Default: same as the per-check test (pytest_retrieval.scoring.stats.EXACT_CUTOFF).
EXACT_CUTOFF = 20


@dataclass(frozen=True, slots=True)
class FamilyItem:
    """One regression check of the family.

    ``query_ids`` and ``deltas`` are parallel: the per-query ``current - baseline`` values of the
    queries this check covers (ids unique within the check). ``shift`` >= 0 turns the check into
    the budget test H0: mean delta >= -shift (fail only when the drop is significantly larger
    than ``shift``); 0 is the plain test H0: mean delta >= 0.
    """

    name: str
    query_ids: tuple[str, ...]
    deltas: tuple[float, ...]
    shift: float = 0.0


@dataclass(frozen=True, slots=True)
class AdjustedResult:
    """The family-adjusted verdict of one check (same order as the input items).

    ``p_value`` is the adjusted p-value (equal to ``raw_p_value`` for method ``"none"``, never
    below it otherwise) and ``significant`` is ``p_value <= alpha``. ``test`` says whether the
    joint sign patterns were enumerated (``"exact"``) or drawn (``"monte-carlo"``, ``resamples``
    of them); ``n`` is the check's number of queries and ``n_nonzero`` how many of them took part
    (non-zero shifted delta). ``family_size`` is the number of checks adjusted together.
    """

    name: str
    raw_p_value: float
    p_value: float
    significant: bool
    method: Method
    test: Literal["exact", "monte-carlo"]
    n: int
    n_nonzero: int
    resamples: int
    family_size: int
    alpha: float


def describe_family(size: int, alpha: float, method: Method) -> str:
    """One line naming the family for a summary: ``7 regression checks, family-wise alpha 0.05,
    maxT`` (``each at alpha 0.05, no family-wise correction`` for ``"none"``)."""
    checks = f"{size} regression check{'s' if size != 1 else ''}"
    if method == "none":
        return f"{checks}, each at alpha {alpha:g}, no family-wise correction"
    name = {
        "maxt": "maxT (Westfall-Young, joint sign flips)",
        "minp": "minP (Westfall-Young, joint sign flips)",
        "holm": "Holm",
    }[method]
    return f"{checks}, family-wise alpha {alpha:g}, {name}"


def adjust_family(
    items: Sequence[FamilyItem],
    method: Method = "maxt",
    *,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = 10_000,
    exact_cutoff: int = EXACT_CUTOFF,
) -> list[AdjustedResult]:
    """Adjusted one-sided (drop) p-values for a family of regression checks.

    Pass only the checks that were actually compared (not the missing, incomparable or skipped
    ones): the family size is ``len(items)``. The build-level guarantee is for the rule "a check
    fails when its adjusted p-value <= alpha" (optionally AND its drop exceeds its budget, which
    can only lower the rate): under no true change in any check, the probability that at least
    one check fails is at most alpha (exactly for the exact enumeration, up to Monte Carlo
    error otherwise). See the module docstring for the statistic and the conventions.

    Raises :class:`ValueError` naming the check and the problem for empty checks, parallel
    tuples of different lengths, repeated query ids, undefined deltas, negative shifts and
    out-of-range options.
    """
    import numpy as np

    _check_options(method, alpha, seed, resamples, exact_cutoff)
    if not items:
        return []
    matrix, sizes = _delta_matrix(items)
    nonzero_rows = np.flatnonzero(np.any(matrix != 0.0, axis=1))
    matrix = matrix[nonzero_rows]
    m = int(matrix.shape[0])
    n_nonzero = [int(np.count_nonzero(matrix[:, j])) for j in range(len(items))]

    norms = np.sqrt(np.sum(matrix * matrix, axis=0))
    safe = np.where(norms > 0.0, norms, 1.0)
    # Drop direction: a larger statistic is a larger drop (sum of deltas more negative).
    observed = -np.sum(matrix, axis=0) / safe
    tolerance = _RELATIVE_TOLERANCE * np.sum(np.abs(matrix), axis=0) / safe
    k = len(items)
    exact = m <= exact_cutoff
    if exact:
        sums = _enumerate(matrix)
        extra, total, drawn = 0, float(2**m), 0
    else:
        sums = _draw(matrix, resamples, np.random.default_rng(seed))
        # The observed pattern is not among the draws: count it once, as the per-check test does.
        extra, total, drawn = 1, float(resamples + 1), resamples
    statistics = -sums / safe
    del sums
    # tails[b, j]: how many patterns have check j's statistic at least as large as pattern b's
    # (its p-value times `total`, minus `extra`); observed_tail[j] the same for the observed one.
    ranked = np.sort(statistics, axis=0)
    patterns = statistics.shape[0]
    observed_tail = np.array(
        [patterns - np.searchsorted(ranked[:, j], observed[j] - tolerance[j]) for j in range(k)]
    )
    raw_p = [min(1.0, (int(c) + extra) / total) for c in observed_tail]
    if method == "none":
        adjusted = list(raw_p)
    elif method == "holm":
        adjusted = holm(raw_p)
    elif method == "maxt":
        # Step-down sets: the checks ranked r and below by observed statistic, largest first.
        order = np.argsort(-observed, kind="stable")
        maxima = np.maximum.accumulate(statistics[:, order][:, ::-1], axis=1)[:, ::-1]
        hits = np.count_nonzero(maxima >= (observed - tolerance)[order], axis=0)
        adjusted = _monotone(order.tolist(), [(int(h) + extra) / total for h in hits], raw_p)
    else:
        tails = np.empty(statistics.shape, dtype=np.int64)
        for j in range(k):
            tails[:, j] = patterns - np.searchsorted(ranked[:, j], statistics[:, j] - tolerance[j])
        del ranked
        # Smallest p-value first; a tail count orders checks like their p-values.
        order = np.lexsort((np.arange(k), observed_tail))
        minima = np.minimum.accumulate(tails[:, order][:, ::-1], axis=1)[:, ::-1]
        hits = np.count_nonzero(minima <= observed_tail[order], axis=0)
        adjusted = _monotone(order.tolist(), [(int(h) + extra) / total for h in hits], raw_p)
    return [
        AdjustedResult(
            name=item.name,
            raw_p_value=raw_p[j],
            p_value=adjusted[j],
            significant=adjusted[j] <= alpha,
            method=method,
            test="exact" if exact else "monte-carlo",
            n=sizes[j],
            n_nonzero=n_nonzero[j],
            resamples=drawn,
            family_size=len(items),
            alpha=alpha,
        )
        for j, item in enumerate(items)
    ]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in input order.

    With the raw p-values sorted ascending ``p_(1) <= ... <= p_(k)``, ``adj_(i) = max over j <= i
    of min(1, (k - j + 1) * p_(j))``. Ties keep input order (it does not change the values).
    """
    k = len(p_values)
    order = sorted(range(k), key=lambda i: (p_values[i], i))
    adjusted = [0.0] * k
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# --- internals -----------------------------------------------------------------------------------


def _check_options(method: str, alpha: float, seed: int, resamples: int, exact_cutoff: int) -> None:
    if method not in METHODS:
        raise ValueError(f"multiplicity method must be one of {', '.join(METHODS)}, got {method!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if (
        isinstance(exact_cutoff, bool)
        or not isinstance(exact_cutoff, int)
        or not 0 <= exact_cutoff <= MAX_EXACT_CUTOFF
    ):
        raise ValueError(
            f"exact_cutoff must be an integer from 0 to {MAX_EXACT_CUTOFF}, got {exact_cutoff!r}"
        )


def _delta_matrix(items: Sequence[FamilyItem]) -> tuple[npt.NDArray[np.float64], list[int]]:
    """(queries x checks) shifted deltas, 0 where a check does not cover a query; check sizes."""
    import numpy as np

    index: dict[str, int] = {}
    for item in items:
        for qid in item.query_ids:
            index.setdefault(qid, len(index))
    matrix = np.zeros((len(index), len(items)), dtype=np.float64)
    sizes = []
    for j, item in enumerate(items):
        where = f"regression check {item.name!r}"
        if len(item.query_ids) != len(item.deltas):
            raise ValueError(
                f"{where}: {len(item.query_ids)} query ids but {len(item.deltas)} deltas; "
                "pass one delta per query id"
            )
        if not item.query_ids:
            raise ValueError(f"{where} has no query; leave checks with nothing to compare out")
        if len(set(item.query_ids)) != len(item.query_ids):
            counts: dict[str, int] = {}
            for q in item.query_ids:
                counts[q] = counts.get(q, 0) + 1
            repeated = sorted(q for q, c in counts.items() if c > 1)
            raise ValueError(f"{where}: query ids repeated: {', '.join(repeated[:5])}")
        shift = item.shift
        if not (isinstance(shift, int | float) and math.isfinite(shift) and shift >= 0):
            raise ValueError(f"{where}: shift must be a finite number >= 0, got {shift!r}")
        values = np.asarray(item.deltas, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            shown = ", ".join(item.query_ids[int(i)] for i in bad[:5])
            raise ValueError(f"{where}: NaN or infinite deltas for queries {shown}")
        rows = [index[q] for q in item.query_ids]
        matrix[rows, j] = values + float(shift)
        sizes.append(len(item.query_ids))
    return matrix, sizes


def _monotone(order: Sequence[int], step: Sequence[float], raw: Sequence[float]) -> list[float]:
    """Step-down p-values in input order: never below the check ranked above, nor the raw one."""
    adjusted = [0.0] * len(raw)
    running = 0.0
    for rank, j in enumerate(order):
        running = max(running, min(1.0, step[rank]), raw[int(j)])
        adjusted[int(j)] = running
    return adjusted


def _enumerate(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """(2**m x checks) signed sums of every joint sign pattern of the m rows."""
    import numpy as np

    m, k = matrix.shape
    head = min(m, _BLOCK_BITS)
    # Doubling, as the per-check exact test does: signed sums of the first `head` rows.
    sums = np.zeros((1, k), dtype=np.float64)
    for row in matrix[:head]:
        sums = np.concatenate((sums + row, sums - row))
    rest = matrix[head:]
    if not rest.shape[0]:
        return sums
    bits = (np.arange(2 ** (m - head))[:, None] >> np.arange(m - head)) & 1
    offsets = (1.0 - 2.0 * bits) @ rest
    return (offsets[:, None, :] + sums[None, :, :]).reshape(-1, k)


def _draw(
    matrix: npt.NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """(resamples x checks) signed sums of random joint sign patterns of the m rows."""
    import numpy as np

    m, k = matrix.shape
    out = np.empty((resamples, k), dtype=np.float64)
    rows = max(1, _CHUNK_CELLS // max(m, 1))
    width = (m + 7) // 8
    for start in range(0, resamples, rows):
        chunk = min(rows, resamples - start)
        raw = np.frombuffer(rng.bytes(chunk * width), dtype=np.uint8).reshape(chunk, width)
        # One random byte yields eight fair signs, as in the per-check Monte Carlo test.
        signs = 2.0 * np.unpackbits(raw, axis=1, count=m).astype(np.float64) - 1.0
        out[start : start + chunk] = signs @ matrix
    return out
