"""Per-query retrieval metrics and their one spelling (:class:`MetricSpec`). Standard library only.

The functions keep the names and call shapes of the design seed (``recall_at_k(retrieved,
relevant, k)`` and friends) and reproduce its worked examples exactly. Conventions, the same
everywhere in pytest-retrieval:

* ``retrieved`` is a ranked sequence of doc ids, best first. A doc id that appears more than once
  counts once, at its first (best) rank; later repeats are removed, so the ids after them move
  up (the repeated-id rule of docs/metrics.md: the document ranking of chunks mapped to their
  documents). Copies under *different* ids (duplicate groups, :mod:`pytest_retrieval.scoring.dedup`)
  are another matter: batch evaluation scores those as filler.
* ``relevant`` is either a collection of relevant doc ids (each grade 1) or a mapping of doc id to
  an integer grade. A grade of at least ``min_grade`` (default 1) is relevant for the binary
  metrics; grades <= 0 are non-relevant; unjudged ids (absent from the mapping) are non-relevant.
* NDCG uses the grades themselves (every grade > 0 gains), whatever ``min_grade`` is, as trec_eval
  does. ``gain="exponential"`` (default) is the seed's ``2**g - 1``; ``gain="linear"`` is ``g``,
  trec_eval's.
* ``k`` must be a positive int. Precision@K divides by K even when fewer than K were retrieved.
* A query with no relevant document has no recall, AP, R-precision or NDCG: those return
  ``None``. Precision, hit rate and reciprocal rank return 0.0 for it, as in the seed. Batch
  evaluation (:func:`pytest_retrieval.scoring.evaluate.evaluate`) applies one convention to every
  metric.
* ``judged@K`` (:func:`judged_at_k`) is coverage, not quality: the share of the top K results
  that carry a judgment (grade 0 included), over ``min(K, len(retrieved))`` positions; it is
  defined for no-answer queries too, and ``None`` for an empty ranking.
* Ties: a ranking is a list, so it has no ties; files with tied scores are ordered when read (see
  :mod:`pytest_retrieval.formats.trec`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from ..errors import InputError, Problem
from ..text import parse_int

Gain = Literal["exponential", "linear"]
Relevance = Collection[str] | Mapping[str, int]


def check_k(k: object, *, what: str = "k") -> int:
    """Return ``k`` if it is a positive int, else raise a ValueError that says so."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{what} must be a positive integer (1, 5, 10, ...), got {k!r}")
    return k


def check_gain(gain: object) -> Gain:
    """Return ``gain`` if it is ``"exponential"`` or ``"linear"``, else raise ValueError."""
    if gain == "exponential":
        return "exponential"
    if gain == "linear":
        return "linear"
    raise ValueError(f"gain must be 'exponential' (2**grade - 1) or 'linear' (grade), got {gain!r}")


def check_min_grade(min_grade: object) -> int:
    """Return ``min_grade`` if it is an int >= 1, else raise ValueError."""
    if isinstance(min_grade, bool) or not isinstance(min_grade, int) or min_grade < 1:
        raise ValueError(
            f"min_grade must be an integer >= 1 (grades <= 0 are never relevant), got {min_grade!r}"
        )
    return min_grade


def _relevant_set(relevant: Relevance, min_grade: int) -> Collection[str]:
    if isinstance(relevant, str):
        raise TypeError(
            f"relevant must be a collection of doc ids or a mapping of doc id to grade, "
            f"not the string {relevant!r}; wrap a single id in a set: {{{relevant!r}}}"
        )
    if isinstance(relevant, Mapping):
        check_min_grade(min_grade)
        return {doc for doc, grade in relevant.items() if grade >= min_grade}
    return relevant if isinstance(relevant, (set, frozenset)) else set(relevant)


def _ranking(retrieved: Iterable[str], k: int | None) -> Iterable[str]:
    if isinstance(retrieved, str):
        raise TypeError(f"retrieved must be a sequence of doc ids, not the string {retrieved!r}")
    # Each id once, at its first (best) rank: the repeated-id rule.
    documents = dict.fromkeys(retrieved)
    return documents if k is None else islice(documents, k)


