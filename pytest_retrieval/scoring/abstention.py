"""No-answer queries: did retrieval return nothing confident? ``abstain_rate``, ``answer_rate``
and the sweep of candidate score floors. Standard library only.

Conventions (the README's "No-answer queries and duplicates" section says the same):

* A **no-answer** query is a judged query with no relevant document (no grade reaches
  ``min_grade``), as in :mod:`pytest_retrieval.scoring.evaluate`; every other judged query is
  **answerable**.
* A ranking **answers** when one of its results has a score at or above the stage's floor
  (``retrieval_score_floor``); scores are similarities, higher is more confident. An empty
  ranking never answers, whatever the floor. A result without a score (``None``) in a ranking
  that has scores is not at or above any floor. The floor :data:`ANY_RESULT` (the setting's
  ``empty``) counts any result as an answer, scored or not: abstention by emptiness alone, for
  retrievers that filter their own results.
* ``abstain_rate`` is defined on no-answer queries only (1.0 when the ranking does not answer,
  else 0.0) and ``answer_rate`` on answerable queries only (1.0 when it answers); elsewhere the
  per-query value is ``None``, so macro means and slices average their own domain. Neither
  follows the ``no_relevant`` convention, and both are higher-is-better.
* A judged query missing from the run (its retriever call failed) is neither: 0.0 on both, so
  an error can never raise a number.
* They **cannot be measured** without a floor, or with a numeric floor when a non-empty
  ranking carries no scores: every value is then ``None`` and :func:`abstention_columns` says
  why (gates on them are refused with that reason).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: The floor under which every result answers (``retrieval_score_floor = empty``).
ANY_RESULT = -math.inf

#: How many candidate floors a sweep shows at most.
SWEEP_POINTS = 12


def is_answerable(judgments: Mapping[str, int], min_grade: int = 1) -> bool:
    """True when a query has a relevant document (a grade of at least ``min_grade``)."""
    return any(grade >= min_grade for grade in judgments.values())


def top_score(scores: Sequence[float | None] | None) -> float | None:
    """The highest score of a ranking (``None`` when none of its results has one)."""
    if not scores:
        return None
    present = [s for s in scores if s is not None and not math.isnan(s)]
    return max(present) if present else None


def answers(
    ranking: Sequence[str], scores: Sequence[float | None] | None, floor: float
) -> bool | None:
    """Whether a ranking answers at ``floor``; ``None`` when that cannot be told (a numeric
    floor and a non-empty ranking without scores)."""
    if not ranking:
        return False
    if floor == ANY_RESULT:
        return True
    if not scores or all(s is None for s in scores):
        return None
    best = top_score(scores)
    return best is not None and best >= floor


def describe_floor(floor: float | None) -> str:
    """``0.5``, ``empty`` (any result answers) or ``none``."""
    if floor is None:
        return "none"
    if floor == ANY_RESULT:
        return "empty"
    return f"{floor:g}"


def abstention_columns(
    query_ids: Sequence[str],
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    scores: Mapping[str, Sequence[float | None]] | None,
    floor: float | None,
    *,
    min_grade: int = 1,
) -> tuple[list[float | None], list[float | None], str | None]:
    """(``abstain_rate`` column, ``answer_rate`` column, why they cannot be measured or None),
    one value per query of ``query_ids``; see the module docstring for the conventions."""
    n = len(query_ids)
    if floor is None:
        return (
            [None] * n,
            [None] * n,
            "no score floor: set retrieval_score_floor (a score, `stage=score, ...`, or `empty` "
            "when only an empty ranking means no answer)",
        )
    abstain: list[float | None] = []
    answer: list[float | None] = []
    for qid in query_ids:
        answerable = is_answerable(qrels.get(qid, {}), min_grade)
        ranking = run.get(qid)
        if ranking is None:
            abstain.append(None if answerable else 0.0)
            answer.append(0.0 if answerable else None)
            continue
        answered = answers(ranking, None if scores is None else scores.get(qid), floor)
        if answered is None:
            return (
                [None] * n,
                [None] * n,
                f"the floor {describe_floor(floor)} needs scores, but the ranking of query "
                f"{qid!r} has none: return (id, score) pairs or scored items, or set "
                "retrieval_score_floor = empty to count any result as an answer",
            )
        abstain.append(None if answerable else (0.0 if answered else 1.0))
        answer.append((1.0 if answered else 0.0) if answerable else None)
    return abstain, answer, None


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """The abstention metrics at one candidate floor (``None``: no query of that kind)."""

    floor: float
    abstain_rate: float | None
    answer_rate: float | None

    def to_dict(self) -> dict[str, float | None]:
        """Builtins for the artifact."""
        return {
            "floor": self.floor,
            "abstain_rate": self.abstain_rate,
            "answer_rate": self.answer_rate,
        }


@dataclass(frozen=True, slots=True)
class Sweep:
    """``abstain_rate`` and ``answer_rate`` over candidate floors taken from observed scores.

    ``no_answer`` and ``answerable`` count the queries each rate averages; ``floor`` is the
    configured floor (``None`` when unset), always one of the points when it is a number.
    """

    stage: str
    points: tuple[SweepPoint, ...]
    no_answer: int
    answerable: int
    floor: float | None = None

    def to_dict(self) -> dict[str, object]:
        """Builtins for the artifact."""
        return {
            "stage": self.stage,
            "floor": None if self.floor is None or self.floor == ANY_RESULT else self.floor,
            "no_answer": self.no_answer,
            "answerable": self.answerable,
            "points": [p.to_dict() for p in self.points],
        }


def _candidates(values: Sequence[float], points: int) -> list[float]:
    """Up to ``points`` floors among the observed top scores, spread by rank (quantiles).

    The rates change only at an observed top score, so the candidates are observed values."""
    distinct = sorted(set(values))
    if len(distinct) <= points:
        return distinct
    step = (len(distinct) - 1) / (points - 1)
    return sorted({distinct[round(i * step)] for i in range(points)})


def sweep(
    stage: str,
    query_ids: Sequence[str],
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    scores: Mapping[str, Sequence[float | None]],
    *,
    min_grade: int = 1,
    floor: float | None = None,
    points: int = SWEEP_POINTS,
) -> Sweep | None:
    """The sweep of one stage over ``query_ids``; ``None`` when no ranking has a score.

    A query answers at floor ``t`` when its top score is at least ``t`` (an empty or unscored
    ranking never does; a query missing from the run counts against both rates, as in
    :func:`abstention_columns`).
    """
    tops: dict[str, float | None] = {}
    for qid in query_ids:
        ranking = run.get(qid)
        tops[qid] = top_score(scores.get(qid)) if ranking else None
    observed = [t for t in tops.values() if t is not None and math.isfinite(t)]
    if not observed:
        return None
    candidates = _candidates(observed, points)
    if floor is not None and math.isfinite(floor) and floor not in candidates:
        candidates = sorted([*candidates, floor])
    answerable = {qid: is_answerable(qrels.get(qid, {}), min_grade) for qid in query_ids}
    missing = {qid for qid in query_ids if qid not in run}
    n_answerable = sum(answerable.values())
    n_no_answer = len(query_ids) - n_answerable
    out = []
    for t in candidates:
        abstained = sum(
            1
            for qid in query_ids
            if not answerable[qid]
            and qid not in missing
            and ((top := tops[qid]) is None or top < t)
        )
        answered = sum(
            1
            for qid in query_ids
            if answerable[qid] and (top := tops[qid]) is not None and top >= t
        )
        out.append(
            SweepPoint(
                floor=t,
                abstain_rate=abstained / n_no_answer if n_no_answer else None,
                answer_rate=answered / n_answerable if n_answerable else None,
            )
        )
    return Sweep(stage, tuple(out), n_no_answer, n_answerable, floor)
