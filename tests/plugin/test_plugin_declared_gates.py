"""Declared gates (ini ``retrieval_thresholds``, ``retrieval-gates.yaml``) run as test items.

Values are hand-computed from the standard project (see plugin_helpers):

    overall (refund, sso, invoice)   recall@3 = (1 + 1 + 0) / 3 = 0.6667
    exact-lookup (refund, invoice)   recall@1 = (0 + 0) / 2 = 0     recall@3 = (1 + 0) / 2 = 0.5
    multi-hop (sso)                  recall@1 = 1/2                 recall@3 = 1
    no-answer (fax only)             no relevant document: no value under no_relevant=skip
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_helpers import RetrievalProject, esc

from pytest_retrieval.gates.declared import gates_file_path
from pytest_retrieval.settings.resolve import resolve


def test_ini_thresholds_become_test_items_that_pass_and_fail(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "recall@3 >= 0.6\nrecall@3 >= 0.7\nmrr <= 0.5"}
    )
    result = retrieval_project.run("-v")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        esc(
            [
                "*collected 3 items",
                "pytest.ini::recall_at_3_ge_0.6 PASSED*",
                "pytest.ini::recall_at_3_ge_0.7 FAILED*",
                "pytest.ini::mrr_le_0.5 PASSED*",
            ]
        )
    )


def test_a_failing_declared_gate_shows_its_message_without_a_traceback(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(ini={"retrieval_thresholds": "recall@3 >= 0.7"})
    result = retrieval_project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*_ retrieval gate recall@3>=0.7 _*",
                "recall@3 = 0.6667 < 0.7, expected >= 0.7 [stage=retriever split=overall]",
                "queries scored: 3, skipped (no relevant document): 1",
                "worst 1 query:",
                "  invoice 'Where do I download invoices?': recall@3 = 0.0000; missed invoices, "
                "billing; no relevant document retrieved; returned faq, pricing, contact",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*def gate(*")
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: 1 failed =*",
                "FAIL recall@3 >= 0.7: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "pytest.ini::recall_at_3_ge_0.7",
                "FAILED pytest.ini::recall_at_3_ge_0.7 - recall@3 = 0.6667 < 0.7*",
            ]
        )
    )


def test_the_gates_file_in_the_rootdir_is_read_without_configuration(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write()
    (retrieval_project.path / "retrieval-gates.yaml").write_text(
        "version: 1\nthresholds:\n  - recall@3 >= 0.6\n  - recall@3 >= 1.0 slice=multi-hop\n",
        encoding="utf-8",
    )
    result = retrieval_project.run("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        esc(
            [
                "retrieval-gates.yaml::recall_at_3_ge_0.6 PASSED*",
                "retrieval-gates.yaml::recall_at_3_ge_1-slice_multi-hop PASSED*",
            ]
        )
    )


def test_retrieval_gates_file_names_another_gates_file(
    retrieval_project: RetrievalProject,
) -> None:
    (retrieval_project.path / "ci").mkdir()
    (retrieval_project.path / "ci" / "gates.yaml").write_text(
        "version: 1\nthresholds:\n  - mrr >= 0.6\n", encoding="utf-8"
    )
    retrieval_project.write(ini={"retrieval_gates_file": "ci/gates.yaml"})
    result = retrieval_project.run()
    result.assert_outcomes(failed=1)
    # mrr = (1/2 + 1 + 0) / 3 = 0.5
    result.stdout.fnmatch_lines(
        esc(["mrr = 0.5000 < 0.6, expected >= 0.6 [stage=retriever split=overall]"])
    )


# --- issue 23: another golden set beside the rootdir's gates file ----------------------------

#: The rootdir's gates file, written for the standard golden set (it has a multi-hop slice).
MULTI_HOP_GATES = "version: 1\nthresholds:\n  - recall@3 >= 1.0 slice=multi-hop\n"

#: Another golden set, without slices: refund and sso of the standard one.
OTHER_GOLDEN = """\
version: 1
queries:
  - id: refund
    text: How long is the refund window?
    relevant: [refund-policy]
  - id: sso
    text: How do I set up SSO with Okta?
    relevant: {sso-setup: 2, okta: 1}