def _hit_ranks(retrieved: Iterable[str], relevant: Collection[str], k: int | None) -> list[int]:
    """1-based document ranks of the relevant docs within the top ``k`` documents."""
    return [rank for rank, doc in enumerate(_ranking(retrieved, k), start=1) if doc in relevant]


def recall_at_k(
    retrieved: Sequence[str], relevant: Relevance, k: int, *, min_grade: int = 1
) -> float | None:
    """Recall@K = |relevant ∩ top K| / |relevant|; ``None`` when nothing is relevant."""
    check_k(k)
    rel = _relevant_set(relevant, min_grade)
    if not rel:
        return None
    return len(_hit_ranks(retrieved, rel, k)) / len(rel)


def precision_at_k(
    retrieved: Sequence[str], relevant: Relevance, k: int, *, min_grade: int = 1
) -> float:
    """Precision@K = relevant hits in the top K / K (K even when fewer were retrieved)."""
    check_k(k)
    rel = _relevant_set(relevant, min_grade)
    return len(_hit_ranks(retrieved, rel, k)) / k


def hit_rate_at_k(
    retrieved: Sequence[str], relevant: Relevance, k: int, *, min_grade: int = 1
) -> float:
    """Hit rate@K (trec_eval's success@K): 1.0 if any relevant doc is in the top K, else 0.0."""
    check_k(k)
    rel = _relevant_set(relevant, min_grade)
    return 1.0 if _hit_ranks(retrieved, rel, k) else 0.0


def reciprocal_rank(
    retrieved: Sequence[str], relevant: Relevance, *, k: int | None = None, min_grade: int = 1
) -> float:
    """RR = 1 / rank of the first relevant doc (within the top ``k`` if given); 0.0 if none."""
    if k is not None:
        check_k(k)
    rel = _relevant_set(relevant, min_grade)
    for rank, doc in enumerate(_ranking(retrieved, k), start=1):
        if doc in rel:
            return 1.0 / rank
    return 0.0


def average_precision(
    retrieved: Sequence[str],
    relevant: Relevance,
    k: int | None = None,
    *,
    min_grade: int = 1,
) -> float | None:
    """AP@K = (1/|relevant|) · Σ Precision@i over ranks i <= K that hold a relevant doc.

    The denominator counts every relevant doc, retrieved or not (trec_eval's ``map_cut_K``; with
    ``k=None`` the whole ranking is used, trec_eval's ``map``). ``None`` when nothing is relevant.
    """
    if k is not None:
        check_k(k)
    rel = _relevant_set(relevant, min_grade)
    if not rel:
        return None
    ranks = _hit_ranks(retrieved, rel, k)
    return sum(hits / rank for hits, rank in enumerate(ranks, start=1)) / len(rel)


def r_precision(
    retrieved: Sequence[str], relevant: Relevance, *, min_grade: int = 1
) -> float | None:
    """R-precision = Precision@R with R = |relevant|; ``None`` when nothing is relevant."""
    rel = _relevant_set(relevant, min_grade)
    if not rel:
        return None
    return len(_hit_ranks(retrieved, rel, len(rel))) / len(rel)


def judged_at_k(retrieved: Sequence[str], judgments: Relevance, k: int) -> float | None:
    """judged@K = positions of the top K that hold a judged doc / min(K, len(retrieved)).

    Coverage of what the retriever showed: a doc is judged when it has any grade, 0 included
    (a collection of ids counts each as judged). The denominator is the number of results
    actually in the top K, so a short ranking is not called unjudged for results it never
    returned, and an empty ranking has no coverage to measure (``None``). A repeated id counts
    once, at its first rank, as in the quality metrics. A negative grade (TREC's
    "in the pool, not judged") is unjudged, as in trec_eval. Unlike the quality metrics
    it is defined for no-answer queries: their unjudged results are holes all the same.
    """
    check_k(k)
    if isinstance(judgments, str):
        raise TypeError(f"judgments must be a collection or mapping of doc ids, not {judgments!r}")
    judged = (
        {doc for doc, grade in judgments.items() if grade >= 0}
        if isinstance(judgments, Mapping)
        else set(judgments)
    )
    top = list(_ranking(retrieved, k))
    if not top:
        return None
    return sum(1 for doc in top if doc in judged) / len(top)


