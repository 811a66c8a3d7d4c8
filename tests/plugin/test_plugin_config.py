"""Settings as users give them: ini keys, ``--retrieval-*`` flags, precedence and bad values."""

from __future__ import annotations

import textwrap

import pytest
from plugin_helpers import GOLDEN, RetrievalProject

RUN = "def test_run(retrieval_run): pass"


def test_a_bad_ini_value_is_a_usage_error_naming_the_key_the_file_and_the_value(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(ks="5,ten", tests=RUN)
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-retrieval: invalid settings:",
            "  - `retrieval_ks = 5,ten` in pytest.ini: 'ten' is not a positive integer (see "
            "`pytest --help` for --retrieval-ks)",
        ]
    )
    assert retrieval_project.calls() == []


def test_every_bad_value_is_reported_at_once(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        ini={
            "retrieval_metrics": "recal",
            "retrieval_timeout": "-1",
            "retrieval_heldout": "maybe",
            "retrieval_no_relevant": "ignore",
        },
        tests=RUN,
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-retrieval: invalid settings:",
            "  - `retrieval_metrics = recal` in pytest.ini: 'recal' is not a metric; did you "
            "mean 'recall'? (known: recall, precision, hit_rate, ndcg, map, mrr, r_precision, "
            "distinct, abstain_rate, answer_rate, judged, forbidden, stale, or "
            "one cutoff such as ndcg@10) (see `pytest --help` for --retrieval-metrics)",
            "  - `retrieval_no_relevant = ignore` in pytest.ini: 'ignore' is not one of skip, "
            "zero, one (see `pytest --help` for --retrieval-no-relevant)",
            "  - `retrieval_timeout = -1` in pytest.ini: '-1' is not a number >= 0 (see "
            "`pytest --help` for --retrieval-timeout)",
            # a bool is checked like every other setting (pytest's own parsing would crash)
            "  - `retrieval_heldout = maybe` in pytest.ini: 'maybe' is not true or false (see "
            "`pytest --help` for --retrieval-heldout)",
        ]
    )
    result.stderr.no_fnmatch_line("*INTERNALERROR*")


def test_a_bad_value_in_pyproject_names_pyproject(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(ks=None, tests=RUN)
    (retrieval_project.path / "pytest.ini").unlink()
    retrieval_project.pytester.makepyprojecttoml(
        textwrap.dedent(
            """
            [tool.pytest.ini_options]
            retrieval_golden = "golden.yaml"
            retrieval_ks = "5,ten"
            """
        )
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["  - `retrieval_ks = 5,ten` in pyproject.toml: 'ten' is not a positive integer*"]
    )


def test_a_bad_flag_value_names_the_flag(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(tests=RUN)
    result = retrieval_project.run("--retrieval-ks", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "  - --retrieval-ks 0: '0' is not a positive integer (see `pytest --help` for "
            "--retrieval-ks)"
        ]
    )


def test_the_command_line_beats_the_ini(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(ks="1,3", ini={"retrieval_metrics": "recall"}, tests=RUN)
    result = retrieval_project.run("-v", "--retrieval-ks", "2", "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    # Only K=2: recall@2 over refund (1), sso (okta at 1: 1/2), invoice (0) = 1.5 / 3.
    result.stdout.fnmatch_lines(["metric    overall (n=3) *", "*", "recall@2  0.5000 *"])
    result.stdout.no_fnmatch_line("recall@1 *")
    result.stdout.no_fnmatch_line("recall@3 *")
    assert retrieval_project.artifact()["settings"]["ks"] == [2]


def test_the_golden_set_can_be_given_on_the_command_line_only(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(golden=None, ks=None, tests=RUN)
    (retrieval_project.path / "sets").mkdir()
    (retrieval_project.path / "sets" / "help.yaml").write_text(GOLDEN, encoding="utf-8")
    result = retrieval_project.run("--retrieval-golden", "sets/help.yaml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["retrieval: golden set */sets/help.yaml (5 queries, *"])


def test_ini_paths_are_relative_to_the_ini_file(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    retrieval_project.write(tests=RUN)
    sub = retrieval_project.path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    result = retrieval_project.run(str(retrieval_project.path / "test_retrieval.py"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"retrieval: golden set {retrieval_project.path}/golden.yaml *"])


def test_a_missing_golden_set_is_a_usage_error(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(golden=None, ini={"retrieval_golden": "nope.yaml"}, tests=RUN)
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: */nope.yaml: cannot load golden set:",
            "  - */nope.yaml: no such file or folder (check the path)",
        ]
    )


def test_every_flag_and_ini_key_is_documented_in_help(
    retrieval_project: RetrievalProject,
) -> None:
    from pytest_retrieval.settings.options import OPTIONS

    result = retrieval_project.pytester.runpytest("--help")
    assert result.ret == pytest.ExitCode.OK
    text = result.stdout.str()
    assert "retrieval quality gates (pytest-retrieval):" in text
    for option in OPTIONS:
        if option.flag:
            assert option.flag_name in text, option.flag_name
        if not option.flag_only:
            assert f"{option.ini} " in text or f"{option.ini}\n" in text, option.ini
    result.stdout.fnmatch_lines(["*--retrieval-ks=K[[],K]*cutoffs K for the summary table*"])
