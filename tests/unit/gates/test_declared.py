"""One line grammar for thresholds and budgets (declared.py): the same option rules for both."""

from __future__ import annotations

import pytest

from pytest_retrieval.errors import InputError
from pytest_retrieval.gates.declared import expand_slices, parse_budget, parse_threshold


@pytest.mark.parametrize("key", ["stage", "split", "slice"])
def test_a_budget_naming_an_option_twice_is_refused_like_a_threshold(key: str) -> None:
    line = f"ndcg@10 0.02 {key}=a {key}=b"
    with pytest.raises(InputError, match=f"{key} is given twice") as budget_error:
        parse_budget(line, source="retrieval-gates.yaml", line_number=7)
    assert "retrieval-gates.yaml:7" in str(budget_error.value)
    with pytest.raises(InputError, match=f"{key} is given twice"):
        parse_threshold(f"ndcg@10 >= 0.5 {key}=a {key}=b")


def test_budgets_and_thresholds_refuse_the_same_unknown_option_with_the_same_fix() -> None:
    with pytest.raises(InputError) as budget_error:
        parse_budget("ndcg@10 0.02 slcie=a")
    with pytest.raises(InputError) as threshold_error:
        parse_threshold("ndcg@10 >= 0.5 slcie=a")
    expected = (
        "options are stage=NAME, split=NAME and slice=NAME (slice=* for every slice, "
        "slice=KEY:VALUE by context value)"
    )
    assert expected in str(budget_error.value)
    assert expected in str(threshold_error.value)


def test_slice_star_expands_budgets_and_thresholds_the_same_way() -> None:
    budget = parse_budget("ndcg@10 2% stage=reranker slice=*")
    threshold = parse_threshold("recall@5 >= 0.5 split=tune slice=*")
    budgets = expand_slices(budget, ["a", "b"])
    thresholds = expand_slices(threshold, ["a", "b"])
    assert [b.selection.slice for b in budgets] == ["a", "b"]
    assert {b.selection.stage for b in budgets} == {"reranker"}
    assert all(b.relative and b.amount == pytest.approx(0.02) for b in budgets)
    assert [t.selection.slice for t in thresholds] == ["a", "b"]
    assert {t.selection.split for t in thresholds} == {"tune"}
    assert expand_slices(parse_budget("mrr 0.01 slice=a"), ["a", "b"])[0].selection.slice == "a"
