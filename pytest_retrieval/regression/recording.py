"""A run and its baseline: what a run's snapshot holds and records.

The session owns its snapshot (one per metric list), the baseline it writes and its regression
family (:meth:`~pytest_retrieval.session.session.RetrievalSession.snapshot`, ``baseline_snapshot``,
``regression_family``); what goes into them is decided here, from facts:

* :func:`snapshot_specs`: the metrics a snapshot holds (with :func:`leak_specs`: the
  forbidden@K / stale@K the run can measure, at every scored K);
* :func:`snapshot_settings`: the settings a baseline must share to be comparable (the depth,
  which duplicate groups);
* :func:`ranking_of`, :func:`returned_of`: a query's ranking and its ids as returned, from a
  run's outcomes; :func:`failed_in_extra_runs`.

The comparison options of every regression check of a session are
``CompareOptions.from_settings`` (:mod:`.regression_pairs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..scoring.metrics import MetricSpec

if TYPE_CHECKING:
    from ..gates.declared import Budget
    from ..run.retriever import QueryOutcome
    from ..scoring.dedup import DuplicateGroups
    from ..settings.resolve import Settings


def snapshot_specs(
    settings: Settings,
    budgets: Sequence[Budget],
    extra: Sequence[MetricSpec] = (),
    *,
    leaks: Sequence[MetricSpec] = (),
    gated: Sequence[MetricSpec] = (),
) -> tuple[MetricSpec, ...]:
    """The metrics a snapshot holds: the configured ones, every budget's, the leak metrics
    the run can measure (``leaks``, :func:`leak_specs`), every declared threshold's
    (``gated``: ``mrr >= 0.6`` is scored on the whole ranking, not the table's ``mrr@K``, so
    ``pytest-retrieval gate`` can judge it again from the artifact), then ``extra``."""
    budgeted = [b.spec for b in budgets]
    return tuple(dict.fromkeys([*settings.metric_specs, *budgeted, *leaks, *gated, *extra]))


def leak_specs(measurable: Iterable[str], cutoffs: Iterable[int]) -> tuple[MetricSpec, ...]:
    """``forbidden@K`` and ``stale@K`` at every scored cutoff, for those of the two the run can
    measure (``measurable``: the golden set lists forbidden documents or the corpus has
    access rules; the corpus marks documents superseded or retired). A baseline records them
    so a later budget on them (``stale@3 0.02``) has per-query values to pair with; one the run
    cannot measure is left out (a budget on it then meets the baseline's "has no stale@3")."""
    names = [name for name in ("forbidden", "stale") if name in set(measurable)]
    ks = sorted(set(cutoffs))
    return tuple(MetricSpec(name, k) for name in names for k in ks)


def returned_of(
    outcomes: Mapping[str, QueryOutcome], qid: str, stage: str
) -> tuple[str, ...] | None:
    """The ids of one query's stage as returned, where they differ from its ranking."""
    outcome = outcomes.get(qid)
    return outcome.returned.get(stage) if outcome is not None else None


def ranking_of(outcomes: Mapping[str, QueryOutcome], qid: str, stage: str) -> tuple[str, ...]:
    """One query's ranking at one stage of a run (empty where it has none)."""
    outcome = outcomes.get(qid)
    return outcome.rankings.get(stage, ()) if outcome else ()


def snapshot_settings(
    settings: Settings, *, depth: int, duplicates: DuplicateGroups | None = None
) -> dict[str, Any]:
    """The settings a baseline must share to be comparable: those that change a number, the
    retrieval ``depth`` (each ranking's documents); with ``duplicates``, which groups (their
    fingerprint), since other groups give other numbers."""
    recorded = {**settings.affecting_numbers(), "depth": depth}
    if duplicates is not None:
        recorded["dedup"] = f"{recorded.get('dedup', 'file')}:{duplicates.fingerprint}"
    return recorded


def failed_in_extra_runs(extra_runs: Sequence[Mapping[str, QueryOutcome]]) -> list[str]:
    """Ids of queries that failed in an extra baseline run."""
    return sorted({o.query_id for run in extra_runs for o in run.values() if o.error is not None})
