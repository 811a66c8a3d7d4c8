"""Short rankings: a ranking shorter than the cutoffs scored, said loudly with the fix.

A ranking shorter than a cutoff is scored as if the missing ranks held nothing relevant. When
the retriever returns fewer results than the cutoffs scored (LangChain's default ``k=4`` under
``recall@20``), every metric past the longest ranking is flat, and the numbers say nothing about
ranks the retriever never returned. :func:`short_rankings` finds it per stage; the summary, the
reports and the artifact show it with the framework's depth knob. A ranking whose call came back
full but whose chunks collapsed into fewer documents than K (where the run could not ask deeper:
a depth the retriever was built with, or ``retrieval_max_depth`` reached) is always reported,
with the knob and the number of results that would fill K (:func:`collapse_fix`); one that is
short because the index has no more to give is reported only when most rankings are.

Applied to a run (:class:`RankedRun`: its outcomes, the depth asked, the knob, the settings
that decide; a session gives its own): :func:`find_short_rankings` (the warning, per stage) and
:func:`depth_problem` (why a gate at K cannot be scored: the session refuses it, and the summary
table shows no number for it). Only queries that ran without an error are looked at. Nothing
here takes a session; :mod:`pytest_retrieval.session.findings` applies these checks to one.
:mod:`pytest_retrieval.run.checks` holds the other checks of a run.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..scoring.evaluate import CutoffUnit, measured_unit
from ..scoring.metrics import MetricSpec
from .retriever import RETRIEVER_STAGE

if TYPE_CHECKING:
    from .depthplan import DepthPlan
    from .retriever import QueryOutcome


@dataclass(frozen=True, slots=True)
class Call:
    """What one ranking's (last) retriever call gave, beside its documents: how many results it
    returned (repeats included), the depth it asked for (None: not known, e.g. a reranker
    stage) and why asking deeper failed, if it did."""

    returned: int
    asked: int | None = None
    deeper_error: str | None = None
    #: The ids as returned (repeats kept), for the number of results that fill K
    #: (:func:`fill_bounds`); empty where not known.
    ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ShortRankings:
    """One stage's rankings are shorter than the cutoffs scored."""

    stage: str
    #: The largest cutoff that is scored (metrics, gates, budgets).
    cutoff: int
    #: How many results were asked for.
    depth: int
    longest: int
    median: float
    short: int
    queries: int
    #: The cutoffs past the longest ranking: their metrics are flat.
    flat: tuple[int, ...]
    #: How to ask this retriever for more results, when known.
    hint: str | None = None
    #: The rankings come from stored run files (``retrieval_run``): nothing was asked for.
    stored: bool = False
    #: Short rankings whose call came back full but whose results collapsed into fewer
    #: documents, the deepest such call (asked, or returned where the depth cannot be handed
    #: over) and the fix (:func:`collapse_fix`).
    collapsed: int = 0
    deepest: int | None = None
    collapse_fix: str | None = None
    #: The shallowest of those calls: "(7 results)" when every one was as deep as the
    #: deepest, "(up to 7 results)" when not (an ensemble's union, queries asked again).
    shallowest: int | None = None
    #: Short rankings whose call came back with fewer results than it asked for (the index
    #: has no more to give them: :func:`exhausted_calls`), the deepest of those calls and the
    #: most results one of them returned.
    exhausted: int = 0
    asked: int | None = None
    returned: int | None = None
    #: Whether the index surely holds no more: each of those calls had been asked again
    #: after a full call (or the depth was built in); a first call that came back short may
    #: also be a retriever that returns fewer than it is asked for (:func:`index_ran_out`).
    ran_out: bool = True
    #: Each smaller cutoff scored at which some rankings are short too, as ``(K, short,
    #: shortest, refused)``: how many rankings hold fewer than K, the fewest one holds, and
    #: whether a gate at K is refused (:func:`most_collapsed`). The fix fills the largest K,
    #: so it fills these too.
    smaller: tuple[tuple[int, int, int, bool], ...] = ()

    @property
    def message(self) -> str:
        """One paragraph: what is short, which metrics it flattens, and the fix."""
        return f"{self.finding}. Fix: {self.fix}"

    @property
    def finding(self) -> str:
        """What is short and which metrics it flattens (the message without its fix), and the
        smaller cutoffs short too."""
        return self._finding + smaller_words(self.smaller, self.queries)

    @property
    def _finding(self) -> str:
        flat = ", ".join(f"@{k}" for k in self.flat)
        median = f"{self.median:g}"
        if self.collapsed:
            needed = min(self.cutoff, self.depth)
            up_to = "up to " if self.shallowest != self.deepest else ""
            text = (
                f"short rankings [{self.stage}]: {self.short} of {self.queries} rankings hold "
                f"fewer than {needed} documents (longest {self.longest}, median {median}); "
                f"{self.collapsed} of them came back full ({up_to}{self.deepest} results) but "
                "their results collapsed into fewer documents (chunks of one document count "
                "once)"
            )
            if flat:
                text += f"; every metric at {flat} is scored on at most {self.longest} documents"
            return text
        if self.exhausted:
            needed = min(self.cutoff, self.depth)
            text = (
                f"short rankings [{self.stage}]: {self.short} of {self.queries} rankings hold "
                f"fewer than {needed} documents (longest {self.longest}, median {median}); "
                f"{self.exhausted} of them came back with fewer results than asked for (up to "
                f"{self.asked} asked, at most {self.returned} returned): "
                + exhausted_words(self.ran_out)
            )
            if flat:
                text += f"; every metric at {flat} is scored on at most {self.longest} documents"
            return text
        asked = "as stored in the run file" if self.stored else f"{self.depth} were asked for"
        text = (
            f"short rankings [{self.stage}]: {self.short} of {self.queries} rankings are shorter "
            f"than the cutoff {self.cutoff} (longest {self.longest}, median {median}; {asked})"
        )
        if flat:
            text += f"; every metric at {flat} is scored on at most {self.longest} results"
        return text

    @property
    def fix(self) -> str:
        """How to get rankings as long as the cutoffs, or to turn the check off: one fix (for
        rankings whose results collapsed, :func:`collapse_fix`'s, which names the knob and the
        number that fills K; the depth hint at the configured depth would repeat what the
        retriever already has)."""
        if self.collapse_fix is not None:
            return self.collapse_fix
        if self.exhausted:
            return exhausted_fix(min(self.cutoff, self.depth), self.longest, self.ran_out)
        fix = self.hint or (
            f"write the run file with {self.cutoff} results per query (pytest-retrieval run "
            f"--depth {self.cutoff}), or lower retrieval_ks"
            if self.stored
            else f"make the retriever return {self.depth} results per query, or lower retrieval_ks"
        )
        return f"{fix} (retrieval_short_rankings = off if the corpus is that small)"

    def to_dict(self) -> dict[str, object]:
        """Builtins, for the artifact (``collapsed`` and ``deepest`` only when some collapsed)."""
        out: dict[str, object] = {
            "kind": "short_rankings",
            "stage": self.stage,
            "cutoff": self.cutoff,
            "depth": self.depth,
            "longest": self.longest,
            "median": self.median,
            "short": self.short,
            "queries": self.queries,
            "flat": list(self.flat),
            "hint": self.hint,
            "message": self.message,
            "smaller": [
                {"cutoff": k, "short": short, "shortest": shortest, "refused": refused}
                for k, short, shortest, refused in self.smaller
            ],
        }
        if self.collapsed:
            out["collapsed"] = self.collapsed
            out["deepest"] = self.deepest
        if self.exhausted:
            out["exhausted"] = self.exhausted
            out["asked"] = self.asked
            out["returned"] = self.returned
        return out


