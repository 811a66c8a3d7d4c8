"""The gates and regression checks as the reports show them, and the verdict they add up to.

Builtins only, read from the JSON artifact: one :class:`GateRow` per threshold, assert or
regression check (status, target, change with its bound and interval, significance, note), the
family and determinism lines said once above the table, and the
:class:`~pytest_retrieval.verdict.Verdict`. The renderers import it beside the view
(:mod:`.view`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..gates.gate import gate_source
from ..regression.outcome import BaselineRef, describe_left_out, left_out_of
from ..run.determinism import stale_warning
from ..scoring.metrics import metric_of
from ..verdict import Shown, Status, Stop, Verdict
from .phrases import fmt, fmt_p, fmt_signed, scope_label, stage_shown, unscored_reason

_OPS = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "==": "="}


@dataclass(frozen=True, slots=True)
class GateRow:
    """One gate (threshold, assert or regression check) as the reports show it."""

    status: Shown
    kind: str  # "threshold", "assert", "score" or "regression"
    metric: str
    stage: str | None
    split: str | None
    slice: str | None
    value: float | None
    target: str  # "≥ 0.85", "drop ≤ 0.0200" or "rise ≤ 0.0200" (a lower-is-better metric)
    delta: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    significance: str = ""
    note: str = ""
    op: str | None = None
    threshold: float | None = None
    n: int = 0
    #: The one-sided upper bound of the mean delta and the levels of it and of ``ci`` (None in
    #: artifacts written before the intervals matched the test: ``ci`` was a bootstrap CI).
    upper_bound: float | None = None
    upper_level: float | None = None
    ci_level: float | None = None
    #: The baseline's stage a regression check compared ``stage`` with (None: the same stage,
    #: or an artifact written before it was recorded).
    baseline_stage: str | None = None
    #: Which ledger entry a regression check was judged against, as the reports name it
    #: (``vs merge-base 1a2b3c4d5e6f``, ``since v1.0 (1a2b3c4d5e6f)``); None for the baseline
    #: file (one per run) or an artifact written before it was recorded.
    against: str | None = None
    #: The queries the check left out (``compared 24 of 27 queries; left out 2 added (q90,
    #: q91), 1 changed (q03)``), or "".
    left_out: str = ""

    @property
    def stage_shown(self) -> str | None:
        """``reranker``; ``final stage: reranker in the baseline, retriever now`` for a check
        that compared two stages."""
        return stage_shown(self.stage, self.baseline_stage)

    @property
    def change(self) -> str:
        """``-0.0250 (95% upper bound -0.0040; 90% interval [-0.0460, -0.0040])``; ``—``."""
        if self.delta is None:
            return "—"
        text = fmt_signed(self.delta)
        if self.ci_level is None:  # an artifact from before the intervals matched the test
            if self.ci is not None:
                text += f" [{fmt_signed(self.ci[0])}, {fmt_signed(self.ci[1])}]"
            return text
        parts = []
        if self.upper_bound is not None and self.upper_level is not None:
            side = metric_of(self.metric).bound_side  # a lower-is-better metric's: its lower
            parts.append(f"{self.upper_level:.0%} {side} bound {fmt_signed(self.upper_bound)}")
        if self.ci is not None:
            level = f"{self.ci_level:.0%} interval" if self.ci_level is not None else "CI"
            parts.append(f"{level} [{fmt_signed(self.ci[0])}, {fmt_signed(self.ci[1])}]")
        return text + (f" ({'; '.join(parts)})" if parts else "")

    #: The gate's message (for a failed threshold: its value, then the worst queries).
    message: str = ""

    @property
    def source(self) -> str:
        """Where the gate came from: ``test`` (asserted in a test, or a Score compared there) or
        ``declared`` (an ini or gates-file line, or a default regression check)."""
        return gate_source(self.kind)

    @property
    def worst(self) -> list[str]:
        """A failed threshold's worst queries, one line each (from its message)."""
        if self.status is not Shown.FAIL or self.kind == "regression":
            return []
        lines = self.message.splitlines()
        for index, line in enumerate(lines):
            if line.startswith("worst "):
                return [item.strip() for item in lines[index + 1 :] if item.startswith("  ")]
        return []

    @property
    def versus(self) -> str:
        """What a regression check is judged against, after its metric: ``vs baseline``, ``vs
        merge-base 1a2b3c4d5e6f``, ``since v1.0 (1a2b3c4d5e6f)``; "" for a threshold."""
        if self.kind != "regression":
            return ""
        return self.against or "vs baseline"

    @property
    def label(self) -> str:
        """``recall@50 ≥ 0.85``, ``ndcg@10 vs baseline`` or ``ndcg@10 vs merge-base 1a2b…``."""
        if self.kind == "regression":
            return f"{self.metric} {self.versus}"
        return f"{self.metric} {self.target}"

    @property
    def scope(self) -> str:
        """``overall`` / ``slice paraphrase`` ..."""
        return scope_label(self.split, self.slice)


