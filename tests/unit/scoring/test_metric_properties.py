"""Property tests: invariants every metric must keep on arbitrary rankings and judgments."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_retrieval.scoring.evaluate import evaluate
from pytest_retrieval.scoring.metrics import (
    average_precision,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    recall_at_k,
    reciprocal_rank,
)

DOCS = [f"d{i}" for i in range(12)]
rankings = st.lists(st.sampled_from(DOCS), max_size=15)  # duplicates allowed on purpose
judgments = st.dictionaries(
    st.sampled_from(DOCS), st.integers(min_value=-1, max_value=3), max_size=8
)
cutoffs = st.integers(min_value=1, max_value=20)
gains = st.sampled_from(["exponential", "linear"])


def in_unit_interval(value: float | None) -> bool:
    return value is None or 0.0 <= value <= 1.0 + 1e-12


@given(rankings, judgments, cutoffs, gains)
def test_every_metric_stays_within_zero_and_one(
    retrieved: list[str], judged: dict[str, int], k: int, gain: str
) -> None:
    values = [
        recall_at_k(retrieved, judged, k),
        precision_at_k(retrieved, judged, k),
        hit_rate_at_k(retrieved, judged, k),
        reciprocal_rank(retrieved, judged),
        average_precision(retrieved, judged, k),
        average_precision(retrieved, judged),
        r_precision(retrieved, judged),
        ndcg_at_k(retrieved, judged, k, gain=gain),  # type: ignore[arg-type]
    ]
    assert all(in_unit_interval(v) for v in values), values


@given(rankings, judgments)
def test_recall_never_decreases_as_k_grows(retrieved: list[str], judged: dict[str, int]) -> None:
    values = [recall_at_k(retrieved, judged, k) for k in range(1, 18)]
    if values[0] is None:
        assert all(v is None for v in values)
    else:
        assert all(
            a is not None and b is not None and a <= b for a, b in itertools.pairwise(values)
        )


@given(judgments, cutoffs, gains)
def test_ndcg_is_one_on_the_ideal_order(judged: dict[str, int], k: int, gain: str) -> None:
    ideal = sorted((d for d, g in judged.items() if g > 0), key=lambda d: -judged[d])
    value = ndcg_at_k(ideal, judged, k, gain=gain)  # type: ignore[arg-type]
    if ideal:
        assert value == pytest.approx(1.0)
    else:
        assert value is None


@given(rankings, judgments, cutoffs, st.randoms(use_true_random=False))
def test_permuting_non_relevant_ids_leaves_recall_unchanged(
    retrieved: list[str], judged: dict[str, int], k: int, rnd: object
) -> None:
    # Over a document ranking: with repeats, moving a repeated id moves the documents after it
    # (d2, d2, d0 is the documents d2, d0; d1, d2, d0 puts d0 third), by the repeated-id rule.
    retrieved = list(dict.fromkeys(retrieved))
    relevant = {d for d, g in judged.items() if g >= 1}
    slots = [i for i, d in enumerate(retrieved) if d not in relevant]
    shuffled_ids = [retrieved[i] for i in slots]
    rnd.shuffle(shuffled_ids)  # type: ignore[attr-defined]
    permuted = list(retrieved)
    for slot, doc in zip(slots, shuffled_ids):
        permuted[slot] = doc
    assert recall_at_k(permuted, judged, k) == recall_at_k(retrieved, judged, k)


@given(rankings, judgments, cutoffs)
def test_average_precision_never_exceeds_recall(
    retrieved: list[str], judged: dict[str, int], k: int
) -> None:
    ap = average_precision(retrieved, judged, k)
    recall = recall_at_k(retrieved, judged, k)
    assert (ap is None) == (recall is None)
    if ap is not None and recall is not None:
        assert ap <= recall + 1e-12


@settings(max_examples=150)
@given(
    st.dictionaries(st.sampled_from([f"q{i}" for i in range(6)]), rankings, max_size=6),
    st.dictionaries(
        st.sampled_from([f"q{i}" for i in range(8)]), judgments, min_size=1, max_size=8
    ),
    st.lists(cutoffs, min_size=1, max_size=3),
    gains,
    st.integers(min_value=1, max_value=3),
)
def test_batch_evaluate_equals_the_per_query_functions(
    run: dict[str, list[str]],
    qrels: dict[str, dict[str, int]],
    ks: list[int],
    gain: str,
    min_grade: int,
) -> None:
    metrics = [
        f"{name}@{k}"
        for k in ks
        for name in ("recall", "precision", "hit_rate", "ndcg", "map", "mrr")
    ]
    metrics += ["map", "mrr", "r_precision", "ndcg"]
    ev = evaluate(run, qrels, metrics, gain=gain, min_grade=min_grade, no_relevant="zero")  # type: ignore[arg-type]
    for qid, judged in qrels.items():
        retrieved = run.get(qid, [])
        has_relevant = any(g >= min_grade for g in judged.values())
        row = ev.per_query[qid]
        for k in ks:
            expected = {
                f"recall@{k}": recall_at_k(retrieved, judged, k, min_grade=min_grade),
                f"precision@{k}": precision_at_k(retrieved, judged, k, min_grade=min_grade),
                f"hit_rate@{k}": hit_rate_at_k(retrieved, judged, k, min_grade=min_grade),
                f"ndcg@{k}": ndcg_at_k(retrieved, judged, k, gain=gain),  # type: ignore[arg-type]
                f"map@{k}": average_precision(retrieved, judged, k, min_grade=min_grade),
                f"mrr@{k}": reciprocal_rank(retrieved, judged, k=k, min_grade=min_grade),
            }
            expected["map"] = average_precision(retrieved, judged, min_grade=min_grade)
            expected["mrr"] = reciprocal_rank(retrieved, judged, min_grade=min_grade)
            expected["r_precision"] = r_precision(retrieved, judged, min_grade=min_grade)
            expected["ndcg"] = ndcg_at_k(retrieved, judged, None, gain=gain)  # type: ignore[arg-type]
            graded = any(g > 0 for g in judged.values())
            for name, want in expected.items():
                # The "zero" convention: a query without a relevant document scores 0 on the
                # binary metrics; its NDCG still comes from its grades when it has positive
                # ones below min_grade (trec_eval -lN), else it is 0 too.
                if not has_relevant and not (graded and name.startswith("ndcg")):
                    want = 0.0
                assert row[name] == pytest.approx(want), (qid, name)


@given(rankings, judgments, st.one_of(st.none(), cutoffs), st.integers(min_value=1, max_value=3))
def test_average_precision_never_exceeds_one_at_any_cutoff_or_min_grade(
    retrieved: list[str], judged: dict[str, int], k: int | None, min_grade: int
) -> None:
    # Duplicates in the ranking must not count a relevant document twice (AP would pass 1).
    ap = average_precision(retrieved, judged, k, min_grade=min_grade)
    assert ap is None or 0.0 <= ap <= 1.0 + 1e-12


@given(
    judgments, st.lists(st.sampled_from(DOCS), max_size=6), st.integers(min_value=1, max_value=3)
)
def test_average_precision_is_one_when_every_relevant_document_comes_first(
    judged: dict[str, int], tail: list[str], min_grade: int
) -> None:
    relevant = [d for d, g in judged.items() if g >= min_grade]
    ap = average_precision(relevant + tail, judged, min_grade=min_grade)
    if relevant:
        assert ap == pytest.approx(1.0)
    else:
        assert ap is None


@given(judgments, st.lists(st.sampled_from(DOCS), max_size=6), cutoffs, gains)
def test_a_tail_after_the_ideal_order_keeps_ndcg_at_one(
    judged: dict[str, int], tail: list[str], k: int, gain: str
) -> None:
    # Whatever follows every graded document (repeats, grade 0, unjudged) gains nothing.
    ideal = sorted((d for d, g in judged.items() if g > 0), key=lambda d: -judged[d])
    value = ndcg_at_k(ideal + tail, judged, k, gain=gain)  # type: ignore[arg-type]
    if ideal:
        assert value == pytest.approx(1.0)
    else:
        assert value is None


@settings(max_examples=200)
@given(
    rankings,
    judgments,
    st.lists(
        st.sampled_from(
            ["r_precision", "precision@1", "recall@2", "ndcg@3", "map@2", "mrr@1", "hit_rate@2"]
        ),
        min_size=1,
        max_size=3,
        unique=True,
    ),
)
def test_a_metric_does_not_depend_on_which_others_are_asked_for(
    retrieved: list[str], judged: dict[str, int], subset: list[str]
) -> None:
    # Batch evaluation cuts rankings at the deepest cutoff it needs: whatever the subset, each
    # value must equal the per-query function's.
    reference = {
        "r_precision": r_precision(retrieved, judged),
        "precision@1": precision_at_k(retrieved, judged, 1),
        "recall@2": recall_at_k(retrieved, judged, 2),
        "ndcg@3": ndcg_at_k(retrieved, judged, 3),
        "map@2": average_precision(retrieved, judged, 2),
        "mrr@1": reciprocal_rank(retrieved, judged, k=1),
        "hit_rate@2": hit_rate_at_k(retrieved, judged, 2),
    }
    has_relevant = any(g >= 1 for g in judged.values())
    row = evaluate({"q": retrieved}, {"q": judged}, subset, no_relevant="zero").per_query["q"]
    for name in subset:
        want = reference[name] if has_relevant else 0.0
        assert row[name] == pytest.approx(want), name
