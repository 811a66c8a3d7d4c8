"""The ledger settings as a user meets them: the merge-base keyword and its usage errors."""

from __future__ import annotations

from plugin_helpers import RetrievalProject

TESTS = """\
from pytest_retrieval import assert_mrr

def test_mrr():
    assert_mrr() >= 0.0
"""


def test_merge_base_is_a_keyword_and_a_file_of_that_name_is_written_dot_slash_merge_base(
    retrieval_project: RetrievalProject,
) -> None:
    written = project_file = retrieval_project.path / "merge-base"
    keyword = retrieval_project.write(ini={"retrieval_baseline": "merge-base"}, tests=TESTS)
    assert keyword.run("--retrieval-update-baseline").ret == 4  # the keyword: no file
    assert not project_file.exists()
    project = retrieval_project.write(ini={"retrieval_baseline": "./merge-base"}, tests=TESTS)
    result = project.run("--retrieval-update-baseline")
    assert result.ret == 0, result.stdout.str()
    assert written.is_file()
    assert '"schema": "pytest-retrieval/baseline"' in written.read_text(encoding="utf-8")


def test_merge_base_without_a_ledger_is_a_usage_error_naming_both_settings(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project.write(ini={"retrieval_baseline": "merge-base"}, tests=TESTS)
    result = project.run()
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*retrieval_baseline = merge-base takes its baseline from the run ledger, but "
            "retrieval_ledger is not set (set retrieval_ledger = PATH*"
        ]
    )
    assert not (project.path / "merge-base").exists()


def test_updating_a_merge_base_baseline_is_a_usage_error_pointing_to_ledger_record(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project.write(
        ini={"retrieval_baseline": "merge-base", "retrieval_ledger": "ledger.sqlite3"},
        tests=TESTS,
    )
    result = project.run("--retrieval-update-baseline")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*--retrieval-update-baseline writes a baseline file, and retrieval_baseline = "
            "merge-base has none*record a commit's run with `pytest-retrieval ledger record "
            "--at REV`*"
        ]
    )


def test_an_empty_retrieval_ledger_flag_turns_the_ledger_off_as_the_empty_ini_key_does(
    retrieval_project: RetrievalProject,
) -> None:
    # Outside a git repository a ledger is a usage error: a run that passes recorded nothing.
    project = retrieval_project.write(ini={"retrieval_ledger": "ledger.sqlite3"}, tests=TESTS)
    assert project.run().ret == 4
    for off in (["--retrieval-ledger="], ["-o", "retrieval_ledger="]):
        result = project.run(*off)
        assert result.ret == 0, (off, result.stdout.str(), result.stderr.str())
        assert not (project.path / "ledger.sqlite3").exists()
        assert "in the ledger" not in result.stdout.str()
