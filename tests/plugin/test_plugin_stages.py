"""Two stages: ``reranker_under_test(query, candidates)`` after the retriever.

The reranker here moves the documents in BOOSTED to the front (keeping the order otherwise), so
from the standard retriever rankings (plugin_helpers) the final rankings are:

    refund   refund-policy*, shipping, contact     RR 1      recall@1 1
    sso      sso-setup*, okta*, mfa                RR 1      recall@1 1/2
    invoice  faq, pricing, contact                 RR 0      recall@1 0

so, over refund, sso and invoice, mrr = (1 + 1 + 0) / 3 = 0.6667 and recall@1 = 1.5 / 3 = 0.5 at
the reranker, against mrr = (1/2 + 1 + 0) / 3 = 0.5 and recall@1 = (0 + 1/2 + 0) / 3 = 0.1667 at
the retriever. recall@3 is 0.6667 at both stages (reranking keeps the same three documents).
"""

from __future__ import annotations

import pytest
from plugin_helpers import CONFTEST, RetrievalProject, conftest_with, esc

RERANKER = """

BOOSTED = ("refund-policy", "sso-setup")


@pytest.fixture(scope="session")
def reranker_under_test():
    def rerank(query, candidates):
        return sorted(candidates, key=lambda d: d not in BOOSTED)
    return rerank
"""

TWO_STAGES = CONFTEST + RERANKER


def test_gates_default_to_the_last_stage_and_can_name_the_retriever(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        conftest=TWO_STAGES,
        tests="""
        from pytest_retrieval.gates.gate import assert_mrr, assert_recall_at

        def test_final():
            assert_mrr() >= 0.6

        def test_retriever_stage():
            assert_mrr(stage="retriever") >= 0.6

        def test_reranker_stage_named():
            assert_recall_at(1, stage="reranker") >= 0.5
        """,
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: mrr = 0.5000 < 0.6, expected >= 0.6 "
                "[stage=retriever split=overall]",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: 1 failed =*",
                "PASS mrr >= 0.6: 0.6667 (CI *) [stage=reranker] (n=3) — "
                "test_retrieval.py::test_final",
                "FAIL mrr >= 0.6: 0.5000 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_retriever_stage",
                "PASS recall@1 >= 0.5: 0.5000 (CI *) [stage=reranker] (n=3) — "
                "test_retrieval.py::test_reranker_stage_named",
            ]
        )
    )


