"""A threshold gate's outcome: a score compared with a threshold, as the record every report reads.

:func:`judge` decides whether a scored gate passed (:data:`~pytest_retrieval.gates.gate.OPS`) and
writes its message: one line when it holds; when it fails, the value against the threshold over
the selection, then the score's explanation (the worst queries; for ``forbidden@K`` and
``stale@K`` every leak). The zero-tolerance gate (``forbidden@10 == 0``) has no interval: one
leak fails it. :func:`unscored` is the record
of a gate that has no value: skipped (a sealed split) or failed (it cannot be scored), so that
the reports and the artifact list it like every other gate. The session records both.
"""

from __future__ import annotations

from ..scoring.metrics import MetricSpec
from ..text import plural
from .gate import OPS, ZERO_TOLERANCE, GateOutcome, Score, Selection, describe_op_failure


def judge(
    score: Score,
    spec: MetricSpec,
    selection: Selection,
    op: str,
    threshold: float,
    *,
    confidence: float,
    kind: str,
    name: str | None,
    nodeid: str | None,
) -> GateOutcome:
    """The outcome of comparing ``score`` with ``threshold`` (``confidence`` names its CI)."""
    passed = score.value is not None and OPS[op](score.value, threshold)
    where = Selection(score.stage, selection.split or "overall", selection.slice).label()
    if op == ZERO_TOLERANCE:
        # No statistics: one leak fails it, and the explanation names every leak.
        message = (
            f"{spec} == 0 holds: no {spec.name} document in the top {spec.k} of "
            f"{plural(score.n, 'query', 'queries')} [{where}]"
            if passed
            else "\n".join([f"{spec} == 0 fails (zero tolerance) [{where}]", *score.explanation])
        )
        return GateOutcome.of(
            spec,
            selection,
            op,
            threshold,
            stage=score.stage,
            passed=passed,
            message=message,
            kind=kind,
            name=name,
            nodeid=nodeid,
            value=score.value,
            n=score.n,
            skipped=score.skipped,
        )
    interval = (
        f" ({confidence:.0%} CI [{score.ci[0]:.4f}, {score.ci[1]:.4f}])"
        if score.ci is not None
        else ""
    )
    head = f"{spec} = {describe_op_failure(score.value, op, threshold)}"
    message = (
        f"{spec} {op} {threshold:g} holds: {score.value:.4f}{interval} [{where}]"
        if passed and score.value is not None
        else "\n".join([f"{head}, expected {op} {threshold:g} [{where}]", *score.explanation])
    )
    return GateOutcome.of(
        spec,
        selection,
        op,
        threshold,
        stage=score.stage,
        passed=passed,
        message=message,
        kind=kind,
        name=name,
        nodeid=nodeid,
        value=score.value,
        n=score.n,
        skipped=score.skipped,
        ci=score.ci,
    )


def unscored(
    spec: MetricSpec,
    selection: Selection,
    op: str,
    threshold: float,
    *,
    kind: str,
    name: str | None,
    nodeid: str | None,
    passed: bool,
    message: str,
    skipped_reason: str | None = None,
) -> GateOutcome:
    """The record of a gate that has no value: skipped (a sealed split) or failed (it cannot be
    scored), so the reports and the artifact list it like every other gate."""
    return GateOutcome.of(
        spec,
        selection,
        op,
        threshold,
        stage=selection.stage,
        passed=passed,
        message=message,
        kind=kind,
        name=name,
        nodeid=nodeid,
        skipped_reason=skipped_reason,
    )
