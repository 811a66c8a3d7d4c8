"""The Markdown report: golden files of a passing and a failing run, valid GFM, escaping, caps.

The two runs are hand-built artifacts under ``tests/golden/`` (``report-pass.json``,
``report-fail.json``), so the golden files do not move with the example project's numbers. The
failing run's baseline (``report-fail-baseline.json``) holds only what the renderers read from a
baseline document: ``means`` and the relevant ranks of one query. After an intended change of
the output, regenerate the golden files with ``PYTEST_RETRIEVAL_UPDATE_GOLDEN=1`` and review
the diff.
"""

from __future__ import annotations

import copy
import json
import os
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from paths import GOLDEN_FILES

from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot
from pytest_retrieval.report.markdown import (
    append_step_summary,
    md_code,
    md_text,
    render_markdown,
)

GOLDEN_DIR = GOLDEN_FILES
UPDATE = os.environ.get("PYTEST_RETRIEVAL_UPDATE_GOLDEN") == "1"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))
    return data


def passing() -> dict[str, Any]:
    return load("report-pass.json")


def failing() -> dict[str, Any]:
    return load("report-fail.json")


def fail_baseline() -> dict[str, Any]:
    return load("report-fail-baseline.json")


def check_golden(text: str, name: str) -> None:
    path = GOLDEN_DIR / name
    if UPDATE:
        path.write_text(text, encoding="utf-8", newline="\n")
    assert path.exists(), f"{path} is missing: run with PYTEST_RETRIEVAL_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


# --- a GitHub-flavoured Markdown table check ----------------------------------------------------

_SEPARATOR = re.compile(r"^\s*:?-+:?\s*$")


def split_row(line: str) -> list[str]:
    """The cells of a table row, split on pipes that are not backslash-escaped (GFM's rule,
    which applies inside code spans too)."""
    assert line.startswith("|"), line
    assert line.endswith("|"), line
    assert not line.endswith("\\|"), line
    cells: list[str] = []
    cell: list[str] = []
    body = line[1:-1]
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            cell.append(body[i : i + 2])
            i += 2
            continue
        if char == "|":
            cells.append("".join(cell))
            cell = []
        else:
            cell.append(char)
        i += 1
    cells.append("".join(cell))
    return cells


def gfm_problems(markdown: str) -> list[str]:
    """What would make GitHub render a table (or a <details> block) wrongly; [] when valid."""
    problems = []
    lines = markdown.split("\n")
    i = 0
    tables = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("<details>") and (i + 1 >= len(lines) or lines[i + 1] != ""):
            problems.append(f"line {i + 1}: <details> must be followed by a blank line")
        if line == "</details>" and lines[i - 1] != "":
            problems.append(f"line {i + 1}: </details> must follow a blank line")
        if not line.startswith("|"):
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].startswith("|"):
            i += 1
        block = lines[start:i]
        tables += 1
        where = f"table at line {start + 1}"
        if start > 0 and lines[start - 1] != "":
            problems.append(f"{where}: no blank line before it")
        if i < len(lines) and lines[i] != "":
            problems.append(f"{where}: no blank line after it")
        if len(block) < 2:
            problems.append(f"{where}: no separator row")
            continue
        header = split_row(block[0])
        separator = split_row(block[1])
        if not all(_SEPARATOR.match(cell) for cell in separator):
            problems.append(f"{where}: second row is not a separator row: {block[1]}")
        if len(separator) != len(header):
            problems.append(f"{where}: {len(header)} header cells, {len(separator)} separators")
        for number, row in enumerate(block[2:], start=start + 3):
            cells = split_row(row)
            if len(cells) != len(header):
                problems.append(f"line {number}: {len(cells)} cells, the header has {len(header)}")
    return problems


def table_rows(markdown: str, header_start: str) -> list[list[str]]:
    """The body rows (as cells) of the first table whose header starts with ``header_start``."""
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(header_start):
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in split_row(row)])
            return rows
    raise AssertionError(f"no table starting with {header_start!r}")


