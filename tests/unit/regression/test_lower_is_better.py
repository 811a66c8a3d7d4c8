"""The regression rule on a lower-is-better metric (``stale@K``, ``forbidden@K``): a rise is
the worsening its budget bounds, a fall is an improvement, and the family, the interval and the
wording read the direction from the metric table. Deltas and p-values are hand-computed in the
comments (exact sign-flip enumeration: 2**n patterns of n changed queries).
"""

from __future__ import annotations

import pytest

import pytest_retrieval.scoring.stats  # noqa: F401  (numpy first)
from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.regression.outcome import RegressionOutcome
from pytest_retrieval.regression.pairs import CompareOptions
from pytest_retrieval.regression.rule import compare, compare_all
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot, label_hash
from pytest_retrieval.scoring.metrics import MetricSpec, metric_of

STAGE = "retriever"


def snap(rows: list[dict[str, float]]) -> Snapshot:
    """Queries q1.. with the given metric values, one stage."""
    metrics = tuple(dict.fromkeys(m for row in rows for m in row))
    queries = {
        f"q{i}": QuerySnapshot("tune", (), "labels", {STAGE: dict(row)}, {STAGE: {}}, {STAGE: ()})
        for i, row in enumerate(rows, start=1)
    }
    return Snapshot("f" * 64, {}, (STAGE,), metrics, queries)


def stale(values: list[float]) -> Snapshot:
    return snap([{"stale@2": v} for v in values])


def check(before: Snapshot, after: Snapshot, budget: str, **options: object) -> RegressionOutcome:
    return compare(
        before,
        after,
        parse_budget(budget),
        options=CompareOptions(**options),  # type: ignore[arg-type]
        baseline_path="base.json",
    )


def test_the_metric_table_orients_a_change_by_its_direction() -> None:
    stale_row, recall_row = MetricSpec("stale", 3).metric, MetricSpec("recall", 3).metric
    # A rise of stale@3 is a worsening (oriented below 0), a rise of recall@3 is not.
    assert (stale_row.oriented(0.25), recall_row.oriented(0.25)) == (-0.25, 0.25)
    assert str(stale_row.oriented(0.0)) == "0.0"  # never -0.0 (it would print as -0.0000)
    assert (stale_row.worsening, stale_row.worsened, stale_row.improving) == (
        "rise",
        "rose",
        "fall",
    )
    assert (recall_row.worsening, recall_row.improving, recall_row.bound_side) == (
        "drop",
        "rise",
        "upper",
    )
    assert metric_of("forbidden@10").bound_side == "lower"
    assert metric_of("not a metric").direction == "higher"  # a newer run's metric still reads


def test_a_budget_on_stale_or_forbidden_is_read_like_any_other() -> None:
    budget = parse_budget("stale@3 0.02")
    assert (str(budget.spec), budget.amount, budget.relative) == ("stale@3", 0.02, False)
    relative = parse_budget("forbidden@10 10%")
    assert (str(relative.spec), relative.amount, relative.relative) == ("forbidden@10", 0.1, True)


def test_six_queries_each_rising_half_a_point_are_a_significant_regression() -> None:
    outcome = check(stale([0.0] * 6), stale([0.5] * 6), "stale@2 0.02")
    # Six deltas of +0.5: only the all-plus pattern of 2**6 = 64 has a sum >= +3, so the
    # one-sided p-value of a rise is 1/64 = 0.015625 <= 0.05, and the rise 0.5 > 0.02.
    assert outcome.status == "regression"
    assert (outcome.delta, outcome.p_value, outcome.n) == (0.5, 1 / 64, 6)
    assert (outcome.baseline_mean, outcome.current_mean) == (0.0, 0.5)
    assert outcome.over_budget
    assert outcome.message.startswith(
        "regression: stale@2 rose by 0.5000 (budget 0.02): stale@2 0.0000 → 0.5000 "
        "(Δ +0.5000, one-sided 95% lower bound +0.5000, 90% two-sided interval "
        "[+0.5000, +0.5000], one-sided p = 0.01562, n = 6) [stage=retriever split=overall]; "
        "budget 0.02 = 0.0200"
    )
    # Every non-empty flipped set of +0.5 deltas has mean +0.5: the interval is the point, and
    # the bound a regression clears (the lower one, above 0) is stored as the check's bound.
    assert (outcome.upper_bound, outcome.ci, outcome.ci_collapsed) == (0.5, (0.5, 0.5), True)
    assert "queries that got worse (6), worst first:" in outcome.message
    assert "  q1: stale@2 0.0000 → 0.5000" in outcome.message
    assert outcome.better == ()


