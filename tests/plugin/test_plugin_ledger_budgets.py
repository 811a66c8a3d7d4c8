"""Anchored budgets (``since=``) and the headroom warning, on real git repositories.

The project is :mod:`ledger_helpers`' (eight queries, one relevant document each). A query
whose relevant document moves from rank 1 to rank 2 loses 1 - 1/2 = 0.5 of reciprocal rank, so
k such queries lower the MRR of eight by k/16: 3 queries 0.1875 (under a budget of 0.2), 6
queries 0.375 (over it). Six queries all moved the same way give the sign-flip test its
smallest one-sided p-value, 2**-6 = 0.0156 < 0.05.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ledger_helpers import BAD, GOOD, GitProject
from plugin_helpers import RetrievalProject

from pytest_retrieval.errors import InputError
from pytest_retrieval.gates.declared import parse_budget, parse_threshold


def slipped(count: int) -> dict[str, list[str]]:
    """GOOD with the first ``count`` queries' relevant document at rank 2."""
    rankings = dict(GOOD)
    for i in range(1, count + 1):
        rankings[f"q{i}"] = ["x", f"d{i}", "y"]
    return rankings


def test_since_is_part_of_the_one_budget_grammar() -> None:
    budget = parse_budget("ndcg@10 0.02 stage=reranker since=v1.0")
    assert budget.since == "v1.0"
    assert budget.name == "ndcg@10[budget=0.02,stage=reranker,since=v1.0]"
    assert budget.item_name == "ndcg_at_10-budget_0.02-stage_reranker-since_v1.0"
    assert parse_budget(budget.line) == budget
    assert ("since", "v1.0") in budget.properties()
    with pytest.raises(InputError, match="since is given twice"):
        parse_budget("mrr 0.01 since=a since=b")
    with pytest.raises(InputError, match="since= anchors a regression budget, not a threshold"):
        parse_threshold("mrr >= 0.5 since=v1")


def test_a_since_budget_without_a_ledger_is_a_usage_error_naming_both(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project.write(
        ini={"retrieval_regression": "mrr 0.02 since=v1.0"},
        tests="def test_nothing():\n    pass\n",
    )
    result = project.run()
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*'mrr 0.02 since=v1.0' is judged against the run ledger's entry of v1.0, but "
            "retrieval_ledger is not set (set retrieval_ledger = PATH*"
        ]
    )


def test_an_anchored_budget_gates_the_drift_that_each_merge_base_check_lets_through(
    tmp_path: Path,
) -> None:
    project = GitProject.create(
        tmp_path / "repo",
        tmp_path / "home",
        ini={"retrieval_regression": "mrr 0.2\nmrr 0.2 since=v1"},
    )
    a = project.head()
    project.git("tag", "v1")
    assert project.pytest().returncode == 0  # A recorded (both budgets skipped: no entry yet)
    b = project.commit("B: three queries slip", rankings=slipped(3))
    on_b = project.pytest()
    # B against A, both ways: 0.1875 < 0.2, within both budgets.
    assert on_b.returncode == 0, on_b.stdout
    project.commit("C: three more slip", rankings=slipped(6))
    on_c = project.pytest()
    assert on_c.returncode == 1, on_c.stdout
    # Per merge: C against B, 3 more queries, 0.1875 again: passes.
    assert (
        f"PASS mrr budget 0.2000 [stage=retriever] vs {b[:12]} (nearest recorded ancestor, "
        "1 commit before): 0.8125 → 0.6250 (Δ -0.1875"
    ) in on_c.stdout
    # Since v1: C against A, six queries, 0.375 > 0.2 and p = 2**-6: fails, in one family of 2.
    assert (
        f"FAIL mrr budget 0.2000 [stage=retriever] since v1 ({a[:12]}): 1.0000 → 0.6250 (Δ -0.3750"
    ) in on_c.stdout
    assert "2 regression checks, family-wise alpha 0.05" in on_c.stdout
    assert f"anchor: since=v1 is {a[:12]}, recorded" in on_c.stdout
    assert (
        f"its nearest recorded ancestor is {b[:12]}" not in on_c.stdout
    )  # C's parent B is recorded
    assert "FAILED pytest.ini::mrr-budget_0.2-since_v1" in on_c.stdout


def test_an_anchor_is_a_ledger_label_a_tag_or_a_commit_and_without_an_entry_it_is_skipped(
    tmp_path: Path,
) -> None:
    project = GitProject.create(
        tmp_path / "repo",
        tmp_path / "home",
        ini={"retrieval_regression": "mrr 0.2 since=release", "retrieval_baseline": ""},
    )
    a = project.head()
    unknown = project.pytest()
    assert unknown.returncode == 4
    assert "since=release: no ledger label, tag, branch or commit is called 'release'" in (
        unknown.stdout
    )
    assert "pytest-retrieval ledger label release REV" in unknown.stdout
    labelled = project.cli("ledger", "label", "release", a)
    assert labelled.returncode == 0, labelled.stderr
    assert f"labelled {a[:12]} release (no usable run of it is recorded yet" in labelled.stdout
    skipped = project.pytest()
    assert skipped.returncode == 0, skipped.stdout
    assert (
        f"no anchor: since=release is {a[:12]}, which has no recorded run in "
        ".retrieval-ledger.sqlite3"
    ) in skipped.stdout
    assert "record it: `pytest-retrieval ledger record --at release`" in skipped.stdout
    # That run recorded A: the next commit is judged against it.
    project.commit("B: worse", rankings=BAD)
    judged = project.pytest()
    assert judged.returncode == 1
    assert (
        f"FAIL mrr budget 0.2000 [stage=retriever] since release ({a[:12]}): 1.0000 → 0.3333"
    ) in (judged.stdout)


def test_runs_significantly_above_a_committed_baseline_three_times_running_warn_of_headroom(
    tmp_path: Path,
) -> None:
    project = GitProject.create(
        tmp_path / "repo",
        tmp_path / "home",
        ini={"retrieval_baseline": "retrieval-baseline.json"},
        rankings=BAD,
    )
    written = project.pytest("--retrieval-update-baseline")
    assert written.returncode == 0, written.stdout
    project.git("add", "retrieval-baseline.json")
    project.git("commit", "-q", "-m", "the baseline (BAD)")
    outputs = []
    for n in range(3):
        project.commit(f"run {n}", rankings=GOOD if n == 0 else None)
        run = project.pytest()
        assert run.returncode == 0, run.stdout
        assert "PASS mrr budget 0.1000 [stage=retriever]: 0.3333 → 1.0000 (Δ +0.6667" in run.stdout
        assert "— improvement: refresh the baseline" in run.stdout
        outputs.append(run.stdout)
    assert "headroom:" not in outputs[0]
    assert "headroom:" not in outputs[1]
    assert (
        "retrieval: headroom: mrr[budget=0.1] has been significantly above the baseline in the "
        "last 3 recorded runs"
    ) in outputs[2]
    assert "refresh it from several runs (pytest --retrieval-update-baseline " in outputs[2]
