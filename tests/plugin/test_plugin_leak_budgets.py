"""Regression budgets on the lower-is-better leak metrics, as a user sees them: a baseline
records stale@K when the corpus can measure it, a rise beyond the budget fails naming the rise,
a fall reads as an improvement, an older baseline without the metric is named with the fix, and
a query whose forbidden list changed is a changed query.

Six queries, each with its current page (``cur-i``, relevant) and last year's (``old-i``,
superseded by ``cur-i``). With ``STALE=on`` the retriever ranks ``old-i`` second, else fourth:
stale@3 is 1/3 for every query with it on, 0 with it off (counted by hand). The relevant page is
first either way, so the relevance metrics do not move.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

QUERIES = [f"q{i}" for i in range(6)]


def _corpus(superseded: bool = True) -> str:
    docs: list[dict[str, str]] = []
    for i in range(6):
        old = {"_id": f"old-{i}", "text": f"last year's page {i}"}
        if superseded:
            old["superseded_by"] = f"cur-{i}"
        docs += [
            {"_id": f"cur-{i}", "text": f"page {i}"},
            old,
            {"_id": f"faq-{i}", "text": f"faq {i}"},
            {"_id": f"blog-{i}", "text": f"blog {i}"},
        ]
    return "\n".join(json.dumps(doc) for doc in docs)


def _golden(forbidden: dict[str, str] | None = None) -> str:
    lines = ["version: 1", "queries:"]
    for i, qid in enumerate(QUERIES):
        lines += [f"  - id: {qid}", f"    text: question {i}", f"    relevant: [cur-{i}]"]
        if forbidden and qid in forbidden:
            lines.append(f"    forbidden: [{forbidden[qid]}]")
    return "\n".join(lines) + "\n"


CONFTEST = """\
import os
import pytest

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        i = text.split()[-1]
        if os.environ.get("STALE") == "on":
            ranking = [f"cur-{i}", f"old-{i}", f"faq-{i}", f"blog-{i}"]
        else:
            ranking = [f"cur-{i}", f"faq-{i}", f"blog-{i}", f"old-{i}"]
        return ranking[:k]
    return search
