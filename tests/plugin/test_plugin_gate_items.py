"""Declared gates are pytest-native items: collected from their file, selected like any test.

The gates file's lines are items of ``retrieval-gates.yaml``, the ini file's of ``pytest.ini``;
their names are valid ``-k`` words (``recall_at_3_ge_0.6-slice_multi-hop``). Values are
hand-computed from the standard project (plugin_helpers): overall recall@3 = (1 + 1 + 0) / 3 =
0.6667; multi-hop (sso) recall@3 = 1; mrr = (1/2 + 1 + 0) / 3 = 0.5.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from plugin_helpers import CONFTEST, RetrievalProject, esc

TESTS = """
from pytest_retrieval.gates.gate import assert_mrr, assert_recall_at

def test_one():
    assert_mrr() >= 0.4

def test_two():
    assert_recall_at(3, slice="multi-hop") >= 0.9
"""

GATES_FILE = "version: 1\nthresholds:\n  - recall@3 >= 0.7\n  - recall@3 >= 0.9 slice=multi-hop\n"


@pytest.fixture
def project(retrieval_project: RetrievalProject) -> RetrievalProject:
    retrieval_project.write(ini={"retrieval_thresholds": "recall@3 >= 0.6"}, tests=TESTS)
    (retrieval_project.path / "retrieval-gates.yaml").write_text(GATES_FILE, encoding="utf-8")
    return retrieval_project


def test_collect_only_lists_declared_gates_under_their_file(project: RetrievalProject) -> None:
    result = project.run("--co", "-q")
    assert result.ret == pytest.ExitCode.OK
    ids = [line for line in result.outlines if "::" in line]
    assert ids == [
        "pytest.ini::recall_at_3_ge_0.6",
        "retrieval-gates.yaml::recall_at_3_ge_0.7",
        "retrieval-gates.yaml::recall_at_3_ge_0.9-slice_multi-hop",
        "test_retrieval.py::test_one",
        "test_retrieval.py::test_two",
    ]


def test_selecting_one_test_file_runs_no_declared_gate(project: RetrievalProject) -> None:
    result = project.run("-v", "test_retrieval.py")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*pytest.ini::*")
    result.stdout.no_fnmatch_line("*retrieval-gates.yaml::*")
    # The failing declared gate (recall@3 >= 0.7) did not run, so the run passes.
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*= retrieval gates: all passed =*"])


def test_a_declared_gate_node_id_from_collect_only_runs_alone(project: RetrievalProject) -> None:
    result = project.run("-v", "retrieval-gates.yaml::recall_at_3_ge_0.7")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*collected 1 item",
                "retrieval-gates.yaml::recall_at_3_ge_0.7 FAILED*",
                "FAIL recall@3 >= 0.7: 0.6667 (CI *) [stage=retriever] (n=3) — "
                "retrieval-gates.yaml::recall_at_3_ge_0.7",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*test_retrieval.py*")
    ini_gate = project.run("-v", "pytest.ini::recall_at_3_ge_0.6")
    ini_gate.assert_outcomes(passed=1)


def test_a_gates_file_path_selects_its_gates(project: RetrievalProject) -> None:
    result = project.run("-v", "retrieval-gates.yaml")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.no_fnmatch_line("*pytest.ini::*")


def test_last_failed_reruns_a_failed_declared_gate(project: RetrievalProject) -> None:
    # The cache plugin on (the other runs here turn it off): --lf reads .pytest_cache.
    first = project.pytester.runpytest("-p", "no:hypothesispytest")
    first.assert_outcomes(passed=4, failed=1)
    again = project.pytester.runpytest("-p", "no:hypothesispytest", "--lf", "-v")
    # The other files are not even collected (pytest's --lf skips them).
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["retrieval-gates.yaml::recall_at_3_ge_0.7 FAILED*"])


def test_k_and_m_select_declared_gates_by_their_documented_spelling(
    project: RetrievalProject,
) -> None:
    by_metric = project.run("-v", "-k", "recall_at_3_ge and not multi-hop")
    by_metric.assert_outcomes(passed=1, failed=1, deselected=3)
    by_metric.stdout.fnmatch_lines(
        ["pytest.ini::recall_at_3_ge_0.6 PASSED*", "retrieval-gates.yaml::recall_at_3_ge_0.7 *"]
    )
    by_slice = project.run("-v", "-k", "slice_multi-hop")
    by_slice.assert_outcomes(passed=1, deselected=4)
    # Every declared gate is marked retrieval: -m "not retrieval" leaves the tests only.
    unmarked = project.run("-v", "-m", "not retrieval")
    unmarked.assert_outcomes(passed=2, deselected=3)


def test_declared_gates_outside_testpaths_run_with_the_whole_suite(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(ini={"testpaths": "tests", "retrieval_thresholds": "mrr >= 0.4"})
    (retrieval_project.path / "tests").mkdir()
    retrieval_project.tests(TESTS, name="tests/test_retrieval.py")
    (retrieval_project.path / "retrieval-gates.yaml").write_text(GATES_FILE, encoding="utf-8")
    result = retrieval_project.run("-v")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*collected 5 items",
            "tests/test_retrieval.py::test_one PASSED*",
            "tests/test_retrieval.py::test_two PASSED*",
            "pytest.ini::mrr_ge_0.4 PASSED*",
            "retrieval-gates.yaml::recall_at_3_ge_0.7 FAILED*",
            "retrieval-gates.yaml::recall_at_3_ge_0.9-slice_multi-hop PASSED*",
        ]
    )
    # ... and a path selection still runs only what it names.
    selected = retrieval_project.run("-v", "tests")
    selected.assert_outcomes(passed=2)


def junit_cases(path: str) -> dict[str, list[tuple[str, str]]]:
    root = ET.parse(path).getroot()
    return {
        f"{case.get('classname')}.{case.get('name')}": [
            (p.get("name", ""), p.get("value", "")) for p in case.iter("property")
        ]
        for case in root.iter("testcase")
    }


def test_junit_properties_of_asserted_and_declared_gates_carry_the_real_stage(
    retrieval_project: RetrievalProject,
) -> None:
    reranker = """