# --- golden files -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["report-pass.json", "report-fail.json"])
def test_the_hand_built_artifacts_follow_the_artifact_schema(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(files("pytest_retrieval").joinpath("artifact.schema.json").read_text())
    jsonschema.validate(load(name), schema, cls=jsonschema.Draft202012Validator)


def test_the_markdown_of_a_passing_run_matches_its_golden_file() -> None:
    check_golden(render_markdown(passing()), "report-pass.md")


def test_the_markdown_of_a_failing_run_matches_its_golden_file() -> None:
    check_golden(render_markdown(failing(), baseline=fail_baseline()), "report-fail.md")


@pytest.mark.parametrize(
    "markdown",
    [
        pytest.param(lambda: render_markdown(passing()), id="passing"),
        pytest.param(lambda: render_markdown(failing(), baseline=fail_baseline()), id="failing"),
        pytest.param(lambda: render_markdown(failing(), max_rows=1, max_gates=1), id="capped"),
    ],
)
def test_every_table_of_the_report_is_valid_gfm(markdown: Any) -> None:
    text = markdown()
    assert text.count("\n| ") >= 3  # there are tables to check
    assert gfm_problems(text) == []


@pytest.mark.parametrize(
    ("markdown", "problem"),
    [
        ("text\n\n| a | b |\n| --- | --- |\n| 1 | 2 | 3 |\n", "3 cells, the header has 2"),
        ("text\n\n| a | b |\n| --- | --- |\n| x|y | 2 |\n", "3 cells, the header has 2"),
        ("text\n\n| a | b |\n| 1 | 2 |\n", "not a separator row"),
        ("text\n| a |\n| --- |\n", "no blank line before it"),
        ("<details><summary>x</summary>\n| a |\n", "must be followed by a blank line"),
    ],
)
def test_the_gfm_check_catches_a_broken_table(markdown: str, problem: str) -> None:
    assert any(problem in p for p in gfm_problems(markdown))


# --- content ------------------------------------------------------------------------------------


def test_the_first_line_is_the_verdict() -> None:
    assert render_markdown(passing()).split("\n", 1)[0] == (
        "### ✅ Retrieval quality: all 4 gates passed"
    )
    assert render_markdown(failing()).split("\n", 1)[0] == (
        "### ❌ Retrieval quality: 3 of 7 gates failed (1 regression, 1 incomparable, "
        "1 threshold); 1 query failed to run"
    )


def test_a_failed_query_fails_the_verdict_even_when_every_gate_passed() -> None:
    artifact = passing()
    artifact["errors"] = [
        {"query_id": "sso-okta", "stage": "retriever", "type": "ValueError", "message": "boom"}
    ]
    text = render_markdown(artifact)
    assert text.startswith("### ❌ Retrieval quality: all 4 gates passed; 1 query failed to run")
    assert table_rows(text, "| Query | Stage | Error |") == [
        ["`sso-okta`", "retriever", "ValueError: boom"]
    ]


def test_a_run_without_gates_says_so() -> None:
    artifact = passing()
    artifact["gates"] = []
    artifact["regressions"] = []
    text = render_markdown(artifact)
    assert text.startswith("### ✅ Retrieval quality: no gates\n")
    assert "No gates: add thresholds or regression budgets" in text


def test_failing_gates_come_first_and_carry_delta_ci_and_significance() -> None:
    rows = table_rows(render_markdown(failing()), "|   | Gate |")
    assert [row[0] for row in rows] == ["❌", "❌", "❌", "✅", "✅", "✅", "⏭️"]
    regression = rows[1]
    assert regression[1:] == [
        "`ndcg@10` vs baseline",
        "declared",
        "reranker · overall",
        "0.5789",
        "drop ≤ 0.0200",
        "-0.2334 [-0.3511, -0.1158]",
        "p &lt; 0.001, significant drop",
    ]
    improvement = rows[5]
    assert improvement[6:] == ["+0.0750 [+0.0250, +0.1250]", "p = 0.007812, significant rise"]
    # The source column: mrr@10 >= 0.6 was asserted in a test, the others declared.
    assert [row[2] for row in rows] == ["declared"] * 4 + ["test"] + ["declared"] * 2


def test_without_a_baseline_the_gates_table_has_no_delta_columns() -> None:
    artifact = failing()
    artifact["regressions"] = []
    markdown = render_markdown(artifact)
    header = next(line for line in markdown.split("\n") if line.startswith("|   | Gate |"))
    assert header == "|   | Gate | Source | Where | Value | Threshold / budget |"
    rows = table_rows(markdown, "|   | Gate |")
    assert rows[0] == [
        "❌",
        "`ndcg@5`",
        "declared",
        "reranker · slice multi-hop",
        "0.1000",
        "≥ 0.5",
    ]


def test_a_failed_threshold_lists_its_worst_queries() -> None:
    artifact = failing()
    (gate,) = [g for g in artifact["gates"] if g["metric"] == "ndcg@5"]
    gate["message"] = "\n".join(
        [
            "ndcg@5 = 0.1000 < 0.5, expected >= 0.5 [stage=reranker split=overall slice=multi-hop]",
            "queries scored: 2, skipped (no relevant document): 0",
            "worst 2 queries:",
            "  sso-okta 'How do I set up SSO?': ndcg@5 = 0.0000; missed sso-setup",
            "  export-all 'Export everything': ndcg@5 = 0.2000; missed export-data",
        ]
    )
    markdown = render_markdown(artifact)
    lines = markdown.split("\n")
    start = lines.index("❌ `ndcg@5 ≥ 0.5` (reranker · slice multi-hop), worst queries:")
    assert lines[start + 1 : start + 4] == [
        "",
        # (md_text breaks "@" with a zero-width space: no mention, no autolink)
        "- sso-okta 'How do I set up SSO?': ndcg@&#8203;5 = 0.0000; missed sso-setup",
        "- export-all 'Export everything': ndcg@&#8203;5 = 0.2000; missed export-data",
    ]
    # A passed threshold lists none.
    assert markdown.count("worst queries:") == 1


def test_the_baseline_adds_the_change_of_each_mean_to_the_metric_tables() -> None:
    without = render_markdown(failing())
    with_baseline = render_markdown(failing(), baseline=fail_baseline())
    assert "0.5789 (-0.2334)" not in without
    assert "| `ndcg@10` | 0.5789 (-0.2334) | 1.0000 | 0.1578 (-0.4669) |" in with_baseline


def test_a_baseline_snapshot_works_like_its_document() -> None:
    artifact = passing()
    query = QuerySnapshot(
        split="tune",
        slices=(),
        labels="x",
        metrics={"retriever": {"recall@10": 0.5}},
        relevant_ranks={"retriever": {}},
        top={"retriever": ()},
    )
    snapshot = Snapshot("f" * 64, {}, ("retriever",), ("recall@10",), {"q": query})
    text = render_markdown(artifact, baseline=snapshot)
    assert "| `recall@10` | 0.8750 (+0.3750) | 1.0000 | 0.7500 |" in text
    assert text == render_markdown(artifact, baseline=snapshot.to_dict())


def test_the_per_query_regressions_are_collapsed_worst_first_with_the_moves() -> None:
    text = render_markdown(failing())
    block = text.split("<details><summary>Per-query regressions", 1)[1].split("</details>", 1)[0]
    assert block.startswith(": 1 failing check, 12 query drops</summary>")
    rows = table_rows(block, "| Query | Before |")
    deltas = [float(row[3]) for row in rows]
    assert deltas == sorted(deltas)
    assert rows[0][4] == "`sso-setup` 3 → —; `okta` 1 → 2"


def test_many_moves_of_one_query_are_cut_to_three() -> None:
    artifact = failing()
    first = artifact["regressions"][0]["worse"][0]
    assert first["query_id"] == "q01"
    assert len(first["moves"]) == 4
    first["after"] = -5.0  # now the worst drop, so it is shown
    rows = table_rows(render_markdown(artifact), "| Query | Before |")
    assert rows[0][4] == "`doc-01` 1 → 2; `extra-a` 2 → —; `extra-b` 3 → 12; +1 more"


def test_long_lists_are_capped_and_say_how_many_were_left_out() -> None:
    text = render_markdown(failing(), max_rows=3, max_gates=4)
    assert len(table_rows(text, "|   | Gate |")) == 4
    assert "_... and 3 more gates (pass, skip) (all in the JSON artifact)_" in text
    assert len(table_rows(text, "| Query | Before |")) == 3
    assert "_... and 9 more queries (all in the JSON artifact)_" in text
    notes = [line for line in text.split("\n") if line.startswith("- ")]
    assert len(notes) == 4  # three notes and the line counting the others
    assert notes[-1] == "- _... and 1 more note (all in the JSON artifact)_"


def test_the_failing_checks_detailed_are_capped_too() -> None:
    artifact = failing()
    first = artifact["regressions"][0]
    artifact["regressions"] = [
        {**copy.deepcopy(first), "metric": f"ndcg@{k}", "name": f"ndcg@{k}[budget=0.02]"}
        for k in (1, 5, 10)
    ]
    text = render_markdown(artifact, max_rows=2)
    assert "Per-query regressions: 3 failing checks, 36 query drops" in text
    assert "_... and 1 more failing check (all in the JSON artifact)_" in text


def test_a_report_over_the_size_limit_drops_the_full_tables_then_shortens_the_lists() -> None:
    artifact = failing()
    full = render_markdown(artifact)
    assert "All 9 metrics" in full
    shorter = render_markdown(artifact, max_chars=len(full) - 1)
    assert len(shorter) < len(full)
    assert "All 9 metrics" not in shorter
    tiny = render_markdown(artifact, max_chars=1000)
    assert len(tiny) <= 1000
    assert tiny.startswith("### ❌ Retrieval quality: 3 of 7 gates failed")
    assert gfm_problems(tiny) == []


def test_the_caps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        render_markdown(passing(), max_rows=0)


def test_the_output_is_stable_and_has_no_clock() -> None:
    artifact = passing()
    first = render_markdown(artifact)
    artifact["created"] = "2030-12-31T23:59:59Z"
    assert render_markdown(artifact) == first
    assert "2026-01-02" not in first


def test_the_footer_names_the_golden_set_and_its_fingerprint() -> None:
    text = render_markdown(failing())
    assert (
        "Golden set help-centre (corpus 2026-01): 6 queries (heldout 2, tune 4) · fingerprint "
        "`0f1e2d3c4b5a` (all 6 queries) · held-out split heldout scored (aggregates only) · "
        "2 held-out queries "
        "redacted · pytest-retrieval 0.1.0"
    ) in text


# --- escaping -----------------------------------------------------------------------------------


def test_user_text_renders_as_text_in_markdown() -> None:
    assert md_text("a|b <script>alert(1)</script> & *x* _y_ [z](u) `c` ~d~ \\") == (
        "a\\|b &lt;script&gt;alert(1)&lt;/script&gt; &amp; \\*x\\* \\_y\\_ \\[z\\](u) "
        "\\`c\\` \\~d\\~ \\\\"
    )
    assert md_text("two\nlines\r\n\there") == "two lines here"


def test_a_code_span_keeps_pipes_inside_table_cells_and_backticks_inside_the_span() -> None:
    assert md_code("a|b") == "`a\\|b`"
    assert md_code("a|b", table=False) == "`a|b`"
    assert md_code("a`b") == "`` a`b ``"
    assert md_code("``x") == "``` ``x ```"
    assert md_code("") == "—"


def test_hostile_ids_and_texts_stay_inside_their_cells() -> None:
    artifact = failing()
    hostile = 'x|y <img src=x onerror="alert(1)"> `z`'
    artifact["regressions"][0]["worse"][-1]["query_id"] = hostile
    artifact["queries"][2]["id"] = hostile
    artifact["queries"][2]["text"] = "</details> | # heading\n| --- |"
    artifact["results"][1]["column"] = "slice|<b>"
    text = render_markdown(artifact)
    assert gfm_problems(text) == []
    # Inside a code span GitHub shows markup literally; outside, it is entity-escaped.
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)
    assert "<img" not in outside_code
    assert "<b>" not in text
    assert "slice\\|&lt;b&gt; (n=2)" in text
    assert "\n</details>" in text
    assert text.count("</details>") == text.count("<details>")
    row = table_rows(text, "| Query | Before |")[0]
    assert row[0] == (
        '`` x\\|y <img src=x onerror="alert(1)"> `z` `` &lt;/details&gt; \\| # heading \\| --- \\|'
    )


# --- $GITHUB_STEP_SUMMARY -----------------------------------------------------------------------


def test_the_step_summary_is_appended_to_the_file_the_variable_names(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    written = append_step_summary("### report", {"GITHUB_STEP_SUMMARY": str(summary)})
    assert written == str(summary)
    assert summary.read_text(encoding="utf-8") == "earlier step\n### report\n"


def test_without_the_variable_no_step_summary_is_written(tmp_path: Path) -> None:
    assert append_step_summary("### report", {}) is None
    assert append_step_summary("### report", {"GITHUB_STEP_SUMMARY": ""}) is None
    assert list(tmp_path.iterdir()) == []
