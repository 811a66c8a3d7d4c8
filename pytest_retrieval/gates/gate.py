"""Gates: scores you compare with a threshold, in code or declared as lines.

Two families of helpers, usable in any test of a session where the plugin has a golden set:

* **Assertive gates** (``assert_recall_at(50) >= 0.9``): the comparison itself raises
  ``AssertionError`` with a full explanation when it fails and returns ``True`` when it holds, so
  the bare statement gates, and so does ``assert assert_recall_at(50) >= 0.9``.
* **Scores** (``recall_at(50)``): a :class:`Score` whose comparisons return plain bools, for
  ``assert recall_at(50) >= 0.9`` (pytest's assertion rewriting then shows our explanation).
  A comparison with a number is recorded as a gate too (``kind="score"``), so the reports list
  it like an ``assert_*`` gate; :class:`Score` says when (its test decides a failed one).

Each helper takes keyword ``slice=``, ``split=`` and ``stage=``. Declared gates use the same
grammar everywhere (ini lines, the gates YAML file, the ``gate`` CLI)::

    recall@50 >= 0.90
    ndcg@10 >= 0.60 slice=multi-hop
    recall@100 >= 0.95 stage=retriever split=tune

``slice=*`` expands to one gate per slice of the golden set. Thresholds must be numbers in [0, 1].
This module does not import pytest; the plugin activates a scorer with :func:`activate`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..golden.context import CONTEXT_SLICE_FIX, context_slice, in_context_slice
from ..scoring.metrics import MetricSpec
from ..verdict import Status

if TYPE_CHECKING:
    pass

Op = Literal[">=", ">", "<=", "<", "=="]
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}
_NEGATION = {">=": "<", ">": "<=", "<=": ">", "<": ">=", "==": "!="}
#: The zero-tolerance comparison: ``forbidden@10 == 0`` (one leak fails it; no statistics).
ZERO_TOLERANCE = "=="


def direction_problem(spec: MetricSpec, op: str, threshold: float) -> tuple[str, str] | None:
    """``(message, fix)`` when ``op`` gates ``spec`` the wrong way round (the metric table's
    ``direction``): a lower-is-better metric (``forbidden@K``, ``stale@K``) takes ``<=``, ``<``
    or the zero-tolerance ``== 0``; a higher-is-better one ``>=`` or ``>``. ``==`` is only
    ever ``== 0`` on a lower-is-better metric (a mean of floats is rarely exactly a number)."""
    lower = spec.metric.lower_is_better
    if op == ZERO_TOLERANCE:
        if lower and threshold == 0.0:
            return None
        if lower:
            return (
                f"{spec} == {threshold:g}: == is the zero-tolerance gate, == 0",
                f"write {spec} == 0 (no leak at all), or {spec} <= {threshold:g}",
            )
        return (
            f"{spec} == {threshold:g}: == is the zero-tolerance gate of forbidden@K and stale@K",
            f"write {spec} >= {threshold:g}",
        )
    if lower and op in (">=", ">"):
        return (
            f"{spec} is lower-is-better (a share of the top {spec.k} that must not be there), "
            f"so {spec} {op} {threshold:g} gates the wrong way",
            f"write {spec} <= {threshold:g}"
            + (f" or {spec} == 0" if spec.name == "forbidden" else ""),
        )
    return None  # a ceiling on a higher-is-better metric is odd but meaningful (a probe)


def check_direction(spec: MetricSpec, op: str, threshold: float) -> None:
    """Raise :class:`GateUsageError` for :func:`direction_problem`'s cases."""
    found = direction_problem(spec, op, threshold)
    if found is not None:
        raise GateUsageError(f"{found[0]}: {found[1]}")


class GateUsageError(ValueError):
    """A gate was used wrongly (bad threshold, unknown slice/split/stage, no active session)."""


class ScoreRefused(GateUsageError):
    """The metric cannot be scored on this run (a K deeper than the rankings, a metric the run
    cannot measure): a gate on it fails with this reason. A Score twin (``recall_at(10)``)
    carries the reason and raises it (a plain :class:`GateUsageError`, what users see and
    catch) when compared, so the comparison is recorded as a failed gate like its ``assert_*``
    sibling's. Internal: raised to callers as :class:`GateUsageError`."""


