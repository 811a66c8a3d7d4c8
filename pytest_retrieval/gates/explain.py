"""Why a score is low: the worst queries of a selection, with what they missed.

Pure functions over a golden set's queries and an evaluation; the session passes its rankings
and its held-out redaction rule in, so that nothing here decides what may be shown.
:func:`explain_score` is the explanation under a failed gate: what was scored, the queries that
failed in the retriever, the worst queries (or, for ``abstain_rate`` / ``answer_rate``, the
queries on the wrong side of the score floor).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..golden.model import Query
from ..golden.scope import DETAILS_HINT
from ..scoring.evaluate import Evaluation, ranked_within
from ..scoring.metrics import MetricSpec
from ..text import for_terminal

if TYPE_CHECKING:
    from ..golden.access import Access, Kind
    from ..run.retriever import QueryOutcome

#: How many returned ids a worst-query line shows.
RETURNED_SHOWN = 3


@dataclass(frozen=True, slots=True)
class WorstQuery:
    """One of the lowest-scoring queries, for failure messages."""

    query_id: str
    text: str | None
    value: float
    missed: tuple[str, ...]
    first_relevant_rank: int | None
    #: The top of what the retriever returned (what it found instead).
    returned: tuple[str, ...] = ()

    def describe(self, spec: MetricSpec) -> str:
        """One line: id, text, value, missed relevant ids and where the first relevant sat."""
        text = "" if self.text is None else f" {_clip(self.text, 60)!r}"
        first = (
            f"first relevant at rank {self.first_relevant_rank}"
            if self.first_relevant_rank is not None
            else "no relevant document retrieved"
        )
        # User ids are escaped (for_terminal): one with a newline cannot start a log line.
        missed = f"; missed {', '.join(map(for_terminal, self.missed[:5]))}" if self.missed else ""
        if len(self.missed) > 5:
            missed += f" (+{len(self.missed) - 5} more)"
        returned = (
            f"; returned {', '.join(map(for_terminal, self.returned))}"
            if self.returned
            else "; returned nothing"
        )
        return (
            f"{for_terminal(self.query_id)}{text}: {spec} = {self.value:.4f}{missed}; {first}"
            f"{returned}"
        )


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def worst_queries(
    spec: MetricSpec,
    queries: Sequence[Query],
    evaluation: Evaluation,
    ranking: Callable[[str], tuple[str, ...]],
    *,
    redacted: Callable[[Query], bool],
    min_grade: int,
    limit: int,
    returned: Callable[[str], tuple[str, ...] | None] = lambda qid: None,
    cutoff_unit: str = "documents",
) -> list[WorstQuery]:
    """The ``limit`` lowest-scoring queries (never a perfect one, never a redacted one).

    What a query missed is what its metric looked at: the top K in ``cutoff_unit``
    (:func:`.scoring.evaluate.ranked_within`: under ``"results"`` the documents within the
    first K results as returned, ``returned`` giving them where ids repeated), the top R for
    R-precision, else the whole document ranking; the first relevant rank is in the same
    unit (a result position for a metric at K under ``"results"``)."""
    column = evaluation.columns[str(spec)]
    by_id = {q.id: q for q in queries}
    scored = [
        (value, qid)
        for qid, value in zip(evaluation.query_ids, column)
        # A perfect query is never among the "worst", however few queries there are.
        if value is not None and value < 1.0 and not redacted(by_id[qid])
    ]
    scored.sort()
    worst = []
    for value, qid in scored[:limit]:
        query = by_id[qid]
        ranked = ranking(qid)
        relevant = [d for d, g in query.judgments.items() if g >= min_grade]
        # What the metric looked at: the top K, the top R for R-precision, else everything.
        depth = len(relevant) if spec.name == "r_precision" else spec.k
        unit = cutoff_unit if spec.k is not None else "documents"
        as_returned = returned(qid) if unit == "results" else None
        if depth is None:
            shown = set(ranked)
        else:
            shown = {d for _rank, d in ranked_within(ranked, as_returned, depth, unit)}
        missed = tuple(d for d in relevant if d not in shown)
        relevant_set = set(relevant)
        first = next((i for i, d in enumerate(as_returned or ranked, 1) if d in relevant_set), None)
        # The top shown in the unit the first relevant rank counts: the results as returned
        # under "results" (repeats and all), else the documents.
        top = (as_returned or ranked)[:RETURNED_SHOWN]
        worst.append(WorstQuery(qid, query.text, value, missed, first, tuple(top)))
    return worst


def explain_score(
    spec: MetricSpec,
    stage: str,
    queries: Sequence[Query],
    evaluation: Evaluation,
    outcomes: Mapping[str, QueryOutcome],
    *,
    redacted: Callable[[Query], bool],
    limit: int,
) -> list[str]:
    """The lines under a score: how many queries were scored, the failed and worst ones.

    ``outcomes`` is the run (query id → outcome), ``redacted`` the session's held-out rule,
    ``limit`` how many queries a list shows (``retrieval_worst``). What was relevant, the
    duplicate groups and the stage's score floor are the evaluation's own conventions
    (:attr:`.Evaluation.conventions`), so the explanation can never speak of other ones.
    """
    conventions = evaluation.conventions
    duplicates = conventions.duplicates
    n = evaluation.counts[str(spec)]
    if spec.name == "abstain_rate":
        lines = [f"no-answer queries scored: {n} (abstain_rate is defined on them only)"]
    elif spec.name == "answer_rate":
        lines = [f"answerable queries scored: {n} (answer_rate is defined on them only)"]
    elif spec.metric.source == "access":
        # A leak metric scores every query, one with no relevant document too: no "skipped".
        lines = [f"queries scored: {n} (every query: {spec.name}@K needs no relevant document)"]
    else:
        lines = [
            f"queries scored: {n}, skipped (no relevant document): "
            f"{len(evaluation.skipped_no_relevant)}"
        ]
    if duplicates is not None:
        lines.append(f"scored per duplicate group: {duplicates.describe()}")
    by_id = {q.id: q for q in queries}
    failed = [o for o in outcomes.values() if o.error is not None and o.query_id in by_id]
    if failed:
        # A held-out query's id is a per-query detail too: counted, never named.
        named = [o.query_id for o in failed if not redacted(by_id[o.query_id])]
        hidden = len(failed) - len(named)
        lines.append(
            f"{len(failed)} quer{'y' if len(failed) == 1 else 'ies'} failed in the retriever "
            "and scored 0"
            + (": " + ", ".join(named[:10]) if named else "")
            + (f" ({hidden} held-out, not named)" if hidden else "")
        )

    def ranking(qid: str) -> tuple[str, ...]:
        outcome = outcomes.get(qid)
        return outcome.rankings.get(stage, ()) if outcome else ()

    def returned(qid: str) -> tuple[str, ...] | None:
        outcome = outcomes.get(qid)
        return outcome.returned.get(stage) if outcome else None

    worst = (
        []
        if spec.metric.source != "judgments"
        else worst_queries(
            spec,
            queries,
            evaluation,
            ranking,
            redacted=redacted,
            min_grade=conventions.min_grade,
            limit=limit,
            returned=returned,
            cutoff_unit=conventions.cutoff_unit,
        )
    )
    if spec.metric.source == "scores":
        lines.extend(
            _explain_abstention(
                spec,
                stage,
                queries,
                evaluation,
                outcomes,
                redacted=redacted,
                limit=limit,
                floor=conventions.floor_for(stage),
            )
        )
    if worst:
        lines.append(f"worst {len(worst)} quer{'y' if len(worst) == 1 else 'ies'}:")
        lines.extend(f"  {w.describe(spec)}" for w in worst)
    if any(redacted(q) for q in queries):
        lines.append(f"held-out per-query details are hidden ({DETAILS_HINT})")
    return lines


def _explain_abstention(
    spec: MetricSpec,
    stage: str,
    queries: Sequence[Query],
    evaluation: Evaluation,
    outcomes: Mapping[str, QueryOutcome],
    *,
    redacted: Callable[[Query], bool],
    limit: int,
    floor: float | None,
) -> list[str]:
    """The queries that scored 0: no-answer queries answered, answerable ones abstained."""
    from ..scoring.abstention import describe_floor, top_score

    column = evaluation.columns[str(spec)]
    by_id = {q.id: q for q in queries}
    zero = [
        qid
        for qid, value in zip(evaluation.query_ids, column)
        if value == 0.0 and not redacted(by_id[qid])
    ]
    shown_floor = describe_floor(floor)
    what = "answered anyway" if spec.name == "abstain_rate" else "abstained"
    lines = [
        f"score floor {shown_floor}: {len(zero)} quer{'y' if len(zero) == 1 else 'ies'} {what}"
    ]
    for qid in zero[:limit]:
        outcome = outcomes.get(qid)
        ranking = outcome.rankings.get(stage, ()) if outcome else ()
        top = top_score(outcome.scores.get(stage)) if outcome else None
        shown = f"top score {top:.4g}" if top is not None else "no score"
        first = f", top result {for_terminal(ranking[0])}" if ranking else ", nothing returned"
        lines.append(f"  {for_terminal(qid)}: {shown}{first}")
    return lines


#: How many leaks a failed leak gate lists (the JSON artifact's per-query rows hold the rest).
LEAKS_SHOWN = 20


@dataclass(frozen=True, slots=True)
class Leak:
    """One forbidden or stale document in one query's ranking at one stage: the facts the
    zero-tolerance gate's message, the summary's leak table and the reports' leak rows all
    read (:func:`find_leaks`, computed once)."""

    query_id: str
    stage: str
    metric: str  # "forbidden" or "stale"
    rank: int
    doc: str
    kind: Kind
    reason: str
    cached: bool
    redacted: bool

    def to_dict(self) -> dict[str, object]:
        """The artifact's entry (``queries[].leaks``): a redacted query has no row to hold it."""
        return {
            "stage": self.stage,
            "metric": self.metric,
            "rank": self.rank,
            "doc": self.doc,
            "kind": self.kind,
            "reason": self.reason,
            "cached": self.cached,
        }


