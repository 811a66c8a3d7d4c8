"""Batch evaluation: which queries count, the zero-relevant conventions, micro and macro means."""

from __future__ import annotations

import math

import pytest

from pytest_retrieval.scoring.evaluate import evaluate

RUN = {
    "q1": ["A", "B", "C", "D"],  # relevant A, C
    "q2": ["X", "B", "Y"],  # relevant B (grade 2), Z (grade 1, never retrieved)
    "q3": ["A"],  # no relevant document (judged non-relevant only)
    "extra": ["A"],  # not judged
}
QRELS = {
    "q1": {"A": 1, "C": 1, "D": 0},
    "q2": {"B": 2, "Z": 1},
    "q3": {"A": 0},
    "q4": {"K": 1},  # judged, missing from the run
}


def test_values_are_computed_by_hand_per_query() -> None:
    ev = evaluate(RUN, QRELS, ["recall@2", "precision@2", "mrr", "map", "hit_rate@1"])
    assert ev.per_query["q1"] == {
        "recall@2": 0.5,
        "precision@2": 0.5,
        "mrr": 1.0,
        "map": (1 / 1 + 2 / 3) / 2,
        "hit_rate@1": 1.0,
    }
    assert ev.per_query["q2"] == {
        "recall@2": 0.5,
        "precision@2": 0.5,
        "mrr": 0.5,
        "map": (1 / 2) / 2,
        "hit_rate@1": 0.0,
    }
    assert ev.per_query["q4"] == dict.fromkeys(ev.per_query["q4"], 0.0)


def test_skip_leaves_zero_relevant_queries_out_of_every_mean_and_counts_them() -> None:
    ev = evaluate(RUN, QRELS, ["precision@2", "mrr"])
    assert ev.per_query["q3"] == {"precision@2": None, "mrr": None}
    assert ev.skipped_no_relevant == ("q3",)
    assert ev.evaluated == 3  # q1, q2, q4
    assert ev.counts == {"precision@2": 3, "mrr": 3}
    assert ev.means["mrr"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)


def test_zero_and_one_score_zero_relevant_queries_on_every_metric() -> None:
    zero = evaluate(RUN, QRELS, ["ndcg@3", "mrr"], no_relevant="zero")
    one = evaluate(RUN, QRELS, ["ndcg@3", "mrr"], no_relevant="one")
    assert zero.per_query["q3"] == {"ndcg@3": 0.0, "mrr": 0.0}
    assert one.per_query["q3"] == {"ndcg@3": 1.0, "mrr": 1.0}
    assert zero.skipped_no_relevant == one.skipped_no_relevant == ()
    assert zero.evaluated == 4
    assert one.means["mrr"] == pytest.approx((1.0 + 0.5 + 1.0 + 0.0) / 4)


def test_an_empty_judgment_mapping_is_a_no_answer_query() -> None:
    ev = evaluate({"q": ["A"]}, {"q": {}, "r": {"A": 1}}, ["recall@1"])
    assert ev.skipped_no_relevant == ("q",)
    assert ev.means["recall@1"] == 0.0  # only "r" counts, and it is missing from the run


def test_missing_and_unjudged_queries_are_reported_not_dropped() -> None:
    ev = evaluate(RUN, QRELS, ["recall@4"])
    assert ev.missing_from_run == ("q4",)
    assert ev.without_judgments == ("extra",)
    assert "extra" not in ev.per_query
    assert ev.per_query["q4"]["recall@4"] == 0.0


def test_a_min_grade_above_every_judged_grade_makes_a_query_zero_relevant() -> None:
    ev = evaluate(RUN, QRELS, ["recall@3", "ndcg@3"], min_grade=2)
    # q1 has only grade-1 documents: no relevant document at >= 2, skipped everywhere.
    assert "q1" in ev.skipped_no_relevant
    assert ev.per_query["q2"]["recall@3"] == 1.0  # only B counts
    # NDCG still uses every positive grade: B (2) at rank 2, Z (1) missing.
    dcg = 3 / math.log2(3)
    idcg = 3 + 1 / math.log2(3)
    assert ev.per_query["q2"]["ndcg@3"] == pytest.approx(dcg / idcg)


def test_a_repeated_id_counts_once_at_its_best_rank_and_the_ids_after_it_move_up() -> None:
    # A, A, B is the document ranking A, B: both relevant documents in the top 2.
    ev = evaluate({"q": ["A", "A", "B"]}, {"q": {"A": 1, "B": 1}}, ["precision@2", "map", "ndcg@3"])
    assert ev.per_query["q"]["precision@2"] == 1.0  # 2 hits / 2
    assert ev.per_query["q"]["map"] == 1.0  # (1/1 + 2/2) / 2
    assert ev.per_query["q"]["ndcg@3"] == 1.0  # A, B at ranks 1, 2: the ideal ranking


def test_the_issue_example_a_a_c_d_gives_recall_one_at_two_and_distinct_three_quarters() -> None:
    # a, a, c, d with c relevant. Documents: a, c, d, so c is at document rank 2:
    # recall@2 = 1/1, precision@2 = 1/2, RR = 1/2. distinct@4 counts the four results as
    # returned: 3 distinct ids (a, c, d) of 4 = 0.75.
    ev = evaluate(
        {"q": ["a", "a", "c", "d"]},
        {"q": {"c": 1}},
        ["recall@2", "precision@2", "mrr", "distinct@4", "judged@2"],
    )
    assert ev.per_query["q"] == {
        "recall@2": 1.0,
        "precision@2": 0.5,
        "mrr": 0.5,
        "distinct@4": 0.75,
        "judged@2": 0.5,  # documents a, c: c judged, a not
    }
    assert ev.cutoff_unit == "documents"


