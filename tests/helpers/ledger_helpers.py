"""A real git repository holding a small retrieval project, for the ledger's tests.

:class:`GitProject` writes a project (golden set, pytest.ini, conftest.py, a ``retriever.py``
that answers from ``rankings.json``) into a folder, makes it a git repository with its own
identity (``GIT_CONFIG_NOSYSTEM``, no global config) and runs git and pytest in it, each in a
subprocess, as a user's CI would.

The golden set: eight queries ``q1`` .. ``q8``, each with one relevant document ``d1`` ..
``d8``. :data:`GOOD` ranks each query's relevant document first (MRR 1 on every query),
:data:`BAD` third (RR 1/3 on every query). Against a baseline of GOOD, BAD drops the mean
reciprocal rank by 1 - 1/3 = 0.6667 on all eight queries: the sign-flip test's p-value is
2**-8 = 0.0039 (every query moved the same way), a regression at alpha 0.05 with budget 0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from paths import ROOT
from plugin_helpers import ProjectFolder

#: Plugins the projects never use (each costs every pytest subprocess a second under load).
PLUGINS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

QUERIES = [f"q{i}" for i in range(1, 9)]
GOOD = {q: [f"d{q[1:]}", "x", "y"] for q in QUERIES}
BAD = {q: ["x", "y", f"d{q[1:]}"] for q in QUERIES}

GOLDEN = "version: 1\nqueries:\n" + "".join(
    f"  - id: {q}\n    text: question number {q[1:]}\n    relevant: [d{q[1:]}]\n" for q in QUERIES
)

RETRIEVER = """\
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def search(text, k):
    with open(os.path.join(HERE, "rankings.json"), encoding="utf-8") as handle:
        rankings = json.load(handle)
    query = "q" + text.rsplit(" ", 1)[1]
    if rankings.get(query) == "fail":
        raise RuntimeError("the index is down")
    return rankings[query][:k]
"""

CONFTEST = """\
import pytest


@pytest.fixture(scope="session")
def retriever_under_test():
    from retriever import search

    return search
"""

#: Variables of the CI this test suite may itself run under: a test sets the ones it means.
CI_VARIABLES = (
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_BASE_REF",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
    "GITHUB_JOB",
    "GITHUB_SHA",
    "GITLAB_CI",
    "CI_PIPELINE_ID",
    "CI_JOB_ID",
    "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
    "CI_COMMIT_REF_NAME",
    "CI_COMMIT_SHA",
    "BUILD_ID",
    "BUILD_NUMBER",
    "GITHUB_STEP_SUMMARY",
)


def git_environment(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git and pytest call: no system or global git config, no CI
    variables but those in ``extra``, this checkout's plugin first on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": str(home),
            "GIT_AUTHOR_NAME": "Test Author",
            "GIT_AUTHOR_EMAIL": "author@example.com",
            "GIT_COMMITTER_NAME": "Test Author",
            "GIT_COMMITTER_EMAIL": "author@example.com",
            "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
        }
    )
    env.update(extra or {})
    return env


class GitProject(ProjectFolder):
    """A project folder that is a git repository (see the module docstring)."""

    def __init__(self, path: Path, home: Path) -> None:
        super().__init__(path)
        self.home = home
        self.env: dict[str, str] = {}
        self.rankings_file = path / "rankings.json"

    @classmethod
    def create(
        cls,
        path: Path,
        home: Path,
        *,
        ini: dict[str, str] | None = None,
        rankings: dict[str, Any] | None = None,
        branch: str = "main",
        src_layout: bool = False,
    ) -> GitProject:
        """Write the project, ``git init`` it on ``branch`` and commit it ("A"). With
        ``src_layout`` the retriever is ``src/retriever.py`` (found through ``PYTHONPATH``, as
        an installed package would be), not beside the conftest."""
        path.mkdir(parents=True, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        project = cls(path, home)
        (path / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
        code = path / "src" if src_layout else path
        code.mkdir(exist_ok=True)
        project.rankings_file = code / "rankings.json"
        (code / "retriever.py").write_text(RETRIEVER, encoding="utf-8")
        (path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        (path / ".gitignore").write_text(
            ".retrieval-ledger.sqlite3*\n__pycache__/\n*.json.tmp\nout.json\nfirst.json\n",
            encoding="utf-8",
        )
        project.write_ini(
            {
                "retrieval_ledger": ".retrieval-ledger.sqlite3",
                "retrieval_baseline": "merge-base",
                "retrieval_regression": "mrr 0.1",
                **(ini or {}),
            }
        )
        project.set_rankings(GOOD if rankings is None else rankings)
        project.git("init", "-q", "-b", branch)
        project.git("config", "user.name", "Test Author")
        project.git("config", "user.email", "author@example.com")
        project.git("add", "-A")
        project.git("commit", "-q", "-m", "A: the project")
        return project

    def set_rankings(self, rankings: dict[str, Any]) -> None:
        self.rankings_file.write_text(json.dumps(rankings), encoding="utf-8")

    def git(self, *args: str) -> str:
        """Run git in the project; its stdout (a failure raises with git's message)."""
        done = subprocess.run(
            ["git", *args],
            cwd=self.path,
            env=git_environment(self.home, self.env),
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()

    def commit(self, message: str, *, rankings: dict[str, Any] | None = None) -> str:
        """Commit the work tree (with new rankings, when given); the new commit's id."""
        if rankings is not None:
            self.set_rankings(rankings)
        else:
            with open(self.path / "notes.txt", "a", encoding="utf-8") as out:
                out.write(message + "\n")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def pytest(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """pytest in a subprocess in the project; output in ``stdout`` (stderr merged)."""
        return subprocess.run(
            [sys.executable, "-m", "pytest", *PLUGINS, "-rfEs", *args],
            cwd=self.path,
            env=git_environment(self.home, {**self.env, **(env or {})}),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )

    def cli(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``pytest-retrieval ARGS`` in a subprocess in the project (stderr separate)."""
        return subprocess.run(
            [sys.executable, "-m", "pytest_retrieval.cli", *args],
            cwd=self.path,
            env=git_environment(self.home, {**self.env, **(env or {})}),
            capture_output=True,
            text=True,
            check=False,
        )


def dedent(text: str) -> str:
    return textwrap.dedent(text)