def test_the_worst_rise_is_listed_first() -> None:
    # q2 rises by 1.0, the five others by 0.5: sum +3.5. A pattern's sum is 0.5 a + s (a the
    # sum of the five 0.5-signs, s q2's sign); only a = 5, s = +1 reaches 3.5: p = 1/64.
    outcome = check(stale([0.0] * 6), stale([0.5, 1.0, 0.5, 0.5, 0.5, 0.5]), "stale@2 0.02")
    assert outcome.status == "regression"
    assert outcome.p_value == 1 / 64
    assert outcome.delta == pytest.approx(3.5 / 6)
    assert [d.query_id for d in outcome.worse] == ["q2", "q1", "q3", "q4", "q5", "q6"]


def test_six_queries_each_falling_half_a_point_are_an_improvement() -> None:
    outcome = check(stale([0.5] * 6), stale([0.0] * 6), "stale@2 0.02")
    # The test of a rise: the observed sum -3 is the smallest of all 64 patterns, p = 1; the
    # test of a fall: only the all-minus pattern is as extreme, p = 1/64.
    assert outcome.status == "improvement"
    assert outcome.passed
    assert (outcome.delta, outcome.p_value, outcome.p_value_improvement) == (-0.5, 1.0, 1 / 64)
    assert not outcome.over_budget
    assert outcome.message.startswith(
        "improvement: stale@2 0.5000 → 0.0000 (Δ -0.5000, one-sided 95% lower bound -0.5000, "
    )
    assert "so the ceiling moves down" in outcome.message
    assert "rose by" not in outcome.message
    assert [d.query_id for d in outcome.better] == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert outcome.worse == ()


def test_a_rise_within_the_budget_passes_and_one_beyond_it_that_is_noise_passes_as_noise() -> None:
    # Six rises of 0.01: significant (p = 1/64) but 0.01 <= 0.02.
    within = check(stale([0.0] * 6), stale([0.01] * 6), "stale@2 0.02")
    assert (within.status, within.p_value, within.over_budget) == ("pass", 1 / 64, False)
    assert within.message.startswith("no regression: stale@2 0.0000 → 0.0100 (Δ +0.0100, ")
    # Rises of 0.5 x3 and falls of 0.25 x2, three unmoved: mean +1/8 > 0.02. With a, b the
    # numbers of plus signs among the 0.5s and the 0.25s, a pattern sums to 0.5(2a - 3) +
    # 0.25(2b - 2) = a + 0.5b - 2; as extreme as the observed +1 when a + 0.5b >= 3: a = 3
    # (any b, 4 patterns) or a = 2, b = 2 (3): p = 7/32 > 0.05, with 5 changed queries.
    noise = check(
        stale([0.0, 0.0, 0.0, 0.5, 0.5, 0.2, 0.2, 0.2]),
        stale([0.5, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2]),
        "stale@2 0.02",
    )
    assert (noise.status, noise.p_value, noise.over_budget) == ("pass", 7 / 32, True)
    assert (
        "the rise exceeds the budget but is not significant at alpha 0.05 (noise-level change)"
        in noise.message
    )


