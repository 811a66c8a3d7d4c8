"""Re-scoring stored rankings against new labels (``--retrieval-baseline-mode=rescore``).

A baseline (schema version 3) keeps each query's whole document ranking as it was scored (and
the ids as returned where they repeated), the judgments it was scored with and a hash of the
query's text. When the golden set has changed only in its judgments (labels added from a
worksheet, say), the baseline's rankings are still the rankings of the same queries: scoring
them, and this run's, against the *current* judgments compares the two runs on equal footing.
Both sides are re-scored from their stored rankings with the one
:func:`~pytest_retrieval.scoring.evaluate.evaluate` and the run's one
:class:`~pytest_retrieval.scoring.evaluate.Conventions` (its duplicate groups included), so a query
whose ranking did not move gets the same value on both sides, exactly what a fresh baseline
would have given. A ranking stored with repeated ids (kept as returned, a live retriever's) is
scored by the repeated-id rule of a live run, each id at its first rank.

What cannot be re-scored is refused by name (:func:`why_not_rescorable`): a version 1
baseline; a baseline of several runs (it keeps one run's rankings beside the means of all); a
metric that reads past the depth a version 2 baseline cut its rankings at (``map``, ``ndcg``,
``mrr``, ``r_precision``) when a stored ranking reaches that cut; ``abstain_rate`` and
``answer_rate`` (they read the retriever's scores, which a baseline does not store);
``forbidden@K`` and ``stale@K`` (they read the forbidden and stale documents of the golden set
and corpus the run had, which a baseline does not store); a run
scored per duplicate group when those groups are not the ones at hand (a snapshot records
their fingerprint, not the groups).

A query whose text, context, split or slices changed is not the same query any more: it is
left out, as the intersect mode does. Added and removed queries are left out too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..scoring.dedup import groups_fingerprint, recorded_groups
from ..scoring.evaluate import Conventions, evaluate
from ..scoring.metrics import MetricSpec
from .snapshot import QuerySnapshot, Snapshot, stored_cut


@dataclass(frozen=True, slots=True)
class Rescored:
    """Two snapshots re-scored on the same labels, over the queries they share."""

    baseline: Snapshot
    current: Snapshot
    #: Shared queries left out because their text, context, split or slices changed.
    changed: tuple[str, ...]
    #: Shared queries whose judgments changed (re-scored).
    relabelled: tuple[str, ...]


def why_not_rescorable(
    baseline: Snapshot, current: Snapshot, conventions: Conventions, *, metric: str | None = None
) -> str | None:
    """Why the two snapshots cannot be re-scored on ``metric`` with ``conventions`` (a
    message), or None when they can."""
    spec = MetricSpec.parse(metric) if metric is not None else None
    for what, snapshot in (("the baseline", baseline), ("this run's snapshot", current)):
        if snapshot.n_runs > 1:
            return (
                f"{what} holds the means of {snapshot.n_runs} runs of the retriever "
                "(retrieval_baseline_runs) and one run's rankings, so it cannot be re-scored "
                "as its values were scored; compare the unchanged queries with "
                "--retrieval-baseline-mode=intersect, or refresh the baseline now that the "
                "labels changed (--retrieval-update-baseline)"
            )
        if snapshot.schema_version < 2 or any(
            q.judgments is None or q.text is None for q in snapshot.queries.values()
        ):
            return (
                f"{what} has schema version {snapshot.schema_version}, which stores neither the "
                "labels nor the rankings past the top 10, so it cannot be re-scored; refresh "
                "the baseline once (--retrieval-update-baseline): later label changes can then "
                "be re-scored"
            )
        cut = stored_cut(snapshot)
        if spec is not None and cut is not None and (spec.k is None or spec.k > cut):
            reached = sum(
                1 for q in snapshot.queries.values() if any(len(t) >= cut for t in q.top.values())
            )
            if reached:
                return (
                    f"{what} (schema version {snapshot.schema_version}) stores each ranking cut "
                    f"at the retrieval depth ({cut}), and {metric} reads "
                    + ("the whole ranking" if spec.k is None else f"the top {spec.k}")
                    + f": {reached} of its rankings reach the cut, so they cannot be re-scored "
                    "exactly; refresh the baseline once (--retrieval-update-baseline): a "
                    "baseline written now keeps whole rankings, and later label changes "
                    "re-score exactly"
                )
    if spec is not None and spec.metric.source == "scores":
        return (
            f"{metric} is measured on the retriever's scores, which a baseline does not store, "
            "so it cannot be re-scored; compare the unchanged queries with "
            "--retrieval-baseline-mode=intersect, or refresh the baseline"
        )
    if spec is not None and spec.metric.source == "access":
        return (
            f"{metric} is counted from the forbidden and stale documents of the golden set and "
            "the corpus as they were, which a baseline does not store, so it cannot be "
            "re-scored; compare the unchanged queries with --retrieval-baseline-mode=intersect, "
            "or refresh the baseline"
        )
    recorded = recorded_groups(current.settings.get("dedup"))
    given = groups_fingerprint(conventions.duplicates)
    if recorded != given:
        named = current.settings.get("dedup")
        if given is None:
            return (
                f"the run was scored per duplicate group (dedup {named!r}), and those groups "
                "are not at hand (a snapshot records only their fingerprint), so its rankings "
                "cannot be re-scored as it was scored; pass the groups (pytest-retrieval "
                "compare/gate --duplicates FILE)"
            )
        return (
            f"the duplicate groups at hand (fingerprint {given}) are not the ones the run was "
            f"scored with (dedup {named!r}); pass the run's own groups"
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
        context=query.context,
    )


def _values(
    snapshot: Snapshot,
    ids: Sequence[str],
    judgments: Mapping[str, Mapping[str, int]],
    metrics: Sequence[str],
    conventions: Conventions,
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
            run, {qid: judgments[qid] for qid in ids}, metrics, conventions=conventions, stage=stage
        )
        per_query = evaluation.per_query
        for qid in ids:
            out[qid][stage] = per_query[qid]
    return out


def rescore(
    baseline: Snapshot, current: Snapshot, metrics: Sequence[str], conventions: Conventions
) -> Rescored:
    """Both snapshots' stored rankings scored on ``metrics`` against the current judgments,
    with ``conventions``: the session's, or those the current snapshot recorded (the
    comparison has already checked that the baseline recorded the same).

    Call :func:`why_not_rescorable` first.
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
    # Stored rankings with repeats are a live retriever's, scored by its rule (a session from
    # run files refuses repeats in its own rankings, never in a baseline's stored ones).
    conventions = replace(conventions, repeated_ids="best_rank")
    min_grade = conventions.min_grade
    snapshots = []
    for snapshot in (baseline, current):
        values = _values(snapshot, kept, judgments, names, conventions)
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
