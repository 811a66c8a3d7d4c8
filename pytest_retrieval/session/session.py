"""What one test session knows: the golden set, the run, the scores and the gate outcomes.

:class:`RetrievalSession` is the pure core behind the plugin's fixtures and gates. It scores the
run per stage (``retriever``, ``reranker``), split and slice, explains failed gates with the worst
queries, and enforces the held-out guard of its :attr:`~RetrievalSession.scope`
(:class:`~pytest_retrieval.golden.scope.Scope`, the one home of the policy and its wording):

* The held-out split is sealed unless ``settings.heldout`` is set: it is never scored, and a gate
  naming it is skipped with the reason.
* Unsealed, it is scored, but its per-query details (ids, texts, rankings, worst queries) appear
  nowhere unless ``settings.heldout_details`` is also set; only aggregates do.
* Without a split, a score covers every query outside the held-out split ("overall").

A query whose retriever call failed is scored as an empty ranking (0 on every metric) so an error
can never raise a number; the session also fails with the list of such queries.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from ..gates.explain import Leak, explain_leaks, explain_score, find_leaks
from ..gates.gate import (
    TEST_KINDS,
    Gate,
    GateOutcome,
    GateUsageError,
    Score,
    ScoreRefused,
    Selection,
    is_pytest_outcome,
)
from ..gates.judge import judge, unscored
from ..golden.access import Access, AccessRules, build_access
from ..golden.context import EVERY_VALUE
from ..golden.model import GoldenSet, Query
from ..golden.scope import SEALED_REASON, Scope
from ..regression import ledger_baseline as runledger
from ..regression import recording as runbaseline
from ..run.determinism import DeterminismProbe
from ..run.retriever import RETRIEVER_STAGE, QueryOutcome, stage_run, stage_scores
from ..run.shortrankings import RankedRun, depth_problem
from ..run.source import served_from_cache
from ..run.stages import pipeline_order, stage_or_final
from ..scoring.evaluate import Conventions, Evaluation, evaluate_documents
from ..scoring.metrics import MetricSpec
from ..settings.resolve import Settings
from ..verdict import Status, Stop, Verdict

if TYPE_CHECKING:
    from ..formats.runs import RunFile
    from ..gates.declared import Budget, Threshold
    from ..regression.commitinfo import CommitInfo
    from ..regression.family import Against, Family
    from ..regression.ledger_baseline import LedgerBaseline
    from ..regression.outcome import RegressionOutcome
    from ..regression.snapshot import Snapshot
    from ..run.depthplan import DepthPlan
    from ..run.source import RunInfo
    from ..scoring.abstention import Sweep
    from ..scoring.dedup import DuplicateGroups

T = TypeVar("T")


def __tracebackhide__(excinfo: Any) -> bool:
    """pytest hides this module's frames when a gate is misused (unknown slice, split or
    stage) or skipped (a sealed split): the traceback, and a skip's location, is the user's
    line."""
    return bool(excinfo.errisinstance(GateUsageError)) or is_pytest_outcome(excinfo)


class SealedSplit(Exception):
    """Raised (by default) when a gate names the sealed held-out split."""


def _raise_sealed(reason: str) -> NoReturn:
    raise SealedSplit(reason)


def _gate_key(outcome: GateOutcome) -> tuple[object, ...]:
    """What makes two gates of one test the same gate."""
    return (
        outcome.nodeid,
        outcome.metric,
        outcome.op,
        outcome.threshold,
        outcome.stage,
        outcome.split,
        outcome.slice,
    )


@dataclass
class RetrievalSession:
    """The golden set, the run and everything scored from it, for one test session."""

    settings: Settings
    golden: GoldenSet
    baseline: Snapshot | None = None
    #: The declared gates and budgets (ini lines, the gates file, the default checks).
    thresholds: Sequence[Threshold] = ()
    budgets: Sequence[Budget] = ()
    #: How a skip is raised (a sealed split, a check that cannot run): pytest.skip under the
    #: plugin, an exception elsewhere.
    on_skip: Callable[[str], NoReturn] = _raise_sealed
    on_sealed: Callable[[str], NoReturn] = _raise_sealed
    #: Run files to gate instead of calling the retriever (``retrieval_run``), by stage.
    run_files: Mapping[str, RunFile] = field(default_factory=dict)
    #: Duplicate groups: every metric is scored per group (:mod:`.dedup`); None: no groups.
    duplicates: DuplicateGroups | None = None
    #: The commit this run measures (:mod:`.commitinfo`; None outside a git work tree).
    commit: CommitInfo | None = None
    #: Baselines taken from the run ledger (:mod:`.sessionledger`): ``None`` keys the merge-base's
    #: (``retrieval_baseline = merge-base``).
    ledger_baselines: Mapping[str | None, LedgerBaseline] = field(default_factory=dict)
    #: ``retrieval_corpus``'s access metadata (:mod:`.access`); None without a corpus.
    access_rules: AccessRules | None = None
    #: The held-out policy (which queries are scorable, visible, redacted; which split is
    #: sealed), from the settings.
    scope: Scope = field(init=False)
    # What the session learns as it goes; changed only through its methods.
    outcomes: dict[str, QueryOutcome] | None = field(default=None, init=False)
    gate_outcomes: list[GateOutcome] = field(default_factory=list, init=False)
    regression_outcomes: list[RegressionOutcome] = field(default_factory=list, init=False)
    retriever_name: str | None = field(default=None, init=False)
    #: How to ask this retriever for more results (its framework's knob), when known.
    depth_hint: str | None = field(default=None, init=False)
    #: Where the run came from (the retriever, the cache, run files): what
    #: :func:`.runsource.obtain` returned, kept by :meth:`set_run_info`.
    run_info: RunInfo | None = field(default=None, init=False)
    #: How deep the retriever was asked, and why (:mod:`.depthplan`); None for run files.
    depth_plan: DepthPlan | None = field(default=None, init=False)
    current_test: str | None = field(default=None, init=False)
    _ensure_run: Callable[[], None] | None = field(default=None, init=False)
    #: The determinism probe's finding (None: not run), and the extra runs of a multi-run
    #: baseline update (``retrieval_baseline_runs`` - 1 of them).
    probe: DeterminismProbe | None = field(default=None, init=False)
    extra_runs: list[dict[str, QueryOutcome]] = field(default_factory=list, init=False)
    #: Why the run has no numbers (refused or errored, :class:`~.verdict.Stop`); None: it has.
    stop: Stop | None = field(default=None, init=False)
    _family: Family | None = field(default=None, init=False)
    _access: Access | None = field(default=None, init=False)
    _conventions: Conventions | None = field(default=None, init=False)
    _pending: list[Gate] = field(default_factory=list)
    #: Failed Score comparisons of the running test, kept only if it fails (:meth:`settle_test`).
    _unsettled: list[GateOutcome] = field(default_factory=list)
    _cache: dict[tuple[str, tuple[str, ...]], Evaluation] = field(default_factory=dict)
    #: Snapshots by metric list: every budget and the artifact ask for one (a pass over every
    #: query each); the run does not change between them.
    _snapshots: dict[tuple[str, ...], Snapshot] = field(default_factory=dict)
    #: Findings of the run by what they depend on besides it (:meth:`remember`): the
    #: short-ranking check is read by the refusal, the artifact (twice) and the terminal.
    _findings: dict[tuple[object, ...], Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.scope = Scope.from_settings(self.settings)

    # --- which queries -------------------------------------------------------------------

    def scorable_queries(self) -> list[Query]:
        """The queries the retriever runs on: all but the held-out ones, unless unsealed."""
        return [q for q in self.golden if self.scope.scorable(q)]

    def visible_golden(self) -> GoldenSet:
        """The golden set the ``golden_set`` fixture gives: without the held-out split."""
        visible = self.scope.visible
        if all(visible(q) for q in self.golden):
            return self.golden  # the same set (and its fingerprint, computed once)
        return self.golden.where(visible)

    def visible_run(self) -> dict[str, tuple[str, ...]]:
        """The ``retrieval_run`` fixture: the final stage's ranking of each visible query."""
        stage = self.default_stage
        return {q.id: self.ranking(q.id, stage) for q in self.visible_golden()}

    def visible_evaluation(self) -> Evaluation:
        """The ``retrieval_evaluation`` fixture: the final stage on the configured metrics."""
        evaluation = self.evaluation(self.default_stage, self.settings.metric_specs)
        return evaluation.restrict(q.id for q in self.visible_golden())

    def select(self, selection: Selection) -> list[Query]:
        """The queries of a split/slice selection; errors name the known splits and slices."""
        split, slice_name = selection.split, selection.slice
        if split is not None and split not in self.golden.splits:
            known = ", ".join(self.golden.splits) or "none"
            raise GateUsageError(f"unknown split {split!r}; the golden set has: {known}")
        if slice_name is not None and slice_name not in self.golden.slices:
            if slice_name == "*" or selection.context_slice is None:
                known = ", ".join(self.golden.slices) or "none"
                raise GateUsageError(f"unknown slice {slice_name!r}; the golden set has: {known}")
            if selection.context_slice[1] == EVERY_VALUE:
                raise GateUsageError(
                    f"slice {slice_name!r} is one line per value in a declared gate; in a test, "
                    "name one value (slice='KEY:VALUE'), or loop over "
                    "golden_set.context_values(KEY)"
                )
            problem = self.golden.slice_problem(slice_name)
            if problem is not None:
                raise GateUsageError(f"{problem[0]}; {problem[1]}")
        if self.scope.sealed(split):
            self.on_sealed(SEALED_REASON)
        heldout = self.scope.heldout
        return [
            q
            for q in self.golden
            if selection.matches(q.split, q.slices, heldout_split=heldout, context=q.context)
        ]

    # --- the run ------------------------------------------------------------------------

    @property
    def has_run(self) -> bool:
        """True once the retriever has run."""
        return self.outcomes is not None

    def set_outcomes(
        self,
        outcomes: Iterable[QueryOutcome],
        *,
        retriever_name: str | None = None,
        depth_hint: str | None = None,
    ) -> None:
        """Store the run (one outcome per scorable query) and forget cached scores."""
        with self._lock:
            self.outcomes = {o.query_id: o for o in outcomes}
            if retriever_name is not None:
                self.retriever_name = retriever_name
            if depth_hint is not None:
                self.depth_hint = depth_hint
            self._cache.clear()
            self._snapshots.clear()
            self._findings.clear()

    def remember(self, key: tuple[object, ...], build: Callable[[], T]) -> T:
        """``build()`` once per run and ``key`` (everything the value depends on besides the
        run's outcomes, hashable): a finding of the run that several reports read. Forgotten
        when the outcomes change (:meth:`set_outcomes`)."""
        with self._lock:
            if key in self._findings:
                found: T = self._findings[key]
                return found
        value = build()
        with self._lock:
            self._findings[key] = value
        return value

    def set_run_info(self, info: RunInfo) -> None:
        """Store where the run came from (what :func:`.runsource.obtain` returned)."""
        with self._lock:
            self.run_info = info

    # --- checks of the run ------------------------------------------------------------------

    def cutoffs(self) -> tuple[int, ...]:
        """Every cutoff K that is scored: ``retrieval_ks`` and the declared gates' and budgets'."""
        declared = [t.spec.k for t in self.thresholds] + [b.spec.k for b in self.budgets]
        return tuple(sorted({*self.settings.ks, *(k for k in declared if k)}))

    def scored_specs(self) -> list[MetricSpec]:
        """Every metric that is scored: the table's, and the declared gates' and budgets'."""
        return [
            *self.settings.metric_specs,
            *(t.spec for t in self.thresholds),
            *(b.spec for b in self.budgets),
        ]

    def ranked_run(self) -> RankedRun:
        """The run as the short-ranking checks read it (:class:`.shortrankings.RankedRun`:
        the rankings, the depth asked, the knob, the settings that decide); the run must have
        happened."""
        assert self.outcomes is not None
        settings = self.settings
        return RankedRun(
            self.outcomes,
            self.stages,
            self.first_depth,
            self.depth_plan,
            self.depth_hint,
            stored=bool(self.run_files),
            cutoff_unit=settings.cutoff_unit,
            mode=settings.short_rankings,
            doc_id_map=settings.doc_id_map,
        )

    def machine_judgments(self) -> int:
        """How many judgments of the golden set were made by a machine (``--prefill``)."""
        return sum(1 for q in self.golden for label in q.provenance.values() if label.is_machine)

    def set_stop(self, stop: Stop) -> None:
        """Record that the run has no numbers and why (the first stop found is kept): no score
        is given from it any more, and every report says so."""
        with self._lock:
            if self.stop is None:
                self.stop = stop

    def set_checks(
        self, probe: DeterminismProbe | None, extra: Sequence[Sequence[QueryOutcome]]
    ) -> None:
        """Store what :func:`.determinism.run_checks` found."""
        with self._lock:
            self.probe = probe
            self.extra_runs = [{o.query_id: o for o in run} for run in extra]

    def absorb(
        self,
        outcomes: Iterable[QueryOutcome] | None,
        gate_outcomes: Sequence[GateOutcome],
        regression_outcomes: Sequence[RegressionOutcome],
        *,
        retriever_name: str | None,
        depth_hint: str | None = None,
        run_info: RunInfo | None = None,
        depth_plan: DepthPlan | None = None,
    ) -> None:
        """Take over what the xdist workers learned (the controller's merged payload)."""
        if run_info is not None:
            self.run_info = run_info
        if depth_plan is not None:
            self.depth_plan = depth_plan
        if outcomes is not None:
            self.set_outcomes(outcomes, retriever_name=retriever_name, depth_hint=depth_hint)
        elif retriever_name is not None:
            self.retriever_name = retriever_name
        with self._lock:
            self.gate_outcomes = list(gate_outcomes)
            self.regression_outcomes = self._declared_order(regression_outcomes)

    def enter_test(self, nodeid: str | None, ensure_run: Callable[[], None] | None = None) -> None:
        """A test starts: gate records name it, and ``ensure_run`` runs the retriever on the
        first score a gate asks for (through that test's fixtures)."""
        self.current_test = nodeid
        if ensure_run is not None:
            self._ensure_run = ensure_run

    def leave_test(self) -> list[Gate]:
        """The test ended: forget it, and return its gates that were never compared."""
        self.current_test = None
        self._ensure_run = None
        return self.take_uncompared()

    def _require_run(self) -> dict[str, QueryOutcome]:
        # A stopped run is asked again: the run phase fails the test with the stop's reason,
        # never a score of a run whose numbers mean nothing.
        if (self.outcomes is None or self.stop is not None) and self._ensure_run is not None:
            self._ensure_run()
        if self.stop is not None:
            raise RuntimeError(self.stop.text)
        if self.outcomes is None:
            raise RuntimeError("the retriever has not run yet (no test fixture could run it)")
        return self.outcomes

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages present in the run, retriever first."""
        if not self.outcomes:
            return ()
        seen = {stage for o in self.outcomes.values() for stage in o.rankings}
        seen |= {o.error_stage for o in self.outcomes.values() if o.error_stage}
        return pipeline_order(seen)

    @property
    def default_stage(self) -> str:
        """The final stage (:func:`.stages.final_stage`: the ranking users get), the stage of
        every gate that names none; ``retriever`` before the run."""
        return stage_or_final(None, self.stages)

    def failed_queries(self) -> list[QueryOutcome]:
        """Outcomes whose retriever or reranker call failed, in golden-set order."""
        if not self.outcomes:
            return []
        return [o for o in self.outcomes.values() if o.error is not None]

    def ranking(self, query_id: str, stage: str) -> tuple[str, ...]:
        """The ranking of one query at one stage (empty if it failed)."""
        assert self.outcomes is not None
        outcome = self.outcomes.get(query_id)
        return outcome.rankings.get(stage, ()) if outcome else ()

    def _stage(self, stage: str | None) -> str:
        if stage is None:
            return self.default_stage
        if stage not in self.stages:
            known = ", ".join(self.stages) or RETRIEVER_STAGE
            raise GateUsageError(f"unknown stage {stage!r}; this run has: {known}")
        return stage

    @property
    def conventions(self) -> Conventions:
        """How every number of this session is scored: one value, built once from the settings
        and the duplicate groups (:meth:`.evaluate.Conventions.from_settings`), passed by every
        scoring path of the session (this run, extra baseline runs, the rescore mode)."""
        found = self._conventions
        if found is None:
            found = Conventions.from_settings(self.settings, duplicates=self.duplicates)
            self._conventions = found  # two threads at once build equal values: either stays
        return found

    @property
    def access(self) -> Access:
        """The forbidden and stale documents (:func:`.access.build_access`, once)."""
        if self._access is None:
            self._access = build_access(
                self.golden.queries, self.access_rules, source=self.golden.source
            )
        return self._access

    def leaks(
        self, metric: str, k: int, stage: str, queries: Sequence[Query] | None = None
    ) -> list[Leak]:
        """Every ``metric`` (``forbidden``/``stale``) document in the top ``k`` of ``queries``
        (default: the scorable ones) at ``stage`` (:func:`.explain.find_leaks`): what the
        zero-tolerance gate names and every report shows, from one place."""
        outcomes = self._require_run()
        info = self.run_info
        cache = info is not None and info.source == "retriever" and info.cache_mode != "off"
        return find_leaks(
            metric,
            k,
            stage,
            self.scorable_queries() if queries is None else queries,
            outcomes,
            self.access,
            redacted=self.scope.redacted,
            cached=lambda o: cache and served_from_cache(o),
            cutoff_unit=self.settings.cutoff_unit,
        )

    def evaluation(self, stage: str, specs: Sequence[MetricSpec]) -> Evaluation:
        """Every scorable query scored at ``stage`` on ``specs`` (cached)."""
        outcomes = self._require_run()
        key = (stage, tuple(str(s) for s in specs))
        with self._lock:
            cached = self._cache.get(key)
        if cached is None:
            cached = self.score_run(outcomes, stage, specs)
            with self._lock:
                self._cache[key] = cached
        return cached

    def score_run(
        self, outcomes: Mapping[str, QueryOutcome], stage: str, specs: Sequence[MetricSpec]
    ) -> Evaluation:
        """``outcomes`` (this run, or an extra baseline run) scored at ``stage`` over the
        scorable queries with the session's :attr:`conventions` (gain, grades, zero-relevant
        queries, duplicate groups, the stage's score floor, unjudged documents, repeated ids)."""
        queries = self.scorable_queries()
        run = stage_run(outcomes, queries, stage)
        # The document rankings, and the ids as returned where they repeated: the one rule of
        # evaluate (repeats at their best rank, K in the unit set, distinct@K as returned).
        returned = {
            q.id: outcomes[q.id].returned[stage]
            for q in queries
            if q.id in run and stage in outcomes[q.id].returned
        }
        return evaluate_documents(
            run,
            {q.id: q.judgments for q in queries},
            specs,
            returned=returned,
            scores=stage_scores(outcomes, stage),
            conventions=self.conventions,
            stage=stage,
            **self.access.scoring_arguments(specs),
        )

    def abstention_sweep(self, stage: str) -> Sweep | None:
        """``abstain_rate`` and ``answer_rate`` over candidate floors from this stage's scores,
        over the overall selection (never the held-out split); None without scores."""
        from ..scoring.abstention import sweep

        outcomes = self._require_run()
        queries = self.select(Selection())
        run = stage_run(outcomes, queries, stage)
        return sweep(
            stage,
            [q.id for q in queries],
            run,
            {q.id: q.judgments for q in queries},
            stage_scores(outcomes, stage),
            min_grade=self.conventions.min_grade,
            floor=self.conventions.floor_for(stage),
        )

    def _evaluation_for(self, stage: str, spec: MetricSpec) -> Evaluation:
        table = self.settings.metric_specs
        if spec in table:
            return self.evaluation(stage, table)
        return self.evaluation(stage, (spec,))

    # --- scores and gates ------------------------------------------------------------------

    @property
    def effective_depth(self) -> int:
        """The configured depth: how many results each ranking is meant to hold (the depth
        baselines record).

        ``retrieval_depth`` when set; otherwise the largest of ``retrieval_ks`` and of every K
        the declared gates and budgets name, so that each of them is scored on a full list.
        What the retriever is asked for first, and which queries are asked again deeper, is
        :attr:`depth_plan`'s (:func:`.depthplan.plan_depth`).
        """
        if self.settings.depth is not None:
            return self.settings.retrieval_depth
        declared = [t.spec.k for t in self.thresholds] + [b.spec.k for b in self.budgets]
        return max([self.settings.retrieval_depth, *(k for k in declared if k)])

    def plan_depth(self, retriever: Any) -> DepthPlan:
        """Decide (and keep) how deep ``retriever`` is asked (:func:`.depthplan.plan_depth`)."""
        from ..run.depthplan import plan_depth
        from ..run.retriever import RetrieverShapeError, describe_retriever

        try:
            shape = describe_retriever(retriever, self.effective_depth)
        except RetrieverShapeError:  # the runner refuses it with its own message
            shape = None
        plan = plan_depth(
            self.settings, cutoff=max(self.cutoffs()), depth=self.effective_depth, shape=shape
        )
        with self._lock:
            self.depth_plan = plan
        return plan

    @property
    def first_depth(self) -> int:
        """The depth of each query's first retriever call (the depth plan's, once decided)."""
        plan = self.depth_plan
        return plan.first if plan is not None else self.effective_depth

    def verdict(self) -> Verdict:
        """Failed gates, regressions and queries: the one verdict of this session."""
        return Verdict.count(
            (g.passed for g in self.gate_outcomes),
            (r.status for r in self.regression_outcomes),
            failed_queries=len(self.failed_queries()),
            queries=len(self.scorable_queries()),
            stop=self.stop,
        )

    def score(self, spec: MetricSpec, selection: Selection) -> Score:
        """The mean of ``spec`` over a selection, with the worst queries as explanation."""
        queries = self.select(selection)
        outcomes = self._require_run()
        stage = self._stage(selection.stage)
        problem = depth_problem(self.ranked_run(), spec, stage)
        if problem is not None:
            raise ScoreRefused(problem)
        evaluation = self._evaluation_for(stage, spec).restrict(q.id for q in queries)
        unmeasured = evaluation.unmeasured.get(str(spec))
        if unmeasured is not None:
            raise ScoreRefused(f"{spec} cannot be measured [{stage}]: {unmeasured}")
        value = evaluation.means[str(spec)]
        values = [v for v in evaluation.columns[str(spec)] if v is not None]
        ci = self._interval(values)
        explanation = explain_score(
            spec,
            stage,
            queries,
            evaluation,
            outcomes,
            redacted=self.scope.redacted,
            limit=self.settings.worst,
        )
        if spec.metric.source == "access":
            assert spec.k is not None
            leaks = self.leaks(spec.name, spec.k, stage, queries)
            explanation += explain_leaks(spec, stage, queries, leaks)
        if ci is not None and spec.metric.source != "access":
            # A leak gate's explanation is its leaks (the zero-tolerance one has no statistics).
            explanation.insert(
                1,
                f"{self.settings.confidence:.0%} bootstrap confidence interval of the mean: "
                f"[{ci[0]:.4f}, {ci[1]:.4f}]",
            )
        return Score(
            recorder=self.record_score,
            ci=ci,
            spec=spec,
            value=value,
            n=evaluation.counts[str(spec)],
            skipped=len(evaluation.skipped_no_relevant),
            stage=stage,
            split=selection.split,
            slice=selection.slice,
            explanation=tuple(explanation),
        )

    def _interval(self, values: Sequence[float]) -> tuple[float, float] | None:
        """Percentile bootstrap interval of the mean (seeded: reruns print the same numbers)."""
        if not values:
            return None
        from ..scoring.stats import bootstrap_ci

        ci = bootstrap_ci(
            values,
            confidence=self.settings.confidence,
            resamples=self.settings.resamples,
            seed=self.settings.seed,
        )
        return (ci.low, ci.high)

    def _record(self, outcome: GateOutcome) -> bool:
        """Append ``outcome``; False (nothing appended) when its test already recorded the same
        gate: a Score compared twice, or a Score twin and its ``assert_*`` gate, is one gate."""
        key = _gate_key(outcome) if outcome.nodeid is not None else None
        with self._lock:
            if outcome.kind in TEST_KINDS and any(
                o.kind in TEST_KINDS and _gate_key(o) == key for o in self.gate_outcomes
            ):
                return False
            self.gate_outcomes.append(outcome)
            return True

    def record_score(self, score: Score, op: str, threshold: float) -> None:
        """Record a Score twin compared with a number (``assert recall_at(50) >= 0.9``) as a
        gate of kind ``score`` (:func:`.judge.judge`, the message an ``assert_*`` gate has).

        It raises nothing (the user's ``assert`` does). Compared in a test, a comparison that does
        not hold stays only if the test fails (:meth:`settle_test`): one side of an ``or`` that
        held, an ``if`` or ``assert not (...)`` is not a failed gate.
        """
        selection = Selection(score.stage, score.split, score.slice)
        if score.refused is not None:
            # It cannot be scored: a failed gate with the reason, as check() records for its
            # assert_* sibling (the comparison then raises it).
            outcome = unscored(
                score.spec,
                selection,
                op,
                threshold,
                kind="score",
                name=None,
                nodeid=self.current_test,
                passed=False,
                message=score.refused,
            )
        else:
            outcome = judge(
                score,
                score.spec,
                selection,
                op,
                threshold,
                confidence=self.settings.confidence,
                kind="score",
                name=None,
                nodeid=self.current_test,
            )
        if self._record(outcome) and not outcome.passed and outcome.nodeid is not None:
            with self._lock:
                self._unsettled.append(outcome)

    def settle_test(self, *, failed: bool) -> None:
        """The test that is ending ``failed`` or not: keep its failed Score comparisons only if
        it failed (the comparison then was its failing assertion, or beside it)."""
        with self._lock:
            unsettled, self._unsettled = self._unsettled, []
            if failed or not unsettled:
                return
            drop = {id(o) for o in unsettled}
            self.gate_outcomes = [o for o in self.gate_outcomes if id(o) not in drop]

    def check(
        self,
        spec: MetricSpec,
        selection: Selection,
        op: str,
        threshold: float,
        *,
        kind: str = "assert",
        name: str | None = None,
    ) -> GateOutcome:
        """Compare a score with a threshold, record the outcome and return it
        (:func:`.judge.judge`).

        A gate on the sealed held-out split is recorded as skipped, then skipped through
        :attr:`on_sealed` (pytest.skip under the plugin).
        """
        record = partial(
            unscored, spec, selection, op, threshold, kind=kind, name=name, nodeid=self.current_test
        )
        if self.scope.sealed(selection.split):
            self._record(record(passed=True, message=SEALED_REASON, skipped_reason=SEALED_REASON))
            self.on_sealed(SEALED_REASON)
        try:
            score = self.score(spec, selection)
        except GateUsageError as exc:
            # The gate fails (in its test, with this message); the record makes the reports and
            # the artifact show it as failed too, not leave it out.
            self._record(record(passed=False, message=str(exc)))
            if isinstance(exc, ScoreRefused):  # the user sees and catches a GateUsageError
                raise GateUsageError(str(exc)) from None
            raise
        outcome = judge(
            score,
            spec,
            selection,
            op,
            threshold,
            confidence=self.settings.confidence,
            kind=kind,
            name=name,
            nodeid=self.current_test,
        )
        self._record(outcome)
        return outcome

    def gate_created(self, gate: Gate) -> None:
        """Remember a gate created in the current test."""
        self._pending.append(gate)

    def take_uncompared(self) -> list[Gate]:
        """The gates of the current test that were never compared (and forget them all)."""
        pending, self._pending = self._pending, []
        return [g for g in pending if not g.compared]

    # --- baselines and regressions ---------------------------------------------------------

    def snapshot_specs(self, extra: Sequence[MetricSpec] = ()) -> tuple[MetricSpec, ...]:
        """The metrics this session's snapshots hold (:func:`.runbaseline.snapshot_specs`):
        the configured ones, every budget's, forbidden@K / stale@K at every scored K when this
        run can measure them (so a baseline written now can be budgeted on them), every
        declared threshold's (so ``pytest-retrieval gate`` re-judges each from the artifact),
        ``extra``."""
        access = self.access
        measurable = [
            name
            for name, why in (
                ("forbidden", access.forbidden_unmeasured),
                ("stale", access.stale_unmeasured),
            )
            if why is None
        ]
        leaks = runbaseline.leak_specs(measurable, self.cutoffs())
        return runbaseline.snapshot_specs(
            self.settings,
            self.budgets,
            extra,
            leaks=leaks,
            gated=[t.spec for t in self.thresholds],
        )

    def snapshot(self, extra: Sequence[MetricSpec] = ()) -> Snapshot:
        """Per-query values, relevant ranks and top ids of every visible query, per stage, with
        the settings a baseline must share to be comparable (the depth, the duplicate groups:
        :func:`.runbaseline.snapshot_settings`), computed once per metric list (the configured
        ones, every budget's, ``extra``). Held-out queries never enter with per-query detail;
        unsealed, only their means do."""
        from ..regression.snapshot import build_snapshot

        specs = self.snapshot_specs(extra)
        key = tuple(str(s) for s in specs)
        with self._lock:
            cached = self._snapshots.get(key)
        if cached is not None:
            return cached
        held = [q.id for q in self.golden if not self.scope.visible(q)]
        snapshot = build_snapshot(
            self.visible_golden(),
            {stage: self.evaluation(stage, specs) for stage in self.stages},
            self.ranking,
            metric_names=[str(s) for s in specs],
            settings=runbaseline.snapshot_settings(
                self.settings, depth=self.effective_depth, duplicates=self.duplicates
            ),
            heldout_ids=held if self.scope.unsealed else [],
            index_version=self.settings.index_version,
            returned_of=partial(runbaseline.returned_of, self.outcomes or {}),
        )
        with self._lock:
            self._snapshots[key] = snapshot
        return snapshot

    def baseline_snapshot(self) -> Snapshot:
        """What ``--retrieval-update-baseline`` writes: this run's snapshot, or with extra runs
        (``retrieval_baseline_runs``) the per-query means and spread over all of them, each
        scored as this run is (:meth:`score_run`)."""
        from ..regression.snapshot import average_snapshots, build_snapshot

        first = self.snapshot()
        if not self.extra_runs:
            return first
        specs = self.snapshot_specs()
        runs = [first]
        for outcomes in self.extra_runs:
            runs.append(
                build_snapshot(
                    self.visible_golden(),
                    {stage: self.score_run(outcomes, stage, specs) for stage in first.stages},
                    partial(runbaseline.ranking_of, outcomes),
                    metric_names=list(first.metrics),
                    settings=first.settings,
                    returned_of=partial(runbaseline.returned_of, outcomes),
                )
            )
        return average_snapshots(runs)

    def against(self, budget: Budget) -> Against | None:
        """What ``budget`` is compared with when its baseline comes from the run ledger, or None
        for the session's baseline. A ledger baseline is re-scored under today's labels, so the
        queries both runs have are compared (intersect) whatever the baseline mode says."""
        from ..regression.family import Against
        from ..regression.pairs import CompareOptions

        source = self.ledger_baseline_for(budget)
        if source is None:
            return None
        options = CompareOptions.from_settings(self.settings, conventions=self.conventions)
        options = dataclasses.replace(
            options, mode="intersect", refresh=source.refresh or options.refresh
        )
        return Against(source.snapshot, options, source.label)

    def regression_family(self, *, baseline_path: str) -> Family:
        """Every declared budget adjusted together, those compared with a ledger entry included
        (:meth:`against`), computed once (on the first check). Deterministic (same run,
        baseline, budgets and seed), so every xdist worker computes the same family and reads
        its own check from it."""
        from ..regression.family import family
        from ..regression.pairs import CompareOptions

        with self._lock:
            cached = self._family
        if cached is not None:
            return cached
        computed = family(
            self.baseline,
            self.snapshot(),
            self.budgets,
            options=CompareOptions.from_settings(self.settings, conventions=self.conventions),
            baseline_path=baseline_path,
            against={b.name: a for b in self.budgets if (a := self.against(b)) is not None},
        )
        with self._lock:
            if self._family is None:
                self._family = computed
            return self._family

    def ledger_baseline_for(self, budget: Budget) -> LedgerBaseline | None:
        """The baseline ``budget`` takes from the run ledger (its ``since=`` anchor's entry, or
        the merge-base's), or None when it is compared with the baseline file."""
        if budget.since is not None:
            return self.ledger_baselines.get(budget.since)
        if self.settings.merge_base:
            return self.ledger_baselines.get(None)
        return None

    def _declared_order(self, outcomes: Iterable[RegressionOutcome]) -> list[RegressionOutcome]:
        """``outcomes`` in the order their budgets were declared (:attr:`budgets`, slice=*
        expanded), whatever order the checks ran in: serial runs them in collection order,
        xdist workers interleave them, and the artifact, the summary and the ledger must be the
        same in both. An outcome of no declared budget comes last, by name; ties by stage and
        message."""
        position = {b.name: i for i, b in enumerate(self.budgets)}
        return sorted(
            outcomes,
            key=lambda r: (position.get(r.name, len(position)), r.name, r.stage or "", r.message),
        )

    def regression(self, budget: Budget, *, baseline_path: str) -> RegressionOutcome:
        """Check one budget against the loaded baseline (or its ledger entry: the merge-base's);
        record and return the outcome."""
        from ..regression.outcome import BaselineRef
        from ..regression.pairs import CompareOptions
        from ..regression.rule import compare

        if self.settings.update_baseline:
            reason = "this run updates the baseline; regressions are checked on the next run"
            self.on_skip(reason)
        self._require_run()
        source = self.ledger_baseline_for(budget)
        if source is not None and source.skip is not None:
            # No entry to compare with (a new ledger): skipped with the fix, never red.
            with self._lock:
                self.regression_outcomes = self._declared_order(
                    [*self.regression_outcomes, runledger.skipped(budget, source.skip)]
                )
            self.on_skip(source.skip)
        against = self.against(budget)
        # The stages compared (stage=S with S; else the final stage of each side, whatever
        # their names) are the regression rule's: regression_pairs.compared_stages.
        outcome = compare(
            self.baseline if against is None else against.baseline,
            self.snapshot(extra=(budget.spec,)),
            budget,
            options=CompareOptions.from_settings(self.settings, conventions=self.conventions)
            if against is None
            else against.options,
            baseline_path=baseline_path if against is None else against.path,
            family_result=self.regression_family(baseline_path=baseline_path),
        )
        if source is not None and source.note:
            outcome = dataclasses.replace(outcome, message=f"{outcome.message}\n{source.note}")
        ref = source.ref if source is not None else None
        if source is None and self.baseline is not None:
            ref = BaselineRef("file", label=baseline_path)
        if ref is not None and outcome.status is not Status.MISSING:
            outcome = dataclasses.replace(outcome, baseline=ref)  # which one, structured
        with self._lock:
            self.regression_outcomes = self._declared_order([*self.regression_outcomes, outcome])
        if outcome.status is Status.SKIPPED:
            self.on_skip(outcome.message)
        return outcome
