"""The example project's second workflow: no committed baseline, the run ledger instead.

As example_project/README.md writes it down: the target branch records its run, and a branch
that switches the reranker off is judged against that run (its merge-base's), with no
``retrieval-baseline.json`` anywhere. The committed baseline and the Quickstart stay as they
are (tests/guards/test_example_project.py runs them).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ledger_helpers import git_environment
from test_example_project import EXAMPLE, run_example

LEDGER_FLAGS = ("--retrieval-baseline=merge-base", "--retrieval-ledger=.retrieval-ledger.sqlite3")


def git(project: Path, home: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=project,
        env=git_environment(home),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_example_runs_through_the_ledger_without_a_baseline_file(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    for name in (
        "pyproject.toml",
        "retrieval-gates.yaml",
        "conftest.py",
        "duplicates.tsv",
        "corpus.jsonl",
    ):
        shutil.copy(EXAMPLE / name, project / name)
    shutil.copytree(EXAMPLE / "golden", project / "golden")
    shutil.copytree(EXAMPLE / "tests", project / "tests")
    (project / ".gitignore").write_text(".retrieval-ledger.sqlite3*\n__pycache__/\n")
    # Two more budgets: on a metric the score floor decides (the entry keeps the scores) and
    # on one the ids as returned decide (chunks of one document: the entry keeps them too).
    gates = project / "retrieval-gates.yaml"
    gates.write_text(
        gates.read_text(encoding="utf-8").replace(
            "regressions:\n",
            "regressions:\n  - answer_rate 0.02 stage=retriever\n  - distinct@5 0.02\n",
        ),
        encoding="utf-8",
    )
    git(project, home, "init", "-q", "-b", "main")
    git(project, home, "add", "-A")
    git(project, home, "commit", "-q", "-m", "the example, without a baseline file")
    main = git(project, home, "rev-parse", "HEAD")

    status, output, document = run_example(tmp_path, *LEDGER_FLAGS, cwd=project)
    assert status == 0, output[-3000:]
    # A new ledger: every budget skipped (never red) with the command that fills it in.
    assert f"`pytest-retrieval ledger record --at {main[:12]}`" in output
    assert f"retrieval: recorded {main[:12]} (main) in the ledger .retrieval-ledger.sqlite3" in (
        output
    )
    assert document["commit"]["commit"] == main

    # A branch that changes nothing: its merge-base's entry, re-scored with the run's own
    # conventions (duplicate groups, score floors from the stored scores), gives every check
    # exactly this run's values.
    git(project, home, "switch", "-q", "-c", "docs-only")
    (project / "NOTES.md").write_text("Docs only.\n")
    git(project, home, "add", "-A")
    git(project, home, "commit", "-q", "-m", "docs only")
    same = tmp_path / "same"
    same.mkdir()
    status, output, document = run_example(same, *LEDGER_FLAGS, cwd=project)
    assert status == 0, output[-3000:]
    # 3 budgets, ndcg@5 over 4 slices, answer_rate, distinct@5.
    assert len(document["regressions"]) == 9
    for check in document["regressions"]:
        assert (check["status"], check["delta"]) == ("pass", 0.0), check["message"]
        assert check["baseline_mean"] == check["current_mean"]

    git(project, home, "switch", "-q", "-c", "no-reranker", "main")
    (project / "NOTES.md").write_text("Try the pipeline without its reranker.\n")
    git(project, home, "add", "-A")
    git(project, home, "commit", "-q", "-m", "no reranker")
    second = tmp_path / "second"  # its own report.json (an existing one would be a test path)
    second.mkdir()
    status, output, document = run_example(
        second, *LEDGER_FLAGS, env={"ACME_RERANKER": "off"}, cwd=project
    )
    assert status == 1, output[-3000:]
    assert "FAILED retrieval-gates.yaml::ndcg_at_10-budget_0.02" in output
    assert f"baseline: the merge-base {main[:12]} of HEAD and main, recorded" in output
    checks = {r["name"]: r for r in document["regressions"]}
    assert checks["ndcg@10[budget=0.02]"]["status"] == "regression"
    assert not list(project.rglob("retrieval-baseline.json"))
