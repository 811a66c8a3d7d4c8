"""Which baseline each regression check was judged against, and the queries it left out, as
the terminal, the JSON artifact, the Markdown and the HTML say it.

The ledger runs use :mod:`ledger_helpers`' real git repository (eight queries ``q1`` .. ``q8``,
one relevant document each, GOOD ranks it first). The feature branch adds ``q9`` and ``q10``
and rewords ``q3`` (same relevant document): against an entry recorded before that, the check
compares the 7 queries both have unchanged (8 + 2 - 3 = 7 of the 10), and leaves out 2 added
(q10, q9: sorted as strings) and 1 changed (q3). GOOD against GOOD moves nothing: every check
passes with delta 0.

The baseline-file runs use :mod:`baseline_helpers`' pytester project (12 queries, budget
``mrr 0.02``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from baseline_helpers import Project, golden
from ledger_helpers import GOLDEN, GOOD, GitProject

#: The feature branch's golden set: q3 reworded (its text hash changes, its label does not),
#: q9 and q10 added.
FEATURE_GOLDEN = GOLDEN.replace("question number 3\n", "what is question number 3\n") + "".join(
    f"  - id: q{i}\n    text: question number {i}\n    relevant: [d{i}]\n" for i in (9, 10)
)
FEATURE_RANKINGS = {**GOOD, "q9": ["d9", "x", "y"], "q10": ["d10", "x", "y"]}
LEFT_OUT = "compared 7 of 10 queries; left out 2 added (q10, q9), 1 changed (q3)"


def _regressions(path: Path) -> dict[str, dict[str, Any]]:
    artifact = json.loads(path.read_text(encoding="utf-8"))
    return {r["name"]: r for r in artifact["regressions"]}


def test_each_check_names_the_ledger_entry_it_was_judged_against_and_the_queries_left_out(
    tmp_path: Path,
) -> None:
    project = GitProject.create(
        tmp_path / "repo",
        tmp_path / "home",
        ini={"retrieval_regression": "mrr 0.1\nmrr 0.1 since=v1"},
    )
    a = project.head()
    project.git("tag", "v1")
    assert project.pytest().returncode == 0  # A recorded on main
    b = project.commit("B: docs, not recorded")
    c = project.commit("C: docs, not recorded")
    project.git("checkout", "-q", "-b", "feature")
    (project.path / "golden.yaml").write_text(FEATURE_GOLDEN, encoding="utf-8")
    project.commit("D: two queries added, q3 reworded", rankings=FEATURE_RANKINGS)
    reports = ("--retrieval-json=out.json", "--retrieval-markdown=out.md")
    run = project.pytest(*reports, "--retrieval-html=out.html")
    assert run.returncode == 0, run.stdout
    # The merge-base C has no entry: its nearest recorded ancestor A, 2 commits before it.
    ancestor = f"vs {a[:12]} (nearest recorded ancestor, 2 commits before)"
    anchor = f"since v1 ({a[:12]})"
    lines = run.stdout.splitlines()
    per_pr = f"PASS mrr budget 0.1000 [stage=retriever] {ancestor}: 1.0000 → 1.0000 (Δ +0.0000"
    since = f"PASS mrr budget 0.1000 [stage=retriever] {anchor}: 1.0000 → 1.0000 (Δ +0.0000"
    for head in (per_pr, since):
        (index,) = [i for i, line in enumerate(lines) if line.startswith(head)]
        assert ", n = 7" in lines[index]
        assert lines[index + 1] == f"    {LEFT_OUT}"
    checks = _regressions(project.path / "out.json")
    assert checks["mrr[budget=0.1]"]["baseline"] == {
        "source": "ancestor",
        "commit": a,
        "distance": 2,
        "label": "main",
        "merge_base": c,
    }
    assert checks["mrr[budget=0.1,since=v1]"]["baseline"] == {
        "source": "anchor",
        "commit": a,
        "distance": None,
        "label": "v1",
        "merge_base": None,
    }
    for check in checks.values():
        assert check["n"] == 7
        assert check["left_out"] == [
            {"reason": "added", "count": 2, "ids": ["q10", "q9"]},
            {"reason": "changed", "count": 1, "ids": ["q3"]},
        ]
    markdown = (project.path / "out.md").read_text(encoding="utf-8")
    # The two checks are told apart in the table, and each says what it left out under it.
    assert (
        f"| ✅ | `mrr` {ancestor} | declared | retriever · overall | 1.0000 | drop ≤ 0.1000 |"
        in (markdown)
    )
    assert f"| ✅ | `mrr` {anchor} | declared | retriever · overall | 1.0000 | drop ≤ 0.1000 |" in (
        markdown
    )
    assert f"- ✅ `mrr {ancestor}` (retriever · overall): {LEFT_OUT}" in markdown
    assert f"- ✅ `mrr {anchor}` (retriever · overall): {LEFT_OUT}" in markdown
    html = (project.path / "out.html").read_text(encoding="utf-8")
    assert f"<code>mrr</code> {ancestor}</td>" in html
    assert f"<code>mrr</code> {anchor}</td>" in html
    assert f'<td class="note">{LEFT_OUT}</td>' in html
    assert b[:12] not in run.stdout + markdown  # searched, not chosen: never named

    # Once C is recorded (a run on main), the branch is judged against its merge-base itself.
    project.git("checkout", "-q", "main")
    assert project.pytest().returncode == 0
    project.git("checkout", "-q", "feature")
    again = project.pytest(*reports)
    assert again.returncode == 0, again.stdout
    assert (
        f"PASS mrr budget 0.1000 [stage=retriever] vs merge-base {c[:12]}: 1.0000 → 1.0000"
    ) in again.stdout
    checks = _regressions(project.path / "out.json")
    assert checks["mrr[budget=0.1]"]["baseline"] == {
        "source": "merge-base",
        "commit": c,
        "distance": 0,
        "label": "main",
        "merge_base": c,
    }
    assert f"| ✅ | `mrr` vs merge-base {c[:12]} | declared |" in (
        (project.path / "out.md").read_text(encoding="utf-8")
    )


def test_a_check_against_the_baseline_file_names_it_in_the_artifact_and_its_left_out_queries(
    pytester: pytest.Pytester,
) -> None:
    project = Project(pytester).write()
    project.update()
    # q13 added and q05 relabelled: intersect compares the other 11 of the 13.
    project.write(queries=golden(13, relabel={"05": "doc-99"}))
    result = project.run("--retrieval-baseline-mode=intersect", "--retrieval-markdown=out.md")
    assert result.ret == pytest.ExitCode.OK
    outcome = project.regression()
    assert outcome["baseline"] == {
        "source": "file",
        "commit": None,
        "distance": None,
        "label": str(project.baseline),
        "merge_base": None,
    }
    assert outcome["left_out"] == [
        {"reason": "added", "count": 1, "ids": ["q13"]},
        {"reason": "changed", "count": 1, "ids": ["q05"]},
    ]
    left_out = "compared 11 of 13 queries; left out 1 added (q13), 1 changed (q05)"
    result.stdout.fnmatch_lines(
        [
            "PASS mrr budget 0.0200 [[]stage=retriever]: 1.0000 → 1.0000 (Δ +0.0000*",
            f"    {left_out}",
        ]
    )
    markdown = (project.path / "out.md").read_text(encoding="utf-8")
    # One baseline file per run: the check still reads "vs baseline", and names what it left out.
    assert "| ✅ | `mrr` vs baseline | declared |" in markdown
    assert f"- ✅ `mrr vs baseline` (retriever · overall): {left_out}" in markdown
