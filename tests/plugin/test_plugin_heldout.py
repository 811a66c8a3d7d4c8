"""The held-out guard: sealed by default, unsealed in CI with aggregates only, leakage refused.

The standard project (plugin_helpers) holds one held-out query with a distinctive id and text
(HELDOUT_ID, HELDOUT_TEXT); the retriever answers it with its one relevant document, so unsealed
its recall@3 is 1/1 = 1 and its precision@3 is 1/3.
"""

from __future__ import annotations

import json

import pytest
from plugin_helpers import (
    GOLDEN,
    HELDOUT_ID,
    HELDOUT_TEXT,
    RetrievalProject,
    conftest_with,
    esc,
)

SEALED = "held-out split is sealed; CI unseals it with --retrieval-heldout"

HELDOUT_TESTS = """
from pytest_retrieval.gates.gate import assert_precision_at, assert_recall_at, recall_at

def test_heldout_gate():
    assert_recall_at(3, split="heldout") >= 0.9

def test_heldout_score():
    assert recall_at(3, split="heldout") >= 0.9

def test_overall():
    assert_recall_at(3) >= 0.6
"""


@pytest.fixture
def in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")


def assert_no_heldout_detail(text: str) -> None:
    assert HELDOUT_ID not in text
    assert HELDOUT_TEXT not in text
    assert HELDOUT_TEXT.lower() not in text.lower()


# --- sealed ---------------------------------------------------------------------------------


def test_sealed_gates_on_the_heldout_split_are_skipped_with_the_reason(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "recall@3 >= 0.9 split=heldout"}, tests=HELDOUT_TESTS
    )
    result = retrieval_project.run("-rs")
    result.assert_outcomes(passed=1, skipped=3)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        esc(
            [
                # The declared gate (collected from pytest.ini) runs first.
                f"SKIPPED [1] *: {SEALED}",
                f"SKIPPED [1] test_retrieval.py:5: {SEALED}",
                f"SKIPPED [1] test_retrieval.py:8: {SEALED}",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: all passed =*",
                "SKIP recall@3 >= 0.9: n/a [split=heldout] (n=0) — "
                "test_retrieval.py::test_heldout_gate",
            ]
        )
    )
    result.stdout.fnmatch_lines(["*held-out split 'heldout' sealed"])


def test_sealed_the_retriever_never_sees_a_heldout_query(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests=HELDOUT_TESTS)
    result = retrieval_project.run("--retrieval-json", "out.json")
    result.assert_outcomes(passed=1, skipped=2)
    assert HELDOUT_TEXT not in retrieval_project.calls()
    assert len(retrieval_project.calls()) == 4
    assert_no_heldout_detail(result.stdout.str())
    artifact = retrieval_project.artifact()
    assert artifact["heldout"] == {"split": "heldout", "scored": False, "details": False}
    # Sealed held-out queries are not scored at all: nothing to redact, no column for them.
    assert artifact["redacted_queries"] == 0
    assert {r["column"] for r in artifact["results"]} == {
        "overall",
        "exact-lookup",
        "multi-hop",
        "no-answer",
    }


# --- unsealed --------------------------------------------------------------------------------


