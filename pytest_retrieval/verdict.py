"""Outcomes and the verdict: one home for "what failed" and the exit status it gives.

:class:`Status` is what one gate or regression check concluded (the strings the artifact stores);
:attr:`Status.passed` says whether it lets the build pass and :attr:`Status.shown` how reports
show it (``pass``, ``fail`` or ``skip``). :class:`Verdict` counts the failures of a whole run and
is built the same way from a live session (terminal, exit status) and from a stored artifact
(Markdown, HTML, the ``report`` command), so the two can never disagree.

:class:`Stop` is a run that has no numbers at all, and why: **refused** (the settings or what the
retriever returns make every number meaningless, such as ids that never match a judged id: a
usage error, exit status 4) or **errored** (the retriever could not be built, or every query
failed: exit status 1). A verdict with a stop is neither passed nor failed: every report says
``refused`` or ``errored`` with the reason and the fix, shows no score, and no baseline is
written from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .text import plural

#: pytest's exit statuses this plugin sets (the values of ``pytest.ExitCode``).
EXIT_OK = 0
EXIT_TESTS_FAILED = 1
EXIT_INTERRUPTED = 2
EXIT_USAGE_ERROR = 4


class Shown(str, Enum):
    """The three states reports show a gate or regression check in (:attr:`Status.shown`)."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def word(self) -> str:
        """``PASS``, ``FAIL`` or ``SKIP``: how the terminal and the console script say it."""
        return self.value.upper()


class Status(str, Enum):
    """The outcome of one gate or regression check (a threshold gate's: :meth:`of_gate`)."""

    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    INCOMPARABLE = "incomparable"
    MISSING = "missing"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def of_gate(cls, *, passed: bool, skipped: bool) -> Status:
        """A threshold gate's status: skipped (a sealed split), else passed or failed."""
        if skipped:
            return cls.SKIPPED
        return cls.PASS if passed else cls.FAIL

    @property
    def passed(self) -> bool:
        """True when this outcome lets the build pass (an improvement or a skip does)."""
        return self in (Status.PASS, Status.IMPROVEMENT, Status.SKIPPED)

    @property
    def shown(self) -> Shown:
        """``pass``, ``fail`` or ``skip``: the three states reports show."""
        if self is Status.SKIPPED:
            return Shown.SKIP
        return Shown.PASS if self.passed else Shown.FAIL


#: The two states of a run that has no numbers (:attr:`Stop.status`, the artifact's ``status``).
REFUSED = "refused"
ERRORED = "errored"
#: The line pytest prints last (before its own) when a run was refused or errored.
REFUSED_CLOSING = f"pytest-retrieval refused the run (exit status {EXIT_USAGE_ERROR})"
ERRORED_CLOSING = "pytest-retrieval: the run errored, nothing was scored"


