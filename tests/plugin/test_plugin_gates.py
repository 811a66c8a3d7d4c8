"""Gate helpers in a user's tests: every assert_* gate passing and failing, the Score twins.

Expected values are computed by hand from the standard project (see plugin_helpers): the overall
selection is refund, sso and invoice (fax has no relevant document and is skipped in means).

    refund   shipping, refund-policy*, contact     relevant {refund-policy: 1}
    sso      okta*, mfa, sso-setup*                relevant {sso-setup: 2, okta: 1}
    invoice  faq, pricing, contact                 relevant {invoices: 1, billing: 1}
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from plugin_helpers import RetrievalProject, esc

# (helper call, hand-computed value, a threshold it passes, a threshold it fails)
CASES = [
    # recall@3 = (1 + 1 + 0) / 3
    ("assert_recall_at(3)", "recall@3", 2 / 3, 0.6, 0.7),
    # precision@3 = (1/3 + 2/3 + 0) / 3
    ("assert_precision_at(3)", "precision@3", 1 / 3, 0.3, 0.4),
    # hit_rate@1 = (0 + 1 + 0) / 3: only sso has a relevant document at rank 1
    ("assert_hit_rate_at(1)", "hit_rate@1", 1 / 3, 0.3, 0.4),
    # ndcg@3, exponential gain 2**g - 1, discount 1/log2(rank + 1):
    #   refund  DCG = 1/log2(3) = 0.63093, IDCG = 1                      -> 0.63093
    #   sso     DCG = 1/1 + 3/log2(4) = 2.5, IDCG = 3/1 + 1/log2(3) = 3.63093 -> 0.68853
    #   invoice 0                                  mean = 1.31946 / 3 = 0.43982
    ("assert_ndcg_at(3)", "ndcg@3", 0.43982, 0.4, 0.5),
    # map@3: refund 1/2; sso (1/1 + 2/3) / 2 = 5/6; invoice 0 -> (1/2 + 5/6) / 3 = 4/9
    ("assert_map_at(3)", "map@3", 4 / 9, 0.4, 0.5),
    # mrr: refund 1/2, sso 1, invoice 0 -> 1/2
    ("assert_mrr()", "mrr", 0.5, 0.5, 0.6),
    # mrr@1: refund's first relevant is at rank 2, outside the cutoff -> (0 + 1 + 0) / 3
    ("assert_mrr_at(1)", "mrr@1", 1 / 3, 0.3, 0.4),
]


@pytest.mark.parametrize(("call", "metric", "value", "passes", "fails"), CASES)
def test_every_gate_helper_passes_and_fails_with_the_exact_message(
    retrieval_project: RetrievalProject,
    call: str,
    metric: str,
    value: float,
    passes: float,
    fails: float,
) -> None:
    retrieval_project.write(
        tests=f"""
        from pytest_retrieval.gates.gate import *

        def test_passes():
            {call} >= {passes}

        def test_fails():
            {call} >= {fails}
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    shown = f"{value:.4f}"
    result.stdout.fnmatch_lines(
        esc(
            [
                "*_ test_fails _*",
                f">       {call} >= {fails}",
                f"E *AssertionError: {metric} = {shown} < {fails}, expected >= {fails} "
                "[stage=retriever split=overall]",
                "E *queries scored: 3, skipped (no relevant document): 1",
            ]
        )
    )
    # The traceback stops at the user's line: the helper's own frames are hidden.
    result.stdout.no_fnmatch_line("*pytest_retrieval/gates/*")
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: 1 failed =*",
                f"PASS {metric} >= {passes}: {shown} (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_passes",
                f"FAIL {metric} >= {fails}: {shown} (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_fails",
            ]
        )
    )


def test_a_failing_gate_names_the_worst_queries(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_recall():
            assert_recall_at(3) >= 0.9
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(failed=1)
    # Lowest value first, ties by id; missed = relevant documents outside the top 3; the first
    # relevant rank is counted over the whole ranking.
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: recall@3 = 0.6667 < 0.9, expected >= 0.9 "
                "[stage=retriever split=overall]",
                "E *queries scored: 3, skipped (no relevant document): 1",
                "E *worst 1 query:",
                "E *invoice 'Where do I download invoices?': recall@3 = 0.0000; missed "
                "invoices, billing; no relevant document retrieved; returned faq, pricing, contact",
            ]
        )
    )
    # refund and sso score a perfect 1.0: however few queries there are, a perfect query is
    # never listed among the worst.
    result.stdout.no_fnmatch_line("E *refund 'How long is the refund window?': recall@3*")
    result.stdout.no_fnmatch_line("E *sso 'How do I set up SSO with Okta?': recall@3*")


