"""Outcomes are made one way and speak one vocabulary: a gate's record (``GateOutcome.of``, via
``judge.judge`` and ``judge.unscored``), a budget's check (``RegressionOutcome.of_budget``), and
``verdict.Status`` for what each concluded."""

from __future__ import annotations

import json

import pytest

from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.gates.gate import GateOutcome, Score, Selection
from pytest_retrieval.gates.judge import judge, unscored
from pytest_retrieval.regression.outcome import RegressionOutcome
from pytest_retrieval.scoring.metrics import MetricSpec
from pytest_retrieval.verdict import Shown, Status

SPEC = MetricSpec("recall", 10)
SELECTION = Selection(split="tune", slice="multi-hop")


def _identity(outcome: GateOutcome) -> tuple[object, ...]:
    return (
        outcome.name,
        outcome.metric,
        outcome.op,
        outcome.threshold,
        outcome.split,
        outcome.slice,
        outcome.kind,
        outcome.nodeid,
    )


@pytest.mark.parametrize("name", [None, "recall@10>=0.9[slice=multi-hop]"])
def test_a_gate_scored_and_the_same_gate_unscored_are_the_same_gate(name: str | None) -> None:
    score = Score(SPEC, 0.5, 4, stage="retriever", split="tune", slice="multi-hop")
    scored = judge(
        score,
        SPEC,
        SELECTION,
        ">=",
        0.9,
        confidence=0.95,
        kind="threshold",
        name=name,
        nodeid="t.py::test",
    )
    refused = unscored(
        SPEC,
        SELECTION,
        ">=",
        0.9,
        kind="threshold",
        name=name,
        nodeid="t.py::test",
        passed=False,
        message="cannot be scored",
    )
    assert _identity(scored) == _identity(refused)
    assert scored.name == (name or "recall@10>=0.9")
    assert (scored.value, scored.n, scored.stage) == (0.5, 4, "retriever")
    assert (refused.value, refused.n, refused.stage) == (None, 0, None)


def test_a_gate_concludes_pass_fail_or_skip_as_the_reports_show_it() -> None:
    held = unscored(
        SPEC,
        SELECTION,
        ">=",
        0.9,
        kind="assert",
        name=None,
        nodeid=None,
        passed=True,
        message="sealed",
        skipped_reason="sealed",
    )
    failed = unscored(
        SPEC,
        SELECTION,
        ">=",
        0.9,
        kind="assert",
        name=None,
        nodeid=None,
        passed=False,
        message="no",
    )
    passed = judge(
        Score(SPEC, 0.95, 4, stage="retriever"),
        SPEC,
        SELECTION,
        ">=",
        0.9,
        confidence=0.95,
        kind="assert",
        name=None,
        nodeid=None,
    )
    assert [o.status for o in (held, failed, passed)] == [Status.SKIPPED, Status.FAIL, Status.PASS]
    assert [o.status.shown.word for o in (held, failed, passed)] == ["SKIP", "FAIL", "PASS"]


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        (Status.PASS, Shown.PASS),
        (Status.IMPROVEMENT, Shown.PASS),
        (Status.SKIPPED, Shown.SKIP),
        (Status.FAIL, Shown.FAIL),
        (Status.REGRESSION, Shown.FAIL),
        (Status.INCOMPARABLE, Shown.FAIL),
        (Status.MISSING, Shown.FAIL),
    ],
)
def test_every_status_is_shown_as_one_of_three_states(status: Status, shown: Shown) -> None:
    assert status.shown is shown
    assert status.passed is (shown is not Shown.FAIL)


def test_a_budget_check_is_named_and_placed_by_its_budget() -> None:
    budget = parse_budget("ndcg@10 2% split=tune slice=multi-hop since=v1.0")
    outcome = RegressionOutcome.of_budget(budget, Status.SKIPPED, "no entry", stage=None)
    assert (outcome.name, outcome.metric, outcome.split, outcome.slice, outcome.since) == (
        budget.name,
        "ndcg@10",
        "tune",
        "multi-hop",
        "v1.0",
    )
    assert outcome.budget == 0.02  # the budget's amount when nothing was measured
    measured = RegressionOutcome.of_budget(
        budget, Status.PASS, "ok", stage="reranker", allowed=0.0123, n=7
    )
    assert (measured.budget, measured.n, measured.stage) == (0.0123, 7, "reranker")


def test_a_check_status_given_as_text_is_the_status_and_written_as_plain_text() -> None:
    budget = parse_budget("ndcg@10 0.02")
    outcome = RegressionOutcome.of_budget(budget, "improvement", "up", stage="retriever")  # type: ignore[arg-type]
    assert outcome.status is Status.IMPROVEMENT
    data = outcome.to_dict()
    # a plain str: the xdist payload (execnet) refuses an Enum, the artifact is JSON
    assert type(data["status"]) is str
    assert json.loads(json.dumps(data))["status"] == "improvement"
    assert RegressionOutcome.from_dict(data).status is Status.IMPROVEMENT
    with pytest.raises(ValueError, match="'better'"):
        RegressionOutcome.of_budget(budget, "better", "?", stage=None)  # type: ignore[arg-type]
