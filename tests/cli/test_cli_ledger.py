"""The ledger's history from the command line: show, trend (terminal, Markdown, HTML), prune;
and the drift benchmark kept working."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from paths import ROOT

from pytest_retrieval.cli import main
from pytest_retrieval.regression.commitinfo import CommitInfo
from pytest_retrieval.regression.history import sparkline, trend_test
from pytest_retrieval.regression.ledger import Ledger, LedgerEntry

VALUES = [0.80, 0.82, 0.84, 0.86, 0.88]


def recorded(path: Path) -> None:
    """Five usable entries whose overall NDCG@10 rises by 0.02 each, a failed run between them
    (never shown in a trend), and per-slice values that stay flat."""
    with Ledger(path) as ledger:
        for i, value in enumerate(VALUES):
            commit = CommitInfo(commit=f"{i}" * 40, parent=None, branch="main", dirty=False)
            ledger.add(
                LedgerEntry(
                    commit=commit,
                    status="ok",
                    created=f"2026-11-0{i + 1}T00:00:00Z",
                    means={
                        "retriever": {"overall": {"ndcg@10": 0.5}},
                        "reranker": {
                            "overall": {"ndcg@10": value, "mrr": 0.7},
                            "slice:paraphrase": {"ndcg@10": 0.6, "mrr": 0.5},
                        },
                    },
                    snapshot={"queries": {}},
                    checks=[{"name": "ndcg@10[budget=0.02]", "status": "pass"}],
                    uid=f"e{i}",
                )
            )
            if i == 2:
                ledger.add(
                    LedgerEntry(
                        commit=CommitInfo(commit="f" * 40, parent=None, branch="x", dirty=False),
                        status="errored",
                        created="2026-11-03T12:00:00Z",
                        reason="the retriever fixture raised",
                        uid="failed",
                    )
                )


def test_the_trend_test_is_mann_kendall_with_sens_slope() -> None:
    # Five rising values: every one of the 10 pairs rises, S = 10; Var(S) = 5*4*15/18 = 16.67;
    # z = (10 - 1) / sqrt(16.67) = 2.2045; two-sided p = erfc(2.2045 / sqrt 2) = 0.0275; every
    # pairwise slope is 0.02.
    found = trend_test(VALUES)
    assert found.s == 10
    assert found.p_value == pytest.approx(math.erfc(9 / math.sqrt(50 / 3) / math.sqrt(2)))
    assert found.p_value == pytest.approx(0.0275, abs=1e-4)
    assert found.slope == pytest.approx(0.02)
    assert trend_test([0.5, 0.5, 0.5]).slope == 0.0
    assert trend_test([0.5, 0.6]).p_value is None
    # Levels: (v - 0.80) / 0.08 * 7 + 0.5, floored: 0, 2, 4, 5, 7.
    assert sparkline(VALUES) == "▁▃▅▆█"


def test_ledger_trend_prints_each_metric_and_slice_with_its_sparkline_and_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.sqlite3"
    recorded(path)
    assert main(["ledger", "trend", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    # The budgeted metric (ndcg@10) on the final stage, overall and per slice; the errored run
    # is not a value.
    assert out[0] == (
        "ndcg@10 [overall, reranker] ▁▃▅▆█  0.8000 → 0.8800 over 5 entries; rising "
        "+0.0200/entry, Mann-Kendall p = 0.0275 (significant at 0.05)"
    )
    assert out[1] == (
        "  0000000=0.8000 1111111=0.8200 2222222=0.8400 3333333=0.8600 4444444=0.8800"
    )
    assert out[2].startswith("ndcg@10 [slice:paraphrase, reranker] ▄▄▄▄▄  0.6000 → 0.6000")
    assert (
        main(
            [
                "ledger",
                "trend",
                "--ledger",
                str(path),
                "--metric",
                "mrr",
                "--stage",
                "reranker",
                "--slice",
                "overall",
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    markdown = capsys.readouterr().out
    assert "| mrr | overall | reranker | ▄▄▄▄▄ | 0.7000 | 0.7000 |" in markdown
    html_path = tmp_path / "trend.html"
    assert (
        main(
            [
                "ledger",
                "trend",
                "--ledger",
                str(path),
                "--format",
                "html",
                "--output",
                str(html_path),
            ]
        )
        == 0
    )
    page = html_path.read_text(encoding="utf-8")
    assert page.count("<polyline") == 2  # ndcg@10: overall and paraphrase
    assert "<title>444444444444: 0.8800</title>" in page


def test_ledger_show_lists_every_run_with_its_status_and_prune_keeps_labelled_anchors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.sqlite3"
    recorded(path)
    with Ledger(path) as ledger:
        ledger.set_label("release", "0" * 40)
    assert main(["ledger", "show", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "errored" in out
    assert "0.8800" in out
    assert "labels: release = 000000000000" in out
    assert main(["ledger", "prune", "--ledger", str(path), "--keep", "2"]) == 0
    assert "pruned 3 entries" in capsys.readouterr().out
    with Ledger(path) as ledger:
        assert [e.uid for e in ledger.entries()] == ["e0", "e3", "e4"]


def test_the_drift_benchmark_runs_and_a_noiseless_retriever_fails_only_the_anchored_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_ledger_drift
    finally:
        sys.path.pop(0)
    results = bench_ledger_drift.main(["--streams", "2", "--prs", "3", "--resamples", "500"])
    noiseless = results["noiseless A/B (true -0.8 points per PR)"]
    # Per PR exactly -0.008 < the budget 0.01: never fails. Since the release: -0.016 after two.
    assert all(not per_pr for stream in noiseless for per_pr, _a, _f in stream)
    assert all([a for _p, a, _f in stream] == [False, True, True] for stream in noiseless)
    assert "first pull request at which the anchored budget fails" in capsys.readouterr().out
