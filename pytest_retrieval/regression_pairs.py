"""The first steps of the regression rule: are two snapshots comparable, and which pairs.

For one budget, :func:`pair_queries` checks that the baseline and the current snapshot can be
compared (a baseline exists; the settings that change numbers, the stage and the metric match;
the split is not the held-out one; the golden set did not change, or the mode says how to
compare a changed one: ``intersect`` keeps the unchanged queries, ``rescore`` re-scores both
runs' rankings against the current labels, :mod:`pytest_retrieval.rescore`) and pairs each
selected query's value before and after (:class:`Paired`). When they cannot be compared it
returns the outcome that says why (``missing``, ``incomparable``, ``skipped``), which is a
check's whole verdict. :class:`CompareOptions` are the options of the whole comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .declared import Budget
from .gates import Selection
from .regression_outcome import RegressionOutcome
from .snapshot import QuerySnapshot, Snapshot, round_value


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


#: The options when none are given (the default argument of the rule's functions).
DEFAULT_OPTIONS = CompareOptions()


@dataclass(frozen=True, slots=True)
class Paired:
    """The queries one budget compares: ``(query id, before, after)``, and notes."""

    stage: str
    pairs: list[tuple[str, float, float]]
    note: str | None
    where: str


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


def pair_queries(
    baseline: Snapshot | None,
    current: Snapshot,
    budget: Budget,
    *,
    stage: str | None,
    options: CompareOptions,
    baseline_path: str,
) -> Paired | RegressionOutcome:
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
    return Paired(stage, pairs, note, where)