def test_retrieval_worst_limits_the_queries_a_failure_lists(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_worst": "1"},
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_recall():
            assert_recall_at(1) >= 0.9
        """,
    )
    result = retrieval_project.run()
    # recall@1 per query: refund 0, sso 1/2, invoice 0 -> worst is invoice (0, then by id).
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *worst 1 query:",
                "E *invoice 'Where do I download invoices?': recall@1 = 0.0000; missed "
                "invoices, billing; no relevant document retrieved; returned faq, pricing, contact",
            ]
        )
    )
    result.stdout.no_fnmatch_line("E *refund *")


def test_every_comparison_operator_gates(retrieval_project: RetrievalProject) -> None:
    # mrr = 0.5 (see CASES)
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_mrr

        def test_ge(): assert_mrr() >= 0.5
        def test_gt(): assert_mrr() > 0.4
        def test_le(): assert_mrr() <= 0.5
        def test_lt(): assert_mrr() < 0.6
        def test_gt_fails(): assert_mrr() > 0.5
        def test_lt_fails(): assert_mrr() < 0.5
        def test_in_an_assert(): assert assert_mrr() >= 0.5
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=5, failed=2)
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: mrr = 0.5000 <= 0.5, expected > 0.5 "
                "[stage=retriever split=overall]"
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: mrr = 0.5000 >= 0.5, expected < 0.5 "
                "[stage=retriever split=overall]"
            ]
        )
    )


def test_a_gate_on_a_slice_scores_only_that_slice(retrieval_project: RetrievalProject) -> None:
    # exact-lookup = refund and invoice: recall@3 = (1 + 0) / 2 = 0.5; multi-hop = sso: 1.
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_multi_hop():
            assert_recall_at(3, slice="multi-hop") >= 1.0

        def test_exact_lookup():
            assert_recall_at(3, slice="exact-lookup") >= 0.6
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: recall@3 = 0.5000 < 0.6, expected >= 0.6 "
                "[stage=retriever split=overall slice=exact-lookup]",
                "E *queries scored: 2, skipped (no relevant document): 0",
                "E *worst 1 query:",
                "E *invoice *",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "PASS recall@3 >= 1: 1.0000 (CI *) [stage=retriever slice=multi-hop] (n=1) — "
                "test_retrieval.py::test_multi_hop",
            ]
        )
    )


def test_a_gate_on_an_explicit_split(retrieval_project: RetrievalProject) -> None:
    # Every visible query is in "tune": the same numbers as overall, labelled split=tune.
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_tune():
            assert_recall_at(3, split="tune") >= 0.7
        """
    )
    result = retrieval_project.run()
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: recall@3 = 0.6667 < 0.7, expected >= 0.7 "
                "[stage=retriever split=tune]"
            ]
        )
    )


def test_gate_misuse_is_reported_with_the_fix(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at, recall_at

        def test_percent():
            assert_recall_at(3) >= 90

        def test_unknown_slice():
            assert_recall_at(3, slice="multihop") >= 0.5

        def test_unknown_split():
            assert recall_at(3, split="dev") >= 0.5

        def test_unknown_stage():
            assert_recall_at(3, stage="reranker") >= 0.5

        def test_bad_k():
            assert_recall_at(0) >= 0.5

        def test_truth_value():
            if assert_recall_at(3):
                pass
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(failed=6)
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *pytest_retrieval.gates.GateUsageError: the threshold of recall@3 must be a "
                "number between 0 and 1, got 90 (metrics are fractions: write 0.9, not 90)",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *pytest_retrieval.gates.GateUsageError: unknown slice 'multihop'; the golden "
                "set has: exact-lookup, multi-hop, no-answer"
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *pytest_retrieval.gates.GateUsageError: unknown split 'dev'; the golden set "
                "has: heldout, tune"
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *pytest_retrieval.gates.GateUsageError: unknown stage 'reranker'; this run "
                "has: retriever"
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *pytest_retrieval.gates.GateUsageError: the cutoff of recall must be a positive "
                "integer (1, 5, 10, ...), got 0"
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(["E *TypeError: compare the gate with a threshold, e.g. assert_recall_at(...) >= 0.9"])
    )


