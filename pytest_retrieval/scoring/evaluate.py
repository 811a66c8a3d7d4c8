"""Batch scoring: a run against judgments → an :class:`Evaluation`.

``run`` maps query id → ranked doc ids (best first); ``qrels`` maps query id → {doc id: grade}.
The metric conventions are those of :mod:`pytest_retrieval.scoring.metrics`; on top of them, batch
evaluation decides which queries count:

* The judged queries (the keys of ``qrels``) are the queries. A judged query missing from the run
  is scored as an empty ranking (never silently dropped) and counted in ``missing_from_run``.
* A run query without judgments is ignored and counted in ``without_judgments``.
* A query with no relevant document (an empty judgment mapping, or only grades <= 0) follows the
  ``no_relevant`` convention for **every** metric: ``"skip"`` (default; the value is ``None``
  and the query is left out of the means, counted in ``skipped_no_relevant``), ``"zero"``
  (every metric scores 0.0, trec_eval's behaviour) or ``"one"`` (every metric scores 1.0: the
  no-answer query is treated as always right).
* ``min_grade`` decides relevance for the binary metrics only (docs/metrics.md, "min_grade"). A
  query whose positive grades are all below it is scored like a zero-relevant query except for
  NDCG, which comes from its grades: with ``"zero"`` its binary metrics are 0 and its NDCG is
  scored (trec_eval's ``-lN`` with ``min_grade = N``), with ``"one"`` its binary metrics are 1
  and its NDCG is scored, with ``"skip"`` it is skipped for every metric.
* Unjudged documents (absent from a query's judgments) follow the ``unjudged`` convention:
  ``"nonrelevant"`` (default; they count as non-relevant and keep their rank) or ``"skip"``
  (trec_eval's ``-J``: each ranking is scored with its unjudged documents removed, so judged
  documents move up; the cutoffs then count judged documents only). A negative grade (TREC
  qrels' "in the pool, not judged") is unjudged in both conventions' sense of the word.
* ``judged@K`` is coverage, computed on the ranking as returned (before ``"skip"`` removes
  anything) for every judged query, no-answer ones included: ``no_relevant`` does not apply
  to it, since an unlabelled result is a hole whatever the query's answer. See
  :func:`pytest_retrieval.scoring.metrics.judged_at_k`.
* Means are macro averages (every query weighs the same) over the queries with a value.
  :attr:`Evaluation.micro` holds micro averages where they are defined (recall, precision).
* Repeated ids (the rule of docs/metrics.md, "Repeated ids and chunks"): a ranking may hold
  an id more than once (chunks of one document mapped to it, a retriever returning a copy).
  The relevance metrics score the *document ranking*: each id at its first (best) rank, later
  repeats removed. With ``cutoff_unit="documents"`` (default) a metric at K looks at the top K
  documents; with ``"results"`` at the documents within the top K results as returned
  (precision@K still divides by K, the ideal NDCG@K ranking still holds K). ``distinct@K``
  is measured over the top K results as returned, so it counts a repeated id as a copy. Metrics
  without a cutoff use the whole document ranking. (TREC and JSONL run files refuse repeated
  ids, as trec_eval does: see :mod:`pytest_retrieval.formats.runs`.)
* Duplicates (``duplicates=``, groups, a ``{doc: group}`` mapping or a file: ``dedup.as_groups``):
  every metric is scored per group, as :mod:`pytest_retrieval.scoring.dedup` writes down (a group
  is as relevant as its best-judged member, counts once at its first rank, later members are filler;
  recall counts relevant groups). ``distinct@K`` is defined there too.
* ``abstain_rate`` and ``answer_rate`` (``scores=`` and ``score_floor=``) follow
  :mod:`pytest_retrieval.scoring.abstention`: each is defined on its own queries (no-answer,
  answerable), whatever ``no_relevant`` says; :attr:`Evaluation.unmeasured` says why one
  cannot be measured.

Every convention above is one field of :class:`Conventions`, the one value every scoring path
(pytest, :func:`evaluate`, ``pytest-retrieval evaluate``, run files, the rescore mode, extra
baseline runs) builds once and passes; :func:`evaluate`'s keyword arguments build one. Speed:
all cutoffs of a query come from the ranks of its relevant hits, which are few; the ranking is
not walked again per metric or per cutoff.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Literal, Protocol

from .abstention import abstention_columns
from .dedup import DuplicateGroups, GroupsLike, as_groups, check_groups, collapse, distinct_column
from .metrics import (
    EXTENSION_METRICS,
    SAFE_TOP_GRADE,
    Gain,
    MetricSpec,
    check_gain,
    check_min_grade,
    scaled_gain,
    share_at_k,
)


class ScoringSettings(Protocol):
    """What :meth:`Conventions.from_settings` reads of a pytest run's settings (the resolved
    ``Settings`` have them; scoring sits below the settings and does not import them)."""

    @property
    def gain(self) -> str: ...
    @property
    def min_grade(self) -> int: ...
    @property
    def no_relevant(self) -> str: ...
    @property
    def score_floor(self) -> tuple[tuple[str, float], ...]: ...
    @property
    def unjudged(self) -> str: ...
    @property
    def cutoff_unit(self) -> str: ...
    @property
    def run(self) -> tuple[tuple[str, str], ...]: ...


NoRelevant = Literal["skip", "zero", "one"]
Unjudged = Literal["nonrelevant", "skip"]
CutoffUnit = Literal["documents", "results"]
RepeatedIds = Literal["best_rank", "refuse"]
_NO_RELEVANT_VALUES: dict[str, float | None] = {"skip": None, "zero": 0.0, "one": 1.0}

_DISCOUNTS: list[float] = [0.0]  # _DISCOUNTS[rank] = 1 / log2(rank + 1), grown on demand


def _discounts(upto: int) -> list[float]:
    global _DISCOUNTS
    table = _DISCOUNTS
    if len(table) <= upto:
        # A new list, swapped in whole: two threads growing the table at once must never
        # interleave their appends (which would shift every later discount).
        table = table + [1.0 / math.log2(rank + 1) for rank in range(len(table), upto + 1)]
        _DISCOUNTS = table
    return table


def _mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    total = 0.0
    n = 0
    for value in values:
        if value is not None:
            total += value
            n += 1
    return (total / n if n else None), n


@dataclass(frozen=True, slots=True)
class Conventions:
    """Every convention that changes a number, in one value: how a run is scored.

    Every scoring path builds one, once, and passes it: a pytest run from its settings
    (:meth:`from_settings`: this run, its extra baseline runs, the rescore mode), a baseline's or
    an artifact's recorded settings (:meth:`from_recorded`: ``pytest-retrieval compare`` and
    ``gate`` re-scoring a stored run), ``pytest-retrieval evaluate`` from its flags, and
    :func:`evaluate` from its keyword arguments (or ``conventions=``). Each field is checked when
    the value is made (``ValueError`` naming the field and what it accepts).

    * ``gain``: NDCG's gain, ``"exponential"`` (2^grade - 1) or ``"linear"`` (trec_eval's);
      docs/metrics.md, "NDCG grades".
    * ``min_grade``: the lowest grade relevant for the binary metrics (recall, precision, hit
      rate, RR, AP, R-precision); NDCG uses every positive grade; docs/metrics.md, "min_grade".
    * ``no_relevant``: ``"skip"``, ``"zero"`` or ``"one"`` for a query with no relevant
      document; docs/metrics.md, "Zero-relevant queries".
    * ``unjudged``: ``"nonrelevant"`` or ``"skip"`` (trec_eval ``-J``); docs/metrics.md,
      "Unjudged documents".
    * ``duplicates``: the duplicate groups every metric is scored by (None: none);
      :mod:`pytest_retrieval.scoring.dedup`, docs/no-answer-and-duplicates.md.
    * ``score_floor`` and ``stage_floors``: the score floor of ``abstain_rate`` and
      ``answer_rate``, per stage: a stage's own floor (``stage_floors``, ``(stage, floor)``
      pairs) else ``score_floor`` (every stage); :meth:`floor_for` decides, once.
      ``-inf`` is ``empty`` (any result answers); :mod:`pytest_retrieval.scoring.abstention`.
    * ``repeated_ids``: the repeated-id rule. ``"best_rank"`` (rankings from a live retriever
      or from Python: each id at its first rank, ``distinct@K`` counts the copy) or
      ``"refuse"`` (TREC and JSONL run files: a repeated id is an error, trec_eval's input
      rule); ``cutoff_unit``: what K counts, ``"documents"`` or ``"results"`` as returned;
      docs/metrics.md, "Repeated ids and what K counts".
    """

    gain: Gain = "exponential"
    min_grade: int = 1
    no_relevant: NoRelevant = "skip"
    unjudged: Unjudged = "nonrelevant"
    duplicates: DuplicateGroups | None = None
    score_floor: float | None = None
    stage_floors: tuple[tuple[str, float], ...] = ()
    repeated_ids: RepeatedIds = "best_rank"
    cutoff_unit: CutoffUnit = "documents"

    def __post_init__(self) -> None:
        check_gain(self.gain)
        check_min_grade(self.min_grade)
        _check_no_relevant(self.no_relevant)
        check_unjudged(self.unjudged)
        check_cutoff_unit(self.cutoff_unit)
        if self.repeated_ids not in ("best_rank", "refuse"):
            raise ValueError(
                f"repeated_ids must be 'best_rank' (each id at its first rank) or 'refuse' "
                f"(a repeated id is an error, as in a run file), got {self.repeated_ids!r}"
            )
        check_groups(self.duplicates)
        for stage, floor in (("", self.score_floor), *self.stage_floors):
            if floor is not None and (
                isinstance(floor, bool) or not isinstance(floor, (int, float)) or math.isnan(floor)
            ):
                where = f"the floor of stage {stage!r}" if stage else "score_floor"
                raise ValueError(f"{where} must be a number or None, got {floor!r}")

    def floor_for(self, stage: str | None) -> float | None:
        """The score floor of ``stage``: its own, else the floor of every stage; None when
        unset. ``stage=None`` is the floor of every stage."""
        if stage is not None:
            for name, floor in self.stage_floors:
                if name == stage:
                    return floor
        return self.score_floor

    @classmethod
    def from_settings(
        cls, settings: ScoringSettings, *, duplicates: DuplicateGroups | None = None
    ) -> Conventions:
        """The conventions of a pytest run: ``retrieval_gain``, ``retrieval_min_grade``,
        ``retrieval_no_relevant``, ``retrieval_unjudged``, ``retrieval_score_floor`` and
        ``retrieval_cutoff_unit``; ``duplicates`` are the groups the session loaded (from
        ``retrieval_duplicates`` or ``retrieval_dedup``). A run read from run files
        (``retrieval_run``) refuses repeated ids, as its reader does."""
        floors = dict(settings.score_floor)
        every = floors.pop("", None)
        return cls(
            gain=check_gain(settings.gain),
            min_grade=settings.min_grade,
            no_relevant=_check_no_relevant(settings.no_relevant),
            unjudged=check_unjudged(settings.unjudged),
            duplicates=duplicates,
            score_floor=every,
            stage_floors=tuple(floors.items()),
            repeated_ids="refuse" if settings.run else "best_rank",
            cutoff_unit=check_cutoff_unit(settings.cutoff_unit),
        )

    @classmethod
    def from_recorded(
        cls, recorded: Mapping[str, Any], *, duplicates: DuplicateGroups | None = None
    ) -> Conventions:
        """The conventions a baseline or an artifact's snapshot recorded (its ``settings``:
        :meth:`pytest_retrieval.settings.resolve.Settings.affecting_numbers`; a key it lacks has its
        default, as when it was written). The groups are not recorded, only their fingerprint:
        pass them as ``duplicates``. Raises ValueError for a value no run records."""
        floors: dict[str, float] = {}
        raw_floors = recorded.get("score_floor") or {}
        if not isinstance(raw_floors, Mapping):
            raise ValueError(f"score_floor must be a mapping of stage to floor, got {raw_floors!r}")
        for stage, floor in raw_floors.items():
            floors["" if stage == "*" else str(stage)] = -math.inf if floor == "empty" else floor
        every = floors.pop("", None)
        return cls(
            gain=recorded.get("gain", "exponential"),
            min_grade=recorded.get("min_grade", 1),
            no_relevant=recorded.get("no_relevant", "skip"),
            unjudged=recorded.get("unjudged", "nonrelevant"),
            duplicates=duplicates,
            score_floor=every,
            stage_floors=tuple(floors.items()),
            cutoff_unit=recorded.get("cutoff_unit", "documents"),
        )


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Per-query metric values and their means.

    ``columns[metric][i]`` is the value of ``metric`` (canonical spelling) for ``query_ids[i]``,
    ``None`` where undefined (a skipped zero-relevant query).
    """

    metrics: tuple[MetricSpec, ...]
    query_ids: tuple[str, ...]
    columns: Mapping[str, Sequence[float | None]]
    skipped_no_relevant: tuple[str, ...]
    missing_from_run: tuple[str, ...]
    without_judgments: tuple[str, ...]
    #: The conventions the values were scored with (one value for the whole evaluation).
    conventions: Conventions = field(default_factory=lambda: Conventions())
    #: Metric → why it cannot be measured (its values are all None): abstention without a floor.
    unmeasured: Mapping[str, str] = field(default_factory=dict)
    _relevant_counts: Sequence[int] = field(default=(), repr=False)
    _hit_counts: Mapping[str, Sequence[int]] = field(default_factory=dict, repr=False)

    @property
    def gain(self) -> Gain:
        """NDCG's gain (:attr:`Conventions.gain`)."""
        return self.conventions.gain

    @property
    def min_grade(self) -> int:
        """The lowest grade relevant for the binary metrics (:attr:`Conventions.min_grade`)."""
        return self.conventions.min_grade

    @property
    def no_relevant(self) -> NoRelevant:
        """The zero-relevant convention (:attr:`Conventions.no_relevant`)."""
        return self.conventions.no_relevant

    @property
    def unjudged(self) -> Unjudged:
        """The unjudged-document convention (:attr:`Conventions.unjudged`)."""
        return self.conventions.unjudged

    @property
    def cutoff_unit(self) -> CutoffUnit:
        """What a cutoff K counts: ``documents`` or ``results`` as returned."""
        return self.conventions.cutoff_unit

    @property
    def deduplicated(self) -> bool:
        """True when the metrics were scored per duplicate group (see :mod:`.dedup`)."""
        return self.conventions.duplicates is not None

    @property
    def means(self) -> dict[str, float | None]:
        """Macro mean of each metric over the queries that have a value (``None`` if none)."""
        return {name: _mean(values)[0] for name, values in self.columns.items()}

    @property
    def counts(self) -> dict[str, int]:
        """How many queries each mean averages."""
        return {name: _mean(values)[1] for name, values in self.columns.items()}

    @property
    def evaluated(self) -> int:
        """Judged queries that count in the means (all of them but the skipped zero-relevant)."""
        return len(self.query_ids) - len(self.skipped_no_relevant)

    @property
    def micro(self) -> dict[str, float | None]:
        """Micro averages where defined: recall@K = Σ hits / Σ |relevant|, precision@K =
        Σ hits / (K · queries), over the queries counted in the means."""
        out: dict[str, float | None] = {}
        skipped = set(self.skipped_no_relevant)
        keep = [i for i, qid in enumerate(self.query_ids) if qid not in skipped]
        for spec in self.metrics:
            if spec.name not in ("recall", "precision") or spec.k is None:
                continue
            hits = self._hit_counts[str(spec)]
            total_hits = sum(hits[i] for i in keep)
            if spec.name == "recall":
                denominator = sum(self._relevant_counts[i] for i in keep)
            else:
                denominator = spec.k * len(keep)
            out[str(spec)] = total_hits / denominator if denominator else None
        return out

    @property
    def per_query(self) -> dict[str, dict[str, float | None]]:
        """``{query id: {metric: value}}`` (built on demand from the columns)."""
        names = list(self.columns)
        return {
            qid: {name: self.columns[name][i] for name in names}
            for i, qid in enumerate(self.query_ids)
        }

    def value(self, query_id: str, metric: str | MetricSpec) -> float | None:
        """The value of one metric for one query."""
        return self.columns[str(MetricSpec.parse(metric))][self.query_ids.index(query_id)]

    def restrict(self, query_ids: Iterable[str]) -> Evaluation:
        """The same evaluation over a subset of its queries (a slice or a split)."""
        wanted = set(query_ids)
        rows = [i for i, qid in enumerate(self.query_ids) if qid in wanted]
        if len(rows) == len(self.query_ids) and not self.without_judgments:
            return self  # every query (the "overall" column): the same evaluation, no copy
        return Evaluation(
            metrics=self.metrics,
            query_ids=tuple(self.query_ids[i] for i in rows),
            columns={name: [values[i] for i in rows] for name, values in self.columns.items()},
            skipped_no_relevant=tuple(q for q in self.skipped_no_relevant if q in wanted),
            missing_from_run=tuple(q for q in self.missing_from_run if q in wanted),
            without_judgments=(),
            conventions=self.conventions,
            unmeasured=self.unmeasured,
            _relevant_counts=[self._relevant_counts[i] for i in rows],
            _hit_counts={name: [hits[i] for i in rows] for name, hits in self._hit_counts.items()},
        )