def test_cutoff_unit_results_scores_the_documents_within_the_top_k_results_as_returned() -> None:
    # The top 2 results are a, a: one document, not c: recall@2 = 0, precision@2 = 0/2.
    # The top 3 are a, a, c: documents a, c: recall@3 = 1, precision@3 = 1/3 (still / K),
    # NDCG@3 = (1 / log2(3)) / 1 (c at document rank 2; the ideal holds c at rank 1), RR = 1/2.
    ev = evaluate(
        {"q": ["a", "a", "c", "d"]},
        {"q": {"c": 1}},
        ["recall@2", "precision@2", "recall@3", "precision@3", "ndcg@3", "mrr@2", "distinct@4"],
        cutoff_unit="results",
    )
    row = ev.per_query["q"]
    assert (row["recall@2"], row["precision@2"], row["mrr@2"]) == (0.0, 0.0, 0.0)
    assert (row["recall@3"], row["precision@3"]) == (1.0, pytest.approx(1 / 3))
    assert row["ndcg@3"] == pytest.approx(1 / math.log2(3))
    assert row["distinct@4"] == 0.75
    with pytest.raises(ValueError, match="cutoff_unit must be 'documents'"):
        evaluate({"q": ["a"]}, {"q": {"a": 1}}, ["recall@1"], cutoff_unit="chunks")  # type: ignore[arg-type]


def test_results_unit_with_unjudged_skip_counts_the_judged_results_as_returned() -> None:
    # trec_eval -J first drops the unjudged results: a, a, x, c -> a, a, c (x unjudged). The top
    # 3 judged results as returned hold the documents a, c: recall@3 = 1. judged@2 is coverage
    # of the results as returned: a, a -> one document, a, judged (grade 0): 1/1.
    ev = evaluate(
        {"q": ["a", "a", "x", "c"]},
        {"q": {"a": 0, "c": 1}},
        ["recall@2", "recall@3", "judged@2"],
        cutoff_unit="results",
        unjudged="skip",
    )
    assert ev.per_query["q"] == {"recall@2": 0.0, "recall@3": 1.0, "judged@2": 1.0}


def test_micro_recall_pools_hits_over_relevant_documents() -> None:
    ev = evaluate(RUN, QRELS, ["recall@4", "precision@4"])
    # Hits@4: q1 2 of 2, q2 1 of 2, q4 0 of 1 -> micro 3/5; macro (1 + 0.5 + 0) / 3.
    assert ev.micro["recall@4"] == pytest.approx(3 / 5)
    assert ev.means["recall@4"] == pytest.approx(1.5 / 3)
    assert ev.micro["precision@4"] == pytest.approx(3 / 12)


def test_restrict_recomputes_means_over_a_subset() -> None:
    ev = evaluate(RUN, QRELS, ["mrr"])
    sub = ev.restrict(["q2", "q3"])
    assert sub.query_ids == ("q2", "q3")
    assert sub.means["mrr"] == 0.5
    assert sub.skipped_no_relevant == ("q3",)
    assert sub.micro == {}


def test_metrics_are_deduplicated_and_keep_their_order() -> None:
    ev = evaluate(RUN, QRELS, ["mrr", "RR", "P@2", "precision@2"])
    assert list(ev.means) == ["mrr", "precision@2"]
    assert ev.value("q1", "P@2") == 0.5


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="at least one metric"):
        evaluate(RUN, QRELS, [])
    with pytest.raises(ValueError, match="no_relevant must be"):
        evaluate(RUN, QRELS, ["mrr"], no_relevant="drop")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"run\['q'\] must be a sequence of doc id strings"):
        evaluate({"q": [1, 2]}, {"q": {"1": 1}}, ["mrr"])  # type: ignore[dict-item]


def test_r_precision_looks_at_the_top_r_whatever_else_is_asked() -> None:
    # R = 3 relevant; d1 and d2 are in the top 3: R-precision = 2/3 on its own, next to a
    # shallow metric (precision@1 must not cut the ranking to 1), and next to a full one.
    run = {"q": ["d1", "d2", "x"]}
    qrels = {"q": {"d1": 1, "d2": 1, "d3": 1}}
    for metrics in (["r_precision"], ["r_precision", "precision@1"], ["r_precision", "map"]):
        assert evaluate(run, qrels, metrics).means["r_precision"] == pytest.approx(2 / 3)


def test_forbidden_at_k_counts_the_documents_k_reaches_in_the_cutoff_unit() -> None:
    # As returned: a, a, a, f, g (f and g forbidden). Documents: a, f, g.
    run = {"q": ["a", "a", "a", "f", "g"]}
    qrels = {"q": {"a": 1}}
    metrics = ["forbidden@3", "forbidden@5", "recall@3"]
    forbidden = {"q": {"f", "g"}}
    by_results = evaluate(run, qrels, metrics, cutoff_unit="results", forbidden=forbidden)
    # first 3 results: a only -> 0/3; first 5 results: a, f, g -> 2/5
    assert by_results.means["forbidden@3"] == 0.0
    assert by_results.means["forbidden@5"] == pytest.approx(2 / 5)
    by_documents = evaluate(run, qrels, metrics, forbidden=forbidden)
    # first 3 documents: a, f, g -> 2/3
    assert by_documents.means["forbidden@3"] == pytest.approx(2 / 3)
