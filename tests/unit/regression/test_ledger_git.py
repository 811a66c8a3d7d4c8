"""Merge-base baselines on real git repositories: branches, merges, rebases, shallow clones.

Each test builds a repository in ``tmp_path`` (:class:`ledger_helpers.GitProject`: eight
queries, one relevant document each; GOOD ranks it first, BAD third) and runs pytest and the
console script in subprocesses, as a CI job would. Against an entry of GOOD, a run of BAD drops
MRR from 1 to 1/3 on all eight queries: delta -0.6667, sign-flip p = 2**-8 = 0.0039 < 0.05,
beyond the budget 0.1, so the budget fails. GOOD against GOOD moves nothing and passes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ledger_helpers import BAD, GOOD, GitProject, git_environment
from paths import ROOT

from pytest_retrieval.regression.ledger import Ledger


def regression(against: str) -> str:
    """The verdict line of GOOD's entry against BAD, naming the entry it was judged against."""
    return f"FAIL mrr budget 0.1000 [stage=retriever] {against}: 1.0000 → 0.3333 (Δ -0.6667"


def make(tmp_path: Path, **kwargs: object) -> GitProject:
    return GitProject.create(tmp_path / "repo", tmp_path / "home", **kwargs)  # type: ignore[arg-type]


def entries(project: GitProject) -> list[tuple[str, str, bool]]:
    with Ledger(project.path / ".retrieval-ledger.sqlite3", create=False) as ledger:
        return [(e.commit.commit, e.status, e.commit.dirty) for e in ledger.entries()]