def test_a_gate_that_is_never_compared_warns_naming_its_test(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_forgot_the_comparison():
            assert_recall_at(3)
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*PytestWarning: test_retrieval.py::test_forgot_the_comparison: the gate "
                "Gate(recall@3) was created but never compared, so it gates nothing; write e.g. "
                "`assert_recall_at(...) >= 0.9`"
            ]
        )
    )


# --- the Score twins ------------------------------------------------------------------------


def test_score_twins_compare_to_plain_bools_and_explain_a_failed_assert(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        import pytest
        from pytest_retrieval.gates.gate import (
            hit_rate_at, map_at, mrr, mrr_at, ndcg_at, precision_at, recall_at,
        )

        def test_values():
            # the same hand-computed values as the assert_* gates
            assert float(recall_at(3)) == pytest.approx(2 / 3)
            assert float(precision_at(3)) == pytest.approx(1 / 3)
            assert float(hit_rate_at(1)) == pytest.approx(1 / 3)
            assert float(ndcg_at(3)) == pytest.approx(0.43982, abs=1e-5)
            assert float(map_at(3)) == pytest.approx(4 / 9)
            assert float(mrr()) == pytest.approx(0.5)
            assert float(mrr_at(1)) == pytest.approx(1 / 3)
            assert (recall_at(3) >= 0.9) is False
            assert (recall_at(3) < 0.9) is True
            assert repr(recall_at(3, slice="multi-hop")) == (
                "Score(recall@3=1.0000 stage=retriever slice=multi-hop, n=1)"
            )
            with pytest.raises(TypeError, match="a Score is not a truth value"):
                bool(recall_at(3))
            # == and != compared identities: "assert recall_at(3) != 0" always held.
            with pytest.raises(TypeError, match="a Score is not compared with !=: "):
                recall_at(3) != 0
            with pytest.raises(TypeError, match="a Score is not compared with ==: "):
                recall_at(3) == pytest.approx(2 / 3)
            with pytest.raises(TypeError, match="compare with a threshold"):
                0 != recall_at(3)

        def test_score_fails():
            assert ndcg_at(3) >= 0.5

        def test_reversed_fails():
            assert 0.9 <= recall_at(3)
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: assert ndcg@3 = 0.4398 >= 0.5 does not hold "
                "[stage=retriever split=overall]",
                "E *queries scored: 3, skipped (no relevant document): 1",
                "E *worst 3 queries:",
                "E *invoice 'Where do I download invoices?': ndcg@3 = 0.0000; missed "
                "invoices, billing; no relevant document retrieved; returned faq, pricing, contact",
            ]
        )
    )
    # Written the other way round, the explanation still reads score-first and true to the
    # comparison that failed.
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: assert recall@3 = 0.6667 >= 0.9 does not hold "
                "[stage=retriever split=overall]"
            ]
        )
    )
    # Each comparison with a number is a gate: the two failed asserts, and in the passing
    # test_values the comparison that held; the one that did not hold there gated nothing
    # (its test passed), and float() records nothing.
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: 2 failed =*",
                "PASS recall@3 < 0.9: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_values",
                "FAIL ndcg@3 >= 0.5: 0.4398 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_score_fails",
                "FAIL recall@3 >= 0.9: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_reversed_fails",
                "*= short test summary info =*",
            ]
        ),
        consecutive=True,
    )


