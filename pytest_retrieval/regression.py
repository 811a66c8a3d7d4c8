"""The regression rule: is the current run worse than the committed baseline?

**The rule.** A metric (per stage, split and slice) regresses when its mean drop is larger than
its budget AND a paired sign-flip test says the drop is significant (one-sided) at ``alpha``
*family-wise*: every regression check of a session is one family, and the p-value that decides
is the family-adjusted one (:mod:`pytest_retrieval.multiplicity`, ``retrieval_multiplicity``,
default maxT), so the chance that a build turns red without a true change stays at or below
``alpha`` however many checks it has. With ``retrieval_budget_test = beyond-budget`` the test is
the shifted one: the drop must be significantly *larger than the budget*. The interval shown
is the sign-flip test's own inversion (:func:`pytest_retrieval.stats.delta_interval`): a
significant drop always shows a one-sided upper bound below 0 (below ``-budget`` in
beyond-budget mode). Budgets are absolute (``recall@50 0.02``) or relative to the baseline mean
(``ndcg@10 2%``); see :mod:`pytest_retrieval.declared` for their grammar. A significant rise
above the budget is an improvement: the baseline is a floor that should move up, so the report
suggests refreshing it (see the README on refreshing without ratcheting onto a lucky run).

Held-out queries never enter a baseline with per-query detail, so regressions are checked on the
other splits only. :func:`compare` applies the rule in steps: check the two snapshots are
comparable, pair the selected queries, test, and explain; :func:`family` pairs every budget of a
session at once and adjusts their p-values together.
comparable, pair the selected queries, test, and explain.

**Holes.** A query that got worse because unjudged documents entered its top K above a relevant
one it lost is marked in its diff (:attr:`QueryDiff.holes`), and each check reports how much of
its mean change comes from such queries: a drop made of labelling holes is not a regression
until someone labels them (``pytest-retrieval golden pool``). With
``--retrieval-baseline-mode=rescore`` a golden set changed only in its judgments is compared
on the current labels (:mod:`pytest_retrieval.rescore`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .baseline import QuerySnapshot, Snapshot, round_value
from .declared import Budget
from .gates import Selection
from .text import for_terminal
from .verdict import Status

if TYPE_CHECKING:
    from .multiplicity import AdjustedResult

#: Differences of means smaller than this are float noise when comparing a drop with a budget.
_NOISE = 1e-10


@dataclass(frozen=True, slots=True)
class QueryDiff:
    """How one query moved: its value before and after, and the relevant docs that moved."""

    query_id: str
    before: float
    after: float
    moves: tuple[tuple[str, int | None, int | None], ...]  # (doc, rank before, rank after)
    #: Unjudged documents that now rank above the relevant document this query lost (and did
    #: not rank above it before); 0 when none, or when the snapshot holds no judgments.
    holes: int = 0
    #: The relevant document that lost rank first (the one the holes rank above).
    lost: str | None = None

    @property
    def delta(self) -> float:
        """after - before."""
        return self.after - self.before

    def describe(self, metric: str) -> str:
        """``refund-window: ndcg@10 1.0000 → 0.3869; refund-policy: rank 1 → 7``."""

        def rank(value: int | None) -> str:
            return "—" if value is None else str(value)

        # User ids are escaped (for_terminal): one with a newline cannot start a log line.
        moved = "; ".join(
            f"{for_terminal(doc)}: rank {rank(a)} → {rank(b)}" for doc, a, b in self.moves[:4]
        )
        more = f" (+{len(self.moves) - 4} more)" if len(self.moves) > 4 else ""
        line = f"{for_terminal(self.query_id)}: {metric} {self.before:.4f} → {self.after:.4f}" + (
            f"; {moved}{more}" if moved else ""
        )
        if self.holes:
            documents = "document now ranks" if self.holes == 1 else "documents now rank"
            line += (
                f"; {self.holes} unjudged {documents} above the lost one "
                f"({for_terminal(self.lost or '')}): label them before trusting this drop"
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        """Builtins."""
        return {
            "query_id": self.query_id,
            "before": round_value(self.before),
            "after": round_value(self.after),
            "moves": [{"doc": d, "before": a, "after": b} for d, a, b in self.moves],
            "holes": self.holes,
            "lost": self.lost,
        }


@dataclass(frozen=True, slots=True)
class RegressionOutcome:
    """The verdict of one regression check."""

    name: str
    metric: str
    stage: str | None
    split: str | None
    slice: str | None
    status: str  # "pass", "regression", "improvement", "incomparable", "missing", "skipped"
    message: str
    budget: float = 0.0
    n: int = 0
    baseline_mean: float | None = None
    current_mean: float | None = None
    delta: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    p_value_improvement: float | None = None
    detectable: float | None = None
    warning: str | None = None
    worse: tuple[QueryDiff, ...] = ()
    better: tuple[QueryDiff, ...] = ()
    #: The mean drop is larger than the budget (whether or not it is significant).
    over_budget: bool = False
    #: The per-check p-value before the family-wise adjustment (``p_value`` is the adjusted one).
    p_value_raw: float | None = None
    #: How the family was adjusted (maxt, minp, holm, none) and how many checks it has.
    multiplicity: str | None = None
    family_size: int = 0
    alpha: float | None = None
    #: What was tested: "drop" (H0: no drop) or "beyond-budget" (H0: drop <= budget).
    test: str = "drop"
    #: The one-sided ``1 - alpha`` upper bound of the mean delta (None: infinite); ``ci`` is the
    #: two-sided ``1 - 2 alpha`` interval of the same test inversion.
    upper_bound: float | None = None
    ci_level: float | None = None
    upper_level: float | None = None
    ci_collapsed: bool = False
    ci_reason: str | None = None
    #: Why no drop is detectable (``detectable`` is then None).
    detectable_reason: str | None = None
    #: Runs the baseline's per-query values are the means of, and (when it records their
    #: spread) the standard deviation of the mean delta that run-to-run noise alone gives.
    baseline_runs: int = 1
    noise: float | None = None
    #: Queries that got worse with unjudged documents above a lost relevant one, and the part
    #: of the mean change (``delta``) that their drops make up.
    hole_queries: int = 0
    hole_delta: float | None = None

    @property
    def passed(self) -> bool:
        """True unless the check found a regression or could not compare."""
        return Status(self.status).passed

    def to_dict(self) -> dict[str, Any]:
        """Builtins (artifact, xdist payload)."""
        return {
            "name": self.name,
            "metric": self.metric,
            "stage": self.stage,
            "split": self.split,
            "slice": self.slice,
            "status": self.status,
            "passed": self.passed,
            "message": self.message,
            "budget": self.budget,
            "n": self.n,
            "baseline_mean": self.baseline_mean,
            "current_mean": self.current_mean,
            "delta": self.delta,
            "ci": list(self.ci) if self.ci else None,
            "p_value": self.p_value,
            "p_value_improvement": self.p_value_improvement,
            "detectable": self.detectable,
            "warning": self.warning,
            "worse": [d.to_dict() for d in self.worse],
            "better": [d.to_dict() for d in self.better],
            "over_budget": self.over_budget,
            "p_value_raw": self.p_value_raw,
            "multiplicity": self.multiplicity,
            "family_size": self.family_size,
            "alpha": self.alpha,
            "test": self.test,
            "upper_bound": self.upper_bound,
            "ci_level": self.ci_level,
            "upper_level": self.upper_level,
            "ci_collapsed": self.ci_collapsed,
            "ci_reason": self.ci_reason,
            "detectable_reason": self.detectable_reason,
            "baseline_runs": self.baseline_runs,
            "noise": self.noise,
            "hole_queries": self.hole_queries,
            "hole_delta": self.hole_delta,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RegressionOutcome:
        """Inverse of :meth:`to_dict`."""

        def diffs(rows: Sequence[Mapping[str, Any]]) -> tuple[QueryDiff, ...]:
            return tuple(
                QueryDiff(
                    r["query_id"],
                    r["before"],
                    r["after"],
                    tuple((m["doc"], m["before"], m["after"]) for m in r["moves"]),
                    holes=int(r.get("holes", 0)),
                    lost=r.get("lost"),
                )
                for r in rows
            )

        ci = data.get("ci")
        return cls(
            name=data["name"],
            metric=data["metric"],
            stage=data["stage"],
            split=data["split"],
            slice=data["slice"],
            status=data["status"],
            message=data["message"],
            budget=data.get("budget", 0.0),
            n=data.get("n", 0),
            baseline_mean=data.get("baseline_mean"),
            current_mean=data.get("current_mean"),
            delta=data.get("delta"),
            ci=(ci[0], ci[1]) if ci else None,
            p_value=data.get("p_value"),
            p_value_improvement=data.get("p_value_improvement"),
            detectable=data.get("detectable"),
            warning=data.get("warning"),
            worse=diffs(data.get("worse", ())),
            better=diffs(data.get("better", ())),
            over_budget=bool(data.get("over_budget", False)),
            p_value_raw=data.get("p_value_raw"),
            multiplicity=data.get("multiplicity"),
            family_size=int(data.get("family_size") or 0),
            alpha=data.get("alpha"),
            test=str(data.get("test") or "drop"),
            upper_bound=data.get("upper_bound"),
            ci_level=data.get("ci_level"),
            upper_level=data.get("upper_level"),
            ci_collapsed=bool(data.get("ci_collapsed", False)),
            ci_reason=data.get("ci_reason"),
            detectable_reason=data.get("detectable_reason"),
            baseline_runs=int(data.get("baseline_runs") or 1),
            noise=data.get("noise"),
            hole_queries=int(data.get("hole_queries", 0)),
            hole_delta=data.get("hole_delta"),
        )


@dataclass(frozen=True, slots=True)
class CompareOptions:
    """Statistics and matching options of a comparison."""

    alpha: float = 0.05
    confidence: float = 0.95
    resamples: int = 10_000
    seed: int = 0
    mode: str = "strict"  # or "intersect", "rescore"
    heldout_split: str = "heldout"
    shown: int = 5
    multiplicity: str = "maxt"  # or "minp", "holm", "none"
    budget_test: str = "drop"  # or "beyond-budget"


def _incomparable(
    budget: Budget, stage: str | None, message: str, status: str = "incomparable"
) -> RegressionOutcome:
    return RegressionOutcome(
        name=budget.name,
        metric=str(budget.spec),
        stage=stage,
        split=budget.selection.split,
        slice=budget.selection.slice,
        status=status,
        message=message,
        budget=budget.amount,
    )


def label_changes(baseline: Snapshot, current: Snapshot) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, changed) query ids between two snapshots."""
    added = sorted(set(current.queries) - set(baseline.queries))
    removed = sorted(set(baseline.queries) - set(current.queries))
    changed = sorted(
        qid
        for qid in set(baseline.queries) & set(current.queries)
        if baseline.queries[qid].labels != current.queries[qid].labels
    )
    return added, removed, changed