# Metric kinds, as small ints so the per-query loop compares cheaply.
_RECALL, _PRECISION, _HIT, _NDCG, _MAP, _MRR, _RPREC, _JUDGED = range(8)
_KIND = {
    "recall": _RECALL,
    "precision": _PRECISION,
    "hit_rate": _HIT,
    "ndcg": _NDCG,
    "map": _MAP,
    "mrr": _MRR,
    "r_precision": _RPREC,
    "judged": _JUDGED,
}


def _check_no_relevant(value: object) -> NoRelevant:
    if value == "skip":
        return "skip"
    if value == "zero":
        return "zero"
    if value == "one":
        return "one"
    raise ValueError(f"no_relevant must be 'skip', 'zero' or 'one', got {value!r}")


def check_unjudged(value: object) -> Unjudged:
    """Return ``value`` if it is ``"nonrelevant"`` or ``"skip"``, else raise ValueError."""
    if value == "nonrelevant":
        return "nonrelevant"
    if value == "skip":
        return "skip"
    raise ValueError(
        f"unjudged must be 'nonrelevant' (unjudged documents count as non-relevant) or 'skip' "
        f"(removed before scoring, trec_eval -J), got {value!r}"
    )


def check_cutoff_unit(value: object) -> CutoffUnit:
    """Return ``value`` if it is ``"documents"`` or ``"results"``, else raise ValueError."""
    if value == "documents":
        return "documents"
    if value == "results":
        return "results"
    raise ValueError(
        f"cutoff_unit must be 'documents' (K documents, each at its best rank) or 'results' "
        f"(the K results as returned, collapsed within them), got {value!r}"
    )


