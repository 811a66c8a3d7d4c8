"""The end of a session: the verdict, the baseline update, the report files, the lines to print.

:func:`finish` is called once, by the controller (never by an xdist worker), after every test
ran. It returns a :class:`Finish`: the exit status to set and everything the terminal shows.
The plugin only prints it. This sits above the session and its renderers so that the session
never imports what draws it.

The baseline-update policy: a baseline is written only with the update flag, only when the
retriever ran, and never from a run where queries failed (a baseline must not record failures as
quality), that was refused or errored (its numbers mean nothing: the committed file is left as
it is), in which no ranking holds a judged id (a baseline of zeros, even with
``retrieval_id_check = off``: :func:`.findings.without_judged_ids`) or that was interrupted (an
interrupted session writes nothing at all).

A refused or errored run (:class:`~pytest_retrieval.verdict.Stop`) prints its reason and fix
first, as one block, with no summary table; its report files say ``refused`` or ``errored``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..session.session import RetrievalSession
from ..verdict import EXIT_INTERRUPTED, EXIT_OK, EXIT_TESTS_FAILED, EXIT_USAGE_ERROR

#: The one line an interrupted session prints.
INTERRUPTED = (
    "pytest-retrieval: interrupted (Ctrl-C or a collection error): no baseline and no report "
    "written, no verdict"
)


@dataclass(frozen=True, slots=True)
class Line:
    """One line to print, and its colour (``red``, ``green`` or none)."""

    text: str
    colour: str | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """What the end of a session decided and what it prints."""

    #: The exit status the session must end with (pytest's own when nothing here changed it).
    exit_status: int
    #: The ``retrieval`` section: the summary tables (empty when the retriever did not run).
    summary: list[str] = field(default_factory=list)
    #: The ``retrieval gates`` section title and lines (no lines: no section).
    gates_title: str = ""
    gates_failed: bool = False
    gates: list[str] = field(default_factory=list)
    #: Notes after the sections: the baseline written or refused, report files, write errors.
    notes: list[Line] = field(default_factory=list)
    #: The line pytest prints before its last one (``session.shouldfail``), or None.
    closing: str | None = None

    def output(self) -> list[tuple[bool, str, dict[str, bool]]]:
        """What the terminal shows, in order, as ``(is_title, text, markup)``: a title is a
        section's separator line (``retrieval``, then the gates section, red when a gate
        failed), the rest are lines (a note in its colour)."""
        out: list[tuple[bool, str, dict[str, bool]]] = []
        if self.summary:
            out.append((True, "retrieval", {}))
            out.extend((False, line, {}) for line in self.summary)
        if self.gates_title:
            failed = self.gates_failed
            out.append((True, self.gates_title, {"red": failed, "green": not failed}))
            out.extend((False, line, {}) for line in self.gates)
        for note in self.notes:
            out.append((False, note.text, {note.colour: True} if note.colour else {}))
        return out


def finish(
    session: RetrievalSession,
    *,
    exit_status: int,
    quiet: bool,
    plugin_version: str,
    worker_usage_error: str | None = None,
    step_summary: bool = False,
    is_worker: bool = False,
    verbose: bool = False,
    width: int = 120,
) -> Finish:
    """Settle the session: exit status, baseline update, report files, terminal lines.

    ``exit_status`` is pytest's so far. A failed gate, regression check or query turns a
    passing run into ``EXIT_TESTS_FAILED`` (a verdict that belongs to no single test would
    otherwise leave pytest's "N passed"); a worker's usage error makes it ``EXIT_USAGE_ERROR``.
    ``step_summary`` appends the Markdown report to ``$GITHUB_STEP_SUMMARY``. An xdist worker
    never finishes a session (its controller does): ``is_worker`` is refused. ``verbose``
    (``-v``) or ``retrieval_summary = full`` shows the full summary table; ``width`` is the
    terminal's, which the compact summary is fitted to.
    """
    if is_worker:
        raise RuntimeError("the baseline is written by the controller, never by a worker")
    if exit_status == EXIT_INTERRUPTED:
        # Ctrl-C (or a collection error, which pytest reports with the same status): whatever
        # ran is partial, so nothing is written, and no verdict is claimed of it.
        return Finish(exit_status=EXIT_INTERRUPTED, notes=[Line(INTERRUPTED, "red")])
    from ..report.terminal import render_gates, render_stop, render_summary

    settings = session.settings
    verdict = session.verdict()
    stop = verdict.stop
    status = exit_status
    if not verdict.passed and status == EXIT_OK:
        status = EXIT_TESTS_FAILED
    if worker_usage_error is not None or (stop is not None and stop.is_refusal):
        status = EXIT_USAGE_ERROR
    notes: list[Line] = []
    if settings.update_baseline:
        note, failed_status = _update_baseline(session, plugin_version)
        notes.append(note)
        if failed_status is not None:
            status = failed_status
    written: list[str] = []
    write_error: Line | None = None
    if session.has_run or stop is not None:  # a stopped run's reports say so (none go stale)
        try:
            _write_reports(session, plugin_version, step_summary=step_summary, written=written)
        except InputError as exc:
            status = EXIT_USAGE_ERROR
            write_error = Line(f"pytest-retrieval: {exc}", "red")
    if not quiet:
        notes.extend(Line(f"retrieval: {line}") for line in written)
    if write_error is not None:
        notes.append(write_error)
    ledger_lines, ledger_failed = _ledger_notes(session, plugin_version)
    notes.extend(ledger_lines)
    if ledger_failed:
        status = EXIT_USAGE_ERROR
    if stop is not None:  # the reason first, in one block: no table of meaningless numbers
        return Finish(
            exit_status=status,
            gates_title=verdict.section_title,
            gates_failed=True,
            gates=render_stop(session),
            notes=notes,
            closing=verdict.closing,
        )
    return Finish(
        exit_status=status,
        summary=render_summary(
            session, quiet=quiet, full=verbose or settings.summary == "full", width=width
        )
        if session.has_run
        else [],
        # The verdict is printed in every mode (-q included) once anything was gated.
        gates_title=verdict.section_title
        if session.gate_outcomes or session.regression_outcomes or verdict.failed
        else "",
        gates_failed=bool(verdict.failed or verdict.failed_queries),
        gates=render_gates(session, quiet=quiet),
        notes=notes,
        closing=verdict.closing,
    )


def worker_payload(session: RetrievalSession) -> dict[str, Any]:
    """What an xdist worker sends the controller at its end (:mod:`.report.payload`)."""
    from ..session.payload import Report

    return Report.from_session(session).to_dict()


def settle(
    session: RetrievalSession,
    payloads: Iterable[dict[str, Any]],
    *,
    exit_status: int,
    verbosity: int,
    worker_usage_error: str | None,
    reporter: Any,
) -> Finish:
    """The controller's end of a pytest session: the xdist workers' payloads merged into the
    session, then :func:`finish` (``verbosity`` is pytest's: -q is below 0, -v above; the
    Markdown report goes to ``$GITHUB_STEP_SUMMARY`` when that is set and
    ``retrieval_step_summary`` allows it; the summary fits ``reporter``'s width)."""
    from ..session.payload import Report, merge_all
    from ..version import __version__

    payloads = list(payloads)
    if payloads:
        merge_all(Report.from_dict(p) for p in payloads).apply_to(session)
    settings = session.settings
    return finish(
        session,
        exit_status=exit_status,
        quiet=verbosity < 0,
        plugin_version=__version__,
        worker_usage_error=worker_usage_error,
        step_summary=settings.step_summary and bool(os.environ.get("GITHUB_STEP_SUMMARY")),
        is_worker=False,
        verbose=verbosity > 0,
        width=terminal_width(reporter),
    )


def terminal_width(reporter: Any) -> int:
    """The terminal's width: pytest's own writer's (its terminal reporter's), else the
    environment's."""
    writer = getattr(reporter, "_tw", None)
    width = getattr(writer, "fullwidth", None)
    if isinstance(width, int) and width > 0:
        return width
    import shutil

    return shutil.get_terminal_size().columns


def _unrepresentative(session: RetrievalSession) -> str | None:
    """Why this run's baseline would not be the pipeline's, or None: a stale cache (the
    rankings are the cache's, not the retriever's), or extra runs asked for that never came
    (under xdist one worker makes them; if it died, a single run would be written as if it
    were the mean of several)."""
    settings = session.settings
    probe = session.probe
    stale = probe.stale_warning() if probe is not None else None
    if stale is not None:
        return stale
    info = session.run_info
    live = info is not None and info.source == "retriever" and info.cache_mode != "replay"
    if live and settings.baseline_runs > 1 and not session.extra_runs:
        return (
            f"{settings.baseline_runs} runs were asked for (--retrieval-baseline-runs) and only "
            "the first reached the controller (the xdist worker that made the others died); "
            "run it again"
        )
    return None


def _update_baseline(session: RetrievalSession, plugin_version: str) -> tuple[Line, int | None]:
    """Write the baseline from this run; the note to print and the exit status if refused."""
    from ..files import atomic_write_text
    from ..regression.baseline import dump_baseline, stamp
    from ..regression.recording import failed_in_extra_runs

    path = session.settings.baseline
    if path is None:  # refused at configure time; kept for callers outside the plugin
        return Line("pytest-retrieval: no baseline path to write to", "red"), EXIT_USAGE_ERROR
    if session.stop is not None:  # its exit status is the stop's
        error = (
            f"baseline not written to {path}: the run was {session.stop.status}, so it has no "
            "scores to record (the file is left as it was)"
        )
        return Line(f"pytest-retrieval: {error}", "red"), None
    if not session.has_run:
        error = (
            f"baseline not written to {path}: no test ran the retriever (select at least one "
            "retrieval gate)"
        )
        return Line(f"pytest-retrieval: {error}", "red"), EXIT_TESTS_FAILED
    failed = session.failed_queries()
    if failed:
        error = (
            f"baseline not written to {path}: {len(failed)} "
            f"quer{'y' if len(failed) == 1 else 'ies'} failed in the retriever, and a baseline "
            "must not record failures as quality"
        )
        return Line(f"pytest-retrieval: {error}", "red"), EXIT_TESTS_FAILED
    failed_again = failed_in_extra_runs(session.extra_runs)
    if failed_again:
        error = (
            f"baseline not written to {path}: {len(failed_again)} "
            f"quer{'y' if len(failed_again) == 1 else 'ies'} failed in one of the "
            f"{session.settings.baseline_runs} runs ({', '.join(failed_again[:5])}), and a "
            "baseline must not record failures as quality"
        )
        return Line(f"pytest-retrieval: {error}", "red"), EXIT_TESTS_FAILED
    refused = _unrepresentative(session)
    if refused is None:
        from ..session.findings import without_judged_ids

        refused = without_judged_ids(session)
    if refused is not None:
        return Line(f"pytest-retrieval: baseline not written to {path}: {refused}", "red"), (
            EXIT_TESTS_FAILED
        )
    snapshot = stamp(session.baseline_snapshot(), plugin_version=plugin_version)
    try:
        atomic_write_text(path, dump_baseline(snapshot), what="baseline")
    except InputError as exc:
        return Line(f"pytest-retrieval: {exc}", "red"), EXIT_USAGE_ERROR
    runs = (
        f", per-query means over {snapshot.n_runs} runs with their spread; the scores printed "
        "are the first run's"
        if snapshot.n_runs > 1
        else ""
    )
    note = (
        f"baseline written to {path} ({len(snapshot.queries)} queries{runs}, golden fingerprint "
        f"{snapshot.fingerprint[:12]} of the {len(snapshot.queries)} non-held-out queries): "
        "review the diff and commit it"
    )
    return Line(f"retrieval: {note}", "green"), None


def _ledger_notes(session: RetrievalSession, plugin_version: str) -> tuple[list[Line], bool]:
    """The baseline taken from the ledger (said once), and this run recorded in it; whether
    recording failed (red, and a usage error: the history would silently lose the run)."""
    notes = [
        Line(f"retrieval: {source.note}")
        for source in session.ledger_baselines.values()
        if source.note is not None and source.snapshot is not None
    ]
    failed = False
    if session.settings.ledger:
        from ..session.ledger import headroom, record

        notes.extend(Line(f"retrieval: {text}") for text in headroom(session))
        text, failed = record(session, plugin_version=plugin_version)
        notes.append(
            Line(f"pytest-retrieval: {text}", "red") if failed else Line(f"retrieval: {text}")
        )
    return notes, failed


def _write_reports(
    session: RetrievalSession, plugin_version: str, *, step_summary: bool, written: list[str]
) -> None:
    """The report files asked for (:class:`.report.write.ReportTargets`), all rendered from one
    artifact document."""
    from ..report.write import ReportTargets

    targets = ReportTargets.from_settings(session.settings, step_summary=step_summary)
    if not targets.wanted:
        return
    from ..report.artifact import build_artifact

    document = build_artifact(
        session,
        plugin_version=plugin_version,
        extra_specs=[b.spec for b in session.budgets],
        declared={
            "thresholds": [str(t) for t in session.thresholds],
            "regressions": [b.line for b in session.budgets],
        },
    )
    targets.write(document, baseline=session.baseline, written=written)