def share_at_k(retrieved: Sequence[str], documents: Collection[str], k: int) -> float:
    """forbidden@K and stale@K of one ranking: the documents of ``documents`` among the top K
    documents, divided by K (as precision divides, K even when fewer were returned), so the
    mean over queries is the share of the top-K positions they took; a repeated id counts
    once, at its first rank. 0.0 for an empty ranking (nothing was shown)."""
    check_k(k)
    return sum(1 for doc in _ranking(retrieved, k) if doc in documents) / k


def _gain_value(grade: float, gain: Gain) -> float:
    if grade <= 0:
        return 0.0
    return float(2**grade - 1) if gain == "exponential" else float(grade)


#: The highest grade whose exponential gain (2**g - 1, summed over a ranking) is computed as is:
#: 2**1024 no longer fits a float. Loaded golden sets never exceed it (``MAX_GRADE``).
SAFE_TOP_GRADE = 1000


def scaled_gain(grade: int, gain: Gain, top: int) -> float:
    """The gain of ``grade`` in a query whose highest grade is ``top``, scaled so that it stays
    finite: unchanged for ``top <= SAFE_TOP_GRADE``, else multiplied by one constant per query
    (a power of two for the exponential gain, ``1/top`` for the linear one), which leaves NDCG
    (a ratio of two sums over the same query) unchanged."""
    if grade <= 0:
        return 0.0
    if gain == "exponential":
        if top <= SAFE_TOP_GRADE:
            return 2.0**grade - 1.0
        shift = top - SAFE_TOP_GRADE
        return math.ldexp(1.0, grade - shift) - math.ldexp(1.0, -shift)
    if top <= 2**SAFE_TOP_GRADE:
        return float(grade)
    return grade / top


def dcg(grades: Iterable[float], *, gain: Gain = "exponential") -> float:
    """DCG = Σ gain(grade_i) / log2(i + 1) over ranks i = 1, 2, ... of a list of grades.

    gain is ``2**g - 1`` (exponential, the seed's) or ``g`` (linear, trec_eval's); grades <= 0
    gain nothing.
    """
    check_gain(gain)
    return sum(
        _gain_value(grade, gain) / math.log2(rank + 1) for rank, grade in enumerate(grades, 1)
    )


def ndcg_at_k(
    retrieved: Sequence[str],
    grades: Mapping[str, int],
    k: int | None,
    *,
    gain: Gain = "exponential",
) -> float | None:
    """NDCG@K = DCG@K / IDCG@K; the ideal ranks all judged grades, sorted descending.

    A repeated id counts once, at its first rank. ``k=None`` scores the whole ranking (trec_eval's
    ``ndcg``). ``None`` when no judged grade is positive (the ideal DCG would be zero).
    """
    if k is not None:
        check_k(k)
    check_gain(gain)
    if not isinstance(grades, Mapping):
        raise TypeError(
            f"grades must be a mapping of doc id to grade, got {type(grades).__name__}; "
            "for binary labels use {doc: 1 for doc in relevant}"
        )
    positive = sorted((g for g in grades.values() if g > 0), reverse=True)
    if not positive:
        return None
    actual = [grades.get(doc, 0) for doc in _ranking(retrieved, k)]
    ideal = positive if k is None else positive[:k]
    top = positive[0]
    if top > SAFE_TOP_GRADE:  # 2**grade would overflow: scale both sums alike
        return _scaled_dcg(actual, gain, top) / _scaled_dcg(ideal, gain, top)
    return dcg(actual, gain=gain) / dcg(ideal, gain=gain)


def _scaled_dcg(grades: Sequence[int], gain: Gain, top: int) -> float:
    return sum(
        scaled_gain(grade, gain, top) / math.log2(rank + 1) for rank, grade in enumerate(grades, 1)
    )


# --- the metric table ----------------------------------------------------------------------

