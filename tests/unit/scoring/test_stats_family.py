"""Family-wise adjustment (maxT, minP, Holm), matching intervals, budget test, detectable drop.

Expected values are worked out by hand in the comments (every sign pattern listed), or by an
independent brute force over all sign patterns written here, never taken from the code's output.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from pytest_retrieval.scoring.stats import (
    budget_test,
    delta_interval,
    detectable_drop,
    paired_comparison,
)
from pytest_retrieval.scoring.stats.multiplicity import (
    FamilyItem,
    adjust_family,
    describe_family,
    holm,
)


def item(name: str, deltas: dict[str, float], shift: float = 0.0) -> FamilyItem:
    return FamilyItem(name, tuple(deltas), tuple(deltas.values()), shift)


# --- hand-enumerated cases ---------------------------------------------------------------------

# Case 1: three queries, two checks over the same queries.
#   A: q1 -0.3, q2 -0.2, q3 +0.1   |d|^2 sum 0.14   observed sum -0.4, T_A = 0.4/sqrt(.14) = 1.069
#   B: q1 -0.1, q2 -0.4, q3  0     |d|^2 sum 0.17   observed sum -0.5, T_B = 0.5/sqrt(.17) = 1.213
# The eight joint patterns (s1, s2, s3), sums of A and B, and T = -sum/norm:
#   + + + : A -0.4 (1.069)  B -0.5 (1.213)     - + + : A  0.2 (-0.535) B -0.3 (0.728)
#   + + - : A -0.6 (1.604)  B -0.5 (1.213)     - + - : A  0.0 ( 0    ) B -0.3 (0.728)
#   + - + : A  0.0 (0    )  B  0.3 (-0.728)    - - + : A  0.6 (-1.604) B  0.5 (-1.213)
#   + - - : A -0.2 (0.535)  B  0.3 (-0.728)    - - - : A  0.4 (-1.069) B  0.5 (-1.213)
# Raw: A has T >= 1.069 in 2 patterns (+++, ++-): 2/8; B has T >= 1.213 in 2: 2/8.
# maxT: B ranks first; max(T_A, T_B) >= 1.213 in +++ (1.213) and ++- (1.604): 2/8. Then A alone:
# 2/8. Both 0.25. Holm: 2 * 0.25 = 0.5 for both. The checks move together, so maxT pays nothing.
CASE_1 = [
    item("A", {"q1": -0.3, "q2": -0.2, "q3": 0.1}),
    item("B", {"q1": -0.1, "q2": -0.4, "q3": 0.0}),
]

# Case 2: four queries; the slice check C covers q1, q2 only.
#   A: -0.1, -0.2, -0.3, -0.4 (all four queries): sum -1.0 is the smallest of all 16 sums, so raw
#      p = 1/16; T_A = 1/sqrt(0.30) = 1.826.
#   C: q1 -0.2, q2 +0.1: sums over (s1, s2): ++ -0.1, +- -0.3, -+ 0.3, -- 0.1; <= -0.1 in 2 of 4:
#      raw p = 1/2 (8 of the 16 joint patterns). T_C at most 0.3/sqrt(0.05) = 1.342 < 1.826.
# maxT: A first: max(T_A, T_C) >= 1.826 only where T_A is (the observed pattern): 1/16. C alone:
# 8/16. Holm: A 2 * 1/16 = 1/8, C max(1/8, 1/2) = 1/2.
CASE_2 = [
    item("A", {"q1": -0.1, "q2": -0.2, "q3": -0.3, "q4": -0.4}),
    item("C", {"q1": -0.2, "q2": 0.1}),
]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (CASE_1, {"none": [0.25, 0.25], "maxt": [0.25, 0.25], "holm": [0.5, 0.5]}),
        (CASE_2, {"none": [1 / 16, 0.5], "maxt": [1 / 16, 0.5], "holm": [1 / 8, 0.5]}),
    ],
    ids=["same-queries", "slice-subset"],
)
def test_adjusted_p_values_match_the_hand_enumeration(
    items: list[FamilyItem], expected: dict[str, list[float]]
) -> None:
    for method, values in expected.items():
        results = adjust_family(items, method, alpha=0.05)  # type: ignore[arg-type]
        assert [r.p_value for r in results] == pytest.approx(values, abs=1e-12), method
        assert all(r.test == "exact" and r.family_size == len(items) for r in results)
        assert [r.raw_p_value for r in results] == pytest.approx(expected["none"], abs=1e-12)


def test_minp_matches_the_hand_enumeration_of_case_one() -> None:
    # Per-pattern p-values (share of the 8 patterns with T at least as large), from the table:
    #   A: +++ 2/8, ++- 1/8, +-+ 5/8, +-- 3/8, -++ 6/8, -+- 5/8, --+ 8/8, --- 7/8
    #   B: +++ 2/8, ++- 2/8, +-+ 6/8, +-- 6/8, -++ 4/8, -+- 4/8, --+ 8/8, --- 8/8
    # A ranks first (tie at 2/8, input order); min(pA, pB) <= 2/8 in +++ and ++-: 2/8. Then B: 2/8.
    results = adjust_family(CASE_1, "minp")
    assert [r.p_value for r in results] == pytest.approx([0.25, 0.25], abs=1e-12)


def test_holm_matches_the_hand_formula() -> None:
    # Sorted 0.01, 0.03, 0.04, 0.2: 4 * 0.01 = 0.04; 3 * 0.03 = 0.09; max(0.09, 2 * 0.04) = 0.09;
    # max(0.09, 0.2) = 0.2. Back in input order.
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm([0.6, 0.5]) == pytest.approx([1.0, 1.0])


def brute_force_maxt(items: list[FamilyItem]) -> list[Fraction]:
    """Step-down maxT over all joint sign patterns, in exact rationals (independent reference)."""
    queries = sorted({q for it in items for q in it.query_ids})
    values = [{q: Fraction(str(d)) for q, d in zip(it.query_ids, it.deltas)} for it in items]
    norms = [math.sqrt(sum(float(v) ** 2 for v in vals.values())) or 1.0 for vals in values]

    def stats(signs: dict[str, int]) -> list[float]:
        return [
            float(-sum((signs[q] * v for q, v in vals.items()), Fraction(0))) / norm
            for vals, norm in zip(values, norms)
        ]

    observed = stats({q: 1 for q in queries})
    patterns = [
        stats(dict(zip(queries, signs)))
        for signs in itertools.product((1, -1), repeat=len(queries))
    ]
    order = sorted(range(len(items)), key=lambda j: -observed[j])
    adjusted = [Fraction(0)] * len(items)
    running = Fraction(0)
    for rank, j in enumerate(order):
        rest = order[rank:]
        hits = sum(1 for t in patterns if max(t[i] for i in rest) >= observed[j] - 1e-12)
        running = max(running, Fraction(hits, len(patterns)))
        adjusted[j] = running
    return adjusted


def test_maxt_matches_a_brute_force_reference_on_random_small_families() -> None:
    rng = np.random.default_rng(13)
    for _ in range(25):
        n = int(rng.integers(3, 7))
        ids = [f"q{i}" for i in range(n)]
        base = np.round(rng.normal(-0.1, 0.2, n), 1)
        items = [
            item("a", dict(zip(ids, base.tolist()))),
            item("b", dict(zip(ids, np.round(base + rng.normal(0, 0.1, n), 1).tolist()))),
            item("c", dict(zip(ids[1:], np.round(base[1:] * 0.5, 2).tolist()))),
        ]
        got = [r.p_value for r in adjust_family(items, "maxt")]
        assert got == pytest.approx([float(p) for p in brute_force_maxt(items)], abs=1e-12)


def test_raw_p_values_equal_the_per_check_exact_test() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(4, 16))
        ids = [f"q{i}" for i in range(n)]
        deltas = np.round(rng.normal(-0.05, 0.2, n) * (rng.random(n) < 0.6), 2)
        items = [item("x", dict(zip(ids, deltas.tolist()))), item("y", {"q0": 0.5, "q1": -0.1})]
        single = paired_comparison([0.0] * n, deltas.tolist()).p_value
        assert adjust_family(items, "none")[0].raw_p_value == pytest.approx(single, abs=1e-12)


def test_a_budget_shift_makes_every_query_take_part() -> None:
    # d + 0.1: (-0.2, +0.1). Sums over signs: -0.1 (observed), -0.3, +0.3, +0.1: <= -0.1 in 2/4.
    shifted = adjust_family([item("s", {"q1": -0.3, "q2": 0.0}, shift=0.1)], "none")[0]
    assert shifted.raw_p_value == pytest.approx(0.5)
    assert shifted.n_nonzero == 2
    # Unshifted, only q1 takes part: 1/2 as well, but from one query.
    assert adjust_family([item("s", {"q1": -0.3, "q2": 0.0})], "none")[0].n_nonzero == 1
    # Three drops of 0.3 against a budget of 0.1: all three shifted deltas negative, p = 1/8.
    p, significant = budget_test([-0.3, -0.3, -0.3], 0.1, alpha=0.2)
    assert p == pytest.approx(1 / 8)
    assert significant


def test_monte_carlo_family_agrees_with_exact_enumeration() -> None:
    rng = np.random.default_rng(8)
    ids = [f"q{i}" for i in range(14)]
    base = rng.normal(-0.1, 0.2, 14)
    items = [
        item("a", dict(zip(ids, base.tolist()))),
        item("b", dict(zip(ids, (base**3).tolist()))),
    ]
    exact = adjust_family(items, "maxt")
    drawn = adjust_family(items, "maxt", exact_cutoff=0, resamples=20_000, seed=1)
    assert drawn[0].test == "monte-carlo"
    assert drawn[0].resamples == 20_000
    for e, d in zip(exact, drawn):
        assert (
            abs(e.p_value - d.p_value) < 4 * math.sqrt(e.p_value * (1 - e.p_value) / 20_000) + 1e-4
        )


def test_family_wise_false_alarms_stay_at_alpha_with_maxt_and_exceed_it_without() -> None:
    rng = np.random.default_rng(2024)
    trials, n, alpha = 300, 40, 0.05
    red = {"maxt": 0, "holm": 0, "none": 0}
    ids = [f"q{i}" for i in range(n)]
    for trial in range(trials):
        # Six weakly correlated checks with no true change (symmetric deltas).
        common = rng.normal(0, 0.1, n)
        items = [
            item(f"c{j}", dict(zip(ids, (common * 0.3 + rng.normal(0, 0.1, n)).tolist())))
            for j in range(6)
        ]
        for method in red:
            results = adjust_family(items, method, alpha=alpha, resamples=500, seed=trial)  # type: ignore[arg-type]
            red[method] += any(r.significant for r in results)
    error = 3 * math.sqrt(alpha * (1 - alpha) / trials)
    assert red["maxt"] / trials <= alpha + error
    assert red["holm"] / trials <= alpha + error
    assert red["none"] / trials > 2 * alpha  # the check above can fail: unadjusted, it does


def test_bad_family_input_names_the_check() -> None:
    with pytest.raises(ValueError, match=r"'bad'.*2 query ids but 1 deltas"):
        adjust_family([FamilyItem("bad", ("a", "b"), (0.1,))])
    with pytest.raises(ValueError, match=r"'dup'.*repeated: a"):
        adjust_family([FamilyItem("dup", ("a", "a"), (0.1, 0.2))])
    with pytest.raises(ValueError, match=r"'nan'.*queries b"):
        adjust_family([FamilyItem("nan", ("a", "b"), (0.1, float("nan")))])
    with pytest.raises(ValueError, match="multiplicity method"):
        adjust_family(CASE_1, "bonferroni")  # type: ignore[arg-type]
    assert adjust_family([]) == []


def test_the_family_is_named_once() -> None:
    assert describe_family(7, 0.05, "maxt").startswith(
        "7 regression checks, family-wise alpha 0.05, maxT"
    )
    assert "no family-wise correction" in describe_family(1, 0.05, "none")


# --- intervals that match the test ------------------------------------------------------------


def test_the_upper_bound_excludes_zero_exactly_when_the_test_rejects() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(3, 60))
        deltas = np.round(rng.normal(-0.05, 0.2, n) * (rng.random(n) < rng.random()), 2)
        interval = delta_interval(deltas, alpha=0.05)
        assert (interval.high < 0) == (interval.p_value <= 0.05)
        if interval.method == "exact":
            exact = paired_comparison([0.0] * n, deltas.tolist()).p_value
            assert interval.p_value == pytest.approx(exact, abs=1e-9)
        _p, significant = budget_test(deltas, 0.02, alpha=0.05)
        assert significant == (interval.high < -0.02 - 1e-12) or abs(interval.high + 0.02) < 1e-9


def test_the_bound_of_three_drops_is_hand_computable() -> None:
    # Deltas -0.3, -0.1, -0.2 (n = 3, alpha = 1/8 + tiny). Flipped-set means of the 7 non-empty
    # sets: {1} -0.3, {2} -0.1, {3} -0.2, {1,2} -0.2, {1,3} -0.25, {2,3} -0.15, {1,2,3} -0.2.
    # Each weighs 1/8, the empty set 1/8 too. p(theta) = 1/8 + (1/8) #{means >= theta}: kept
    # while that exceeds alpha, i.e. while at least one mean is >= theta: upper bound -0.1.
    # From below, at least one mean <= theta: lower bound -0.3.
    interval = delta_interval([-0.3, -0.1, -0.2], alpha=0.126)
    assert interval.high == pytest.approx(-0.1)
    assert interval.low == pytest.approx(-0.3)
    assert interval.p_value == pytest.approx(1 / 8)
    assert interval.upper_level == pytest.approx(0.874)
    assert "one-sided 87% upper bound -0.1000" in interval.describe()


def test_an_interval_over_unchanged_queries_collapses_and_says_why() -> None:
    interval = delta_interval([0.0] * 12)
    assert interval.collapsed
    assert interval.low == interval.high == 0.0
    assert interval.reason is not None
    assert "no query changed" in interval.reason
    few = delta_interval([0.0] * 20 + [-0.5, -0.4])
    assert few.high >= 0.0
    assert few.reason is not None
    assert "only 2 of 22" in few.reason


def test_the_upper_bound_covers_at_about_the_nominal_rate_at_small_n() -> None:
    rng = np.random.default_rng(99)
    trials, covered = 400, 0
    for trial in range(trials):
        deltas = rng.normal(-0.02, 0.1, 10)
        covered += delta_interval(deltas, alpha=0.05, seed=trial).high >= -0.02
    assert abs(covered / trials - 0.95) < 3 * math.sqrt(0.95 * 0.05 / trials)


# --- detectable drop ----------------------------------------------------------------------------


def test_no_drop_is_detectable_when_too_few_queries_changed() -> None:
    result = detectable_drop([0.0] * 96 + [-0.5, -0.2, 0.3, -0.1])
    # 4 changed: smallest p-value 1/16 > 0.05.
    assert result.drop is None
    assert result.n_changed == 4
    assert result.reason is not None
    assert "at least 5 changed queries" in result.reason


def test_the_detectable_drop_on_sparse_changes_has_the_power_it_claims() -> None:
    # 8 changed queries of 100. Shift them by the claimed per-query amount and check by
    # simulation with the real test that about 80% of such comparisons are significant.
    rng = np.random.default_rng(4)
    observed = np.zeros(100)
    observed[:8] = rng.normal(0.0, 0.2, 8)
    claim = detectable_drop(observed)
    assert claim.drop is not None
    per_query = claim.drop * 100 / 8
    spread = float(np.std(observed[:8], ddof=1))
    hits = 0
    for _ in range(300):
        deltas = np.zeros(100)
        deltas[:8] = -per_query + spread * rng.standard_normal(8)
        hits += paired_comparison([0.0] * 100, deltas.tolist()).significant
    assert abs(hits / 300 - 0.8) < 0.08
    # The broad formula (z_.95 + z_.8) sd / sqrt(n) over all 100 deltas claims less than that.
    assert claim.drop > 2.486 * float(np.std(observed, ddof=1)) / 10


def test_the_detectable_drop_of_broad_changes_matches_the_normal_formula() -> None:
    rng = np.random.default_rng(6)
    deltas = rng.normal(0.0, 0.1, 400)
    sd = float(np.std(deltas, ddof=1))
    # (z_.95 + z_.8) sd / sqrt(n), with the flip spread's x**2 term negligible at n = 400.
    assert detectable_drop(deltas).drop == pytest.approx(2.486 * sd / 20, rel=0.01)
