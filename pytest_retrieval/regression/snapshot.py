"""A snapshot: per-query quality of one run, comparable with another run's.

A **snapshot** holds, per query (outside the held-out split) and per stage, every metric's value,
the rank of each relevant document and the whole document ranking that was scored (and the ids
as returned where they repeated); plus the golden-set fingerprint, a label hash per query, the
query's judgments and a hash of its text (what lets ``--retrieval-baseline-mode=rescore``
re-score the stored rankings against new labels exactly as a fresh baseline would, see
:mod:`pytest_retrieval.regression.rescore`), and the settings that change numbers.

Schema versions: 3 (written now) keeps the whole rankings; 2 kept each ranking cut at the
retrieval depth (``settings["depth"]``, :func:`stored_cut`), so a metric scored on the whole
ranking cannot always be re-scored from it; 1 kept the top 10 and no judgments.

This module is the model: :class:`Snapshot` and its document form (``to_dict`` / ``from_dict``,
floats rounded to :data:`DECIMALS` decimals), built from a run's evaluations
(:func:`build_snapshot`), averaged over several runs (:func:`average_snapshots`) and measured
over a selection (:func:`snapshot_mean`). The baseline file that holds one, written and read back
checked, is :mod:`pytest_retrieval.regression.baseline`; the JSON artifact carries the same
document.

Held-out queries never enter a snapshot with per-query detail.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, cast

from ..errors import InputError, Problem
from ..gates.gate import Selection
from ..golden.context import context_json
from ..golden.model import GoldenSet
from ..run.stages import final_stage
from ..scoring.evaluate import Evaluation

BASELINE_SCHEMA = "pytest-retrieval/baseline"
BASELINE_SCHEMA_VERSION = 3
#: How many ids of each ranking a version-1 snapshot kept.
TOP_KEPT = 10
#: Decimals kept for every float in a baseline (enough for 4-decimal reports, short diffs).
DECIMALS = 6


def round_value(value: float | None) -> float | None:
    return None if value is None else round(value, DECIMALS)


#: Rounded values by value (:func:`_rounded`), at most this many: a run's per-query values
#: repeat (ranks are few), and ``round(x, 6)`` costs ten dict look-ups.
_ROUNDED_KEPT = 65536
_ROUNDED: dict[float, float] = {}


def _rounded(values: Mapping[str, float | None]) -> dict[str, float | None]:
    """``{metric: round_value(v)}``, each distinct value rounded once. Exact: two floats that
    compare equal, nonzero and not NaN, have the same bits (so the same rounding); zeros keep
    their sign and NaN is rounded each time; anything but a float is rounded as it is."""
    out: dict[str, float | None] = {}
    memo = _ROUNDED
    for metric, value in values.items():
        if value is None or type(value) is not float or not value:
            out[metric] = None if value is None else round(value, DECIMALS)
            continue
        found = memo.get(value)
        if found is None:
            found = round(value, DECIMALS)
            if len(memo) < _ROUNDED_KEPT and value == value:
                memo[value] = found
        out[metric] = found
    return out


def _round_all(value: Any) -> Any:
    """``value`` (builtins) with every float in it rounded to :data:`DECIMALS` decimals."""
    if isinstance(value, float):
        return round(value, DECIMALS)
    if isinstance(value, Mapping):
        return {k: _round_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round_all(v) for v in value]
    return value


#: The encoders of :func:`text_hash` and :func:`label_hash`, built once: ``json.dumps`` with
#: keyword arguments builds a new encoder on every call, and these run once per query. The
#: same settings as those calls, so the same text (the hashes are in committed baselines).
_TEXT_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
_LABEL_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def text_hash(text: str | None, context: str | None = None) -> str:
    """A short hash of what the retriever was handed: a query's text and, when it has one, its
    context (canonical JSON, :func:`~pytest_retrieval.golden.context.context_json`). Rescoring
    needs to know neither changed: a ranking made for another tenant is not this query's. A query
    without a context keeps the hash it always had."""
    handed: object = text if context is None else [text, context]
    return hashlib.sha256(_TEXT_ENCODE(handed).encode("utf-8")).hexdigest()[:16]


def label_hash(
    text: str | None,
    judgments: Mapping[str, int],
    slices: Iterable[str],
    split: str,
    context: str | None = None,
    forbidden: Iterable[str] = (),
) -> str:
    """A short hash of one query's labels: changes when its text, grades, slices, split,
    context (canonical JSON) or ``forbidden`` list do, so a query whose forbidden documents
    changed is a changed query, as one whose grades did. A query with neither a context nor
    forbidden documents keeps the hash it always had."""
    parts: list[object] = [text, sorted(judgments.items()), sorted(slices), split]
    if context is not None:
        parts.append(context)
    listed = sorted(set(forbidden))
    if listed:  # an object: never equal to a context (a string) in the same place
        parts.append({"forbidden": listed})
    canonical = _LABEL_ENCODE(parts)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class QuerySnapshot:
    """One query in a snapshot."""

    split: str
    slices: tuple[str, ...]
    labels: str
    metrics: Mapping[str, Mapping[str, float | None]]  # stage -> metric -> value
    relevant_ranks: Mapping[str, Mapping[str, int | None]]  # stage -> doc -> rank (None: missing)
    #: stage -> the document ranking that was scored, whole (version 3; version 2 cut it at the
    #: retrieval depth, version 1 at 10: :func:`stored_cut`).
    top: Mapping[str, tuple[str, ...]]
    #: stage -> metric -> run-to-run standard deviation (ddof=1) over the baseline's runs; empty
    #: for a single-run snapshot (the key is then left out of the file).
    spread: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    #: The labels the values were scored with (version 2; ``None`` in a version-1 baseline).
    judgments: Mapping[str, int] | None = None
    #: :func:`text_hash` of the query text (version 2; ``None`` in a version-1 baseline).
    text: str | None = None
    #: stage -> the ids as returned (repeats kept), whole, for the stages where they differ
    #: from the document ranking: what re-scoring ``distinct@K`` and K counted in results
    #: needs. Empty when nothing repeated (the key is then left out of the file).
    returned: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The query's context, known only in the run that built the snapshot (None when read
    #: from a file: a baseline keeps a hash of what the retriever was handed, never the
    #: context, as it keeps no text). What a context slice (``slice=tenant:acme``) selects by.
    context: Mapping[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Builtins, floats rounded."""
        out: dict[str, Any] = {
            "split": self.split,
            "slices": list(self.slices),
            "labels": self.labels,
            "metrics": {stage: _rounded(values) for stage, values in self.metrics.items()},
            "relevant_ranks": self.ranks_dict(),
            "top": {s: list(t) for s, t in self.top.items()},
        }
        if self.spread:
            out["spread"] = {
                stage: {m: round_value(v) for m, v in values.items()}
                for stage, values in self.spread.items()
            }
        if self.judgments is not None:
            out["judgments"] = dict(self.judgments)
        if self.text is not None:
            out["text"] = self.text
        if self.returned:
            out["returned"] = {s: list(r) for s, r in self.returned.items()}
        return out

    def ranks_dict(self) -> dict[str, dict[str, int | None]]:
        """``relevant_ranks`` as :meth:`to_dict` writes it (stage -> doc -> rank)."""
        return {s: dict(r) for s, r in self.relevant_ranks.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuerySnapshot:
        """Inverse of :meth:`to_dict`."""
        judgments = data.get("judgments")
        text = data.get("text")
        return cls(
            split=str(data["split"]),
            slices=tuple(data.get("slices", ())),
            labels=str(data["labels"]),
            metrics={s: dict(v) for s, v in data["metrics"].items()},
            relevant_ranks={s: dict(r) for s, r in data.get("relevant_ranks", {}).items()},
            top={s: tuple(t) for s, t in data.get("top", {}).items()},
            spread={s: dict(v) for s, v in (data.get("spread") or {}).items()},
            judgments=dict(judgments) if isinstance(judgments, Mapping) else None,
            text=str(text) if text is not None else None,
            returned={s: tuple(r) for s, r in (data.get("returned") or {}).items()},
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Per-query quality of one run, comparable with another run's."""

    fingerprint: str
    settings: Mapping[str, Any]
    stages: tuple[str, ...]
    metrics: tuple[str, ...]
    queries: Mapping[str, QuerySnapshot]
    heldout: Mapping[str, Any] = field(default_factory=dict)
    plugin_version: str = ""
    created: str = ""
    #: ``retrieval_index_version`` of the run (recorded, never compared: a new index is what a
    #: regression check is for). Older baselines have none.
    index_version: str | None = None
    #: How many runs of the retriever the per-query values are the means of (1: one run; the
    #: key is then left out of the file, so single-run baselines read as before).
    n_runs: int = 1
    #: The schema version the snapshot was read from (a new one is the current version).
    schema_version: int = BASELINE_SCHEMA_VERSION

    def to_dict(self, *, lazy: bool = False) -> dict[str, Any]:
        """The baseline document (builtins), in the version it was read from (a version-1
        baseline lacks what version 2 adds, so it is never relabelled). ``lazy``: the per-query
        entries are built as they are read (:class:`~pytest_retrieval.files.LazyMapping`), for a
        document written once (the artifact's snapshot), not held."""
        if lazy:
            from ..files import LazyMapping

            # The reports read each query's relevant ranks: built alone, without its values.
            queries: Mapping[str, Any] = LazyMapping(
                sorted(self.queries),
                lambda qid: self.queries[qid].to_dict(),
                {"relevant_ranks": lambda qid: self.queries[qid].ranks_dict()},
            )
        else:
            queries = {qid: q.to_dict() for qid, q in sorted(self.queries.items())}
        out = {
            "schema": BASELINE_SCHEMA,
            "schema_version": self.schema_version,
            "plugin_version": self.plugin_version,
            "created": self.created,
            "golden": {"fingerprint": self.fingerprint, "queries": len(self.queries)},
            "settings": dict(self.settings),
            "index_version": self.index_version,
            "stages": list(self.stages),
            "metrics": list(self.metrics),
            "means": self.means_by_column(),
            "heldout": _round_all(dict(self.heldout)),
            "queries": queries,
        }
        if self.n_runs != 1:
            out["n_runs"] = self.n_runs
        return out

    def means_by_column(self) -> dict[str, dict[str, dict[str, float | None]]]:
        """Readable means (stage -> "overall"/"slice:<name>" -> metric -> mean), for reviewers."""
        out: dict[str, dict[str, dict[str, float | None]]] = {}
        queries = list(self.queries.values())
        members: dict[str, list[int]] = {"overall": list(range(len(queries)))}
        for position, q in enumerate(queries):
            for name in q.slices:
                members.setdefault(f"slice:{name}", []).append(position)
        for stage in self.stages:
            # Each query's values in metric order, read once; a column takes its members' rows.
            # The same values, summed in the same order, as a lookup per query and metric: the
            # same bits.
            rows = _value_rows([q.metrics.get(stage, {}) for q in queries], self.metrics)
            out[stage] = {}
            for label, positions in sorted(members.items()):
                picked = rows if label == "overall" else [rows[i] for i in positions]
                out[stage][label] = {
                    metric: _mean(column)
                    for metric, column in zip(self.metrics, _columns(picked, len(self.metrics)))
                }
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Snapshot:
        """Inverse of :meth:`to_dict` (no validation: see ``baseline.load_baseline``)."""
        return cls(
            fingerprint=str(data["golden"]["fingerprint"]),
            settings=dict(data["settings"]),
            stages=tuple(data["stages"]),
            metrics=tuple(data["metrics"]),
            queries={qid: QuerySnapshot.from_dict(q) for qid, q in data["queries"].items()},
            heldout=dict(data.get("heldout", {})),
            plugin_version=str(data.get("plugin_version", "")),
            created=str(data.get("created", "")),
            index_version=data.get("index_version"),
            n_runs=int(data.get("n_runs", 1)),
            schema_version=int(data.get("schema_version", BASELINE_SCHEMA_VERSION)),
        )


#: The fix when a stored run is asked for a context slice (it keeps no contexts).
CONTEXT_SLICE_FIX = "check it in the pytest run, where the golden set's contexts are at hand"


def unstored_context(selection: Selection) -> str | None:
    """Why a snapshot read from a file cannot answer ``selection`` (a context slice: it keeps
    no contexts, only their hashes), with :data:`CONTEXT_SLICE_FIX`; None when it can."""
    if selection.context_slice is None:
        return None
    return (
        f"slice={selection.slice} selects queries by their context, which a stored run does "
        f"not keep: {CONTEXT_SLICE_FIX}"
    )


def snapshot_mean(
    snapshot: Snapshot, metric: str, selection: Selection, *, heldout_split: str = "heldout"
) -> tuple[float | None, int, str]:
    """(mean, queries counted, stage) of a metric over a selection of a snapshot's queries.

    Used by ``pytest-retrieval gate`` to re-apply a threshold to a stored run. Raises
    InputError when the stage or metric is not in the snapshot, the split is held out, or the
    slice is a context slice (:func:`unstored_context`).
    """
    stage = selection.stage or final_stage(snapshot.stages)
    if stage is None or stage not in snapshot.stages:
        raise InputError(
            Problem(
                f"stage {stage!r} is not in the run",
                fix=f"stages: {', '.join(snapshot.stages) or 'none'}",
            )
        )
    if metric not in snapshot.metrics:
        raise InputError(
            Problem(
                f"the run did not record {metric}",
                fix="add it to retrieval_metrics / retrieval_ks and run the tests again",
            )
        )
    if selection.split == heldout_split:
        raise InputError(
            Problem(
                "held-out queries are not stored per query, so held-out gates cannot be re-applied",
                fix="gate the held-out split in the pytest run (--retrieval-heldout)",
            )
        )
    unstored = unstored_context(selection)
    if unstored is not None:
        raise InputError(Problem(unstored))
    values = []
    for query in snapshot.queries.values():
        if not selection.matches(query.split, query.slices, heldout_split=heldout_split):
            continue
        value = query.metrics.get(stage, {}).get(metric)
        if value is not None:
            values.append(value)
    return (sum(values) / len(values) if values else None), len(values), stage


def _value_rows(
    rows: Sequence[Mapping[str, float | None]], metrics: Sequence[str]
) -> list[tuple[float | None, ...]]:
    """Each row's values in ``metrics`` order (None where a row lacks one): one C-level pass
    (``itemgetter``) when every row holds every metric, as a run's do."""
    if not metrics:
        return [() for _ in rows]
    try:
        picked = list(map(itemgetter(*metrics), rows))
    except KeyError:  # a row without some metric (a baseline read from an older file)
        return [tuple(row.get(metric) for metric in metrics) for row in rows]
    return [(value,) for value in picked] if len(metrics) == 1 else picked


def _columns(rows: Sequence[tuple[float | None, ...]], width: int) -> list[Sequence[float | None]]:
    """``rows`` transposed (``width`` columns, also when there are no rows)."""
    return list(zip(*rows)) if rows else [() for _ in range(width)]


def _mean(column: Sequence[float | None]) -> float | None:
    """The rounded mean of the values of ``column`` that are not None (None: there are none)."""
    try:
        total = sum(cast("Sequence[float]", column))  # the common case: no None
        count = len(column)
    except TypeError:
        values = [v for v in column if v is not None]
        total, count = sum(values), len(values)
    return round_value(total / count) if count else None


def _first_ranks(ranking: Sequence[str], relevant: Sequence[str]) -> dict[str, int | None]:
    """Each relevant doc's first rank (1-based) in ``ranking``, None when it is absent."""
    if len(relevant) <= 16:  # a few C-level scans beat a Python loop over the whole ranking
        ranks: dict[str, int | None] = {}
        for doc in relevant:
            try:
                ranks[doc] = ranking.index(doc) + 1
            except ValueError:
                ranks[doc] = None
        return ranks
    first: dict[str, int] = {}
    wanted = set(relevant)
    for rank, doc in enumerate(ranking, start=1):
        if doc in wanted and doc not in first:
            first[doc] = rank
    return {doc: first.get(doc) for doc in relevant}


def stored_cut(snapshot: Snapshot) -> int | None:
    """How far the stored rankings of ``snapshot`` may have been cut: None when they are whole
    (schema version 3, or a version-2 snapshot that recorded no depth), else the depth they
    were cut at (version 2: ``settings["depth"]``; version 1: the top 10). A stored ranking
    shorter than the cut was not cut."""
    if snapshot.schema_version >= 3:
        return None
    if snapshot.schema_version < 2:
        return TOP_KEPT
    raw = snapshot.settings.get("depth")
    return raw if type(raw) is int and raw > 0 else None


def build_snapshot(
    visible: GoldenSet,
    per_stage: Mapping[str, Evaluation],
    ranking_of: Callable[[str, str], tuple[str, ...]],
    *,
    metric_names: Sequence[str],
    settings: Mapping[str, Any],
    heldout_ids: Sequence[str] = (),
    index_version: str | None = None,
    returned_of: Callable[[str, str], tuple[str, ...] | None] | None = None,
) -> Snapshot:
    """Per-query values, relevant ranks, judgments and rankings of every ``visible`` query.

    What is relevant (for the ranks kept) is each evaluation's own ``min_grade``
    (:attr:`.Evaluation.conventions`: the values and the ranks come from one convention).
    Each ranking is kept whole, as it was scored (a metric without a cutoff reads all of it, so
    the rescore mode needs all of it); ``returned_of(qid, stage)`` gives the ids as returned
    where they differ from the ranking (None elsewhere), kept whole too. Held-out queries never
    enter with per-query detail: ``heldout_ids`` (when the split is unsealed) only adds their
    means.
    """
    stages = tuple(per_stage)
    columns = {
        stage: {qid: i for i, qid in enumerate(e.query_ids)} for stage, e in per_stage.items()
    }
    names = list(metric_names)
    stage_columns = {stage: [e.columns[n] for n in names] for stage, e in per_stage.items()}
    grades = {stage: e.conventions.min_grade for stage, e in per_stage.items()}
    queries: dict[str, QuerySnapshot] = {}
    for query in visible:
        metrics: dict[str, dict[str, float | None]] = {}
        ranks: dict[str, dict[str, int | None]] = {}
        tops: dict[str, tuple[str, ...]] = {}
        as_returned: dict[str, tuple[str, ...]] = {}
        for stage in stages:
            row = columns[stage].get(query.id)
            metrics[stage] = (
                dict(zip(names, [values[row] for values in stage_columns[stage]]))
                if row is not None
                else dict.fromkeys(names)
            )
            ranking = ranking_of(query.id, stage)
            relevant = [d for d, g in query.judgments.items() if g >= grades[stage]]
            ranks[stage] = _first_ranks(ranking, relevant)
            tops[stage] = tuple(ranking)
            given = returned_of(query.id, stage) if returned_of is not None else None
            if given is not None:
                as_returned[stage] = tuple(given)
        queries[query.id] = QuerySnapshot(
            split=query.split,
            slices=query.slices,
            labels=label_hash(
                query.text,
                query.judgments,
                query.slices,
                query.split,
                context_json(query.context),
                query.forbidden,
            ),
            metrics=metrics,
            relevant_ranks=ranks,
            top=tops,
            judgments=dict(query.judgments),
            text=text_hash(query.text, context_json(query.context)),
            returned=as_returned,
            context=query.context,
        )
    heldout: dict[str, Any] = {}
    if heldout_ids:
        for stage in stages:
            sub = per_stage[stage].restrict(heldout_ids)
            heldout[stage] = {"n": sub.evaluated, "means": sub.means}
    return Snapshot(
        fingerprint=visible.fingerprint,
        settings=dict(settings),
        stages=stages,
        metrics=tuple(names),
        queries=queries,
        heldout=heldout,
        index_version=index_version,
    )


def average_snapshots(runs: Sequence[Snapshot]) -> Snapshot:
    """One snapshot from several runs of the same pipeline over the same golden set.

    Per query, stage and metric: the mean over the runs where the value is defined, and the
    run-to-run standard deviation (ddof=1) as ``spread``. Relevant ranks, top ids, settings and
    held-out means are the first run's (they explain, they are not compared). ``n_runs`` is
    ``len(runs)``; one run is returned unchanged.
    """
    if not runs:
        raise ValueError("average_snapshots needs at least one run")
    first = runs[0]
    if len(runs) == 1:
        return first
    queries: dict[str, QuerySnapshot] = {}
    for qid, query in first.queries.items():
        means: dict[str, dict[str, float | None]] = {}
        spread: dict[str, dict[str, float | None]] = {}
        for stage, values in query.metrics.items():
            means[stage], spread[stage] = {}, {}
            for metric in values:
                seen = [
                    v
                    for run in runs
                    if (v := run.queries[qid].metrics.get(stage, {}).get(metric)) is not None
                ]
                if not seen:
                    means[stage][metric] = spread[stage][metric] = None
                    continue
                mean = sum(seen) / len(seen)
                means[stage][metric] = mean
                spread[stage][metric] = (
                    (sum((v - mean) ** 2 for v in seen) / (len(seen) - 1)) ** 0.5
                    if len(seen) > 1
                    else None
                )
        queries[qid] = QuerySnapshot(
            split=query.split,
            slices=query.slices,
            labels=query.labels,
            metrics=means,
            relevant_ranks=query.relevant_ranks,
            top=query.top,
            spread=spread,
            returned=query.returned,
            context=query.context,
        )
    return Snapshot(
        fingerprint=first.fingerprint,
        settings=first.settings,
        stages=first.stages,
        metrics=first.metrics,
        queries=queries,
        heldout=first.heldout,
        plugin_version=first.plugin_version,
        created=first.created,
        n_runs=len(runs),
    )
