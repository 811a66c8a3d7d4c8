"""Which commit a run measured: git and the CI's environment variables, without a shell.

Every run records where it came from (the JSON artifact's ``commit`` block, a ledger entry's
key): :func:`describe` reads the commit, its parent, the branch, whether the work tree has
uncommitted changes to tracked files (``dirty``; untracked files do not count, as for
``git describe --dirty``), and the CI run's id and attempt from the CI's own variables
(:func:`ci_environment`: GitHub Actions, GitLab CI, else a generic ``CI``). Outside a git
repository, or without a ``git`` binary, there is no commit (``None``): only what needs one (the
ledger, a merge-base baseline) makes that a usage error.

The ``git`` binary is called with :func:`subprocess.run`, never through a shell, with a timeout;
every failure a user can cause (not a repository, a shallow clone, an unknown target branch or
revision, a detached HEAD where a branch is needed) is a :class:`GitError`, an
:class:`~pytest_retrieval.errors.InputError` that names the fix.

**The merge-base.** :func:`merge_base` is ``git merge-base HEAD <target>``, with the target
branch taken as a local branch first, else ``origin/<target>``; the target is
``retrieval_target_branch``, else the CI's base-ref variable (``GITHUB_BASE_REF``,
``CI_MERGE_REQUEST_TARGET_BRANCH_NAME``), else ``main`` (:func:`target_branch`). A shallow
clone has no merge-base to find: the error names ``fetch-depth: 0`` (GitHub Actions) and
``GIT_DEPTH: 0`` (GitLab CI).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, Problem

#: Seconds one git command may take (a huge repository's ``rev-list`` included).
GIT_TIMEOUT_S = 60.0
#: The target branch when neither the setting nor the CI names one.
DEFAULT_TARGET = "main"
#: The variable ``pytest-retrieval ledger record --at REV`` sets to REV's branch for the run
#: in its (detached) worktree.
RECORDED_BRANCH = "PYTEST_RETRIEVAL_LEDGER_BRANCH"
#: The fix of a shallow clone, for both CIs.
SHALLOW_FIX = (
    "fetch the whole history: `fetch-depth: 0` on actions/checkout (GitHub Actions), "
    "`GIT_DEPTH: 0` in the job's variables (GitLab CI), or `git fetch --unshallow`"
)


class GitError(InputError):
    """git could not answer what a setting needs (a usage error naming the fix)."""


@dataclass(frozen=True, slots=True)
class CiRun:
    """The CI run a measurement came from (all None outside CI)."""

    provider: str | None = None  # "github", "gitlab", "generic"
    run_id: str | None = None
    run_attempt: str | None = None
    job_id: str | None = None
    #: The pull/merge request's target branch, when the CI says (``GITHUB_BASE_REF``, ...).
    base_ref: str | None = None
    #: The branch the CI built (the PR's head branch on a pull request).
    branch: str | None = None
    sha: str | None = None


def _clean(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


def ci_environment(env: Mapping[str, str] | None = None) -> CiRun:
    """The CI run described by ``env`` (default: ``os.environ``)."""
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") == "true":
        return CiRun(
            provider="github",
            run_id=_clean(env.get("GITHUB_RUN_ID")),
            run_attempt=_clean(env.get("GITHUB_RUN_ATTEMPT")),
            job_id=_clean(env.get("GITHUB_JOB")),
            base_ref=_clean(env.get("GITHUB_BASE_REF")),
            branch=_clean(env.get("GITHUB_HEAD_REF")) or _clean(env.get("GITHUB_REF_NAME")),
            sha=_clean(env.get("GITHUB_SHA")),
        )
    if env.get("GITLAB_CI") == "true":
        return CiRun(
            provider="gitlab",
            run_id=_clean(env.get("CI_PIPELINE_ID")),
            # GitLab retries a job under a new job id; it has no attempt counter.
            run_attempt=None,
            job_id=_clean(env.get("CI_JOB_ID")),
            base_ref=_clean(env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME")),
            branch=_clean(env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"))
            or _clean(env.get("CI_COMMIT_REF_NAME")),
            sha=_clean(env.get("CI_COMMIT_SHA")),
        )
    if _clean(env.get("CI")) not in (None, "0", "false"):
        return CiRun(
            provider="generic",
            run_id=_clean(env.get("BUILD_ID")) or _clean(env.get("BUILD_NUMBER")),
        )
    return CiRun()


def target_branch(setting: str | None, env: Mapping[str, str] | None = None) -> str:
    """The branch a merge-base is taken with: ``retrieval_target_branch``, else the CI's
    base-ref variable (set on pull/merge requests), else :data:`DEFAULT_TARGET`.

    The CI's variables are read only under that CI (``GITHUB_BASE_REF`` when
    ``GITHUB_ACTIONS=true``, ``CI_MERGE_REQUEST_TARGET_BRANCH_NAME`` when ``GITLAB_CI=true``),
    as :func:`ci_environment` reads every CI variable."""
    return setting or ci_environment(env).base_ref or DEFAULT_TARGET


def target_source(setting: str | None, env: Mapping[str, str] | None = None) -> str:
    """Where :func:`target_branch` took the branch from, as an error message says it."""
    if setting:
        return "retrieval_target_branch"
    ci = ci_environment(env)
    if ci.base_ref:
        variable = (
            "GITHUB_BASE_REF"
            if ci.provider == "github"
            else ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
        )
        return f"the CI's {variable}"
    return (
        f"the default {DEFAULT_TARGET}: retrieval_target_branch is not set and no CI base-ref "
        "variable is (GITHUB_BASE_REF is read only when GITHUB_ACTIONS=true, "
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME only when GITLAB_CI=true)"
    )


def git(cwd: str | os.PathLike[str], *args: str, check: bool = True) -> str | None:
    """The stripped stdout of ``git <args>`` run in ``cwd``; None when it exits non-zero and
    ``check`` is false. A missing git binary, a timeout or (with ``check``) a failure raises
    :class:`GitError` quoting git's message."""
    command = ["git", *args]
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            command,
            cwd=os.fspath(cwd),
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=environment,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitError(
            Problem("the git binary was not found", fix="install git or put it on PATH")
        ) from None
    except subprocess.TimeoutExpired:
        raise GitError(
            Problem(
                f"`git {' '.join(args)}` took longer than {GIT_TIMEOUT_S:.0f} s",
                fix="check the repository (a lock, a network filesystem) and try again",
                source=os.fspath(cwd),
            )
        ) from None
    except OSError as exc:  # cwd missing or not a folder
        raise GitError(
            Problem(f"cannot run git: {exc.strerror or exc}", source=os.fspath(cwd))
        ) from None
    if done.returncode != 0:
        if not check:
            return None
        message = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise GitError(
            Problem(
                f"`git {' '.join(args)}` failed: {message[-1] if message else done.returncode}",
                source=os.fspath(cwd),
            )
        )
    return done.stdout.strip()