"""


def test_another_golden_set_meets_the_rootdir_gates_file_with_the_way_out(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests="def test_run(retrieval_run): pass\n")
    (retrieval_project.path / "retrieval-gates.yaml").write_text(MULTI_HOP_GATES, "utf-8")
    (retrieval_project.path / "other.yaml").write_text(OTHER_GOLDEN, encoding="utf-8")
    result = retrieval_project.run("--retrieval-golden=other.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    gates = retrieval_project.path / "retrieval-gates.yaml"
    result.stderr.fnmatch_lines(
        esc(
            [
                "ERROR: pytest-retrieval: 1 invalid gate(s):",
                f"  - {gates}:3: 'recall@3 >= 1.0 slice=multi-hop': unknown slice 'multi-hop' "
                "(the golden set has: no slices; if the gates file is for another golden set, "
                "give this one its own (--retrieval-gates-file=PATH) or none "
                "(--retrieval-gates-file=))",
            ]
        )
    )
    # The way out it names: no gates file, so the run scores other.yaml with no gate.
    off = retrieval_project.run("--retrieval-golden=other.yaml", "--retrieval-gates-file=")
    off.assert_outcomes(passed=1)
    off.stdout.no_fnmatch_line("*retrieval gates*")
    off.stdout.fnmatch_lines(["retrieval: golden set *other.yaml (2 queries, *"])


@pytest.mark.parametrize(
    ("args", "ini"),
    [
        (("--retrieval-gates-file=",), {}),
        (("-o", "retrieval_gates_file="), {}),
        ((), {"retrieval_gates_file": ""}),
        # the flag wins over an ini file naming one
        (("--retrieval-gates-file=",), {"retrieval_gates_file": "retrieval-gates.yaml"}),
    ],
    ids=["flag", "override", "ini", "flag-over-ini"],
)
def test_an_empty_gates_file_setting_turns_the_gates_file_off(
    retrieval_project: RetrievalProject, args: tuple[str, ...], ini: dict[str, str]
) -> None:
    retrieval_project.write(ini=ini, tests="def test_run(retrieval_run): pass\n")
    # A gate that would fail: recall@3 = 2/3 overall.
    (retrieval_project.path / "retrieval-gates.yaml").write_text(
        "version: 1\nthresholds:\n  - recall@3 >= 0.9\n", encoding="utf-8"
    )
    result = retrieval_project.run("-v", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*collected 1 item"])
    result.stdout.no_fnmatch_line("*retrieval-gates.yaml*")
    result.stdout.no_fnmatch_line("*retrieval gates*")


def test_an_empty_gates_file_value_is_off_and_a_missing_one_finds_the_default(
    tmp_path: Path,
) -> None:
    (tmp_path / "retrieval-gates.yaml").write_text("version: 1\n", encoding="utf-8")

    def used(cli: dict[str, str], ini: dict[str, str | None]) -> str | None:
        settings = resolve(cli, ini, ini_base=tmp_path, cli_base=tmp_path)
        return gates_file_path(settings, tmp_path)

    # pytest gives None for a key the ini file lacks: the rootdir's file is found.
    assert used({}, {"gates_file": None}) == str(tmp_path / "retrieval-gates.yaml")
    assert used({}, {"gates_file": ""}) is None  # `retrieval_gates_file =`: off
    assert used({"gates_file": ""}, {"gates_file": "ci.yaml"}) is None  # the empty flag wins
    assert used({"gates_file": "ci.yaml"}, {"gates_file": ""}) == str(tmp_path / "ci.yaml")


def test_slice_star_declares_one_gate_per_slice_with_a_query_to_score(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(ini={"retrieval_thresholds": "recall@1 >= 0.4 slice=*"})
    result = retrieval_project.run("-v")
    # exact-lookup recall@1 = 0 fails, multi-hop 1/2 passes; no-answer (fax only) has no value
    # under no_relevant=skip, so it gets no gate at all.
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "pytest.ini::recall_at_1_ge_0.4-slice_exact-lookup FAILED*",
                "pytest.ini::recall_at_1_ge_0.4-slice_multi-hop PASSED*",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*slice=no-answer*")
    result.stdout.fnmatch_lines(
        esc(
            [
                "recall@1 = 0.0000 < 0.4, expected >= 0.4 "
                "[stage=retriever split=overall slice=exact-lookup]",
                "queries scored: 2, skipped (no relevant document): 0",
            ]
        )
    )


def test_slice_star_includes_a_no_answer_slice_when_such_queries_score(
    retrieval_project: RetrievalProject,
) -> None:
    # no_relevant=zero scores fax 0 on every metric, so the no-answer slice has a value (0).
    retrieval_project.write(
        ini={"retrieval_thresholds": "recall@3 >= 0.5 slice=*", "retrieval_no_relevant": "zero"}
    )
    result = retrieval_project.run("-v")
    result.stdout.fnmatch_lines(
        esc(
            [
                "pytest.ini::recall_at_3_ge_0.5-slice_exact-lookup PASSED*",
                "pytest.ini::recall_at_3_ge_0.5-slice_multi-hop PASSED*",
                "pytest.ini::recall_at_3_ge_0.5-slice_no-answer FAILED*",
            ]
        )
    )


def test_declared_gates_can_be_selected_with_k(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "recall@3 >= 0.6\nrecall@3 >= 0.9 slice=multi-hop"},
        tests="def test_plain(): pass",
    )
    result = retrieval_project.run("-v", "-k", "multi-hop")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*collected 3 items / 2 deselected / 1 selected",
                "pytest.ini::recall_at_3_ge_0.9-slice_multi-hop PASSED*",
            ]
        )
    )


def test_declared_gates_and_code_gates_share_the_gates_section(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "recall@3 >= 0.6"},
        tests="""
        from pytest_retrieval.gates.gate import assert_mrr

        def test_mrr():
            assert_mrr() >= 0.5
        """,
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval gates: all passed =*",
                # In collection order: pytest.ini is collected before test_retrieval.py.
                "PASS recall@3 >= 0.6: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "pytest.ini::recall_at_3_ge_0.6",
                "PASS mrr >= 0.5: 0.5000 (CI *) [stage=retriever] (n=3) — "
                "test_retrieval.py::test_mrr",
            ]
        )
    )


def test_invalid_declared_gates_are_one_usage_error_listing_each_problem(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={
            "retrieval_thresholds": (
                "recall@3 >= 90\nrecal@3 >= 0.5\nrecall@3 >= 0.5 slice=multihop\n"
                "recall@3 >= 0.5 split=dev\nrecall@3 >= 0.5 colour=red"
            )
        },
        tests="def test_plain(): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        esc(
            [
                "ERROR: pytest-retrieval: 5 invalid gate(s):",
                "  - retrieval_thresholds: 'recall@3 >= 90': threshold 90 is not between 0 and 1 "
                "(metrics are fractions: write 0.9, not 90)",
                "  - retrieval_thresholds: 'recal@3 >= 0.5': *did you mean 'recall@3'?*",
                "  - retrieval_thresholds: 'recall@3 >= 0.5 slice=multihop': unknown slice "
                "'multihop' (the golden set has: exact-lookup, multi-hop, no-answer)",
                "  - retrieval_thresholds: 'recall@3 >= 0.5 split=dev': unknown split 'dev' "
                "(the golden set has: heldout, tune)",
                "  - retrieval_thresholds: 'recall@3 >= 0.5 colour=red': cannot read "
                "'colour=red' (options are stage=NAME, split=NAME and slice=NAME (slice=* for "
                "every slice, slice=KEY:VALUE by context value))",
            ]
        )
    )
    # Nothing ran: the retriever was never called.
    assert retrieval_project.calls() == []


def test_a_gates_file_problem_names_the_file_and_line(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests="def test_plain(): pass")
    (retrieval_project.path / "retrieval-gates.yaml").write_text(
        "version: 1\nthreshold:\n  - recall@3 >= 0.5\n", encoding="utf-8"
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: */retrieval-gates.yaml: 1 problem in the gates file:",
            "  - */retrieval-gates.yaml:2: unknown key 'threshold' (did you mean 'thresholds'?)",
        ]
    )

    (retrieval_project.path / "retrieval-gates.yaml").write_text(
        "version: 1\nthresholds:\n  - recall@3 >= 0.5\n  - recall@3 => 0.5\n", encoding="utf-8"
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["  - */retrieval-gates.yaml:4: 'recall@3 => 0.5': *"])


def test_a_declared_gate_on_an_unknown_stage_fails_naming_the_stages(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(ini={"retrieval_thresholds": "recall@3 >= 0.5 stage=reranker"})
    result = retrieval_project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*unknown stage 'reranker'; this run has: retriever*"])
