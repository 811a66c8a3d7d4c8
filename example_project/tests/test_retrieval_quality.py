"""Retrieval quality gates of the Acme help centre.

Recall is gated on the retriever's candidate list (what the reranker can work with at all);
precision and NDCG at 5 on the reranker's final list (what reaches the LLM's context).
"""

from __future__ import annotations

from pytest_retrieval import (
    assert_hit_rate_at,
    assert_mrr,
    assert_ndcg_at,
    assert_precision_at,
    assert_recall_at,
)


def test_candidates_contain_the_evidence() -> None:
    assert_recall_at(50, stage="retriever") >= 0.85


def test_paraphrases_still_reach_the_candidates() -> None:
    assert_recall_at(50, stage="retriever", slice="paraphrase") >= 0.70


def test_the_context_is_mostly_on_topic() -> None:
    assert_ndcg_at(5) >= 0.70
    assert_precision_at(5) >= 0.25


def test_the_first_answer_is_usually_right() -> None:
    assert_hit_rate_at(5) >= 0.85
    assert_mrr() >= 0.65


def test_multi_hop_questions_find_their_evidence() -> None:
    assert_recall_at(10, slice="multi-hop") >= 0.60
