"""What the Markdown and HTML reports show, read from the JSON artifact (builtins only, or
the artifact being written, whose per-query parts are :mod:`~pytest_retrieval.files` lazy
containers: a query's relevant ranks are then read alone, without its snapshot values).

Both renderers (:mod:`.markdown`, :mod:`.html`) work from the artifact dict that
:func:`~pytest_retrieval.report.artifact.build_artifact` writes, so the plugin and the
``pytest-retrieval report`` command produce the same reports. This module turns that dict into
plain rows (the verdict, one row per gate, the metric tables, the per-query facts) with a fixed
order and fixed rounding; the renderers only lay them out and escape them.

The renderers read everything through this module: the shared phrases (numbers, scope labels,
one-line texts) live in :mod:`.phrases` and the gate rows and the verdict in :mod:`.gaterows`,
which the renderers import beside this one.

A *baseline document* (the baseline JSON, or a
:class:`~pytest_retrieval.regression.baseline.Snapshot`) is optional: with it the reports add the
baseline's means (the dashed curve, the deltas of the metric table) and mark relevant documents the
baseline had found and this run lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ..files import LazyMapping
from ..run.stages import final_stage
from ..text import parse_int
from .gaterows import (
    stale_cache,
)

if TYPE_CHECKING:
    from ..regression.snapshot import Snapshot


#: The baseline the reports compare with: the baseline JSON as a dict, or a loaded Snapshot.
BaselineLike = Union[Mapping[str, Any], "Snapshot"]


# --- the artifact's parts --------------------------------------------------------------------


def split_metric(name: str) -> tuple[str, int | None]:
    """``recall@10`` -> (``recall``, 10); ``mrr`` -> (``mrr``, None)."""
    family, sep, k = name.partition("@")
    cutoff = parse_int(k) if sep else None
    if cutoff is not None:
        return family, cutoff
    return name, None


def default_stage(artifact: Mapping[str, Any]) -> str | None:
    """The final stage (:func:`~pytest_retrieval.run.stages.final_stage`), whose ranking the user
    sees."""
    return final_stage(str(s) for s in artifact.get("stages") or ())


def largest_k(artifact: Mapping[str, Any]) -> int | None:
    """The largest configured cutoff K."""
    ks = [int(k) for k in (artifact.get("settings") or {}).get("ks") or ()]
    return max(ks) if ks else None


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the metric table: overall, a slice, or the held-out split."""

    label: str
    split: str | None
    slice: str | None
    queries: int
    evaluated: int
    metrics: Mapping[str, float | None]

    @property
    def baseline_key(self) -> str | None:
        """The key of the same column in a baseline's ``means`` (None: baselines lack it)."""
        if self.split is not None:
            return None
        return "overall" if self.slice is None else f"slice:{self.slice}"


def columns(artifact: Mapping[str, Any], stage: str) -> list[Column]:
    """The metric table's columns of one stage, in the artifact's order."""
    out = []
    for entry in artifact.get("results") or ():
        if entry.get("stage") != stage:
            continue
        out.append(
            Column(
                label=str(entry.get("column")),
                split=entry.get("split"),
                slice=entry.get("slice"),
                queries=int(entry.get("queries") or 0),
                evaluated=int(entry.get("evaluated") or 0),
                metrics=dict(entry.get("metrics") or {}),
            )
        )
    return out


def metric_names(artifact: Mapping[str, Any]) -> list[str]:
    """Every metric of the results, in the order the settings list them (family, then K)."""
    seen: dict[str, None] = {}
    for entry in artifact.get("results") or ():
        for name in entry.get("metrics") or {}:
            seen.setdefault(str(name), None)
    families = [str(f) for f in (artifact.get("settings") or {}).get("metrics") or ()]

    def key(name: str) -> tuple[int, str, int]:
        family, k = split_metric(name)
        rank = families.index(family) if family in families else len(families)
        return rank, family, -1 if k is None else k

    return sorted(seen, key=key)


def _near_ten(ks: Iterable[int]) -> int | None:
    ks = sorted(ks)
    if not ks:
        return None
    below = [k for k in ks if k <= 10]
    return below[-1] if below else ks[0]


def metric_near_ten(artifact: Mapping[str, Any], family: str) -> str | None:
    """``family@K`` with K = 10, or the nearest K below it, else the smallest K (None: absent)."""
    ks = [k for fam, k in map(split_metric, metric_names(artifact)) if fam == family and k]
    k = _near_ten(ks)
    return None if k is None else f"{family}@{k}"


