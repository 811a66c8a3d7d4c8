"""Property tests: folding xdist worker payloads (``report.payload.Report``) gives one answer
whatever order the workers finish in, and folding a payload in twice changes nothing.

The controller merges the payloads as workers go down, in an order nobody controls; a merge that
depended on it would make the artifact and the gate verdicts flaky under ``-n``. Payloads are
built the way workers build them: outcomes by ``outcome_to_dict``, gates by
``GateOutcome.to_dict``, regressions by ``RegressionOutcome.to_dict``, then sent as builtins.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_retrieval.gates.gate import GateOutcome
from pytest_retrieval.regression.outcome import RegressionOutcome
from pytest_retrieval.run.retriever import QueryOutcome
from pytest_retrieval.session.payload import Report, merge_all, outcome_to_dict

PAYLOADS = settings(max_examples=100, deadline=None, database=None)

QUERY_IDS = ["refund", "sso", "invoice", "fax"]
DOCS = ["refund-policy", "okta", "sso-setup", "faq", "pricing"]
NODEIDS = [None, "test_a.py::test_recall", "test_a.py::test_ndcg", "test_b.py::test_slices"]
STAGES = ["retriever", "reranker"]
# Values are means of per-query values in [0, 1], or None when nothing could be scored.
values = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 2 / 3, 1.0]))

outcomes = st.builds(
    QueryOutcome,
    query_id=st.sampled_from(QUERY_IDS),
    rankings=st.dictionaries(
        st.sampled_from(STAGES), st.lists(st.sampled_from(DOCS), max_size=3).map(tuple)
    ),
    latency_ms=st.dictionaries(st.sampled_from(STAGES), st.sampled_from([0.5, 3.0, 120.0])),
    error=st.one_of(st.none(), st.sampled_from(["vector store unreachable", "no answer"])),
    error_type=st.one_of(st.none(), st.just("ConnectionError")),
    error_stage=st.one_of(st.none(), st.sampled_from(STAGES)),
).map(outcome_to_dict)

gates = st.builds(
    GateOutcome,
    name=st.sampled_from(["recall@3>=0.5", "ndcg@3>=0.6[slice=multi-hop]", "mrr>=0.5"]),
    metric=st.sampled_from(["recall@3", "ndcg@3", "mrr"]),
    op=st.sampled_from([">=", ">", "<=", "<"]),
    threshold=st.sampled_from([0.5, 0.6, 0.9]),
    value=values,
    passed=st.booleans(),
    stage=st.one_of(st.none(), st.sampled_from(STAGES)),
    split=st.one_of(st.none(), st.sampled_from(["tune", "heldout"])),
    slice=st.one_of(st.none(), st.just("multi-hop")),
    n=st.integers(0, 4),
    skipped=st.integers(0, 1),
    kind=st.sampled_from(["assert", "threshold"]),
    nodeid=st.sampled_from(NODEIDS),
    message=st.sampled_from(["", "recall@3 >= 0.5 holds (0.6667) [stage=retriever]"]),
    skipped_reason=st.one_of(st.none(), st.just("held-out split is sealed")),
).map(GateOutcome.to_dict)

regressions = st.builds(
    RegressionOutcome,
    name=st.sampled_from(["ndcg@3[budget=0.01]", "mrr[budget=0.01]", "recall@3[budget=2%]"]),
    metric=st.sampled_from(["ndcg@3", "mrr", "recall@3"]),
    stage=st.one_of(st.none(), st.just("retriever")),
    split=st.none(),
    slice=st.one_of(st.none(), st.just("multi-hop")),
    status=st.sampled_from(["pass", "regression", "improvement", "incomparable", "skipped"]),
    message=st.sampled_from(["", "no baseline at baseline.json"]),
    budget=st.sampled_from([0.01, 0.02]),
    n=st.integers(0, 4),
    baseline_mean=values,
    current_mean=values,
    p_value=values,
).map(RegressionOutcome.to_dict)

reports = st.builds(
    lambda rows, g, r, name: Report({o["query_id"]: o for o in rows}, g, r, name),
    st.lists(outcomes, max_size=4),
    st.lists(gates, max_size=4),
    st.lists(regressions, max_size=3),
    st.one_of(st.none(), st.sampled_from(["myapp.search.search", "myapp.search.Hybrid"])),
)


def over_the_wire(report: Report) -> Report:
    """What the controller receives: the worker's ``to_dict`` read back by ``from_dict``."""
    return Report.from_dict(report.to_dict())


def as_sent(report: Report) -> dict[str, Any]:
    return report.to_dict()


@PAYLOADS
@given(reports, reports)
def test_merging_two_payloads_does_not_depend_on_which_came_first(a: Report, b: Report) -> None:
    assert a.merge(b) == b.merge(a)


@PAYLOADS
@given(st.lists(reports, min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_any_finishing_order_of_the_workers_gives_the_same_merged_report(
    payloads: list[Report], rnd: Any
) -> None:
    shuffled = list(payloads)
    rnd.shuffle(shuffled)
    assert merge_all(shuffled) == merge_all(payloads)


@PAYLOADS
@given(reports, reports, reports)
def test_merging_is_associative(a: Report, b: Report, c: Report) -> None:
    assert a.merge(b).merge(c) == a.merge(b.merge(c))


@PAYLOADS
@given(reports)
def test_merging_a_payload_with_itself_changes_nothing_but_the_canonical_order(
    a: Report,
) -> None:
    canonical = Report().merge(a)
    assert a.merge(a) == canonical
    # A merged report is its own canonical form: merging it again is a no-op.
    assert canonical.merge(canonical) == canonical
    # Nothing is lost or made up on the way: the same outcomes, gates and regressions.
    assert canonical.outcomes == a.outcomes
    assert sorted(map(repr, canonical.gates)) == sorted({repr(g) for g in a.gates})
    assert sorted(map(repr, canonical.regressions)) == sorted({repr(r) for r in a.regressions})
    assert canonical.retriever_name == a.retriever_name


@PAYLOADS
@given(reports, reports)
def test_folding_in_a_payload_again_changes_nothing(a: Report, b: Report) -> None:
    merged = a.merge(b)
    assert merged.merge(b) == merged
    assert merged.merge(a) == merged


@PAYLOADS
@given(st.lists(reports, max_size=4))
def test_payloads_merge_the_same_after_travelling_as_builtins(payloads: list[Report]) -> None:
    sent = [over_the_wire(p) for p in payloads]
    assert as_sent(merge_all(sent)) == as_sent(merge_all(payloads))


def test_the_canonical_order_sorts_gates_by_test_and_keeps_each_once() -> None:
    # Hand-built: two workers ran test_b and test_a; both recorded the declared gate (nodeid
    # None). The merge keeps one declared gate, first (None sorts as ""), then test_a, test_b.
    def gate(nodeid: str | None) -> dict[str, Any]:
        return GateOutcome(
            "recall@3>=0.5", "recall@3", ">=", 0.5, 2 / 3, True, None, None, None, 3, 1, "assert"
        ).to_dict() | {"nodeid": nodeid}

    first = Report(gates=[gate("test_b.py::test_b"), gate(None)], retriever_name="z.search")
    second = Report(gates=[gate(None), gate("test_a.py::test_a")], retriever_name="a.search")
    merged = first.merge(second)
    assert [g["nodeid"] for g in merged.gates] == [None, "test_a.py::test_a", "test_b.py::test_b"]
    assert merged.retriever_name == "a.search"
