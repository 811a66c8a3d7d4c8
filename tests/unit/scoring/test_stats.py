"""Tests of pytest_retrieval.scoring.stats: bootstrap intervals, the sign-flip test and the MDE."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

from pytest_retrieval.scoring.stats import (
    EXACT_CUTOFF,
    Alternative,
    PairedComparison,
    bootstrap_ci,
    conservative_delta_sd,
    detectable_drop,
    minimum_detectable_drop,
    paired_comparison,
)

ALTERNATIVES: tuple[Alternative, ...] = ("less", "greater", "two-sided")


def brute_force_p_value(deltas: list[str], alternative: Alternative) -> Fraction:
    """Exact sign-flip p-value over all 2**n sign patterns, zeros included, in exact rationals.

    Independent of the implementation on purpose: it flips zeros too (which only repeats each
    pattern), and decimal strings become exact fractions, so ties are ties without any tolerance.
    """
    values = [Fraction(d) for d in deltas]
    observed = sum(values, Fraction(0))
    hits = 0
    patterns = list(itertools.product((1, -1), repeat=len(values)))
    for signs in patterns:
        total = sum((s * v for s, v in zip(signs, values, strict=True)), Fraction(0))
        if alternative == "less":
            hits += total <= observed
        elif alternative == "greater":
            hits += total >= observed
        else:
            hits += abs(total) >= abs(observed)
    return Fraction(hits, len(patterns))


def compare_deltas(deltas: list[float], **options: Any) -> PairedComparison:
    """A comparison whose deltas are exactly ``deltas`` (baseline all zero)."""
    return paired_comparison([0.0] * len(deltas), deltas, **options)


# --- bootstrap confidence intervals ------------------------------------------------------------


def test_a_95_percent_interval_covers_the_true_mean_at_about_the_nominal_rate() -> None:
    rng = np.random.default_rng(20240501)
    trials = 300
    covered = 0
    for trial in range(trials):
        sample = rng.binomial(1, 0.6, size=50).astype(float)
        ci = bootstrap_ci(sample, resamples=2_000, seed=trial)
        covered += ci.low <= 0.6 <= ci.high
    # A correct 95% interval lands near 0.94 here; a 50% or a too-narrow interval falls far below.
    assert 0.90 <= covered / trials <= 0.99


def test_an_interval_at_lower_confidence_covers_less_often() -> None:
    rng = np.random.default_rng(7)
    trials = 300
    covered = 0
    for trial in range(trials):
        sample = rng.beta(2.0, 5.0, size=50)
        ci = bootstrap_ci(sample, confidence=0.5, resamples=2_000, seed=trial)
        covered += ci.low <= 2.0 / 7.0 <= ci.high
    assert 0.40 <= covered / trials <= 0.60


def test_the_interval_width_matches_normal_theory_for_a_large_sample() -> None:
    sample = np.random.default_rng(3).beta(2.0, 5.0, size=2_000)
    ci = bootstrap_ci(sample, resamples=4_000, seed=1)
    expected = 2 * NormalDist().inv_cdf(0.975) * np.std(sample, ddof=1) / math.sqrt(sample.size)
    # Catches an interval of the wrong statistic or scale (e.g. of the values, not of the mean).
    assert ci.width == pytest.approx(expected, rel=0.1)
    assert ci.mean == pytest.approx(float(np.mean(sample)))


def test_the_interval_contains_the_sample_mean() -> None:
    rng = np.random.default_rng(11)
    for seed in range(20):
        sample = rng.exponential(size=int(rng.integers(2, 40)))
        ci = bootstrap_ci(sample, resamples=500, seed=seed)
        assert ci.low <= float(np.mean(sample)) <= ci.high
        assert ci.low < ci.high


def test_the_interval_of_a_constant_vector_collapses_onto_the_constant() -> None:
    ci = bootstrap_ci([0.1] * 7)
    assert (ci.low, ci.mean, ci.high) == (0.1, 0.1, 0.1)
    assert ci.width == 0.0


def test_the_interval_of_a_single_value_collapses_onto_it() -> None:
    ci = bootstrap_ci([0.42])
    assert (ci.low, ci.mean, ci.high, ci.n) == (0.42, 0.42, 0.42, 1)


def test_an_interval_of_no_values_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci([])


def test_the_interval_records_its_settings() -> None:
    ci = bootstrap_ci([0.0, 1.0, 1.0, 0.0, 1.0], confidence=0.9, resamples=123, seed=5)
    assert (ci.confidence, ci.n, ci.resamples) == (0.9, 5, 123)


def test_the_same_seed_gives_a_bit_identical_interval_and_another_seed_does_not() -> None:
    sample = np.random.default_rng(0).random(300).tolist()
    assert bootstrap_ci(sample, seed=4) == bootstrap_ci(sample, seed=4)
    assert bootstrap_ci(sample, seed=4) != bootstrap_ci(sample, seed=5)


def test_a_large_interval_resamples_in_several_chunks_without_changing_shape() -> None:
    # 3,000 values x 2,000 resamples exceeds one chunk, so the chunk loop must stitch results.
    sample = np.random.default_rng(9).random(3_000)
    ci = bootstrap_ci(sample, resamples=2_000, seed=2)
    assert ci.low < float(np.mean(sample)) < ci.high
    expected = 2 * NormalDist().inv_cdf(0.975) * np.std(sample, ddof=1) / math.sqrt(sample.size)
    assert ci.width == pytest.approx(expected, rel=0.15)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([0.1, float("nan")], "NaN"),
        ([0.1, None], "NaN"),
        ([0.1, float("inf")], "infinite"),
        ([[0.1, 0.2]], "one-dimensional"),
        (["a"], "numbers"),
    ],
)
def test_undefined_values_are_rejected_with_a_clear_message(values: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [{"confidence": 1.0}, {"confidence": 0.0}, {"resamples": 0}, {"seed": -1}],
)
def test_out_of_range_bootstrap_options_are_rejected(options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        bootstrap_ci([0.1, 0.2], **options)  # type: ignore[arg-type]


# --- the sign-flip test --------------------------------------------------------------------------

HAND_CHOSEN_DELTAS = [
    ["-1", "-1", "-1"],
    ["-0.1", "-0.2", "0.3", "0", "-0.1"],
    ["0.1", "0.2", "-0.3", "0.3", "0", "-0.1", "0"],
    ["-0.5", "0.5", "-0.25", "-0.25", "0.125", "-0.375", "0.2"],
    ["0.1", "0.1", "0.1", "-0.1", "-0.1", "0.2", "-0.3", "0.05", "-0.05", "0.7"],
    ["0", "0", "0"],
    ["-0.05"],
    ["0.3", "-0.3"],
    ["-0.2", "-0.2", "-0.2", "-0.2", "-0.2", "0.2", "-0.4", "0", "-0.2", "0.6", "-0.2", "-0.2"],
]


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("deltas", HAND_CHOSEN_DELTAS, ids=lambda d: ",".join(d))
def test_the_exact_p_value_matches_brute_force_enumeration(
    deltas: list[str], alternative: Alternative
) -> None:
    comparison = compare_deltas([float(d) for d in deltas], alternative=alternative)
    assert comparison.method == "exact"
    expected = float(brute_force_p_value(deltas, alternative))
    assert comparison.p_value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_the_exact_p_value_survives_float_rounding_of_ties(alternative: Alternative) -> None:
    # Baselines and currents whose differences are not exactly representable, with many ties.
    baseline = [0.7, 0.3, 0.6, 0.9, 0.2, 0.8, 0.4, 0.1]
    current = [0.6, 0.4, 0.5, 0.8, 0.3, 0.7, 0.3, 0.2]
    comparison = paired_comparison(baseline, current, alternative=alternative)
    exact_deltas = [
        str(Fraction(str(c)) - Fraction(str(b))) for b, c in zip(baseline, current, strict=True)
    ]
    assert comparison.p_value == pytest.approx(
        float(brute_force_p_value(exact_deltas, alternative)), abs=1e-12
    )


def test_three_equal_drops_have_a_one_sided_p_value_of_one_eighth() -> None:
    less = paired_comparison([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    assert less.p_value == 1 / 8
    assert not less.significant
    assert compare_deltas([-1.0, -1.0, -1.0], alternative="greater").p_value == 1.0
    assert compare_deltas([-1.0, -1.0, -1.0], alternative="two-sided").p_value == 2 / 8


def test_zero_deltas_take_no_part_in_the_test() -> None:
    with_zeros = compare_deltas([-1.0, 0.0, -1.0, 0.0, 0.0, -1.0])
    assert with_zeros.p_value == 1 / 8
    assert with_zeros.n_nonzero == 3
    assert with_zeros.n == 6


def test_identical_runs_are_not_significant() -> None:
    comparison = paired_comparison([0.5, 0.25, 1.0], [0.5, 0.25, 1.0])
    assert comparison.p_value == 1.0
    assert comparison.mean_delta == 0.0
    assert not comparison.significant


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_the_monte_carlo_p_value_agrees_with_exact_enumeration(alternative: Alternative) -> None:
    deltas = np.random.default_rng(17).normal(-0.15, 0.5, size=14).round(2).tolist()
    exact = compare_deltas(deltas, alternative=alternative)
    resamples = 20_000
    estimate = compare_deltas(deltas, alternative=alternative, exact_cutoff=0, resamples=resamples)
    assert exact.method == "exact"
    assert estimate.method == "monte-carlo"
    assert estimate.resamples == resamples
    p = exact.p_value
    standard_error = math.sqrt(p * (1 - p) / resamples)
    assert estimate.p_value == pytest.approx(p, abs=4 * standard_error + 2 / resamples)


def test_the_monte_carlo_p_value_is_never_zero() -> None:
    resamples = 999
    comparison = compare_deltas([-1.0] * 40, resamples=resamples)
    assert comparison.method == "monte-carlo"
    assert comparison.p_value == 1 / (resamples + 1)


def test_the_test_is_exact_up_to_the_cutoff_and_monte_carlo_above_it() -> None:
    at_cutoff = compare_deltas([-0.1, 0.2] * (EXACT_CUTOFF // 2) + [0.0] * 30)
    above = compare_deltas([-0.1, 0.2] * (EXACT_CUTOFF // 2) + [0.3], resamples=500)
    assert (at_cutoff.method, at_cutoff.resamples) == ("exact", 0)
    assert above.method == "monte-carlo"


def test_a_large_monte_carlo_test_spans_several_chunks_and_stays_valid() -> None:
    # 2,500 non-zero deltas x 2,000 resamples is more than one chunk of signs.
    deltas = np.random.default_rng(23).normal(0.0, 0.3, size=2_500)
    symmetric = np.concatenate((deltas, -deltas))
    comparison = compare_deltas(symmetric.tolist(), alternative="two-sided", resamples=2_000)
    # The deltas cancel exactly, so every sign pattern is at least as extreme: p = 1.
    assert comparison.p_value == 1.0
    drop = compare_deltas((deltas - 0.05).tolist(), resamples=2_000)
    assert drop.p_value == 1 / 2_001


def test_under_the_null_false_alarms_stay_near_the_nominal_rate() -> None:
    rng = np.random.default_rng(99)
    # 600 trials put the bound of 0.07 more than two binomial standard errors above 0.05.
    trials = 600
    alarms = 0
    for trial in range(trials):
        deltas = rng.normal(0.0, 0.2, size=40) * rng.choice((-1.0, 1.0), size=40)
        alarms += compare_deltas(deltas.tolist(), resamples=1_000, seed=trial).significant
    assert alarms / trials <= 0.07


def test_a_real_drop_is_flagged_most_of_the_time() -> None:
    rng = np.random.default_rng(100)
    trials = 100
    flagged = 0
    for trial in range(trials):
        # A drop of 0.1 with sd 0.2 over 60 queries has a power near 0.98 at alpha = 0.05.
        deltas = rng.normal(-0.1, 0.2, size=60)
        flagged += compare_deltas(deltas.tolist(), resamples=1_000, seed=trial).significant
    assert flagged / trials >= 0.9


def test_significance_is_the_p_value_at_or_below_alpha() -> None:
    deltas = [-1.0] * 5  # p = 1/32 = 0.03125
    assert compare_deltas(deltas, alpha=0.05).significant
    assert compare_deltas(deltas, alpha=1 / 32).significant
    assert not compare_deltas(deltas, alpha=0.03).significant


def test_the_comparison_reports_deltas_means_and_the_interval_of_the_mean_delta() -> None:
    baseline = [0.5, 1.0, 0.0, 0.75]
    current = [0.25, 1.0, 0.5, 0.25]
    comparison = paired_comparison(baseline, current, seed=3, resamples=700, confidence=0.9)
    assert comparison.deltas == (-0.25, 0.0, 0.5, -0.5)
    assert comparison.mean_baseline == 0.5625
    assert comparison.mean_current == 0.5
    assert comparison.mean_delta == pytest.approx(-0.0625)
    assert comparison.ci == bootstrap_ci(
        list(comparison.deltas), seed=3, resamples=700, confidence=0.9
    )
    assert comparison.alternative == "less"
    assert comparison.alpha == 0.05


def test_the_same_seed_gives_a_bit_identical_comparison_and_another_seed_does_not() -> None:
    rng = np.random.default_rng(5)
    baseline = rng.random(200)
    current = np.clip(baseline + rng.normal(-0.02, 0.1, size=200), 0.0, 1.0)
    first = paired_comparison(baseline, current, seed=8, resamples=2_000)
    assert first.method == "monte-carlo"
    assert paired_comparison(baseline, current, seed=8, resamples=2_000) == first
    other = paired_comparison(baseline, current, seed=9, resamples=2_000)
    assert other.p_value != first.p_value
    assert other.ci != first.ci


def test_runs_of_different_lengths_are_rejected_naming_both_lengths() -> None:
    with pytest.raises(ValueError, match=r"baseline has 3 values and current has 2"):
        paired_comparison([0.1, 0.2, 0.3], [0.1, 0.2])


def test_nan_in_either_run_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"current contains NaN.*positions 1"):
        paired_comparison([0.1, 0.2], [0.1, float("nan")])
    with pytest.raises(ValueError, match=r"baseline contains NaN"):
        paired_comparison([float("nan"), 0.2], [0.1, 0.2])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"alternative": "worse"}, "alternative"),
        ({"alpha": 0.0}, "alpha"),
        ({"exact_cutoff": 40}, "exact_cutoff"),
        ({"resamples": -5}, "resamples"),
    ],
)
def test_out_of_range_comparison_options_are_rejected(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        paired_comparison([0.1, 0.2], [0.2, 0.1], **options)  # type: ignore[arg-type]


def test_an_empty_comparison_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        paired_comparison([], [])


# --- minimum detectable drop --------------------------------------------------------------------


def test_the_minimum_detectable_drop_matches_the_hand_formula() -> None:
    # (z_0.95 + z_0.8) * 0.2 / sqrt(64) = (1.6448536 + 0.8416212) * 0.025
    assert minimum_detectable_drop(0.2, 64) == pytest.approx(2.4864748 * 0.025, rel=1e-6)
    # two-sided: (z_0.975 + z_0.8) * 0.2 / 8
    assert minimum_detectable_drop(0.2, 64, alternative="two-sided") == pytest.approx(
        (1.9599640 + 0.8416212) * 0.025, rel=1e-6
    )
    assert minimum_detectable_drop(0.2, 64, alternative="greater") == minimum_detectable_drop(
        0.2, 64
    )


def test_the_minimum_detectable_drop_shrinks_like_one_over_root_n() -> None:
    for n in (10, 60, 500):
        assert minimum_detectable_drop(0.3, 4 * n) == pytest.approx(
            minimum_detectable_drop(0.3, n) / 2
        )
        assert minimum_detectable_drop(0.3, 100 * n) == pytest.approx(
            minimum_detectable_drop(0.3, n) / 10
        )


def test_the_minimum_detectable_drop_grows_with_stricter_alpha_and_higher_power() -> None:
    base = minimum_detectable_drop(0.2, 60)
    assert minimum_detectable_drop(0.2, 60, alpha=0.01) > base
    assert minimum_detectable_drop(0.2, 60, power=0.95) > base


def test_the_minimum_detectable_drop_from_deltas_uses_their_sample_spread() -> None:
    deltas = [0.1, -0.2, 0.0, 0.3, -0.1, 0.05, -0.15, 0.2]
    sd = float(np.std(deltas, ddof=1))
    assert minimum_detectable_drop(deltas) == pytest.approx(minimum_detectable_drop(sd, 8))
    assert minimum_detectable_drop(deltas, 32) == pytest.approx(minimum_detectable_drop(sd, 32))


def test_no_drop_is_detectable_when_the_test_cannot_reach_alpha() -> None:
    # With 4 queries the smallest one-sided p-value is 1/16 > 0.05; with 5 it is 1/32.
    assert minimum_detectable_drop(0.1, 4) == math.inf
    assert math.isfinite(minimum_detectable_drop(0.1, 5))
    assert minimum_detectable_drop(0.1, 5, alternative="two-sided") == math.inf
    assert math.isfinite(minimum_detectable_drop(0.1, 6, alternative="two-sided"))


def test_the_conservative_delta_sd_is_root_two_times_the_spread_of_one_run() -> None:
    values = [0.0, 1.0, 0.5, 0.25, 0.75]
    assert conservative_delta_sd(values) == pytest.approx(
        float(np.std(values, ddof=1)) * math.sqrt(2)
    )
    assert conservative_delta_sd([0.3, 0.3, 0.3]) == 0.0


def test_the_conservative_delta_sd_bounds_the_spread_of_correlated_deltas() -> None:
    rng = np.random.default_rng(31)
    difficulty = rng.random(5_000)
    baseline = np.clip(difficulty + rng.normal(0, 0.1, 5_000), 0, 1)
    current = np.clip(difficulty + rng.normal(0, 0.1, 5_000), 0, 1)
    assert float(np.std(current - baseline, ddof=1)) < conservative_delta_sd(baseline)


@pytest.mark.parametrize(
    ("args", "options", "message"),
    [
        ((0.2,), {}, "n .* is required"),
        ((0.2, 0), {}, "n must be a positive integer"),
        ((-0.1, 10), {}, "sd must be"),
        ((float("nan"), 10), {}, "sd must be"),
        (([0.1],), {}, "at least 2"),
        ((0.2, 10), {"power": 1.0}, "power"),
        ((0.2, 10), {"alpha": 1.5}, "alpha"),
        ((0.2, 10), {"alternative": "down"}, "alternative"),
    ],
)
def test_bad_minimum_detectable_drop_inputs_are_rejected(
    args: tuple[object, ...], options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        minimum_detectable_drop(*args, **options)  # type: ignore[arg-type]


def test_a_single_value_has_no_conservative_delta_sd() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        conservative_delta_sd([0.5])


def test_changed_queries_that_all_moved_alike_have_a_detectable_drop_of_exactly_zero() -> None:
    # Six equal deltas (0.333333, stored rounded) and six unchanged queries: no spread among the
    # changed ones, the documented case of drop 0, whatever the float sd of the six says (6e-17).
    for sign in (1.0, -1.0):
        found = detectable_drop([sign * 0.333333] * 6 + [0.0] * 6)
        assert (found.drop, found.reason, found.n_changed) == (0.0, None, 6)