def headline_metrics(artifact: Mapping[str, Any]) -> list[str]:
    """The short list of metrics the Markdown shows up front.

    Each configured metric at K = 10 (or the nearest K below, else the smallest), recall at the
    largest K (the candidate recall a reranker depends on), ``abstain_rate`` and ``answer_rate``
    (when a score floor is set), and every metric a gate or a regression check names; all
    restricted to what the results hold, in settings order.
    """
    names = metric_names(artifact)
    available = set(names)
    by_family: dict[str, list[int]] = {}
    for name in names:
        family, k = split_metric(name)
        if k is not None:
            by_family.setdefault(family, []).append(k)
    wanted: set[str] = set()
    for family, ks in by_family.items():
        k = _near_ten(ks)
        wanted.add(f"{family}@{k}")
    if "recall" in by_family:
        wanted.add(f"recall@{max(by_family['recall'])}")
    for gate in [*(artifact.get("gates") or ()), *(artifact.get("regressions") or ())]:
        wanted.add(str(gate.get("metric")))
    wanted |= {"abstain_rate", "answer_rate"}  # the no-answer column's numbers, when measured
    return [name for name in names if name in wanted and name in available]


def curve(
    artifact: Mapping[str, Any], stage: str, family: str, column: str = "overall"
) -> list[tuple[int, float | None]]:
    """(K, mean) of a metric family at every K of one column of a stage, K ascending."""
    for col in columns(artifact, stage):
        if col.label == column:
            points = []
            for name, value in col.metrics.items():
                fam, k = split_metric(name)
                if fam == family and k is not None:
                    points.append((k, value))
            return sorted(points)
    return []


# --- baselines -------------------------------------------------------------------------------


def baseline_document(baseline: BaselineLike | None) -> Mapping[str, Any] | None:
    """The baseline as its JSON document (a Snapshot is converted)."""
    if baseline is None:
        return None
    to_dict = getattr(baseline, "to_dict", None)
    if callable(to_dict):
        document: Mapping[str, Any] = to_dict()
        return document
    assert isinstance(baseline, Mapping)
    return baseline


def baseline_mean(
    baseline: Mapping[str, Any] | None, stage: str, column: str, metric: str
) -> float | None:
    """A baseline's mean of ``metric`` (``means[stage][column][metric]``), None when absent."""
    if baseline is None:
        return None
    value = ((baseline.get("means") or {}).get(stage) or {}).get(column, {}).get(metric)
    return float(value) if isinstance(value, (int, float)) else None


# --- per query -------------------------------------------------------------------------------


def _relevant_ranks(
    artifact: Mapping[str, Any], query_id: str, stage: str
) -> Mapping[str, int | None] | None:
    snapshot = artifact.get("snapshot") or {}
    queries = snapshot.get("queries") or {}
    if isinstance(queries, LazyMapping):  # the artifact being written: the ranks alone
        if query_id not in queries:
            return None
        by_stage = queries.member(query_id, "relevant_ranks")
    else:
        query = queries.get(query_id)
        if query is None:
            return None
        by_stage = query.get("relevant_ranks")
    ranks: Mapping[str, int | None] | None = (by_stage or {}).get(stage)
    return ranks


def first_relevant_rank(
    artifact: Mapping[str, Any], row: Mapping[str, Any], stage: str
) -> tuple[int | None, str]:
    """(rank, text) of the first relevant document of a query row at a stage.

    From the snapshot's relevant ranks; for rows the snapshot lacks (held-out rows shown with
    details) from the reciprocal rank at the largest K. Text: ``3``, ``not found`` (no relevant
    document retrieved), ``> 50`` (not in the top K) or ``—`` (no relevant document, or unknown).
    """
    ranks = _relevant_ranks(artifact, str(row.get("id")), stage)
    if ranks is not None:
        found = [r for r in ranks.values() if r is not None]
        if not ranks:
            return None, "—"
        if not found:
            return None, "not found"
        best = min(found)
        return best, str(best)
    k = largest_k(artifact)
    mrr = ((row.get("metrics") or {}).get(stage) or {}).get(f"mrr@{k}")
    if isinstance(mrr, (int, float)) and k is not None:
        if mrr > 0:
            rank = round(1.0 / mrr)
            return rank, str(rank)
        return None, f"> {k}"
    return None, "—"


@dataclass(frozen=True, slots=True)
class MissedDoc:
    """A relevant document outside the top K; ``baseline_rank`` when the baseline had it."""

    doc: str
    rank: int | None
    baseline_rank: int | None = None

    @property
    def lost(self) -> bool:
        """The baseline ranked it inside the top K and this run does not."""
        return self.baseline_rank is not None