def test_a_score_with_no_scorable_query_is_na_and_fails_every_comparison(
    retrieval_project: RetrievalProject,
) -> None:
    # The no-answer slice holds only fax, which has no relevant document: skipped, no value.
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at, recall_at

        def test_score():
            assert not (recall_at(3, slice="no-answer") >= 0.0)

        def test_gate():
            assert_recall_at(3, slice="no-answer") >= 0.0
        """
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: recall@3 = n/a (no query could be scored), expected >= 0 "
                "[stage=retriever split=overall slice=no-answer]",
                "E *queries scored: 0, skipped (no relevant document): 1",
            ]
        )
    )


# --- issue 23: a Score compared with a number is a gate ---------------------------------------


def junit_cases(path: str) -> dict[str, list[tuple[str, str]]]:
    root = ET.parse(path).getroot()
    return {
        f"{case.get('classname')}.{case.get('name')}": [
            (p.get("name", ""), p.get("value", "")) for p in case.iter("property")
        ]
        for case in root.iter("testcase")
    }


def test_a_score_compared_with_a_number_is_a_gate_in_every_report(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import mrr, recall_at

        def test_pass():
            assert recall_at(3) >= 0.6

        def test_fail():
            assert mrr() >= 0.6
        """
    )
    result = retrieval_project.run(
        "--retrieval-json=out.json",
        "--retrieval-markdown=out.md",
        "--retrieval-html=out.html",
        "--junitxml=junit.xml",
    )
    result.assert_outcomes(passed=1, failed=1)
    # recall@3 = (1 + 1 + 0) / 3; mrr = (1/2 + 1 + 0) / 3 (plugin_helpers' table)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: 1 failed =*",
                "PASS recall@3 >= 0.6: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_pass",
                "FAIL mrr >= 0.6: 0.5000 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_fail",
            ]
        ),
        consecutive=True,
    )
    gates = retrieval_project.artifact()["gates"]
    assert [
        (g["kind"], g["nodeid"], g["metric"], g["op"], g["threshold"], g["passed"]) for g in gates
    ] == [
        ("score", "test_retrieval.py::test_pass", "recall@3", ">=", 0.6, True),
        ("score", "test_retrieval.py::test_fail", "mrr", ">=", 0.6, False),
    ]
    assert gates[0]["value"] == pytest.approx(2 / 3)
    assert gates[1]["value"] == pytest.approx(1 / 2)
    # The failed one carries the explanation an assert_* gate has.
    assert gates[1]["message"].startswith(
        "mrr = 0.5000 < 0.6, expected >= 0.6 [stage=retriever split=overall]\n"
    )
    markdown = (retrieval_project.path / "out.md").read_text(encoding="utf-8")
    assert "| ❌ | `mrr` | test | retriever · overall | 0.5000 | ≥ 0.6 |" in markdown
    assert "| ✅ | `recall@3` | test | retriever · overall | 0.6667 | ≥ 0.6 |" in markdown
    assert "❌ `mrr ≥ 0.6` (retriever · overall), worst queries:" in markdown
    html = (retrieval_project.path / "out.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="gates">') :]
    section = section[: section.index("</section>")]
    assert section.count("<td>test</td>") == 2
    cases = junit_cases(str(retrieval_project.path / "junit.xml"))
    assert dict(cases["test_retrieval.test_fail"]) == {
        "source": "test",
        "gate": "mrr>=0.6",
        "metric": "mrr",
        "op": ">=",
        "threshold": "0.6",
        "stage": "retriever",
        "split": "overall",
        "slice": "all",
        "value": "0.5",
        "passed": "False",
    }


def test_a_score_that_cannot_be_scored_is_a_failed_gate_in_every_report(
    retrieval_project: RetrievalProject,
) -> None:
    # recall@50 is deeper than the depth asked (the largest of retrieval_ks): refused. Its
    # assert_* form had a "FAIL ... n/a" row; the twin raised at recall_at(50) and left no row,
    # so the gates header said "1 failed" while pytest counted 2.
    retrieval_project.write(
        tests="""
        import pytest
        from pytest_retrieval import GateUsageError
        from pytest_retrieval.gates.gate import assert_recall_at, recall_at

        def test_twin():
            assert recall_at(50) >= 0.3

        def test_gate():
            assert_recall_at(50) >= 0.3

        def test_caught():
            with pytest.raises(GateUsageError, match="needs the top 50 results"):
                assert recall_at(50) >= 0.1
        """
    )
    result = retrieval_project.run("--retrieval-json=out.json", "--retrieval-markdown=out.md")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: 2 failed =*",
                "FAIL recall@50 >= 0.3: n/a (needs the top 50 results, but the retriever was "
                "asked for 3 (retrieval_depth*) — test_retrieval.py::test_twin",
                "FAIL recall@50 >= 0.3: n/a (needs the top 50 results, but the retriever was "
                "asked for 3 (retrieval_depth*) — test_retrieval.py::test_gate",
            ]
        ),
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        ["E*pytest_retrieval.gates.GateUsageError: recall@50 needs the top 50 results*"]
    )
    gates = retrieval_project.artifact()["gates"]
    assert [
        (g["kind"], g["nodeid"], g["op"], g["threshold"], g["value"], g["passed"]) for g in gates
    ] == [
        ("score", "test_retrieval.py::test_twin", ">=", 0.3, None, False),
        ("assert", "test_retrieval.py::test_gate", ">=", 0.3, None, False),
    ]
    assert gates[0]["message"] == gates[1]["message"]
    assert gates[0]["message"].startswith("recall@50 needs the top 50 results")
    markdown = (retrieval_project.path / "out.md").read_text(encoding="utf-8")
    assert markdown.count("| ❌ | `recall@50` | test |") == 2, markdown


