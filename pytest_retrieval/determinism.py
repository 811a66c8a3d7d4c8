"""Is the pipeline deterministic? The determinism probe, and the extra runs of a multi-run baseline.

Run-to-run noise is what makes a baseline comparison flap, so after the main run a few queries
(``retrieval_determinism_probe``, spread evenly over the golden set, never held-out ones) are run
again and their rankings compared with the main run's: :func:`run_checks`. When a baseline is
written from several runs (``retrieval_baseline_runs``), the extra runs are made here too and
serve as a free probe of every query. :class:`DeterminismProbe` is what was found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .golden import Query
    from .retriever import QueryOutcome
    from .settings import Settings

#: Runs the retriever (and reranker) on the scorable queries, or only on these ids.
Rerun = Callable[["Sequence[str] | None"], "list[QueryOutcome]"]


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


def run_checks(
    settings: Settings, queries: Sequence[Query], first: list[QueryOutcome], rerun: Rerun
) -> tuple[DeterminismProbe | None, list[list[QueryOutcome]]]:
    """After the main run: the determinism probe (``retrieval_determinism_probe`` queries
    re-run, rankings compared) and, when updating a baseline from several runs, the extra
    runs. ``queries`` are the scorable ones; ``rerun(None)`` runs them all again,
    ``rerun(ids)`` only those (the session's run, with the main run's options)."""
    extra: list[list[QueryOutcome]] = []
    if settings.update_baseline:
        for _ in range(settings.baseline_runs - 1):
            extra.append(rerun(None))
    by_id = {o.query_id: o for o in first}
    if extra:
        # The extra runs are a free probe of every query: compare each with the first run.
        ids = probe_ids(queries, len(first), settings.heldout_split)
        wanted = set(ids)
        changed: set[str] = set()
        for run in extra:
            changed.update(changed_rankings(by_id, [o for o in run if o.query_id in wanted]))
        return DeterminismProbe(tuple(ids), tuple(i for i in ids if i in changed)), extra
    # The probe serves the regression gates (run-to-run noise is what makes a baseline
    # comparison flap), so it runs only when a baseline is configured: without one the
    # retriever is called exactly once per query.
    count = settings.determinism_probe if settings.baseline else 0
    ids = probe_ids(queries, count, settings.heldout_split)
    if not ids:
        return None, extra
    again = rerun(ids)
    return DeterminismProbe(tuple(ids), changed_rankings(by_id, again)), extra
