"""The HTML report in a real browser: headless Chromium renders it, runs its script, and we read
the DOM it ends up with (``--dump-dom``) and take a screenshot.

The page is the failing run with hostile strings in every user field (see ``report_helpers``)
and a baseline, so the curves carry dashed baseline lines. Checks: the report's own script ran
(its Content-Security-Policy hash is right), the charts have the expected number of points, bars
and threshold markers, the query table is complete, searchable and sortable (through the
address's fragment), and no injected markup became an element or ran.

Skipped only when no Chromium is installed; ``.ci/system-packages`` installs Debian's
``chromium`` in CI.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from report_helpers import IMG_PAYLOAD, SCRIPT_PAYLOAD, Page, hostile_artifact, load

from pytest_retrieval.report.html import render_html


def find_browser() -> str | None:
    """Chromium at /usr/bin/chromium, else chromium, chromium-browser or google-chrome on PATH."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


BROWSER = find_browser()

pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason=(
        "no headless Chromium found (/usr/bin/chromium, or chromium, chromium-browser or "
        "google-chrome on PATH): install it with `apt-get install chromium` (CI's "
        ".ci/system-packages does)"
    ),
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def browse(profile: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium once on ``url`` (a fresh profile folder each time)."""
    assert BROWSER is not None
    profile.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [BROWSER, *FLAGS, f"--user-data-dir={profile}", *args, url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def expected_points(artifact: Mapping[str, Any], baseline: Mapping[str, Any]) -> int:
    """recall@K and ndcg@K points of every stage's overall column, and the baseline's."""
    count = 0
    for result in artifact["results"]:
        if result["column"] != "overall":
            continue
        for name, value in result["metrics"].items():
            if name.split("@")[0] in ("recall", "ndcg") and "@" in name:
                count += value is not None
                count += name in baseline["means"].get(result["stage"], {}).get("overall", {})
    return count


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("browser")
    artifact = hostile_artifact()
    path = folder / "report.html"
    path.write_text(render_html(artifact, baseline=load("report-fail-baseline.json")), "utf-8")
    return path, artifact


@pytest.fixture(scope="module")
def dom(report: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Page:
    path, _artifact = report
    result = browse(tmp_path_factory.mktemp("profile"), path.as_uri(), "--dump-dom")
    return Page(result.stdout)


def body(page: Page) -> dict[str, str | None]:
    (attrs,) = [attrs for tag, attrs in page.elements if tag == "body"]
    return attrs


def test_the_reports_own_script_runs_under_its_content_security_policy(dom: Page) -> None:
    assert body(dom)["data-js"] == "ready"


def test_the_charts_have_the_expected_points_bars_and_markers(
    dom: Page, report: tuple[Path, dict[str, Any]]
) -> None:
    _path, artifact = report
    attrs = body(dom)
    # 2 stages x (recall, ndcg) x K in (1, 5, 10), for the run and for the baseline
    assert expected_points(artifact, load("report-fail-baseline.json")) == 24
    assert attrs["data-points"] == "24"
    # one slice chart (the failed ndcg@5 gate on multi-hop): overall, lookup, multi-hop
    assert attrs["data-bars"] == "3"
    assert attrs["data-markers"] == "1"
    assert attrs["data-rows"] == str(len(artifact["queries"])) == "5"


def test_no_injected_markup_became_an_element_or_ran(dom: Page) -> None:
    assert "data-pwned" not in body(dom)
    assert "img" not in dom.tags
    assert dom.tags.count("script") == 1
    assert not [name for _tag, name, _value in dom.attrs if name.startswith("on")]
    text = dom.all_text()
    assert SCRIPT_PAYLOAD in text
    assert IMG_PAYLOAD in text


def test_the_query_table_filters_and_sorts_from_the_address(
    report: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, _artifact = report
    filtered = Page(browse(tmp_path / "a", path.as_uri() + "#filter=TIMEOUT", "--dump-dom").stdout)
    assert body(filtered)["data-visible"] == "1"
    assert body(filtered)["data-first-row"] == "export-all"
    ordered = Page(
        browse(tmp_path / "b", path.as_uri() + "#sort=id&order=desc", "--dump-dom").stdout
    )
    assert body(ordered)["data-visible"] == "5"
    assert body(ordered)["data-first-row"] == "sso-okta"
    rows = [attrs.get("data-id") for tag, attrs in ordered.elements if tag == "tr"]
    ids = [r for r in rows if r is not None]
    assert ids == ["sso-okta", "refund-window", "q01", "export-all", IMG_PAYLOAD]


def test_a_screenshot_of_the_report_is_a_png_of_the_window_size(
    report: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, _artifact = report
    shot = tmp_path / "report.png"
    browse(tmp_path / "profile", path.as_uri(), f"--screenshot={shot}", "--window-size=1280,1600")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 1600)
    assert len(data) > 20_000  # a page with charts and tables, not a blank image