def missed_relevant(
    artifact: Mapping[str, Any],
    query_id: str,
    stage: str,
    baseline: Mapping[str, Any] | None = None,
) -> list[MissedDoc]:
    """Relevant documents of a query that are not in the top K (largest K) at a stage.

    Sorted by document id. With a baseline, documents the baseline ranked inside the top K are
    marked (they were *lost*). Empty when the snapshot does not hold the query.
    """
    ranks = _relevant_ranks(artifact, query_id, stage)
    if not ranks:
        return []
    k = largest_k(artifact) or 0
    before: Mapping[str, Any] = {}
    if baseline is not None:
        query = (baseline.get("queries") or {}).get(query_id) or {}
        before = (query.get("relevant_ranks") or {}).get(stage) or {}
    out = []
    for doc in sorted(ranks):
        rank = ranks[doc]
        if rank is not None and rank <= k:
            continue
        old = before.get(doc)
        out.append(
            MissedDoc(doc, rank, old if isinstance(old, int) and old <= k else None),
        )
    return out


def row_text(row: Mapping[str, Any]) -> str:
    """A query row's text (empty when missing)."""
    text = row.get("text")
    return "" if text is None else str(text)


def rows_by_id(artifact: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The artifact's per-query rows by query id."""
    return {str(row.get("id")): row for row in artifact.get("queries") or ()}


def stage_list(artifact: Mapping[str, Any]) -> Sequence[str]:
    """The stages, in pipeline order."""
    return [str(s) for s in artifact.get("stages") or ()]


#: How many returned ids the per-query views show beside the missed relevant ones.
RETURNED_SHOWN = 3


def top_returned(row: Mapping[str, Any], stage: str | None, n: int = RETURNED_SHOWN) -> list[str]:
    """The first ``n`` ids a query's ranking returned at ``stage`` (what it found instead)."""
    if stage is None:
        return []
    ranking = (row.get("rankings") or {}).get(stage) or ()
    return [str(doc) for doc in ranking[:n]]


def warnings(artifact: Mapping[str, Any]) -> list[str]:
    """The run's findings that make numbers meaningless where they apply (short rankings, a
    stale cache)."""
    found = [str(w.get("message")) for w in artifact.get("warnings") or () if w.get("message")]
    stale = stale_cache(artifact)
    return found if stale is None else [*found, stale]


# --- no-answer queries and duplicates ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One candidate floor of a sweep; ``chosen`` marks the configured floor."""

    floor: float
    abstain_rate: float | None
    answer_rate: float | None
    chosen: bool


@dataclass(frozen=True, slots=True)
class SweepView:
    """The sweep of one stage: ``abstain_rate`` and ``answer_rate`` at candidate floors."""

    stage: str
    floor: float | None
    no_answer: int
    answerable: int
    rows: tuple[SweepRow, ...]

    @property
    def caption(self) -> str:
        """``stage reranker · 14 no-answer, 105 answerable queries · floor 0.5``."""
        floor = "no floor set" if self.floor is None else f"floor {self.floor:g}"
        return (
            f"stage {self.stage} · {self.no_answer} no-answer, {self.answerable} answerable "
            f"queries · {floor}"
        )


def _number_or_none(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def sweeps(artifact: Mapping[str, Any]) -> list[SweepView]:
    """The score-floor sweeps of the artifact, in stage order (empty when it has none)."""
    block = artifact.get("abstention") or {}
    out = []
    for entry in block.get("sweeps") or ():
        if not isinstance(entry, Mapping):
            continue
        floor = _number_or_none(entry.get("floor"))
        rows = []
        for point in entry.get("points") or ():
            value = _number_or_none(point.get("floor")) if isinstance(point, Mapping) else None
            if value is None:
                continue
            rows.append(
                SweepRow(
                    value,
                    _number_or_none(point.get("abstain_rate")),
                    _number_or_none(point.get("answer_rate")),
                    floor is not None and value == floor,
                )
            )
        out.append(
            SweepView(
                stage=str(entry.get("stage")),
                floor=floor,
                no_answer=int(_number_or_none(entry.get("no_answer")) or 0),
                answerable=int(_number_or_none(entry.get("answerable")) or 0),
                rows=tuple(rows),
            )
        )
    return out


def notes(artifact: Mapping[str, Any]) -> list[str]:
    """What the numbers mean here: scored per duplicate group; abstention not measurable."""
    out = []
    dedup = artifact.get("dedup")
    if isinstance(dedup, Mapping) and not dedup.get("groups"):
        # A file whose every document has its own group (say): it changes no number.
        out.append(
            f"Scores are not deduplicated: no two documents are copies by {dedup.get('source')} "
            "(documents that share a group are copies)."
        )
    elif isinstance(dedup, Mapping):
        out.append(
            f"Scores are deduplicated: {dedup.get('groups')} duplicate groups "
            f"({dedup.get('documents')} documents) from {dedup.get('source')}; a group counts "
            "once, at its first rank."
        )
    block = artifact.get("abstention") or {}
    for stage, reason in (block.get("unmeasured") or {}).items():
        out.append(f"abstain_rate and answer_rate cannot be measured [{stage}]: {reason}")
    return out


# --- leaks -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeakRow:
    """One row of the leak table: a leak metric at one stage, ``documents (share)`` per K."""

    label: str
    cells: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LeakQuery:
    """One query's leaks at the final stage, for the worst-first list: each leak as
    ``(rank, doc, metric, reason, cached)`` in rank order."""

    query_id: str
    leaks: tuple[tuple[int, str, str, str, bool], ...]

    def describe(
        self, code: Callable[[str], str] = str, text: Callable[[str], str] = str
    ) -> list[str]:
        """Each leak as ``DOC at rank 2 (forbidden: tenant globex, the query's is acme)``:
        ``code`` formats the id and ``text`` the reason (the renderer's escaping)."""
        return [
            f"{code(d)} at rank {rank} "
            f"({text(metric + ': ' + reason + (', from the cache' if cached else ''))})"
            for rank, d, metric, reason, cached in self.leaks
        ]


@dataclass(frozen=True, slots=True)
class LeakView:
    """What the reports show of ``forbidden@K`` / ``stale@K`` (the artifact's ``leaks``
    block): the table over the overall queries, the queries with a leak at the final stage
    worst first (most leaks, then the earliest, then the id), and how many leaked documents
    held-out queries have at the largest cutoff (counted, never named)."""

    stage: str | None
    cutoffs: tuple[int, ...]
    rows: tuple[LeakRow, ...]
    queries: tuple[LeakQuery, ...]
    heldout: int


def leaks(artifact: Mapping[str, Any]) -> LeakView | None:
    """The leak view of an artifact; None when its run measured no leak (no ``leaks`` block)."""
    block = artifact.get("leaks")
    if not isinstance(block, Mapping):
        return None
    cutoffs = tuple(int(k) for k in block.get("cutoffs") or ())
    stages = [str(s) for s in artifact.get("stages") or ()]
    final = default_stage(artifact)
    cells: dict[tuple[str, str], dict[int, str]] = {}
    heldout_split = (artifact.get("heldout") or {}).get("split")
    heldout = 0
    for row in block.get("results") or ():
        name, k = split_metric(str(row.get("metric")))
        documents = int(row.get("documents") or 0)
        if row.get("column") != "overall":
            # A held-out column's leaks (forbidden and stale, the final stage, the largest K)
            # are counted where its rows are redacted: its queries are never named.
            redacted = bool(artifact.get("redacted_queries"))
            largest = bool(cutoffs) and k == cutoffs[-1]
            if row.get("split") == heldout_split and redacted and largest:
                heldout += documents if row.get("stage") == final else 0
            continue
        share = row.get("share")
        shown = "—" if not isinstance(share, (int, float)) else f"{share:.4f}"
        if k is not None:
            cells.setdefault((str(row.get("stage")), name), {})[k] = f"{documents} ({shown})"
    rows = tuple(
        LeakRow(
            f"{name} [{stage}]" if len(stages) > 1 else name,
            tuple(values.get(k, "") for k in cutoffs),
        )
        for (stage, name), values in cells.items()
    )
    queries = []
    for query in artifact.get("queries") or ():
        found = sorted(
            (
                int(leak.get("rank") or 0),
                str(leak.get("doc")),
                str(leak.get("metric")),
                str(leak.get("reason")),
                bool(leak.get("cached")),
            )
            for leak in query.get("leaks") or ()
            if leak.get("stage") == final
        )
        if found:
            queries.append(LeakQuery(str(query.get("id")), tuple(found)))
    queries.sort(key=lambda q: (-len(q.leaks), q.leaks[0][0], q.query_id))
    return LeakView(final, cutoffs, rows, tuple(queries), heldout)
