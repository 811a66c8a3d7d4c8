"""The context slice rule (``slice=KEY:VALUE``) in one place: which queries a selection covers,
what ``KEY:*`` expands to, what a golden set refuses, and that a stored run (which keeps no
contexts) refuses to be selected by one rather than answering with no queries."""

from __future__ import annotations

import pytest

# numpy (through stats) must be imported early; see baseline_helpers.
import pytest_retrieval.scoring.stats  # noqa: F401
from pytest_retrieval.errors import InputError
from pytest_retrieval.gates.declared import expand_slices, parse_budget, parse_threshold
from pytest_retrieval.gates.gate import GateUsageError, Selection
from pytest_retrieval.golden.model import GoldenSet, Query
from pytest_retrieval.regression.pairs import CompareOptions
from pytest_retrieval.regression.rule import compare
from pytest_retrieval.regression.snapshot import Snapshot, build_snapshot, snapshot_mean
from pytest_retrieval.scoring.evaluate import evaluate


def covers(slice_name: str, context: dict[str, object] | None) -> bool:
    return Selection(slice=slice_name).matches("tune", (), heldout_split="heldout", context=context)


@pytest.mark.parametrize(
    ("slice_name", "context", "covered"),
    [
        ("tenant:acme", {"tenant": "acme"}, True),
        ("tenant:acme", {"tenant": "globex"}, False),
        ("tenant:acme", {}, False),
        ("tenant:acme", None, False),  # unknown (a stored run): never covered
        ("groups:hr", {"groups": ["support", "hr"]}, True),  # a list: membership
        ("groups:hr", {"groups": "hr"}, True),
        ("groups:hr", {"groups": [["hr"]]}, False),  # a list in a list is no value
        ("priority:3", {"priority": 3}, True),  # a number: its JSON spelling
        ("priority:3", {"priority": "3"}, True),
        ("priority:3", {"priority": 3.0}, False),  # 3.0 is spelt 3.0
        ("vip:true", {"vip": True}, True),
        ("vip:True", {"vip": True}, False),
        ("filters:x", {"filters": {"x": 1}}, False),  # a mapping is not one value
        ("url:http://a", {"url": "http://a"}, True),  # split at the first ':'
    ],
)
def test_a_context_slice_covers_the_queries_whose_context_value_answers_it(
    slice_name: str, context: dict[str, object] | None, covered: bool
) -> None:
    assert covers(slice_name, context) is covered


def test_a_plain_slice_still_reads_the_slice_tags_and_ignores_the_context() -> None:
    selection = Selection(slice="multi-hop")
    assert selection.matches("tune", ("multi-hop",), heldout_split="h", context=None)
    assert not selection.matches("tune", (), heldout_split="h", context={"multi-hop": "x"})


def test_a_context_slice_without_a_key_or_a_value_is_a_usage_error_with_the_fix() -> None:
    with pytest.raises(GateUsageError, match=r"slice ':acme' names no context key .*slice=KEY:"):
        covers(":acme", {"tenant": "acme"})


GOLDEN = GoldenSet(
    (
        Query("a1", "one", ["d1"], context={"tenant": "acme", "groups": ["hr", "legal"]}),
        Query("a2", "two", ["d2"], context={"tenant": "acme"}),
        Query("g1", "three", ["d3"], context={"tenant": "globex", "groups": "hr"}),
        Query("n1", "four", ["d4"]),
    )
)


def test_key_star_expands_to_one_line_per_value_present_and_a_plain_star_to_the_slices() -> None:
    assert GOLDEN.context_values("groups") == ("hr", "legal")
    line = parse_threshold("recall@1 >= 0.5 slice=tenant:*")
    expanded = expand_slices(line, ["multi-hop"], GOLDEN.context_values)
    assert [t.selection.slice for t in expanded] == ["tenant:acme", "tenant:globex"]
    assert [t.item_name for t in expanded] == [
        "recall_at_1_ge_0.5-slice_tenant_acme",
        "recall_at_1_ge_0.5-slice_tenant_globex",
    ]
    plain = expand_slices(parse_threshold("recall@1 >= 0.5 slice=*"), ["multi-hop"])
    assert [t.selection.slice for t in plain] == ["multi-hop"]
    # the console script passes no contexts: the line stays one, refused where it is scored
    assert expand_slices(line, ["multi-hop"]) == [line]


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("tenant:acme", None),
        ("tenant:*", None),
        ("groups:legal", None),
        ("user:bob", ("slice 'user:bob': no query's context has the key 'user'", "groups, tenant")),
        ("tenant:initech", ("no query's context.tenant is 'initech'", "acme, globex")),
        ("multi-hop", ("unknown slice 'multi-hop'", "no slices")),
    ],
)
def test_the_golden_set_names_what_a_slice_that_selects_nothing_could_have_been(
    name: str, problem: tuple[str, str] | None
) -> None:
    found = GOLDEN.slice_problem(name)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem[0] in found[0]
        assert problem[1] in found[1]


def _snapshot(gold: GoldenSet) -> Snapshot:
    run = {q.id: [next(iter(q.judgments))] for q in gold}
    return build_snapshot(
        gold,
        {"retriever": evaluate(run, gold.qrels(), ["recall@1"])},
        lambda qid, stage: tuple(run[qid]),
        metric_names=["recall@1"],
        settings={},
    )


def test_a_stored_run_keeps_no_context_so_a_context_slice_refuses_it_not_scoring_none() -> None:
    built = _snapshot(GOLDEN)
    assert built.queries["a1"].context == {"tenant": "acme", "groups": ("hr", "legal")}
    stored = Snapshot.from_dict(built.to_dict())
    assert stored.queries["a1"].context is None
    assert "context" not in built.to_dict()["queries"]["a1"]  # the file holds no context
    # in the run: the mean over a1, a2 (both retrieved first: 1.0)
    with pytest.raises(InputError, match="selects queries by their context, which a stored run"):
        snapshot_mean(stored, "recall@1", Selection(slice="tenant:acme"))
    budget = parse_budget("recall@1 0.01 slice=tenant:acme")
    from_file = compare(stored, stored, budget, options=CompareOptions())
    assert from_file.status == "skipped"  # not checkable there, and no regression
    assert "a stored run does not keep" in from_file.message
    in_run = compare(stored, built, budget, options=CompareOptions())
    assert in_run.status == "pass"
    assert in_run.n == 2  # a1 and a2, paired with the baseline's values
