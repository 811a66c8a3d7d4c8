"""The xdist payload: what a worker learned, as builtins, and the controller's merge.

:class:`Report` carries what workers learn (the run's per-query outcomes and the gate outcomes)
as builtins; :meth:`Report.merge` is idempotent and order-independent, so the controller can fold
worker payloads in any order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..gates.gate import GateOutcome
from ..regression.outcome import RegressionOutcome
from ..run.depthplan import DepthPlan
from ..run.determinism import DeterminismProbe
from ..run.retriever import QueryOutcome
from ..run.source import RunInfo
from ..verdict import Stop
from .session import RetrievalSession

#: The main run's outcomes, the determinism probe, and the extra runs of a multi-run baseline.
RunBundle = tuple[list[QueryOutcome], DeterminismProbe | None, list[list[QueryOutcome]]]


def outcome_to_dict(outcome: QueryOutcome) -> dict[str, Any]:
    """One query's outcome as builtins (the ids as returned, the depth asked and why asking
    deeper failed only where present)."""
    out: dict[str, Any] = {
        "query_id": outcome.query_id,
        "rankings": {stage: list(r) for stage, r in outcome.rankings.items()},
        "latency_ms": dict(outcome.latency_ms),
        "error": outcome.error,
        "error_type": outcome.error_type,
        "error_stage": outcome.error_stage,
        "scores": {stage: list(s) for stage, s in outcome.scores.items()},
    }
    if outcome.returned:
        out["returned"] = {stage: list(r) for stage, r in outcome.returned.items()}
    if outcome.asked is not None:
        out["asked"] = outcome.asked
    if outcome.deeper_error is not None:
        out["deeper_error"] = outcome.deeper_error
    return out


def outcome_from_dict(data: dict[str, Any]) -> QueryOutcome:
    """Inverse of :func:`outcome_to_dict`."""
    return QueryOutcome(
        query_id=data["query_id"],
        rankings={stage: tuple(r) for stage, r in data["rankings"].items()},
        latency_ms=dict(data["latency_ms"]),
        error=data["error"],
        error_type=data["error_type"],
        error_stage=data["error_stage"],
        scores={stage: tuple(s) for stage, s in data.get("scores", {}).items()},
        returned={stage: tuple(r) for stage, r in data.get("returned", {}).items()},
        asked=data.get("asked"),
        deeper_error=data.get("deeper_error"),
    )


def _gate_key(gate: dict[str, Any]) -> str:
    return json.dumps(gate, sort_keys=True, default=str)


@dataclass
class Report:
    """What one process learned: per-query outcomes (by query id), gate outcomes, and the name
    of the retriever that ran (only the worker that ran it knows it)."""

    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)
    gates: list[dict[str, Any]] = field(default_factory=list)
    regressions: list[dict[str, Any]] = field(default_factory=list)
    retriever_name: str | None = None
    depth_hint: str | None = None
    #: Where the run came from (:class:`~pytest_retrieval.run.source.RunInfo` as builtins); only
    #: the worker that ran the retriever knows it.
    run_info: dict[str, Any] | None = None
    probe: dict[str, Any] | None = None
    extra_runs: list[list[dict[str, Any]]] = field(default_factory=list)
    #: Why the run has no numbers (:class:`~pytest_retrieval.verdict.Stop` as builtins).
    stop: dict[str, Any] | None = None
    #: How deep the retriever was asked (:class:`~pytest_retrieval.run.depthplan.DepthPlan`).
    depth_plan: dict[str, Any] | None = None

    @classmethod
    def from_session(cls, session: RetrievalSession) -> Report:
        """The report of a session (builtins only)."""
        outcomes = {qid: outcome_to_dict(o) for qid, o in (session.outcomes or {}).items()}
        return cls(
            outcomes,
            [g.to_dict() for g in session.gate_outcomes],
            [r.to_dict() for r in session.regression_outcomes],
            session.retriever_name,
            session.depth_hint,
            session.run_info.to_dict() if session.run_info is not None else None,
            session.probe.to_dict() if session.probe is not None else None,
            [[outcome_to_dict(o) for o in run.values()] for run in session.extra_runs],
            session.stop.to_dict() if session.stop is not None else None,
            session.depth_plan.to_dict() if session.depth_plan is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """Builtins only (execnet sends no pickles); the per-query outcomes (of the run and of
        the extra runs) as one JSON text each, which :meth:`from_dict` reads back exactly.

        execnet's serializer walks every object in Python: a 3,000-query run's rankings took
        0.4 s of CPU to send and 0.3 s to receive, per worker; as one string (the C JSON
        encoder, ASCII-escaped so any id travels, NaN and infinities kept) about 0.07 s.
        """
        return {
            "outcomes": json.dumps(self.outcomes, separators=(",", ":")),
            "gates": self.gates,
            "regressions": self.regressions,
            "retriever_name": self.retriever_name,
            "depth_hint": self.depth_hint,
            "run_info": self.run_info,
            "probe": self.probe,
            "extra_runs": json.dumps(self.extra_runs, separators=(",", ":")),
            "stop": self.stop,
            "depth_plan": self.depth_plan,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Inverse of :meth:`to_dict`."""
        return cls(
            json.loads(data.get("outcomes", "{}")),
            list(data.get("gates", [])),
            list(data.get("regressions", [])),
            data.get("retriever_name"),
            data.get("depth_hint"),
            data.get("run_info"),
            data.get("probe"),
            json.loads(data.get("extra_runs", "[]")),
            data.get("stop"),
            data.get("depth_plan"),
        )

    def merge(self, other: Report) -> Report:
        """Union of two reports; idempotent and independent of order.

        Outcomes are keyed by query id (workers read the same cached run, so they agree; if they
        did not, the choice is deterministic). Gates are de-duplicated and sorted.
        """
        outcomes = dict(self.outcomes)
        for qid, outcome in other.outcomes.items():
            mine = outcomes.get(qid)
            # Equal outcomes (every worker reads the same stored run back) keep ``mine``, as
            # the comparison of their keys would, without encoding either.
            if mine is None or (outcome != mine and _gate_key(outcome) < _gate_key(mine)):
                outcomes[qid] = outcome
        gates = {_gate_key(g): g for g in [*self.gates, *other.gates]}
        ordered = [gates[key] for key in sorted(gates, key=lambda k: (gates[k]["nodeid"] or "", k))]
        regressions = {_gate_key(r): r for r in [*self.regressions, *other.regressions]}
        ordered_regressions = [
            regressions[key]
            for key in sorted(regressions, key=lambda k: (regressions[k]["name"], k))
        ]
        names = [n for n in (self.retriever_name, other.retriever_name) if n is not None]
        hints = [h for h in (self.depth_hint, other.depth_hint) if h is not None]
        infos = [i for i in (self.run_info, other.run_info) if i is not None]
        # One worker probes the shared run and makes the extra runs (the one that completed
        # its last shard); should two payloads carry them, the choice is deterministic.
        probes = [p for p in (self.probe, other.probe) if p is not None]
        extras = [e for e in (self.extra_runs, other.extra_runs) if e]
        # Workers stop on the same run for the same reason; a refusal outranks an error.
        stops = [s for s in (self.stop, other.stop) if s is not None]
        plans = [p for p in (self.depth_plan, other.depth_plan) if p is not None]
        return Report(
            dict(sorted(outcomes.items())),
            ordered,
            ordered_regressions,
            min(names) if names else None,  # all workers build the same retriever
            min(hints) if hints else None,
            min(infos, key=_gate_key) if infos else None,  # one worker ran it: one info
            min(probes, key=_gate_key) if probes else None,
            min(extras, key=lambda e: json.dumps(e, sort_keys=True)) if extras else [],
            min(stops, key=lambda s: (s.get("status") != "refused", _gate_key(s)))
            if stops
            else None,
            min(plans, key=_gate_key) if plans else None,  # every worker plans alike
        )

    def apply_to(self, session: RetrievalSession) -> None:
        """Load the merged outcomes and gates into the controller's session."""
        outcomes = None
        if self.outcomes:
            order = {q.id: i for i, q in enumerate(session.golden)}
            rows = sorted(self.outcomes.values(), key=lambda o: order.get(o["query_id"], 1 << 30))
            outcomes = [outcome_from_dict(o) for o in rows]
        session.absorb(
            outcomes,
            [GateOutcome.from_dict(g) for g in self.gates],
            [RegressionOutcome.from_dict(r) for r in self.regressions],
            retriever_name=self.retriever_name,
            depth_hint=self.depth_hint,
            run_info=None if self.run_info is None else RunInfo.from_dict(self.run_info),
            depth_plan=None if self.depth_plan is None else DepthPlan.from_dict(self.depth_plan),
        )
        stop = Stop.from_dict(self.stop) if self.stop is not None else None
        if stop is not None:
            session.set_stop(stop)
        if self.probe is not None or self.extra_runs:
            session.set_checks(
                DeterminismProbe.from_dict(self.probe) if self.probe is not None else None,
                [[outcome_from_dict(o) for o in run] for run in self.extra_runs],
            )


def merge_all(reports: Iterable[Report]) -> Report:
    """Fold any number of reports (order does not matter)."""
    merged = Report()
    for report in reports:
        merged = merged.merge(report)
    return merged