@pytest.mark.usefixtures("in_ci")
def test_unsealed_in_ci_the_heldout_split_is_scored_as_aggregates_only(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "precision@3 >= 0.5 split=heldout"},
        tests=HELDOUT_TESTS,
    )
    result = retrieval_project.run("-v", "--retrieval-heldout", "--retrieval-json", "out.json")
    # held-out recall@3 = 1 passes both code gates; held-out precision@3 = 1/3 fails.
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "precision@3 = 0.3333 < 0.5, expected >= 0.5 [stage=retriever split=heldout]",
                "queries scored: 1, skipped (no relevant document): 0",
                "held-out per-query details are hidden (--retrieval-heldout-details shows them)",
            ]
        )
    )
    # The table gains a held-out column: n=1, recall@3 1, precision@3 1/3.
    result.stdout.fnmatch_lines(
        [
            "*held-out split 'heldout' scored (aggregates only)",
            "metric * overall (n=3) * heldout (n=1)",
            "recall@3 * 0.6667 * 1.0000",
            "precision@3 * 0.3333 * 0.3333",
        ]
    )
    assert_no_heldout_detail(result.stdout.str() + result.stderr.str())
    assert retrieval_project.calls().count(HELDOUT_TEXT) == 1

    text = (retrieval_project.path / "out.json").read_text(encoding="utf-8")
    assert_no_heldout_detail(text)
    artifact = json.loads(text)
    assert artifact["heldout"] == {"split": "heldout", "scored": True, "details": False}
    assert artifact["redacted_queries"] == 1
    assert [q["id"] for q in artifact["queries"]] == ["refund", "sso", "invoice", "fax"]
    heldout = [r for r in artifact["results"] if r["column"] == "heldout"]
    assert len(heldout) == 1
    assert heldout[0]["split"] == "heldout"
    assert heldout[0]["queries"] == 1
    assert heldout[0]["metrics"]["recall@3"] == pytest.approx(1.0)
    assert heldout[0]["metrics"]["precision@3"] == pytest.approx(1 / 3)
    # The failed held-out gate keeps only its first line (no per-query explanation).
    (gate,) = [g for g in artifact["gates"] if g["metric"] == "precision@3"]
    assert gate["message"] == (
        "precision@3 = 0.3333 < 0.5, expected >= 0.5 [stage=retriever split=heldout]"
    )


@pytest.mark.usefixtures("in_ci")
def test_a_failing_heldout_query_is_counted_but_never_named(
    retrieval_project: RetrievalProject,
) -> None:
    # The error message carries the held-out text, as real errors often do.
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text):
                if "Quokka" in text:
                    raise LookupError(f"index shard missing for {text!r}")
                return RANKINGS[text]
            return search
        """
    )
    retrieval_project.write(conftest=conftest, tests=HELDOUT_TESTS)
    result = retrieval_project.run("--retrieval-heldout", "--retrieval-json", "out.json")
    # The held-out query scores 0: recall@3 = 0 < 0.9 fails both held-out checks.
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: recall@3 = 0.0000 < 0.9, expected >= 0.9 "
                "[stage=retriever split=heldout]",
                "E *queries scored: 1, skipped (no relevant document): 0",
                "E *1 query failed in the retriever and scored 0 (1 held-out, not named)",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        [
            "1 query failed (they score 0 and fail the session):",
            "  1 held-out queries (details hidden; --retrieval-heldout-details shows them)",
        ]
    )
    assert_no_heldout_detail(result.stdout.str() + result.stderr.str())
    text = (retrieval_project.path / "out.json").read_text(encoding="utf-8")
    assert_no_heldout_detail(text)
    assert json.loads(text)["errors"] == []


@pytest.mark.usefixtures("in_ci")
def test_heldout_details_show_the_heldout_queries_when_asked_for(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_precision_at

        def test_heldout():
            assert_precision_at(3, split="heldout") >= 0.5
        """
    )
    result = retrieval_project.run(
        "--retrieval-heldout", "--retrieval-heldout-details", "--retrieval-json", "out.json"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"E *  {HELDOUT_ID} '{HELDOUT_TEXT}': precision@3 = 0.3333; first relevant at rank 1; "
            "returned export-data",
            "*held-out split 'heldout' scored with details",
        ]
    )
    artifact = retrieval_project.artifact()
    assert artifact["heldout"] == {"split": "heldout", "scored": True, "details": True}
    assert artifact["redacted_queries"] == 0
    (row,) = [q for q in artifact["queries"] if q["id"] == HELDOUT_ID]
    assert row["text"] == HELDOUT_TEXT
    assert row["rankings"] == {"retriever": ["export-data"]}
    assert row["metrics"]["retriever"]["precision@3"] == pytest.approx(1 / 3)


def test_the_fixtures_never_hand_out_heldout_queries(
    retrieval_project: RetrievalProject, in_ci: None
) -> None:
    retrieval_project.write(
        tests=f"""
        def test_fixtures(golden_set, retrieval_run, retrieval_evaluation):
            assert {HELDOUT_ID!r} not in golden_set
            assert {HELDOUT_ID!r} not in retrieval_run
            assert {HELDOUT_ID!r} not in retrieval_evaluation.query_ids
        """
    )
    retrieval_project.run("--retrieval-heldout").assert_outcomes(passed=1)


