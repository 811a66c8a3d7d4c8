"""The plugin's fixtures, as a user's tests meet them (pytester projects, see plugin_helpers)."""

from __future__ import annotations

import pytest
from plugin_helpers import HELDOUT_TEXT, RANKINGS, RetrievalProject, conftest_with, esc

from pytest_retrieval.formats.golden_io import load_golden


def test_golden_set_gives_the_configured_queries_without_the_heldout_split(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        def test_golden(golden_set):
            assert [q.id for q in golden_set] == ["refund", "sso", "invoice", "fax"]
            assert golden_set.name == "help-centre"
            assert golden_set["sso"].judgments == {"sso-setup": 2, "okta": 1}
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=1)
    # Asking for the golden set alone does not run the retriever.
    assert retrieval_project.calls() == []


def test_retrieval_run_maps_each_visible_query_to_its_final_ranking(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        def test_run(retrieval_run):
            assert retrieval_run == {
                "refund": ("shipping", "refund-policy", "contact"),
                "sso": ("okta", "mfa", "sso-setup"),
                "invoice": ("faq", "pricing", "contact"),
                "fax": ("invoices",),
            }
        """
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_retrieval_evaluation_scores_the_visible_queries_on_the_configured_metrics(
    retrieval_project: RetrievalProject,
) -> None:
    # Hand computation over refund, sso, invoice (fax has no relevant document: skipped):
    #   recall@3 = (1 + 1 + 0) / 3 = 0.6667     recall@1 = (0 + 1/2 + 0) / 3 = 0.1667
    #   mrr@3 = (1/2 + 1 + 0) / 3 = 0.5         precision@3 = (1/3 + 2/3 + 0) / 3 = 0.3333
    retrieval_project.write(
        ini={"retrieval_metrics": "recall,precision,mrr"},
        tests="""
        import pytest

        def test_evaluation(retrieval_evaluation):
            assert sorted(retrieval_evaluation.means) == [
                "mrr@1", "mrr@3", "precision@1", "precision@3", "recall@1", "recall@3"
            ]
            assert retrieval_evaluation.means["recall@3"] == pytest.approx(2 / 3)
            assert retrieval_evaluation.means["recall@1"] == pytest.approx(1 / 6)
            assert retrieval_evaluation.means["mrr@3"] == pytest.approx(0.5)
            assert retrieval_evaluation.means["precision@3"] == pytest.approx(1 / 3)
            assert retrieval_evaluation.skipped_no_relevant == ("fax",)
            assert retrieval_evaluation.query_ids == ("refund", "sso", "invoice", "fax")
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_retrieval_session_exposes_stages_and_scores(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        import pytest
        from pytest_retrieval.gates.gate import Selection
        from pytest_retrieval.scoring.metrics import MetricSpec

        def test_session(retrieval_session):
            assert retrieval_session.stages == ("retriever",)
            assert retrieval_session.default_stage == "retriever"
            # exact-lookup slice: refund (RR 1/2) and invoice (RR 0): (0.5 + 0) / 2
            score = retrieval_session.score(MetricSpec("mrr"), Selection(slice="exact-lookup"))
            assert score.value == pytest.approx(0.25)
            assert score.n == 2
        """
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_the_retriever_runs_once_per_query_however_many_tests_use_it(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at, mrr_at

        def test_one(retrieval_run):
            assert len(retrieval_run) == 4

        def test_two(retrieval_evaluation):
            assert retrieval_evaluation.evaluated == 3

        def test_three():
            assert_recall_at(3) >= 0.5

        def test_four():
            assert mrr_at(3) >= 0.5
        """
    )
    retrieval_project.run().assert_outcomes(passed=4)
    # One call per scorable query: the held-out query stays sealed and is never sent.
    assert sorted(retrieval_project.calls()) == sorted(t for t in RANKINGS if t != HELDOUT_TEXT)


def test_the_retriever_is_asked_for_the_largest_k_unless_a_depth_is_set(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text, top_k):
                log_call(f"{text}|{top_k}")
                return RANKINGS[text][:top_k]
            return search
        """
    )
    retrieval_project.write(conftest=conftest, ks="1,3", tests="def test_run(retrieval_run): pass")
    retrieval_project.run().assert_outcomes(passed=1)
    assert {line.rsplit("|", 1)[1] for line in retrieval_project.calls()} == {"3"}

    (retrieval_project.path / "calls.log").unlink()
    retrieval_project.run("--retrieval-depth", "5").assert_outcomes(passed=1)
    assert {line.rsplit("|", 1)[1] for line in retrieval_project.calls()} == {"5"}


def test_a_depth_below_the_largest_k_is_a_usage_error(retrieval_project: RetrievalProject) -> None:
    # recall@3 scored on 2 results would silently be recall@2 under another name.
    retrieval_project.write(ks="1,3", tests="def test_run(retrieval_run): pass")
    result = retrieval_project.run("--retrieval-depth", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "retrieval_depth = 2 is below the largest cutoff in retrieval_ks (3)" in str(
        result.stderr
    )
    assert "raise retrieval_depth to at least 3" in str(result.stderr)


def test_a_gate_deeper_than_the_results_asked_for_is_refused(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text, k):
                return RANKINGS[text][:k]
            return search
        """
    )
    retrieval_project.write(
        conftest=conftest,
        ks="1,2",
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_deep():
            assert_recall_at(3) >= 0.5
        """,
    )
    result = retrieval_project.run()
    result.assert_outcomes(failed=1)
    # The retriever honoured k=2, so recall@3 cannot be computed: an error, not a wrong number.
    result.stdout.fnmatch_lines(
        ["*recall@3 needs the top 3 results, but the retriever was asked for 2*"]
    )


def test_without_a_retriever_the_run_stops_with_a_usage_error_showing_the_conftest_snippet(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(conftest=None, tests="def test_run(retrieval_run): pass")
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        esc(
            [
                "*pytest-retrieval refused the run: no retriever to test",
                "Fix: define the retriever_under_test fixture:",
                "# conftest.py",
                '@pytest.fixture(scope="session")',
                "def retriever_under_test():",
                "*retrieval_retriever = myapp.search:build",
            ]
        )
    )


def test_retrieval_retriever_names_a_factory_that_builds_the_retriever(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.pytester.makepyfile(
        myretriever=f"""
        RANKINGS = {RANKINGS!r}

        def build():
            return lambda text: RANKINGS[text]
        """
    )
    retrieval_project.write(
        conftest=None,
        ini={"retrieval_retriever": "myretriever:build"},
        tests="""
        def test_run(retrieval_run):
            assert retrieval_run["refund"] == ("shipping", "refund-policy", "contact")
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_a_retrieval_retriever_that_cannot_be_imported_is_a_usage_error(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        conftest=None,
        ini={"retrieval_retriever": "nosuchmodule:build"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        esc(["*retrieval_retriever = 'nosuchmodule:build': cannot import 'nosuchmodule'*"])
    )


def test_the_header_names_the_golden_set_its_size_fingerprint_and_seal(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests="def test_nothing(): pass")
    fingerprint = load_golden(retrieval_project.path / "golden.yaml").short_fingerprint
    result = retrieval_project.run()
    result.stdout.fnmatch_lines(
        esc(
            [
                f"retrieval: golden set */golden.yaml (5 queries, fingerprint {fingerprint} "
                "of all 5), "
                "held-out split 'heldout' sealed"
            ]
        )
    )
    # A session in which no test needs the retriever does not run it, and prints no section.
    assert retrieval_project.calls() == []
    result.stdout.no_fnmatch_line("*= retrieval =*")