def _threshold_row(gate: Mapping[str, Any]) -> GateRow:
    skipped = gate.get("skipped_reason")
    status = Status.of_gate(passed=bool(gate.get("passed")), skipped=bool(skipped)).shown
    note = str(skipped) if skipped else ""
    if status is Shown.FAIL and gate.get("value") is None:  # no number: say why, in short
        note = unscored_reason(gate.get("message"), gate.get("metric"))
    op = str(gate.get("op", ">="))
    threshold = gate.get("threshold")
    target = f"{_OPS.get(op, op)} {threshold:g}" if isinstance(threshold, (int, float)) else op
    return GateRow(
        status=status,
        kind=str(gate.get("kind") or "assert"),
        metric=str(gate.get("metric")),
        stage=gate.get("stage"),
        split=gate.get("split"),
        slice=gate.get("slice"),
        value=gate.get("value"),
        target=target,
        note=note,
        op=op,
        threshold=float(threshold) if isinstance(threshold, (int, float)) else None,
        n=int(gate.get("n") or 0),
        message=str(gate.get("message") or ""),
    )


def _regression_row(outcome: Mapping[str, Any], level: float) -> GateRow:
    status_word = str(outcome.get("status"))
    try:
        status = Status(status_word).shown
    except ValueError:  # a status this version does not know: shown as its passed flag says
        status = Shown.PASS if outcome.get("passed") else Shown.FAIL
    ci_raw = outcome.get("ci")
    ci = (float(ci_raw[0]), float(ci_raw[1])) if ci_raw else None
    budget = outcome.get("budget")
    row = metric_of(outcome.get("metric"))  # which way is worse: a drop, or a rise
    worsening = row.worsening
    target = f"{worsening} ≤ {fmt(budget)}" if isinstance(budget, (int, float)) else "—"
    since = _text(outcome.get("since"))
    against = against_text(outcome)
    if since is not None and against is None:  # an anchored budget: the drop since its anchor
        target += f" since {since}"  # (named with its commit beside the metric when known)
    p_value = outcome.get("p_value")
    significance = ""
    note = ""
    if status_word == Status.IMPROVEMENT:
        p_value = outcome.get("p_value_improvement")
        significance = f"{fmt_p(p_value)}, significant {row.improving}"
        note = "improvement: refresh the baseline (--retrieval-update-baseline) so the " + (
            "ceiling moves down" if row.lower_is_better else "floor moves up"
        )
    elif status_word in (Status.REGRESSION, Status.PASS) and p_value is not None:
        significant = status_word == Status.REGRESSION or (
            p_value <= level and outcome.get("multiplicity") is None
        )
        beyond = outcome.get("test") == "beyond-budget"
        significance = f"{fmt_p(p_value)}{_adjusted(outcome)}, " + (
            (
                f"{worsening} significantly beyond the budget"
                if beyond
                else f"significant {worsening}"
            )
            if significant
            else (
                "not significantly beyond the budget" if beyond else f"no significant {worsening}"
            )
        )
    if status_word in (Status.INCOMPARABLE, Status.MISSING, Status.SKIPPED):
        note = str(outcome.get("message") or status_word).split("\n", 1)[0]
    elif outcome.get("warning"):
        detectable = outcome.get("detectable")
        if isinstance(budget, (int, float)) and isinstance(detectable, (int, float)):
            note = (
                f"warning: the budget {fmt(budget)} is below the smallest {worsening} this golden "
                f"set can detect ({fmt(detectable)}): add queries or widen the budget"
            )
        else:
            note = f"warning: {outcome['warning']}"
    return GateRow(
        status=status,
        kind="regression",
        metric=str(outcome.get("metric")),
        stage=outcome.get("stage"),
        split=outcome.get("split"),
        slice=outcome.get("slice"),
        value=outcome.get("current_mean"),
        target=target,
        delta=outcome.get("delta"),
        ci=ci,
        p_value=p_value,
        significance=significance,
        note=note,
        n=int(outcome.get("n") or 0),
        upper_bound=_number(outcome.get("upper_bound")),
        upper_level=_number(outcome.get("upper_level")),
        ci_level=_number(outcome.get("ci_level")),
        baseline_stage=_text(outcome.get("baseline_stage")),
        against=against,
        left_out=left_out_text(outcome),
    )


def against_text(outcome: Mapping[str, Any]) -> str | None:
    """The ledger entry a check was judged against, as the reports name it
    (:meth:`~pytest_retrieval.regression.outcome.BaselineRef.describe`); None for the baseline
    file, or when the artifact does not say."""
    ref = BaselineRef.from_dict(outcome.get("baseline"))
    return None if ref is None or ref.source == "file" else ref.describe()