#: Whether a metric takes a cutoff K: ``required`` (``recall@10``), ``optional`` (``ndcg@10`` or
#: ``ndcg``, the whole ranking) or ``none`` (``r_precision``).
CutoffRule = Literal["required", "optional", "none"]
#: Which way is better: ``higher`` (the relevance metrics) or ``lower`` (``forbidden@K``,
#: ``stale@K``: a leak). Thresholds (a lower-is-better metric is gated with ``<=``), budgets
#: (a rise is its regression), the family's one-sided tests and the wording read it here.
Direction = Literal["higher", "lower"]
#: What a metric is computed from: the judgments of the ranked documents (the relevance
#: metrics and ``judged@K`` coverage, :mod:`.evaluate`'s kernel), the retriever's scores
#: against a floor (:mod:`.abstention`), the copies in a ranking (:mod:`.dedup`), or the
#: documents a query must not be shown (``access``: forbidden and stale documents).
Source = Literal["judgments", "scores", "copies", "access"]


@dataclass(frozen=True, slots=True)
class Metric:
    """One row of the metric table (:data:`METRICS`): everything that makes a metric itself.

    ``name`` is its canonical spelling; ``aliases`` the other names parsing accepts (lower
    case; other tools' spellings); ``trec`` the alias trec_eval writes a cutoff after with an
    underscore (``P_5``, ``ndcg_cut_10``); ``cutoff`` the cutoff rule and ``no_cutoff`` why a
    metric takes none (said when one is given); ``direction`` which way is better; ``source``
    what it is computed from; ``summary`` whether the summary table shows it by default
    (``retrieval_metrics``' default). Its place in :data:`METRICS` is the order every table
    lists metrics in.
    """

    name: str
    cutoff: CutoffRule
    aliases: tuple[str, ...] = ()
    trec: str | None = None
    no_cutoff: str = ""
    direction: Direction = "higher"
    source: Source = "judgments"
    summary: bool = False

    @property
    def lower_is_better(self) -> bool:
        """True for a metric where a rise is worse (``forbidden@K``, ``stale@K``)."""
        return self.direction == "lower"

    def oriented(self, value: float) -> float:
        """``value`` (a metric value, or a delta ``current - baseline``) oriented so that higher
        is better: itself for a higher-is-better metric, ``-value`` for a lower-is-better one
        (exact: negating a float loses nothing, and sums of negated values are the negated
        sums). The one home of "is this change a worsening": a delta whose oriented value is
        below 0 made the metric worse. The regression rule, the family and the statistics work
        on oriented values; what they report is turned back with this same function (it is its
        own inverse)."""
        # 0.0 - value, not -value: a zero stays +0.0 (a mean of 0 never prints as -0.0000).
        return 0.0 - value if self.direction == "lower" else value

    @property
    def worsening(self) -> str:
        """How a change for the worse is named: ``drop`` (higher is better) or ``rise``."""
        return "rise" if self.direction == "lower" else "drop"

    @property
    def worsened(self) -> str:
        """The past tense of :attr:`worsening`: ``dropped`` or ``rose``."""
        return "rose" if self.direction == "lower" else "dropped"

    @property
    def improving(self) -> str:
        """How a change for the better is named: ``rise`` (higher is better) or ``fall``."""
        return "fall" if self.direction == "lower" else "rise"

    @property
    def bound_side(self) -> str:
        """The side of a delta's one-sided bound that a regression must clear: ``upper`` (a
        significant drop has its upper bound below 0) or ``lower`` (a significant rise of a
        lower-is-better metric has its lower bound above 0)."""
        return "lower" if self.direction == "lower" else "upper"

    @property
    def takes_cutoff(self) -> bool:
        """False for a metric that takes no cutoff (``r_precision``, ``abstain_rate``, ...)."""
        return self.cutoff != "none"

    @property
    def needs_cutoff(self) -> bool:
        """True for a metric that has no value without one (``recall``, ``judged``, ...)."""
        return self.cutoff == "required"

    @property
    def spellings(self) -> tuple[str, ...]:
        """Its valid spellings with K for the cutoff: ``("recall@K",)``, ``("map@K", "map")``,
        ``("r_precision",)``."""
        if self.cutoff == "required":
            return (f"{self.name}@K",)
        if self.cutoff == "optional":
            return (f"{self.name}@K", self.name)
        return (self.name,)


