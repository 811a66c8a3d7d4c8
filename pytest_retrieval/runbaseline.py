"""This run and its baseline: the run as a snapshot, the baseline it writes, the regression family.

The session keeps what is computed once (a snapshot per metric list, the regression family) and
records each regression outcome; what goes into them is decided here:

* :func:`run_snapshot`: per-query values, relevant ranks and top ids of every non-held-out
  query, per stage, with the settings a baseline must share to be comparable
  (:func:`snapshot_settings`); held-out queries only by their means, and only when unsealed.
* :func:`baseline_snapshot`: what ``--retrieval-update-baseline`` writes: this run's snapshot,
  or with extra runs (``retrieval_baseline_runs``) the per-query means and spread over them all.
* :func:`regression_family`: every declared budget of a session adjusted together, with the
  comparison options of its settings (``CompareOptions.from_settings``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from .metrics import MetricSpec

if TYPE_CHECKING:
    from .baseline import Snapshot
    from .declared import Budget
    from .regression import Family
    from .regression_family import Against
    from .retriever import QueryOutcome
    from .session import RetrievalSession
    from .settings import Settings


def snapshot_specs(
    settings: Settings, budgets: Sequence[Budget], extra: Sequence[MetricSpec] = ()
) -> tuple[MetricSpec, ...]:
    """The metrics a snapshot holds: the configured ones, every budget's, then ``extra``."""
    budgeted = [b.spec for b in budgets]
    return tuple(dict.fromkeys([*settings.metric_specs, *budgeted, *extra]))


def run_snapshot(session: RetrievalSession, specs: Sequence[MetricSpec]) -> Snapshot:
    """Per-query values, relevant ranks and top ids of every non-held-out query, per stage.

    Held-out queries never enter with per-query detail; when the split is unsealed only its
    means are kept.
    """
    from .baseline import build_snapshot

    settings = session.settings
    stages = session.stages
    held = (
        [q.id for q in session.golden if q.split == session.heldout_name]
        if session.unsealed
        else []
    )
    outcomes = session.outcomes or {}
    return build_snapshot(
        session.visible_golden(),
        {stage: session.evaluation(stage, specs) for stage in stages},
        session.ranking,
        metric_names=[str(s) for s in specs],
        settings=snapshot_settings(session),
        heldout_ids=held,
        index_version=settings.index_version,
        returned_of=partial(_returned, outcomes),
    )


def _returned(outcomes: Mapping[str, QueryOutcome], qid: str, stage: str) -> tuple[str, ...] | None:
    """The ids of one query's stage as returned, where they differ from its ranking."""
    outcome = outcomes.get(qid)
    return outcome.returned.get(stage) if outcome is not None else None


def snapshot_settings(session: RetrievalSession) -> dict[str, Any]:
    """The settings a baseline must share to be comparable; with duplicate groups, which
    groups (their fingerprint), since other groups give other numbers."""
    settings = {**session.settings.affecting_numbers(), "depth": session.effective_depth}
    if session.duplicates is not None:
        settings["dedup"] = f"{settings.get('dedup', 'file')}:{session.duplicates.fingerprint}"
    return settings


def baseline_snapshot(session: RetrievalSession) -> Snapshot:
    """What ``--retrieval-update-baseline`` writes: this run's snapshot, or with extra runs
    (``retrieval_baseline_runs``) the per-query means and spread over all of them."""
    from .baseline import average_snapshots, build_snapshot

    first = session.snapshot()
    if not session.extra_runs:
        return first
    settings = session.settings
    specs = snapshot_specs(settings, session.budgets)
    runs = [first]
    for outcomes in session.extra_runs:
        # Scored as this run is (duplicate groups, score floor, unjudged documents included).
        per_stage = {stage: session.score_run(outcomes, stage, specs) for stage in first.stages}

        def ranking(qid: str, stage: str, outcomes: dict[str, QueryOutcome] = outcomes) -> Any:
            outcome = outcomes.get(qid)
            return outcome.rankings.get(stage, ()) if outcome else ()

        runs.append(
            build_snapshot(
                session.visible_golden(),
                per_stage,
                ranking,
                metric_names=list(first.metrics),
                settings=first.settings,
                returned_of=partial(_returned, outcomes),
            )
        )
    return average_snapshots(runs)


def failed_in_extra_runs(extra_runs: Sequence[Mapping[str, QueryOutcome]]) -> list[str]:
    """Ids of queries that failed in an extra baseline run."""
    return sorted({o.query_id for run in extra_runs for o in run.values() if o.error is not None})


def against(session: RetrievalSession, budget: Budget) -> Against | None:
    """What ``budget`` is compared with when its baseline comes from the run ledger (the
    merge-base's entry), or None for the session's baseline. A ledger baseline is re-scored
    under today's labels (:func:`.runledger.rescored`), so the queries both runs have are
    compared (intersect) whatever ``retrieval_baseline_mode`` says."""
    import dataclasses

    from .regression import CompareOptions
    from .regression_family import Against

    source = session.ledger_baseline_for(budget)
    if source is None:
        return None
    options = CompareOptions.from_settings(session.settings, conventions=session.conventions)
    options = dataclasses.replace(
        options, mode="intersect", refresh=source.refresh or options.refresh
    )
    return Against(source.snapshot, options, source.label)


def regression_family(session: RetrievalSession, *, baseline_path: str) -> Family:
    """Every declared budget of the session adjusted together (the session keeps the first),
    those compared with a ledger entry included (:func:`against`).

    Deterministic (same run, baseline, budgets and seed), so every xdist worker computes
    the same family and reads its own check from it.
    """
    from .regression import CompareOptions, family

    others = {b.name: a for b in session.budgets if (a := against(session, b)) is not None}
    return family(
        session.baseline,
        session.snapshot(),
        session.budgets,
        options=CompareOptions.from_settings(session.settings, conventions=session.conventions),
        baseline_path=baseline_path,
        against=others,
    )