def left_out_text(outcome: Mapping[str, Any]) -> str:
    """``compared 24 of 27 queries; left out 2 added (q90, q91), 1 changed (q03)``, or ""."""
    n = outcome.get("n")
    groups = left_out_of(outcome.get("left_out"))
    return describe_left_out(groups, n if type(n) is int else 0) or ""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_METHODS = {"maxt": "maxT", "minp": "minP", "holm": "Holm"}


def _adjusted(outcome: Mapping[str, Any]) -> str:
    """`` (maxT-adjusted over 7 checks; raw p = 0.0031)`` when a family adjusted the p-value."""
    method, size, raw = (
        outcome.get("multiplicity"),
        outcome.get("family_size"),
        outcome.get("p_value_raw"),
    )
    if method in (None, "none") or not isinstance(size, int) or size < 2:
        return ""
    shown = fmt_p(raw if isinstance(raw, (int, float)) else None)
    return f" ({_METHODS.get(str(method), str(method))}-adjusted over {size} checks; raw {shown})"


def family_line(artifact: Mapping[str, Any]) -> str | None:
    """The family named once: ``7 regression checks, family-wise alpha 0.05, maxT (...)``."""
    family = artifact.get("family")
    if isinstance(family, Mapping) and family.get("description"):
        return str(family["description"])
    return None


def noise_lines(artifact: Mapping[str, Any]) -> list[str]:
    """The determinism probe's finding, and the advice for a noisy pipeline whose baseline is
    a single run (the same words as the terminal; a stale cache is a warning,
    :func:`stale_cache`)."""
    probe = artifact.get("determinism")
    if not isinstance(probe, Mapping):
        return []
    queries, changed = list(probe.get("queries") or ()), list(probe.get("changed") or ())
    head = f"determinism probe: {len(queries)} queries re-run, {len(changed)} rankings changed"
    lines = [head + (" (the pipeline is nondeterministic)" if changed else "")]
    compared = [
        r.get("baseline_runs")
        for r in artifact.get("regressions") or ()
        if isinstance(r.get("baseline_runs"), int) and r.get("delta") is not None
    ]
    if changed and compared and min(compared) < 2:
        lines.append(
            "the baseline is a single run of a nondeterministic pipeline: rebuild it from "
            "several runs (--retrieval-update-baseline --retrieval-baseline-runs 5)"
        )
    return lines


def stale_cache(artifact: Mapping[str, Any]) -> str | None:
    """The warning of a stale cache the determinism probe found (the terminal's words), or
    None."""
    probe = artifact.get("determinism")
    if not isinstance(probe, Mapping) or not probe.get("stale"):
        return None
    stale = [str(q) for q in probe["stale"]]
    return stale_warning(len(stale), len(probe.get("queries") or ()), stale)


def alpha(artifact: Mapping[str, Any]) -> float:
    """The run's significance level (the setting's default when the settings do not say)."""
    value = (artifact.get("settings") or {}).get("alpha")
    if isinstance(value, (int, float)):
        return float(value)
    from ..settings.options import DEFAULT_ALPHA  # only for an artifact that records none

    return DEFAULT_ALPHA


def gate_rows(artifact: Mapping[str, Any]) -> list[GateRow]:
    """Every gate and regression check: failures first, then the artifact's order."""
    level = alpha(artifact)
    rows = [_threshold_row(g) for g in artifact.get("gates") or ()]
    rows += [_regression_row(r, level) for r in artifact.get("regressions") or ()]
    order = {Shown.FAIL: 0, Shown.PASS: 1, Shown.SKIP: 2}
    return sorted(rows, key=lambda row: order.get(row.status, 3))  # stable: keeps the order


def has_regressions(rows: Sequence[GateRow]) -> bool:
    """True when a row is a regression check: only then do the gate tables show the columns
    of the comparison with the baseline (delta, significance)."""
    return any(row.kind == "regression" for row in rows)


def _check_status(outcome: Mapping[str, Any]) -> Status | bool:
    """A regression check's :class:`Status`; its ``passed`` flag for a status this version
    does not know (as :func:`_regression_row` shows it)."""
    try:
        return Status(str(outcome.get("status")))
    except ValueError:
        return bool(outcome.get("passed"))


def verdict(artifact: Mapping[str, Any]) -> Verdict:
    """Pass when no gate or regression check failed and no query failed to run; refused or
    errored when the artifact's ``status`` says so (:class:`~pytest_retrieval.verdict.Stop`)."""
    rows = gate_rows(artifact)
    queries = len(artifact.get("queries") or ()) + int(artifact.get("redacted_queries") or 0)
    return Verdict.count(
        (r.status is not Shown.FAIL for r in rows if r.kind != "regression"),
        (_check_status(r) for r in artifact.get("regressions") or ()),
        failed_queries=len(artifact.get("errors") or ()),
        queries=queries,
        stop=Stop.from_dict(artifact),
    )
