"""``pytest-retrieval report ARTIFACT [--markdown PATH|-] [--html PATH] [--baseline PATH]``: the
plugin's renderers over a stored run, with usage errors as exit status 2 and one clear line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from paths import GOLDEN_FILES

from pytest_retrieval.cli import EXIT_OK, EXIT_USAGE, main
from pytest_retrieval.regression.baseline import dump_baseline
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot
from pytest_retrieval.report.html import render_html
from pytest_retrieval.report.markdown import render_markdown

GOLDEN_DIR = GOLDEN_FILES


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    path = tmp_path / "out.json"
    shutil.copy(GOLDEN_DIR / "report-fail.json", path)
    return path


def document(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


def write_baseline(path: Path) -> Path:
    """A valid baseline file: one query with reranker recall@5 0.5 (so a mean of 0.5)."""
    query = QuerySnapshot(
        split="tune",
        slices=(),
        labels="x",
        metrics={"reranker": {"recall@5": 0.5}},
        relevant_ranks={"reranker": {}},
        top={"reranker": ()},
    )
    snapshot = Snapshot("f" * 64, {}, ("reranker",), ("recall@5",), {"q": query})
    path.write_text(dump_baseline(snapshot), encoding="utf-8")
    return path


def test_without_an_output_option_the_markdown_goes_to_stdout(
    artifact: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(artifact)]) == EXIT_OK
    assert capsys.readouterr().out == render_markdown(document(artifact))


def test_a_dash_sends_the_markdown_to_stdout_next_to_an_html_file(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = tmp_path / "site" / "report.html"
    assert main(["report", str(artifact), "--markdown", "-", "--html", str(html)]) == EXIT_OK
    assert capsys.readouterr().out == render_markdown(document(artifact))
    assert html.read_text(encoding="utf-8") == render_html(document(artifact))


def test_both_reports_are_written_to_files_with_the_row_cap(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    markdown, html = tmp_path / "report.md", tmp_path / "report.html"
    status = main(
        [
            "report",
            str(artifact),
            "--markdown",
            str(markdown),
            "--html",
            str(html),
            "--max-rows",
            "2",
        ]
    )
    assert status == EXIT_OK
    assert capsys.readouterr().out == ""
    assert markdown.read_text(encoding="utf-8") == render_markdown(document(artifact), max_rows=2)
    assert "_... and 10 more queries (all in the JSON artifact)_" in markdown.read_text("utf-8")
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_baseline_option_adds_the_baseline_to_both_reports(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = write_baseline(tmp_path / "retrieval-baseline.json")
    html = tmp_path / "report.html"
    args = ["report", str(artifact), "--baseline", str(baseline), "--markdown", "-"]
    assert main([*args, "--html", str(html)]) == EXIT_OK
    # reranker recall@5 is 0.625 in the run, 0.5 in the baseline
    assert "| `recall@5` | 0.6250 (+0.1250) |" in capsys.readouterr().out
    assert html.read_text(encoding="utf-8").count('class="pt base s-recall"') == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "artifact not found"),
        ("{", "not valid JSON"),
        ('{"schema": "pytest-retrieval/baseline"}', "not a pytest-retrieval JSON artifact"),
        (
            '{"schema": "pytest-retrieval/artifact", "schema_version": 99}',
            "artifact schema version 99 is not supported",
        ),
    ],
)
def test_a_bad_artifact_is_a_usage_error_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "out.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["report", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("pytest-retrieval report: error: ")
    assert message in err
    assert err.count("\n") == 1


def test_a_missing_or_malformed_baseline_is_a_usage_error(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(artifact), "--baseline", str(tmp_path / "nope.json")]) == EXIT_USAGE
    assert "baseline not found" in capsys.readouterr().err
    assert main(["report", str(artifact), "--baseline", str(artifact)]) == EXIT_USAGE
    assert "not a pytest-retrieval baseline" in capsys.readouterr().err


def test_an_unwritable_output_is_a_usage_error(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(artifact), "--html", str(tmp_path)]) == EXIT_USAGE
    assert "cannot write the HTML report: the path is a directory" in capsys.readouterr().err


def test_a_failing_run_still_renders_with_exit_status_zero(
    artifact: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the verdict is the report's content; `pytest-retrieval gate` is what fails a build
    assert main(["report", str(artifact)]) == EXIT_OK
    assert capsys.readouterr().out.startswith("### ❌ Retrieval quality: 3 of 7 gates failed")
