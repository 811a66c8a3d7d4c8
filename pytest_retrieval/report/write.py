"""Every report file, written from one artifact document: the plugin and the console script.

The JSON artifact, the Markdown report (a file, a stream, and/or ``$GITHUB_STEP_SUMMARY``) and the
HTML report are rendered from the same artifact dict, each only when asked for, each written
atomically. A problem with a path is an :class:`~pytest_retrieval.errors.InputError` naming it;
a step summary that cannot be appended to is a warning line, not an error (the job's own report
must not fail the build).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from ..files import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from .view import BaselineLike


def write_reports(
    document: Mapping[str, Any],
    *,
    baseline: BaselineLike | None = None,
    json: str | None = None,
    markdown: str | None = None,
    html: str | None = None,
    step_summary: bool = False,
    max_rows: int | None = None,
    markdown_stream: IO[str] | None = None,
    written: list[str] | None = None,
) -> list[str]:
    """Write the reports asked for; return one line per file written (and warnings).

    ``step_summary`` appends the Markdown to the file ``$GITHUB_STEP_SUMMARY`` names (nothing
    when it is unset). ``markdown_stream`` receives the Markdown too (the CLI's stdout). The
    lines go to ``written`` as each file is written, so a caller still has them when a later
    write raises.
    """
    if written is None:
        written = []
    if json:
        atomic_write_json(json, document, what="JSON artifact")
        written.append(f"JSON artifact written to {json}")
    if markdown or step_summary or markdown_stream is not None:
        from .markdown import DEFAULT_MAX_ROWS, append_step_summary, render_markdown

        text = render_markdown(document, baseline=baseline, max_rows=max_rows or DEFAULT_MAX_ROWS)
        if markdown:
            atomic_write_text(markdown, text, what="Markdown report")
            written.append(f"Markdown report written to {markdown}")
        if markdown_stream is not None:
            markdown_stream.write(text)
        if step_summary:
            try:
                append_step_summary(text)
            except OSError as exc:
                written.append(
                    f"warning: could not append to $GITHUB_STEP_SUMMARY ({exc.strerror})"
                )
    if html:
        from .html import render_html

        atomic_write_text(html, render_html(document, baseline=baseline), what="HTML report")
        written.append(f"HTML report written to {html}")
    return written