def smaller_words(smaller: Sequence[tuple[int, int, int, bool]], queries: int) -> str:
    """``; short at smaller cutoffs too: @10 in 19 of 20 rankings (shortest 4; a gate at @10
    cannot be scored), @5 in 2 of 20 (shortest 4)``, or nothing."""
    if not smaller:
        return ""
    parts = []
    for k, short, shortest, refused in smaller:
        note = f"; a gate at @{k} cannot be scored: most of them collapsed" if refused else ""
        parts.append(f"@{k} in {short} of {queries} rankings (shortest {shortest}{note})")
    return "; short at smaller cutoffs too: " + ", ".join(parts)


def most_collapsed(collapsed: Sequence[object], rankings: Sequence[object]) -> bool:
    """The rule for a gate at K some rankings reach: it is refused when more than half of the
    rankings hold fewer than K documents although their calls came back full (``collapsed``,
    :func:`collapsed_calls`: the index had more to give, the retriever was not asked for it).
    Its number would then be scored on fewer than K documents for most queries. Rankings short
    because the index ran out count as they are (their top K is what there is)."""
    return len(collapsed) * 2 > len(rankings)


def exhausted_calls(
    rankings: Sequence[Sequence[str]],
    calls: Sequence[Call],
    needed: int,
    plan: DepthPlan,
) -> list[tuple[int, Call]]:
    """``(documents, call)`` of each ranking short of ``needed`` documents whose call came back
    with fewer results than it asked for (or than the retriever was built to return, where the
    depth cannot be handed over): the index has no more to give it, so no depth and no knob
    fills it."""
    found = []
    for ranking, call in zip(rankings, calls, strict=True):
        if len(ranking) >= needed:
            continue
        if plan.passed and call.asked is not None:
            wanted: int | None = call.asked
        else:
            wanted = plan.built
        if wanted is not None and call.returned < wanted:
            found.append((len(ranking), call))
    return found


