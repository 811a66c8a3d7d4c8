"""The regression rule: is the current run worse than the committed baseline?

**The rule.** A metric (per stage, split and slice) regresses when its mean change for the worse
(a drop; a rise for a lower-is-better metric such as ``stale@K``, the metric table's direction,
:meth:`pytest_retrieval.scoring.metrics.Metric.oriented`) is larger than its budget AND a paired
sign-flip test says the change is significant (one-sided) at ``alpha`` *family-wise*: every
regression check of a session is one family, and the p-value that decides is the family-adjusted
one (:mod:`pytest_retrieval.scoring.stats.multiplicity`,
``retrieval_multiplicity``, default maxT), so the chance that a build turns red without a true
change stays at or below ``alpha`` however many checks it has. With ``retrieval_budget_test =
beyond-budget`` the test is the shifted one: the worsening must be significantly *larger than
the budget*. The interval shown is the sign-flip test's own inversion
(:func:`pytest_retrieval.scoring.stats.delta_interval`): a significant drop always shows a
one-sided upper bound below 0 (below ``-budget`` in beyond-budget mode), a significant rise of a
lower-is-better metric a one-sided lower bound above 0. Budgets are absolute
(``recall@50 0.02``) or relative to the baseline mean
(``ndcg@10 2%``); see :mod:`pytest_retrieval.gates.declared` for their grammar. A significant
change for the better beyond the budget is an improvement: the baseline is a floor that should
move up (a ceiling that should move down), so the report suggests refreshing it (see the README
on refreshing without ratcheting onto a lucky run). For a lower-is-better metric the verdict of
a regression says the rise in words first (``stale@3 rose by 0.3333 (budget 0.02): ...``): its
positive delta does not read as a regression the way a negative one does.

Held-out queries never enter a baseline with per-query detail, so regressions are checked on the
other splits only. :func:`compare` applies the rule in steps: check the two snapshots are
comparable and pair the selected queries (:mod:`pytest_retrieval.regression.pairs`), test, and
explain; :func:`family` (:mod:`pytest_retrieval.regression.family`) pairs every budget of a
session at once and adjusts their p-values together. A check's outcome,
:class:`RegressionOutcome`, is :mod:`pytest_retrieval.regression.outcome`'s.

**Holes.** A query that got worse because unjudged documents entered its top K above a relevant
one it lost is marked in its diff (:attr:`QueryDiff.holes`), and each check reports how much of
its mean change comes from such queries: a drop made of labelling holes is not a regression
until someone labels them (``pytest-retrieval golden pool``). With
``--retrieval-baseline-mode=rescore`` a golden set changed only in its judgments is compared
on the current labels (:mod:`pytest_retrieval.regression.rescore`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..gates.declared import Budget
from ..run.stages import stage_change
from ..scoring.metrics import Metric
from ..verdict import Status
from .family import Family, family
from .outcome import QueryDiff, RegressionOutcome
from .pairs import DEFAULT_OPTIONS, CompareOptions, pair_queries
from .snapshot import QuerySnapshot, Snapshot

#: Differences of means smaller than this are float noise when comparing a drop with a budget.
_NOISE = 1e-10


def compare_all(
    baseline: Snapshot | None,
    current: Snapshot,
    budgets: Sequence[Budget],
    *,
    options: CompareOptions = DEFAULT_OPTIONS,
    baseline_path: str = "the baseline",
) -> tuple[Family, list[RegressionOutcome]]:
    """Every budget's outcome under one family (what ``pytest-retrieval compare`` applies)."""
    members = family(baseline, current, budgets, options=options, baseline_path=baseline_path)
    outcomes = [
        compare(
            baseline,
            current,
            budget,
            options=options,
            baseline_path=baseline_path,
            family_result=members,
        )
        for budget in budgets
    ]
    return members, outcomes


def _bound(value: float) -> str:
    return f"{value:+.4f}" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


def interval_text(interval: Any, metric: Metric | None = None) -> str:
    """``one-sided 95% upper bound -0.0040, 90% two-sided interval [-0.0310, -0.0040]``.

    ``interval`` is of the deltas oriented by ``metric`` (:meth:`.Metric.oriented`; higher is
    better when None); the text is in the metric's own units: for a lower-is-better metric the
    bound a regression clears is the lower one (``one-sided 95% lower bound +0.0040``)."""
    if metric is None or not metric.lower_is_better:
        low, high = interval.low, interval.high
    else:
        low, high = metric.oriented(interval.high), metric.oriented(interval.low)  # never -0.0
    side = metric.bound_side if metric is not None else "upper"
    bound = high if side == "upper" else low
    return (
        f"one-sided {interval.upper_level:.0%} {side} bound {_bound(bound)}, "
        f"{interval.two_sided_level:.0%} two-sided interval [{_bound(low)}, {_bound(high)}]"
    )


