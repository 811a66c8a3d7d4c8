"""MetricSpec: one spelling per metric, aliases, and errors that suggest the fix."""

from __future__ import annotations

import pytest

from pytest_retrieval.errors import InputError
from pytest_retrieval.metrics import MetricSpec

CANONICAL = [
    "recall@50",
    "precision@5",
    "hit_rate@5",
    "ndcg@10",
    "ndcg",
    "map@100",
    "map",
    "mrr",
    "mrr@10",
    "r_precision",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_the_canonical_spelling_round_trips(text: str) -> None:
    assert str(MetricSpec.parse(text)) == text
    spec = MetricSpec.parse(text)
    assert MetricSpec.parse(str(spec)) == spec


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("P@5", "precision@5"),
        ("nDCG@10", "ndcg@10"),
        ("R@50", "recall@50"),
        ("success@5", "hit_rate@5"),
        ("AP", "map"),
        ("AP@100", "map@100"),
        ("RR", "mrr"),
        ("RR@10", "mrr@10"),
        ("Rprec", "r_precision"),
        ("MAP@100", "map@100"),
        ("Recall@50", "recall@50"),
        ("P_5", "precision@5"),
        ("recall_100", "recall@100"),
        ("ndcg_cut_10", "ndcg@10"),
        ("map_cut_100", "map@100"),
        ("success_10", "hit_rate@10"),
        ("recip_rank", "mrr"),
        (" ndcg@10 ", "ndcg@10"),
    ],
)
def test_aliases_parse_to_the_canonical_spelling(alias: str, canonical: str) -> None:
    assert str(MetricSpec.parse(alias)) == canonical


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [("recal@5", "recall@5"), ("ndgc@10", "ndcg@10"), ("precison@3", "precision@3")],
)
def test_a_misspelled_metric_suggests_the_nearest_valid_spelling(
    text: str, suggestion: str
) -> None:
    with pytest.raises(InputError) as info:
        MetricSpec.parse(text)
    assert f"did you mean {suggestion!r}" in str(info.value)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("text", ["recall@0", "recall@-1", "recall@ten", "ndcg@", "map@1.5"])
def test_a_bad_cutoff_is_named_in_the_error(text: str) -> None:
    with pytest.raises(InputError, match="is not a positive integer"):
        MetricSpec.parse(text)


def test_recall_without_a_cutoff_asks_for_one() -> None:
    with pytest.raises(InputError, match=r"recall needs a cutoff.*recall@10"):
        MetricSpec.parse("recall")


def test_r_precision_refuses_a_cutoff() -> None:
    with pytest.raises(InputError, match="takes no cutoff"):
        MetricSpec.parse("r_precision@5")


def test_an_unknown_name_lists_the_valid_metrics() -> None:
    with pytest.raises(InputError, match="valid metrics: recall@K"):
        MetricSpec.parse("bleu@4")


def test_specs_sort_by_name_then_cutoff() -> None:
    specs = [MetricSpec.parse(t) for t in ["mrr", "ndcg@10", "recall@50", "recall@5", "map"]]
    ordered = [str(s) for s in sorted(specs, key=lambda s: s.sort_key)]
    assert ordered == ["recall@5", "recall@50", "ndcg@10", "map", "mrr"]


def test_constructing_a_spec_directly_validates_it() -> None:
    with pytest.raises(ValueError, match="needs a cutoff"):
        MetricSpec("precision")
    with pytest.raises(ValueError, match="unknown metric name"):
        MetricSpec("bleu", 4)
