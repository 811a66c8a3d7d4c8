"""The HTML report without a browser: escaping, self-containment, charts, held-out redaction.

The page is parsed with the standard library's HTML parser, the way a browser tokenizes it: a
hostile string that escaped its text node would show up as an element or an attribute.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest
from plugin_helpers import HELDOUT_ID, HELDOUT_TEXT, RetrievalProject
from report_helpers import (
    ALERT_PAYLOAD,
    IMG_PAYLOAD,
    SCRIPT_PAYLOAD,
    Page,
    hostile_artifact,
    load,
)

from pytest_retrieval.report.html import CSP, render_html
from pytest_retrieval.report.markup import el, escape

#: Every element the report uses; anything else would come from an injected string.
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "span",
    "strong", "code", "section", "div", "figure", "figcaption", "svg", "line", "text",
    "polyline", "circle", "rect", "table", "thead", "tbody", "tr", "th", "td", "details",
    "summary", "input", "footer", "script",
}  # fmt: skip


def test_every_hostile_string_is_text_never_markup() -> None:
    html = render_html(hostile_artifact(), baseline=load("report-fail-baseline.json"))
    page = Page(html)
    assert set(page.tags) <= ALLOWED_TAGS
    assert page.tags.count("script") == 1
    assert "img" not in page.tags
    assert not [name for _tag, name, _value in page.attrs if name.startswith("on")]
    text = page.all_text()
    for payload in (SCRIPT_PAYLOAD, IMG_PAYLOAD, ALERT_PAYLOAD, "a&b"):
        assert payload in text or payload in page.attr_values()
    # the raw payloads never appear: only their escaped forms
    assert SCRIPT_PAYLOAD not in html
    assert "<img" not in html
    assert ALERT_PAYLOAD not in html
    assert "&lt;script&gt;document.body.setAttribute(&#x27;data-pwned&#x27;" in html
    assert "&quot;&gt;&lt;img src=x onerror=&quot;" in html
    assert "a&amp;b" in html


def test_the_only_script_is_the_reports_own_and_the_policy_allows_only_it() -> None:
    page = Page(render_html(hostile_artifact()))
    (script,) = page.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in CSP
    (policy,) = [
        attrs.get("content")
        for tag, attrs in page.elements
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    assert policy == CSP
    assert policy.startswith("default-src 'none';")


def test_the_page_loads_nothing_from_anywhere() -> None:
    html = render_html(load("report-fail.json"), baseline=load("report-fail-baseline.json"))
    assert "http://" not in html
    assert "https://" not in html
    page = Page(html)
    assert not [name for _tag, name, _value in page.attrs if name in ("src", "href", "srcset")]
    assert "link" not in page.tags
    assert "img" not in page.tags
    assert "iframe" not in page.tags
    assert "@import" not in html
    assert "url(" not in html


def test_the_element_builder_escapes_text_and_attributes_but_not_its_own_markup() -> None:
    built = el("td", {"title": '"><b>', "data-x": None, "hidden": True}, "<i>", el("b", None, "&"))
    assert built == '<td title="&quot;&gt;&lt;b&gt;" hidden>&lt;i&gt;<b>&amp;</b></td>'
    assert escape(built) is built


def test_the_curves_have_one_point_per_k_and_metric_and_the_baseline_a_second_line() -> None:
    artifact = load("report-fail.json")
    without = render_html(artifact)
    # two stages x (recall, ndcg) x K = 1, 5, 10
    assert without.count('class="pt run') == 12
    assert 'class="pt base' not in without
    with_baseline = render_html(artifact, baseline=load("report-fail-baseline.json"))
    assert with_baseline.count('class="pt run') == 12
    assert with_baseline.count('class="pt base') == 12
    assert with_baseline.count('class="line base') == 4
    # recall@10 of the reranker: 0.75 -> y = 12 + (1 - 0.75) * 198 = 61.5
    assert re.search(
        r'<circle class="pt run s-recall" cx="[\d.]+" cy="61.5"[^>]*data-k="10"', without
    )


def test_the_slice_chart_has_a_bar_per_column_and_a_marker_per_threshold() -> None:
    html = render_html(load("report-fail.json"))
    # the one slice gate: ndcg@5 >= 0.5 slice=multi-hop (reranker), failed
    (chart,) = re.findall(r'<svg class="bars".*?</svg>', html)
    assert 'data-metric="ndcg@5"' in chart
    assert 'data-stage="reranker"' in chart
    assert re.findall(r'data-column="([^"]+)"', chart) == ["overall", "lookup", "multi-hop"]
    assert chart.count('class="marker fail"') == 1
    assert 'class="bar below" x="' in chart  # the bar under a failed gate is marked
    assert 'data-threshold="0.5"' in chart


def test_without_slice_gates_the_slice_chart_shows_ndcg_near_ten() -> None:
    artifact = load("report-pass.json")
    artifact["gates"] = []
    (chart,) = re.findall(r'<svg class="bars".*?</svg>', render_html(artifact))
    assert 'data-metric="ndcg@10"' in chart
    assert 'data-stage="reranker"' in chart
    assert len(re.findall(r'class="bar( below)?"', chart)) == 3
    assert "marker" not in chart


def test_the_query_table_has_the_first_relevant_rank_and_the_lost_documents() -> None:
    artifact = load("report-fail.json")
    html = render_html(artifact, baseline=load("report-fail-baseline.json"))
    rows = re.findall(r'<tr data-id="([^"]+)"[^>]*>(.*?)</tr>', html)
    assert [qid for qid, _row in rows] == [
        "refund-window",
        "invoice-pdf",
        "sso-okta",
        "export-all",
        "q01",
    ]
    sso = dict(rows)["sso-okta"]
    # first relevant: retriever rank 1, reranker rank 2; sso-setup lost (the baseline had it at 3)
    assert re.findall(r'<td class="num" data-sort="(\d+)">', sso) == ["1", "2"]
    assert "<code>sso-setup</code> (lost; baseline #3)" in sso
    export = dict(rows)["export-all"]
    assert "<code>data-retention</code>" in export
    assert "lost" not in export
    assert "TimeoutError: reranker took longer than 60 s" in export
    # without a baseline nothing can be called lost
    assert "(lost;" not in render_html(artifact)


def test_a_row_the_snapshot_lacks_takes_its_rank_from_the_reciprocal_rank() -> None:
    html = render_html(load("report-fail.json"))
    (q01,) = re.findall(r'<tr data-id="q01"[^>]*>(.*?)</tr>', html)
    # q01 is not in the snapshot; mrr@10 = 0.5 at both stages -> rank 2
    assert re.findall(r'<td class="num" data-sort="(\d+)">', q01) == ["2", "2"]


def test_the_report_is_deterministic_and_ends_with_a_newline() -> None:
    artifact = load("report-fail.json")
    first = render_html(artifact)
    assert first == render_html(json.loads(json.dumps(artifact)))
    assert first.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert first.endswith("</html>\n")


def test_a_run_without_results_still_renders() -> None:
    artifact = load("report-pass.json")
    artifact["results"] = []
    artifact["queries"] = []
    html = render_html(artifact)
    assert "No recall@K or NDCG@K in this run&#x27;s metrics." in html
    assert "No results to chart." in html


def test_the_verdict_banner_says_pass_or_fail() -> None:
    passing = Page(render_html(load("report-pass.json")))
    assert ("body", "data-verdict", "pass") in passing.attrs
    assert "PASSED: all 4 gates passed" in passing.all_text()
    failing = Page(render_html(load("report-fail.json")))
    assert ("body", "data-verdict", "fail") in failing.attrs
    assert (
        "FAILED: 3 of 7 gates failed (1 regression, 1 incomparable, 1 threshold)"
        in failing.all_text()
    )


@pytest.fixture
def in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")


@pytest.mark.usefixtures("in_ci")
def test_heldout_rows_are_left_out_exactly_as_in_the_artifact(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(ini={"retrieval_thresholds": "recall@3 >= 0.5 split=heldout"})
    retrieval_project.tests("def test_nothing():\n    pass\n")
    result = retrieval_project.run("--retrieval-heldout", "--retrieval-json", "out.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    artifact = retrieval_project.artifact()
    assert artifact["redacted_queries"] == 1
    html = render_html(artifact)
    assert HELDOUT_ID not in html
    assert HELDOUT_TEXT not in html
    assert "1 held-out queries are not listed" in html
    rows = re.findall(r'<tr data-id="([^"]+)"', html)
    assert rows == [q["id"] for q in artifact["queries"]] == ["refund", "sso", "invoice", "fax"]
    # the held-out column is charted (aggregates are allowed), with the gate's marker
    assert 'data-column="heldout"' in html
    assert 'class="marker pass"' in html


def test_the_gates_table_names_each_gates_source_and_drops_delta_without_a_baseline() -> None:
    document = load("report-fail.json")
    page = render_html(document)
    gates = page[page.index('<section id="gates">') :]
    gates = gates[: gates.index("</section>")]
    assert "<th>Source</th>" in gates
    assert "Δ vs baseline [CI]" in gates
    # mrr@10 >= 0.6 was asserted in a test; the rest are declared.
    assert gates.count("<td>test</td>") == 1
    assert gates.count("<td>declared</td>") == 6
    document["regressions"] = []
    gates = render_html(document)
    gates = gates[gates.index('<section id="gates">') :]
    gates = gates[: gates.index("</section>")]
    assert "Δ vs baseline" not in gates
    assert "Significance" not in gates