def index_ran_out(exhausted: Sequence[tuple[int, Call]], plan: DepthPlan) -> bool:
    """True when the index surely holds no more for the ``exhausted`` calls
    (:func:`exhausted_calls`): each was asked again, deeper, after a call that came back full,
    or the depth was built into the retriever. A first call that came back short may also be a
    retriever that returns fewer results than it is asked for."""
    if not plan.passed:
        return True
    return all(call.asked is not None and call.asked > plan.first for _d, call in exhausted)


def exhausted_words(ran_out: bool) -> str:
    """Why calls came back short of what they asked for."""
    if ran_out:
        return "the index holds no more for them"
    return "the index holds no more for them, or the retriever returns fewer than it is asked for"


def exhausted_fix(needed: int, longest: int, ran_out: bool = True) -> str:
    """The fix when the index holds fewer than ``needed`` documents for the short rankings: no
    depth fills them, so a smaller K, or the check off (and, where the calls may only have been
    cut by the retriever, ``ran_out`` False, to make it return what it is asked for)."""
    fix = (
        f"the index holds fewer than {needed} documents for these queries (at most {longest} "
        f"came back): gate K of at most {longest} (retrieval_ks and the gates' K), or set "
        "retrieval_short_rankings = off if the corpus is that small"
    )
    if ran_out:
        return fix
    return (
        f"if the index holds more, make the retriever return as many results as it is asked "
        f"for; otherwise {fix}"
    )


def collapsed_calls(
    rankings: Sequence[Sequence[str]],
    calls: Sequence[Call],
    needed: int,
    plan: DepthPlan,
) -> list[tuple[int, Call]]:
    """``(documents, call)`` of each ranking short of ``needed`` documents whose call came back
    full (as many results as it asked for, or as the retriever was built to return where the
    depth cannot be handed over) but whose results collapsed into fewer documents."""
    found = []
    for ranking, call in zip(rankings, calls, strict=True):
        documents = len(ranking)
        if documents >= needed or call.returned <= documents:
            continue
        if plan.passed and call.asked is not None:
            full = call.returned >= call.asked
        else:
            full = call.returned >= (plan.built or 0)
        if full:
            found.append((documents, call))
    return found