def _listing(ids: Sequence[str]) -> str:
    return ", ".join(ids[:8]) + (f" (+{len(ids) - 8} more)" if len(ids) > 8 else "")


def _moves(
    before: QuerySnapshot, after: QuerySnapshot, stage: str, k: int | None
) -> tuple[tuple[str, int | None, int | None], ...]:
    """Relevant docs whose rank changed, those that left (or entered) the top K first."""
    old = before.relevant_ranks.get(stage, {})
    new = after.relevant_ranks.get(stage, {})
    moves = []
    for doc in sorted(set(old) | set(new)):
        a, b = old.get(doc), new.get(doc)
        if a == b:
            continue
        inside_before = a is not None and (k is None or a <= k)
        inside_after = b is not None and (k is None or b <= k)
        crossed = inside_before != inside_after
        moves.append((0 if crossed else 1, a if a is not None else 1 << 30, doc, a, b))
    moves.sort()
    return tuple((doc, a, b) for _c, _r, doc, a, b in moves)


@dataclass(frozen=True, slots=True)
class _Paired:
    """The queries one budget compares: ``(query id, before, after)``, and notes."""

    stage: str
    pairs: list[tuple[str, float, float]]
    note: str | None
    where: str


def _holes(
    before: QuerySnapshot,
    after: QuerySnapshot,
    stage: str,
    k: int | None,
    moves: Sequence[tuple[str, int | None, int | None]],
) -> tuple[int, str | None]:
    """(unjudged documents now above the first relevant document that lost rank, that doc).

    The lost document is the one with the best old rank among those that moved down or out.
    A hole counts when it is unjudged in the current labels, ranks above the lost document's
    new rank (within the top K), and did not rank above the lost document before.
    """
    judgments = after.judgments
    if judgments is None:
        return 0, None
    lost = [(a, doc, b) for doc, a, b in moves if a is not None and (b is None or b > a)]
    if not lost:
        return 0, None
    old_rank, doc, new_rank = min(lost)
    ranking = after.top.get(stage, ())
    limit = len(ranking) if new_rank is None else new_rank - 1
    if k is not None:
        limit = min(limit, k)
    earlier = set(before.top.get(stage, ())[: old_rank - 1])
    holes = sum(
        1 for d in ranking[:limit] if judgments.get(d, -1) < 0 and d not in earlier and d != doc
    )
    return holes, doc