# Users meet these in tracebacks of their own tests: they carry the documented import path
# (``from pytest_retrieval.gates import GateUsageError`` and the package's public API), not the
# name of the module that happens to define them.
GateUsageError.__module__ = ScoreRefused.__module__ = "pytest_retrieval.gates"


def __tracebackhide__(excinfo: Any) -> bool:
    """pytest hides this module's frames from a gate's failure, misuse or skip (a sealed split),
    so the traceback, and a skip's location, is the user's ``assert_recall_at(50) >= 0.9`` line.
    """
    return bool(excinfo.errisinstance((AssertionError, GateUsageError))) or is_pytest_outcome(
        excinfo
    )


def is_pytest_outcome(excinfo: Any) -> bool:
    # pytest.skip/fail raised through the session's callbacks. Only pytest calls this, so
    # importing it here keeps the module itself free of pytest.
    import pytest

    return bool(excinfo.errisinstance((pytest.skip.Exception, pytest.fail.Exception)))


def helper_call(spec: MetricSpec, prefix: str = "assert_") -> str:
    """How a message writes the helper of ``spec``'s metric: ``assert_recall_at(...)`` for a
    metric that takes a cutoff, ``assert_abstain_rate(...)`` for one that takes none (the
    metric table's cutoff rule); ``prefix=""`` names the Score twin (``recall_at(...)``)."""
    at = "_at" if spec.metric.takes_cutoff else ""
    return f"{prefix}{spec.name}{at}(...)"