def toplevel(cwd: str | os.PathLike[str]) -> str | None:
    """The work tree's root folder, or None when ``cwd`` is not in a git work tree (or git is
    missing)."""
    try:
        return git(cwd, "rev-parse", "--show-toplevel", check=False)
    except GitError:
        return None


def require_repository(cwd: str | os.PathLike[str], *, needed_by: str) -> str:
    """The work tree's root; a :class:`GitError` naming ``needed_by`` when there is none."""
    top = toplevel(cwd)
    if top is None:
        raise GitError(
            Problem(
                f"{needed_by} needs a git repository, and {os.fspath(cwd)} is not in one (or git "
                "is not installed)",
                fix="run it inside the repository's work tree (git init / git clone)",
            )
        )
    return top


def is_shallow(cwd: str | os.PathLike[str]) -> bool:
    """True for a shallow clone (its history stops short: no merge-base can be found)."""
    return git(cwd, "rev-parse", "--is-shallow-repository", check=False) == "true"


def resolve(cwd: str | os.PathLike[str], rev: str) -> str | None:
    """The full commit id ``rev`` names (a tag, a branch, a short id), or None."""
    if not rev or rev.startswith("-"):  # never read as an option of git
        return None
    return git(cwd, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)


def current_branch(cwd: str | os.PathLike[str]) -> str | None:
    """The checked-out branch, or None on a detached HEAD."""
    return git(cwd, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)