def measured_unit(spec: MetricSpec, cutoff_unit: str) -> CutoffUnit:
    """What ``spec``'s cutoff K counts, so how long a ranking must be to fill it: the one rule
    (docs/metrics.md, "Repeated ids and what K counts").

    ``"results"`` (the ids as returned, repeats kept) for ``distinct@K``, which is defined over
    the top K results as returned, and for every metric under ``cutoff_unit="results"``;
    ``"documents"`` (the document ranking) otherwise. :func:`evaluate_documents` scores by it
    and the run's short-ranking checks (:mod:`pytest_retrieval.run.shortrankings`) measure a
    ranking's length in it: ``a, a, c, d`` fills distinct@4 but not recall@4.
    """
    if spec.name == "distinct" or cutoff_unit == "results":
        return "results"
    return "documents"


def ranked_within(
    documents: Sequence[str],
    returned: Sequence[str] | None,
    k: int,
    cutoff_unit: str,
) -> list[tuple[int, str]]:
    """The documents a cutoff K reaches, each once with its rank in the unit K counts (the
    rule of :func:`measured_unit`; docs/metrics.md, "Repeated ids and what K counts").

    ``documents`` is the document ranking, ``returned`` the ids as returned (repeats kept;
    None or empty when none repeated, the two are then the same). Under ``"documents"`` the
    top K documents with their document rank; under ``"results"`` the distinct ids among the
    top K results as returned, each at the result rank of its first occurrence ("the K
    chunks the LLM sees"). ``forbidden@K`` / ``stale@K`` count these and the leak finder
    names these ranks, so a gate's number and the ranks its message names agree."""
    if cutoff_unit == "results" and returned:
        seen: set[str] = set()
        out: list[tuple[int, str]] = []
        for rank, doc in enumerate(returned[:k], start=1):
            if doc not in seen:
                seen.add(doc)
                out.append((rank, doc))
        return out
    return list(enumerate(islice(dict.fromkeys(documents), k), start=1))