def find_leaks(
    metric: str,
    k: int,
    stage: str,
    queries: Sequence[Query],
    outcomes: Mapping[str, QueryOutcome],
    access: Access,
    *,
    redacted: Callable[[Query], bool],
    cached: Callable[[QueryOutcome], bool],
    cutoff_unit: str = "documents",
) -> list[Leak]:
    """Every ``metric`` (``forbidden`` or ``stale``) document in the top ``k`` of ``queries``'
    rankings at ``stage``, in query order then rank, each with why it counts
    (:meth:`.access.Access.reason`), whether its ranking came from the cache and whether the
    query is redacted (held out: counted, never named). The top ``k`` and the rank are in
    ``cutoff_unit`` (:func:`.scoring.evaluate.ranked_within`, what ``forbidden@K`` counts):
    under ``"results"`` the rank is the result's position as returned."""
    found: list[Leak] = []
    for query in queries:
        outcome = outcomes.get(query.id)
        if outcome is None:
            continue
        hidden = redacted(query)
        from_cache: bool | None = None
        within = ranked_within(
            outcome.rankings.get(stage, ()), outcome.returned.get(stage), k, cutoff_unit
        )
        for rank, doc in within:
            why = access.reason(metric, query.id, doc)
            if why is None:
                continue
            if from_cache is None:
                from_cache = cached(outcome)
            found.append(
                Leak(query.id, stage, metric, rank, doc, why.kind, why.text, from_cache, hidden)
            )
    return found


