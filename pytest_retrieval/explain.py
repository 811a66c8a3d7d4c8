"""Why a score is low: the worst queries of a selection, with what they missed.

Pure functions over a golden set's queries and an evaluation; the session passes its rankings
and its held-out redaction rule in, so that nothing here decides what may be shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .evaluate import Evaluation
from .golden import Query
from .metrics import MetricSpec
from .text import for_terminal

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
) -> list[WorstQuery]:
    """The ``limit`` lowest-scoring queries (never a perfect one, never a redacted one)."""
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
        top = ranked if depth is None else ranked[:depth]
        shown = set(top)
        missed = tuple(d for d in relevant if d not in shown)
        relevant_set = set(relevant)
        first = next((i for i, d in enumerate(ranked, 1) if d in relevant_set), None)
        worst.append(WorstQuery(qid, query.text, value, missed, first, ranked[:RETURNED_SHOWN]))
    return worst
