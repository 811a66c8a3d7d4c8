"""What one test session knows: the golden set, the run, the scores and the gate outcomes.

:class:`RetrievalSession` is the pure core behind the plugin's fixtures and gates. It scores the
run per stage (``retriever``, ``reranker``), split and slice, explains failed gates with the worst
queries, and enforces the held-out guard:

* The held-out split is sealed unless ``settings.heldout`` is set: it is never scored, and a gate
  naming it is skipped with the reason.
* Unsealed, it is scored, but its per-query details (ids, texts, rankings, worst queries) appear
  nowhere unless ``settings.heldout_details`` is also set; only aggregates do.
* Without a split, a score covers every query outside the held-out split ("overall").

A query whose retriever call failed is scored as an empty ranking (0 on every metric) so an error
can never raise a number; the session also fails with the list of such queries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from .evaluate import Evaluation, evaluate
from .explain import WorstQuery, worst_queries
from .gates import (
    OPS,
    Gate,
    GateOutcome,
    GateUsageError,
    Score,
    Selection,
    _is_pytest_outcome,
    describe_op_failure,
)
from .golden import GoldenSet, Query
from .metrics import MetricSpec
from .retriever import RERANKER_STAGE, RETRIEVER_STAGE, QueryOutcome, QueryRequest
from .runchecks import Coverage, ShortRankings, id_mismatch, short_rankings
from .settings import Settings
from .verdict import Verdict

if TYPE_CHECKING:
    from .abstention import Sweep
    from .baseline import Snapshot
    from .declared import Budget, Threshold
    from .dedup import DuplicateGroups
    from .formats.runs import RunFile
    from .regression import CompareOptions, Family, RegressionOutcome
    from .runsource import RunInfo


SEALED_REASON = "held-out split is sealed; CI unseals it with --retrieval-heldout"


def __tracebackhide__(excinfo: Any) -> bool:
    """pytest hides this module's frames when a gate is misused (unknown slice, split or
    stage) or skipped (a sealed split): the traceback, and a skip's location, is the user's
    line."""
    return bool(excinfo.errisinstance(GateUsageError)) or _is_pytest_outcome(excinfo)


@dataclass(frozen=True, slots=True)
class DeterminismProbe:
    """What re-running a few queries after the run found: which rankings came back different.

    ``queries`` are the ids re-run (never held-out ones), ``changed`` those whose ranking at
    some stage differs from the main run's (queries that failed in either run are left out).
    """

    queries: tuple[str, ...]
    changed: tuple[str, ...]

    @property
    def noisy(self) -> bool:
        """True when at least one ranking changed: the pipeline is nondeterministic."""
        return bool(self.changed)

    def describe(self) -> str:
        """``determinism probe: 5 queries re-run, 2 rankings changed (q1, q7)``."""
        head = (
            f"determinism probe: {len(self.queries)} quer{'y' if len(self.queries) == 1 else 'ies'}"
            f" re-run, {len(self.changed)} ranking{'' if len(self.changed) == 1 else 's'} changed"
        )
        if not self.changed:
            return head + " (the pipeline looks deterministic)"
        shown = ", ".join(self.changed[:5]) + (" ..." if len(self.changed) > 5 else "")
        return head + f" ({shown}): the pipeline is nondeterministic"

    def to_dict(self) -> dict[str, Any]:
        """Builtins (artifact, xdist payload)."""
        return {"queries": list(self.queries), "changed": list(self.changed)}

    @classmethod
    def from_dict(cls, data: Any) -> DeterminismProbe:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(data.get("queries", ())), tuple(data.get("changed", ())))


def probe_ids(queries: Sequence[Query], count: int, heldout_split: str) -> list[str]:
    """Up to ``count`` query ids spread evenly over the golden set, never held-out ones."""
    pool = [q.id for q in queries if q.split != heldout_split]
    if count <= 0 or not pool:
        return []
    if count >= len(pool):
        return pool
    return [pool[(i * len(pool)) // count] for i in range(count)]


def changed_rankings(
    first: dict[str, QueryOutcome], again: Iterable[QueryOutcome]
) -> tuple[str, ...]:
    """Ids whose ranking at some stage differs between two runs (failures left out)."""
    changed = []
    for outcome in again:
        before = first.get(outcome.query_id)
        if before is None or before.error is not None or outcome.error is not None:
            continue
        if dict(before.rankings) != dict(outcome.rankings):
            changed.append(outcome.query_id)
    return tuple(changed)


class SealedSplit(Exception):
    """Raised (by default) when a gate names the sealed held-out split."""


def _raise_sealed(reason: str) -> NoReturn:
    raise SealedSplit(reason)


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
    # What the session learns as it goes; changed only through its methods.
    outcomes: dict[str, QueryOutcome] | None = field(default=None, init=False)
    gate_outcomes: list[GateOutcome] = field(default_factory=list, init=False)
    regression_outcomes: list[RegressionOutcome] = field(default_factory=list, init=False)
    retriever_name: str | None = field(default=None, init=False)
    #: How to ask this retriever for more results (its framework's knob), when known.
    depth_hint: str | None = field(default=None, init=False)
    #: Where the run came from (the retriever, the cache, run files): :func:`.runsource.obtain`.
    run_info: RunInfo | None = field(default=None, init=False)
    current_test: str | None = field(default=None, init=False)
    _ensure_run: Callable[[], None] | None = field(default=None, init=False)
    #: The determinism probe's finding (None: not run), and the extra runs of a multi-run
    #: baseline update (``retrieval_baseline_runs`` - 1 of them).
    probe: DeterminismProbe | None = field(default=None, init=False)
    extra_runs: list[dict[str, QueryOutcome]] = field(default_factory=list, init=False)
    _family: Family | None = field(default=None, init=False)
    _pending: list[Gate] = field(default_factory=list)
    _cache: dict[tuple[str, tuple[str, ...]], Evaluation] = field(default_factory=dict)
    #: Snapshots by metric list: every budget and the artifact ask for one (a pass over every
    #: query each); the run does not change between them.
    _snapshots: dict[tuple[str, ...], Snapshot] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- which queries -------------------------------------------------------------------

    @property
    def heldout_name(self) -> str:
        """The held-out split's name."""
        return self.settings.heldout_split

    @property
    def unsealed(self) -> bool:
        """True when the held-out split is scored (``--retrieval-heldout``)."""
        return self.settings.heldout

    @property
    def show_heldout_details(self) -> bool:
        """True when held-out per-query details may be shown."""
        return self.settings.heldout and self.settings.heldout_details

    def scorable_queries(self) -> list[Query]:
        """The queries the retriever runs on: all but the held-out ones, unless unsealed."""
        return [q for q in self.golden if self.unsealed or q.split != self.heldout_name]

    def visible_golden(self) -> GoldenSet:
        """The golden set the ``golden_set`` fixture gives: without the held-out split."""
        heldout = self.heldout_name
        if all(q.split != heldout for q in self.golden):
            return self.golden  # the same set (and its fingerprint, computed once)
        return self.golden.where(lambda q: q.split != heldout)

    def is_redacted(self, query: Query) -> bool:
        """True when this query's details must not be shown."""
        return query.split == self.heldout_name and not self.show_heldout_details

    def select(self, selection: Selection) -> list[Query]:
        """The queries of a split/slice selection; errors name the known splits and slices."""
        split, slice_name = selection.split, selection.slice
        if split is not None and split not in self.golden.splits:
            known = ", ".join(self.golden.splits) or "none"
            raise GateUsageError(f"unknown split {split!r}; the golden set has: {known}")
        if slice_name is not None and slice_name not in self.golden.slices:
            known = ", ".join(self.golden.slices) or "none"
            raise GateUsageError(f"unknown slice {slice_name!r}; the golden set has: {known}")
        if split == self.heldout_name and not self.unsealed:
            self.on_sealed(SEALED_REASON)
        return [
            q
            for q in self.golden
            if selection.matches(q.split, q.slices, heldout_split=self.heldout_name)
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

    # --- checks of the run ------------------------------------------------------------------

    def hint_for(self, depth: int) -> str | None:
        """How to ask this retriever for ``depth`` results, when its framework's knob is known."""
        from .specs import hint_for

        return hint_for(self.depth_hint, depth)

    def cutoffs(self) -> tuple[int, ...]:
        """Every cutoff K that is scored: ``retrieval_ks`` and the declared gates' and budgets'."""
        declared = [t.spec.k for t in self.thresholds] + [b.spec.k for b in self.budgets]
        return tuple(sorted({*self.settings.ks, *(k for k in declared if k)}))

    def _ran(self, stage: str) -> list[tuple[str, ...]]:
        """The rankings of one stage, of the queries that ran without an error."""
        assert self.outcomes is not None
        return [
            o.rankings[stage]
            for o in self.outcomes.values()
            if stage in o.rankings and o.error is None
        ]

    def short_rankings(self) -> list[ShortRankings]:
        """Per stage: rankings shorter than the cutoffs scored (see :mod:`.runchecks`)."""
        if not self.outcomes or self.settings.short_rankings == "off":
            return []
        found = []
        for stage in self.stages:
            hint = self.hint_for(self.effective_depth) if stage == RETRIEVER_STAGE else None
            finding = short_rankings(
                stage,
                self._ran(stage),
                cutoffs=self.cutoffs(),
                depth=self.effective_depth,
                hint=hint,
            )
            if finding is not None:
                found.append(finding)
        return found

    def gated_cutoffs(self) -> dict[str, tuple[int, ...]]:
        """Per stage, the cutoffs the gates look at (declared, recorded or budgeted; a gate
        without a stage looks at the final one). When no gate names a cutoff, the final stage
        at the ``retrieval_ks`` cutoff nearest 10."""
        pairs: set[tuple[str, int]] = set()
        declared = [(t.spec, t.selection.stage) for t in self.thresholds]
        declared += [(b.spec, b.selection.stage) for b in self.budgets]
        declared += [(MetricSpec.parse(g.metric), g.stage) for g in self.gate_outcomes]
        for spec, stage in declared:
            if spec.k is not None and spec.name != "judged":
                pairs.add((stage or self.default_stage, spec.k))
        if not pairs:
            pairs.add((self.default_stage, min(self.settings.ks, key=lambda k: (abs(k - 10), k))))
        return {
            stage: tuple(sorted(k for s, k in pairs if s == stage))
            for stage in self.stages
            if any(s == stage for s, _k in pairs)
        }

    def coverage(self) -> list[Coverage]:
        """judged@K per stage at each cutoff the gates look at, over the visible queries
        (the held-out split's coverage is not shown: it would describe its rankings)."""
        if not self.outcomes:
            return []
        visible = [q.id for q in self.scorable_queries() if q.split != self.heldout_name]
        found = []
        for stage, cutoffs in self.gated_cutoffs().items():
            specs = [MetricSpec("judged", k) for k in cutoffs]
            evaluation = self.evaluation(stage, specs).restrict(visible)
            for spec in specs:
                values = [v for v in evaluation.columns[str(spec)] if v is not None]
                found.append(
                    Coverage(
                        stage=stage,
                        cutoff=spec.k or 0,
                        value=sum(values) / len(values) if values else None,
                        queries=len(values),
                        with_holes=sum(1 for v in values if v < 1.0),
                    )
                )
        return found

    def machine_judgments(self) -> int:
        """How many judgments of the golden set were made by a machine (``--prefill``)."""
        return sum(1 for q in self.golden for label in q.provenance.values() if label.is_machine)

    def refusal(self, corpus_ids: Collection[str] | None = None) -> str | None:
        """Why this run's numbers would be meaningless, as a usage error; None when they are not.

        A ``retrieval_doc_id`` path that no returned item has (every query failed on it: a typo,
        not a retriever failure); ids that (almost) never match a judged or corpus id; short
        rankings when ``retrieval_short_rankings = error``.
        """
        problem = self.doc_id_problem()
        if problem is not None:
            return problem
        problem = self.id_problem(corpus_ids)
        if problem is not None:
            return problem
        if self.settings.short_rankings == "error":
            found = self.short_rankings()
            if found:
                return "pytest-retrieval: " + "\n".join(f.message for f in found)
        return None

    def doc_id_problem(self) -> str | None:
        """The usage error when every query failed because no returned item has the
        ``retrieval_doc_id`` path: the setting is wrong, not each query."""
        if not self.outcomes or not self.settings.doc_id or ":" in self.settings.doc_id:
            return None
        outcomes = list(self.outcomes.values())
        if not all(o.error_type == "DocIdPathError" for o in outcomes):
            return None
        visible = [o for o in outcomes if not self.is_redacted(self.golden[o.query_id])]
        example = f" (query {visible[0].query_id!r}: {visible[0].error})" if visible else ""
        return (
            f"pytest-retrieval: retrieval_doc_id = {self.settings.doc_id}: no returned item has "
            f"it, so every query failed{example}. Set it to the key or attribute path where each "
            "result keeps its document id (e.g. metadata.source, meta.source, node.ref_doc_id), "
            "or remove it to use the default lookup"
        )

    def id_problem(self, corpus_ids: Collection[str] | None = None) -> str | None:
        """The usage error when (almost) no returned id is a judged id (or a corpus id)."""
        if not self.outcomes or self.settings.id_check == "off":
            return None
        stage = self.stages[0] if self.stages else RETRIEVER_STAGE
        visible = [q for q in self.scorable_queries() if q.split != self.heldout_name]
        rankings = {
            q.id: self.outcomes[q.id].rankings.get(stage, ())
            for q in visible
            if q.id in self.outcomes and self.outcomes[q.id].error is None
        }
        judged = {doc for q in self.golden for doc in q.judgments}
        problem = id_mismatch(rankings, judged, what="judged", stage=stage)
        if problem is None and corpus_ids:
            problem = id_mismatch(rankings, corpus_ids, what="corpus", stage=stage)
        return problem

    def run(
        self,
        retriever: Any,
        reranker: Any,
        *,
        doc_id: Any = None,
        doc_map: Any = None,
        progress: Callable[[int, int], None] | None = None,
        requests: Sequence[QueryRequest] | None = None,
        only: Sequence[str] | None = None,
    ) -> list[QueryOutcome]:
        """Call the retriever (and reranker) on every scorable query, at the session's depth;
        or only on ``requests`` (what the cache did not serve).

        Returns the outcomes (store them with :meth:`set_outcomes`); a TypeError means the
        retriever object has no method we can call. ``only`` restricts the run to these ids
        (the determinism probe).
        """
        from .retriever import run_pipeline

        settings = self.settings
        if requests is None:
            queries = self.scorable_queries()
            if only is not None:
                wanted = set(only)
                queries = [q for q in queries if q.id in wanted]
            requests = [QueryRequest(q.id, q.text or "") for q in queries]
        return run_pipeline(
            requests,
            retriever,
            reranker,
            depth=self.effective_depth,
            concurrency=settings.concurrency,
            timeout=settings.timeout or None,
            batch_size=settings.batch_size,
            doc_id=doc_id,
            doc_map=doc_map,
            doc_id_separator=settings.doc_id_separator,
            progress=progress,
        )

    def run_checks(
        self, retriever: Any, reranker: Any, first: list[QueryOutcome], **options: Any
    ) -> tuple[DeterminismProbe | None, list[list[QueryOutcome]]]:
        """After the main run: the determinism probe (``retrieval_determinism_probe`` queries
        re-run, rankings compared) and, when updating a baseline from several runs, the extra
        runs. ``options`` are :meth:`run`'s keyword arguments."""
        extra: list[list[QueryOutcome]] = []
        if self.settings.update_baseline:
            for _ in range(self.settings.baseline_runs - 1):
                extra.append(self.run(retriever, reranker, **options))
        by_id = {o.query_id: o for o in first}
        if extra:
            # The extra runs are a free probe of every query: compare each with the first run.
            ids = probe_ids(self.scorable_queries(), len(first), self.heldout_name)
            wanted = set(ids)
            changed: set[str] = set()
            for run in extra:
                changed.update(changed_rankings(by_id, [o for o in run if o.query_id in wanted]))
            return DeterminismProbe(tuple(ids), tuple(i for i in ids if i in changed)), extra
        # The probe serves the regression gates (run-to-run noise is what makes a baseline
        # comparison flap), so it runs only when a baseline is configured: without one the
        # retriever is called exactly once per query.
        count = self.settings.determinism_probe if self.settings.baseline else 0
        ids = probe_ids(self.scorable_queries(), count, self.heldout_name)
        if not ids:
            return None, extra
        again = self.run(retriever, reranker, only=ids, **options)
        return DeterminismProbe(tuple(ids), changed_rankings(by_id, again)), extra

    def set_checks(
        self, probe: DeterminismProbe | None, extra: Sequence[Sequence[QueryOutcome]]
    ) -> None:
        """Store what :meth:`run_checks` found."""
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
    ) -> None:
        """Take over what the xdist workers learned (the controller's merged payload)."""
        if run_info is not None:
            self.run_info = run_info
        if outcomes is not None:
            self.set_outcomes(outcomes, retriever_name=retriever_name, depth_hint=depth_hint)
        elif retriever_name is not None:
            self.retriever_name = retriever_name
        with self._lock:
            self.gate_outcomes = list(gate_outcomes)
            self.regression_outcomes = list(regression_outcomes)

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
        if self.outcomes is None and self._ensure_run is not None:
            self._ensure_run()
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
        ordered = [s for s in (RETRIEVER_STAGE, RERANKER_STAGE) if s in seen]
        return tuple(ordered + sorted(seen - set(ordered)))

    @property
    def default_stage(self) -> str:
        """The last stage (the final ranking)."""
        return self.stages[-1] if self.stages else RETRIEVER_STAGE

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

    def evaluation(self, stage: str, specs: Sequence[MetricSpec]) -> Evaluation:
        """Every scorable query scored at ``stage`` on ``specs`` (cached)."""
        self._require_run()
        key = (stage, tuple(str(s) for s in specs))
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        outcomes = self._require_run()
        queries = self.scorable_queries()
        run = {
            q.id: outcomes[q.id].rankings[stage]
            for q in queries
            if q.id in outcomes and stage in outcomes[q.id].rankings
        }
        result = evaluate(
            run,
            {q.id: q.judgments for q in queries},
            specs,
            gain=self.settings.gain,  # type: ignore[arg-type]
            min_grade=self.settings.min_grade,
            no_relevant=self.settings.no_relevant,  # type: ignore[arg-type]
            duplicates=self.duplicates,
            scores=self._scores(stage),
            score_floor=self.settings.floor_for(stage),
            unjudged=self.settings.unjudged,  # type: ignore[arg-type]
        )
        with self._lock:
            self._cache[key] = result
        return result

    def _scores(self, stage: str) -> dict[str, tuple[float | None, ...]]:
        """The scores of one stage per query, where its items had them."""
        assert self.outcomes is not None
        return {
            qid: o.scores[stage]
            for qid, o in self.outcomes.items()
            if stage in o.scores and o.error is None
        }

    def abstention_sweep(self, stage: str) -> Sweep | None:
        """``abstain_rate`` and ``answer_rate`` over candidate floors from this stage's scores,
        over the overall selection (never the held-out split); None without scores."""
        from .abstention import sweep

        outcomes = self._require_run()
        queries = self.select(Selection())
        run = {
            q.id: outcomes[q.id].rankings[stage]
            for q in queries
            if q.id in outcomes and stage in outcomes[q.id].rankings
        }
        return sweep(
            stage,
            [q.id for q in queries],
            run,
            {q.id: q.judgments for q in queries},
            self._scores(stage),
            min_grade=self.settings.min_grade,
            floor=self.settings.floor_for(stage),
        )

    def _evaluation_for(self, stage: str, spec: MetricSpec) -> Evaluation:
        table = self.settings.metric_specs
        if spec in table:
            return self.evaluation(stage, table)
        return self.evaluation(stage, (spec,))

    # --- scores and gates ------------------------------------------------------------------

    @property
    def effective_depth(self) -> int:
        """How many results the retriever is asked for per query.

        ``retrieval_depth`` when set; otherwise the largest of ``retrieval_ks`` and of every K
        the declared gates and budgets name, so that each of them is scored on a full list.
        """
        if self.settings.depth is not None:
            return self.settings.retrieval_depth
        declared = [t.spec.k for t in self.thresholds] + [b.spec.k for b in self.budgets]
        return max([self.settings.retrieval_depth, *(k for k in declared if k)])

    def verdict(self) -> Verdict:
        """Failed gates, regressions and queries: the one verdict of this session."""
        return Verdict.count(
            (g.passed for g in self.gate_outcomes),
            (r.passed for r in self.regression_outcomes),
            failed_queries=len(self.failed_queries()),
            queries=len(self.scorable_queries()),
        )

    def _check_depth(self, spec: MetricSpec, stage: str) -> None:
        """A metric deeper than the results asked for, or than every ranking the retriever
        returned, would be scored on a shorter list: refused with the explanation."""
        assert self.outcomes is not None
        if spec.k is None:
            return
        depth = self.effective_depth
        ran = self._ran(stage)
        longest = max((len(r) for r in ran), default=0)
        if spec.k > depth and longest <= depth:
            raise GateUsageError(
                f"{spec} needs the top {spec.k} results, but the retriever was asked for "
                f"{depth} (retrieval_depth, default: the largest of retrieval_ks); add {spec.k} "
                "to retrieval_ks or raise retrieval_depth"
            )
        if ran and longest < spec.k and self.settings.short_rankings != "off":
            hint = self.hint_for(spec.k) if stage == RETRIEVER_STAGE else None
            fix = hint or f"make the retriever return at least {spec.k} results per query"
            raise GateUsageError(
                f"{spec} cannot be scored: every ranking [{stage}] is shorter than {spec.k} "
                f"(longest {longest}, {depth} asked for), so it would be scored on at most "
                f"{longest} results. Fix: {fix}; if {spec.k} is deeper than you need, gate a "
                f"smaller K (retrieval_short_rankings = off if the corpus is that small)"
            )

    def score(self, spec: MetricSpec, selection: Selection) -> Score:
        """The mean of ``spec`` over a selection, with the worst queries as explanation."""
        queries = self.select(selection)
        self._require_run()
        stage = self._stage(selection.stage)
        self._check_depth(spec, stage)
        evaluation = self._evaluation_for(stage, spec).restrict(q.id for q in queries)
        unmeasured = evaluation.unmeasured.get(str(spec))
        if unmeasured is not None:
            raise GateUsageError(f"{spec} cannot be measured [{stage}]: {unmeasured}")
        value = evaluation.means[str(spec)]
        values = [v for v in evaluation.columns[str(spec)] if v is not None]
        ci = self._interval(values)
        explanation = self._explain(spec, stage, queries, evaluation)
        if ci is not None:
            explanation.insert(
                1,
                f"{self.settings.confidence:.0%} bootstrap confidence interval of the mean: "
                f"[{ci[0]:.4f}, {ci[1]:.4f}]",
            )
        return Score(
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
        from .stats import bootstrap_ci

        ci = bootstrap_ci(
            values,
            confidence=self.settings.confidence,
            resamples=self.settings.resamples,
            seed=self.settings.seed,
        )
        return (ci.low, ci.high)

    def worst_queries(
        self, spec: MetricSpec, stage: str, queries: Sequence[Query], evaluation: Evaluation
    ) -> list[WorstQuery]:
        """The lowest-scoring queries of a selection (held-out ones left out unless shown)."""
        return worst_queries(
            spec,
            queries,
            evaluation,
            lambda qid: self.ranking(qid, stage),
            redacted=self.is_redacted,
            min_grade=self.settings.min_grade,
            limit=self.settings.worst,
        )

    def _explain(
        self, spec: MetricSpec, stage: str, queries: Sequence[Query], evaluation: Evaluation
    ) -> list[str]:
        n = evaluation.counts[str(spec)]
        if spec.name == "abstain_rate":
            lines = [f"no-answer queries scored: {n} (abstain_rate is defined on them only)"]
        elif spec.name == "answer_rate":
            lines = [f"answerable queries scored: {n} (answer_rate is defined on them only)"]
        else:
            lines = [
                f"queries scored: {n}, skipped (no relevant document): "
                f"{len(evaluation.skipped_no_relevant)}"
            ]
        if evaluation.deduplicated:
            assert self.duplicates is not None
            lines.append(f"scored per duplicate group: {self.duplicates.describe()}")
        by_id = {q.id: q for q in queries}
        failed = [o for o in self.failed_queries() if o.query_id in by_id]
        if failed:
            # A held-out query's id is a per-query detail too: counted, never named.
            named = [o.query_id for o in failed if not self.is_redacted(by_id[o.query_id])]
            hidden = len(failed) - len(named)
            lines.append(
                f"{len(failed)} queries failed in the retriever and scored 0"
                + (": " + ", ".join(named[:10]) if named else "")
                + (f" ({hidden} held-out, not named)" if hidden else "")
            )
        worst = (
            []
            if spec.name in ("abstain_rate", "answer_rate", "distinct")
            else self.worst_queries(spec, stage, queries, evaluation)
        )
        if spec.name in ("abstain_rate", "answer_rate"):
            lines.extend(self._explain_abstention(spec, stage, queries, evaluation))
        if worst:
            lines.append(f"worst {len(worst)} quer{'y' if len(worst) == 1 else 'ies'}:")
            lines.extend(f"  {w.describe(spec)}" for w in worst)
        if any(self.is_redacted(q) for q in queries):
            lines.append(
                "held-out per-query details are hidden (--retrieval-heldout-details shows them)"
            )
        return lines

    def _explain_abstention(
        self, spec: MetricSpec, stage: str, queries: Sequence[Query], evaluation: Evaluation
    ) -> list[str]:
        """The queries that scored 0: no-answer queries answered, answerable ones abstained."""
        from .abstention import describe_floor, top_score
        from .text import for_terminal

        assert self.outcomes is not None
        column = evaluation.columns[str(spec)]
        by_id = {q.id: q for q in queries}
        zero = [
            qid
            for qid, value in zip(evaluation.query_ids, column)
            if value == 0.0 and not self.is_redacted(by_id[qid])
        ]
        floor = describe_floor(self.settings.floor_for(stage))
        what = "answered anyway" if spec.name == "abstain_rate" else "abstained"
        lines = [f"score floor {floor}: {len(zero)} quer{'y' if len(zero) == 1 else 'ies'} {what}"]
        for qid in zero[: self.settings.worst]:
            outcome = self.outcomes.get(qid)
            ranking = outcome.rankings.get(stage, ()) if outcome else ()
            top = top_score(outcome.scores.get(stage)) if outcome else None
            shown = f"top score {top:.4g}" if top is not None else "no score"
            first = f", top result {for_terminal(ranking[0])}" if ranking else ", nothing returned"
            lines.append(f"  {for_terminal(qid)}: {shown}{first}")
        return lines

    def _record_unscored(
        self,
        spec: MetricSpec,
        selection: Selection,
        op: str,
        threshold: float,
        *,
        kind: str,
        name: str | None,
        passed: bool,
        message: str,
        skipped_reason: str | None = None,
    ) -> None:
        """Record a gate that has no value: skipped (a sealed split) or failed (it cannot be
        scored), so the reports and the artifact list it like every other gate."""
        with self._lock:
            self.gate_outcomes.append(
                GateOutcome(
                    name=name or f"{spec}{op}{threshold:g}",
                    metric=str(spec),
                    op=op,
                    threshold=threshold,
                    value=None,
                    passed=passed,
                    stage=selection.stage,
                    split=selection.split,
                    slice=selection.slice,
                    n=0,
                    skipped=0,
                    kind=kind,
                    nodeid=self.current_test,
                    message=message,
                    skipped_reason=skipped_reason,
                )
            )

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
        """Compare a score with a threshold, record the outcome and return it.

        A gate on the sealed held-out split is recorded as skipped, then skipped through
        :attr:`on_sealed` (pytest.skip under the plugin).
        """
        if selection.split == self.heldout_name and not self.unsealed:
            self._record_unscored(
                spec,
                selection,
                op,
                threshold,
                kind=kind,
                name=name,
                passed=True,
                message=SEALED_REASON,
                skipped_reason=SEALED_REASON,
            )
            self.on_sealed(SEALED_REASON)
        try:
            score = self.score(spec, selection)
        except GateUsageError as exc:
            # The gate fails (in its test, with this message); the record makes the reports and
            # the artifact show it as failed too, not leave it out.
            self._record_unscored(
                spec,
                selection,
                op,
                threshold,
                kind=kind,
                name=name,
                passed=False,
                message=str(exc),
            )
            raise
        passed = score.value is not None and OPS[op](score.value, threshold)
        where = Selection(score.stage, selection.split or "overall", selection.slice).label()
        interval = (
            f" ({self.settings.confidence:.0%} CI [{score.ci[0]:.4f}, {score.ci[1]:.4f}])"
            if score.ci is not None
            else ""
        )
        head = f"{spec} = {describe_op_failure(score.value, op, threshold)}"
        message = (
            f"{spec} {op} {threshold:g} holds: {score.value:.4f}{interval} [{where}]"
            if passed and score.value is not None
            else "\n".join([f"{head}, expected {op} {threshold:g} [{where}]", *score.explanation])
        )
        outcome = GateOutcome(
            name=name or f"{spec}{op}{threshold:g}",
            metric=str(spec),
            op=op,
            threshold=threshold,
            value=score.value,
            passed=passed,
            stage=score.stage,
            split=selection.split,
            slice=selection.slice,
            n=score.n,
            skipped=score.skipped,
            kind=kind,
            nodeid=self.current_test,
            message=message,
            ci=score.ci,
        )
        with self._lock:
            self.gate_outcomes.append(outcome)
        return outcome

    def gate_created(self, gate: Gate) -> None:
        """Remember a gate created in the current test."""
        self._pending.append(gate)

    def take_uncompared(self) -> list[Gate]:
        """The gates of the current test that were never compared (and forget them all)."""
        pending, self._pending = self._pending, []
        return [g for g in pending if not g.compared]

    # --- summaries ------------------------------------------------------------------------

    def latency_percentiles(self, stage: str = RETRIEVER_STAGE) -> tuple[float, float] | None:
        """(p50, p95) latency in milliseconds of one stage, or None without a run."""
        if not self.outcomes:
            return None
        values = sorted(
            o.latency_ms[stage] for o in self.outcomes.values() if stage in o.latency_ms
        )
        if not values:
            return None

        def percentile(p: float) -> float:
            index = min(len(values) - 1, max(0, round(p * (len(values) - 1))))
            return values[index]

        return percentile(0.5), percentile(0.95)

    def columns(self) -> list[tuple[str, Selection]]:
        """The summary table's columns: overall, each slice, and held-out when unsealed."""
        visible = [q for q in self.golden if q.split != self.heldout_name]
        slices = sorted({s for q in visible for s in q.slices})
        cols = [("overall", Selection())]
        cols += [(name, Selection(slice=name)) for name in slices]
        if self.unsealed and any(q.split == self.heldout_name for q in self.golden):
            cols.append((self.heldout_name, Selection(split=self.heldout_name)))
        return cols

    def table(self, stage: str) -> tuple[list[str], list[list[Any]]]:
        """(headers, rows) of the summary: each metric at each K by overall/slices/held-out."""
        specs = self.settings.metric_specs
        evaluation = self.evaluation(stage, specs)
        headers = ["metric"]
        subsets = []
        for label, selection in self.columns():
            queries = self.select(selection)
            sub = evaluation.restrict(q.id for q in queries)
            headers.append(f"{label} (n={sub.evaluated})")
            subsets.append(sub)
        rows = []
        for spec in sorted(specs, key=lambda s: s.sort_key):
            name = str(spec)
            rows.append([name, *(sub.means[name] for sub in subsets)])
        return headers, rows

    # --- baselines and regressions ---------------------------------------------------------

    def snapshot(self, extra: Sequence[MetricSpec] = ()) -> Snapshot:
        """Per-query values, relevant ranks and top ids of every non-held-out query, per stage.

        Held-out queries never enter with per-query detail; when the split is unsealed only its
        means are kept.
        """
        from .baseline import build_snapshot

        budgeted = [b.spec for b in self.budgets]
        specs = tuple(dict.fromkeys([*self.settings.metric_specs, *budgeted, *extra]))
        key = tuple(str(s) for s in specs)
        with self._lock:
            cached = self._snapshots.get(key)
        if cached is not None:
            return cached
        stages = self.stages
        held = [q.id for q in self.golden if q.split == self.heldout_name] if self.unsealed else []
        snapshot = build_snapshot(
            self.visible_golden(),
            {stage: self.evaluation(stage, specs) for stage in stages},
            self.ranking,
            metric_names=[str(s) for s in specs],
            min_grade=self.settings.min_grade,
            settings=self._snapshot_settings(),
            heldout_ids=held,
            index_version=self.settings.index_version,
        )
        with self._lock:
            self._snapshots[key] = snapshot
        return snapshot

    def baseline_snapshot(self) -> Snapshot:
        """What ``--retrieval-update-baseline`` writes: this run's snapshot, or with extra runs
        (``retrieval_baseline_runs``) the per-query means and spread over all of them."""
        from .baseline import average_snapshots, build_snapshot

        first = self.snapshot()
        if not self.extra_runs:
            return first
        specs = tuple(dict.fromkeys([*self.settings.metric_specs, *(b.spec for b in self.budgets)]))
        queries = self.scorable_queries()
        judgments = {q.id: q.judgments for q in queries}
        runs = [first]
        for outcomes in self.extra_runs:
            per_stage = {}
            for stage in first.stages:
                run = {
                    q.id: outcomes[q.id].rankings[stage]
                    for q in queries
                    if q.id in outcomes and stage in outcomes[q.id].rankings
                }
                per_stage[stage] = evaluate(
                    run,
                    judgments,
                    specs,
                    gain=self.settings.gain,  # type: ignore[arg-type]
                    min_grade=self.settings.min_grade,
                    no_relevant=self.settings.no_relevant,  # type: ignore[arg-type]
                )

            def ranking(qid: str, stage: str, outcomes: dict[str, QueryOutcome] = outcomes) -> Any:
                outcome = outcomes.get(qid)
                return outcome.rankings.get(stage, ()) if outcome else ()

            runs.append(
                build_snapshot(
                    self.visible_golden(),
                    per_stage,
                    ranking,
                    metric_names=list(first.metrics),
                    min_grade=self.settings.min_grade,
                    settings=first.settings,
                )
            )
        return average_snapshots(runs)

    def failed_in_extra_runs(self) -> list[str]:
        """Ids of queries that failed in an extra baseline run."""
        return sorted(
            {o.query_id for run in self.extra_runs for o in run.values() if o.error is not None}
        )

    def compare_options(self) -> CompareOptions:
        """The statistics options of every regression check of this session."""
        from .regression import CompareOptions

        return CompareOptions(
            alpha=self.settings.alpha,
            confidence=self.settings.confidence,
            resamples=self.settings.resamples,
            seed=self.settings.seed,
            mode=self.settings.baseline_mode,
            heldout_split=self.heldout_name,
            shown=self.settings.worst,
            multiplicity=self.settings.multiplicity,
            budget_test=self.settings.budget_test,
        )

    def regression_family(self, *, baseline_path: str) -> Family:
        """Every declared budget adjusted together, computed once (on the first check).

        Deterministic (same run, baseline, budgets and seed), so every xdist worker computes
        the same family and reads its own check from it.
        """
        from .regression import family

        with self._lock:
            cached = self._family
        if cached is not None:
            return cached
        computed = family(
            self.baseline,
            self.snapshot(),
            self.budgets,
            default_stage=self.default_stage,
            options=self.compare_options(),
            baseline_path=baseline_path,
        )
        with self._lock:
            if self._family is None:
                self._family = computed
            return self._family

    def _snapshot_settings(self) -> dict[str, Any]:
        """The settings a baseline must share to be comparable; with duplicate groups, which
        groups (their fingerprint), since other groups give other numbers."""
        settings = {**self.settings.affecting_numbers(), "depth": self.effective_depth}
        if self.duplicates is not None:
            settings["dedup"] = f"{settings.get('dedup', 'file')}:{self.duplicates.fingerprint}"
        return settings

    def regression(self, budget: Budget, *, baseline_path: str) -> RegressionOutcome:
        """Check one budget against the loaded baseline; record and return the outcome."""
        from .regression import compare

        if self.settings.update_baseline:
            reason = "this run updates the baseline; regressions are checked on the next run"
            self.on_skip(reason)
        self._require_run()
        stage = budget.selection.stage
        if stage is not None and stage not in self.stages:
            known = ", ".join(self.stages)
            raise GateUsageError(f"unknown stage {stage!r}; this run has: {known}")
        outcome = compare(
            self.baseline,
            self.snapshot(extra=(budget.spec,)),
            budget,
            stage=stage or self.default_stage,
            options=self.compare_options(),
            baseline_path=baseline_path,
            family_result=self.regression_family(baseline_path=baseline_path),
        )
        with self._lock:
            self.regression_outcomes.append(outcome)
        if outcome.status == "skipped":
            self.on_skip(outcome.message)
        return outcome
