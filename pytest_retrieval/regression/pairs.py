"""The first steps of the regression rule: are two snapshots comparable, and which pairs.

For one budget, :func:`pair_queries` checks that the baseline and the current snapshot can be
compared (a baseline exists; the settings that change numbers match, :func:`setting_differs`;
each side has the stage the budget compares, :func:`compared_stages`; the baseline has the
metric; the split is not the held-out one; the golden set did not change, or the mode says how
to compare a changed one: ``intersect`` keeps the unchanged queries, ``rescore`` re-scores both
runs' rankings against the current labels, :mod:`pytest_retrieval.regression.rescore`) and pairs
each selected query's value before and after (:class:`Paired`). When they cannot be compared it
returns the outcome that says why (``missing``, ``incomparable``, ``skipped``), which is a
check's whole verdict. :class:`CompareOptions` are the options of the whole comparison.

**Which stages.** A budget that names a stage (``stage=reranker``) compares that stage with
itself, and cannot be compared when either side lacks it. A budget that names none compares
the final stage of each side (:func:`pytest_retrieval.run.stages.final_stage`), whatever their
names: with the reranker removed, the baseline's reranker (what users got) with this run's
retriever (what they get now), so removing a stage is measured, never silent; with a reranker
added, the baseline's retriever with this run's reranker. Every check records both stages, and
the reports say so when they differ (:func:`pytest_retrieval.run.stages.stage_change`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ..gates.declared import Budget
from ..gates.gate import Selection
from ..run.stages import final_stage, stage_change
from ..scoring.dedup import recorded_groups
from ..scoring.evaluate import Conventions
from ..settings.options import (
    DEFAULT_ALPHA,
    DEFAULT_BUDGET_TEST,
    DEFAULT_CONFIDENCE,
    DEFAULT_MULTIPLICITY,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from ..verdict import Status
from .outcome import LeftOut, RegressionOutcome
from .snapshot import QuerySnapshot, Snapshot, round_value, unstored_context

if TYPE_CHECKING:
    from ..settings.resolve import Settings


@dataclass(frozen=True, slots=True)
class CompareOptions:
    """Statistics and matching options of a comparison.

    Built from a run's settings (:meth:`from_settings`, every check of a pytest run) or from
    what a stored run recorded (:meth:`from_recorded`, ``pytest-retrieval compare``); the
    statistics' defaults are the settings' (:mod:`pytest_retrieval.settings.options`).
    """

    alpha: float = DEFAULT_ALPHA
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    mode: str = "strict"  # or "intersect", "rescore"
    heldout_split: str = "heldout"
    shown: int = 5
    multiplicity: str = DEFAULT_MULTIPLICITY  # or "minp", "holm", "none"
    budget_test: str = DEFAULT_BUDGET_TEST  # or "beyond-budget"
    #: What the rescore mode scores the stored rankings with: the session's conventions
    #: (duplicate groups included). None: the current snapshot's recorded settings, without
    #: duplicate groups (a snapshot records their fingerprint only; the rescore mode then
    #: refuses a snapshot scored per group, :func:`.rescore.why_not_rescorable`).
    conventions: Conventions | None = None
    #: How a message says to make the baseline again (a ledger baseline is recorded with
    #: ``pytest-retrieval ledger record``, never refreshed with --retrieval-update-baseline).
    refresh: str = "refresh the baseline (--retrieval-update-baseline)"

    @classmethod
    def from_settings(
        cls, settings: Settings, *, conventions: Conventions | None = None
    ) -> CompareOptions:
        """The options of every regression check of a pytest run: ``retrieval_alpha``,
        ``retrieval_confidence``, ``retrieval_resamples``, ``retrieval_seed``,
        ``retrieval_baseline_mode``, ``retrieval_heldout_split``, ``retrieval_worst``,
        ``retrieval_multiplicity`` and ``retrieval_budget_test``; ``conventions`` are the
        session's (what the rescore mode scores the stored rankings with)."""
        return cls(
            alpha=settings.alpha,
            confidence=settings.confidence,
            resamples=settings.resamples,
            seed=settings.seed,
            mode=settings.baseline_mode,
            heldout_split=settings.heldout_split,
            shown=settings.worst,
            multiplicity=settings.multiplicity,
            budget_test=settings.budget_test,
            conventions=conventions,
        )

    @classmethod
    def from_recorded(
        cls,
        recorded: Mapping[str, Any],
        *,
        conventions: Conventions | None = None,
        **given: Any,
    ) -> CompareOptions:
        """The options a stored run's settings (an artifact's ``settings``,
        :meth:`.settings.Settings.to_dict`) recorded, as :meth:`from_settings` made them for
        the run: a setting it lacks (written before the setting existed) has today's default,
        and ``given`` (the command's flags, each not None) overrides what it recorded."""
        names = {
            "alpha": "alpha",
            "confidence": "confidence",
            "resamples": "resamples",
            "seed": "seed",
            "mode": "baseline_mode",
            "heldout_split": "heldout_split",
            "shown": "worst",
            "multiplicity": "multiplicity",
            "budget_test": "budget_test",
        }
        unknown = set(given) - set(names)
        if unknown:
            raise TypeError(f"unknown comparison options: {', '.join(sorted(unknown))}")
        defaults = cls()
        values = {
            field: given[field]
            if given.get(field) is not None
            else recorded.get(key, getattr(defaults, field))
            for field, key in names.items()
        }
        return cls(**values, conventions=conventions)


