"""The session's summary, as every report shows it: the table of scores and the latencies.

The table has one row per configured metric (at each K) and one column per selection:
``overall``, each slice, and the held-out split when it is unsealed (its aggregates only).
Latencies are the p50 and p95 of one stage over the queries that were called (cached queries
have none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .gates import Selection

if TYPE_CHECKING:
    from .golden import GoldenSet
    from .retriever import QueryOutcome
    from .session import RetrievalSession


def latency_percentiles(
    outcomes: Mapping[str, QueryOutcome] | None, stage: str
) -> tuple[float, float] | None:
    """(p50, p95) latency in milliseconds of one stage, or None without a run."""
    if not outcomes:
        return None
    values = sorted(o.latency_ms[stage] for o in outcomes.values() if stage in o.latency_ms)
    if not values:
        return None

    def percentile(p: float) -> float:
        index = min(len(values) - 1, max(0, round(p * (len(values) - 1))))
        return values[index]

    return percentile(0.5), percentile(0.95)


def columns(golden: GoldenSet, heldout: str, *, unsealed: bool) -> list[tuple[str, Selection]]:
    """The summary table's columns: overall, each slice, and held-out when unsealed."""
    visible = [q for q in golden if q.split != heldout]
    slices = sorted({s for q in visible for s in q.slices})
    cols = [("overall", Selection())]
    cols += [(name, Selection(slice=name)) for name in slices]
    if unsealed and any(q.split == heldout for q in golden):
        cols.append((heldout, Selection(split=heldout)))
    return cols


def table(session: RetrievalSession, stage: str) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows) of the summary: each metric at each K by overall/slices/held-out."""
    specs = session.settings.metric_specs
    evaluation = session.evaluation(stage, specs)
    headers = ["metric"]
    subsets = []
    for label, selection in session.columns():
        queries = session.select(selection)
        sub = evaluation.restrict(q.id for q in queries)
        headers.append(f"{label} (n={sub.evaluated})")
        subsets.append(sub)
    rows = []
    for spec in sorted(specs, key=lambda s: s.sort_key):
        name = str(spec)
        rows.append([name, *(sub.means[name] for sub in subsets)])
    return headers, rows
