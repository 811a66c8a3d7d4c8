"""The design seed's worked examples, reproduced exactly at 4 decimals."""

from __future__ import annotations

from statistics import mean

import pytest

from pytest_retrieval.scoring.evaluate import evaluate
from pytest_retrieval.scoring.metrics import (
    average_precision,
    dcg,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

# Example 5 of the seed: three queries, K = 5.
GOLDEN = [
    (["A", "B", "C", "D", "E"], {"A", "C"}),
    (["C", "D", "B", "E", "A"], {"B"}),
    (["A", "B", "C", "D", "E"], {"D", "E"}),
]
# The seed's printed output, row by row: recall, precision, RR, AP, NDCG.
EXPECTED_ROWS = [
    "1.0 0.4 1.0 0.8333 0.9197",
    "1.0 0.2 0.3333 0.3333 0.5",
    "1.0 0.4 0.25 0.325 0.5013",
]
EXPECTED_MEAN = "MEAN 1.0 0.3333 0.5278 0.4972 0.6403"


def _row(retrieved: list[str], relevant: set[str]) -> list[float]:
    values = [
        recall_at_k(retrieved, relevant, 5),
        precision_at_k(retrieved, relevant, 5),
        reciprocal_rank(retrieved, relevant),
        average_precision(retrieved, relevant, 5),
        ndcg_at_k(retrieved, {d: 1 for d in relevant}, 5),
    ]
    assert all(v is not None for v in values)
    return [float(v) for v in values if v is not None]


@pytest.mark.parametrize(("query", "expected"), list(zip(GOLDEN, EXPECTED_ROWS)))
def test_example_5_prints_the_seed_row_for_each_query(
    query: tuple[list[str], set[str]], expected: str
) -> None:
    printed = " ".join(str(round(v, 4)) for v in _row(*query))
    assert printed == expected


def test_example_5_prints_the_seed_means() -> None:
    rows = [_row(*q) for q in GOLDEN]
    printed = "MEAN " + " ".join(str(round(mean(col), 4)) for col in zip(*rows))
    assert printed == EXPECTED_MEAN


def test_batch_evaluate_reproduces_the_example_5_means() -> None:
    run = {f"q{i}": r for i, (r, _) in enumerate(GOLDEN)}
    qrels = {f"q{i}": dict.fromkeys(rel, 1) for i, (_, rel) in enumerate(GOLDEN)}
    means = evaluate(run, qrels, ["recall@5", "precision@5", "mrr", "map@5", "ndcg@5"]).means
    rounded = [round(v, 4) for v in means.values() if v is not None]
    assert rounded == [1.0, 0.3333, 0.5278, 0.4972, 0.6403]


def test_example_1_recall_and_precision_by_hand() -> None:
    retrieved, relevant = ["A", "B", "C", "D", "E"], {"A", "C"}
    assert recall_at_k(retrieved, relevant, 5) == 1.0
    assert precision_at_k(retrieved, relevant, 5) == 0.4
    assert precision_at_k(retrieved, relevant, 1) == 1.0


def test_example_2_reciprocal_rank_of_a_first_hit_at_rank_3() -> None:
    assert round(reciprocal_rank(["X", "Y", "A", "C"], {"A", "C"}), 4) == 0.3333
    assert recall_at_k(["X", "Y", "A", "C"], {"A", "C"}, 4) == 1.0


def test_example_3_binary_ndcg_and_its_reordering() -> None:
    grades = {"A": 1, "C": 1}
    assert round(dcg([1, 0, 1, 0, 0]), 4) == 1.5
    assert round(dcg([1, 1]), 4) == 1.6309
    assert round(ndcg_at_k(["A", "B", "C", "D", "E"], grades, 5) or 0, 4) == 0.9197
    assert round(ndcg_at_k(["B", "A", "C", "D", "E"], grades, 5) or 0, 4) == 0.6934
    assert round(ndcg_at_k(["C", "B", "A", "D", "E"], grades, 5) or 0, 4) == 0.9197


def test_example_4_graded_ndcg() -> None:
    grades = {"A": 3, "B": 2, "D": 1, "C": 0}
    assert round(dcg([3, 2, 0, 1]), 4) == 9.3235
    assert round(dcg([3, 2, 1, 0]), 4) == 9.3928
    assert round(ndcg_at_k(["A", "B", "C", "D"], grades, 4) or 0, 4) == 0.9926