@pytest.fixture(scope="session")
def reranker_under_test():
    return lambda text, candidates: list(reversed(candidates))
"""
    retrieval_project.write(
        conftest=CONFTEST + reranker,
        ini={"retrieval_thresholds": "recall@3 >= 0.6\nrecall@1 >= 0.1 stage=retriever"},
        tests=TESTS,
    )
    result = retrieval_project.run("--junitxml=junit.xml")
    result.assert_outcomes(passed=4)
    cases = junit_cases(str(retrieval_project.path / "junit.xml"))
    declared = dict(cases["pytest.ini.recall_at_3_ge_0.6"])
    # No stage given: the gate ran on the final stage, and the property says which.
    assert declared["stage"] == "reranker"
    assert declared["source"] == "declared"
    assert declared["metric"] == "recall@3"
    assert float(declared["value"]) == pytest.approx(2 / 3)  # reversing keeps the top 3
    assert dict(cases["pytest.ini.recall_at_1_ge_0.1-stage_retriever"])["stage"] == "retriever"
    asserted = dict(cases["test_retrieval.test_two"])
    assert asserted == {
        "source": "test",
        "gate": "recall@3>=0.9",
        "metric": "recall@3",
        "op": ">=",
        "threshold": "0.9",
        "stage": "reranker",
        "split": "overall",
        "slice": "multi-hop",
        "value": "1.0",
        "passed": "True",
    }
    # test_one compared one gate: one group of properties.
    assert [k for k, _ in cases["test_retrieval.test_one"]].count("gate") == 1
    assert dict(cases["test_retrieval.test_one"])["metric"] == "mrr"


# --- typo-proof settings --------------------------------------------------------------------


def test_an_unknown_retrieval_ini_key_stops_the_run_with_the_nearest_name(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(ini={"retrieval_threshold": "recall@3 >= 0.9"}, tests=TESTS)
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-retrieval: unknown settings:",
            "  - pytest.ini: unknown ini key retrieval_threshold "
            "(did you mean retrieval_thresholds?)",
        ]
    )


def test_an_unknown_key_stops_the_run_even_without_a_golden_set(
    retrieval_project: RetrievalProject,
) -> None:
    # retrieval_goldne: the plugin would stay off and every gate silently vanish.
    retrieval_project.write(golden=None, ini={"retrieval_goldne": "golden.yaml"}, tests=TESTS)
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*unknown ini key retrieval_goldne (did you mean retrieval_golden?)"]
    )


def test_a_misspelt_flag_value_names_the_nearest_choice(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests=TESTS)
    result = retrieval_project.run("--retrieval-summary=ful")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["  - --retrieval-summary ful: 'ful' is not one of compact, full; did you mean 'full'?*"]
    )


def test_a_space_form_flag_path_outside_the_project_is_explained(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pytester.path / "project"
    common = pytester.path / "common"
    project.mkdir()
    common.mkdir()
    (common / "golden.yaml").write_text(
        "version: 1\nqueries:\n  - id: a\n    text: hi\n    relevant: [x]\n", encoding="utf-8"
    )
    (project / "pytest.ini").write_text("[pytest]\nretrieval_ks = 1\n", encoding="utf-8")
    (project / "test_x.py").write_text("def test_x(): pass\n", encoding="utf-8")
    monkeypatch.chdir(project)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--retrieval-golden", "../common/golden.yaml"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-retrieval: --retrieval-golden ../common/golden.yaml: pytest took "
            "../common/golden.yaml for a test path when it looked for the ini file, so it read no "
            f"ini file instead of {project / 'pytest.ini'} (rootdir *) and every ini setting is "
            "ignored; write --retrieval-golden=../common/golden.yaml"
        ]
    )
    # The = form reads the project's ini file and runs.
    fixed = pytester.runpytest(
        "-p", "no:cacheprovider", "--retrieval-golden=../common/golden.yaml", "--co"
    )
    fixed.stdout.fnmatch_lines(["configfile: pytest.ini"])
