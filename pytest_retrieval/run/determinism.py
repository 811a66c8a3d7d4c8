"""Is the pipeline deterministic? The determinism probe, and the extra runs of a multi-run baseline.

Run-to-run noise is what makes a baseline comparison flap, so after the main run a few queries
(``retrieval_determinism_probe``, spread evenly over the golden set, never held-out ones, nor
ones that failed) are run again and their rankings compared with the main run's:
:func:`run_checks`. The probe serves the comparison with a baseline, so it runs only when a
baseline is compared against or written; otherwise the retriever is called once per query. When
a baseline is written from several runs (``retrieval_baseline_runs``), the extra runs are made
here too and serve as a free probe of every query. :class:`DeterminismProbe` is what was found.

A ranking served from the cache is not the pipeline's ranking of today: when a live run gives
another, the query is run live once more (unless the extra runs already did). Two live rankings
that agree with each other and not with the cache mean the cache is stale (the retriever changed
under the same index version), not that the pipeline is noisy; live rankings that disagree with
each other mean noise. Under xdist the probe runs once per session, in one worker (see
:mod:`.runphase`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..golden.model import Query
    from ..settings.resolve import Settings
    from .retriever import QueryOutcome

#: Runs the retriever (and reranker) on the scorable queries, or only on these ids.
Rerun = Callable[["Sequence[str] | None"], "list[QueryOutcome]"]

#: The fix of a stale cache, said wherever it is reported.
STALE_FIX = (
    "refresh the cache (--retrieval-cache=refresh) or bump the index version "
    "(retrieval_index_version)"
)


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _listed(ids: Sequence[str]) -> str:
    return ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")


@dataclass(frozen=True, slots=True)
class DeterminismProbe:
    """What re-running a few queries after the run found: which rankings came back different.

    ``queries`` are the ids re-run (never held-out ones), ``changed`` those whose live rankings
    differ from run to run (or from the main run's live one): the pipeline is nondeterministic.
    ``stale`` are queries served from the cache whose live rankings agree with each other but
    not with the cache: the cache is stale. Queries that failed in any run are left out.
    """

    queries: tuple[str, ...]
    changed: tuple[str, ...]
    stale: tuple[str, ...] = ()

    @property
    def noisy(self) -> bool:
        """True when at least one ranking changed: the pipeline is nondeterministic."""
        return bool(self.changed)

    def describe(self) -> str:
        """``determinism probe: 5 queries re-run, 2 rankings changed (q1, q7): the pipeline is
        nondeterministic``; with stale cache entries, ``...; 1 cached ranking is stale (q3)``
        (:meth:`stale_warning` says what it means)."""
        head = (
            f"determinism probe: {_plural(len(self.queries), 'query', 'queries')} re-run, "
            f"{_plural(len(self.changed), 'ranking', 'rankings')} changed"
        )
        if self.changed:
            head += f" ({_listed(self.changed)}): the pipeline is nondeterministic"
        else:
            head += " (the pipeline looks deterministic)"
        if self.stale:
            verb = "is" if len(self.stale) == 1 else "are"
            head += (
                f"; {_plural(len(self.stale), 'cached ranking', 'cached rankings')} {verb} "
                f"stale ({_listed(self.stale)})"
            )
        return head

    def stale_warning(self) -> str | None:
        """What a stale cache means and its fix; None when the probe found none."""
        if not self.stale:
            return None
        return stale_warning(len(self.stale), len(self.queries), self.stale)

    def to_dict(self) -> dict[str, Any]:
        """Builtins (artifact, xdist payload)."""
        return {
            "queries": list(self.queries),
            "changed": list(self.changed),
            "stale": list(self.stale),
        }

    @classmethod
    def from_dict(cls, data: Any) -> DeterminismProbe:
        """Inverse of :meth:`to_dict` (``stale`` absent in older artifacts: none)."""
        return cls(
            tuple(data.get("queries", ())),
            tuple(data.get("changed", ())),
            tuple(data.get("stale", ())),
        )


def stale_warning(stale: int, probed: int, ids: Sequence[str]) -> str:
    """``the cache is stale: 2 of the 5 queries re-run ...``: the words of every report."""
    return (
        f"the cache is stale: {stale} of the {_plural(probed, 'query', 'queries')} re-run live "
        f"({_listed(ids)}) came back the same on two live runs but not as cached, so this run "
        f"scored rankings the retriever no longer returns; {STALE_FIX}"
    )


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
        if _answer(before) != _answer(outcome):
            changed.append(outcome.query_id)
    return tuple(changed)


def _answer(outcome: QueryOutcome) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """What a probe compares of an outcome: its rankings and the ids as returned (the same
    documents from chunks in another order change distinct@K and, with K counted in results,
    every metric)."""
    return dict(outcome.rankings), dict(outcome.returned)


def compare_runs(
    ids: Sequence[str],
    first: Mapping[str, QueryOutcome],
    live: Sequence[Sequence[QueryOutcome]],
    rerun: Rerun,
) -> DeterminismProbe:
    """The probe of ``ids``: the main run ``first`` against the ``live`` runs made after it.

    A query served from the cache (:func:`.runsource.served_from_cache`) that one live run
    contradicts, with no second live run to tell, is run once more (``rerun``). Then per query:
    live rankings that differ from each other, or from a live main run, are ``changed``; live
    rankings that agree with each other but not with the cached one are ``stale``.
    """
    from .source import served_from_cache

    runs = [{o.query_id: o for o in run} for run in live]
    served = {i for i in ids if served_from_cache(first[i])}
    if len(runs) == 1:
        doubt = [i for i in ids if i in served and i in changed_rankings(dict(first), live[0])]
        if doubt:
            runs.append({o.query_id: o for o in rerun(doubt)})
    changed: list[str] = []
    stale: list[str] = []
    for qid in ids:
        again = [run[qid] for run in runs if qid in run]
        if not again or any(o.error is not None for o in again):
            continue
        rankings = [_answer(o) for o in again]
        if any(r != rankings[0] for r in rankings[1:]):
            changed.append(qid)
        elif rankings[0] != _answer(first[qid]):
            if qid in served and len(rankings) > 1:
                stale.append(qid)
            else:
                changed.append(qid)
    return DeterminismProbe(tuple(ids), tuple(changed), tuple(stale))


def run_checks(
    settings: Settings,
    queries: Sequence[Query],
    first: list[QueryOutcome],
    rerun: Rerun,
    *,
    compared: bool = False,
) -> tuple[DeterminismProbe | None, list[list[QueryOutcome]]]:
    """After the main run: the determinism probe (``retrieval_determinism_probe`` queries
    re-run, rankings compared) and, when updating a baseline from several runs, the extra
    runs. ``queries`` are the scorable ones; ``rerun(None)`` runs them all again,
    ``rerun(ids)`` only those (the session's run, with the main run's options, each query
    asked at the depth its ranking came from).

    The probe runs only with a baseline: ``compared`` (one was loaded to compare against) or
    while one is written. Queries that failed in the main run are never re-run (a crash would
    crash again); a run with failures writes no baseline, so it makes no extra runs either.
    """
    by_id = {o.query_id: o for o in first}
    answered = [q for q in queries if q.id in by_id and by_id[q.id].error is None]
    extra: list[list[QueryOutcome]] = []
    if settings.update_baseline and all(o.error is None for o in first):
        for _ in range(settings.baseline_runs - 1):
            extra.append(rerun(None))
    if extra:
        # The extra runs are a free probe of every query: compare each with the first run.
        ids = probe_ids(answered, len(first), settings.heldout_split)
        return compare_runs(ids, by_id, extra, rerun), extra
    # The probe serves the regression gates (run-to-run noise is what makes a baseline
    # comparison flap), so it runs only with a baseline: without one the retriever is called
    # exactly once per query.
    count = settings.determinism_probe if compared or settings.update_baseline else 0
    ids = probe_ids(answered, count, settings.heldout_split)
    if not ids:
        return None, extra
    return compare_runs(ids, by_id, [rerun(ids)], rerun), extra