def test_unsealing_outside_ci_warns(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    retrieval_project.write(tests="def test_plain(): pass")
    result = retrieval_project.run("--retrieval-heldout")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*PytestWarning: pytest-retrieval: the held-out split is unsealed outside CI; every "
            "look at the held-out numbers makes them less trustworthy"
        ]
    )
    result.stdout.fnmatch_lines(["retrieval: golden set * held-out split 'heldout' unsealed"])

    monkeypatch.setenv("CI", "true")
    result = retrieval_project.run("--retrieval-heldout")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*unsealed outside CI*")


def test_unsealing_a_golden_set_without_heldout_queries_is_a_usage_error(
    retrieval_project: RetrievalProject, in_ci: None
) -> None:
    golden = GOLDEN.replace("    split: heldout\n", "")
    retrieval_project.write(golden=golden, tests="def test_plain(): pass")
    result = retrieval_project.run("--retrieval-heldout")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --retrieval-heldout: the golden set has no query in the held-out split "
            "'heldout' (splits: tune); set retrieval_heldout_split to the split you hold out"
        ]
    )


def test_retrieval_heldout_split_names_another_split(
    retrieval_project: RetrievalProject,
) -> None:
    golden = GOLDEN.replace("    split: heldout\n", "    split: test\n")
    retrieval_project.write(
        golden=golden,
        ini={"retrieval_heldout_split": "test"},
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_sealed():
            assert_recall_at(3, split="test") >= 0.9
        """,
    )
    result = retrieval_project.run("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(esc([f"SKIPPED [1] test_retrieval.py:5: {SEALED}"]))
    assert HELDOUT_TEXT not in retrieval_project.calls()


# --- leakage --------------------------------------------------------------------------------


def test_the_same_text_in_two_splits_is_a_usage_error_before_anything_runs(
    retrieval_project: RetrievalProject,
) -> None:
    # The held-out text again in the tune split, differing only in case and punctuation.
    leaked = GOLDEN + (
        f"  - id: leaked-copy\n    text: {HELDOUT_TEXT.upper()}?!\n    relevant: [export-data]\n"
    )
    retrieval_project.write(golden=leaked, tests="def test_plain(retrieval_run): pass")
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: */golden.yaml: golden set has 1 problem:",
            f"  - */golden.yaml:*: query 'leaked-copy', field 'text': leakage: the same text as "
            f"query '{HELDOUT_ID}' (on line *) is in split 'tune' and in split 'heldout' (a query "
            "(its text and context) must be in one split only: delete one of the two queries or "
            "move both into the same split)",
        ]
    )
    # Refused at configuration time: no test was even collected.
    result.stdout.no_fnmatch_line("collected*")
    assert retrieval_project.calls() == []


#: One question asked for two tenants, held out for acme; the tune copy's context is TUNE.
SCOPED = """\
version: 1
queries:
  - id: acme-refund
    text: How long is the refund window?
    relevant: [refund-policy]
    split: heldout
    context: {tenant: acme}
  - id: other-refund
    text: How long is the refund window?
    relevant: [refund-policy]
    context: TUNE
"""


def test_the_same_text_for_another_tenant_may_be_tuned_on_while_one_tenant_is_held_out(
    retrieval_project: RetrievalProject,
) -> None:
    # Two queries: the cache, run files and fingerprint key them apart by their context.
    retrieval_project.write(
        golden=SCOPED.replace("TUNE", "{tenant: globex}"),
        tests="def test_plain(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.OK
    assert "leakage" not in result.stderr.str() + result.stdout.str()
    assert retrieval_project.calls() == ["How long is the refund window?"]  # held-out: sealed


def test_the_same_text_and_context_in_two_splits_is_still_leakage(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=SCOPED.replace("TUNE", "{tenant: acme}"),
        tests="def test_plain(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "  - */golden.yaml:8: query 'other-refund', field 'text': leakage: the same "
            "text and context as query 'acme-refund' (on line 3) is in split 'tune' and in "
            "split 'heldout' (a query (its text and context) must be in one split only: "
            "delete one of the two queries or move both into the same split)",
        ]
    )
    assert retrieval_project.calls() == []
