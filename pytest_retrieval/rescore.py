"""Re-scoring stored rankings against new labels (``--retrieval-baseline-mode=rescore``).

A baseline (schema version 2) keeps each query's ranking to the retrieval depth, the judgments
it was scored with and a hash of the query's text. When the golden set has changed only in its
judgments (labels added from a worksheet, say), the baseline's rankings are still the rankings
of the same queries: scoring them, and this run's, against the *current* judgments compares
the two runs on equal footing. Both sides are re-scored from their stored rankings with the one
:func:`~pytest_retrieval.evaluate.evaluate`, so a query whose ranking did not move gets the same
value on both sides, exactly what a fresh baseline would have given.

A query whose text, split or slices changed is not the same query any more: it is left out, as
the intersect mode does. Added and removed queries are left out too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .baseline import QuerySnapshot, Snapshot
from .evaluate import evaluate


@dataclass(frozen=True, slots=True)
class Rescored:
    """Two snapshots re-scored on the same labels, over the queries they share."""

    baseline: Snapshot
    current: Snapshot
    #: Shared queries left out because their text, split or slices changed.
    changed: tuple[str, ...]
    #: Shared queries whose judgments changed (re-scored).
    relabelled: tuple[str, ...]


def why_not_rescorable(baseline: Snapshot, current: Snapshot) -> str | None:
    """Why the two snapshots cannot be re-scored (a message), or None when they can."""
    for what, snapshot in (("the baseline", baseline), ("this run's snapshot", current)):
        if snapshot.schema_version < 2 or any(
            q.judgments is None or q.text is None for q in snapshot.queries.values()
        ):
            return (
                f"{what} has schema version {snapshot.schema_version}, which stores neither the "
                "labels nor the rankings past the top 10, so it cannot be re-scored; refresh "
                "the baseline once (--retrieval-update-baseline): later label changes can then "
                "be re-scored"
            )
    return None


def _rescored_query(
    query: QuerySnapshot,
    judgments: Mapping[str, int],
    labels: str,
    values: Mapping[str, Mapping[str, float | None]],
    min_grade: int,
) -> QuerySnapshot:
    relevant = [d for d, g in judgments.items() if g >= min_grade]
    ranks: dict[str, dict[str, int | None]] = {}
    for stage, ranking in query.top.items():
        first: dict[str, int] = {}
        for rank, doc in enumerate(ranking, start=1):
            first.setdefault(doc, rank)
        ranks[stage] = {doc: first.get(doc) for doc in relevant}
    return QuerySnapshot(
        split=query.split,
        slices=query.slices,
        labels=labels,
        metrics=values,
        relevant_ranks=ranks,
        top=query.top,
        judgments=dict(judgments),
        text=query.text,
        returned=query.returned,
    )


def _values(
    snapshot: Snapshot,
    ids: Sequence[str],
    judgments: Mapping[str, Mapping[str, int]],
    metrics: Sequence[str],
    settings: Mapping[str, object],
) -> dict[str, dict[str, dict[str, float | None]]]:
    """qid -> stage -> metric -> value of ``snapshot``'s stored rankings on ``judgments``."""
    out: dict[str, dict[str, dict[str, float | None]]] = {qid: {} for qid in ids}
    for stage in snapshot.stages:
        # The ids as returned where they repeated (chunks of one document): the one
        # repeated-id rule of evaluate re-scores them as the run was scored.
        run = {
            qid: list(
                snapshot.queries[qid].returned.get(stage)
                or snapshot.queries[qid].top.get(stage, ())
            )
            for qid in ids
        }
        evaluation = evaluate(
            run,
            {qid: judgments[qid] for qid in ids},
            metrics,
            gain=settings.get("gain", "exponential"),  # type: ignore[arg-type]
            min_grade=settings.get("min_grade", 1),  # type: ignore[arg-type]
            no_relevant=settings.get("no_relevant", "skip"),  # type: ignore[arg-type]
            unjudged=settings.get("unjudged", "nonrelevant"),  # type: ignore[arg-type]
            cutoff_unit=settings.get("cutoff_unit", "documents"),  # type: ignore[arg-type]
        )
        per_query = evaluation.per_query
        for qid in ids:
            out[qid][stage] = per_query[qid]
    return out


def rescore(baseline: Snapshot, current: Snapshot, metrics: Sequence[str]) -> Rescored:
    """Both snapshots' stored rankings scored on ``metrics`` against the current judgments.

    Call :func:`why_not_rescorable` first. The settings that change numbers are the current
    snapshot's (the comparison has already checked they equal the baseline's).
    """
    shared = sorted(set(baseline.queries) & set(current.queries))
    changed: list[str] = []
    relabelled: list[str] = []
    kept: list[str] = []
    for qid in shared:
        before, after = baseline.queries[qid], current.queries[qid]
        if (before.text, before.split, before.slices) != (after.text, after.split, after.slices):
            changed.append(qid)
            continue
        kept.append(qid)
        if dict(before.judgments or {}) != dict(after.judgments or {}):
            relabelled.append(qid)
    judgments = {qid: dict(current.queries[qid].judgments or {}) for qid in kept}
    names = list(dict.fromkeys(metrics))
    settings = current.settings
    min_grade = int(settings.get("min_grade", 1))
    snapshots = []
    for snapshot in (baseline, current):
        values = _values(snapshot, kept, judgments, names, settings)
        queries = {}
        for qid in kept:
            query = snapshot.queries[qid]
            labels = current.queries[qid].labels
            queries[qid] = _rescored_query(query, judgments[qid], labels, values[qid], min_grade)
        snapshots.append(
            Snapshot(
                fingerprint=current.fingerprint,
                settings=snapshot.settings,
                stages=snapshot.stages,
                metrics=tuple(names),
                queries=queries,
                heldout=snapshot.heldout,
                plugin_version=snapshot.plugin_version,
                created=snapshot.created,
                index_version=snapshot.index_version,
                schema_version=snapshot.schema_version,
            )
        )
    return Rescored(snapshots[0], snapshots[1], tuple(changed), tuple(relabelled))