def split_repeats(
    run: Mapping[str, Sequence[str]],
) -> tuple[Mapping[str, Sequence[str]], dict[str, Sequence[str]]]:
    """``(documents, returned)``: each ranking as documents (each id at its first, best, rank;
    later repeats removed) and, for the rankings in which an id repeats, the ranking as given.
    ``run`` itself is the documents when no id repeats anywhere (nothing is copied)."""
    returned: dict[str, Sequence[str]] = {}
    for qid, ranking in run.items():
        if isinstance(ranking, str):
            continue  # the kernel refuses it with its own message
        try:
            repeats = len(set(ranking)) != len(ranking)
        except TypeError:  # unhashable items: the kernel refuses them too
            continue
        if repeats:
            returned[qid] = ranking
    if not returned:
        return run, returned
    documents = {
        qid: tuple(dict.fromkeys(ranking)) if qid in returned else ranking
        for qid, ranking in run.items()
    }
    return documents, returned


def _distinct_counts(ranking: Sequence[str], ks: Sequence[int]) -> dict[int, int]:
    """For each K of ``ks`` (ascending): how many distinct ids the top K of ``ranking`` hold."""
    out: dict[int, int] = {}
    seen: set[str] = set()
    done = 0
    for k in ks:
        seen.update(ranking[done:k])
        done = max(done, k)
        out[k] = len(seen)
    return out


