"""The ``retrieval`` terminal section and the ``retrieval gates`` section.

Every cell below is hand-computed from the standard project (plugin_helpers). Columns: overall =
refund, sso, invoice (fax has no relevant document: skipped); exact-lookup = refund, invoice;
multi-hop = sso; no-answer = fax only, so it has no value (—).

    per query           refund   sso                         invoice
    recall@1            0        1/2                          0
    recall@3            1        1                            0
    precision@1         0        1   (okta)                   0
    precision@3         1/3      2/3                          0
    hit_rate@1          0        1                            0
    hit_rate@3          1        1                            0
    ndcg@1              0        1/3 (gain 1 / ideal gain 3)  0
    ndcg@3              0.63093  0.68853 (2.5 / 3.63093)      0
    map@1               0        1/2 (1/1 over 2 relevant)    0
    map@3               1/2      5/6 ((1 + 2/3) / 2)          0
    mrr@1               0        1                            0
    mrr@3               1/2      1                            0
"""

from __future__ import annotations

import pytest
from plugin_helpers import RetrievalProject, conftest_with, esc

from pytest_retrieval.formats.golden_io import load_golden

TABLE = [
    "stage: retriever",
    "metric       overall (n=3)    exact-lookup (n=2)    multi-hop (n=1)    no-answer (n=0)",
    "-----------  ---------------  --------------------  -----------------  -----------------",
    "recall@1     0.1667           0.0000                0.5000             —",
    "recall@3     0.6667           0.5000                1.0000             —",
    "precision@1  0.3333           0.0000                1.0000             —",
    "precision@3  0.3333           0.1667                0.6667             —",
    "hit_rate@1   0.3333           0.0000                1.0000             —",
    "hit_rate@3   0.6667           0.5000                1.0000             —",
    "ndcg@1       0.1111           0.0000                0.3333             —",
    "ndcg@3       0.4398           0.3155                0.6885             —",
    "map@1        0.1667           0.0000                0.5000             —",
    "map@3        0.4444           0.2500                0.8333             —",
    "mrr@1        0.3333           0.0000                1.0000             —",
    "mrr@3        0.5000           0.2500                1.0000             —",
    # sparkline of recall@1, recall@3: int(0.1667 * 8) = 1 -> ▂, int(0.6667 * 8) = 5 -> ▆
    "recall@K curve (K=1,3): ▂▆",
]


def test_the_section_shows_the_golden_set_and_a_table_of_every_metric_by_slice(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests="def test_run(retrieval_run): pass")
    fingerprint = load_golden(retrieval_project.path / "golden.yaml").short_fingerprint
    result = retrieval_project.run("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*= retrieval =*",
            f"golden set */golden.yaml · 5 queries · fingerprint {fingerprint} (all 5 queries) · "
            "held-out split 'heldout' sealed",
            "",
            *TABLE,
            "",
            "queries: 4 run, 0 failed, 1 skipped in means (no relevant document: no_relevant=skip)",
            "latency retriever: p50 *.* ms, p95 *.* ms",
        ]
    )
    # Nothing failed and no gate ran: no gates section.
    result.stdout.no_fnmatch_line("*retrieval gates*")


#: The compact summary (the default) of the same run: the overall scores as metric x K, then the
#: slices on the headline metrics (recall at the largest K, ndcg@3 as the K nearest 10, mrr).
#: mrr over the full ranking equals mrr@3 here (every ranking has 3 ids): refund 1/2, sso 1,
#: invoice 0 -> overall 0.5, exact-lookup 0.25. no-answer has no query to score: left out.
COMPACT = [
    "retriever (n=3)    @1      @3",
    "recall             0.1667  0.6667",
    "precision          0.3333  0.3333",
    "hit_rate           0.3333  0.6667",
    "ndcg               0.1111  0.4398",
    "map                0.1667  0.4444",
    "mrr                0.3333  0.5000",
    "slice               recall@3    ndcg@3    mrr",
    "overall (n=3)       0.6667      0.4398    0.5000",
    "exact-lookup (n=2)  0.5000      0.3155    0.2500",
    "multi-hop (n=1)     1.0000      0.6885    1.0000",
    "",
]


def test_the_default_summary_is_compact_and_fits_the_terminal(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    retrieval_project.write(tests="def test_run(retrieval_run): pass")
    fingerprint = load_golden(retrieval_project.path / "golden.yaml").short_fingerprint
    result = retrieval_project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*= retrieval =*",
            "golden set golden.yaml · 5 queries · fingerprint",
            f"  {fingerprint} (all 5 queries) · held-out split 'heldout'",
            "  sealed",
            "",
            *COMPACT,
            "queries: 4 run, 0 failed, 1 skipped in means (no relevant",
            "  document: no_relevant=skip); not shown, no query to score:",
            "  slice no-answer",
        ]
    )
    result.stdout.no_fnmatch_line("*no-answer (n=*")
    start = next(i for i, line in enumerate(result.outlines) if "= retrieval =" in line)
    assert max(len(line) for line in result.outlines[start:]) <= 60
    # retrieval_summary = full shows the full table, as -v does.
    retrieval_project.write(
        ini={"retrieval_summary": "full"}, tests="def test_run(retrieval_run): pass"
    )
    full = retrieval_project.run()
    full.stdout.fnmatch_lines(TABLE)