#: The options when none are given (the default argument of the rule's functions).
DEFAULT_OPTIONS = CompareOptions()


@dataclass(frozen=True, slots=True)
class Paired:
    """The queries one budget compares: ``(query id, before, after)``, and notes.

    ``before`` is the baseline's value at ``baseline_stage``, ``after`` this run's at ``stage``
    (two different stages only for a budget that names none, when the final stages differ)."""

    stage: str
    pairs: list[tuple[str, float, float]]
    note: str | None
    where: str
    baseline_stage: str
    #: The queries of the budget's selection left out (added, removed, changed since the
    #: baseline), for the reports to name under the check.
    left_out: tuple[LeftOut, ...] = ()


def _incomparable(
    budget: Budget,
    stage: str | None,
    message: str,
    status: Status = Status.INCOMPARABLE,
    *,
    baseline_stage: str | None = None,
) -> RegressionOutcome:
    return RegressionOutcome.of_budget(
        budget, status, message, stage=stage, baseline_stage=baseline_stage
    )


def setting_differs(key: str, baseline: Any, current: Any) -> bool:
    """True when one setting that changes numbers (a snapshot's ``settings[key]``, None when
    absent) makes two snapshots incomparable. Duplicate groups compare by what they are
    (:func:`.dedup.recorded_groups`), not by where they came from."""
    if key == "dedup":
        return bool(recorded_groups(baseline) != recorded_groups(current))
    return bool(baseline != current)


def _setting_message(
    key: str,
    settings: tuple[Mapping[str, Any], Mapping[str, Any]],
    baseline_path: str,
    refresh: str = DEFAULT_OPTIONS.refresh,
) -> str:
    before, now = (s.get(key) for s in settings)
    if key == "dedup":
        return (
            f"incomparable: the duplicate groups are not the ones {baseline_path} was scored "
            f"with ({now!r} now, {before!r} there: where they came from, then their "
            f"fingerprint); use the same groups or {refresh}"
        )
    return (
        f"incomparable: setting {key!r} is {now!r} now but {before!r} in {baseline_path}; use "
        f"the same setting or {refresh}"
    )


def _stages(snapshot: Snapshot) -> str:
    return ", ".join(snapshot.stages) or "none"