def test_a_comparison_that_did_not_hold_in_a_passing_test_gates_nothing(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        import pytest
        from pytest_retrieval.gates.gate import mrr, recall_at

        def test_either():
            assert recall_at(3) >= 0.9 or recall_at(1) >= 0.1

        def test_branch():
            if mrr() >= 0.9:
                raise AssertionError("not reached: mrr is 0.5")

        def test_skipped():
            if not recall_at(3) >= 0.9:
                pytest.skip("not good enough yet")
        """
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=2, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    # recall@1 = (0 + 1/2 + 0) / 3: the side of the `or` that held is the one gate.
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: all passed =*",
                "PASS recall@1 >= 0.1: 0.1667 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_either",
            ]
        ),
        consecutive=True,
    )
    assert [line for line in result.outlines if line.startswith(("PASS ", "FAIL "))] == [
        next(line for line in result.outlines if line.startswith("PASS recall@1 >= 0.1"))
    ]
    gates = retrieval_project.artifact()["gates"]
    assert [(g["metric"], g["passed"]) for g in gates] == [("recall@1", True)]


def test_a_score_used_for_printing_records_nothing(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import recall_at

        def test_print():
            score = recall_at(3)
            print(f"{score} {float(score)} {score.value} {score.n}")
            assert f"{score:.3f}" == "0.667"
            assert f"{score}" == repr(score) == "Score(recall@3=0.6667 stage=retriever, n=3)"
        """
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*retrieval gates*")
    assert retrieval_project.artifact()["gates"] == []


def test_a_twin_and_its_gate_in_one_test_are_one_gate(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at, recall_at

        def test_both():
            assert_recall_at(3) >= 0.6
            assert recall_at(3) >= 0.6
            score = recall_at(3)
            assert score >= 0.6
            assert 0.6 <= score  # the same comparison, written the other way round

        def test_other():
            assert recall_at(3) >= 0.6
        """
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=2)
    gates = retrieval_project.artifact()["gates"]
    assert [(g["kind"], g["nodeid"]) for g in gates] == [
        ("assert", "test_retrieval.py::test_both"),
        ("score", "test_retrieval.py::test_other"),
    ]


def test_two_scores_compare_by_value_and_are_not_gates(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import recall_at

        def test_holds():
            assert recall_at(3, slice="multi-hop") >= recall_at(3, slice="exact-lookup")

        def test_fails():
            assert recall_at(3, slice="exact-lookup") >= recall_at(3, slice="multi-hop")
        """
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=1, failed=1)
    # recall@3: multi-hop is sso alone (1); exact-lookup is refund (1) and invoice (0).
    result.stdout.fnmatch_lines(
        esc(
            [
                "E *AssertionError: assert recall@3 [stage=retriever split=overall "
                "slice=exact-lookup] = 0.5000 >= recall@3 [stage=retriever split=overall "
                "slice=multi-hop] = 1.0000 does not hold",
                "E *recall@3 [stage=retriever split=overall slice=exact-lookup]:",
                "E *  queries scored: 2, skipped (no relevant document): 0",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*retrieval gates*")
    assert retrieval_project.artifact()["gates"] == []
