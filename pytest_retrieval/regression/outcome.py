"""What one regression check concluded: :class:`RegressionOutcome`, and how each query moved.

A check's outcome carries the verdict (``status``), the message the reports print, the numbers
behind it (means, the interval, the raw and family-adjusted p-values, the detectable drop, the
run-to-run noise) and the queries that got worse or better (:class:`QueryDiff`: the value before
and after, the relevant documents that moved, the unjudged documents above a lost one). Both
round-trip through builtins (``to_dict`` / ``from_dict``) for the JSON artifact and the xdist
payload. The rule that decides is :mod:`pytest_retrieval.regression.rule`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..run.stages import stage_change
from ..text import for_terminal
from ..verdict import Status
from .snapshot import round_value

if TYPE_CHECKING:
    from ..gates.declared import Budget


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


#: Query ids a check's ``left_out`` keeps per reason (the count is whole).
LEFT_OUT_IDS = 5

#: Where a check's baseline came from (:attr:`BaselineRef.source`).
BASELINE_SOURCES = ("merge-base", "ancestor", "anchor", "file")


@dataclass(frozen=True, slots=True)
class BaselineRef:
    """Which baseline one regression check was judged against (the artifact's ``baseline``).

    ``source`` is ``merge-base`` (the ledger entry of ``git merge-base HEAD <target>``),
    ``ancestor`` (no entry there: the nearest recorded first-parent ancestor, ``distance``
    commits before ``merge_base``), ``anchor`` (a ``since=`` budget's anchor; ``label`` is the
    anchor as the budget names it) or ``file`` (the committed baseline file; ``label`` is its
    path). ``commit`` is the full id of the commit whose entry was compared (None for a file);
    for ``merge-base`` and ``ancestor`` ``label`` is the target branch.
    """

    source: str
    commit: str | None = None
    distance: int | None = None
    label: str | None = None
    merge_base: str | None = None

    def describe(self) -> str:
        """How the reports name it beside a check: ``vs merge-base 1a2b3c4d5e6f``, ``vs
        1a2b3c4d5e6f (nearest recorded ancestor, 2 commits before)``, ``since v1.0
        (1a2b3c4d5e6f)``, ``vs retrieval-baseline.json``. Commits as the messages show them
        (12 characters)."""
        short = (self.commit or "")[:12]
        if self.source == "merge-base":
            return f"vs merge-base {short}"
        if self.source == "ancestor":
            distance = self.distance or 0
            commits = "commit" if distance == 1 else "commits"
            return f"vs {short} (nearest recorded ancestor, {distance} {commits} before)"
        if self.source == "anchor":
            return f"since {self.label} ({short})" if short else f"since {self.label}"
        return f"vs {self.label or 'the baseline'}"

    def to_dict(self) -> dict[str, Any]:
        """Builtins (artifact, xdist payload)."""
        return {
            "source": self.source,
            "commit": self.commit,
            "distance": self.distance,
            "label": self.label,
            "merge_base": self.merge_base,
        }

    @classmethod
    def from_dict(cls, data: Any) -> BaselineRef | None:
        """Inverse of :meth:`to_dict`; None for anything else (an artifact written before it
        was recorded, or a source this version does not know)."""
        if not isinstance(data, Mapping) or data.get("source") not in BASELINE_SOURCES:
            return None

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        distance = data.get("distance")
        return cls(
            source=str(data["source"]),
            commit=text("commit"),
            distance=distance if type(distance) is int else None,
            label=text("label"),
            merge_base=text("merge_base"),
        )


@dataclass(frozen=True, slots=True)
class LeftOut:
    """Queries of a check's selection it did not compare, for one reason: ``added`` (not in the
    baseline), ``removed`` (no longer in the golden set) or ``changed`` (their text, split,
    slices or labels changed since the baseline). ``count`` is whole; ``ids`` the first
    :data:`LEFT_OUT_IDS`, sorted."""

    reason: str
    count: int
    ids: tuple[str, ...]

    @classmethod
    def of(cls, reason: str, ids: Sequence[str]) -> LeftOut:
        """The group of ``ids`` (sorted; the first :data:`LEFT_OUT_IDS` kept)."""
        return cls(reason, len(ids), tuple(sorted(ids)[:LEFT_OUT_IDS]))

    def describe(self, shown: int = 3) -> str:
        """``2 added (q90, q91)``; ``7 changed (q01, q02, q03, ...)``."""
        ids = [for_terminal(q) for q in self.ids[:shown]]
        more = ", ..." if self.count > len(ids) else ""
        return (
            f"{self.count} {self.reason} ({', '.join(ids)}{more})"
            if ids
            else (f"{self.count} {self.reason}")
        )

    def to_dict(self) -> dict[str, Any]:
        """Builtins."""
        return {"reason": self.reason, "count": self.count, "ids": list(self.ids)}


def describe_left_out(groups: Sequence[LeftOut], compared: int) -> str | None:
    """``compared 24 of 27 queries; left out 2 added (q90, q91), 1 changed (q03)``, or None
    when the check left none out."""
    if not groups:
        return None
    total = compared + sum(g.count for g in groups)
    return f"compared {compared} of {total} queries; left out " + ", ".join(
        g.describe() for g in groups
    )


def left_out_of(data: Any) -> tuple[LeftOut, ...]:
    """An artifact's ``left_out`` list as :class:`LeftOut` groups (malformed entries skipped)."""
    groups = []
    for item in data if isinstance(data, Sequence) and not isinstance(data, str) else ():
        if not isinstance(item, Mapping):
            continue
        count, ids = item.get("count"), item.get("ids")
        if type(count) is not int or not isinstance(item.get("reason"), str):
            continue
        shown = tuple(str(q) for q in ids) if isinstance(ids, list) else ()
        groups.append(LeftOut(str(item["reason"]), count, shown))
    return tuple(groups)