@dataclass(frozen=True, slots=True)
class Fill:
    """How many results fill ``needed`` documents, from the rankings that came back (the
    retriever cannot be asked deeper, so nothing else is known; docs/frameworks.md, "Depth and K
    documents").

    ``results`` is enough for every collapsed ranking seen: an upper bound, exact under the
    chunk counts of ``retrieval_doc_id_map`` (``most`` is None) and otherwise under the
    assumption that no document has more chunks than ``most``, the most results one ranking
    held of one document. ``at_least`` is a lower bound that needs no assumption: each result
    past those returned adds at most one document, so fewer cannot fill ``needed``.
    """

    results: int
    at_least: int
    needed: int
    most: int | None

    @property
    def words(self) -> str:
        """``37 results hold 10 documents for every query seen here if no document has more
        than 4 chunks, the most one ranking held of one document; fewer than 17 results
        cannot`` (results, not the knob's number: an ensemble returns more than each of its
        retrievers is built for)."""
        basis = (
            "by the chunks per document in retrieval_doc_id_map"
            if self.most is None
            else f"if no document has more than {self.most} chunks, the most one ranking held "
            "of one document"
        )
        return (
            f"{self.results} results hold {self.needed} documents for every query seen here "
            f"{basis}; fewer than {self.at_least} results cannot"
        )