def compared_stages(
    baseline: Snapshot,
    current: Snapshot,
    budget: Budget,
    *,
    baseline_path: str,
    refresh: str = DEFAULT_OPTIONS.refresh,
) -> tuple[str, str] | RegressionOutcome:
    """``(the baseline's stage, this run's stage)`` one budget compares, or the outcome saying
    why it cannot: ``stage=S`` compares S with S; no stage, the final stage of each side."""
    named = budget.selection.stage
    if named is None:
        before, now = final_stage(baseline.stages), final_stage(current.stages)
        if now is None:
            return _incomparable(budget, None, "incomparable: this run has no stage to compare")
        if before is None:
            return _incomparable(
                budget, now, f"incomparable: {baseline_path} has no stage to compare"
            )
        return before, now
    in_run, in_baseline = named in current.stages, named in baseline.stages
    if in_run and in_baseline:
        return named, named
    head = f"incomparable: stage={named} compares the {named} stage with itself, but "
    if not in_run and not in_baseline:
        where = (
            f"neither this run (stages: {_stages(current)}) nor {baseline_path} "
            f"(stages: {_stages(baseline)}) has it"
        )
        fix = "budget a stage both have, or drop stage= to compare the final stages"
    elif not in_run:
        where = (
            f"this run has no {named} stage (stages: {_stages(current)}; {baseline_path} "
            f"has: {_stages(baseline)})"
        )
        fix = (
            f"drop stage= to compare the final stages (what users get), or budget a stage this "
            f"run has; when removing the {named} stage is deliberate, {refresh}"
        )
    else:
        where = (
            f"{baseline_path} has no {named} stage (stages: {_stages(baseline)}; this run "
            f"has: {_stages(current)})"
        )
        fix = (
            f"{refresh} so it records the {named} stage, or drop stage= to compare the final stages"
        )
    return _incomparable(
        budget,
        named if in_run else None,
        f"{head}{where}; {fix}",
        baseline_stage=named if in_baseline else None,
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
    options: CompareOptions,
    baseline_path: str,
) -> Paired | RegressionOutcome:
    """Pair the queries of one budget (the stages :func:`compared_stages` decides), or the
    outcome saying why it cannot be compared."""
    metric = str(budget.spec)
    if baseline is None:
        return _incomparable(
            budget,
            budget.selection.stage,
            f"no baseline at {baseline_path}: create it with `pytest --retrieval-baseline="
            f"{baseline_path} --retrieval-update-baseline`, review it and commit it",
            status=Status.MISSING,
        )
    stages = compared_stages(
        baseline, current, budget, baseline_path=baseline_path, refresh=options.refresh
    )
    if isinstance(stages, RegressionOutcome):
        return stages
    baseline_stage, stage = stages
    incomparable = partial(_incomparable, budget, stage, baseline_stage=baseline_stage)
    for key in sorted(set(baseline.settings) | set(current.settings)):
        if setting_differs(key, baseline.settings.get(key), current.settings.get(key)):
            return incomparable(
                _setting_message(
                    key, (baseline.settings, current.settings), baseline_path, options.refresh
                )
            )
    if metric not in baseline.metrics:
        return incomparable(
            f"{baseline_path} has no {metric}; refresh the "
            "baseline so it records every metric you budget",
        )
    if budget.selection.split == options.heldout_split:
        return incomparable(
            "held-out queries never enter a baseline with "
            "per-query detail; budget the tuning split instead",
            status=Status.SKIPPED,
        )
    unstored = unstored_context(budget.selection)
    if unstored is not None and any(q.context is None for q in current.queries.values()):
        # Only a snapshot read from a file lacks contexts (pytest-retrieval compare): the
        # budget cannot be checked there, which is no regression.
        return incomparable(unstored, status=Status.SKIPPED)
    added, removed, changed = label_changes(baseline, current)
    note: str | None = None
    if baseline.fingerprint != current.fingerprint or added or removed or changed:
        summary = ", ".join(
            f"{len(ids)} {what}" + (f" ({_listing(ids)})" if ids else "")
            for what, ids in (("added", added), ("removed", removed), ("changed", changed))
        )
        if options.mode == "rescore":
            from .rescore import rescore, why_not_rescorable

            conventions = options.conventions
            try:
                if conventions is None:
                    conventions = Conventions.from_recorded(current.settings)
            except ValueError as exc:
                return incomparable(
                    f"incomparable in rescore mode: the run's recorded settings cannot be "
                    f"scored ({exc}); refresh the baseline (--retrieval-update-baseline)"
                )
            reason = why_not_rescorable(baseline, current, conventions, metric=metric)
            if reason is not None:
                return incomparable(f"incomparable in rescore mode: {reason}")
            rescored = rescore(baseline, current, [metric], conventions)
            baseline, current = rescored.baseline, rescored.current
            changed = list(rescored.changed)
            kept = len(rescored.baseline.queries)
            note = (
                f"rescore mode: the baseline's stored rankings and this run's re-scored against "
                f"the current labels ({len(rescored.relabelled)} relabelled queries"
                + (f": {_listing(rescored.relabelled)}" if rescored.relabelled else "")
                + f"); comparing {kept} queries"
                + (
                    f", leaving out {len(changed)} whose text, context, split or slices changed "
                    f"({_listing(changed)})"
                    if changed
                    else ""
                )
                + (f" ({summary})" if added or removed else "")
            )
        elif options.mode != "intersect":
            return incomparable(
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
        # A context slice reads the current run's contexts: a paired query's is the
        # baseline's too (its text hash covers it), and a removed query's is not known.
        return budget.selection.matches(
            q.split, q.slices, heldout_split=options.heldout_split, context=q.context
        )

    pairs = []
    for qid in shared:
        before, after = baseline.queries[qid], current.queries[qid]
        if not selected(after):
            continue
        a = round_value(before.metrics.get(baseline_stage, {}).get(metric))
        # The baseline keeps DECIMALS decimals: round the current value the same way, or float
        # noise (0.333333 vs 0.3333333) would count as a change in the sign-flip test.
        b = round_value(after.metrics.get(stage, {}).get(metric))
        if a is not None and b is not None:
            pairs.append((qid, a, b))
    where = where_label(baseline_stage, stage, budget.selection)
    if not pairs:
        return incomparable(f"no query to compare for {metric} [{where}]")

    def within(ids: Sequence[str], side: Snapshot, other: Snapshot) -> list[str]:
        """Those of ``ids`` in the budget's selection (as ``side``, else ``other``, has them)."""
        return [
            q
            for q in ids
            if (found := side.queries.get(q) or other.queries.get(q)) is not None
            and selected(found)
        ]

    left_out = tuple(
        LeftOut.of(reason, ids)
        for reason, ids in (
            ("added", within(added, current, baseline)),
            ("removed", within(removed, baseline, current)),
            ("changed", within(changed, current, baseline)),
        )
        if ids
    )
    return Paired(stage, pairs, note, where, baseline_stage, left_out)


def where_label(baseline_stage: str, stage: str, selection: Selection) -> str:
    """``stage=reranker split=overall``; when two stages are compared, ``final stage:
    reranker in the baseline, retriever now; split=overall``."""
    scope = Selection(None, selection.split or "overall", selection.slice).label()
    change = stage_change(baseline_stage, stage)
    return f"{change}; {scope}" if change else f"stage={stage} {scope}"