"""


def _project(
    pytester: pytest.Pytester,
    budget: str | None,
    *,
    superseded: bool = True,
    forbidden: dict[str, str] | None = None,
) -> None:
    pytester.makefile(".jsonl", corpus=_corpus(superseded))
    pytester.makefile(".yaml", golden=_golden(forbidden))
    pytester.makeconftest(CONFTEST)
    ini = (
        "[pytest]\nretrieval_golden = golden.yaml\nretrieval_corpus = corpus.jsonl\n"
        "retrieval_ks = 3\nretrieval_short_rankings = off\n"
        "retrieval_baseline = baseline.json\n"
    )
    if budget is not None:
        ini += "retrieval_regression =\n" + textwrap.indent(budget, "    ") + "\n"
    pytester.makeini(ini)


def _write_baseline(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stale: str) -> Any:
    monkeypatch.setenv("STALE", stale)
    written = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--retrieval-update-baseline")
    assert written.ret == 0, written.stdout.str()
    return json.loads(Path(pytester.path, "baseline.json").read_text())


def test_a_rise_of_stale_at_3_beyond_its_budget_fails_naming_the_rise(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The baseline is written before any budget names stale@3: it records it all the same, as
    # the corpus marks documents superseded (forbidden@3 it cannot measure: no tenant, no list).
    _project(pytester, None)
    document = _write_baseline(pytester, monkeypatch, "off")
    assert "stale@3" in document["metrics"]
    assert "forbidden@3" not in document["metrics"]
    assert document["queries"]["q0"]["metrics"]["retriever"]["stale@3"] == 0.0
    _project(pytester, "stale@3 0.02")
    monkeypatch.setenv("STALE", "on")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--retrieval-markdown=report.md"
    )
    assert result.ret == 1
    # Six deltas of +1/3 (0.333333 as stored): only the all-plus pattern of 2**6 is as extreme,
    # p = 1/64 = 0.015625; every changed query moved alike, so the interval is the point.
    result.stdout.fnmatch_lines(
        [
            "*regression: stale@3 rose by 0.3333 (budget 0.02): stale@3 0.0000 → 0.3333 "
            "(Δ +0.3333, one-sided 95% lower bound +0.3333, 90% two-sided interval "
            "[[]+0.3333, +0.3333[]], one-sided p = 0.01562, n = 6) "
            "[[]stage=retriever split=overall[]]; budget 0.02 = 0.0200*",
            "*queries that got worse (6), worst first:",
            "*q0: stale@3 0.0000 → 0.3333",
        ]
    )
    # Six equal rises: no spread among them to size a smallest detectable rise from.
    assert (
        "; smallest detectable rise not estimated (the 6 changed queries all moved by the same "
        "amount: no spread to size it from)"
    ) in result.stdout.str()
    assert "detectable rise 0.0000" not in result.stdout.str()
    assert "improvement" not in result.stdout.str()
    markdown = Path(pytester.path, "report.md").read_text()
    assert "rise ≤ 0.0200" in markdown
    assert "significant rise" in markdown
    assert "drop ≤" not in markdown


def test_a_fall_of_stale_at_3_passes_and_reads_as_an_improvement(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, "stale@3 0.02")
    _write_baseline(pytester, monkeypatch, "on")
    monkeypatch.setenv("STALE", "off")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--retrieval-json=artifact.json"
    )
    assert result.ret == 0
    # Six falls of 1/3: for the better, so the test of a rise finds nothing (p = 1) and the
    # test of a fall is as significant as the rise above (p = 1/64).
    result.stdout.fnmatch_lines(
        [
            "PASS stale@3 budget 0.0200 [[]stage=retriever[]]: 0.3333 → 0.0000 (Δ -0.3333, "
            "95% lower bound -0.3333, p = 1, n = 6) — improvement: "
            "refresh the baseline",
        ]
    )
    assert "rose by" not in result.stdout.str()
    (check,) = json.loads(Path(pytester.path, "artifact.json").read_text())["regressions"]
    assert (check["status"], check["delta"], check["p_value_improvement"]) == (
        "improvement",
        -0.333333,
        1 / 64,
    )
    assert check["message"].startswith("improvement: stale@3 0.3333 → 0.0000 (Δ -0.3333, ")
    assert (
        "refresh the baseline (--retrieval-update-baseline) so the ceiling moves down"
        in (check["message"])
    )
    assert [d["query_id"] for d in check["better"]] == QUERIES
    assert check["worse"] == []


def test_a_budget_on_stale_at_3_against_an_older_baseline_without_it_names_the_fix(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The baseline was written before the corpus marked anything superseded: stale@3 could not
    # be measured, so it is not in it.
    _project(pytester, None, superseded=False)
    assert "stale@3" not in _write_baseline(pytester, monkeypatch, "off")["metrics"]
    _project(pytester, "stale@3 0.02")
    monkeypatch.setenv("STALE", "on")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*baseline.json has no stale@3; refresh the baseline so it records every metric "
            "you budget*"
        ]
    )
    assert "rose by" not in result.stdout.str()


def test_a_changed_forbidden_list_is_a_changed_query_for_the_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, "recall@3 0.02")
    _write_baseline(pytester, monkeypatch, "off")
    # Only q2's forbidden list changes (blog-2 is judged nothing): its labels changed.
    _project(pytester, "recall@3 0.02", forbidden={"q2": "blog-2"})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL recall@3[[]budget=0.02[]]: incomparable: the golden set changed since "
            "*baseline.json was made: queries 0 added, 0 removed, 1 changed (q2)*"
        ]
    )
    intersect = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--retrieval-baseline-mode=intersect"
    )
    assert intersect.ret == 0
    intersect.stdout.fnmatch_lines(["    compared 5 of 6 queries; left out 1 changed (q2)"])