def explain_leaks(
    spec: MetricSpec,
    stage: str,
    queries: Sequence[Query],
    leaks: Sequence[Leak],
) -> list[str]:
    """The lines naming every forbidden (or stale) document of ``leaks`` (:func:`find_leaks`
    at ``spec``'s K and ``stage``): the query, the document, its rank, the stage, whether the
    ranking came from the cache, and why the document counts. Held-out queries are counted,
    never named."""
    assert spec.k is not None
    what = "forbidden" if spec.name == "forbidden" else "stale"
    if not leaks:
        return [f"no {what} document in the top {spec.k} of any query [{stage}]"]
    by_id = {q.id: q for q in queries}
    shown: list[str] = []
    for leak in leaks:
        if leak.redacted:
            continue
        tenant = by_id[leak.query_id].context.get("tenant")
        scope = f" (tenant {for_terminal(str(tenant))})" if isinstance(tenant, str) else ""
        origin = ", from the cache" if leak.cached else ""
        shown.append(
            f"  query {for_terminal(leak.query_id)}{scope}: {for_terminal(leak.doc)} at rank "
            f"{leak.rank} [{stage}{origin}]: {for_terminal(leak.reason)}"
        )
    hidden = len(leaks) - len(shown)
    count = len(leaks)
    leaking = len({leak.query_id for leak in leaks})
    lines = [
        f"{count} {what} document{'s' if count != 1 else ''} in the top {spec.k} of "
        f"{leaking} quer{'y' if leaking == 1 else 'ies'}:"
    ]
    lines.extend(shown[:LEAKS_SHOWN])
    if len(shown) > LEAKS_SHOWN:
        lines.append(f"  ... and {len(shown) - LEAKS_SHOWN} more")
    if hidden:
        lines.append(f"  and {hidden} in held-out queries, not named ({DETAILS_HINT})")
    return lines