#: The metric table: every metric, once, in the order tables list them. Adding a metric is a
#: row here (its kernel in :mod:`.evaluate`, its helpers in :mod:`.gates`, its row in
#: docs/metrics.md); every spelling, rule and message below derives from it.
METRICS: tuple[Metric, ...] = (
    Metric("recall", "required", aliases=("r",), trec="recall", summary=True),
    Metric("precision", "required", aliases=("p",), trec="p", summary=True),
    Metric(
        "hit_rate",
        "required",
        aliases=("hitrate", "hit", "success"),
        trec="success",
        summary=True,
    ),
    Metric("ndcg", "optional", aliases=("ndcg_cut",), trec="ndcg_cut", summary=True),
    Metric("map", "optional", aliases=("ap", "map_cut"), trec="map_cut", summary=True),
    Metric("mrr", "optional", aliases=("rr", "recip_rank"), summary=True),
    Metric(
        "r_precision",
        "none",
        aliases=("r-precision", "rprec"),
        no_cutoff="it is precision at R = |relevant|",
    ),
    Metric("distinct", "required", source="copies"),
    Metric(
        "abstain_rate",
        "none",
        aliases=("abstain", "abstention"),
        no_cutoff="a floor",
        source="scores",
    ),
    Metric("answer_rate", "none", aliases=("answer",), no_cutoff="a floor", source="scores"),
    Metric("judged", "required"),
    Metric("forbidden", "required", aliases=("leak", "leaks"), direction="lower", source="access"),
    Metric("stale", "required", direction="lower", source="access"),
)

_BY_NAME = {metric.name: metric for metric in METRICS}
#: What :func:`metric_of` gives for a spelling it cannot parse.
_DEFAULT_ROW = Metric("unknown", "optional")

#: Canonical metric names, in the order tables list them.
METRIC_NAMES = tuple(_BY_NAME)

#: Metrics that do not come from the judged ranks (:mod:`.abstention`, :mod:`.dedup`), and
#: ignore the ``no_relevant`` convention: each has its own domain of queries.
EXTENSION_METRICS = frozenset(m.name for m in METRICS if m.source != "judgments")

#: The metrics of the summary table when ``retrieval_metrics`` is not set, each at every K.
SUMMARY_METRICS = tuple(m.name for m in METRICS if m.summary)

#: Every valid spelling, as error messages list them.
VALID_METRICS = ", ".join(spelling for m in METRICS for spelling in m.spellings)

#: Every name parsing accepts (lower case) → its metric's canonical name.
_ALIASES = {alias: m.name for m in METRICS for alias in (m.name, *m.aliases)}

# trec_eval spells cutoffs with an underscore: P_5, recall_10, ndcg_cut_10, map_cut_100, success_5.
_TREC_STYLE = re.compile(
    r"^(" + "|".join(re.escape(m.trec) for m in METRICS if m.trec) + r")_(.+)$"
)


def metric(name: str) -> Metric:
    """The table's row of the metric named ``name`` (canonical); KeyError when there is none."""
    return _BY_NAME[name]


def metric_of(text: object) -> Metric:
    """The table's row of a metric as a stored run spells it (``"stale@3"``, ``"ndcg@10"``: an
    artifact's or a check's ``metric``); the default row (higher is better) for anything this
    version cannot parse, so a report of a newer run still reads."""
    try:
        return MetricSpec.parse(str(text)).metric
    except InputError:
        return _DEFAULT_ROW


def takes_cutoff(name: str) -> bool:
    """False for the metrics that take no cutoff (``r_precision``, ``abstain_rate``, ...)."""
    return _BY_NAME[name].takes_cutoff