def _prepare(
    baseline: Snapshot | None,
    current: Snapshot,
    budget: Budget,
    *,
    stage: str | None,
    options: CompareOptions,
    baseline_path: str,
) -> _Paired | RegressionOutcome:
    """Pair the queries of one budget, or the outcome saying why it cannot be compared."""
    metric = str(budget.spec)
    if baseline is None:
        return _incomparable(
            budget,
            stage,
            f"no baseline at {baseline_path}: create it with `pytest --retrieval-baseline "
            f"{baseline_path} --retrieval-update-baseline`, review it and commit it",
            status="missing",
        )
    for key in sorted(set(baseline.settings) | set(current.settings)):
        if baseline.settings.get(key) != current.settings.get(key):
            return _incomparable(
                budget,
                stage,
                f"incomparable: setting {key!r} is {current.settings.get(key)!r} now but "
                f"{baseline.settings.get(key)!r} in {baseline_path}; use the same setting or "
                "refresh the baseline (--retrieval-update-baseline)",
            )
    if stage is None:
        stage = current.stages[-1] if current.stages else None
    if stage is None or stage not in current.stages:
        return _incomparable(
            budget,
            stage,
            f"stage {stage!r} is not in this run (stages: {', '.join(current.stages)})",
        )
    if stage not in baseline.stages:
        return _incomparable(
            budget,
            stage,
            f"stage {stage!r} is not in {baseline_path} "
            f"(stages: {', '.join(baseline.stages)}); refresh the baseline",
        )
    if metric not in baseline.metrics:
        return _incomparable(
            budget,
            stage,
            f"{baseline_path} has no {metric}; refresh the "
            "baseline so it records every metric you budget",
        )
    if budget.selection.split == options.heldout_split:
        return _incomparable(
            budget,
            stage,
            "held-out queries never enter a baseline with "
            "per-query detail; budget the tuning split instead",
            status="skipped",
        )
    added, removed, changed = label_changes(baseline, current)
    note: str | None = None
    if baseline.fingerprint != current.fingerprint or added or removed or changed:
        summary = ", ".join(
            f"{len(ids)} {what}" + (f" ({_listing(ids)})" if ids else "")
            for what, ids in (("added", added), ("removed", removed), ("changed", changed))
        )
        if options.mode == "rescore":
            from .rescore import rescore, why_not_rescorable

            reason = why_not_rescorable(baseline, current)
            if reason is not None:
                return _incomparable(budget, stage, f"incomparable in rescore mode: {reason}")
            rescored = rescore(baseline, current, [metric])
            baseline, current = rescored.baseline, rescored.current
            changed = list(rescored.changed)
            kept = len(rescored.baseline.queries)
            note = (
                f"rescore mode: the baseline's stored rankings and this run's re-scored against "
                f"the current labels ({len(rescored.relabelled)} relabelled queries"
                + (f": {_listing(rescored.relabelled)}" if rescored.relabelled else "")
                + f"); comparing {kept} queries"
                + (
                    f", leaving out {len(changed)} whose text, split or slices changed "
                    f"({_listing(changed)})"
                    if changed
                    else ""
                )
                + (f" ({summary})" if added or removed else "")
            )
        elif options.mode != "intersect":
            return _incomparable(
                budget,
                stage,
                f"incomparable: the golden set changed since {baseline_path} was made: queries "
                f"{summary}. Refresh the baseline (--retrieval-update-baseline), compare the "
                "unchanged queries with --retrieval-baseline-mode=intersect, or, when only "
                "judgments changed, re-score the baseline's rankings against the current labels "
                "with --retrieval-baseline-mode=rescore",
            )
        else:
            note = summary
    shared = sorted(set(baseline.queries) & set(current.queries) - set(changed))
    if note is not None and options.mode == "intersect":
        note = f"intersect mode: comparing the {len(shared)} unchanged queries only ({note})"

    def selected(q: QuerySnapshot) -> bool:
        return budget.selection.matches(q.split, q.slices, heldout_split=options.heldout_split)

    pairs = []
    for qid in shared:
        before, after = baseline.queries[qid], current.queries[qid]
        if not selected(after):
            continue
        a = round_value(before.metrics.get(stage, {}).get(metric))
        # The baseline keeps DECIMALS decimals: round the current value the same way, or float
        # noise (0.333333 vs 0.3333333) would count as a change in the sign-flip test.
        b = round_value(after.metrics.get(stage, {}).get(metric))
        if a is not None and b is not None:
            pairs.append((qid, a, b))
    where = Selection(stage, budget.selection.split or "overall", budget.selection.slice).label()
    if not pairs:
        return _incomparable(budget, stage, f"no query to compare for {metric} [{where}]")
    return _Paired(stage, pairs, note, where)