@dataclass(frozen=True, slots=True)
class Stop:
    """Why a run has no numbers: ``refused`` (exit status 4) or ``errored`` (exit status 1).

    ``reason`` says what was found (it may run over several lines: examples, a listing), ``fix``
    what to change; both are plain text without the ``pytest-retrieval`` prefix, which
    :attr:`text` (what the terminal and the failed test show) adds.
    """

    status: str
    reason: str
    fix: str | None = None

    def __post_init__(self) -> None:
        if self.status not in (REFUSED, ERRORED):
            raise ValueError(f"a stop is {REFUSED!r} or {ERRORED!r}, not {self.status!r}")

    @classmethod
    def refused(cls, reason: str, fix: str | None = None) -> Stop:
        """A refusal: the numbers would be meaningless (a usage error)."""
        return cls(REFUSED, reason, fix)

    @classmethod
    def errored(cls, reason: str, fix: str | None = None) -> Stop:
        """An error: the retriever gave nothing to score."""
        return cls(ERRORED, reason, fix)

    @property
    def is_refusal(self) -> bool:
        """True for a refusal (exit status 4)."""
        return self.status == REFUSED

    @property
    def exit_status(self) -> int:
        """``EXIT_USAGE_ERROR`` for a refusal, ``EXIT_TESTS_FAILED`` for an error."""
        return EXIT_USAGE_ERROR if self.is_refusal else EXIT_TESTS_FAILED

    @property
    def text(self) -> str:
        """The message in full: ``pytest-retrieval refused the run: <reason>`` (or ``... the
        run errored, nothing was scored: ...``), then ``Fix: <fix>`` on a line of its own."""
        head = (
            "pytest-retrieval refused the run"
            if self.is_refusal
            else "pytest-retrieval: the run errored, nothing was scored"
        )
        return f"{head}: {self.reason}" + (f"\nFix: {self.fix}" if self.fix else "")

    @property
    def closing(self) -> str:
        """The one line pytest prints last, before its own summary line."""
        return REFUSED_CLOSING if self.is_refusal else ERRORED_CLOSING

    def to_dict(self) -> dict[str, str | None]:
        """``status``, ``reason`` and ``fix``: the artifact's top-level keys and the xdist
        payload."""
        return {"status": self.status, "reason": self.reason, "fix": self.fix}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stop | None:
        """The stop an artifact (or a payload) records; None when the run has numbers."""
        status = data.get("status")
        if status not in (REFUSED, ERRORED):
            return None
        fix = data.get("fix")
        return cls(str(status), str(data.get("reason") or ""), str(fix) if fix else None)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The run's outcome: how many gates, how many failed, how many queries failed to run,
    and whether the run was stopped (:class:`Stop`: refused or errored, no numbers at all)."""

    gates: int
    failed_gates: int
    #: Failed regression checks, whatever their status (``regression``, ``incomparable``,
    #: ``missing``), and of them those that are no regression but could not compare.
    failed_regressions: int
    failed_queries: int
    queries: int
    stop: Stop | None = None
    incomparable: int = 0
    missing: int = 0

    @classmethod
    def count(
        cls,
        gates: Iterable[bool],
        regressions: Iterable[Status | bool],
        *,
        failed_queries: int,
        queries: int,
        stop: Stop | None = None,
    ) -> Verdict:
        """From the ``passed`` flags of every threshold gate and the :class:`Status` of every
        regression check (a bare ``passed`` flag counts a failure as a regression): a check
        that failed as ``incomparable`` or ``missing`` is counted as such, not as a
        regression."""
        gate_flags = list(gates)
        statuses = [
            item if isinstance(item, Status) else (Status.PASS if item else Status.REGRESSION)
            for item in regressions
        ]
        failed = [s for s in statuses if not s.passed]
        return cls(
            gates=len(gate_flags) + len(statuses),
            failed_gates=gate_flags.count(False),
            failed_regressions=len(failed),
            failed_queries=failed_queries,
            queries=queries,
            stop=stop,
            incomparable=failed.count(Status.INCOMPARABLE),
            missing=failed.count(Status.MISSING),
        )

    @property
    def failed(self) -> int:
        """Failed gates and regression checks."""
        return self.failed_gates + self.failed_regressions

    @property
    def passed(self) -> bool:
        """No gate or regression check failed, every query ran, and the run was not stopped."""
        return not (self.failed or self.failed_queries or self.stop)

    @property
    def exit_status(self) -> int:
        """The stop's (4 refused, 1 errored); else ``EXIT_TESTS_FAILED`` unless the run
        passed."""
        if self.stop is not None:
            return self.stop.exit_status
        return EXIT_OK if self.passed else EXIT_TESTS_FAILED

    @property
    def status(self) -> str:
        """``passed``, ``failed``, ``refused`` or ``errored``."""
        if self.stop is not None:
            return self.stop.status
        return "passed" if self.passed else "failed"

    @property
    def word(self) -> str:
        """``PASSED``, ``FAILED``, ``REFUSED`` or ``ERRORED`` (the HTML title)."""
        return self.status.upper()

    @property
    def icon(self) -> str:
        """✅ or ❌ (⛔ for a refused run)."""
        if self.stop is not None and self.stop.is_refusal:
            return "⛔"
        return "✅" if self.passed else "❌"

    @property
    def headline(self) -> str:
        """``3 of 21 gates failed (2 regressions, 1 incomparable)`` / ``all 21 gates passed``
        (and failed queries); for a stopped run ``run refused, nothing scored (exit status
        4)``."""
        if self.stop is not None:
            return f"run {self.stop.status}, nothing scored (exit status {self.stop.exit_status})"
        parts = []
        if self.gates == 0:
            parts.append("no gates")
        elif self.failed:
            detail = []
            regressed = self.failed_regressions - self.incomparable - self.missing
            if regressed:
                detail.append(plural(regressed, "regression"))
            if self.incomparable:
                detail.append(f"{self.incomparable} incomparable")
            if self.missing:
                detail.append(f"{self.missing} without a baseline")
            if self.failed_gates:
                detail.append(plural(self.failed_gates, "threshold"))
            parts.append(f"{self.failed} of {self.gates} gates failed ({', '.join(detail)})")
        else:
            parts.append(f"all {plural(self.gates, 'gate')} passed")
        if self.failed_queries:
            parts.append(f"{plural(self.failed_queries, 'query', 'queries')} failed to run")
        return "; ".join(parts)

    @property
    def text(self) -> str:
        """``❌ 3 of 21 gates failed (3 regressions)``."""
        return f"{self.icon} {self.headline}"

    @property
    def section_title(self) -> str:
        """The terminal's ``retrieval gates`` section title: ``retrieval gates: 2 failed``,
        ``... all passed``; failed queries are said there too (a session they fail must not
        read "all passed"), and a stopped run's title says so instead."""
        if self.stop is not None:
            return f"retrieval: run {self.stop.status} (exit status {self.stop.exit_status})"
        if self.failed_queries:
            ran = f"{self.failed_queries} of {plural(self.queries, 'query', 'queries')}"
            gates = f"{self.failed} failed" if self.failed else f"{self.gates} passed"
            return f"retrieval gates: {gates}; {ran} failed to run"
        return (
            f"retrieval gates: {self.failed} failed"
            if self.failed
            else "retrieval gates: all passed"
        )

    @property
    def closing(self) -> str | None:
        """The line pytest prints last, before its own summary line (``session.shouldfail``),
        when the session fails for a reason no test's outcome shows: the stop's, or how many
        queries failed (their tests may all have passed: ``1 passed`` alone would read as a
        green run); None else."""
        if self.stop is not None:
            return self.stop.closing
        if self.failed_queries:
            return (
                f"pytest-retrieval: {self.failed_queries} of "
                f"{plural(self.queries, 'query', 'queries')} failed in the retriever "
                f"(exit status {EXIT_TESTS_FAILED})"
            )
        return None