def compare(
    baseline: Snapshot | None,
    current: Snapshot,
    budget: Budget,
    *,
    options: CompareOptions = DEFAULT_OPTIONS,
    baseline_path: str = "the baseline",
    family_result: Family | None = None,
) -> RegressionOutcome:
    """Apply the regression rule for one budget; never raises for user data.

    The budget's ``stage=`` is compared with the same stage of the baseline; without one, this
    run's final stage with the baseline's final stage, whatever their names
    (:func:`~pytest_retrieval.regression.pairs.compared_stages`).
    ``family_result`` is the session's :func:`family` (this budget's adjusted p-value decides);
    without it the budget is a family of one (its adjusted p-value is its raw one).
    """
    from ..scoring import stats

    metric = str(budget.spec)
    # Every test below reads oriented values (higher is better, Metric.oriented): a rise of
    # stale@3 is a worsening like a drop of recall; what is reported is in the metric's units.
    row = budget.spec.metric
    orient = row.oriented
    paired = pair_queries(baseline, current, budget, options=options, baseline_path=baseline_path)
    if isinstance(paired, RegressionOutcome):
        return paired
    assert baseline is not None
    stage, pairs, note, where = paired.stage, paired.pairs, paired.note, paired.where
    baseline_stage = paired.baseline_stage
    members = family_result
    if members is None or budget.name not in members.results:
        members = family(baseline, current, [budget], options=options, baseline_path=baseline_path)
    adjusted = members.results[budget.name]
    base_values = [orient(a) for _q, a, _b in pairs]
    cur_values = [orient(b) for _q, _a, b in pairs]
    gains = [orient(b - a) for _q, a, b in pairs]
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
        gains, alpha=options.alpha, resamples=options.resamples, seed=options.seed
    )
    mean_before = orient(better_test.mean_baseline)
    mean_current = orient(better_test.mean_current)
    allowed = budget.allowed(mean_before)
    gain = better_test.mean_delta
    delta = orient(gain)
    worsening = row.worsening
    beyond = options.budget_test == "beyond-budget"
    # A drop exactly as large as the budget is within it: float noise in the mean of the deltas
    # (0.7 - 0.8 = -0.10000000000000009) must not push it over. Values have DECIMALS decimals,
    # so a real excess is at least 1e-6 / n, far above this for any golden set.
    exceeds_worse = -gain - allowed > _NOISE
    exceeds_better = gain - allowed > _NOISE
    # The bound shown beside the verdict must agree with it: a regression always shows an upper
    # bound below 0 (below -budget for the shifted test). The adjusted p-value decides; the
    # bound can only make the rule stricter (when a Monte Carlo p and bound disagree by a hair).
    bound_agrees = interval.high < (-allowed if beyond else 0.0)
    regressed = exceeds_worse and adjusted.significant and bound_agrees
    improved = exceeds_better and better_test.significant
    drop = stats.detectable_drop(gains, alpha=options.alpha, power=0.8)
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
            f"the budget {allowed:.4f} is smaller than the smallest {worsening} this golden set "
            f"can detect ({detectable:.4f} at alpha {options.alpha:g}, power 0.8): it "
            f"cannot tell such a {worsening} from noise; add queries or widen the budget"
        )
    noise = _noise(baseline, pairs, baseline_stage, metric)
    k = budget.spec.k
    diffs = []
    sides = (baseline_stage, stage)
    for qid, a, b in pairs:
        if a != b:
            before_q, after_q = baseline.queries[qid], current.queries[qid]
            moves = _moves(before_q, after_q, sides, k)
            # Holes are unjudged documents above a lost relevant one: a relevance drop's.
            holed_drop = b < a and not row.lower_is_better
            holes, lost = _holes(before_q, after_q, sides, k, moves) if holed_drop else (0, None)
            diffs.append(QueryDiff(qid, a, b, moves, holes=holes, lost=lost))
    worse = tuple(
        sorted(
            (d for d in diffs if orient(d.delta) < 0),
            key=lambda d: (orient(d.delta), d.query_id),
        )
    )
    better = tuple(
        sorted(
            (d for d in diffs if orient(d.delta) > 0),
            key=lambda d: (-orient(d.delta), d.query_id),
        )
    )
    finite = math.isfinite(interval.low) and math.isfinite(interval.high)
    # In the metric's units: the oriented interval turned back (for lower-is-better, negated
    # and so reversed); the bound stored is the one a regression clears (Metric.bound_side).
    ends = sorted((orient(interval.low), orient(interval.high)))
    ci = (ends[0], ends[1]) if finite else None
    bound = orient(interval.high)
    holed = [d for d in worse if d.holes]
    hole_delta = sum(d.delta for d in holed) / len(pairs) if holed else None
    status = Status.REGRESSION if regressed else Status.IMPROVEMENT if improved else Status.PASS
    tested = f"p ({worsening} > budget)" if beyond else "one-sided p"
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
        f"{interval_text(interval, row)}, {p_text}, n = {len(pairs)}) [{where}]; budget "
        f"{budget.describe()} = {allowed:.4f}"
    )
    moved = (
        # A negative delta reads as a drop; a positive one as a regression does not, so a
        # lower-is-better metric's verdict says it in words first.
        f"{metric} {row.worsened} by {abs(delta):.4f} (budget {budget.describe()}): "
        if row.lower_is_better
        else ""
    )
    if regressed:
        verdict = f"regression: {moved}{head}"
    elif improved:
        verdict = (
            f"improvement: {head}; significant (p = {better_test.p_value:.4g}): refresh "
            "the baseline (--retrieval-update-baseline) so the "
            + ("ceiling moves down" if row.lower_is_better else "floor moves up")
        )
    elif exceeds_worse and 2.0**-interval.n_nonzero > options.alpha and not beyond:
        # The sign-flip test only sees queries whose value changed: with m of them its smallest
        # one-sided p-value is 2**-m, so a drop carried by a handful of queries cannot be
        # significant, however large. Say so rather than calling it noise.
        needed = math.ceil(math.log2(1.0 / options.alpha))
        verdict = (
            f"no regression: {head}; the {worsening} exceeds the budget, but only "
            f"{interval.n_nonzero} queries changed and the sign-flip test needs at least "
            f"{needed} changed queries to reach alpha {options.alpha:g}: look at them below"
        )
    elif exceeds_worse and beyond:
        verdict = (
            f"no regression: {head}; the {worsening} exceeds the budget but is not significantly "
            f"larger than it (beyond-budget test, family-wise alpha {options.alpha:g})"
        )
    elif exceeds_worse and adjusted.raw_p_value <= options.alpha < adjusted.p_value:
        verdict = (
            f"no regression: {head}; the {worsening} exceeds the budget and this check alone "
            f"would be significant, but not family-wise over {members.size} checks (alpha "
            f"{options.alpha:g})"
        )
    elif exceeds_worse:
        verdict = (
            f"no regression: {head}; the {worsening} exceeds the budget but is not significant at "
            f"alpha {options.alpha:g} (noise-level change)"
        )
    else:
        verdict = f"no regression: {head}"
    if interval.n_nonzero > 0 and detectable == 0.0:
        # Zero spread among the changed queries: the power model has nothing to size a change
        # against (it returns 0, any common shift of them), and "0.0000" would read as if the
        # set could detect a change of nothing. Say what was seen instead.
        verdict += (
            f"; smallest detectable {worsening} not estimated (the {interval.n_nonzero} changed "
            "queries all moved by the same amount: no spread to size it from)"
        )
    elif interval.n_nonzero > 0:
        shown = f"{detectable:.4f}" if detectable is not None else f"none ({drop.reason})"
        verdict += (
            f"; smallest detectable {worsening} {shown} (alpha {options.alpha:g}, power 0.8, for "
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
    change = stage_change(baseline_stage, stage)
    if change:
        lines.append(
            f"{change}: this budget names no stage, so it compares the final stages (the "
            f"ranking users get); budget stage={stage} to compare {stage} with itself, and "
            "refresh the baseline (--retrieval-update-baseline) when the change of stages is "
            "deliberate"
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
    if worse and (regressed or status is Status.PASS):
        lines.append(f"queries that got worse ({len(worse)}), worst first:")
        lines.extend(f"  {d.describe(metric)}" for d in worse[: options.shown])
        if len(worse) > options.shown:
            lines.append(f"  ... and {len(worse) - options.shown} more (all in the JSON artifact)")
    if better:
        lines.append(f"queries that improved ({len(better)}):")
        lines.extend(f"  {d.describe(metric)}" for d in better[: min(3, options.shown)])
    return RegressionOutcome.of_budget(
        budget,
        status,
        "\n".join(lines),
        stage=stage,
        allowed=allowed,
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
        over_budget=exceeds_worse,
        p_value_raw=adjusted.raw_p_value,
        multiplicity=members.method,
        family_size=members.size,
        alpha=options.alpha,
        test=options.budget_test,
        upper_bound=bound if math.isfinite(bound) else None,
        ci_level=interval.two_sided_level,
        upper_level=interval.upper_level,
        ci_collapsed=interval.collapsed,
        ci_reason=interval.reason,
        detectable_reason=drop.reason if interval.n_nonzero > 0 else None,
        baseline_runs=baseline.n_runs,
        noise=noise,
        hole_queries=len(holed),
        hole_delta=hole_delta,
        baseline_stage=baseline_stage,
        left_out=paired.left_out,
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


def _moves(
    before: QuerySnapshot, after: QuerySnapshot, stages: tuple[str, str], k: int | None
) -> tuple[tuple[str, int | None, int | None], ...]:
    """Relevant docs whose rank changed (from the baseline's stage to this run's, ``stages``),
    those that left (or entered) the top K first."""
    old = before.relevant_ranks.get(stages[0], {})
    new = after.relevant_ranks.get(stages[1], {})
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


def _holes(
    before: QuerySnapshot,
    after: QuerySnapshot,
    stages: tuple[str, str],
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
    ranking = after.top.get(stages[1], ())
    limit = len(ranking) if new_rank is None else new_rank - 1
    if k is not None:
        limit = min(limit, k)
    earlier = set(before.top.get(stages[0], ())[: old_rank - 1])
    holes = sum(
        1 for d in ranking[:limit] if judgments.get(d, -1) < 0 and d not in earlier and d != doc
    )
    return holes, doc