@dataclass(frozen=True, slots=True)
class Family:
    """Every comparable regression check of a session, adjusted together.

    ``results`` maps a budget's name to its :class:`~pytest_retrieval.multiplicity.
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
    from .multiplicity import describe_family

    text = describe_family(size, alpha, method)  # type: ignore[arg-type]
    if test == "beyond-budget":
        text += "; each tests whether the drop is significantly larger than its budget"
    return text


def _shift(budget: Budget, paired: _Paired, options: CompareOptions) -> float:
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
    default_stage: str | None,
    options: CompareOptions = CompareOptions(),
    baseline_path: str = "the baseline",
) -> Family:
    """Pair every budget and adjust their one-sided p-values together (``options.multiplicity``).

    Deterministic: the same snapshots, budgets and seed give the same family, so each xdist
    worker can compute it and read its own check's result.
    """
    from .multiplicity import FamilyItem, adjust_family

    items: list[FamilyItem] = []
    for budget in budgets:
        paired = _prepare(
            baseline,
            current,
            budget,
            stage=budget.selection.stage or default_stage,
            options=options,
            baseline_path=baseline_path,
        )
        if isinstance(paired, RegressionOutcome):
            continue
        if any(item.name == budget.name for item in items):
            continue  # the same budget declared twice is one check
        items.append(
            FamilyItem(
                budget.name,
                tuple(q for q, _a, _b in paired.pairs),
                tuple(b - a for _q, a, b in paired.pairs),
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


def compare_all(
    baseline: Snapshot | None,
    current: Snapshot,
    budgets: Sequence[Budget],
    *,
    default_stage: str | None,
    options: CompareOptions = CompareOptions(),
    baseline_path: str = "the baseline",
) -> tuple[Family, list[RegressionOutcome]]:
    """Every budget's outcome under one family (what ``pytest-retrieval compare`` applies)."""
    members = family(
        baseline,
        current,
        budgets,
        default_stage=default_stage,
        options=options,
        baseline_path=baseline_path,
    )
    outcomes = [
        compare(
            baseline,
            current,
            budget,
            stage=budget.selection.stage or default_stage,
            options=options,
            baseline_path=baseline_path,
            family_result=members,
        )
        for budget in budgets
    ]
    return members, outcomes


