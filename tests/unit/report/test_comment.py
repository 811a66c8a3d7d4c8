"""The pull-request comment's body (pytest_retrieval/report/comment.py): the marker that finds it
again, the report cut at a line under the provider's limit, the line naming the commit."""

from __future__ import annotations

from paths import GOLDEN_FILES

from pytest_retrieval.report.comment import (
    carries,
    comment_body,
    default_key,
    footer_line,
    golden_name,
    key_text,
    marker,
    same_body,
)

REPORT = (GOLDEN_FILES / "report-fail.md").read_text(encoding="utf-8")
MARK = "<!-- pytest-retrieval: k -->"


def body(report: str, limit: int, footer: str = "") -> str:
    return comment_body(
        report, MARK, limit=limit, provider="GitHub", full_report="in `r.md`", footer=footer
    )


def test_a_key_cannot_end_the_html_comment_or_open_a_tag() -> None:
    # "-" "-" ">" → "-" "-" "%3E" → "--" becomes "-%2D"; < > ' % encoded; white space runs
    # become one space; a bidi override (U+202E) is encoded as its UTF-8 bytes.
    assert key_text("a-->b\t\n<x> 'q' %\u202e") == "a-%2D%3Eb %3Cx%3E %27q%27 %25%E2%80%AE"
    mark = marker("x --> <script>")
    assert mark == "<!-- pytest-retrieval: x -%2D%3E %3Cscript%3E -->"
    assert mark.count("-->") == 1
    assert mark.endswith("-->")
    assert "<" not in mark[4:]


def test_a_key_is_readable_and_capped() -> None:
    assert key_text("café/retrieval: py3.12") == "café/retrieval: py3.12"
    assert len(key_text("k" * 500)) == 200


def test_the_golden_set_is_named_by_the_reports_footer_unescaped() -> None:
    assert golden_name(REPORT) == "help-centre"  # "Golden set help-centre (corpus 2026-01): 6 …"
    footer = "Golden set my\\_set &amp; co (corpus 1): 3 queries · held-out split heldout sealed"
    assert golden_name(f"### ✅ verdict\n\n{footer}\n") == "my_set & co"
    assert golden_name("### a report written by hand\n") is None


def test_the_default_key_is_the_golden_set_and_the_job_else_the_file_name() -> None:
    assert default_key(REPORT, "report.md", "CI/retrieval") == "golden=help-centre job=CI/retrieval"
    footer = "Golden set my\\_set &amp; co: 3 queries"
    assert default_key(footer, "report.md", "test: [a, b]") == (
        "golden=my_set%20%26%20co job=test:%20[a,%20b]"
    )
    assert default_key("# by hand\n", "nightly.md", "") == "golden=nightly.md job=local"


def test_a_report_within_the_limit_is_posted_whole_between_marker_and_footer() -> None:
    assert (
        body(REPORT, 65_536, footer="<sub>f</sub>")
        == f"{MARK}\n{REPORT.rstrip()}\n\n<sub>f</sub>\n"
    )


def test_a_long_report_is_cut_at_a_line_keeping_the_verdict_and_closing_its_blocks() -> None:
    cut = body(REPORT, 1000, footer="<sub>f</sub>")
    assert len(cut) <= 1000
    lines = cut.split("\n")
    report_lines = REPORT.split("\n")
    assert lines[0] == MARK
    note = next(i for i, line in enumerate(lines) if line.startswith("_Cut at"))
    kept = lines[1 : note - 1]
    assert kept == report_lines[: len(kept)]  # whole lines, in order, the verdict first
    assert lines[1] == report_lines[0]
    assert lines[note] == (
        f"_Cut at GitHub's 1,000-character comment limit: {len(report_lines) - 1 - len(kept):,} "
        "more lines; the full report is in `r.md`._"
    )
    assert lines[note + 1 :] == ["", "<sub>f</sub>", ""]
    assert cut.count("<details") == cut.count("</details>")


def test_a_cut_closes_an_open_details_block_and_code_fence() -> None:
    report = "### verdict\n\n<details><summary>s</summary>\n\n```text\n" + "x" * 70 + "\n" * 0
    report += "\n".join(f"line {i} " + "y" * 60 for i in range(40)) + "\n```\n\n</details>\n"
    cut = body(report, 1000)
    assert len(cut) <= 1000
    closing = cut.split("\n_Cut at")[0].rstrip("\n").split("\n")
    assert closing[-3:] == ["```", "", "</details>"]


def test_a_table_left_without_a_row_is_dropped() -> None:
    paragraph = "p" * 300
    report = f"### verdict\n\n{paragraph}\n\n| a | b |\n| --- | --- |\n| {'x' * 2000} | 1 |\n"
    cut = body(report, 1000)
    assert "| a | b |" not in cut
    assert "| --- |" not in cut
    assert cut.split("\n")[1:4] == ["### verdict", "", paragraph]


def test_a_first_line_longer_than_the_limit_is_shortened_at_a_word() -> None:
    report = " ".join(["word"] * 600) + "\n\nmore\n"
    cut = body(report, 1000)
    assert len(cut) <= 1000
    first = cut.split("\n")[1]
    assert first.endswith("word…")
    assert len(first) <= 250


def test_a_marker_counts_only_as_a_line_of_its_own() -> None:
    assert carries(f"{MARK}\r\nold report\r\n", MARK)
    assert carries(f"  {MARK}  \nold", MARK)
    assert not carries(f"quoting {MARK} here", MARK)
    assert not carries("<!-- pytest-retrieval: k2 -->\nold", MARK)


def test_an_edit_that_changed_only_line_ends_is_the_same_body() -> None:
    assert same_body("a\r\nb  \r\n", "a\nb\n")
    assert not same_body("a\nb\n", "a\nc\n")


def test_the_footer_names_only_a_hex_commit_and_an_http_address() -> None:
    assert footer_line("0123456789ABCDEF" * 2 + "01234567", "https://ci.example/runs/5") == (
        "<sub>pytest-retrieval · commit `0123456789ab` · [CI run](https://ci.example/runs/5)</sub>"
    )
    assert footer_line("main; rm -rf", "javascript:alert(1)") == "<sub>pytest-retrieval</sub>"
    assert footer_line(None, "https://x.example/a)(b") == "<sub>pytest-retrieval</sub>"
    assert footer_line(None, "https://x.example/" + "a" * 400) == "<sub>pytest-retrieval</sub>"
