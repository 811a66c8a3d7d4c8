"""pytest_retrieval.regression.baseline without pytest: budgets, the baseline file and the
regression rule.

Snapshots are built by hand, so every expected number below is worked out in a comment from the
values the test writes, never read back from the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from baseline_helpers import STAGE, query, snapshot
from hypothesis import example, given
from hypothesis import strategies as st

from pytest_retrieval.errors import InputError
from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.gates.gate import Selection
from pytest_retrieval.regression.baseline import dump_baseline, load_baseline
from pytest_retrieval.regression.outcome import RegressionOutcome
from pytest_retrieval.regression.pairs import CompareOptions
from pytest_retrieval.regression.rule import compare
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot


def check(
    baseline: Snapshot | None, current: Snapshot, budget: str, **options: Any
) -> RegressionOutcome:
    return compare(
        baseline,
        current,
        parse_budget(budget),
        options=CompareOptions(**options),
        baseline_path="base.json",
    )


# --- budgets -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "metric", "amount", "relative", "selection"),
    [
        ("ndcg@10 0.02", "ndcg@10", 0.02, False, Selection()),
        ("recall@50 2%", "recall@50", 0.02, True, Selection()),
        ("  mrr:   0.05  ", "mrr", 0.05, False, Selection()),
        # A lone metric gets the default budget of 0.01.
        ("mrr", "mrr", 0.01, False, Selection()),
        # Aliases of other tools are read as the canonical spelling.
        ("nDCG@10 0.1", "ndcg@10", 0.1, False, Selection()),
        (
            "ndcg@5 12.5% slice=multi-hop split=tune stage=reranker",
            "ndcg@5",
            0.125,
            True,
            Selection("reranker", "tune", "multi-hop"),
        ),
        ("recall@20 0 slice=*", "recall@20", 0.0, False, Selection(slice="*")),
        ("recall@20 100%", "recall@20", 1.0, True, Selection()),
    ],
)
def test_a_budget_line_is_read_into_metric_amount_kind_and_selection(
    line: str, metric: str, amount: float, relative: bool, selection: Selection
) -> None:
    budget = parse_budget(line)
    assert str(budget.spec) == metric
    assert budget.amount == pytest.approx(amount)
    assert budget.relative is relative
    assert budget.selection == selection


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ndcg@10 -0.02", "is not a regression budget"),
        ("ndcg@10 stage=reranker", "is not a regression budget"),
        ("ndcg@10 0.02%stage=reranker", "is not a regression budget"),
        ("ndcg@10 1e-05", "is not a regression budget"),
        ("ndcg@10 1.2.3", "budget '1.2.3' is not a number"),
        ("ndcg@10 2", "the budget must be between 0 and 1"),
        ("ndcg@10 150%", "the budget must be between 0 and 1"),
        ("ndcg@10 0.02 stage", "cannot read 'stage'"),
        ("ndcg@10 0.02 colour=red", "cannot read 'colour=red'"),
        ("ndcg@10 0.02 slice=", "cannot read 'slice='"),
        ("ndgc@10 0.02", "unknown metric name"),
        ("recall 0.02", "recall needs a cutoff"),
    ],
)
def test_a_malformed_budget_line_is_an_input_error_quoting_the_line(
    line: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        parse_budget(line, source="retrieval-gates.yaml", line_number=7)
    text = str(caught.value)
    assert message in text
    assert text.startswith(f"retrieval-gates.yaml:7: {line.strip()!r}: ")


def test_the_budget_name_and_line_spell_the_amount_and_the_selection() -> None:
    budget = parse_budget("ndcg@10: 2.5% slice=multi-hop stage=reranker")
    assert budget.name == "ndcg@10[budget=2.5%,stage=reranker,slice=multi-hop]"
    assert budget.line == "ndcg@10 2.5% stage=reranker slice=multi-hop"
    assert budget.describe() == "2.5% of the baseline"
    # 2.5% of a baseline mean of 0.8 is 0.02.
    assert budget.allowed(0.8) == pytest.approx(0.02)
    absolute = parse_budget("recall@50 0.00001")
    # No exponent: "1e-05" would not parse back.
    assert absolute.line == "recall@50 0.00001"
    assert absolute.allowed(0.8) == 0.00001


METRICS = st.sampled_from(["ndcg@10", "recall@50", "mrr", "map@5", "precision@3", "hit_rate@1"])
NAMES = st.sampled_from([None, "reranker", "tune", "multi-hop", "a.b_c-1"])
# Amounts as a user writes them: up to 6 decimals (0.000010 once printed as "1e-05").
AMOUNTS = st.integers(min_value=0, max_value=1_000_000).map(lambda n: f"{n / 1_000_000:.6f}")
PERCENTS = st.integers(min_value=0, max_value=10_000).map(lambda n: f"{n / 100:.2f}%")


@given(
    metric=METRICS,
    amount=st.one_of(AMOUNTS, PERCENTS),
    stage=NAMES,
    split=NAMES,
    slice_=NAMES,
)
@example(metric="recall@50", amount="0.000010", stage=None, split=None, slice_=None)
@example(metric="mrr", amount="0.07%", stage="reranker", split=None, slice_="a.b_c-1")
def test_every_budget_line_round_trips_through_parse_budget(
    metric: str, amount: str, stage: str | None, split: str | None, slice_: str | None
) -> None:
    options = [f"{k}={v}" for k, v in (("slice", slice_), ("stage", stage), ("split", split)) if v]
    budget = parse_budget(" ".join([metric, amount, *options]))
    again = parse_budget(budget.line)
    assert again == budget
    assert again.line == budget.line
    assert again.name == budget.name


# --- the baseline file -----------------------------------------------------------------------


def three_queries(order: Sequence[str] = ("a", "b", "c")) -> Snapshot:
    values = {
        "a": query({"ndcg@10": 1 / 3, "mrr": 1.0}, ranks={"d1": 3}, slices=["x"]),
        "b": query({"ndcg@10": 1 / 7, "mrr": None}, ranks={"d2": None}),
        "c": query({"ndcg@10": 1.0, "mrr": 0.5}, ranks={"d3": 2, "d4": 1}),
    }
    return snapshot(
        {name: values[name] for name in order},
        metrics=("ndcg@10", "mrr"),
        heldout={STAGE: {"n": 4, "means": {"ndcg@10": 0.123456789}}},
    )


def test_the_baseline_text_is_deterministic_sorted_indented_rounded_with_a_final_newline() -> None:
    text = dump_baseline(three_queries())
    # Same snapshot, and the same queries inserted in another order: the very same bytes.
    assert dump_baseline(three_queries()) == text
    assert dump_baseline(three_queries(order=("c", "a", "b"))) == text
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    lines = text.splitlines()
    assert lines[0] == "{"
    assert lines[1] == '  "created": "2026-01-01T00:00:00Z",'

    def sorted_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert keys == sorted(keys)
        return dict(pairs)

    document = json.loads(text, object_pairs_hook=sorted_keys)
    queries = document["queries"]
    # 1/3 and 1/7 keep 6 decimals.
    assert queries["a"]["metrics"][STAGE]["ndcg@10"] == 0.333333
    assert queries["b"]["metrics"][STAGE]["ndcg@10"] == 0.142857
    assert queries["b"]["metrics"][STAGE]["mrr"] is None
    assert queries["b"]["relevant_ranks"][STAGE] == {"d2": None}
    # Means for reviewers: ndcg@10 (1/3 + 1/7 + 1) / 3 = 31/63 = 0.4920634..., mrr over the two
    # defined values (1 + 0.5) / 2; slice x holds only query a.
    assert document["means"][STAGE]["overall"] == {"ndcg@10": 0.492063, "mrr": 0.75}
    assert document["means"][STAGE]["slice:x"] == {"ndcg@10": 0.333333, "mrr": 1.0}
    # Held-out means are floats too: rounded like every other.
    assert document["heldout"][STAGE]["means"]["ndcg@10"] == 0.123457
    assert '"ndcg@10": 0.123457' in text
    assert "0.3333333" not in text
    assert (document["schema"], document["schema_version"]) == ("pytest-retrieval/baseline", 3)
    assert document["golden"] == {"fingerprint": "fp-1", "queries": 3}


def test_a_loaded_baseline_dumps_to_the_same_bytes(tmp_path: Path) -> None:
    text = dump_baseline(three_queries())
    path = tmp_path / "retrieval-baseline.json"
    path.write_text(text, encoding="utf-8")
    loaded = load_baseline(path)
    assert dump_baseline(loaded) == text
    assert loaded.queries["a"].relevant_ranks == {STAGE: {"d1": 3}}
    assert loaded.queries["a"].slices == ("x",)


def test_a_missing_baseline_is_file_not_found_for_the_caller_to_explain(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_baseline(tmp_path / "nope.json")


def test_a_truncated_baseline_names_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "base.json"
    # Cut inside line 3: '  "golden": {' ends after "  ", so JSON stops at line 3, column 3
    # ("Expecting property name enclosed in double quotes").
    lines = dump_baseline(three_queries()).splitlines(keepends=True)
    path.write_text(lines[0] + lines[1] + "  ", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_baseline(path)
    problem = caught.value.problems[0]
    assert (problem.source, problem.line, problem.column) == (str(path), 3, 3)
    assert "the file may be truncated" in str(caught.value)
    assert str(caught.value).startswith(f"{path}:3:3: the baseline is not valid JSON")


def test_an_artifact_passed_as_a_baseline_says_it_is_not_one(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"schema": "pytest-retrieval/artifact", "snapshot": {}}))
    with pytest.raises(InputError, match=r"a JSON artifact \(--retrieval-json\) is not a baseline"):
        load_baseline(path)


def test_a_baseline_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    document = json.loads(dump_baseline(three_queries()))
    document["schema_version"] = 99
    path = tmp_path / "base.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match="baseline schema version 99 is not supported"):
        load_baseline(path)


def test_a_directory_as_the_baseline_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="the baseline path is a directory"):
        load_baseline(tmp_path)


def test_a_binary_baseline_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "base.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="the baseline is UTF-16"):
        load_baseline(path)


def test_a_baseline_without_its_queries_is_a_malformed_field(tmp_path: Path) -> None:
    document = json.loads(dump_baseline(three_queries()))
    del document["queries"]
    path = tmp_path / "base.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=r"field 'queries': \"queries\" must be an object"):
        load_baseline(path)


# --- the regression rule -------------------------------------------------------------------


def test_six_queries_each_dropping_half_a_point_are_a_significant_regression() -> None:
    outcome = check(snapshot([1.0] * 6), snapshot([0.5] * 6), "ndcg@10 0.02")
    # Six deltas of -0.5: of the 2**6 = 64 sign patterns only all-minus has a sum <= -3, so the
    # one-sided p-value is exactly 1/64 = 0.015625 <= 0.05, and the drop 0.5 > 0.02.
    assert outcome.status == "regression"
    assert not outcome.passed
    assert outcome.p_value == 1 / 64
    assert outcome.delta == -0.5
    assert (outcome.baseline_mean, outcome.current_mean, outcome.n) == (1.0, 0.5, 6)
    assert outcome.message.startswith(
        "regression: ndcg@10 1.0000 → 0.5000 (Δ -0.5000, one-sided 95% upper bound -0.5000, "
        "90% two-sided interval [-0.5000, -0.5000], one-sided p = 0.01562, n = 6) "
        "[stage=retriever split=overall]; budget 0.02 = 0.0200"
    )
    # Every non-empty flipped set has mean -0.5 and the empty one weighs 1/64 <= 0.05: the test
    # rejects every theta above -0.5 and keeps -0.5, from both sides: the interval is a point.
    assert (outcome.upper_bound, outcome.ci, outcome.ci_collapsed) == (-0.5, (-0.5, -0.5), True)
    assert "interval: collapsed: every changed query moved by the same amount" in outcome.message
    assert "queries that got worse (6), worst first:" in outcome.message
    assert [d.query_id for d in outcome.worse] == ["q1", "q2", "q3", "q4", "q5", "q6"]


def test_a_drop_beyond_the_budget_that_is_not_significant_passes_as_noise() -> None:
    # Deltas -0.5 x3, +0.25 x2 and three zeros (zeros take no part in the test). With a = how
    # many of the 0.5s and b = how many of the 0.25s are negative, a pattern sums to
    # 2 - a - 0.5b; the observed sum is -1. Patterns <= -1: a = 3 (any b: 4 patterns) and
    # a = 2, b = 2 (3 patterns), so p = 7/32 = 0.21875 > 0.05, while 5 changed queries could
    # reach 1/32: a real "not significant", not a too-small test.
    # Mean delta -1 / 8 = -0.125, a drop far beyond the budget of 0.02.
    outcome = check(
        snapshot([1.0, 1.0, 1.0, 0.5, 0.5, 0.7, 0.7, 0.7]),
        snapshot([0.5, 0.5, 0.5, 0.75, 0.75, 0.7, 0.7, 0.7]),
        "ndcg@10 0.02",
    )
    assert outcome.status == "pass"
    assert outcome.passed
    assert outcome.over_budget
    assert outcome.p_value == 7 / 32
    assert outcome.delta == pytest.approx(-0.125)
    assert (
        "the drop exceeds the budget but is not significant at alpha 0.05 (noise-level change)"
        in outcome.message
    )
    assert outcome.message.startswith("no regression: ndcg@10 ")


def test_a_significant_drop_within_the_budget_passes() -> None:
    # Six drops of 0.01: p = 1/64 (significant) but 0.01 <= 0.02.
    outcome = check(snapshot([0.8] * 6), snapshot([0.79] * 6), "ndcg@10 0.02")
    assert outcome.status == "pass"
    assert outcome.p_value == 1 / 64
    assert "exceeds" not in outcome.message


def test_a_significant_drop_exactly_as_large_as_the_budget_passes() -> None:
    # 0.7 - 0.8 is -0.10000000000000009 in floats; the drop is 0.1, the budget 0.1: not over.
    outcome = check(snapshot([0.8] * 6), snapshot([0.7] * 6), "ndcg@10 0.1")
    assert outcome.status == "pass"
    assert "exceeds" not in outcome.message


@pytest.mark.parametrize(("after", "status"), [(0.44, "regression"), (0.46, "pass")])
def test_a_relative_budget_is_a_fraction_of_the_baseline_mean(after: float, status: str) -> None:
    # 10% of the baseline mean 0.5 allows a drop of 0.05: 0.06 is over it, 0.04 is not
    # (six equal drops, p = 1/64 either way).
    outcome = check(snapshot([0.5] * 6), snapshot([after] * 6), "ndcg@10 10%")
    assert outcome.status == status
    assert outcome.budget == pytest.approx(0.05)
    assert "budget 10% of the baseline = 0.0500" in outcome.message


def test_a_significant_rise_beyond_the_budget_is_an_improvement_that_suggests_a_refresh() -> None:
    outcome = check(snapshot([0.5] * 6), snapshot([1.0] * 6), "ndcg@10 0.02")
    # Six rises of 0.5: the one-sided "better" p-value is 1/64; the "worse" one is 64/64.
    assert outcome.status == "improvement"
    assert outcome.passed
    assert outcome.p_value_improvement == 1 / 64
    assert outcome.p_value == 1.0
    assert "significant (p = 0.01562): refresh the baseline (--retrieval-update-baseline)" in (
        outcome.message
    )
    assert "queries that improved (6):" in outcome.message


def test_a_changed_setting_makes_the_runs_incomparable_and_names_it() -> None:
    outcome = check(
        snapshot([1.0] * 6, settings={"gain": "exponential", "min_grade": 1}),
        snapshot([1.0] * 6, settings={"gain": "linear", "min_grade": 1}),
        "ndcg@10 0.02",
    )
    assert outcome.status == "incomparable"
    assert not outcome.passed
    assert outcome.message.startswith(
        "incomparable: setting 'gain' is 'linear' now but 'exponential' in base.json"
    )


def relabelled() -> tuple[Snapshot, Snapshot]:
    """q1..q8 in the baseline; now q8 removed, q9 added and q2 relabelled (all three terrible
    now, so comparing them would fail), the six others unchanged."""
    before = {f"q{i}": query(1.0) for i in range(1, 9)}
    after = {f"q{i}": query(1.0) for i in range(1, 8)}
    after["q2"] = query(0.0, labels="labels-v2")
    after["q9"] = query(0.0)
    return snapshot(before, fingerprint="fp-1"), snapshot(after, fingerprint="fp-2")


def test_a_changed_golden_set_is_incomparable_listing_added_removed_and_changed_ids() -> None:
    outcome = check(*relabelled(), "ndcg@10 0.02")
    assert outcome.status == "incomparable"
    assert (
        "the golden set changed since base.json was made: queries 1 added (q9), 1 removed (q8), "
        "1 changed (q2)"
    ) in outcome.message
    assert "--retrieval-baseline-mode=intersect" in outcome.message


def test_an_empty_kind_of_change_is_counted_without_an_empty_list() -> None:
    before = {f"q{i}": query(1.0) for i in range(1, 9)}
    after = before | {"q9": query(1.0)}
    outcome = check(snapshot(before), snapshot(after, fingerprint="fp-2"), "ndcg@10 0.02")
    assert "queries 1 added (q9), 0 removed, 0 changed. Refresh the baseline" in outcome.message


def test_intersect_mode_compares_only_the_unchanged_queries_and_says_how_many() -> None:
    outcome = check(*relabelled(), "ndcg@10 0.02", mode="intersect")
    # q1, q3, q4, q5, q6, q7 are unchanged and unmoved; q2 and q9 (now 0.0) stay out.
    assert outcome.status == "pass"
    assert outcome.n == 6
    assert outcome.delta == 0.0
    assert (
        "intersect mode: comparing the 6 unchanged queries only (1 added (q9), 1 removed (q8), "
        "1 changed (q2))"
    ) in outcome.message


def test_a_query_diff_puts_documents_that_left_the_top_k_first_with_their_ranks() -> None:
    before = query({"ndcg@5": 1.0}, ranks={"a": 1, "b": 2, "c": 5, "d": 30, "e": 12})
    after = query({"ndcg@5": 0.5}, ranks={"a": 7, "b": None, "c": 4, "d": 40, "e": 3})
    others = {f"q{i}": query({"ndcg@5": 1.0}) for i in range(2, 7)}
    outcome = check(
        snapshot({"q1": before, **others}, metrics=("ndcg@5",)),
        snapshot({"q1": after, **others}, metrics=("ndcg@5",)),
        "ndcg@5 0.02",
    )
    (diff,) = outcome.worse
    # Crossing the top-5 boundary first (a and b left it, e entered), by rank before; then the
    # moves inside or outside it (c 5 -> 4, d 30 -> 40).
    assert diff.moves == (("a", 1, 7), ("b", 2, None), ("e", 12, 3), ("c", 5, 4), ("d", 30, 40))
    assert diff.describe("ndcg@5") == (
        "q1: ndcg@5 1.0000 → 0.5000; a: rank 1 → 7; b: rank 2 → —; e: rank 12 → 3; "
        "c: rank 5 → 4 (+1 more)"
    )
    assert "  q1: ndcg@5 1.0000 → 0.5000; a: rank 1 → 7; b: rank 2 → —" in outcome.message


def test_without_a_baseline_the_check_fails_with_the_command_that_creates_it() -> None:
    outcome = check(None, snapshot([1.0] * 6), "ndcg@10 0.02")
    assert outcome.status == "missing"
    assert not outcome.passed
    assert outcome.message == (
        "no baseline at base.json: create it with `pytest --retrieval-baseline=base.json "
        "--retrieval-update-baseline`, review it and commit it"
    )


def test_a_budget_on_the_held_out_split_is_skipped() -> None:
    outcome = check(snapshot([1.0] * 6), snapshot([0.0] * 6), "ndcg@10 0.02 split=heldout")
    assert outcome.status == "skipped"
    assert outcome.passed
    assert "held-out queries never enter a baseline" in outcome.message


def test_a_slice_budget_compares_only_the_queries_of_the_slice() -> None:
    # Six queries in slice "hop" drop 1.0 -> 0.5 (p = 1/64); two others drop too, but the
    # check is over the slice only: n = 6, delta -0.5.
    before = {f"h{i}": query(1.0, slices=["hop"]) for i in range(6)}
    after = {f"h{i}": query(0.5, slices=["hop"]) for i in range(6)}
    before |= {"o1": query(1.0), "o2": query(1.0)}
    after |= {"o1": query(0.0), "o2": query(0.0)}
    outcome = check(snapshot(before), snapshot(after), "ndcg@10 0.02 slice=hop")
    assert (outcome.status, outcome.n, outcome.delta) == ("regression", 6, -0.5)
    assert "[stage=retriever split=overall slice=hop]" in outcome.message


def test_a_value_rounded_in_the_baseline_equals_the_unrounded_current_value() -> None:
    # The file keeps 0.333333; this run computes 1/3 = 0.3333333...: the same number, no delta.
    outcome = check(snapshot([0.333333] * 6), snapshot([1 / 3] * 6), "ndcg@10 0.02")
    assert (outcome.status, outcome.delta, outcome.p_value_improvement) == ("pass", 0.0, 1.0)
    assert outcome.better == ()
    assert outcome.worse == ()


def test_a_budget_below_the_smallest_detectable_drop_is_warned_about() -> None:
    # Deltas five times -0.1 and five times +0.1 (n = 10, all changed): the detectable drop is
    # the kernel's, for changes like these (tests/unit/scoring/test_stats_family.py pins the
    # kernel). With a spread of 0.105 over 10 queries no drop below a few points can be told
    # from noise.
    from pytest_retrieval.scoring.stats import detectable_drop

    before = [0.5] * 10
    after = [0.4] * 5 + [0.6] * 5
    outcome = check(snapshot(before), snapshot(after), "ndcg@10 0.02")
    expected = detectable_drop([-0.1] * 5 + [0.1] * 5).drop
    assert expected is not None
    assert 0.02 < expected < 0.5
    assert outcome.status == "pass"
    assert outcome.detectable == pytest.approx(expected, abs=1e-6)
    assert outcome.warning is not None
    assert outcome.warning.startswith(
        f"the budget 0.0200 is smaller than the smallest drop this golden set can detect "
        f"({expected:.4f} at alpha 0.05, power 0.8)"
    )
    assert f"smallest detectable drop {expected:.4f} (alpha 0.05, power 0.8" in outcome.message
    wide = check(snapshot(before), snapshot(after), "ndcg@10 0.5")
    assert wide.warning is None


def test_too_few_queries_to_ever_reach_alpha_are_warned_about() -> None:
    # n = 4: the smallest one-sided p-value is 1/2**4 = 0.0625 > 0.05, so even four equal drops
    # of 0.5 cannot fail the check.
    outcome = check(snapshot([1.0] * 4), snapshot([0.5] * 4), "ndcg@10 0.02")
    assert outcome.status == "pass"
    assert outcome.p_value == 1 / 16
    assert outcome.warning == (
        "with 4 queries the sign-flip test can never reach alpha 0.05 (its smallest one-sided "
        "p-value is 1/2^4 = 0.0625), so this check can never fail; add queries"
    )
    assert outcome.detectable is None
    assert outcome.detectable_reason == (
        "only 4 of 4 queries changed; the sign-flip test needs at least 5 changed queries to "
        "ever reach alpha 0.05"
    )
    assert f"smallest detectable drop none ({outcome.detectable_reason})" in outcome.message
    # And the bound can never exclude 0: the identity pattern alone weighs 1/16 > 0.05.
    assert outcome.upper_bound is None
    assert outcome.ci is None


def test_the_same_inputs_and_seed_give_the_same_outcome() -> None:
    rows = [0.1 * (i % 7) for i in range(40)]
    moved = [v - 0.05 * (i % 3) for i, v in enumerate(rows)]
    first = check(snapshot(rows), snapshot(moved), "ndcg@10 0.01", seed=3)
    assert check(snapshot(rows), snapshot(moved), "ndcg@10 0.01", seed=3) == first


def test_an_unknown_metric_in_the_baseline_is_incomparable_with_a_fix() -> None:
    outcome = check(snapshot([1.0] * 6), snapshot([1.0] * 6), "mrr 0.02")
    assert outcome.status == "incomparable"
    assert "base.json has no mrr; refresh the baseline" in outcome.message


def test_an_outcome_survives_the_trip_through_a_dict() -> None:
    outcome = check(snapshot([1.0] * 6), snapshot([0.5] * 6), "ndcg@10 0.02")
    again = RegressionOutcome.from_dict(json.loads(json.dumps(outcome.to_dict())))
    assert again == outcome


def _mrr_snapshot(values: list[float]) -> Snapshot:
    queries = {
        f"q{i:02d}": QuerySnapshot(
            "tune", (), "labels", {"retriever": {"mrr": v}}, {"retriever": {}}, {"retriever": ()}
        )
        for i, v in enumerate(values)
    }
    return Snapshot("f" * 64, {"gain": "exponential"}, ("retriever",), ("mrr",), queries)


def test_a_drop_carried_by_too_few_changed_queries_is_explained_not_called_noise() -> None:
    # 30 queries, 4 drop from 1 to 0: mean drop 4/30 = 0.1333 > 0.01, but the sign-flip test
    # only sees the 4 changed queries, so its smallest one-sided p is 1/2**4 = 0.0625 > 0.05.
    outcome = compare(
        _mrr_snapshot([1.0] * 30),
        _mrr_snapshot([0.0] * 4 + [1.0] * 26),
        parse_budget("mrr 0.01"),
    )
    assert outcome.status == "pass"
    assert outcome.over_budget is True
    assert outcome.p_value == pytest.approx(1 / 16)
    assert "only 4 queries changed" in outcome.message
    assert "needs at least 5 changed queries" in outcome.message  # 2**-5 = 0.03125 <= 0.05
    assert "noise-level" not in outcome.message


def test_five_changed_queries_are_enough_to_fail() -> None:
    outcome = compare(
        _mrr_snapshot([1.0] * 30),
        _mrr_snapshot([0.0] * 5 + [1.0] * 25),
        parse_budget("mrr 0.01"),
    )
    assert outcome.status == "regression"
    assert outcome.p_value == pytest.approx(1 / 32)


def test_a_drop_equal_to_the_budget_is_not_over_it() -> None:
    # 0.8 -> 0.7 on every query: the drop is 0.1 (up to float noise), the budget 0.1.
    outcome = compare(_mrr_snapshot([0.8] * 10), _mrr_snapshot([0.7] * 10), parse_budget("mrr 0.1"))
    assert outcome.status == "pass"
    assert outcome.over_budget is False