def check_threshold(value: object, *, where: str = "threshold") -> float:
    """Return ``value`` as a float if it is a number in [0, 1], else raise GateUsageError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GateUsageError(f"{where} must be a number between 0 and 1, got {value!r}")
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise GateUsageError(
            f"{where} must be a number between 0 and 1, got {value!r} ({threshold_fix(number)})"
        )
    return number


def threshold_fix(number: float) -> str:
    """The fix a message gives for a threshold outside [0, 1] (the helpers' and the gates
    file's)."""
    # "write 0.9, not 90" only helps a percentage; NaN and negatives need another word.
    if number > 1.0:
        return "metrics are fractions: write 0.9, not 90"
    return "write a number between 0 and 1, e.g. 0.9"


@dataclass(frozen=True, slots=True)
class Selection:
    """Which queries a score covers: a stage, a split and a slice (None = the defaults)."""

    stage: str | None = None
    split: str | None = None
    slice: str | None = None

    @property
    def context_slice(self) -> tuple[str, str] | None:
        """``(key, value)`` when the slice selects by context value (``slice=tenant:acme``:
        the queries whose ``context.tenant`` is ``acme``); None for a slice name or none."""
        try:
            return context_slice(self.slice)
        except ValueError as exc:
            raise GateUsageError(f"{exc}: {CONTEXT_SLICE_FIX}") from None

    def matches(
        self,
        split: str,
        slices: Collection[str],
        *,
        heldout_split: str,
        context: Mapping[str, Any] | None = None,
    ) -> bool:
        """True if a query of ``split`` tagged ``slices`` (with ``context``) is covered by this
        selection.

        The one rule, used by gates, regression checks and the console script alike: the named
        split, or without one every split but the held-out one ("overall"); and the named slice,
        or every query without one. A context slice ``KEY:VALUE`` covers the queries whose
        context answers it (:func:`~pytest_retrieval.golden.context.slice_values`); a query
        whose context is unknown (None: a stored run keeps none) is not covered. (The stage
        picks a ranking, not queries.)
        """
        in_split = split == self.split if self.split is not None else split != heldout_split
        if not in_split or self.slice is None:
            return in_split
        wanted = self.context_slice
        if wanted is None:
            return self.slice in slices
        return context is not None and in_context_slice(context, *wanted)

    def label(self) -> str:
        """``stage=reranker split=tune slice=multi-hop`` (only the parts that are set)."""
        parts = [
            f"{k}={v}"
            for k, v in (("stage", self.stage), ("split", self.split), ("slice", self.slice))
            if v is not None
        ]
        return " ".join(parts)


#: The kinds of gate a test records: ``assert`` (an ``assert_*`` helper) and ``score`` (a
#: Score twin compared with a number); every other kind is declared (``threshold``).
TEST_KINDS = frozenset({"assert", "score"})


def gate_source(kind: str) -> str:
    """``test`` for a gate a test records (:data:`TEST_KINDS`), ``declared`` for an ini or
    gates-file line (the one rule the session's records and the artifact's rows both use)."""
    return "test" if kind in TEST_KINDS else "declared"


@dataclass(frozen=True, slots=True, eq=False)
class Score:
    """A metric's mean over a selection of queries. Comparisons with a number return bools.

    ``value`` is ``None`` when no query could be scored (every one skipped); such a score
    compares False with anything.

    A Score from the session (``recall_at(50)``) carries ``recorder``: each comparison with a
    number (``>=``, ``>``, ``<=``, ``<``, either way round) is also recorded as a gate of kind
    ``score``, so ``assert recall_at(50) >= 0.9`` appears in every report as
    ``assert_recall_at(50) >= 0.9`` does. ``float(score)``, ``score.value``, ``format`` and
    ``repr`` record nothing. Two Scores compare by their values (False when either has none) and
    record nothing: that comparison has no threshold to report. Not a truth value, and not
    compared with ``==`` or ``!=`` (a TypeError that says what to write instead).
    """

    spec: MetricSpec
    value: float | None
    n: int
    skipped: int = 0
    stage: str | None = None
    split: str | None = None
    slice: str | None = None
    ci: tuple[float, float] | None = None
    explanation: tuple[str, ...] = field(default=(), repr=False)
    recorder: Callable[[Score, str, float], None] | None = field(
        default=None, repr=False, compare=False
    )
    #: Why the metric cannot be scored on this run (:class:`ScoreRefused`): ``value`` is None
    #: and comparing or ``float()`` raises it (a comparison with a number is recorded first, as
    #: a failed gate with this reason).
    refused: str | None = field(default=None, repr=False)

    def _compare(self, op: str, other: object) -> bool:
        if isinstance(other, Score):
            for side in (self, other):
                if side.refused is not None:
                    raise GateUsageError(side.refused)
            return (
                self.value is not None
                and other.value is not None
                and OPS[op](self.value, other.value)
            )
        threshold = check_threshold(other)
        check_direction(self.spec, op, threshold)
        if self.recorder is not None:
            self.recorder(self, op, threshold)
        if self.refused is not None:
            raise GateUsageError(self.refused)
        return self.value is not None and OPS[op](self.value, threshold)

    def __ge__(self, other: object) -> bool:
        return self._compare(">=", other)

    def __gt__(self, other: object) -> bool:
        return self._compare(">", other)

    def __le__(self, other: object) -> bool:
        return self._compare("<=", other)

    def __lt__(self, other: object) -> bool:
        return self._compare("<", other)

    def __eq__(self, other: object) -> bool:
        raise TypeError(_no_equality(self, "=="))

    def __ne__(self, other: object) -> bool:
        raise TypeError(_no_equality(self, "!="))

    __hash__ = object.__hash__  # by identity, as before: a Score is a value of one run

    def __float__(self) -> float:
        if self.refused is not None:
            raise GateUsageError(self.refused)
        if self.value is None:
            raise ValueError(f"{self.spec} has no value: no query could be scored")
        return self.value

    def __format__(self, spec: str) -> str:
        """``f"{score:.3f}"`` formats the value (``n/a`` without one); ``f"{score}"`` is repr."""
        if not spec:
            return repr(self)
        return "n/a" if self.value is None else format(self.value, spec)

    def __bool__(self) -> bool:
        raise TypeError(
            f"a Score is not a truth value; compare it: assert {helper_call(self.spec, '')} >= 0.9"
        )

    def __repr__(self) -> str:
        shown = "n/a" if self.value is None else f"{self.value:.4f}"
        where = Selection(self.stage, self.split, self.slice).label()
        return f"Score({self.spec}={shown}{' ' + where if where else ''}, n={self.n})"


def _no_equality(score: Score, op: str) -> str:
    # ``assert recall_at(10) != 0`` compared identities and always held: a silent green.
    return (
        f"a Score is not compared with {op}: a mean of floats is rarely exactly a number, and "
        f"{op} is no gate; compare with a threshold (assert {helper_call(score.spec, '')} >= 0.9) "
        "or use its value (float(score), score.value)"
    )


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """The result of one gate: what was compared, the verdict and the explanation."""

    name: str
    metric: str
    op: str
    threshold: float
    value: float | None
    passed: bool
    stage: str | None
    split: str | None
    slice: str | None
    n: int
    skipped: int
    kind: str = "assert"
    nodeid: str | None = None
    message: str = ""
    skipped_reason: str | None = None
    ci: tuple[float, float] | None = None

    @classmethod
    def of(
        cls,
        spec: MetricSpec,
        selection: Selection,
        op: str,
        threshold: float,
        *,
        stage: str | None,
        passed: bool,
        message: str,
        kind: str = "assert",
        name: str | None = None,
        nodeid: str | None = None,
        value: float | None = None,
        n: int = 0,
        skipped: int = 0,
        ci: tuple[float, float] | None = None,
        skipped_reason: str | None = None,
    ) -> GateOutcome:
        """The record of one gate, made the one way (:func:`.judge.judge` for a scored gate,
        :func:`.judge.unscored` for one without a value; test gates and declared ones alike):
        ``spec`` compared ``op`` ``threshold`` over ``selection``'s split and slice at
        ``stage``; named ``name`` (a declared gate's) or ``recall@10>=0.9``."""
        return cls(
            name=name or f"{spec}{op}{threshold:g}",
            metric=str(spec),
            op=op,
            threshold=threshold,
            value=value,
            passed=passed,
            stage=stage,
            split=selection.split,
            slice=selection.slice,
            n=n,
            skipped=skipped,
            kind=kind,
            nodeid=nodeid,
            message=message,
            skipped_reason=skipped_reason,
            ci=ci,
        )

    @property
    def source(self) -> str:
        """``test`` for a gate asserted in a test (an ``assert_*`` gate or a compared Score),
        ``declared`` for an ini or gates-file line."""
        return gate_source(self.kind)

    @property
    def status(self) -> Status:
        """What the gate concluded: skipped (a sealed split), passed or failed."""
        return Status.of_gate(passed=self.passed, skipped=bool(self.skipped_reason))

    def properties(self) -> list[tuple[str, object]]:
        """The JUnit properties of a gate asserted in a test (one group per gate, in the
        order the test compared them), with the stage it was scored at."""
        return [
            ("source", self.source),
            ("gate", self.name),
            ("metric", self.metric),
            ("op", self.op),
            ("threshold", self.threshold),
            ("stage", self.stage or "default"),
            ("split", self.split or "overall"),
            ("slice", self.slice or "all"),
            ("value", self.value),
            ("passed", self.passed),
        ]

    def to_dict(self) -> dict[str, Any]:
        """Builtins only (JSON artifact, xdist payload)."""
        return {
            "name": self.name,
            "metric": self.metric,
            "op": self.op,
            "threshold": self.threshold,
            "value": self.value,
            "passed": self.passed,
            "stage": self.stage,
            "split": self.split,
            "slice": self.slice,
            "n": self.n,
            "skipped": self.skipped,
            "kind": self.kind,
            "nodeid": self.nodeid,
            "message": self.message,
            "skipped_reason": self.skipped_reason,
            "ci": list(self.ci) if self.ci is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateOutcome:
        """Inverse of :meth:`to_dict`."""
        ci = data.get("ci")
        return cls(**{**data, "ci": (ci[0], ci[1]) if ci else None})


class Scorer(Protocol):
    """What gates need from the session (the plugin's :class:`~.session.RetrievalSession`)."""

    def score(self, spec: MetricSpec, selection: Selection) -> Score:
        """The mean of ``spec`` over ``selection``."""

    def check(
        self,
        spec: MetricSpec,
        selection: Selection,
        op: str,
        threshold: float,
        *,
        kind: str = "assert",
    ) -> GateOutcome:
        """Compare and record a gate; skip (via the test framework) a sealed split."""

    def gate_created(self, gate: Gate) -> None:
        """Remember a gate so an uncompared one can be reported."""

    def record_score(self, score: Score, op: str, threshold: float) -> None:
        """Record a Score compared with a number as a gate."""


_ACTIVE: list[Scorer] = []


@contextmanager
def activate(scorer: Scorer) -> Iterator[None]:
    """Make ``scorer`` the one the helpers use, for the duration of the ``with`` block."""
    _ACTIVE.append(scorer)
    try:
        yield
    finally:
        _ACTIVE.remove(scorer)


def _active() -> Scorer:
    if not _ACTIVE:
        raise GateUsageError(
            "no retrieval session is active: gates work in tests run by pytest with the "
            "pytest-retrieval plugin and a golden set configured (retrieval_golden = PATH in "
            "your pytest configuration, or --retrieval-golden PATH)"
        )
    return _ACTIVE[-1]


class Gate:
    """An assertive gate: ``assert_recall_at(50) >= 0.9`` raises AssertionError when it fails.

    Comparing returns ``True`` when the gate holds. A gate that is never compared is reported
    as a warning naming its test, because the line then gates nothing.
    """

    __slots__ = ("compared", "selection", "spec")

    def __init__(self, spec: MetricSpec, selection: Selection) -> None:
        self.spec = spec
        self.selection = selection
        self.compared = False
        _active().gate_created(self)

    def _check(self, op: str, threshold: object) -> bool:
        self.compared = True
        value = check_threshold(threshold, where=f"the threshold of {self.spec}")
        check_direction(self.spec, op, value)
        outcome = _active().check(self.spec, self.selection, op, value)
        if not outcome.passed:
            raise AssertionError(outcome.message)
        return True

    def __ge__(self, threshold: object) -> bool:
        return self._check(">=", threshold)

    def __gt__(self, threshold: object) -> bool:
        return self._check(">", threshold)

    def __le__(self, threshold: object) -> bool:
        return self._check("<=", threshold)

    def __lt__(self, threshold: object) -> bool:
        return self._check("<", threshold)

    def __bool__(self) -> bool:
        raise TypeError(f"compare the gate with a threshold, e.g. {helper_call(self.spec)} >= 0.9")

    def __repr__(self) -> str:
        where = self.selection.label()
        return f"Gate({self.spec}{' ' + where if where else ''})"


def _spec(name: str, k: int | None) -> MetricSpec:
    try:
        return MetricSpec(name, k)
    except ValueError as exc:
        raise GateUsageError(str(exc)) from None


def _gate(
    name: str, k: int | None, stage: str | None, split: str | None, slice: str | None
) -> Gate:
    return Gate(_spec(name, k), Selection(stage, split, slice))


def _score(
    name: str, k: int | None, stage: str | None, split: str | None, slice: str | None
) -> Score:
    spec, selection = _spec(name, k), Selection(stage, split, slice)
    scorer = _active()
    try:
        return scorer.score(spec, selection)
    except ScoreRefused as exc:
        # Refused when compared (and recorded then, with the threshold), not here.
        return Score(
            spec,
            None,
            0,
            stage=stage,
            split=split,
            slice=slice,
            refused=str(exc),
            recorder=scorer.record_score,
        )


# The helpers are spelled out (not generated) so that editors and type checkers see them.


def assert_recall_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on mean Recall@K: ``assert_recall_at(50) >= 0.9``."""
    return _gate("recall", k, stage, split, slice)


def assert_precision_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on mean Precision@K: ``assert_precision_at(5) >= 0.4``."""
    return _gate("precision", k, stage, split, slice)


def assert_hit_rate_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on hit rate@K (share of queries with a relevant document in the top K)."""
    return _gate("hit_rate", k, stage, split, slice)


def assert_ndcg_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on mean NDCG@K: ``assert_ndcg_at(10) >= 0.6``."""
    return _gate("ndcg", k, stage, split, slice)


def assert_map_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on MAP@K (mean average precision over the top K)."""
    return _gate("map", k, stage, split, slice)


def assert_mrr(
    *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on MRR over the whole ranking: ``assert_mrr() >= 0.5``."""
    return _gate("mrr", None, stage, split, slice)


def assert_mrr_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on MRR@K (reciprocal rank counting only the top K)."""
    return _gate("mrr", k, stage, split, slice)


def assert_distinct_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on distinct@K (share of the top K that is not a copy of an earlier result)."""
    return _gate("distinct", k, stage, split, slice)


def assert_abstain_rate(
    *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on the share of no-answer queries with nothing at or above the score floor:
    ``assert_abstain_rate(slice="no-answer") >= 0.8``."""
    return _gate("abstain_rate", None, stage, split, slice)


def assert_answer_rate(
    *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on the share of answerable queries with a result at or above the score floor."""
    return _gate("answer_rate", None, stage, split, slice)


def assert_forbidden_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on forbidden@K (share of the top K the query's user must not see; lower is
    better): ``assert_forbidden_at(10) <= 0.01``. None at all: :func:`assert_no_forbidden_at`."""
    return _gate("forbidden", k, stage, split, slice)


def assert_stale_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Gate:
    """Gate on stale@K (share of the top K superseded or retired; lower is better):
    ``assert_stale_at(3) <= 0.0``."""
    return _gate("stale", k, stage, split, slice)


def assert_no_forbidden_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> bool:
    """The zero-tolerance gate ``forbidden@K == 0``, asserted when called: one forbidden
    document in any query's top K fails it (no statistics), and the AssertionError names each
    leak: the query, the document, its rank, the stage and whether the ranking came from the
    cache. Returns True when no query leaks."""
    spec = _spec("forbidden", k)
    outcome = _active().check(spec, Selection(stage, split, slice), ZERO_TOLERANCE, 0.0)
    if not outcome.passed:
        raise AssertionError(outcome.message)
    return True


def recall_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """Mean Recall@K as a :class:`Score`: ``assert recall_at(50) >= 0.9``."""
    return _score("recall", k, stage, split, slice)


def precision_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """Mean Precision@K as a :class:`Score`."""
    return _score("precision", k, stage, split, slice)


def hit_rate_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """Hit rate@K as a :class:`Score`."""
    return _score("hit_rate", k, stage, split, slice)


def ndcg_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """Mean NDCG@K as a :class:`Score`."""
    return _score("ndcg", k, stage, split, slice)


def map_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """MAP@K as a :class:`Score`."""
    return _score("map", k, stage, split, slice)


def mrr(*, slice: str | None = None, split: str | None = None, stage: str | None = None) -> Score:
    """MRR over the whole ranking as a :class:`Score`."""
    return _score("mrr", None, stage, split, slice)


def mrr_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """MRR@K as a :class:`Score`."""
    return _score("mrr", k, stage, split, slice)


def forbidden_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """forbidden@K as a :class:`Score` (lower is better): ``assert forbidden_at(10) <= 0.01``."""
    return _score("forbidden", k, stage, split, slice)


def stale_at(
    k: int, *, slice: str | None = None, split: str | None = None, stage: str | None = None
) -> Score:
    """stale@K as a :class:`Score` (lower is better): ``assert stale_at(3) <= 0.0``."""
    return _score("stale", k, stage, split, slice)


def describe_op_failure(value: float | None, op: str, threshold: float) -> str:
    """``0.8125 < 0.9`` style text for a failed comparison."""
    shown = "n/a (no query could be scored)" if value is None else f"{value:.4f}"
    return f"{shown} {_NEGATION[op]} {threshold:g}" if value is not None else shown


def explain_comparison(op: str, left: object, right: object) -> list[str] | None:
    """pytest's explanation of ``assert recall_at(50) >= 0.9``: the comparison and the worst
    queries; None unless one side is a :class:`Score`."""
    if isinstance(left, Score) and isinstance(right, Score):
        return [
            f"{_side(left)} {op} {_side(right)} does not hold",
            f"{left.spec} [{_where(left)}]:",
            *(f"  {line}" for line in left.explanation),
            f"{right.spec} [{_where(right)}]:",
            *(f"  {line}" for line in right.explanation),
        ]
    if isinstance(left, Score):
        score, other = left, right
    elif isinstance(right, Score):
        # `0.9 <= recall_at(50)`: said score first, with the comparison turned to match
        score, other = right, left
        op = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}.get(op, op)
    else:
        return None
    shown = "n/a" if score.value is None else f"{score.value:.4f}"
    return [
        f"{score.spec} = {shown} {op} {other!r} does not hold [{_where(score)}]",
        *score.explanation,
    ]


def _where(score: Score) -> str:
    return Selection(score.stage, score.split or "overall", score.slice).label()


def _side(score: Score) -> str:
    """``recall@10 [stage=reranker split=overall] = 0.8000`` (one side of two Scores)."""
    shown = "n/a" if score.value is None else f"{score.value:.4f}"
    return f"{score.spec} [{_where(score)}] = {shown}"
