"""Which ledger entry a run is judged against, and the fixes its messages print.

Real git repositories (:class:`ledger_helpers.GitProject`: eight queries, one relevant document
each; GOOD ranks it first, BAD third). Against an entry of GOOD, BAD drops MRR from 1 to 1/3 on
all eight queries: delta -0.6667, sign-flip p = 2**-8 = 0.0039, beyond the budget 0.1.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ledger_helpers import BAD, GOOD, GitProject, git_environment

from pytest_retrieval.regression.ledger import Ledger


def regression(against: str) -> str:
    """The failed check's line, naming the entry it was judged against."""
    return f"FAIL mrr budget 0.1000 [stage=retriever] {against}: 1.0000 → 0.3333 (Δ -0.6667"


#: q1's relevant document d1 at rank 4: a run at depth 3 (retrieval_ks = 1,3) never holds it
#: (RR 0), a run at depth 5 does (RR 1/4). Every other query has its document first (RR 1).
DEEP = {**GOOD, "q1": ["x", "y", "z", "d1", "w"]}


def make(tmp_path: Path, **kwargs: object) -> GitProject:
    return GitProject.create(tmp_path / "repo", tmp_path / "home", **kwargs)  # type: ignore[arg-type]


def test_a_re_run_on_the_target_branch_is_judged_against_the_parent_not_its_own_first_attempt(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    a = project.head()
    assert project.pytest().returncode == 0  # A (GOOD) recorded on main
    b = project.commit("B: the reranker is off, merged into main", rankings=BAD)
    ci = {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "888", "GITHUB_REF_NAME": "main"}
    for attempt in ("1", "2"):
        # Attempt 2 re-runs the failed job on the same commit: attempt 1 recorded B, and B's
        # own entry (BAD) must not become its baseline (that passed with delta 0).
        run = project.pytest(env={**ci, "GITHUB_RUN_ATTEMPT": attempt})
        assert run.returncode == 1, run.stdout
        assert regression(f"vs {a[:12]} (nearest recorded ancestor, 1 commit before)") in (
            run.stdout
        )
        assert (
            f"baseline: HEAD is on main (its own merge-base), so it is compared with its "
            f"nearest recorded ancestor {a[:12]}, 1 commit before it"
        ) in run.stdout
    # A local re-run on main is judged the same way.
    local = project.pytest()
    assert local.returncode == 1, local.stdout
    assert regression(f"vs {a[:12]} (nearest recorded ancestor, 1 commit before)") in local.stdout
    with Ledger(project.path / ".retrieval-ledger.sqlite3", create=False) as ledger:
        assert [e.commit.commit for e in ledger.entries()] == [a, b, b, b]


def test_of_two_entries_of_the_merge_base_the_one_at_this_runs_depth_is_the_baseline(
    tmp_path: Path,
) -> None:
    project = make(tmp_path, rankings=DEEP)
    a = project.head()
    assert project.pytest().returncode == 0  # A at depth 3 (retrieval_ks = 1,3)
    deeper = project.cli("ledger", "record", "--at", a, "--", "--retrieval-ks=1,3,5")
    assert deeper.returncode == 0, deeper.stdout + deeper.stderr
    with Ledger(project.path / ".retrieval-ledger.sqlite3", create=False) as ledger:
        assert [e.settings["depth"] for e in ledger.entries()] == [3, 5]  # the deeper is newer
    project.git("checkout", "-q", "-b", "feature")
    project.commit("B: docs only")
    run = project.pytest()
    # The ranking did not move: MRR (1 * 7 + 0) / 8 = 0.875 on both sides at depth 3, delta 0.
    # Scored on the depth-5 entry's whole list the baseline was (7 + 1/4) / 8 = 0.90625, and
    # the unchanged branch showed delta -0.0312.
    assert run.returncode == 0, run.stdout
    assert (
        f"PASS mrr budget 0.1000 [stage=retriever] vs merge-base {a[:12]}: 0.8750 → 0.8750 "
        "(Δ +0.0000"
    ) in run.stdout
    # At depth 5 the same branch is compared with the depth-5 entry: 0.90625 on both sides.
    deep = project.pytest("--retrieval-ks=1,3,5")
    assert deep.returncode == 0, deep.stdout
    assert (
        f"PASS mrr budget 0.1000 [stage=retriever] vs merge-base {a[:12]}: 0.9062 → 0.9062 "
        "(Δ +0.0000"
    ) in deep.stdout


def test_an_entry_of_another_depth_is_incomparable_with_the_ledger_record_fix(
    tmp_path: Path,
) -> None:
    project = make(tmp_path, rankings=DEEP)
    a = project.head()
    # Only a deeper entry of A: its list reaches past what a depth-3 run can hold.
    deeper = project.cli("ledger", "record", "--at", a, "--", "--retrieval-ks=1,3,5")
    assert deeper.returncode == 0, deeper.stdout + deeper.stderr
    project.git("checkout", "-q", "-b", "feature")
    project.commit("B: docs only")
    shallower = project.pytest()
    assert shallower.returncode == 1, shallower.stdout  # an incomparable budget fails its item
    assert "0.9062 → 0.8750" not in shallower.stdout  # never scored on the deeper list
    assert (
        f"incomparable: setting 'depth' is 3 now but 5 in the ledger entry of merge-base "
        f"{a[:12]}; use the same setting or record {a[:12]}'s run at this run's settings: "
        f"`pytest-retrieval ledger record --at {a[:12]} -- --retrieval-ks=1,3`"
    ) in shallower.stdout
    # A run that adds K=10, against A's entries at depths 5 and 3 (the newest): the fix is
    # a ledger record at the merge-base, never --retrieval-update-baseline (a usage error
    # with merge-base).
    assert project.cli("ledger", "record", "--at", a).returncode == 0  # depth 3, now newest
    more = project.pytest("--retrieval-ks=1,3,10")
    assert more.returncode == 1, more.stdout
    assert "--retrieval-update-baseline" not in more.stdout
    assert (
        f"incomparable: setting 'depth' is 10 now but 3 in the ledger entry of merge-base "
        f"{a[:12]}; use the same setting or record {a[:12]}'s run at this run's settings: "
        f"`pytest-retrieval ledger record --at {a[:12]} -- --retrieval-ks=1,3,10`"
    ) in more.stdout


def test_the_record_command_a_skip_prints_names_a_ledger_that_is_not_the_default(
    tmp_path: Path,
) -> None:
    project = make(tmp_path, ini={"retrieval_ledger": "ci/ledger.sqlite3"})
    project.git("checkout", "-q", "-b", "feature")
    project.commit("B: docs")
    a = project.git("rev-parse", "main")
    run = project.pytest()
    assert run.returncode == 0, run.stdout
    printed = f"pytest-retrieval ledger record --at {a[:12]} --ledger ci/ledger.sqlite3"
    assert f"`{printed}`" in run.stdout
    # Run as printed, it records into the ledger the run reads (not the default one).
    recorded = project.cli(*printed.split()[1:])
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert not (project.path / ".retrieval-ledger.sqlite3").exists()
    with Ledger(project.path / "ci" / "ledger.sqlite3", create=False) as ledger:
        assert a in {e.commit.commit for e in ledger.entries()}
    # The flag names the same file: the same fix.
    flagged = project.pytest("--retrieval-ledger=other.sqlite3")
    assert f"`pytest-retrieval ledger record --at {a[:12]} --ledger other.sqlite3`" in (
        flagged.stdout
    )


def test_ledger_record_at_a_commit_records_the_branch_whose_first_parent_history_holds_it(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    a = project.head()
    project.commit("B: docs on main")
    project.git("checkout", "-q", "-b", "develop")
    project.commit("C: docs on develop")
    recorded = project.cli("ledger", "record", "--at", a[:12])  # a commit id, not a branch
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    with Ledger(project.path / ".retrieval-ledger.sqlite3", create=False) as ledger:
        (entry,) = ledger.entries()
    assert (entry.commit.commit, entry.commit.branch, entry.label) == (a, "main", None)
    trend = project.cli("ledger", "trend", "--branch", "main", "--metric", "mrr")
    assert trend.returncode == 0, trend.stderr
    assert f"{a[:7]}=1.0000" in trend.stdout  # the entry is main's


def test_a_shallow_clone_with_an_anchored_budget_says_shallow_clone_first(
    tmp_path: Path,
) -> None:
    project = make(tmp_path, ini={"retrieval_regression": "mrr 0.1\nmrr 0.1 since=v1.0"})
    project.git("tag", "v1.0")
    project.commit("B: main moves on")
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{project.path}", str(clone)],
        env=git_environment(project.home),
        check=True,
    )
    run = GitProject(clone, project.home).pytest()
    assert run.returncode == 4, run.stdout
    errors = [line for line in run.stdout.splitlines() if "ERROR" in line or "shallow" in line]
    assert errors, run.stdout
    assert "shallow clone" in errors[0], run.stdout
    assert "`fetch-depth: 0` on actions/checkout (GitHub Actions)" in run.stdout
    assert "since=: since=" not in run.stdout
    assert "no ledger label, tag" not in run.stdout
