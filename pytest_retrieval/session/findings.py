"""The checks of a session's run, applied: what they look at, and which finding stops the run.

The checks themselves take facts and know no session (:mod:`.runchecks`, :mod:`.shortrankings`);
this module reads those facts from a :class:`~pytest_retrieval.session.session.RetrievalSession`:
which stages, cutoffs and queries each check looks at (the visible ones: a held-out query is never
quoted), and what stops the run. Each stop is a :class:`~pytest_retrieval.verdict.Stop`:

* :func:`refusal`, a usage error: a ``retrieval_doc_id`` path that no returned item has, ids that
  (almost) never match a judged or corpus id, short rankings under
  ``retrieval_short_rankings = error``;
* :func:`every_query_failed`, an error: nothing ran, so nothing can be scored.

:func:`short_rankings` and :func:`coverage` are the warnings every report shows;
:func:`without_judged_ids` is why no baseline may be written from the run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING

from ..run import checks as runchecks
from ..run.checks import Coverage, StageRankings
from ..run.shortrankings import ShortRankings, find_short_rankings, unit_cutoffs
from ..scoring.metrics import MetricSpec
from ..verdict import Stop

if TYPE_CHECKING:
    from .session import RetrievalSession


def short_rankings(session: RetrievalSession) -> list[ShortRankings]:
    """Per stage of the session's run: rankings shorter than the cutoffs scored (the table's,
    the declared gates' and budgets'), each against what its metric's K counts."""
    if not session.outcomes:
        return []
    cutoffs = unit_cutoffs(session.scored_specs(), session.settings.cutoff_unit)
    run = session.ranked_run()
    # Read by the refusal, the artifact (its warnings and the depth hint) and the terminal:
    # one pass over every ranking per run.
    key = ("short_rankings", repr(cutoffs), run.stages, run.depth, repr(run.plan), run.stored)
    return list(session.remember(key, lambda: find_short_rankings(run, cutoffs)))


def coverage(session: RetrievalSession) -> list[Coverage]:
    """judged@K per stage at each cutoff the gates look at (declared, recorded or budgeted),
    over the visible queries (the held-out split's coverage is not shown: it would describe its
    rankings)."""
    if not session.outcomes:
        return []
    declared = [(t.spec, t.selection.stage) for t in session.thresholds]
    declared += [(b.spec, b.selection.stage) for b in session.budgets]
    declared += [(MetricSpec.parse(g.metric), g.stage) for g in session.gate_outcomes]
    gated = runchecks.gated_cutoffs(
        declared,
        default_stage=session.default_stage,
        ks=session.settings.ks,
        stages=session.stages,
    )
    visible = [q.id for q in session.scorable_queries() if session.scope.visible(q)]
    found = []
    for stage, cutoffs in gated.items():
        specs = [MetricSpec("judged", k) for k in cutoffs]
        evaluation = session.evaluation(stage, specs).restrict(visible)
        found += runchecks.stage_coverage(stage, specs, evaluation)
    return found


def _redacted(session: RetrievalSession) -> Callable[[str], bool]:
    """Whether the query of an id is one whose details must not be shown."""
    golden, scope = session.golden, session.scope
    return lambda qid: scope.redacted(golden[qid])


def _visible_rankings(session: RetrievalSession) -> Iterator[StageRankings]:
    visible = [q for q in session.scorable_queries() if session.scope.visible(q)]
    return runchecks.visible_rankings(session.outcomes or {}, visible, session.stages)


def refusal(session: RetrievalSession, corpus_ids: Collection[str] | None = None) -> Stop | None:
    """Why the session's numbers would be meaningless, as a refusal (a usage error); None when
    they are not.

    A ``retrieval_doc_id`` path that no returned item has (every query failed on it: a typo,
    not a retriever failure); ids that (almost) never match a judged or ``corpus_ids`` id;
    short rankings when ``retrieval_short_rankings = error``.
    """
    outcomes = list(session.outcomes.values()) if session.outcomes else []
    problem = runchecks.doc_id_problem(session.settings.doc_id, outcomes, _redacted(session))
    if problem is not None:
        return problem
    if session.outcomes and session.settings.id_check != "off":
        judged = runchecks.judged_ids(session.golden, session.duplicates)
        problem = runchecks.id_problem(
            _visible_rankings(session), judged, corpus_ids, stored=bool(session.run_files)
        )
        if problem is not None:
            return problem
    if session.settings.short_rankings == "error":
        return runchecks.short_rankings_refusal(short_rankings(session))
    return None


def every_query_failed(session: RetrievalSession) -> Stop | None:
    """The error when every query of the session's run failed (nothing to score); None when
    one ran. The first visible failure is quoted, never a held-out one."""
    outcomes = list(session.outcomes.values()) if session.outcomes else []
    return runchecks.every_query_failed(outcomes, _redacted(session))


def without_judged_ids(session: RetrievalSession) -> str | None:
    """Why no baseline may be written from the session's run, when no ranking of an answerable
    visible query holds a judged id at some stage (every metric there is 0); None otherwise."""
    if not session.outcomes:
        return None
    judged = runchecks.judged_ids(session.golden, session.duplicates)
    return runchecks.without_judged_ids(_visible_rankings(session), judged)
