"""The family of a session's regression checks, and their adjusted p-values.

Every regression check of a session is one family: :func:`family` pairs every budget
(:func:`~pytest_retrieval.regression.pairs.pair_queries`) and adjusts their one-sided p-values
together (``retrieval_multiplicity``, default maxT;
:func:`~pytest_retrieval.scoring.stats.multiplicity.adjust_family` computes), so the chance that a
build turns red without a true change stays at or below ``alpha`` however many checks it has.
Checks that cannot be compared are not members. Each member's deltas are oriented by its
metric's direction (:meth:`pytest_retrieval.scoring.metrics.Metric.oriented`), so the one-sided
test is of a worsening: a drop, or a rise of a lower-is-better metric. In beyond-budget mode each
member is the shifted test (the worsening must be significantly larger than its budget).
:func:`describe` is the line naming a family in a summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..gates.declared import Budget
from .outcome import RegressionOutcome
from .pairs import DEFAULT_OPTIONS, CompareOptions, Paired, pair_queries
from .snapshot import Snapshot

if TYPE_CHECKING:
    from ..scoring.stats.multiplicity import AdjustedResult


@dataclass(frozen=True, slots=True)
class Family:
    """Every comparable regression check of a session, adjusted together.

    ``results`` maps a budget's name to its :class:`~pytest_retrieval.scoring.stats.multiplicity.
    AdjustedResult`; checks that cannot be compared (missing baseline, incomparable, skipped)
    are not members and do not count in ``size``.
    """

    method: str
    alpha: float
    test: str
    results: Mapping[str, AdjustedResult] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """How many checks were adjusted together."""
        return len(self.results)

    def describe(self) -> str:
        """``7 regression checks, family-wise alpha 0.05, maxT (...)``."""
        return describe(self.size, self.alpha, self.method, self.test)


def describe(size: int, alpha: float, method: str, test: str = "drop") -> str:
    """The one line naming a family in a summary (also rebuilt from an artifact's checks)."""
    from ..scoring.stats.multiplicity import describe_family

    text = describe_family(size, alpha, method)  # type: ignore[arg-type]
    if test == "beyond-budget":
        text += "; each tests whether the drop is significantly larger than its budget"
    return text


@dataclass(frozen=True, slots=True)
class Against:
    """What one budget is compared with when it is not the session's baseline: a baseline from
    the run ledger (the merge-base's entry, a ``since=`` anchor's), its comparison options and
    how messages name it."""

    baseline: Snapshot | None
    options: CompareOptions
    path: str


def _shift(budget: Budget, paired: Paired, options: CompareOptions) -> float:
    """The budget in metric units in beyond-budget mode (the shifted test), else 0."""
    if options.budget_test != "beyond-budget":
        return 0.0
    mean_before = sum(a for _q, a, _b in paired.pairs) / len(paired.pairs)
    return max(0.0, budget.allowed(mean_before))


def family(
    baseline: Snapshot | None,
    current: Snapshot,
    budgets: Sequence[Budget],
    *,
    options: CompareOptions = DEFAULT_OPTIONS,
    baseline_path: str = "the baseline",
    against: Mapping[str, Against] | None = None,
) -> Family:
    """Pair every budget and adjust their one-sided p-values together (``options.multiplicity``).

    ``against`` maps a budget's name to what it is compared with instead of ``baseline`` (a
    ledger entry): checks against different baselines are one family all the same, adjusted
    over joint sign flips of the queries they share. Deterministic: the same snapshots,
    budgets and seed give the same family, so each xdist worker can compute it and read its
    own check's result.
    """
    from ..scoring.stats.multiplicity import FamilyItem, adjust_family

    items: list[FamilyItem] = []
    for budget in budgets:
        # The stages each budget compares are pair_queries' (the checks pair the same).
        other = (against or {}).get(budget.name)
        paired = (
            pair_queries(baseline, current, budget, options=options, baseline_path=baseline_path)
            if other is None
            else pair_queries(
                other.baseline, current, budget, options=other.options, baseline_path=other.path
            )
        )
        if isinstance(paired, RegressionOutcome):
            continue
        if any(item.name == budget.name for item in items):
            continue  # the same budget declared twice is one check
        items.append(
            FamilyItem(
                budget.name,
                tuple(q for q, _a, _b in paired.pairs),
                # Oriented (higher is better, Metric.oriented): the one-sided test of every
                # member is of a worsening, a rise for stale@K as a drop for recall@K.
                tuple(budget.spec.metric.oriented(b - a) for _q, a, b in paired.pairs),
                shift=_shift(budget, paired, options),
            )
        )
    adjusted = adjust_family(
        items,
        options.multiplicity,  # type: ignore[arg-type]
        alpha=options.alpha,
        seed=options.seed,
        resamples=options.resamples,
    )
    return Family(
        options.multiplicity,
        options.alpha,
        options.budget_test,
        {result.name: result for result in adjusted},
    )