def _bound(value: float) -> str:
    return f"{value:+.4f}" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


def interval_text(interval: Any) -> str:
    """``one-sided 95% upper bound -0.0040, 90% two-sided interval [-0.0310, -0.0040]``."""
    return (
        f"one-sided {interval.upper_level:.0%} upper bound {_bound(interval.high)}, "
        f"{interval.two_sided_level:.0%} two-sided interval [{_bound(interval.low)}, "
        f"{_bound(interval.high)}]"
    )


def compare(
    baseline: Snapshot | None,
    current: Snapshot,
    budget: Budget,
    *,
    stage: str | None,
    options: CompareOptions = CompareOptions(),
    baseline_path: str = "the baseline",
    family_result: Family | None = None,
) -> RegressionOutcome:
    """Apply the regression rule for one budget; never raises for user data.

    ``family_result`` is the session's :func:`family` (this budget's adjusted p-value decides);
    without it the budget is a family of one (its adjusted p-value is its raw one).
    """
    from . import stats

    metric = str(budget.spec)
    paired = _prepare(
        baseline, current, budget, stage=stage, options=options, baseline_path=baseline_path
    )
    if isinstance(paired, RegressionOutcome):
        return paired
    assert baseline is not None
    stage, pairs, note, where = paired.stage, paired.pairs, paired.note, paired.where
    members = family_result
    if members is None or budget.name not in members.results:
        members = family(
            baseline,
            current,
            [budget],
            default_stage=stage,
            options=options,
            baseline_path=baseline_path,
        )
    adjusted = members.results[budget.name]
    base_values = [a for _q, a, _b in pairs]
    cur_values = [b for _q, _a, b in pairs]
    deltas = [b - a for _q, a, b in pairs]
    better_test = stats.paired_comparison(
        base_values,
        cur_values,
        alpha=options.alpha,
        alternative="greater",
        resamples=options.resamples,
        seed=options.seed,
        confidence=options.confidence,
    )
    interval = stats.delta_interval(
        deltas, alpha=options.alpha, resamples=options.resamples, seed=options.seed
    )
    mean_before = better_test.mean_baseline
    mean_current = better_test.mean_current
    allowed = budget.allowed(mean_before)
    delta = better_test.mean_delta
    beyond = options.budget_test == "beyond-budget"
    # A drop exactly as large as the budget is within it: float noise in the mean of the deltas
    # (0.7 - 0.8 = -0.10000000000000009) must not push it over. Values have DECIMALS decimals,
    # so a real excess is at least 1e-6 / n, far above this for any golden set.
    exceeds_drop = -delta - allowed > _NOISE
    exceeds_rise = delta - allowed > _NOISE
    # The bound shown beside the verdict must agree with it: a regression always shows an upper
    # bound below 0 (below -budget for the shifted test). The adjusted p-value decides; the
    # bound can only make the rule stricter (when a Monte Carlo p and bound disagree by a hair).
    bound_agrees = interval.high < (-allowed if beyond else 0.0)
    regressed = exceeds_drop and adjusted.significant and bound_agrees
    improved = exceeds_rise and better_test.significant
    drop = stats.detectable_drop(deltas, alpha=options.alpha, power=0.8)
    detectable = drop.drop
    warning = None
    if 2.0 ** -len(pairs) > options.alpha:
        # The smallest one-sided p-value of the sign-flip test is 2**-n: whatever the spread,
        # this check can never be significant.
        warning = (
            f"with {len(pairs)} queries the sign-flip test can never reach alpha "
            f"{options.alpha:g} (its smallest one-sided p-value is 1/2^{len(pairs)} = "
            f"{2.0 ** -len(pairs):.4g}), so this check can never fail; add queries"
        )
    elif detectable is not None and allowed < detectable and detectable > 0:
        warning = (
            f"the budget {allowed:.4f} is smaller than the smallest drop this golden set "
            f"can detect ({detectable:.4f} at alpha {options.alpha:g}, power 0.8): it "
            "cannot tell such a drop from noise; add queries or widen the budget"
        )
    noise = _noise(baseline, pairs, stage, metric)
    k = budget.spec.k
    diffs = []
    for qid, a, b in pairs:
        if a != b:
            before_q, after_q = baseline.queries[qid], current.queries[qid]
            moves = _moves(before_q, after_q, stage, k)
            holes, lost = _holes(before_q, after_q, stage, k, moves) if b < a else (0, None)
            diffs.append(QueryDiff(qid, a, b, moves, holes=holes, lost=lost))
    worse = tuple(sorted((d for d in diffs if d.delta < 0), key=lambda d: (d.delta, d.query_id)))
    better = tuple(sorted((d for d in diffs if d.delta > 0), key=lambda d: (-d.delta, d.query_id)))
    finite = math.isfinite(interval.low) and math.isfinite(interval.high)
    ci = (interval.low, interval.high) if finite else None
    holed = [d for d in worse if d.holes]
    hole_delta = sum(d.delta for d in holed) / len(pairs) if holed else None
    status = "regression" if regressed else "improvement" if improved else "pass"
    tested = "p (drop > budget)" if beyond else "one-sided p"
    if members.method != "none" and members.size > 1:
        method = _METHOD_NAMES.get(members.method, members.method)
        p_text = (
            f"{tested} = {adjusted.p_value:.4g} ({method}-adjusted over {members.size} checks; "
            f"raw {adjusted.raw_p_value:.4g})"
        )
    else:
        p_text = f"{tested} = {adjusted.p_value:.4g}"
    head = (
        f"{metric} {mean_before:.4f} → {mean_current:.4f} (Δ {delta:+.4f}, "
        f"{interval_text(interval)}, {p_text}, n = {len(pairs)}) [{where}]; budget "
        f"{budget.describe()} = {allowed:.4f}"
    )
    if regressed:
        verdict = f"regression: {head}"
    elif improved:
        verdict = (
            f"improvement: {head}; significant (p = {better_test.p_value:.4g}): refresh "
            "the baseline (--retrieval-update-baseline) so the floor moves up"
        )
    elif exceeds_drop and 2.0**-interval.n_nonzero > options.alpha and not beyond:
        # The sign-flip test only sees queries whose value changed: with m of them its smallest
        # one-sided p-value is 2**-m, so a drop carried by a handful of queries cannot be
        # significant, however large. Say so rather than calling it noise.
        needed = math.ceil(math.log2(1.0 / options.alpha))
        verdict = (
            f"no regression: {head}; the drop exceeds the budget, but only "
            f"{interval.n_nonzero} queries changed and the sign-flip test needs at least "
            f"{needed} changed queries to reach alpha {options.alpha:g}: look at them below"
        )
    elif exceeds_drop and beyond:
        verdict = (
            f"no regression: {head}; the drop exceeds the budget but is not significantly "
            f"larger than it (beyond-budget test, family-wise alpha {options.alpha:g})"
        )
    elif exceeds_drop and adjusted.raw_p_value <= options.alpha < adjusted.p_value:
        verdict = (
            f"no regression: {head}; the drop exceeds the budget and this check alone would be "
            f"significant, but not family-wise over {members.size} checks (alpha "
            f"{options.alpha:g})"
        )
    elif exceeds_drop:
        verdict = (
            f"no regression: {head}; the drop exceeds the budget but is not significant at "
            f"alpha {options.alpha:g} (noise-level change)"
        )
    else:
        verdict = f"no regression: {head}"
    if interval.n_nonzero > 0:
        shown = f"{detectable:.4f}" if detectable is not None else f"none ({drop.reason})"
        verdict += (
            f"; smallest detectable drop {shown} (alpha {options.alpha:g}, power 0.8, for "
            "changes like the ones seen)"
        )
    lines = [verdict]
    if interval.reason or interval.collapsed:
        lines.append(
            "interval: "
            + (interval.reason or "collapsed: every changed query moved by the same amount")
        )
    if warning:
        lines.append(f"warning: {warning}")
    if noise is not None:
        lines.append(
            f"run-to-run noise: the baseline is the mean of {baseline.n_runs} runs; noise alone "
            f"moves this mean delta by about ±{noise:.4f} (1 sd, from the baseline's per-query "
            "spread)"
        )
    if note:
        lines.append(note)
    if holed and hole_delta is not None:
        share = f" ({hole_delta / delta:.0%} of it)" if delta < 0 else ""
        lines.append(
            f"unjudged documents: {len(holed)} of the {len(worse)} queries that got worse have "
            f"unjudged documents ranked above a relevant one they lost; their drops make "
            f"{hole_delta:+.4f} of the mean change {delta:+.4f}{share}: label them "
            "(pytest-retrieval golden pool) before trusting this drop"
        )
    if worse and (regressed or status == "pass"):
        lines.append(f"queries that got worse ({len(worse)}), worst first:")
        lines.extend(f"  {d.describe(metric)}" for d in worse[: options.shown])
        if len(worse) > options.shown:
            lines.append(f"  ... and {len(worse) - options.shown} more (all in the JSON artifact)")
    if better:
        lines.append(f"queries that improved ({len(better)}):")
        lines.extend(f"  {d.describe(metric)}" for d in better[: min(3, options.shown)])
    return RegressionOutcome(
        name=budget.name,
        metric=metric,
        stage=stage,
        split=budget.selection.split,
        slice=budget.selection.slice,
        status=status,
        message="\n".join(lines),
        budget=allowed,
        n=len(pairs),
        baseline_mean=mean_before,
        current_mean=mean_current,
        delta=delta,
        ci=ci,
        p_value=adjusted.p_value,
        p_value_improvement=better_test.p_value,
        detectable=detectable,
        warning=warning,
        worse=worse,
        better=better,
        over_budget=exceeds_drop,
        p_value_raw=adjusted.raw_p_value,
        multiplicity=members.method,
        family_size=members.size,
        alpha=options.alpha,
        test=options.budget_test,
        upper_bound=interval.high if math.isfinite(interval.high) else None,
        ci_level=interval.two_sided_level,
        upper_level=interval.upper_level,
        ci_collapsed=interval.collapsed,
        ci_reason=interval.reason,
        detectable_reason=drop.reason if interval.n_nonzero > 0 else None,
        baseline_runs=baseline.n_runs,
        noise=noise,
        hole_queries=len(holed),
        hole_delta=hole_delta,
    )


_METHOD_NAMES = {"maxt": "maxT", "minp": "minP", "holm": "Holm"}


def _noise(
    baseline: Snapshot, pairs: Sequence[tuple[str, float, float]], stage: str, metric: str
) -> float | None:
    """SD of the mean delta from run-to-run noise alone, when the baseline knows its spread.

    A baseline of N runs records each query's run-to-run sd ``s``; the current run is one run
    of the same kind, so a query's delta carries noise of variance ``s**2 (1 + 1/N)`` (one run
    against a mean of N), and the mean delta over n queries ``sqrt(sum s**2 (1 + 1/N)) / n``.
    """
    if baseline.n_runs < 2:
        return None
    total = 0.0
    for qid, _a, _b in pairs:
        value = baseline.queries[qid].spread.get(stage, {}).get(metric)
        if value is None:
            return None
        total += value * value * (1.0 + 1.0 / baseline.n_runs)
    return math.sqrt(total) / len(pairs)


def _spread(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1) of at least two values."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