def _result_limits(
    returned: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    ks: Sequence[int],
    *,
    drop_unjudged: bool,
) -> tuple[dict[str, dict[int, int]], dict[str, dict[int, int]]]:
    """``cutoff_unit="results"``: per query whose ids repeat, the documents each cutoff K
    reaches (the distinct ids among its top K results), for the metrics and for ``judged@K``.
    Under ``unjudged="skip"`` the metrics count the judged results only (trec_eval ``-J``);
    coverage always counts the results as returned."""
    ordered = sorted(set(ks))
    metric_limits: dict[str, dict[int, int]] = {}
    coverage_limits: dict[str, dict[int, int]] = {}
    for qid, ranking in returned.items():
        coverage_limits[qid] = _distinct_counts(ranking, ordered)
        if drop_unjudged:
            judgments = qrels.get(qid, {})
            judged = [doc for doc in ranking if judgments.get(doc, -1) >= 0]
            metric_limits[qid] = _distinct_counts(judged, ordered)
        else:
            metric_limits[qid] = coverage_limits[qid]
    return metric_limits, coverage_limits


def _coverage(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> float | None:
    """judged@K of one ranking (see :func:`pytest_retrieval.scoring.metrics.judged_at_k`)."""
    top = ranking[:k]
    if not top:
        return None
    judged = [doc for doc, grade in judgments.items() if grade >= 0]
    # Every occurrence in the top K counts (a repeated judged id is judged twice). C-level
    # counting: one list.count per judged id when they are few, else one set lookup per rank.
    if len(judged) <= 8:
        count = sum(map(top.count, judged))
    else:
        count = sum(map(set(judged).__contains__, top))
    return count / len(top)


def evaluate(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Iterable[str | MetricSpec],
    *,
    gain: Gain | None = None,
    min_grade: int | None = None,
    no_relevant: NoRelevant | None = None,
    duplicates: GroupsLike | None = None,
    scores: Mapping[str, Sequence[float | None]] | None = None,
    score_floor: float | None = None,
    unjudged: Unjudged | None = None,
    cutoff_unit: CutoffUnit | None = None,
    conventions: Conventions | None = None,
    stage: str | None = None,
    forbidden: Mapping[str, Collection[str]] | None = None,
    stale: Collection[str] | None = None,
) -> Evaluation:
    """Score ``run`` against ``qrels`` on ``metrics``; see the module docstring for conventions.

    The conventions are :class:`Conventions`: pass one as ``conventions=``, or its fields as
    keyword arguments (``gain="exponential"``, ``min_grade=1``, ``no_relevant="skip"``,
    ``unjudged="nonrelevant"``, ``cutoff_unit="documents"``, ``duplicates=None``,
    ``score_floor=None`` when not given), not both (``duplicates``: :func:`.dedup.as_groups`).
    ``stage`` picks the floor of that stage from
    ``conventions`` (:meth:`Conventions.floor_for`).

    Doc ids are compared as given (strings). A ranking may repeat an id: the relevance metrics
    score each id at its first (best) rank, later repeats removed, and ``cutoff_unit`` says
    whether K counts documents (default) or the results as returned; ``distinct@K`` counts a
    repeat as a copy (``Conventions(repeated_ids="refuse")`` makes a repeat an error instead,
    as in a run file). ``min_grade`` decides relevance for the binary metrics only: a query
    whose positive grades are all below it has no relevant document for them, and its NDCG
    comes from its grades unless ``no_relevant="skip"`` skips it (the module docstring; with
    ``no_relevant="zero"`` and ``gain="linear"`` this is trec_eval ``-lN``). With duplicate
    groups, every judged metric is scored per group (:mod:`.dedup`). ``scores`` (per query,
    aligned with its ranking's documents) and the score floor serve ``abstain_rate`` and
    ``answer_rate`` (:mod:`.abstention`). ``forbidden`` (per query) and ``stale`` (doc ids)
    serve ``forbidden@K`` and ``stale@K`` (:func:`evaluate_documents`); without them those
    metrics are unmeasured.
    """
    chosen = _conventions(
        conventions,
        gain=gain,
        min_grade=min_grade,
        no_relevant=no_relevant,
        duplicates=as_groups(duplicates),
        score_floor=score_floor,
        unjudged=unjudged,
        cutoff_unit=cutoff_unit,
    )
    documents, returned = split_repeats(run)
    unmeasurable = {
        name: f"no {name} documents were given (evaluate(..., {name}=...))"
        for name, given in (("forbidden", forbidden), ("stale", stale))
        if given is None
    }
    return evaluate_documents(
        documents,
        qrels,
        metrics,
        returned=returned,
        scores=scores,
        conventions=chosen,
        stage=stage,
        forbidden=forbidden,
        stale=stale,
        unmeasurable=unmeasurable,
    )


def _conventions(conventions: Conventions | None, **given: Any) -> Conventions:
    """``conventions``, or the one the keyword arguments given (not None) make; never both."""
    named = {name: value for name, value in given.items() if value is not None}
    if conventions is None:
        return Conventions(**named)
    if not isinstance(conventions, Conventions):
        raise TypeError(f"conventions must be Conventions, got {type(conventions).__name__}")
    if named:
        listed = ", ".join(f"{name}=" for name in named)
        raise ValueError(
            f"pass the conventions once: conventions= or keyword arguments, not both ({listed} "
            f"given with conventions=); dataclasses.replace(conventions, ...) changes one field"
        )
    return conventions


def evaluate_documents(
    documents: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Iterable[str | MetricSpec],
    *,
    returned: Mapping[str, Sequence[str]] | None = None,
    scores: Mapping[str, Sequence[float | None]] | None = None,
    conventions: Conventions | None = None,
    stage: str | None = None,
    forbidden: Mapping[str, Collection[str]] | None = None,
    stale: Collection[str] | None = None,
    unmeasurable: Mapping[str, str] | None = None,
) -> Evaluation:
    """:func:`evaluate` of rankings already split into documents (no id repeats in them) and,
    for the queries whose ids repeated, the ``returned`` rankings as given (the session keeps
    both, so it never looks for repeats again; :func:`split_repeats` makes them from a run).
    ``stage`` picks the score floor of that stage (:meth:`Conventions.floor_for`).
    ``forbidden`` (``{query id: doc ids}``) and ``stale`` (doc ids) serve ``forbidden@K`` and
    ``stale@K`` (:func:`.metrics.share_at_k`, over every judged query: ``no_relevant`` does
    not apply, a leak is a leak whatever the answer); ``unmeasurable`` maps ``forbidden`` /
    ``stale`` to why it cannot be measured (its values are then None, the reason in
    :attr:`Evaluation.unmeasured`)."""
    conventions = conventions if conventions is not None else Conventions()
    specs = tuple(dict.fromkeys(MetricSpec.parse(m) for m in metrics))
    if not specs:
        raise ValueError("evaluate() needs at least one metric, e.g. ['recall@10', 'mrr']")
    returned = returned or {}
    if returned and conventions.repeated_ids == "refuse":
        _refuse_repeats(returned)
    judged = [s for s in specs if s.name not in EXTENSION_METRICS]
    extra = [s for s in specs if s.name in EXTENSION_METRICS]
    limits: tuple[dict[str, dict[int, int]], dict[str, dict[int, int]]] | None = None
    if conventions.cutoff_unit == "results" and returned:
        ks = [s.k for s in judged if s.k is not None]
        limits = _result_limits(returned, qrels, ks, drop_unjudged=conventions.unjudged == "skip")
    duplicates = conventions.duplicates
    if duplicates is None and not extra:  # the common case: the kernel alone
        return _evaluate(documents, qrels, judged, conventions, limits=limits)
    scored_run, scored_qrels = (
        (documents, qrels) if duplicates is None else collapse(documents, qrels, duplicates)
    )
    base = _evaluate(scored_run, scored_qrels, judged, conventions, limits=limits)
    columns: dict[str, Sequence[float | None]] = dict(base.columns)
    unmeasured: dict[str, str] = {}
    abstain: tuple[list[float | None], list[float | None], str | None] | None = None
    for spec in extra:
        if spec.metric.source == "access":
            assert spec.k is not None
            reason = (unmeasurable or {}).get(spec.name)
            if reason is not None:
                columns[str(spec)] = [None] * len(base.query_ids)
                unmeasured[str(spec)] = reason
                continue
            none: frozenset[str] = frozenset()
            # The documents K reaches in the unit K counts (results: the distinct ids among
            # the top K results as returned), so forbidden@K follows the rule recall@K does.
            columns[str(spec)] = [
                share_at_k(
                    [
                        doc
                        for _rank, doc in ranked_within(
                            documents.get(qid, ()),
                            returned.get(qid),
                            spec.k,
                            conventions.cutoff_unit,
                        )
                    ],
                    (stale or none) if spec.name == "stale" else (forbidden or {}).get(qid, none),
                    spec.k,
                )
                for qid in base.query_ids
            ]
            continue
        if spec.name == "distinct":
            assert spec.k is not None
            columns[str(spec)] = distinct_column(
                base.query_ids, documents, spec.k, duplicates, returned=returned
            )
            continue
        if abstain is None:
            abstain = abstention_columns(
                base.query_ids,
                documents,
                qrels,
                scores,
                conventions.floor_for(stage),
                min_grade=conventions.min_grade,
            )
        columns[str(spec)] = abstain[0] if spec.name == "abstain_rate" else abstain[1]
        if abstain[2] is not None:
            unmeasured[str(spec)] = abstain[2]
    return replace(
        base,
        metrics=specs,
        columns={str(s): columns[str(s)] for s in specs},
        unmeasured=unmeasured,
    )


def _refuse_repeats(returned: Mapping[str, Sequence[str]]) -> None:
    """The error of ``repeated_ids="refuse"``: the first query whose ranking repeats an id."""
    qid, ranking = next(iter(returned.items()))
    seen: set[str] = set()
    doc = ""
    for doc in ranking:
        if doc in seen:
            break
        seen.add(doc)
    more = f" (and {len(returned) - 1} more queries)" if len(returned) > 1 else ""
    raise ValueError(
        f"run[{qid!r}] lists {doc!r} twice{more}, and these conventions refuse a repeated id, "
        "as a run file does (trec_eval's rule): write each document once, or score with "
        "repeated_ids='best_rank' (each id at its first rank)"
    )


def _evaluate(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Iterable[str | MetricSpec],
    conventions: Conventions,
    *,
    limits: tuple[Mapping[str, Mapping[int, int]], Mapping[str, Mapping[int, int]]] | None = None,
) -> Evaluation:
    """The kernel: the judged metrics of :func:`evaluate`, without duplicates or abstention
    (``conventions.duplicates`` has been applied by the caller: :func:`.dedup.collapse`).

    ``limits`` (``cutoff_unit="results"``): per query, the document rank each cutoff K
    reaches, for the metrics and for ``judged@K`` (absent: K itself). A ranking that still
    holds an id twice here (duplicate groups' keys) scores it at its first rank; the later copy
    is filler that takes up a rank.
    """
    specs = tuple(dict.fromkeys(MetricSpec.parse(m) for m in metrics))
    gain = conventions.gain
    min_grade = conventions.min_grade
    drop_unjudged = conventions.unjudged == "skip"
    constant = _NO_RELEVANT_VALUES[conventions.no_relevant]

    plan = [(_KIND[s.name], s.k) for s in specs]
    # Depth: how much of each ranking matters. Metrics without a cutoff need all of it.
    needs_all = any(k is None and kind != _RPREC for kind, k in plan)
    depth = None if needs_all else max((k for _kind, k in plan if k is not None), default=0)
    # R-precision looks at the top R (R = the query's relevant count): never cut above that.
    need_rprec = any(kind == _RPREC for kind, _k in plan)
    need_ndcg = any(kind == _NDCG for kind, _k in plan)
    exponential = gain == "exponential"
    count_kinds = (_RECALL, _PRECISION)
    coverage_plan = [(i, k) for i, (kind, k) in enumerate(plan) if kind == _JUDGED]
    judged_only = bool(plan) and len(coverage_plan) == len(plan)

    names = [str(s) for s in specs]
    columns: list[list[float | None]] = [[] for _ in specs]
    hit_columns: dict[str, list[int]] = {
        name: [] for name, (kind, _k) in zip(names, plan) if kind in count_kinds
    }
    relevant_counts: list[int] = []
    query_ids: list[str] = []
    skipped: list[str] = []
    missing: list[str] = []
    empty: Sequence[str] = ()
    metric_limits, coverage_limits = limits if limits is not None else ({}, {})
    no_limit: Mapping[int, int] = {}

    for qid, judgments in qrels.items():
        query_ids.append(qid)
        ranking = run.get(qid)
        if ranking is None:
            missing.append(qid)
            ranking = empty
        elif isinstance(ranking, str) or (ranking and not isinstance(ranking[0], str)):
            raise TypeError(
                f"run[{qid!r}] must be a sequence of doc id strings, "
                f"got {type(ranking).__name__} starting with {ranking[:1]!r}"
            )
        coverage: dict[int, float | None] = {}
        if coverage_plan:
            reach = coverage_limits.get(qid, no_limit)
            for i, k in coverage_plan:
                assert k is not None
                coverage[i] = _coverage(ranking, judgments, reach.get(k, k))
        positive = {doc: grade for doc, grade in judgments.items() if grade > 0}
        n_relevant = sum(1 for grade in positive.values() if grade >= min_grade)
        relevant_counts.append(n_relevant)
        # Graded, but every grade below min_grade: no relevant document for the binary metrics,
        # while NDCG still has its grades (trec_eval -lN). Under "skip" it is skipped entirely.
        below = n_relevant == 0 and bool(positive) and constant is not None and need_ndcg
        # Only judged@K asked for (the artifact's coverage): no relevant ranks are needed.
        if judged_only or (n_relevant == 0 and not below):
            if n_relevant == 0 and constant is None:
                skipped.append(qid)
            for i, column in enumerate(columns):
                column.append(coverage.get(i, constant))
            for hits_column in hit_columns.values():
                hits_column.append(0)
            continue
        limit = metric_limits.get(qid)
        if drop_unjudged:
            # trec_eval -J: the unjudged documents leave the ranking before any cutoff applies.
            # A negative grade (TREC's "in the pool, not judged") is unjudged too, as there.
            ranking = [doc for doc in ranking if judgments.get(doc, -1) >= 0]
        cut = depth if depth is None or not need_rprec else max(depth, n_relevant)
        if cut is not None and len(ranking) > cut:
            ranking = ranking[:cut]

        # Ranks (1-based, first occurrence) of the judged positive docs present in the ranking.
        found = positive.keys() & set(ranking) if len(positive) > 64 else positive
        hits: list[tuple[int, int]] = []
        index = ranking.index
        for doc in found:
            try:
                hits.append((index(doc) + 1, positive[doc]))
            except ValueError:
                continue
        hits.sort()
        if min_grade == 1:
            branks = [rank for rank, _grade in hits]
        else:
            branks = [rank for rank, grade in hits if grade >= min_grade]
        n_bhits = len(branks)
        ap_prefix: list[float] = [0.0]
        for count, rank in enumerate(branks, start=1):
            ap_prefix.append(ap_prefix[-1] + count / rank)
        if need_ndcg:
            discounts = _discounts(max(len(positive), hits[-1][0] if hits else 0))
            ordered = sorted(positive.values(), reverse=True)
            top = ordered[0]
            dcg_prefix = [0.0]
            ideal_prefix = [0.0]
            if top > SAFE_TOP_GRADE:  # 2**grade would overflow: both sums scaled alike
                for rank, grade in hits:
                    gained = scaled_gain(grade, gain, top)
                    dcg_prefix.append(dcg_prefix[-1] + gained * discounts[rank])
                for rank, grade in enumerate(ordered, start=1):
                    gained = scaled_gain(grade, gain, top)
                    ideal_prefix.append(ideal_prefix[-1] + gained * discounts[rank])
            else:
                for rank, grade in hits:
                    gained = (2.0**grade - 1.0) if exponential else float(grade)
                    dcg_prefix.append(dcg_prefix[-1] + gained * discounts[rank])
                for rank, grade in enumerate(ordered, start=1):
                    gained = (2.0**grade - 1.0) if exponential else float(grade)
                    ideal_prefix.append(ideal_prefix[-1] + gained * discounts[rank])
            hit_ranks = [rank for rank, _grade in hits]

        for i, (column, name, (kind, k)) in enumerate(zip(columns, names, plan)):
            # The document rank cutoff K reaches: K, or fewer when K counts results as returned.
            reached = k if limit is None or k is None else limit.get(k, k)
            if kind == _JUDGED:
                column.append(coverage[i])
            elif below and kind != _NDCG:  # the binary metrics of a query below min_grade
                column.append(constant)
                if kind in count_kinds:
                    hit_columns[name].append(0)
            elif kind in count_kinds:
                assert k is not None
                assert reached is not None
                count = bisect_right(branks, reached)
                hit_columns[name].append(count)
                column.append(count / n_relevant if kind == _RECALL else count / k)
            elif kind == _HIT:
                assert reached is not None
                column.append(1.0 if n_bhits and branks[0] <= reached else 0.0)
            elif kind == _MRR:
                hit = n_bhits and (reached is None or branks[0] <= reached)
                column.append(1.0 / branks[0] if hit else 0.0)
            elif kind == _MAP:
                count = n_bhits if reached is None else bisect_right(branks, reached)
                column.append(ap_prefix[count] / n_relevant)
            elif kind == _RPREC:
                column.append(bisect_right(branks, n_relevant) / n_relevant)
            else:  # _NDCG
                if k is None or reached is None:
                    column.append(dcg_prefix[-1] / ideal_prefix[-1])
                else:
                    count = bisect_right(hit_ranks, reached)
                    column.append(dcg_prefix[count] / ideal_prefix[min(k, len(positive))])

    without = tuple(qid for qid in run if qid not in qrels)
    return Evaluation(
        metrics=specs,
        query_ids=tuple(query_ids),
        columns=dict(zip(names, columns)),
        skipped_no_relevant=tuple(skipped),
        missing_from_run=tuple(missing),
        without_judgments=without,
        conventions=conventions,
        _relevant_counts=relevant_counts,
        _hit_counts=hit_columns,
    )
