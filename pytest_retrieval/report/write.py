"""Every report file, written from one artifact document: the plugin and the console script.

:data:`REPORT_FILES` is the one list of the report files (the JSON artifact, the Markdown report,
the HTML report), and :class:`ReportTargets` says where each of one run's reports goes: the files
asked for, the Markdown also as a stream and/or appended to ``$GITHUB_STEP_SUMMARY``. The plugin
builds it from the settings of the same names (:meth:`ReportTargets.from_settings`: written at the
end of the run, and checked before the retriever runs), ``pytest-retrieval report`` from its
flags. Each report is rendered from the same artifact dict, only when asked for, and written
atomically. A problem with a path is an :class:`~pytest_retrieval.errors.InputError` naming it;
a step summary that cannot be appended to is a warning line, not an error (the job's own report
must not fail the build).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ..files import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from ..settings.resolve import Settings
    from .view import BaselineLike


@dataclass(frozen=True, slots=True)
class ReportFile:
    """One kind of report file: ``key`` names its setting (``retrieval_<key>``, the report
    command's ``--<key>``) and its field of :class:`ReportTargets`; ``what`` is what messages
    call it."""

    key: str
    what: str

    @property
    def setting(self) -> str:
        """The ini key that asks for it: ``retrieval_json``."""
        return f"retrieval_{self.key}"


JSON_ARTIFACT = ReportFile("json", "JSON artifact")
MARKDOWN_REPORT = ReportFile("markdown", "Markdown report")
HTML_REPORT = ReportFile("html", "HTML report")

#: Every report file, in the order they are written. A new report format is a row here, a field
#: of :class:`ReportTargets`, its renderer in :meth:`ReportTargets.write` and its setting in
#: :data:`~pytest_retrieval.settings.options.OPTIONS`.
REPORT_FILES = (JSON_ARTIFACT, MARKDOWN_REPORT, HTML_REPORT)


@dataclass(frozen=True, slots=True)
class ReportTargets:
    """Where one run's reports go: a path per report file of :data:`REPORT_FILES` (None: not
    asked for); ``step_summary`` appends the Markdown to the file ``$GITHUB_STEP_SUMMARY``
    names (nothing when it is unset); ``markdown_stream`` receives the Markdown too (the CLI's
    stdout)."""

    json: str | None = None
    markdown: str | None = None
    html: str | None = None
    step_summary: bool = False
    markdown_stream: IO[str] | None = field(default=None, compare=False)

    @classmethod
    def from_settings(cls, settings: Settings, *, step_summary: bool = False) -> ReportTargets:
        """The report files a pytest run's settings ask for (``retrieval_json``,
        ``retrieval_markdown``, ``retrieval_html``); ``step_summary`` whether the Markdown goes
        to ``$GITHUB_STEP_SUMMARY`` too (``retrieval_step_summary``, and the variable set)."""
        paths = {kind.key: getattr(settings, kind.key) or None for kind in REPORT_FILES}
        return cls(**paths, step_summary=step_summary)

    def files(self) -> list[tuple[ReportFile, str]]:
        """The report files asked for, each with its path, in :data:`REPORT_FILES` order."""
        found = ((kind, getattr(self, kind.key)) for kind in REPORT_FILES)
        return [(kind, path) for kind, path in found if path]

    @property
    def wanted(self) -> bool:
        """True when anything is to be written (a file, the step summary or the stream)."""
        return bool(self.files()) or self.step_summary or self.markdown_stream is not None

    def write(
        self,
        document: Mapping[str, Any],
        *,
        baseline: BaselineLike | None = None,
        max_rows: int | None = None,
        written: list[str] | None = None,
    ) -> list[str]:
        """Write the reports asked for; return one line per file written (and warnings).

        The lines go to ``written`` as each file is written, so a caller still has them when a
        later write raises.
        """
        if written is None:
            written = []
        if self.json:
            atomic_write_json(self.json, document, what=JSON_ARTIFACT.what)
            written.append(f"{JSON_ARTIFACT.what} written to {self.json}")
        if self.markdown or self.step_summary or self.markdown_stream is not None:
            from .markdown import DEFAULT_MAX_ROWS, append_step_summary, render_markdown

            rows = max_rows or DEFAULT_MAX_ROWS
            text = render_markdown(document, baseline=baseline, max_rows=rows)
            if self.markdown:
                atomic_write_text(self.markdown, text, what=MARKDOWN_REPORT.what)
                written.append(f"{MARKDOWN_REPORT.what} written to {self.markdown}")
            if self.markdown_stream is not None:
                self.markdown_stream.write(text)
            if self.step_summary:
                try:
                    append_step_summary(text)
                except OSError as exc:
                    written.append(
                        f"warning: could not append to $GITHUB_STEP_SUMMARY ({exc.strerror})"
                    )
        if self.html:
            from .html import render_html

            page = render_html(document, baseline=baseline)
            atomic_write_text(self.html, page, what=HTML_REPORT.what)
            written.append(f"{HTML_REPORT.what} written to {self.html}")
        return written