def _metric_error(text: str, message: str, fix: str) -> InputError:
    return InputError(Problem(f"{text!r} is not a metric: {message}", fix=fix))


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric at one cutoff, with one spelling: ``recall@50``, ``ndcg@10``, ``mrr``, ...

    ``str(spec)`` is the canonical spelling and ``MetricSpec.parse(str(spec)) == spec``.
    Parsing is case-insensitive and accepts common aliases (``P@5``, ``nDCG@10``, ``R@50``,
    ``success@5``, ``AP``, ``RR``, ``Rprec``, and trec_eval's ``P_5``, ``ndcg_cut_10``, ...).
    ``recall``, ``precision``, ``hit_rate``, ``distinct`` and ``judged`` (coverage) need a
    cutoff; ``ndcg``, ``map`` and ``mrr`` without one score the whole ranking; ``r_precision``,
    ``abstain_rate`` and ``answer_rate`` take none. The names, aliases and cutoff rules are the
    metric table's (:data:`METRICS`).
    """

    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        found = _BY_NAME.get(self.name)
        if found is None:
            raise ValueError(f"unknown metric name {self.name!r}; known: {', '.join(METRIC_NAMES)}")
        if self.k is not None:
            check_k(self.k, what=f"the cutoff of {self.name}")
        if found.needs_cutoff and self.k is None:
            raise ValueError(f"{self.name} needs a cutoff, e.g. {self.name}@10")
        if not found.takes_cutoff and self.k is not None:
            why = f" ({found.no_cutoff})" if found.no_cutoff else ""
            raise ValueError(f"{self.name} takes no cutoff{why}")

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def metric(self) -> Metric:
        """Its row of the metric table (:data:`METRICS`)."""
        return _BY_NAME[self.name]

    @property
    def sort_key(self) -> tuple[int, int]:
        """Table order: by metric (the order of :data:`METRICS`), then by cutoff."""
        return (METRIC_NAMES.index(self.name), self.k if self.k is not None else 1 << 62)

    @classmethod
    def parse(cls, text: str | MetricSpec) -> MetricSpec:
        """Parse a metric spelling; raise :class:`~pytest_retrieval.errors.InputError` naming the
        nearest valid spelling when it is not one."""
        if isinstance(text, MetricSpec):
            return text
        if not isinstance(text, str):
            raise InputError(
                Problem(f"a metric must be a string such as 'recall@10', got {text!r}")
            )
        raw = text.strip()
        lowered = raw.lower().replace(" ", "")
        k_text: str | None = None
        if "@" in lowered:
            name_text, k_text = lowered.split("@", 1)
        else:
            trec = _TREC_STYLE.match(lowered)
            name_text, k_text = (trec.group(1), trec.group(2)) if trec else (lowered, None)
        name = _ALIASES.get(name_text)
        if name is None:
            raise _metric_error(raw, "unknown metric name", _suggestion(name_text, k_text))
        k: int | None = None
        if k_text is not None:
            k = parse_int(k_text)  # ASCII digits only: "²" passes isdigit() but not int()
            if k is None or k < 1:
                raise _metric_error(
                    raw,
                    f"the cutoff {k_text!r} is not a positive integer",
                    f"write a cutoff such as {name}@10",
                )
        found = _BY_NAME[name]
        if found.needs_cutoff and k is None:
            raise _metric_error(raw, f"{name} needs a cutoff", f"write e.g. {name}@10")
        if not found.takes_cutoff and k is not None:
            raise _metric_error(raw, f"{name} takes no cutoff", f"write {name}")
        return cls(name, k)


def _suggestion(name_text: str, k_text: str | None) -> str:
    import difflib  # only on the error path: keeps importing the plugin cheap

    close = difflib.get_close_matches(name_text, sorted(_ALIASES), n=1, cutoff=0.5)
    if not close:
        return f"valid metrics: {VALID_METRICS}"
    found = _BY_NAME[_ALIASES[close[0]]]
    if not found.takes_cutoff:
        guess = found.name
    elif k_text is not None and (cutoff := parse_int(k_text)) is not None and cutoff >= 1:
        guess = f"{found.name}@{cutoff}"
    elif found.needs_cutoff:
        guess = f"{found.name}@10"
    else:
        guess = found.name
    return f"did you mean {guess!r}? valid metrics: {VALID_METRICS}"