def test_a_branch_is_judged_against_the_entry_of_its_merge_base_with_no_baseline_file(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    a = project.head()
    first = project.pytest("--retrieval-json=first.json")
    assert first.returncode == 0, first.stdout
    # A new ledger: the budget is skipped with the command that records the merge-base.
    assert f"`pytest-retrieval ledger record --at {a[:12]}`" in first.stdout
    assert f"retrieval: recorded {a[:12]} (main) in the ledger .retrieval-ledger.sqlite3" in (
        first.stdout
    )
    project.git("checkout", "-q", "-b", "feature")
    project.commit("B: the reranker is off", rankings=BAD)
    run = project.pytest("--retrieval-json=out.json")
    assert run.returncode == 1, run.stdout
    assert regression(f"vs merge-base {a[:12]}") in run.stdout
    assert f"retrieval: baseline: the merge-base {a[:12]} of HEAD and main, recorded " in (
        run.stdout
    )
    assert not (project.path / "retrieval-baseline.json").exists()
    # Compared with an entry, the determinism probe runs as against a baseline file (the
    # first run, with nothing to compare with, called the retriever once per query).
    first_probe = json.loads((project.path / "first.json").read_text())["determinism"]
    probe = json.loads((project.path / "out.json").read_text())["determinism"]
    assert first_probe is None
    assert (len(probe["queries"]), probe["noisy"]) == (5, False)
    # An unchanged branch passes against the same entry.
    project.git("checkout", "-q", "-b", "unchanged", "main")
    project.commit("C: docs only")
    same = project.pytest()
    assert same.returncode == 0, same.stdout
    assert (
        f"PASS mrr budget 0.1000 [stage=retriever] vs merge-base {a[:12]}: 1.0000 → 1.0000 "
        "(Δ +0.0000"
    ) in same.stdout


def test_without_an_entry_at_the_merge_base_the_nearest_recorded_ancestor_is_used_and_named(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    a = project.head()
    assert project.pytest().returncode == 0  # A recorded on main
    b = project.commit("B: docs, not recorded")
    c = project.commit("C: docs, not recorded")
    project.git("checkout", "-q", "-b", "feature")
    project.commit("D: worse", rankings=BAD)
    run = project.pytest()
    assert run.returncode == 1, run.stdout
    assert regression(f"vs {a[:12]} (nearest recorded ancestor, 2 commits before)") in run.stdout
    assert (
        f"baseline: the merge-base {c[:12]} of HEAD and main has no recorded run; its nearest "
        f"recorded ancestor is {a[:12]}, 2 commits before it on main's first-parent history"
    ) in run.stdout
    assert b not in run.stdout  # B was searched, not chosen: never named


def test_a_merge_base_on_a_merged_branch_falls_back_along_the_first_parent_history(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    a = project.head()
    assert project.pytest().returncode == 0  # A recorded
    project.git("checkout", "-q", "-b", "topic")
    f1 = project.commit("F1: topic work")
    project.git("checkout", "-q", "main")
    project.git("merge", "-q", "--no-ff", "topic", "-m", "M: merge topic")
    m = project.head()
    assert project.pytest().returncode == 0  # M recorded on main
    # A branch from main's merge commit is judged against M's own entry.
    project.git("checkout", "-q", "-b", "after-merge", m)
    project.commit("G: worse", rankings=BAD)
    after = project.pytest()
    assert regression(f"vs merge-base {m[:12]}") in after.stdout
    assert f"baseline: the merge-base {m[:12]} of HEAD and main, recorded" in after.stdout
    # A branch from F1 (merged, but never recorded): its merge-base with main is F1, whose
    # first parent A has an entry.
    project.git("checkout", "-q", "-b", "from-topic", f1)
    project.commit("H: worse", rankings=BAD)
    side = project.pytest()
    assert regression(f"vs {a[:12]} (nearest recorded ancestor, 1 commit before)") in side.stdout
    assert (
        f"the merge-base {f1[:12]} of HEAD and main has no recorded run; its nearest recorded "
        f"ancestor is {a[:12]}, 1 commit before it"
    ) in side.stdout


def test_a_rebase_moves_the_merge_base_and_with_it_the_entry_compared_with(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    a = project.head()
    assert project.pytest().returncode == 0  # A (GOOD) recorded
    project.git("checkout", "-q", "-b", "feature")
    project.commit("B: docs")
    project.git("checkout", "-q", "main")
    c = project.commit("C: the reranker is off on main", rankings=BAD)
    # On main HEAD is its own merge-base: with no entry yet, C is judged against its nearest
    # recorded ancestor A (a regression merged into main fails there too), and recorded.
    on_main = project.pytest()
    assert on_main.returncode == 1
    assert regression(f"vs {a[:12]} (nearest recorded ancestor, 1 commit before)") in (
        on_main.stdout
    )
    assert (
        f"baseline: HEAD is on main (its own merge-base), so it is compared with its nearest "
        f"recorded ancestor {a[:12]}, 1 commit before it on main's first-parent history"
    ) in on_main.stdout
    assert f"retrieval: recorded {c[:12]} (main) in the ledger" in on_main.stdout
    project.git("checkout", "-q", "feature")
    before = project.pytest()
    assert f"the merge-base {a[:12]} of HEAD and main, recorded" in before.stdout
    assert before.returncode == 0  # GOOD against A's GOOD
    project.git("rebase", "-q", "main")
    after = project.pytest()
    # Rebased onto C the branch has C's rankings (BAD) and is compared with C's entry (BAD).
    assert f"the merge-base {c[:12]} of HEAD and main, recorded" in after.stdout
    assert after.returncode == 0, after.stdout
    assert (
        f"PASS mrr budget 0.1000 [stage=retriever] vs merge-base {c[:12]}: 0.3333 → 0.3333"
    ) in after.stdout


def test_runs_on_a_dirty_tree_and_failed_runs_are_recorded_but_never_chosen(
    tmp_path: Path,
) -> None:
    project = make(tmp_path)
    a = project.head()
    project.set_rankings(BAD)  # uncommitted: the run does not measure commit A
    dirty = project.pytest()
    assert (
        f"retrieval: recorded {a[:12]} (main) in the ledger .retrieval-ledger.sqlite3 as dirty "
        "(uncommitted changes to tracked files): never used as a baseline"
    ) in dirty.stdout
    project.set_rankings({**GOOD, "q3": "fail"})  # q3's retriever call raises
    project.commit("B: q3 fails")
    b = project.head()
    failed = project.pytest()
    assert failed.returncode == 1
    assert f"recorded {b[:12]} (main) in the ledger .retrieval-ledger.sqlite3 as failed" in (
        failed.stdout
    )
    assert entries(project) == [(a, "ok", True), (b, "failed", False)]
    project.git("checkout", "-q", "-b", "feature")
    project.commit("C: fixed", rankings=GOOD)
    run = project.pytest()
    assert run.returncode == 0, run.stdout
    # B has an entry, so not "no recorded run": it has no usable one, and the message says why.
    assert (
        f"no baseline: neither the merge-base {b[:12]} of HEAD and main, which has no usable "
        "run (its run failed), nor any of the 1 first-parent ancestors searched has a usable "
        "run in .retrieval-ledger.sqlite3 (runs that were refused, errored, failed or made on "
        "a dirty work tree never count)"
    ) in run.stdout
    # With A recorded clean, B's failed run is named as the reason A is the baseline.
    recorded = project.cli("ledger", "record", "--at", a)  # A's own (GOOD) rankings
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    again = project.pytest()
    assert again.returncode == 0, again.stdout
    assert (
        f"baseline: the merge-base {b[:12]} of HEAD and main has no usable run (its run "
        f"failed); its nearest recorded ancestor is {a[:12]}, 1 commit before it"
    ) in again.stdout


def test_ledger_record_at_runs_the_commit_in_a_worktree_with_the_commits_own_code(
    tmp_path: Path,
) -> None:
    # The retriever lives in src/ and is found through PYTHONPATH, as an installed package
    # would be: only the worktree's counterpart of that entry makes the run measure A's code.
    project = make(tmp_path, src_layout=True)
    project.env = {"PYTHONPATH": os.pathsep.join([str(project.path / "src"), str(ROOT)])}
    a = project.head()
    project.git("checkout", "-q", "-b", "feature")
    project.commit("B: worse", rankings=BAD)
    recorded = project.cli("ledger", "record", "--at", "main")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert f"pytest-retrieval ledger: recorded {a[:12]} (main) in " in recorded.stdout
    assert entries(project) == [(a, "ok", False)]
    with Ledger(project.path / ".retrieval-ledger.sqlite3") as ledger:
        (entry,) = ledger.entries()
    # --at main names a branch: the entry is main's (the worktree is detached), and its
    # label is --label's alone (REV is how the commit was named, not a label).
    assert (entry.commit.branch, entry.label) == ("main", None)
    shown = project.cli("ledger", "show", "--branch", "main")
    assert shown.returncode == 0, shown.stderr
    assert a[:12] in shown.stdout
    assert entry.snapshot is not None
    assert entry.snapshot["queries"]["q1"]["top"] == {"retriever": ["d1", "x", "y"]}  # GOOD
    assert project.git("worktree", "list").count("\n") == 0  # the worktree was removed
    assert project.git("status", "--porcelain") == ""
    run = project.pytest()
    assert regression(f"vs merge-base {a[:12]}") in run.stdout
    assert f"baseline: the merge-base {a[:12]} of HEAD and main, recorded" in run.stdout


def test_ledger_record_at_an_unknown_revision_is_a_usage_error(tmp_path: Path) -> None:
    project = make(tmp_path)
    result = project.cli("ledger", "record", "--at", "no-such-tag")
    assert result.returncode == 2
    assert "unknown revision 'no-such-tag'" in result.stderr


def test_a_shallow_clone_is_a_usage_error_naming_fetch_depth_0(tmp_path: Path) -> None:
    project = make(tmp_path)
    project.git("checkout", "-q", "-b", "feature")
    project.commit("B: feature")
    project.git("checkout", "-q", "main")
    project.commit("C: main moves on")
    env = git_environment(project.home)
    for name, extra in (("single", []), ("both", ["--no-single-branch"])):
        clone = tmp_path / name
        subprocess.run(
            [
                "git",
                "clone",
                "-q",
                "--depth",
                "1",
                *extra,
                "--branch",
                "feature",
                f"file://{project.path}",
                str(clone),
            ],
            env=env,
            check=True,
        )
        shallow = GitProject(clone, project.home)
        run = shallow.pytest()
        assert run.returncode == 4, run.stdout
        assert "shallow clone" in run.stdout
        assert "`fetch-depth: 0` on actions/checkout (GitHub Actions)" in run.stdout
        assert "`GIT_DEPTH: 0` in the job's variables (GitLab CI)" in run.stdout


def test_the_target_branch_comes_from_the_setting_then_the_ci_base_ref_then_main(
    tmp_path: Path,
) -> None:
    project = make(tmp_path, branch="trunk")
    unknown = project.pytest()
    assert unknown.returncode == 4
    # The error says what it tried and where the name came from.
    assert (
        "unknown target branch 'main' (from the default main: retrieval_target_branch is not "
        "set and no CI base-ref variable is (GITHUB_BASE_REF is read only when "
        "GITHUB_ACTIONS=true, CI_MERGE_REQUEST_TARGET_BRANCH_NAME only when GITLAB_CI=true)): "
        "tried the local branch main (refs/heads/main) and origin/main "
        "(refs/remotes/origin/main), and neither exists"
    ) in unknown.stdout
    outside_ci = project.pytest(env={"GITHUB_BASE_REF": "trunk"})  # no GITHUB_ACTIONS=true
    assert outside_ci.returncode == 4
    assert "unknown target branch 'main' (from the default main" in outside_ci.stdout
    assert "set retrieval_target_branch to the branch pull requests merge into" in unknown.stdout
    from_ci = project.pytest(env={"GITHUB_ACTIONS": "true", "GITHUB_BASE_REF": "trunk"})
    assert from_ci.returncode == 0, from_ci.stdout
    assert "of HEAD and trunk has no recorded run" in from_ci.stdout or (
        "the ledger .retrieval-ledger.sqlite3 does not exist yet, so the merge-base"
        in from_ci.stdout
    )
    from_setting = project.pytest("--retrieval-target-branch=trunk")
    assert from_setting.returncode == 0
    assert "of HEAD and trunk" in from_setting.stdout


def test_a_ledger_outside_a_git_repository_is_a_usage_error(tmp_path: Path) -> None:
    project = make(tmp_path)
    subprocess.run(["rm", "-rf", str(project.path / ".git")], check=True)
    run = project.pytest()
    assert run.returncode == 4
    assert "retrieval_ledger needs a git repository" in run.stdout


def test_the_artifact_carries_the_commit_and_the_ci_run(tmp_path: Path) -> None:
    project = make(tmp_path)
    a = project.head()
    project.git("checkout", "-q", "-b", "feature")
    b = project.commit("B: docs")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": "8812",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_JOB": "retrieval",
        "GITHUB_BASE_REF": "main",
        "GITHUB_HEAD_REF": "feature",
    }
    run = project.pytest("--retrieval-json=out.json", env=env)
    assert run.returncode == 0, run.stdout
    artifact = json.loads((project.path / "out.json").read_text(encoding="utf-8"))
    assert artifact["commit"] == {
        "commit": b,
        "parent": a,
        "branch": "feature",
        "dirty": False,
        "merge_base": a,
        "target_branch": "main",
        "ci": "github",
        "ci_run_id": "8812",
        "ci_run_attempt": "2",
        "ci_job_id": "retrieval",
    }
