"""What one regression check concluded: :class:`RegressionOutcome`, and how each query moved.

A check's outcome carries the verdict (``status``), the message the reports print, the numbers
behind it (means, the interval, the raw and family-adjusted p-values, the detectable drop, the
run-to-run noise) and the queries that got worse or better (:class:`QueryDiff`: the value before
and after, the relevant documents that moved, the unjudged documents above a lost one). Both
round-trip through builtins (``to_dict`` / ``from_dict``) for the JSON artifact and the xdist
payload. The rule that decides is :mod:`pytest_retrieval.regression`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .snapshot import round_value
from .stages import stage_change
from .text import for_terminal
from .verdict import Status


@dataclass(frozen=True, slots=True)
class QueryDiff:
    """How one query moved: its value before and after, and the relevant docs that moved."""

    query_id: str
    before: float
    after: float
    moves: tuple[tuple[str, int | None, int | None], ...]  # (doc, rank before, rank after)
    #: Unjudged documents that now rank above the relevant document this query lost (and did
    #: not rank above it before); 0 when none, or when the snapshot holds no judgments.
    holes: int = 0
    #: The relevant document that lost rank first (the one the holes rank above).
    lost: str | None = None

    @property
    def delta(self) -> float:
        """after - before."""
        return self.after - self.before

    def describe(self, metric: str) -> str:
        """``refund-window: ndcg@10 1.0000 → 0.3869; refund-policy: rank 1 → 7``."""

        def rank(value: int | None) -> str:
            return "—" if value is None else str(value)

        # User ids are escaped (for_terminal): one with a newline cannot start a log line.
        moved = "; ".join(
            f"{for_terminal(doc)}: rank {rank(a)} → {rank(b)}" for doc, a, b in self.moves[:4]
        )
        more = f" (+{len(self.moves) - 4} more)" if len(self.moves) > 4 else ""
        line = f"{for_terminal(self.query_id)}: {metric} {self.before:.4f} → {self.after:.4f}" + (
            f"; {moved}{more}" if moved else ""
        )
        if self.holes:
            documents = "document now ranks" if self.holes == 1 else "documents now rank"
            line += (
                f"; {self.holes} unjudged {documents} above the lost one "
                f"({for_terminal(self.lost or '')}): label them before trusting this drop"
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        """Builtins."""
        return {
            "query_id": self.query_id,
            "before": round_value(self.before),
            "after": round_value(self.after),
            "moves": [{"doc": d, "before": a, "after": b} for d, a, b in self.moves],
            "holes": self.holes,
            "lost": self.lost,
        }


@dataclass(frozen=True, slots=True)
class RegressionOutcome:
    """The verdict of one regression check."""

    name: str
    metric: str
    stage: str | None
    split: str | None
    slice: str | None
    status: str  # "pass", "regression", "improvement", "incomparable", "missing", "skipped"
    message: str
    budget: float = 0.0
    n: int = 0
    baseline_mean: float | None = None
    current_mean: float | None = None
    delta: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    p_value_improvement: float | None = None
    detectable: float | None = None
    warning: str | None = None
    worse: tuple[QueryDiff, ...] = ()
    better: tuple[QueryDiff, ...] = ()
    #: The mean drop is larger than the budget (whether or not it is significant).
    over_budget: bool = False
    #: The per-check p-value before the family-wise adjustment (``p_value`` is the adjusted one).
    p_value_raw: float | None = None
    #: How the family was adjusted (maxt, minp, holm, none) and how many checks it has.
    multiplicity: str | None = None
    family_size: int = 0
    alpha: float | None = None
    #: What was tested: "drop" (H0: no drop) or "beyond-budget" (H0: drop <= budget).
    test: str = "drop"
    #: The one-sided ``1 - alpha`` upper bound of the mean delta (None: infinite); ``ci`` is the
    #: two-sided ``1 - 2 alpha`` interval of the same test inversion.
    upper_bound: float | None = None
    ci_level: float | None = None
    upper_level: float | None = None
    ci_collapsed: bool = False
    ci_reason: str | None = None
    #: Why no drop is detectable (``detectable`` is then None).
    detectable_reason: str | None = None
    #: Runs the baseline's per-query values are the means of, and (when it records their
    #: spread) the standard deviation of the mean delta that run-to-run noise alone gives.
    baseline_runs: int = 1
    noise: float | None = None
    #: Queries that got worse with unjudged documents above a lost relevant one, and the part
    #: of the mean change (``delta``) that their drops make up.
    hole_queries: int = 0
    hole_delta: float | None = None
    #: The baseline's stage the check compared ``stage`` (this run's) with: the same stage,
    #: unless the budget names none and the final stages differ (a stage added or removed
    #: since the baseline; :func:`pytest_retrieval.stages.stage_change` words it). None when
    #: the check compared nothing, or in an artifact written before it was recorded.
    baseline_stage: str | None = None
    #: The anchor of a ``since=`` budget (judged against its ledger entry); None: the baseline.
    since: str | None = None

    @property
    def stage_change(self) -> str | None:
        """``final stage: reranker in the baseline, retriever now``, or None (one stage)."""
        return stage_change(self.baseline_stage, self.stage)

    @property
    def passed(self) -> bool:
        """True unless the check found a regression or could not compare."""
        return Status(self.status).passed

    def to_dict(self) -> dict[str, Any]:
        """Builtins (artifact, xdist payload)."""
        return {
            "name": self.name,
            "metric": self.metric,
            "stage": self.stage,
            "split": self.split,
            "slice": self.slice,
            "status": self.status,
            "passed": self.passed,
            "message": self.message,
            "budget": self.budget,
            "n": self.n,
            "baseline_mean": self.baseline_mean,
            "current_mean": self.current_mean,
            "delta": self.delta,
            "ci": list(self.ci) if self.ci else None,
            "p_value": self.p_value,
            "p_value_improvement": self.p_value_improvement,
            "detectable": self.detectable,
            "warning": self.warning,
            "worse": [d.to_dict() for d in self.worse],
            "better": [d.to_dict() for d in self.better],
            "over_budget": self.over_budget,
            "p_value_raw": self.p_value_raw,
            "multiplicity": self.multiplicity,
            "family_size": self.family_size,
            "alpha": self.alpha,
            "test": self.test,
            "upper_bound": self.upper_bound,
            "ci_level": self.ci_level,
            "upper_level": self.upper_level,
            "ci_collapsed": self.ci_collapsed,
            "ci_reason": self.ci_reason,
            "detectable_reason": self.detectable_reason,
            "baseline_runs": self.baseline_runs,
            "noise": self.noise,
            "hole_queries": self.hole_queries,
            "hole_delta": self.hole_delta,
            "baseline_stage": self.baseline_stage,
            "since": self.since,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RegressionOutcome:
        """Inverse of :meth:`to_dict`."""

        def diffs(rows: Sequence[Mapping[str, Any]]) -> tuple[QueryDiff, ...]:
            return tuple(
                QueryDiff(
                    r["query_id"],
                    r["before"],
                    r["after"],
                    tuple((m["doc"], m["before"], m["after"]) for m in r["moves"]),
                    holes=int(r.get("holes", 0)),
                    lost=r.get("lost"),
                )
                for r in rows
            )

        ci = data.get("ci")
        return cls(
            name=data["name"],
            metric=data["metric"],
            stage=data["stage"],
            split=data["split"],
            slice=data["slice"],
            status=data["status"],
            message=data["message"],
            budget=data.get("budget", 0.0),
            n=data.get("n", 0),
            baseline_mean=data.get("baseline_mean"),
            current_mean=data.get("current_mean"),
            delta=data.get("delta"),
            ci=(ci[0], ci[1]) if ci else None,
            p_value=data.get("p_value"),
            p_value_improvement=data.get("p_value_improvement"),
            detectable=data.get("detectable"),
            warning=data.get("warning"),
            worse=diffs(data.get("worse", ())),
            better=diffs(data.get("better", ())),
            over_budget=bool(data.get("over_budget", False)),
            p_value_raw=data.get("p_value_raw"),
            multiplicity=data.get("multiplicity"),
            family_size=int(data.get("family_size") or 0),
            alpha=data.get("alpha"),
            test=str(data.get("test") or "drop"),
            upper_bound=data.get("upper_bound"),
            ci_level=data.get("ci_level"),
            upper_level=data.get("upper_level"),
            ci_collapsed=bool(data.get("ci_collapsed", False)),
            ci_reason=data.get("ci_reason"),
            detectable_reason=data.get("detectable_reason"),
            baseline_runs=int(data.get("baseline_runs") or 1),
            noise=data.get("noise"),
            hole_queries=int(data.get("hole_queries", 0)),
            hole_delta=data.get("hole_delta"),
            baseline_stage=data.get("baseline_stage"),
            since=data.get("since") if isinstance(data.get("since"), str) else None,
        )
