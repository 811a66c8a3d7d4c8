"""Under pytest-xdist (``-n 2``): one retriever run in total, the same artifact as ``-n 0``.

The retriever appends one line per call to calls.log (plugin_helpers.CONFTEST), so calls are
counted across worker processes. One query raises, so both runs also fail the session the same
way while every test passes.
"""

from __future__ import annotations

from typing import Any

import pytest
from plugin_helpers import RetrievalProject, conftest_with, esc

CONFTEST = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text, k):
            log_call(text)
            if text == "Can I send invoices by fax?":
                raise RuntimeError("shard 3 offline")
            return RANKINGS[text][:k]
        return search
    """
)

# Several files and tests, so that both workers run gates; each file uses a different entry point
# to the run (fixtures, assert_* gates, Score twins).
TEST_FILES = {
    "test_fixtures.py": """
        def test_run(retrieval_run):
            assert len(retrieval_run) == 4

        def test_evaluation(retrieval_evaluation):
            assert retrieval_evaluation.evaluated == 3
    """,
    "test_gates.py": """
        from pytest_retrieval.gates import assert_mrr, assert_recall_at

        def test_recall():
            assert_recall_at(3) >= 0.6

        def test_mrr_multi_hop():
            assert_mrr(slice="multi-hop") >= 1.0
    """,
    "test_scores.py": """
        from pytest_retrieval.gates import ndcg_at, precision_at

        def test_ndcg():
            assert ndcg_at(3) >= 0.4

        def test_precision():
            assert precision_at(3, slice="exact-lookup") >= 0.1
    """,
}


def write(project: RetrievalProject) -> None:
    project.write(
        conftest=CONFTEST, ini={"retrieval_thresholds": "recall@3 >= 0.5 slice=*\nmrr >= 0.4"}
    )
    for name, source in TEST_FILES.items():
        project.tests(source, name=name)


def comparable(artifact: dict[str, Any]) -> dict[str, Any]:
    """The artifact without what legitimately differs between two runs: time, latency, the
    artifact's own path, and the order gates ran in (workers interleave them)."""
    queries = [{k: v for k, v in q.items() if k != "latency_ms"} for q in artifact["queries"]]
    settings = {k: v for k, v in artifact["settings"].items() if k != "json"}
    gates = sorted(artifact["gates"], key=lambda g: (g["nodeid"], g["name"]))
    dropped = {"created", "latency_ms", "queries", "settings", "gates"}
    rest = {k: v for k, v in artifact.items() if k not in dropped}
    return {**rest, "queries": queries, "settings": settings, "gates": gates}


def test_n2_calls_the_retriever_once_per_query_and_writes_the_n0_artifact(
    retrieval_project: RetrievalProject,
) -> None:
    write(retrieval_project)
    serial = retrieval_project.run("-n", "0", "--retrieval-json", "serial.json")
    serial.assert_outcomes(passed=9)
    assert serial.ret == pytest.ExitCode.TESTS_FAILED  # the fax query failed
    serial_calls = retrieval_project.calls()
    (retrieval_project.path / "calls.log").unlink()

    parallel = retrieval_project.run_subprocess("-n", "2", "--retrieval-json", "parallel.json")
    parallel.assert_outcomes(passed=9)
    assert parallel.ret == pytest.ExitCode.TESTS_FAILED
    parallel.stdout.fnmatch_lines(["created: 2/2 workers*"])

    # 4 scorable queries (the held-out one is sealed): one call each, in each mode.
    scorable = [
        "How long is the refund window?",
        "How do I set up SSO with Okta?",
        "Where do I download invoices?",
        "Can I send invoices by fax?",
    ]
    assert sorted(serial_calls) == sorted(scorable)
    assert sorted(retrieval_project.calls()) == sorted(scorable)

    one = retrieval_project.artifact("serial.json")
    two = retrieval_project.artifact("parallel.json")
    assert two["results"] == one["results"]
    assert [(q["id"], q["rankings"], q["metrics"]) for q in two["queries"]] == [
        (q["id"], q["rankings"], q["metrics"]) for q in one["queries"]
    ]
    assert comparable(two) == comparable(one)
    # Hand-computed anchors, so that "equal" cannot mean "equally empty": overall recall@3 =
    # (1 + 1 + 0) / 3 over refund, sso, invoice (fax failed but has no relevant document).
    (overall,) = [r for r in two["results"] if r["column"] == "overall"]
    assert overall["metrics"]["recall@3"] == pytest.approx(2 / 3)
    assert two["retriever"]["name"] == "conftest.retriever_under_test.<locals>.search"
    assert two["errors"] == [
        {
            "query_id": "fax",
            "stage": "retriever",
            "type": "RuntimeError",
            "message": "shard 3 offline",
        }
    ]
    # 2 assert_* gates + 3 declared (slice=* gives exact-lookup and multi-hop, plus mrr); the
    # Score twins are not gates.
    assert len(two["gates"]) == 5

    # The controller prints the merged section and every gate, once.
    parallel.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval =*",
                # the compact summary: recall@1 = (0 + 1/2 + 0) / 3, recall@3 = 2/3
                "recall * 0.1667 * 0.6667",
                "*",
                "1 queries failed (they score 0 and fail the session):",
                "  fax [retriever] RuntimeError: shard 3 offline",
                "*= retrieval gates: all passed =*",
            ]
        )
    )
    gate_lines = [line for line in parallel.outlines if line.startswith("PASS ")]
    assert len(gate_lines) == 5