def test_the_slices_table_adds_every_gated_metric_of_its_stage(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "precision@1 >= 0.1"},
        tests="""
        from pytest_retrieval.gates.gate import assert_hit_rate_at

        def test_hit():
            assert_hit_rate_at(1) >= 0.1
        """,
    )
    result = retrieval_project.run()
    # precision@1 and hit_rate@1: refund 0, sso 1 (okta), invoice 0.
    result.stdout.fnmatch_lines(
        [
            "slice               recall@3    precision@1    hit_rate@1    ndcg@3    mrr",
            "overall (n=3)       0.6667      0.3333         0.3333        0.4398    0.5000",
            "exact-lookup (n=2)  0.5000      0.0000         0.0000        0.3155    0.2500",
            "multi-hop (n=1)     1.0000      1.0000         1.0000        0.6885    1.0000",
        ]
    )


def test_no_relevant_zero_scores_the_no_answer_query_and_says_so(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_no_relevant": "zero", "retrieval_metrics": "recall"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run("-v")
    # fax now counts as 0: overall recall@3 = (1 + 1 + 0 + 0) / 4 = 0.5; no-answer = 0.
    result.stdout.fnmatch_lines(
        [
            "metric    overall (n=4)    exact-lookup (n=2)    multi-hop (n=1)    no-answer (n=1)",
            "*",
            "recall@1  0.1250           0.0000                0.5000             0.0000",
            "recall@3  0.5000           0.5000                1.0000             0.0000",
            "*",
            "queries: 4 run, 0 failed, 0 skipped in means (no relevant document: no_relevant=zero)",
        ]
    )


def test_the_gates_section_lists_every_gate_with_its_verdict(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "mrr >= 0.5 slice=multi-hop"},
        tests="""
        from pytest_retrieval.gates.gate import assert_ndcg_at, assert_recall_at

        def test_pass():
            assert_recall_at(3) >= 0.5

        def test_fail():
            assert_ndcg_at(3, slice="exact-lookup") >= 0.5
        """,
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=2, failed=1)
    # ndcg@3 exact-lookup = (0.63093 + 0) / 2 = 0.3155; mrr multi-hop = sso's RR = 1.
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: 1 failed =*",
                # In collection order: pytest.ini's declared gate first.
                "PASS mrr >= 0.5: 1.0000 (CI *) [stage=retriever slice=multi-hop] (n=1) — "
                "pytest.ini::mrr_ge_0.5-slice_multi-hop",
                "PASS recall@3 >= 0.5: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_pass",
                "FAIL ndcg@3 >= 0.5: 0.3155 (CI *) [stage=retriever slice=exact-lookup] (n=2) — "
                "test_retrieval.py::test_fail",
            ]
        )
    )


def test_quiet_runs_show_only_what_failed(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_pass():
            assert_recall_at(3) >= 0.5
        """
    )
    result = retrieval_project.run("-q")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*= retrieval =*")
    result.stdout.no_fnmatch_line("retriever (n=3)*")
    # The verdict stays, alone: one line.
    result.stdout.fnmatch_lines(["*= retrieval gates: all passed =*", "1 passed in *"])

    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text):
                if text == "Where do I download invoices?":
                    raise TimeoutError("search backend too slow")
                return RANKINGS[text]
            return search
        """
    )
    retrieval_project.write(
        conftest=conftest,
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_pass():
            assert_recall_at(3) >= 0.5

        def test_fail():
            assert_recall_at(3) >= 0.9
        """,
    )
    result = retrieval_project.run("-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval =*",
                "1 query failed (they score 0 and fail the session):",
                "  invoice [retriever] TimeoutError: search backend too slow",
                "*= retrieval gates: 1 failed; 1 of 4 queries failed to run =*",
                "FAIL recall@3 >= 0.9: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_fail",
            ]
        )
    )
    result.stdout.no_fnmatch_line("stage: retriever")
    result.stdout.no_fnmatch_line("PASS *")


def test_a_failed_query_fails_the_session_even_when_every_test_passes(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text):
                if text == "Can I send invoices by fax?":
                    raise RuntimeError("shard 3 offline")
                return RANKINGS[text]
            return search
        """
    )
    retrieval_project.write(conftest=conftest, tests="def test_run(retrieval_run): pass")
    result = retrieval_project.run()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "queries: 4 run, 1 failed, 1 skipped in means*",
            "*",
            "1 query failed (they score 0 and fail the session):",
            "  fax [retriever] RuntimeError: shard 3 offline",
        ]
    )


def test_the_artifact_path_is_announced(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(tests="def test_run(retrieval_run): pass")
    result = retrieval_project.run("--retrieval-json", "reports/retrieval.json")
    result.stdout.fnmatch_lines(["retrieval: JSON artifact written to */reports/retrieval.json"])
    assert (retrieval_project.path / "reports" / "retrieval.json").is_file()