def target_ref(cwd: str | os.PathLike[str], target: str, *, source: str | None = None) -> str:
    """The ref of the target branch: the local branch first, else ``origin/<target>``;
    a :class:`GitError` naming both, and where the name came from (``source``, from
    :func:`target_source`), when neither exists."""
    for ref in (f"refs/heads/{target}", f"refs/remotes/origin/{target}"):
        if git(cwd, "rev-parse", "--verify", "--quiet", ref, check=False) is not None:
            return ref
    if is_shallow(cwd):
        raise GitError(
            Problem(
                f"the target branch {target!r} is not in this shallow clone",
                fix=SHALLOW_FIX,
            )
        )
    raise GitError(
        Problem(
            f"unknown target branch {target!r}"
            + (f" (from {source})" if source else "")
            + f": tried the local branch {target} (refs/heads/{target}) and origin/{target} "
            f"(refs/remotes/origin/{target}), and neither exists",
            fix=f"fetch it (git fetch origin {target}), or set retrieval_target_branch to the "
            "branch pull requests merge into",
        )
    )


def merge_base(cwd: str | os.PathLike[str], target: str, *, source: str | None = None) -> str:
    """``git merge-base HEAD <target>`` (the target as :func:`target_ref` finds it; ``source``:
    where its name came from, for the error); a :class:`GitError` for a shallow clone, an
    unknown branch, or histories that share no commit."""
    if resolve(cwd, "HEAD") is None:
        raise GitError(
            Problem("HEAD names no commit (a repository without commits)", fix="commit first")
        )
    ref = target_ref(cwd, target, source=source)
    found = git(cwd, "merge-base", "HEAD", ref, check=False)
    if found:
        return found
    if is_shallow(cwd):
        raise GitError(
            Problem(f"no merge-base of HEAD and {target} in this shallow clone", fix=SHALLOW_FIX)
        )
    raise GitError(
        Problem(
            f"HEAD and {target} share no commit, so they have no merge-base",
            fix="set retrieval_target_branch to the branch this one was made from",
        )
    )


def first_parent_chain(cwd: str | os.PathLike[str], commit: str, limit: int) -> list[str]:
    """``commit`` and its first-parent ancestors, nearest first, at most ``limit`` of them (the
    target branch's own history: its merges, not the commits of the branches merged in)."""
    text = git(cwd, "rev-list", "--first-parent", f"--max-count={limit}", commit, "--")
    return text.split() if text else []


def branch_named(cwd: str | os.PathLike[str], rev: str) -> str | None:
    """The branch ``rev`` names: ``main`` for ``main``, ``refs/heads/main`` or
    ``origin/main``; None for a tag, a commit id or an expression (``main~2``)."""
    if not rev or rev.startswith("-"):
        return None
    full = git(cwd, "rev-parse", "--symbolic-full-name", rev, check=False)
    if not full or "\n" in full:
        return None
    if full.startswith("refs/heads/"):
        return full.removeprefix("refs/heads/")
    if full.startswith("refs/remotes/"):
        name = full.removeprefix("refs/remotes/").partition("/")[2]
        return name if name and name != "HEAD" else None
    return None


