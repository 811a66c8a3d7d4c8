"""The conventions every metric follows: duplicates, grades, cutoffs, zero-relevant queries."""

from __future__ import annotations

import math

import pytest

from pytest_retrieval.scoring.metrics import (
    average_precision,
    dcg,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    recall_at_k,
    reciprocal_rank,
)


def test_a_repeated_id_counts_once_at_its_first_rank_and_the_next_ids_move_up() -> None:
    # A at ranks 1 and 2 is one document: the document ranking is A, C.
    retrieved = ["A", "A", "C"]
    assert precision_at_k(retrieved, {"A", "C"}, 3) == pytest.approx(2 / 3)  # 2 hits / K=3
    assert precision_at_k(retrieved, {"A", "C"}, 2) == 1.0  # A, C are the top 2 documents
    assert recall_at_k(retrieved, {"A", "B"}, 3) == 0.5
    # AP: hits at document ranks 1 and 2 -> (1/1 + 2/2) / 2
    assert average_precision(retrieved, {"A", "C"}, 3) == 1.0
    assert reciprocal_rank(["X", "X", "A"], {"A"}) == 0.5  # A is the second document


def test_a_repeated_id_gains_only_once_in_ndcg() -> None:
    # Without the convention DCG would be 1 + 1/log2(3) and NDCG would exceed 1.
    assert ndcg_at_k(["A", "A"], {"A": 1}, 2) == 1.0
    assert ndcg_at_k(["X", "A", "A"], {"A": 1}, 3) == pytest.approx(1 / math.log2(3))
    # X, X, A is the document ranking X, A: A at rank 2.
    assert ndcg_at_k(["X", "X", "A"], {"A": 1}, 3) == pytest.approx(1 / math.log2(3))


def test_grades_at_or_below_zero_are_not_relevant() -> None:
    judged = {"A": 0, "B": -1, "C": 2}
    assert recall_at_k(["A", "B", "C"], judged, 3) == 1.0  # only C is relevant
    assert precision_at_k(["A", "B", "C"], judged, 3) == pytest.approx(1 / 3)
    assert reciprocal_rank(["A", "B", "C"], judged) == pytest.approx(1 / 3)


def test_unjudged_documents_are_not_relevant() -> None:
    assert precision_at_k(["U1", "U2", "A"], {"A": 1}, 3) == pytest.approx(1 / 3)
    assert ndcg_at_k(["U1", "A"], {"A": 1}, 2) == pytest.approx(1 / math.log2(3))


def test_min_grade_sets_the_threshold_for_binary_metrics() -> None:
    judged = {"A": 1, "B": 2, "C": 3}
    assert recall_at_k(["A", "X"], judged, 2, min_grade=2) == 0.0
    assert recall_at_k(["B", "A"], judged, 2, min_grade=2) == 0.5
    assert reciprocal_rank(["A", "B"], judged, min_grade=2) == 0.5
    assert r_precision(["C", "A", "B"], judged, min_grade=2) == 0.5  # R = 2, C in top 2


def test_ndcg_uses_every_positive_grade_whatever_the_threshold() -> None:
    # ndcg_at_k takes no min_grade: grade-1 documents still gain.
    assert ndcg_at_k(["A"], {"A": 1, "B": 2}, 1) == pytest.approx(1 / 3)  # (2^1-1)/(2^2-1)


def test_linear_gain_uses_the_grade_itself() -> None:
    # DCG = 3 + 2/log2(3); IDCG the same: ideal order.
    assert ndcg_at_k(["A", "B"], {"A": 3, "B": 2}, 2, gain="linear") == 1.0
    # Reversed: (2 + 3/log2 3) / (3 + 2/log2 3)
    expected = (2 + 3 / math.log2(3)) / (3 + 2 / math.log2(3))
    assert ndcg_at_k(["B", "A"], {"A": 3, "B": 2}, 2, gain="linear") == pytest.approx(expected)
    assert dcg([3, 2], gain="linear") == pytest.approx(3 + 2 / math.log2(3))


def test_precision_divides_by_k_even_when_fewer_were_retrieved() -> None:
    assert precision_at_k(["A"], {"A"}, 10) == 0.1


def test_average_precision_counts_unretrieved_relevant_documents() -> None:
    # 1 of 4 relevant retrieved at rank 1: AP = (1/1) / 4
    assert average_precision(["A", "X"], {"A", "B", "C", "D"}, 2) == 0.25
    # k=None scores the whole ranking.
    assert average_precision(["X", "A"], {"A"}) == 0.5


def test_a_query_with_nothing_relevant_has_no_recall_ap_rprec_or_ndcg() -> None:
    assert recall_at_k(["A"], set(), 5) is None
    assert average_precision(["A"], set(), 5) is None
    assert r_precision(["A"], set()) is None
    assert ndcg_at_k(["A"], {}, 5) is None
    assert ndcg_at_k(["A"], {"A": 0, "B": -1}, 5) is None


def test_precision_hit_rate_and_rr_score_zero_without_relevant_documents() -> None:
    assert precision_at_k(["A"], set(), 5) == 0.0
    assert hit_rate_at_k(["A"], set(), 5) == 0.0
    assert reciprocal_rank(["A"], set()) == 0.0


def test_hit_rate_is_one_when_any_relevant_document_is_in_the_top_k() -> None:
    assert hit_rate_at_k(["X", "Y", "A"], {"A", "B"}, 3) == 1.0
    assert hit_rate_at_k(["X", "Y", "A"], {"A", "B"}, 2) == 0.0


def test_reciprocal_rank_with_a_cutoff_ignores_hits_below_it() -> None:
    assert reciprocal_rank(["X", "Y", "A"], {"A"}, k=2) == 0.0
    assert reciprocal_rank(["X", "Y", "A"], {"A"}, k=3) == pytest.approx(1 / 3)


@pytest.mark.parametrize("bad_k", [0, -1, 2.5, "10", True, None])
def test_k_must_be_a_positive_integer(bad_k: object) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        recall_at_k(["A"], {"A"}, bad_k)  # type: ignore[arg-type]


def test_a_string_in_place_of_a_collection_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="wrap a single id in a set"):
        recall_at_k(["A"], "A", 1)
    with pytest.raises(TypeError, match="not the string"):
        recall_at_k("ABC", {"A"}, 1)


def test_an_unknown_gain_is_rejected() -> None:
    with pytest.raises(ValueError, match="exponential"):
        ndcg_at_k(["A"], {"A": 1}, 1, gain="cubic")  # type: ignore[arg-type]


def test_min_grade_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="min_grade"):
        recall_at_k(["A"], {"A": 1}, 1, min_grade=0)