@dataclass(frozen=True, slots=True)
class RegressionOutcome:
    """The verdict of one regression check."""

    name: str
    metric: str
    stage: str | None
    split: str | None
    slice: str | None
    #: What the check concluded (given as its string too: from builtins, the artifact).
    status: Status
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
    #: The mean change for the worse (a drop; a rise of a lower-is-better metric) is larger
    #: than the budget (whether or not it is significant).
    over_budget: bool = False
    #: The per-check p-value before the family-wise adjustment (``p_value`` is the adjusted one).
    p_value_raw: float | None = None
    #: How the family was adjusted (maxt, minp, holm, none) and how many checks it has.
    multiplicity: str | None = None
    family_size: int = 0
    alpha: float | None = None
    #: What was tested: "drop" (H0: no drop) or "beyond-budget" (H0: drop <= budget); a
    #: lower-is-better metric's "drop" is its rise.
    test: str = "drop"
    #: The one-sided ``1 - alpha`` bound of the mean delta that a regression clears (None:
    #: infinite): its upper bound, below 0 for a significant drop; for a lower-is-better metric
    #: (``stale@K``: :attr:`.Metric.bound_side`) its lower bound, above 0 for a significant rise.
    #: ``ci`` is the two-sided ``1 - 2 alpha`` interval of the same test inversion.
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
    #: since the baseline; :func:`pytest_retrieval.run.stages.stage_change` words it). None when
    #: the check compared nothing, or in an artifact written before it was recorded.
    baseline_stage: str | None = None
    #: The anchor of a ``since=`` budget (judged against its ledger entry); None: the baseline.
    since: str | None = None
    #: Which baseline the check was judged against (None: it compared nothing, or an artifact
    #: written before it was recorded).
    baseline: BaselineRef | None = None
    #: Queries of the check's selection it did not compare (added, removed, changed since the
    #: baseline); ``n`` counts the ones it did.
    left_out: tuple[LeftOut, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @classmethod
    def of_budget(
        cls,
        budget: Budget,
        status: Status,
        message: str,
        *,
        stage: str | None,
        allowed: float | None = None,
        **measured: Any,
    ) -> RegressionOutcome:
        """The outcome of ``budget``'s check, made the one way (the regression rule's verdict, a
        check that could not compare, one without a baseline to compare with): named and
        placed by the budget (its name, metric, split, slice and anchor), at ``stage``;
        ``allowed`` the drop it allowed in metric units (None: the budget's amount, for a
        check that measured nothing); ``measured`` what the check measured (the other
        fields)."""
        return cls(
            name=budget.name,
            metric=str(budget.spec),
            stage=stage,
            split=budget.selection.split,
            slice=budget.selection.slice,
            status=status,
            message=message,
            budget=budget.amount if allowed is None else allowed,
            since=budget.since,
            **measured,
        )

    @property
    def stage_change(self) -> str | None:
        """``final stage: reranker in the baseline, retriever now``, or None (one stage)."""
        return stage_change(self.baseline_stage, self.stage)

    @property
    def passed(self) -> bool:
        """True unless the check found a regression or could not compare."""
        return self.status.passed

    def to_dict(self) -> dict[str, Any]:
        """Builtins (artifact, xdist payload)."""
        return {
            "name": self.name,
            "metric": self.metric,
            "stage": self.stage,
            "split": self.split,
            "slice": self.slice,
            "status": self.status.value,
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
            "baseline": self.baseline.to_dict() if self.baseline is not None else None,
            "left_out": [group.to_dict() for group in self.left_out],
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
            status=Status(data["status"]),
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
            baseline=BaselineRef.from_dict(data.get("baseline")),
            left_out=left_out_of(data.get("left_out")),
        )
