"""A run's summary, as every report shows it: the table of scores, the latencies, the depth.

The table has one row per configured metric (at each K) and one column per selection:
``overall``, each slice, and the held-out split when it is unsealed (its aggregates only). A
metric that a gate would refuse at a stage (:func:`.shortrankings.depth_problem`: every ranking
shorter than its K) shows no number (:func:`shown_means`), so no cell prints a number a gate
refuses. Latencies are the p50 and p95 of one stage over the queries that were called (cached
queries have none). :func:`depth_facts` says how deep the retriever was asked and why.

Each function takes the facts it reads (an evaluation, the golden set and its held-out
:class:`~pytest_retrieval.golden.scope.Scope`, the run's outcomes and depth plan), never a session.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..gates.gate import Selection
from ..golden.scope import Scope
from ..run.retriever import RETRIEVER_STAGE
from ..scoring.metrics import MetricSpec

if TYPE_CHECKING:
    from ..golden.model import GoldenSet, Query
    from ..run.depthplan import DepthPlan
    from ..run.retriever import QueryOutcome
    from ..run.shortrankings import RankedRun
    from ..scoring.evaluate import Evaluation


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


def columns(golden: GoldenSet, scope: Scope) -> list[tuple[str, Selection]]:
    """The summary table's columns: overall, each slice, and held-out when unsealed."""
    visible = [q for q in golden if scope.visible(q)]
    slices = sorted({s for q in visible for s in q.slices})
    cols = [("overall", Selection())]
    cols += [(name, Selection(slice=name)) for name in slices]
    if scope.unsealed and len(visible) < len(golden):
        cols.append((scope.heldout, Selection(split=scope.heldout)))
    return cols


def refused(run: RankedRun | None, stage: str, specs: Iterable[MetricSpec]) -> frozenset[str]:
    """The metrics of ``specs`` a gate would refuse at ``stage`` of ``run`` (every ranking
    shorter than their K: :func:`.shortrankings.depth_problem`); none without a run."""
    from ..run.shortrankings import Measured, depth_problem
    from ..scoring.evaluate import measured_unit

    if run is None:
        return frozenset()
    measured: Measured = {}
    wanted = tuple(specs)
    # Whether a metric is refused depends on its K and on what its K counts, not on the
    # metric: one check per (unit, K).
    unit = run.cutoff_unit
    first: dict[tuple[str, int], MetricSpec] = {}
    for spec in wanted:
        if spec.k is not None:
            first.setdefault((measured_unit(spec, unit), spec.k), spec)
    refused_keys = {
        key for key, spec in first.items() if depth_problem(run, spec, stage, measured) is not None
    }
    return frozenset(
        str(s) for s in wanted if s.k is not None and (measured_unit(s, unit), s.k) in refused_keys
    )


def shown_means(evaluation: Evaluation, refused: Collection[str]) -> dict[str, float | None]:
    """The means a report shows: ``evaluation``'s, with None for the ``refused`` metrics
    (:func:`refused`)."""
    means = evaluation.means
    for name in refused:
        if name in means:
            means[name] = None
    return means


def table(
    evaluation: Evaluation,
    columns: Iterable[tuple[str, Iterable[Query]]],
    specs: Iterable[MetricSpec],
    refused: Collection[str] = frozenset(),
) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows) of the summary: each metric of ``specs`` at each K (one row each) by
    ``columns`` (overall, the slices, held-out when unsealed: :func:`columns` and their
    queries), from ``evaluation``; no number for the ``refused`` metrics."""
    headers = ["metric"]
    subsets = []
    for label, queries in columns:
        sub = evaluation.restrict(q.id for q in queries)
        headers.append(f"{label} (n={sub.evaluated})")
        subsets.append(shown_means(sub, refused))
    rows = []
    for spec in sorted(specs, key=lambda s: s.sort_key):
        name = str(spec)
        rows.append([name, *(means[name] for means in subsets)])
    return headers, rows


def depth_facts(
    plan: DepthPlan | None, outcomes: Mapping[str, QueryOutcome] | None
) -> dict[str, Any] | None:
    """How deep the retriever was asked (the depth ``plan``) and what came of it in the run
    (``outcomes``): how many queries were asked again deeper, the deepest call, how many
    rankings collapsed (ids repeated, chunks of one document); None without a live run."""
    if plan is None or not outcomes:
        return None
    ran = [o for o in outcomes.values() if RETRIEVER_STAGE in o.rankings and not o.error]
    again = [o.asked for o in ran if o.asked is not None and o.asked > plan.first]
    return {
        **plan.to_dict(),
        "queries": len(ran),
        "asked_again": len(again),
        "deepest": max(again, default=plan.first),
        "collapsed": sum(1 for o in ran if RETRIEVER_STAGE in o.returned),
    }


def depth_is_news(facts: Mapping[str, Any], configured: int) -> bool:
    """Whether the depth is worth a line in the compact summary (and a block in the artifact):
    the retriever was asked deeper than the ``configured`` depth, a query was asked again, or
    results collapsed into fewer documents."""
    return bool(facts["asked_again"] or facts["collapsed"] or facts["first"] != configured)


def depth_line(
    facts: Mapping[str, Any] | None, configured: int, *, full: bool = False
) -> str | None:
    """``depth: 10 results asked per query (the largest cutoff); 3 of 36 asked again, up to 40,
    to fill 10 documents`` from :func:`depth_facts`: always with ``full``, otherwise when it is
    news (:func:`depth_is_news`)."""
    if facts is None or not (full or depth_is_news(facts, configured)):
        return None
    if not facts["passed"]:
        built = f" ({facts['built']} results)" if facts["built"] is not None else ""
        return f"depth: cannot be handed to this retriever: it returns what it was built for{built}"
    text = f"depth: {facts['first']} results asked per query ({facts['reason']})"
    if facts["asked_again"]:
        text += (
            f"; {facts['asked_again']} of {facts['queries']} asked again, up to "
            f"{facts['deepest']}, to fill {facts['fill']} documents"
        )
    elif facts["fill"] is not None and facts["collapsed"]:
        text += (
            f"; results collapsed into documents in {facts['collapsed']} rankings, none needed "
            "asking again"
        )
    return text