def branch_holding(
    cwd: str | os.PathLike[str], commit: str, branches: Sequence[str], limit: int = 10_000
) -> str | None:
    """The first of ``branches`` (local, else ``origin/<name>``) whose first-parent history
    (its last ``limit`` commits) holds ``commit``: the branch it was made on."""
    for name in dict.fromkeys(b for b in branches if b):
        for ref in (f"refs/heads/{name}", f"refs/remotes/origin/{name}"):
            if git(cwd, "rev-parse", "--verify", "--quiet", ref, check=False) is None:
                continue
            if commit in first_parent_chain(cwd, ref, limit):
                return name
            break
    return None


def is_ancestor(cwd: str | os.PathLike[str], ancestor: str, descendant: str) -> bool:
    """True when ``ancestor`` is ``descendant`` or one of its ancestors."""
    return git(cwd, "merge-base", "--is-ancestor", ancestor, descendant, check=False) is not None


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """The commit a run measured, and the CI run that measured it."""

    commit: str
    parent: str | None
    branch: str | None
    dirty: bool
    merge_base: str | None = None
    target: str | None = None
    ci: CiRun = CiRun()

    @property
    def short(self) -> str:
        return self.commit[:12]

    def to_dict(self) -> dict[str, Any]:
        """Builtins, for the artifact and a ledger entry."""
        return {
            "commit": self.commit,
            "parent": self.parent,
            "branch": self.branch,
            "dirty": self.dirty,
            "merge_base": self.merge_base,
            "target_branch": self.target,
            "ci": self.ci.provider,
            "ci_run_id": self.ci.run_id,
            "ci_run_attempt": self.ci.run_attempt,
            "ci_job_id": self.ci.job_id,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CommitInfo:
        """Inverse of :meth:`to_dict`."""

        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        return cls(
            commit=str(data["commit"]),
            parent=text("parent"),
            branch=text("branch"),
            dirty=bool(data.get("dirty", False)),
            merge_base=text("merge_base"),
            target=text("target_branch"),
            ci=CiRun(
                provider=text("ci"),
                run_id=text("ci_run_id"),
                run_attempt=text("ci_run_attempt"),
                job_id=text("ci_job_id"),
            ),
        )


def dirty(cwd: str | os.PathLike[str], *, ignore: Sequence[str] = ()) -> bool:
    """True when tracked files differ from HEAD (staged or not); untracked files do not count,
    nor the files in ``ignore`` (the ledger itself, should it be committed: recording a run
    must not make the next one dirty)."""
    top = toplevel(cwd) or os.fspath(cwd)
    excluded = [
        f":(exclude,top){os.path.relpath(os.path.abspath(path), top)}"
        for path in ignore
        if not os.path.relpath(os.path.abspath(path), top).startswith("..")
    ]
    command = ["status", "--porcelain", "--untracked-files=no"]
    if excluded:
        command += ["--", ":/", *excluded]
    status = git(cwd, *command, check=False)
    return bool(status)


def describe(
    cwd: str | os.PathLike[str],
    *,
    target: str | None = None,
    env: Mapping[str, str] | None = None,
    ignore: Sequence[str] = (),
) -> CommitInfo | None:
    """The commit checked out in ``cwd`` (None outside a git work tree, in a repository
    without commits, or without git). ``target``: also record the merge-base with that branch
    when it can be found (never an error here); ``ignore``: files :func:`dirty` leaves out."""
    try:
        if toplevel(cwd) is None:
            return None
        head = resolve(cwd, "HEAD")
        if head is None:
            return None
        ci = ci_environment(env)
        parent = resolve(cwd, "HEAD^")
        # ``ledger record --at REV`` runs in a detached worktree and says REV's branch; the
        # CI's branch variable then names the job's checkout, not REV.
        branch = (
            _clean((os.environ if env is None else env).get(RECORDED_BRANCH))
            or current_branch(cwd)
            or ci.branch
        )
        base: str | None = None
        if target is not None:
            try:
                base = merge_base(cwd, target)
            except GitError:
                base = None
        return CommitInfo(
            commit=head,
            parent=parent,
            branch=branch,
            dirty=dirty(cwd, ignore=ignore),
            merge_base=base,
            target=target,
            ci=ci,
        )
    except GitError:
        return None
