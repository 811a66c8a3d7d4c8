"""The one list of report files (``report.write.REPORT_FILES``) and where a run's reports go
(``ReportTargets``): the settings, the checks before a run and the writer all read it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from paths import GOLDEN_FILES

from pytest_retrieval.errors import InputError
from pytest_retrieval.phases.start import check_outputs
from pytest_retrieval.report.write import REPORT_FILES, ReportFile, ReportTargets
from pytest_retrieval.settings.options import OPTIONS
from pytest_retrieval.settings.resolve import Settings

DOCUMENT = json.loads((GOLDEN_FILES / "report-pass.json").read_text())


@pytest.mark.parametrize("kind", REPORT_FILES, ids=lambda k: k.key)
def test_every_report_file_is_a_path_setting_of_its_name(kind: ReportFile) -> None:
    option = next((o for o in OPTIONS if o.name == kind.key), None)
    assert option is not None, f"no setting {kind.setting} for the {kind.what}"
    assert option.is_path
    assert option.ini == kind.setting


@pytest.mark.parametrize("kind", REPORT_FILES, ids=lambda k: k.key)
def test_a_run_writes_each_report_file_its_settings_ask_for_and_no_other(
    kind: ReportFile, tmp_path: Path
) -> None:
    path = str(tmp_path / f"out.{kind.key}")
    targets = ReportTargets.from_settings(Settings(**{kind.key: path}))
    assert targets.files() == [(kind, path)]
    assert targets.write(DOCUMENT) == [f"{kind.what} written to {path}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"out.{kind.key}"]
    if kind.key == "json":
        assert json.loads(Path(path).read_text()) == DOCUMENT


@pytest.mark.parametrize("kind", REPORT_FILES, ids=lambda k: k.key)
def test_a_report_file_that_is_the_golden_set_is_refused_before_the_run_by_its_setting(
    kind: ReportFile, tmp_path: Path
) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text("queries: []\n")
    with pytest.raises(InputError) as raised:
        check_outputs(Settings(golden=(str(golden),), **{kind.key: str(golden)}))
    assert f"the {kind.what} ({kind.setting})" in str(raised.value)
    assert golden.read_text() == "queries: []\n"


def test_nothing_is_wanted_until_a_file_the_step_summary_or_a_stream_is() -> None:
    assert not ReportTargets().wanted
    assert not ReportTargets.from_settings(Settings()).wanted
    assert ReportTargets(step_summary=True).wanted
    assert ReportTargets(markdown_stream=io.StringIO()).wanted


def test_the_markdown_stream_gets_the_markdown_report_and_no_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    stream = io.StringIO()
    assert ReportTargets(markdown_stream=stream).write(DOCUMENT) == []
    expected = (GOLDEN_FILES / "report-pass.md").read_text()
    assert stream.getvalue() == expected
    assert list(tmp_path.iterdir()) == []
