"""Which commit and which CI run: the CI's variables, and git's answers as usage errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ledger_helpers import GitProject, git_environment

from pytest_retrieval.regression import commitinfo
from pytest_retrieval.regression.commitinfo import CiRun, GitError


def test_github_actions_variables_give_the_run_its_attempt_and_the_pull_requests_base() -> None:
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_RUN_ID": "9001",
        "GITHUB_RUN_ATTEMPT": "3",
        "GITHUB_JOB": "gate",
        "GITHUB_BASE_REF": "main",
        "GITHUB_HEAD_REF": "fix-sso",
        "GITHUB_REF_NAME": "42/merge",
        "GITHUB_SHA": "abc",
    }
    assert commitinfo.ci_environment(env) == CiRun(
        "github", "9001", "3", "gate", "main", "fix-sso", "abc"
    )
    assert commitinfo.target_branch(None, env) == "main"
    assert commitinfo.target_branch("release", env) == "release"
    # On a push GITHUB_BASE_REF is empty: the branch is the pushed ref.
    push = {**env, "GITHUB_BASE_REF": "", "GITHUB_HEAD_REF": "", "GITHUB_REF_NAME": "main"}
    assert commitinfo.ci_environment(push).base_ref is None
    assert commitinfo.ci_environment(push).branch == "main"


def test_gitlab_and_generic_ci_variables() -> None:
    gitlab = {
        "GITLAB_CI": "true",
        "CI_PIPELINE_ID": "77",
        "CI_JOB_ID": "1234",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "develop",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "topic",
        "CI_COMMIT_REF_NAME": "topic",
        "CI_COMMIT_SHA": "def",
    }
    assert commitinfo.ci_environment(gitlab) == CiRun(
        "gitlab", "77", None, "1234", "develop", "topic", "def"
    )
    assert commitinfo.target_branch(None, gitlab) == "develop"
    assert commitinfo.ci_environment({"CI": "true", "BUILD_NUMBER": "5"}) == CiRun("generic", "5")
    assert commitinfo.ci_environment({}) == CiRun()
    assert commitinfo.target_branch(None, {}) == "main"


def test_outside_a_repository_there_is_no_commit_and_what_needs_one_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in git_environment(tmp_path).items():
        monkeypatch.setenv(key, value)
    assert commitinfo.describe(tmp_path) is None
    with pytest.raises(GitError, match="retrieval_ledger needs a git repository"):
        commitinfo.require_repository(tmp_path, needed_by="retrieval_ledger")


def test_describe_reads_the_commit_parent_branch_and_dirty_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = GitProject.create(tmp_path / "repo", tmp_path / "home")
    for key, value in git_environment(project.home).items():
        monkeypatch.setenv(key, value)
    a = project.head()
    b = project.commit("B")
    found = commitinfo.describe(project.path, target="main")
    assert found is not None
    assert (found.commit, found.parent, found.branch, found.dirty, found.merge_base) == (
        b,
        a,
        "main",
        False,
        b,
    )
    (project.path / "golden.yaml").write_text("changed", encoding="utf-8")
    assert commitinfo.describe(project.path) is not None
    assert commitinfo.dirty(project.path)
    # An untracked file does not make the tree dirty, nor the ledger file when ignored.
    subprocess.run(["git", "checkout", "-q", "golden.yaml"], cwd=project.path, check=True)
    (project.path / "scratch.txt").write_text("x", encoding="utf-8")
    assert not commitinfo.dirty(project.path)
    project.git("checkout", "-q", "--detach")
    detached = commitinfo.describe(project.path)
    assert detached is not None
    assert detached.branch is None


def test_merge_base_errors_name_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = GitProject.create(tmp_path / "repo", tmp_path / "home")
    for key, value in git_environment(project.home).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(GitError, match="unknown target branch 'develop'"):
        commitinfo.merge_base(project.path, "develop")
    project.git("checkout", "-q", "--orphan", "unrelated")
    project.git("commit", "-q", "-m", "unrelated root")
    with pytest.raises(GitError, match="share no commit"):
        commitinfo.merge_base(project.path, "main")
    assert commitinfo.resolve(project.path, "--help") is None  # never read as an option