def test_a_relative_budget_over_a_baseline_at_zero_allows_no_rise() -> None:
    # 10% of a baseline mean of 0 is 0: the significant rise of 0.01 (p = 1/64) fails it.
    outcome = check(stale([0.0] * 6), stale([0.01] * 6), "stale@2 10%")
    assert (outcome.status, outcome.budget) == ("regression", 0.0)
    assert "stale@2 rose by 0.0100 (budget 10% of the baseline): " in outcome.message
    assert "budget 10% of the baseline = 0.0000" in outcome.message
    # Over a baseline of 0.5 the same budget allows a rise of 0.05: a rise of 0.04 passes.
    assert check(stale([0.5] * 6), stale([0.54] * 6), "stale@2 10%").status == "pass"


def test_a_beyond_budget_test_of_a_rise_needs_it_significantly_larger_than_the_budget() -> None:
    # Six rises of 0.5, six unmoved: mean rise 0.25 > 0.15. Shifted (oriented) deltas: six of
    # -0.35 and six of +0.15, as for a drop of the same size (test_family's hand count):
    # (64 + 252 + 105) / 4096 = 421/4096 > 0.05.
    before, after = stale([0.0] * 12), stale([0.5] * 6 + [0.0] * 6)
    assert check(before, after, "stale@2 0.15").status == "regression"
    beyond = check(before, after, "stale@2 0.15", budget_test="beyond-budget")
    assert beyond.status == "pass"
    assert beyond.p_value == pytest.approx(421 / 4096, abs=1e-12)
    assert "p (rise > budget)" in beyond.message
    assert "the rise exceeds the budget but is not significantly larger than it" in beyond.message


def test_the_family_reads_a_rise_of_stale_and_a_drop_of_ndcg_as_the_same_worsening() -> None:
    # Each query loses 0.5 of ndcg@10 and gains 0.5 of stale@2: oriented, both checks have the
    # same six deltas of -0.5, so maxT sees one statistic and adjusts like one check (1/64).
    # Were the rise not oriented, its one-sided p-value of a drop would be 1.
    before = snap([{"ndcg@10": 1.0, "stale@2": 0.0}] * 6)
    after = snap([{"ndcg@10": 0.5, "stale@2": 0.5}] * 6)
    budgets = [parse_budget("ndcg@10 0.02"), parse_budget("stale@2 0.02")]
    family, outcomes = compare_all(before, after, budgets)
    assert family.size == 2
    assert [o.p_value_raw for o in outcomes] == pytest.approx([1 / 64, 1 / 64], abs=1e-12)
    assert [o.p_value for o in outcomes] == pytest.approx([1 / 64, 1 / 64], abs=1e-12)
    assert [o.status for o in outcomes] == ["regression", "regression"]
    _, holm = compare_all(before, after, budgets, options=CompareOptions(multiplicity="holm"))
    assert [o.p_value for o in holm] == pytest.approx([1 / 32, 1 / 32], abs=1e-12)


def test_a_baseline_without_the_leak_metric_is_named_with_the_fix() -> None:
    outcome = check(snap([{"ndcg@10": 1.0}] * 6), stale([0.5] * 6), "stale@2 0.02")
    assert outcome.status == "incomparable"
    assert outcome.message == (
        "base.json has no stale@2; refresh the baseline so it records every metric you budget"
    )


def test_the_label_hash_changes_with_the_forbidden_list_and_not_without_one() -> None:
    plain = label_hash("Hi?", {"b": 2, "a": 0}, ["x"], "tune")
    assert plain == "9850cb89be7305a9"  # the hash a query without forbidden documents had
    assert label_hash("Hi?", {"b": 2, "a": 0}, ["x"], "tune", forbidden=()) == plain
    listed = label_hash("Hi?", {"b": 2, "a": 0}, ["x"], "tune", forbidden=["d2", "d1"])
    assert listed != plain
    assert label_hash("Hi?", {"b": 2, "a": 0}, ["x"], "tune", forbidden=["d1", "d2"]) == listed
    assert label_hash("Hi?", {"b": 2, "a": 0}, ["x"], "tune", forbidden=["d1"]) != listed