def test_the_summary_prints_a_table_per_stage(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        conftest=TWO_STAGES,
        ini={"retrieval_metrics": "recall,mrr"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run("-v")
    result.assert_outcomes(passed=1)
    # Slices: exact-lookup = refund + invoice, multi-hop = sso (no-answer has no value).
    #   retriever  recall@1: (0+0)/2 = 0, 1/2     mrr@1: 0, 1     mrr@3: (1/2+0)/2 = 0.25, 1
    #   reranker   recall@1: (1+0)/2 = 0.5, 1/2   mrr@1: (1+0)/2 = 0.5, 1   mrr@3: 0.5, 1
    result.stdout.fnmatch_lines(
        [
            "stage: retriever",
            "metric    overall (n=3)    exact-lookup (n=2)    multi-hop (n=1)    no-answer (n=0)",
            "*",
            "recall@1  0.1667           0.0000                0.5000             —",
            "recall@3  0.6667           0.5000                1.0000             —",
            "mrr@1     0.3333           0.0000                1.0000             —",
            "mrr@3     0.5000           0.2500                1.0000             —",
            "recall@K curve (K=1,3): ▂▆",
            "",
            "stage: reranker",
            "metric    overall (n=3)    exact-lookup (n=2)    multi-hop (n=1)    no-answer (n=0)",
            "*",
            "recall@1  0.5000           0.5000                0.5000             —",
            "recall@3  0.6667           0.5000                1.0000             —",
            "mrr@1     0.6667           0.5000                1.0000             —",
            "mrr@3     0.6667           0.5000                1.0000             —",
            "recall@K curve (K=1,3): ▄▆",
            "",
            "queries: 4 run, 0 failed, 1 skipped in means*",
            "latency retriever: p50 * ms, p95 * ms",
            "latency reranker: p50 * ms, p95 * ms",
        ]
    )


def test_the_run_fixture_gives_the_final_ranking(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        conftest=TWO_STAGES,
        tests="""
        def test_run(retrieval_run, retrieval_session):
            assert retrieval_run["refund"] == ("refund-policy", "shipping", "contact")
            assert retrieval_session.stages == ("retriever", "reranker")
            assert retrieval_session.ranking("refund", "retriever") == (
                "shipping", "refund-policy", "contact"
            )
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_the_reranker_gets_the_query_text_and_the_raw_candidates(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            return lambda text: [(d, 0.5) for d in RANKINGS[text]]

        @pytest.fixture(scope="session")
        def reranker_under_test():
            def rerank(query, candidates):
                log_call(f"{query} <- {candidates[0]!r}")
                return [doc for doc, _score in reversed(candidates)]
            return rerank
        """
    )
    retrieval_project.write(
        conftest=conftest,
        tests="""
        def test_run(retrieval_run):
            assert retrieval_run["refund"] == ("contact", "refund-policy", "shipping")
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)
    assert "How long is the refund window? <- ('shipping', 0.5)" in retrieval_project.calls()
    assert len(retrieval_project.calls()) == 4


def test_retrieval_reranker_names_a_factory(retrieval_project: RetrievalProject) -> None:
    retrieval_project.pytester.makepyfile(
        myreranker="""
        def build():
            return lambda query, candidates: list(reversed(candidates))
        """
    )
    retrieval_project.write(
        ini={"retrieval_reranker": "myreranker:build"},
        tests="""
        def test_run(retrieval_run):
            assert retrieval_run["sso"] == ("sso-setup", "mfa", "okta")
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_a_failing_reranker_call_fails_that_query_at_the_reranker_stage(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text):
                if text == "Can I send invoices by fax?":
                    raise RuntimeError("retriever down")
                return RANKINGS[text]
            return search

        @pytest.fixture(scope="session")
        def reranker_under_test():
            def rerank(query, candidates):
                log_call(query)
                if query == "Where do I download invoices?":
                    raise ValueError("reranker model not loaded")
                return candidates
            return rerank
        """
    )
    retrieval_project.write(
        conftest=conftest,
        tests="""
        def test_stages(retrieval_session):
            # invoice keeps its retriever ranking; its reranker ranking is missing (scores 0)
            assert retrieval_session.ranking("invoice", "retriever") == (
                "faq", "pricing", "contact"
            )
            assert retrieval_session.ranking("invoice", "reranker") == ()
        """,
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "2 queries failed (they score 0 and fail the session):",
            "  invoice [reranker] ValueError: reranker model not loaded",
            "  fax [retriever] RuntimeError: retriever down",
        ]
    )
    # A query whose retriever call failed is not sent to the reranker.
    assert "Can I send invoices by fax?" not in retrieval_project.calls()
    assert len(retrieval_project.calls()) == 3


def test_declared_gates_can_name_a_stage(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        conftest=TWO_STAGES,
        ini={"retrieval_thresholds": "recall@1 >= 0.5\nrecall@1 >= 0.5 stage=retriever"},
    )
    result = retrieval_project.run("-v")
    # reranker recall@1 = 0.5 passes; retriever recall@1 = 0.1667 fails.
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "pytest.ini::recall_at_1_ge_0.5 PASSED*",
                "pytest.ini::recall_at_1_ge_0.5-stage_retriever FAILED*",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(["recall@1 = 0.1667 < 0.5, expected >= 0.5 [stage=retriever split=overall]"])
    )
