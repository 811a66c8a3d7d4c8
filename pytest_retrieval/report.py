"""Reports: the xdist payload (:class:`Report`), the JSON artifact and the terminal summary.

:class:`Report` carries what workers learn (the run's per-query outcomes and the gate outcomes)
as builtins; :meth:`Report.merge` is idempotent and order-independent, so the controller can fold
worker payloads in any order. :func:`build_artifact` turns a session into the documented,
schema-versioned JSON artifact, with held-out rows redacted unless their details were asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .gates import GateOutcome
from .metrics import MetricSpec
from .regression import RegressionOutcome
from .retriever import QueryOutcome
from .session import RetrievalSession

ARTIFACT_SCHEMA = "pytest-retrieval/artifact"
ARTIFACT_SCHEMA_VERSION = 1


def outcome_to_dict(outcome: QueryOutcome) -> dict[str, Any]:
    """One query's outcome as builtins."""
    return {
        "query_id": outcome.query_id,
        "rankings": {stage: list(r) for stage, r in outcome.rankings.items()},
        "latency_ms": dict(outcome.latency_ms),
        "error": outcome.error,
        "error_type": outcome.error_type,
        "error_stage": outcome.error_stage,
    }


def outcome_from_dict(data: dict[str, Any]) -> QueryOutcome:
    """Inverse of :func:`outcome_to_dict`."""
    return QueryOutcome(
        query_id=data["query_id"],
        rankings={stage: tuple(r) for stage, r in data["rankings"].items()},
        latency_ms=dict(data["latency_ms"]),
        error=data["error"],
        error_type=data["error_type"],
        error_stage=data["error_stage"],
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

    @classmethod
    def from_session(cls, session: RetrievalSession) -> Report:
        """The report of a session (builtins only)."""
        outcomes = {qid: outcome_to_dict(o) for qid, o in (session.outcomes or {}).items()}
        return cls(
            outcomes,
            [g.to_dict() for g in session.gate_outcomes],
            [r.to_dict() for r in session.regression_outcomes],
            session.retriever_name,
        )

    def to_dict(self) -> dict[str, Any]:
        """Builtins only (execnet sends no pickles)."""
        return {
            "outcomes": self.outcomes,
            "gates": self.gates,
            "regressions": self.regressions,
            "retriever_name": self.retriever_name,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Inverse of :meth:`to_dict`."""
        return cls(
            dict(data.get("outcomes", {})),
            list(data.get("gates", [])),
            list(data.get("regressions", [])),
            data.get("retriever_name"),
        )

    def merge(self, other: Report) -> Report:
        """Union of two reports; idempotent and independent of order.

        Outcomes are keyed by query id (workers read the same cached run, so they agree; if they
        did not, the choice is deterministic). Gates are de-duplicated and sorted.
        """
        outcomes = dict(self.outcomes)
        for qid, outcome in other.outcomes.items():
            mine = outcomes.get(qid)
            if mine is None or _gate_key(outcome) < _gate_key(mine):
                outcomes[qid] = outcome
        gates = {_gate_key(g): g for g in [*self.gates, *other.gates]}
        ordered = [gates[key] for key in sorted(gates, key=lambda k: (gates[k]["nodeid"] or "", k))]
        regressions = {_gate_key(r): r for r in [*self.regressions, *other.regressions]}
        ordered_regressions = [
            regressions[key]
            for key in sorted(regressions, key=lambda k: (regressions[k]["name"], k))
        ]
        names = [n for n in (self.retriever_name, other.retriever_name) if n is not None]
        return Report(
            dict(sorted(outcomes.items())),
            ordered,
            ordered_regressions,
            min(names) if names else None,  # all workers build the same retriever
        )

    def apply_to(self, session: RetrievalSession) -> None:
        """Load the merged outcomes and gates into the controller's session."""
        if self.outcomes:
            order = {q.id: i for i, q in enumerate(session.golden)}
            rows = sorted(self.outcomes.values(), key=lambda o: order.get(o["query_id"], 1 << 30))
            session.set_outcomes(outcome_from_dict(o) for o in rows)
        session.gate_outcomes = [GateOutcome.from_dict(g) for g in self.gates]
        session.regression_outcomes = [RegressionOutcome.from_dict(r) for r in self.regressions]
        if self.retriever_name is not None:
            session.retriever_name = self.retriever_name


def merge_all(reports: Iterable[Report]) -> Report:
    """Fold any number of reports (order does not matter)."""
    merged = Report()
    for report in reports:
        merged = merged.merge(report)
    return merged


# --- the JSON artifact ----------------------------------------------------------------------


def _counts(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items()))


def build_artifact(
    session: RetrievalSession,
    *,
    plugin_version: str,
    extra_specs: Sequence[MetricSpec] = (),
    declared: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The JSON artifact of a session (see the README's "JSON artifact" section)."""
    golden = session.golden
    settings = session.settings
    results: list[dict[str, Any]] = []
    specs = settings.metric_specs
    if session.has_run:
        for stage in session.stages:
            evaluation = session.evaluation(stage, specs)
            for label, selection in session.columns():
                sub = evaluation.restrict(q.id for q in session.select(selection))
                results.append(
                    {
                        "stage": stage,
                        "column": label,
                        "split": selection.split,
                        "slice": selection.slice,
                        "queries": len(sub.query_ids),
                        "evaluated": sub.evaluated,
                        "skipped_no_relevant": len(sub.skipped_no_relevant),
                        "metrics": sub.means,
                    }
                )
    rows: list[dict[str, Any]] = []
    redacted = 0
    largest_k = max(settings.ks)
    if session.has_run:
        per_stage = {stage: session.evaluation(stage, specs).per_query for stage in session.stages}
        assert session.outcomes is not None
        for query in session.scorable_queries():
            if session.is_redacted(query):
                redacted += 1
                continue
            outcome = session.outcomes.get(query.id)
            rows.append(
                {
                    "id": query.id,
                    "text": query.text,
                    "split": query.split,
                    "slices": list(query.slices),
                    "rankings": {
                        stage: list(r[:largest_k])
                        for stage, r in (outcome.rankings.items() if outcome else ())
                    },
                    "metrics": {
                        stage: values.get(query.id, {}) for stage, values in per_stage.items()
                    },
                    "latency_ms": dict(outcome.latency_ms) if outcome else {},
                    "error": (
                        {
                            "stage": outcome.error_stage,
                            "type": outcome.error_type,
                            "message": outcome.error,
                        }
                        if outcome and outcome.error
                        else None
                    ),
                }
            )
    gates = []
    for gate in session.gate_outcomes:
        entry = gate.to_dict()
        if gate.split == session.heldout_name and not session.show_heldout_details:
            entry["message"] = entry["message"].split("\n", 1)[0]
        gates.append(entry)
    latency = {}
    for stage in session.stages:
        pair = session.latency_percentiles(stage)
        if pair is not None:
            latency[stage] = {"p50": pair[0], "p95": pair[1]}
    failed = session.failed_queries()
    return {
        "schema": ARTIFACT_SCHEMA,
        "schema_version": ARTIFACT_SCHEMA_VERSION,
        "plugin_version": plugin_version,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "settings": settings.to_dict(),
        "golden": {
            "path": golden.source,
            "name": golden.name,
            "corpus_version": golden.corpus_version,
            "fingerprint": golden.fingerprint,
            "queries": len(golden),
            "splits": _counts(q.split for q in golden),
            "slices": _counts(s for q in golden for s in q.slices),
            "no_answer": sum(1 for q in golden if q.is_no_answer),
        },
        "heldout": {
            "split": session.heldout_name,
            "scored": session.unsealed,
            "details": session.show_heldout_details,
        },
        "retriever": {"name": session.retriever_name},
        "stages": list(session.stages),
        "results": results,
        "gates": gates,
        "errors": [
            {
                "query_id": o.query_id,
                "stage": o.error_stage,
                "type": o.error_type,
                "message": o.error,
            }
            for o in failed
            if not session.is_redacted(golden[o.query_id])
        ],
        "latency_ms": latency,
        "regressions": [r.to_dict() for r in session.regression_outcomes],
        "declared": {k: list(v) for k, v in (declared or {}).items()},
        "queries": rows,
        "redacted_queries": redacted,
        "snapshot": session.snapshot(extra=extra_specs).to_dict() if session.has_run else None,
    }


# --- terminal ------------------------------------------------------------------------------

_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Iterable[float | None]) -> str:
    """A unicode sparkline of values in [0, 1] (a space where a value is missing)."""
    out = []
    for value in values:
        if value is None:
            out.append(" ")
        else:
            out.append(_BARS[min(len(_BARS) - 1, max(0, int(value * len(_BARS) - 1e-9)))])
    return "".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def render_summary(session: RetrievalSession, *, quiet: bool = False) -> list[str]:
    """The lines of the ``retrieval`` terminal section."""
    from tabulate import tabulate

    lines: list[str] = []
    golden = session.golden
    failed = session.failed_queries()
    failed_gates = [g for g in session.gate_outcomes if not g.passed and not g.skipped_reason]
    if not quiet:
        heldout = (
            f"held-out split {session.heldout_name!r} scored (aggregates only)"
            if session.unsealed and not session.show_heldout_details
            else f"held-out split {session.heldout_name!r} scored with details"
            if session.unsealed
            else f"held-out split {session.heldout_name!r} sealed"
        )
        lines.append(
            f"golden set {golden.source} · {len(golden)} queries · fingerprint "
            f"{golden.short_fingerprint} · {heldout}"
        )
        for stage in session.stages:
            headers, rows = session.table(stage)
            lines.append("")
            lines.append(f"stage: {stage}")
            lines.extend(
                tabulate(
                    [[_cell(v) for v in row] for row in rows],
                    headers=headers,
                    disable_numparse=True,
                ).splitlines()
            )
            recall = [row for row in rows if str(row[0]).startswith("recall@")]
            if len(recall) > 1:
                curve = sparkline(row[1] for row in recall)
                ks = ",".join(str(row[0]).split("@")[1] for row in recall)
                lines.append(f"recall@K curve (K={ks}): {curve}")
        skipped = 0
        if session.has_run:
            evaluation = session.evaluation(session.default_stage, session.settings.metric_specs)
            skipped = len(evaluation.skipped_no_relevant)
        lines.append("")
        lines.append(
            f"queries: {len(session.scorable_queries())} run, {len(failed)} failed, "
            f"{skipped} skipped in means (no relevant document: "
            f"no_relevant={session.settings.no_relevant})"
        )
        for stage in session.stages:
            pair = session.latency_percentiles(stage)
            if pair is not None:
                lines.append(f"latency {stage}: p50 {pair[0]:.1f} ms, p95 {pair[1]:.1f} ms")
    if failed:
        if lines:  # under -q the failures are the whole section: no blank line first
            lines.append("")
        lines.append(f"{len(failed)} queries failed (they score 0 and fail the session):")
        shown = [o for o in failed if not session.is_redacted(golden[o.query_id])]
        for outcome in shown[:20]:
            lines.append(
                f"  {outcome.query_id} [{outcome.error_stage}] "
                f"{outcome.error_type}: {outcome.error}"
            )
        if len(shown) > 20:
            lines.append(f"  ... and {len(shown) - 20} more (see the JSON artifact)")
        if len(shown) < len(failed):  # counted, never named (the held-out guard)
            lines.append(
                f"  {len(failed) - len(shown)} held-out queries (details hidden; "
                "--retrieval-heldout-details shows them)"
            )
    if quiet and not failed and not failed_gates:
        return []
    return lines


def render_gates(session: RetrievalSession, *, quiet: bool = False) -> list[str]:
    """The lines of the ``retrieval gates`` section: every gate with its verdict."""
    lines = []
    for gate in session.gate_outcomes:
        verdict = "SKIP" if gate.skipped_reason else "PASS" if gate.passed else "FAIL"
        if quiet and verdict != "FAIL":
            continue
        value = "n/a" if gate.value is None else f"{gate.value:.4f}"
        if gate.value is not None and gate.ci is not None:
            value += f" (CI {gate.ci[0]:.3f}-{gate.ci[1]:.3f})"
        where = " ".join(
            f"{k}={v}"
            for k, v in (("stage", gate.stage), ("split", gate.split), ("slice", gate.slice))
            if v
        )
        origin = gate.nodeid or gate.kind
        lines.append(
            f"{verdict} {gate.metric} {gate.op} {gate.threshold:g}: {value}"
            f"{' [' + where + ']' if where else ''} (n={gate.n}) — {origin}"
        )
    for regression in session.regression_outcomes:
        verdict = {
            "pass": "PASS",
            "improvement": "PASS",
            "skipped": "SKIP",
            "regression": "FAIL",
        }.get(regression.status, "FAIL")
        if quiet and verdict != "FAIL" and regression.status != "improvement":
            continue
        body = regression.message.splitlines()
        if regression.delta is not None and regression.baseline_mean is not None:
            assert regression.current_mean is not None
            where = " ".join(
                f"{k}={v}"
                for k, v in (
                    ("stage", regression.stage),
                    ("split", regression.split),
                    ("slice", regression.slice),
                )
                if v
            )
            p_value = "n/a" if regression.p_value is None else f"{regression.p_value:.3g}"
            detectable = (
                f"; detectable drop {regression.detectable:.4f}"
                if regression.detectable is not None
                else ""
            )
            lines.append(
                f"{verdict} {regression.metric} budget {regression.budget:.4f} [{where}]: "
                f"{regression.baseline_mean:.4f} → {regression.current_mean:.4f} "
                f"(Δ {regression.delta:+.4f}, p = {p_value}, n = {regression.n}{detectable})"
                + (
                    " — improvement: refresh the baseline"
                    if regression.status == "improvement"
                    else ""
                )
            )
            if regression.status == "pass" and regression.over_budget:
                lines[-1] += " — over budget but not significant"
            details = body
        else:  # missing, incomparable or skipped: the message says it all
            lines.append(f"{verdict} {regression.name}: {body[0]}")
            details = body[1:]
        if verdict == "FAIL":
            lines.extend(f"    {line}" for line in details)
        elif regression.warning and not quiet:
            lines.append(f"    warning: {regression.warning}")
    return lines