def fill_bounds(
    collapsed: Sequence[tuple[int, Call]],
    needed: int,
    calls: Sequence[Call],
    chunk_counts: Mapping[str, int] | None = None,
) -> Fill:
    """The results that fill ``needed`` documents in every ranking of ``collapsed`` (``(documents,
    call)`` pairs, :func:`collapsed_calls`), and the fewest that could (:class:`Fill`).

    The lower bound of one ranking is its results plus the documents it lacks. The upper bound
    is the worst case: every chunk of the documents it holds, then every chunk of the largest
    documents it does not hold, comes before the last document it needs. With
    ``chunk_counts`` (document → chunks, from the doc map; used when it names every document
    returned) each document's own count; otherwise ``most`` for every document, the most
    results of one document in any ranking of ``calls`` (it reduces to ``(needed - 1) * most +
    1``).
    """
    at_least = max(call.returned + needed - documents for documents, call in collapsed)
    seen = [Counter(call.ids) for _d, call in collapsed]
    known = chunk_counts is not None and all(
        doc in chunk_counts for counts in seen for doc in counts
    )
    if chunk_counts is not None and known and all(seen):
        total = sum(chunk_counts.values())
        ordered = sorted(chunk_counts.items(), key=lambda item: -item[1])
        worst = 0
        for counts in seen:
            rest = sum(max(chunk_counts[doc] - n, 0) for doc, n in counts.items())
            lacking = needed - len(counts) - 1
            others = [n for doc, n in ordered if doc not in counts][:lacking]
            worst = max(worst, min(total, sum(counts.values()) + rest + sum(others) + 1))
        return Fill(max(worst, at_least), at_least, needed, None)
    most = max((max(Counter(c.ids).values(), default=1) for c in calls), default=1)
    most = max([most, *(-(-call.returned // max(d, 1)) for d, call in collapsed)])
    return Fill(max((needed - 1) * most + 1, at_least), at_least, needed, most)


def collapse_fix(
    collapsed: Sequence[tuple[int, Call]],
    needed: int,
    plan: DepthPlan,
    hint: str | None,
    *,
    calls: Sequence[Call] = (),
    chunk_counts: Mapping[str, int] | None = None,
) -> str:
    """The fix for rankings whose results collapsed into fewer than ``needed`` documents: the
    knob and the number of results that fill them, with what that number is
    (:func:`fill_bounds`; ``calls`` are every call of the stage, ``chunk_counts`` the doc map's
    chunks per document). ``hint`` is the depth hint template, :func:`.specs.depth_hint`."""
    return collapse_knob(collapsed, needed, plan, hint, calls=calls, chunk_counts=chunk_counts)[0]


def collapse_knob(
    collapsed: Sequence[tuple[int, Call]],
    needed: int,
    plan: DepthPlan,
    hint: str | None,
    *,
    calls: Sequence[Call] = (),
    chunk_counts: Mapping[str, int] | None = None,
) -> tuple[str, str | None]:
    """:func:`collapse_fix` and the depth hint it names, at the number it names (None when
    the fix is not the retriever's knob: ``retrieval_max_depth``, a retriever without one),
    for the artifact's ``hint``, which must not name the depth the retriever already has."""
    from .factories import hint_for

    other = (
        "; or gate a smaller K, or set retrieval_cutoff_unit = results to score the K results "
        "as returned"
    )
    if plan.passed:
        failed = [c.deeper_error for _d, c in collapsed if c.deeper_error]
        if failed:
            return (
                f"asking deeper failed ({failed[0]}): set retrieval_max_depth to a depth the "
                f"retriever accepts" + other
            ), None
    if hint is not None and not plan.passed and not plan.hint_builds:
        # A k parameter: the run then asks again where results collapse, by itself.
        knob = hint_for(hint, plan.first)
        return f"{knob}; the run then asks again deeper where needed" + other, knob
    fill = fill_bounds(collapsed, needed, calls or [c for _d, c in collapsed], chunk_counts)
    if plan.passed:
        return (
            f"raise retrieval_max_depth (now {plan.max_depth}) to {fill.results}, or start "
            f"every query at retrieval_depth = {fill.results} ({fill.words})" + other
        ), None
    if hint is not None:
        knob = hint_for(hint, fill.results)
        return f"{knob} ({fill.words})" + other, knob
    return (
        f"make the retriever return {fill.results} results per query ({fill.words})" + other
    ), None


def short_rankings(
    stage: str,
    rankings: Sequence[Sequence[str]],
    *,
    cutoffs: Collection[int],
    depth: int,
    hint: str | None = None,
    stored: bool = False,
    calls: Sequence[Call] | None = None,
    plan: DepthPlan | None = None,
    template: str | None = None,
    chunk_counts: Mapping[str, int] | None = None,
) -> ShortRankings | None:
    """The short-ranking finding of one stage, or None when the rankings are long enough.

    A ranking is short when it holds fewer results than ``min(largest cutoff, depth)`` (an empty
    ranking counts too: it is how a retriever says "nothing"). With ``calls`` (aligned with
    ``rankings``) and the run's ``plan``, a short ranking whose call came back full but whose
    results collapsed into fewer documents is always reported (:func:`collapsed_calls`, the fix
    from the depth hint ``template`` and the doc map's ``chunk_counts``: :func:`collapse_fix`).
    Otherwise the stage is reported
    when even the longest ranking is shorter than the cutoff (the metrics past it are flat,
    and the depth did not reach the retriever), or when the median ranking is less than half of
    it. Shorter rankings beside full ones (the index has no more for some queries, a score
    threshold) are not reported.
    """
    if not rankings or not cutoffs:
        return None
    cutoff = max(cutoffs)
    needed = min(cutoff, depth)
    lengths = [len(r) for r in rankings]
    short = sum(1 for n in lengths if n < needed)
    longest = max(lengths)
    collapsed = (
        collapsed_calls(rankings, calls, needed, plan)
        if calls is not None and plan is not None
        else []
    )
    if not collapsed and longest >= needed and statistics.median(lengths) * 2 >= needed:
        # Some ranking is full length, so the depth reaches the retriever; most are at least
        # half as long: a retriever that returns fewer for some queries. Not reported: every
        # cutoff is scored on the results there are.
        return None
    flat = tuple(sorted(k for k in set(cutoffs) if k > longest))
    deepest: int | None = None
    shallowest: int | None = None
    fix: str | None = None
    exhausted = (
        exhausted_calls(rankings, calls, needed, plan)
        if calls is not None and plan is not None and not collapsed
        else []
    )
    asked: int | None = None  # the deepest of the exhausted calls (or the depth built)
    if exhausted and plan is not None:
        asked = max(c.asked or 0 for _d, c in exhausted) if plan.passed else plan.built
    if collapsed:
        assert plan is not None
        depths = [
            c.asked if plan.passed and c.asked is not None else c.returned for _d, c in collapsed
        ]
        deepest, shallowest = max(depths), min(depths)
        assert calls is not None
        fix, knob = collapse_knob(
            collapsed, needed, plan, template, calls=calls, chunk_counts=chunk_counts
        )
        hint = knob if knob is not None else hint
    smaller = []
    for k in sorted({k for k in cutoffs if k < needed}, reverse=True):
        below = [n for n in lengths if n < k]
        if below:
            refused = (
                calls is not None
                and plan is not None
                and most_collapsed(collapsed_calls(rankings, calls, k, plan), rankings)
            )
            smaller.append((k, len(below), min(below), refused))
    return ShortRankings(
        stage=stage,
        cutoff=cutoff,
        depth=depth,
        longest=longest,
        median=statistics.median(lengths),
        short=short,
        queries=len(lengths),
        flat=flat,
        hint=hint,
        stored=stored,
        collapsed=len(collapsed),
        deepest=deepest,
        collapse_fix=fix,
        shallowest=shallowest,
        exhausted=len(exhausted),
        ran_out=plan is None or index_ran_out(exhausted, plan),
        asked=asked,
        returned=max((c.returned for _d, c in exhausted), default=None),
        smaller=tuple(smaller),
    )


# --- the checks of a run ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RankedRun:
    """What the short-ranking checks read of a run: its outcomes and stages, how deep it was
    asked and how to ask deeper, and the settings that decide (a session gives its own:
    :meth:`~pytest_retrieval.session.session.RetrievalSession.ranked_run`)."""

    #: Query id → outcome, of the queries that ran (scorable ones).
    outcomes: Mapping[str, QueryOutcome]
    stages: tuple[str, ...]
    #: The depth of each query's first retriever call (the depth plan's).
    depth: int
    #: How deep the retriever was asked, and why (:mod:`.depthplan`); None for run files.
    plan: DepthPlan | None = None
    #: How to ask this retriever for more results: its framework's knob, a template
    #: (:func:`.specs.depth_hint`); None when not known.
    depth_hint: str | None = None
    #: The rankings come from stored run files (``retrieval_run``): nothing was asked for.
    stored: bool = False
    #: ``retrieval_cutoff_unit``: what a metric's K counts (:func:`.evaluate.measured_unit`).
    cutoff_unit: str = "documents"
    #: ``retrieval_short_rankings``: ``warn``, ``error`` or ``off``.
    mode: str = "warn"
    #: ``retrieval_doc_id_map``: the chunks per document that fill K (:func:`chunk_counts`).
    doc_id_map: str | None = None

    def hint_for(self, depth: int) -> str | None:
        """How to ask this retriever for ``depth`` results, when its framework's knob is
        known."""
        from .factories import hint_for

        return hint_for(self.depth_hint, depth)


_CHUNK_COUNTS: dict[tuple[str, int, int], dict[str, int]] = {}


def chunk_counts(path: str | None) -> dict[str, int] | None:
    """Document → how many chunks the doc map at ``path`` (``retrieval_doc_id_map``) maps to it
    (None without a map, or when it cannot be read: the run phase reports that), for the number
    of results that fill K (:func:`fill_bounds`). Read once per version of the file."""
    if not path:
        return None
    from ..errors import InputError
    from ..formats.docmap import load_doc_map

    try:
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in _CHUNK_COUNTS:
            _CHUNK_COUNTS.clear()
            _CHUNK_COUNTS[key] = dict(Counter(load_doc_map(path).values()))
    except (OSError, InputError):
        return None
    return _CHUNK_COUNTS[key]


def stage_rankings(
    run: RankedRun, stage: str, unit: CutoffUnit = "documents"
) -> tuple[list[tuple[str, ...]], list[Call] | None]:
    """One stage's rankings of the queries that ran, in ``unit`` (what a metric's K counts:
    :func:`.evaluate.measured_unit`): the document rankings, or the ids as returned (repeats
    kept) for ``"results"``; and, where chunks can collapse short of K (documents, the
    retriever stage of a live run), each one's call."""
    ran = [o for o in run.outcomes.values() if stage in o.rankings and o.error is None]
    if unit == "results":
        return [o.as_returned(stage) for o in ran], None
    rankings = [o.rankings[stage] for o in ran]
    if stage != RETRIEVER_STAGE or run.plan is None:
        return rankings, None
    first = run.plan.first
    calls = [
        Call(
            len(o.as_returned(stage)),
            o.asked if o.asked is not None else first,
            o.deeper_error,
            o.as_returned(stage),
        )
        for o in ran
    ]
    return rankings, calls


#: A stage's rankings in each unit, as :func:`stage_rankings` gives them (filled on demand).
Measured = dict[CutoffUnit, tuple[list[tuple[str, ...]], list[Call] | None]]


def depth_problem(
    run: RankedRun,
    spec: MetricSpec,
    stage: str,
    measured: Measured | None = None,
) -> str | None:
    """Why ``spec`` cannot be gated at ``stage`` (None when it can): a metric deeper than the
    results asked for, or than every ranking the retriever returned, would be scored on a
    shorter list. A ranking's length is counted in what the metric's K counts
    (:func:`.evaluate.measured_unit`: the results as returned for ``distinct@K``, documents
    otherwise unless ``retrieval_cutoff_unit = results``). The session refuses the gate with
    this explanation (and the summary table shows no number for it). ``measured`` caches the
    stage's :func:`stage_rankings` by unit across calls."""
    if spec.k is None:
        return None
    unit = measured_unit(spec, run.cutoff_unit)
    depth = run.depth
    if measured is None:
        measured = {}
    if unit not in measured:
        measured[unit] = stage_rankings(run, stage, unit)
    ran, calls = measured[unit]
    longest = max((len(r) for r in ran), default=0)
    if spec.k > depth and longest <= depth:
        return (
            f"{spec} needs the top {spec.k} results, but the retriever was asked for "
            f"{depth} (retrieval_depth, default: the largest of retrieval_ks); add {spec.k} "
            "to retrieval_ks or raise retrieval_depth"
        )
    if ran and longest < spec.k and run.mode != "off":
        plan = run.plan
        collapsed = (
            collapsed_calls(ran, calls, spec.k, plan)
            if calls is not None and plan is not None
            else []
        )
        if collapsed:
            assert plan is not None
            fix = collapse_fix(
                collapsed,
                spec.k,
                plan,
                run.depth_hint,
                calls=calls or (),
                chunk_counts=chunk_counts(run.doc_id_map),
            )
            return (
                f"{spec} cannot be scored: every ranking [{stage}] holds fewer than {spec.k} "
                f"documents (longest {longest}); {len(collapsed)} of them came back full but "
                f"their results collapsed into fewer documents (chunks of one document count "
                f"once), so it would be scored on at most {longest} documents. Fix: {fix}"
            )
        exhausted = (
            exhausted_calls(ran, calls, spec.k, plan)
            if calls is not None and plan is not None
            else []
        )
        if exhausted:
            assert plan is not None
            returned = max(c.returned for _d, c in exhausted)
            ran_out = index_ran_out(exhausted, plan)
            return (
                f"{spec} cannot be scored: every ranking [{stage}] holds fewer than {spec.k} "
                f"documents (longest {longest}); {len(exhausted)} of them came back with fewer "
                f"results than asked for (at most {returned} returned): "
                f"{exhausted_words(ran_out)}, so it would be scored on at most {longest} "
                f"documents. Fix: " + exhausted_fix(spec.k, longest, ran_out)
            )
        hint = run.hint_for(spec.k) if stage == RETRIEVER_STAGE else None
        stored = run.stored
        fix = hint or (
            f"write the run file with at least {spec.k} results per query"
            if stored
            else f"make the retriever return at least {spec.k} results per query"
        )
        asked = "as stored in the run file" if stored else f"{depth} asked for"
        return (
            f"{spec} cannot be scored: every ranking [{stage}] is shorter than {spec.k} "
            f"(longest {longest}, {asked}), so it would be scored on at most "
            f"{longest} results. Fix: {fix}; if {spec.k} is deeper than you need, gate a "
            f"smaller K (retrieval_short_rankings = off if the corpus is that small)"
        )
    plan = run.plan
    if ran and calls is not None and plan is not None and run.mode != "off":
        collapsed = collapsed_calls(ran, calls, spec.k, plan)
        if most_collapsed(collapsed, ran):
            fix = collapse_fix(
                collapsed,
                spec.k,
                plan,
                run.depth_hint,
                calls=calls,
                chunk_counts=chunk_counts(run.doc_id_map),
            )
            lengths = [len(r) for r in ran]
            return (
                f"{spec} cannot be scored: {len(collapsed)} of {len(ran)} rankings [{stage}] "
                f"hold fewer than {spec.k} documents (median {statistics.median(lengths):g}, "
                f"shortest {min(lengths)}); their calls came back full but their results "
                "collapsed into fewer documents (chunks of one document count once), so it "
                f"would be scored on fewer than {spec.k} documents for most queries. Fix: {fix}"
            )
    return None


def unit_cutoffs(
    specs: Iterable[MetricSpec], cutoff_unit: str
) -> dict[CutoffUnit, tuple[int, ...]]:
    """The cutoffs of ``specs`` (the ones scored: the table's metrics, the declared gates and
    budgets), by what their K counts (:func:`.evaluate.measured_unit`); a unit no metric is
    measured in is absent."""
    found: dict[CutoffUnit, set[int]] = {}
    for spec in specs:
        if spec.k is not None:
            unit = measured_unit(spec, cutoff_unit)
            found.setdefault(unit, set()).add(spec.k)
    return {unit: tuple(sorted(ks)) for unit, ks in sorted(found.items())}


def find_short_rankings(
    run: RankedRun, cutoffs: Mapping[CutoffUnit, Collection[int]]
) -> list[ShortRankings]:
    """Per stage of the run: rankings shorter than the ``cutoffs`` scored, each against what
    its metric's K counts (:func:`unit_cutoffs`). A stage's document rankings are checked
    first; its results as returned (``distinct@K``) only when those are long enough, since a
    ranking short of results is short of documents too."""
    if not run.outcomes or run.mode == "off":
        return []
    found = []
    for stage in run.stages:
        depth = run.depth
        hint = run.hint_for(depth) if stage == RETRIEVER_STAGE else None
        for unit, ks in cutoffs.items():  # "documents" sorts before "results"
            rankings, calls = stage_rankings(run, stage, unit)
            finding = short_rankings(
                stage,
                rankings,
                cutoffs=ks,
                depth=depth,
                hint=hint,
                stored=run.stored,
                calls=calls,
                plan=run.plan,
                template=run.depth_hint if stage == RETRIEVER_STAGE else None,
                chunk_counts=chunk_counts(run.doc_id_map) if calls is not None else None,
            )
            if finding is not None:
                found.append(finding)
                break
    return found
