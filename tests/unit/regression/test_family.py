"""The family rule in the core: regression.family / compare_all with hand-enumerated families,
the beyond-budget (shifted) test, multi-run baselines, the determinism probe's helpers, and
records written before these keys existed."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import pytest

import pytest_retrieval.scoring.stats  # noqa: F401  (numpy first)
from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.regression.outcome import RegressionOutcome
from pytest_retrieval.regression.pairs import CompareOptions
from pytest_retrieval.regression.rule import compare, compare_all
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot, average_snapshots
from pytest_retrieval.run.determinism import (
    DeterminismProbe,
    changed_rankings,
    compare_runs,
    probe_ids,
)
from pytest_retrieval.run.retriever import QueryOutcome

STAGE = "retriever"


def snap(values: dict[str, float], slices: dict[str, str] | None = None) -> Snapshot:
    """One stage, one metric (ndcg@10), queries q1.. with the given values (and slices)."""
    slices = slices or {}
    queries = {
        qid: QuerySnapshot(
            "tune",
            (slices[qid],) if qid in slices else (),
            "labels",
            {STAGE: {"ndcg@10": v}},
            {STAGE: {}},
            {STAGE: ()},
        )
        for qid, v in values.items()
    }
    return Snapshot("f" * 64, {}, (STAGE,), ("ndcg@10",), queries)


def ids(count: int, start: int = 1) -> list[str]:
    return [f"q{i:02d}" for i in range(start, start + count)]


# Two slices of six queries each; every query drops by 0.5 (1 -> 0.5).
SLICES = {q: "a" for q in ids(6)} | {q: "b" for q in ids(6, 7)}
BEFORE = snap(dict.fromkeys(ids(12), 1.0), SLICES)
AFTER = snap(dict.fromkeys(ids(12), 0.5), SLICES)
BUDGETS = [parse_budget("ndcg@10 0.02 slice=a"), parse_budget("ndcg@10 0.02 slice=b")]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        # Each check alone: only its all-minus pattern of 2**6 is as extreme, p = 1/64.
        ("none", 1 / 64),
        # maxT over joint flips of the 12 queries: the two statistics are independent (disjoint
        # queries), so P(max >= observed) = 1 - (63/64)**2 = 127/4096; the second step (1/64)
        # is raised to it by monotonicity.
        ("maxt", 127 / 4096),
        # Holm: 2 * 1/64 for the first, max(1/32, 1 * 1/64) for the second.
        ("holm", 1 / 32),
    ],
)
def test_two_independent_checks_are_adjusted_as_hand_enumerated(
    method: str, expected: float
) -> None:
    family, outcomes = compare_all(
        BEFORE, AFTER, BUDGETS, options=CompareOptions(multiplicity=method)
    )
    assert family.size == 2
    assert [o.p_value for o in outcomes] == pytest.approx([expected, expected], abs=1e-12)
    assert [o.p_value_raw for o in outcomes] == pytest.approx([1 / 64, 1 / 64], abs=1e-12)
    assert all(o.status == "regression" for o in outcomes)  # all <= 0.05
    assert all((o.multiplicity, o.family_size) == (method, 2) for o in outcomes)


def test_two_checks_on_the_same_queries_are_adjusted_like_one_under_maxt() -> None:
    # The same deltas, budgeted twice (absolute and relative): maxT sees one statistic.
    budgets = [parse_budget("ndcg@10 0.02"), parse_budget("ndcg@10 2%")]
    before, after = snap(dict.fromkeys(ids(6), 1.0)), snap(dict.fromkeys(ids(6), 0.5))
    _, maxt = compare_all(before, after, budgets)
    assert [o.p_value for o in maxt] == pytest.approx([1 / 64, 1 / 64], abs=1e-12)
    _, holm = compare_all(before, after, budgets, options=CompareOptions(multiplicity="holm"))
    assert [o.p_value for o in holm] == pytest.approx([1 / 32, 1 / 32], abs=1e-12)


def test_a_check_alone_is_a_family_of_one() -> None:
    outcome = compare(BEFORE, AFTER, BUDGETS[0])
    assert (outcome.p_value, outcome.p_value_raw, outcome.family_size) == (1 / 64, 1 / 64, 1)


def test_incomparable_checks_are_not_members_of_the_family() -> None:
    budgets = [*BUDGETS, parse_budget("mrr 0.02")]  # the baseline has no mrr
    family, outcomes = compare_all(BEFORE, AFTER, budgets)
    assert family.size == 2
    assert outcomes[2].status == "incomparable"
    assert outcomes[0].p_value == pytest.approx(127 / 4096, abs=1e-12)


def test_the_beyond_budget_test_needs_the_drop_significantly_larger_than_the_budget() -> None:
    # Six queries drop by 0.5, six do not move: mean drop 0.25.
    before = snap(dict.fromkeys(ids(12), 1.0))
    after = snap(dict.fromkeys(ids(6), 0.5) | dict.fromkeys(ids(6, 7), 1.0))
    budget = parse_budget("ndcg@10 0.15")
    plain = compare(before, after, budget)
    assert (plain.status, plain.p_value) == ("regression", 1 / 64)
    # Shifted deltas: six of -0.35 and six of +0.15 (every query takes part), observed sum
    # -1.2. With a = sum of the first six signs and b of the last six, a pattern is as extreme
    # when -0.35 a + 0.15 b <= -1.2: a = 6, any b (64); a = 4 (6 ways), b <= 0 (42); a = 2
    # (15 ways), b <= -4 (7). (64 + 252 + 105) / 4096 = 421/4096 = 0.1028 > 0.05.
    beyond = compare(before, after, budget, options=CompareOptions(budget_test="beyond-budget"))
    assert beyond.status == "pass"
    assert beyond.test == "beyond-budget"
    assert beyond.p_value == pytest.approx(421 / 4096, abs=1e-12)
    assert "is not significantly larger than it (beyond-budget test" in beyond.message
    # The bound agrees: it does not lie below -budget.
    assert beyond.upper_bound is not None
    assert beyond.upper_bound >= -0.15


def test_a_regression_always_shows_an_upper_bound_below_zero() -> None:
    for outcome in compare_all(BEFORE, AFTER, BUDGETS)[1]:
        assert outcome.status == "regression"
        # Every flipped set of -0.5 deltas has mean -0.5; the empty one weighs 1/64.
        assert (outcome.upper_bound, outcome.ci, outcome.ci_level) == (-0.5, (-0.5, -0.5), 0.9)
        assert outcome.ci_collapsed is True


def test_a_baseline_of_several_runs_holds_means_and_spread() -> None:
    runs = [
        snap({"q01": 1.0, "q02": 0.5}),
        snap({"q01": 0.5, "q02": 0.5}),
        snap({"q01": 0.0, "q02": 0.5}),
    ]
    merged = average_snapshots(runs)
    assert merged.n_runs == 3
    # q01: mean 0.5, sd sqrt((0.25 + 0 + 0.25) / 2) = 0.5; q02: mean 0.5, sd 0.
    assert merged.queries["q01"].metrics[STAGE]["ndcg@10"] == 0.5
    assert merged.queries["q01"].spread[STAGE]["ndcg@10"] == pytest.approx(0.5)
    assert merged.queries["q02"].spread[STAGE]["ndcg@10"] == 0.0
    document = merged.to_dict()
    assert document["n_runs"] == 3
    assert Snapshot.from_dict(document) == merged
    # One run: the file has neither key, as before multi-run baselines.
    single = runs[0].to_dict()
    assert "n_runs" not in single
    assert "spread" not in single["queries"]["q01"]
    assert Snapshot.from_dict(single).n_runs == 1

    # Compared against: each delta against the mean, and the noise of the mean delta is
    # sqrt(sum s**2 (1 + 1/3)) / n = sqrt(0.25 * 4/3) / 2 = 0.288675.
    outcome = compare(merged, snap({"q01": 0.5, "q02": 0.5}), parse_budget("ndcg@10 0.02"))
    assert outcome.delta == 0.0
    assert outcome.baseline_runs == 3
    assert outcome.noise == pytest.approx(math.sqrt(0.25 * 4 / 3) / 2)


def test_an_outcome_written_before_the_family_keys_reads_with_defaults() -> None:
    old = compare(BEFORE, AFTER, BUDGETS[0]).to_dict()
    for key in (
        "p_value_raw",
        "multiplicity",
        "family_size",
        "alpha",
        "test",
        "upper_bound",
        "ci_level",
        "upper_level",
        "ci_collapsed",
        "ci_reason",
        "detectable_reason",
        "baseline_runs",
        "noise",
    ):
        del old[key]
    outcome = RegressionOutcome.from_dict(old)
    assert (outcome.multiplicity, outcome.family_size, outcome.test) == (None, 0, "drop")
    assert (outcome.baseline_runs, outcome.ci_level, outcome.p_value) == (1, None, 1 / 64)


def test_the_probe_spreads_its_queries_and_ignores_failures() -> None:
    class Q:
        def __init__(self, qid: str, split: str = "tune") -> None:
            self.id, self.split = qid, split

    queries = [Q(q) for q in ids(12)] + [Q("secret", "heldout")]
    # Positions 12 * i // 5 for i = 0..4: 0, 2, 4, 7, 9; never the held-out query.
    assert probe_ids(queries, 5, "heldout") == ["q01", "q03", "q05", "q08", "q10"]  # type: ignore[arg-type]
    assert probe_ids(queries, 50, "heldout") == ids(12)  # type: ignore[arg-type]
    assert probe_ids(queries, 0, "heldout") == []  # type: ignore[arg-type]
    first = {
        "a": QueryOutcome("a", {STAGE: ("d1", "d2")}, {}),
        "b": QueryOutcome("b", {STAGE: ("d1",)}, {}),
        "c": QueryOutcome("c", {STAGE: ()}, {}, error="boom", error_type="E", error_stage=STAGE),
    }
    again = [
        QueryOutcome("a", {STAGE: ("d2", "d1")}, {}),
        QueryOutcome("b", {STAGE: ("d1",)}, {}),
        QueryOutcome("c", {STAGE: ("d9",)}, {}),
    ]
    assert changed_rankings(first, again) == ("a",)


def test_the_probe_tells_a_stale_cache_from_noise_with_a_second_live_run() -> None:
    def live(qid: str, *ranking: str) -> QueryOutcome:  # a call was made: it has a latency
        return QueryOutcome(qid, {STAGE: ranking}, {STAGE: 1.0})

    def cached(qid: str, *ranking: str) -> QueryOutcome:  # served from the cache: no latency
        return QueryOutcome(qid, {STAGE: ranking}, {})

    first = {
        "same": cached("same", "d1"),  # live agrees with the cache
        "stale": cached("stale", "d1"),  # live: d2, then d2 again
        "noisy": cached("noisy", "d1"),  # live: d2, then d3
        "live": live("live", "d1"),  # called live in the main run; the probe gives d2
    }
    once = [live("same", "d1"), live("stale", "d2"), live("noisy", "d2"), live("live", "d2")]
    asked: list[list[str]] = []

    def rerun(only: Sequence[str] | None) -> list[QueryOutcome]:
        asked.append(list(only or ()))
        return [live("stale", "d2"), live("noisy", "d3")]

    probe = compare_runs(list(first), first, [once], rerun)
    # Only the cached queries a live run contradicted are asked once more; a live main run
    # that differs from the probe is noise without a third call.
    assert asked == [["stale", "noisy"]]
    assert probe == DeterminismProbe(
        ("same", "stale", "noisy", "live"), changed=("noisy", "live"), stale=("stale",)
    )
    assert probe.noisy
    assert probe.describe() == (
        "determinism probe: 4 queries re-run, 2 rankings changed (noisy, live): the pipeline is "
        "nondeterministic; 1 cached ranking is stale (stale)"
    )
    # Several live runs already (a multi-run baseline's extra runs): no call is added, and two
    # agreeing runs that differ from the cache are a stale cache.
    asked.clear()
    two = [[live("stale", "d2"), live("noisy", "d2")], [live("stale", "d2"), live("noisy", "d3")]]
    probe = compare_runs(["stale", "noisy"], first, two, rerun)
    assert asked == []
    assert (probe.changed, probe.stale) == (("noisy",), ("stale",))
    # Stale alone is not noise, and its warning names the fix.
    only_stale = DeterminismProbe(("a", "b"), (), ("b",))
    assert not only_stale.noisy
    assert "nondeterministic" not in only_stale.describe()
    assert only_stale.stale_warning() == (
        "the cache is stale: 1 of the 2 queries re-run live (b) came back the same on two live "
        "runs but not as cached, so this run scored rankings the retriever no longer returns; "
        "refresh the cache (--retrieval-cache=refresh) or bump the index version "
        "(retrieval_index_version)"
    )
    assert DeterminismProbe.from_dict(only_stale.to_dict()) == only_stale
    assert DeterminismProbe.from_dict({"queries": ["a"], "changed": []}).stale == ()


# --- the comparison options: one constructor from settings, one from what a run recorded ----

from dataclasses import fields  # noqa: E402

from pytest_retrieval.scoring.evaluate import Conventions  # noqa: E402
from pytest_retrieval.settings.resolve import Settings  # noqa: E402

#: Settings with every setting a comparison reads changed from its default, and the options
#: a run with them compares with (written out by hand: field by field, the setting it reads).
CHANGED = Settings(
    alpha=0.1,
    confidence=0.9,
    resamples=123,
    seed=7,
    baseline_mode="intersect",
    heldout_split="sealed",
    worst=3,
    multiplicity="holm",
    budget_test="beyond-budget",
)
CHANGED_OPTIONS = CompareOptions(
    alpha=0.1,
    confidence=0.9,
    resamples=123,
    seed=7,
    mode="intersect",
    heldout_split="sealed",
    shown=3,
    multiplicity="holm",
    budget_test="beyond-budget",
)


def test_the_options_of_default_settings_are_the_default_options() -> None:
    # One home for the statistics' defaults: the settings' and the comparison's agree.
    assert CompareOptions.from_settings(Settings()) == CompareOptions()


def test_every_setting_a_comparison_reads_reaches_its_options() -> None:
    conventions = Conventions(min_grade=2)
    options = CompareOptions.from_settings(CHANGED, conventions=conventions)
    assert options == dataclasses.replace(CHANGED_OPTIONS, conventions=conventions)
    # CHANGED_OPTIONS moves every option read from settings: a new one must be added here
    untouched = {
        f.name
        for f in fields(CompareOptions)
        if getattr(CHANGED_OPTIONS, f.name) == getattr(CompareOptions(), f.name)
    }
    assert untouched == {"conventions", "refresh"}


def test_a_stored_run_compares_with_the_options_it_ran_with() -> None:
    # pytest-retrieval compare reads the artifact's settings (Settings.to_dict) back
    assert CompareOptions.from_recorded(CHANGED.to_dict()) == CHANGED_OPTIONS
    assert CompareOptions.from_recorded(Settings().to_dict()) == CompareOptions()


def test_a_stored_run_that_records_no_statistics_compares_with_the_defaults() -> None:
    # an artifact written before a setting existed
    assert CompareOptions.from_recorded({}) == CompareOptions()


def test_the_command_flags_override_what_the_run_recorded_and_none_leaves_it() -> None:
    options = CompareOptions.from_recorded(
        CHANGED.to_dict(), alpha=0.01, mode=None, multiplicity="none", budget_test=None
    )
    assert options == dataclasses.replace(CHANGED_OPTIONS, alpha=0.01, multiplicity="none")
    with pytest.raises(TypeError, match="unknown comparison options: shwon"):
        CompareOptions.from_recorded({}, shwon=3)
