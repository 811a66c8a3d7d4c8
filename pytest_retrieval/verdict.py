"""Outcomes and the verdict: one home for "what failed" and the exit status it gives.

:class:`Status` is what one gate or regression check concluded (the strings the artifact stores);
:attr:`Status.passed` says whether it lets the build pass and :attr:`Status.shown` how reports
show it (``pass``, ``fail`` or ``skip``). :class:`Verdict` counts the failures of a whole run and
is built the same way from a live session (terminal, exit status) and from a stored artifact
(Markdown, HTML, the ``report`` command), so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

#: pytest's exit statuses this plugin sets (the values of ``pytest.ExitCode``).
EXIT_OK = 0
EXIT_TESTS_FAILED = 1
EXIT_INTERRUPTED = 2
EXIT_USAGE_ERROR = 4


class Status(str, Enum):
    """The outcome of one gate or regression check."""

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

    @property
    def passed(self) -> bool:
        """True when this outcome lets the build pass (an improvement or a skip does)."""
        return self in (Status.PASS, Status.IMPROVEMENT, Status.SKIPPED)

    @property
    def shown(self) -> str:
        """``pass``, ``fail`` or ``skip``: the three states reports show."""
        if self is Status.SKIPPED:
            return "skip"
        return "pass" if self.passed else "fail"


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The run's outcome: how many gates, how many failed, how many queries failed to run."""

    gates: int
    failed_gates: int
    failed_regressions: int
    failed_queries: int
    queries: int

    @classmethod
    def count(
        cls,
        gates: Iterable[bool],
        regressions: Iterable[bool],
        *,
        failed_queries: int,
        queries: int,
    ) -> Verdict:
        """From the ``passed`` flags of every threshold gate and every regression check."""
        gate_flags, regression_flags = list(gates), list(regressions)
        return cls(
            gates=len(gate_flags) + len(regression_flags),
            failed_gates=gate_flags.count(False),
            failed_regressions=regression_flags.count(False),
            failed_queries=failed_queries,
            queries=queries,
        )

    @property
    def failed(self) -> int:
        """Failed gates and regression checks."""
        return self.failed_gates + self.failed_regressions

    @property
    def passed(self) -> bool:
        """No gate or regression check failed and every query ran."""
        return not (self.failed or self.failed_queries)

    @property
    def exit_status(self) -> int:
        """``EXIT_TESTS_FAILED`` unless the run passed."""
        return EXIT_OK if self.passed else EXIT_TESTS_FAILED

    @property
    def icon(self) -> str:
        """✅ or ❌."""
        return "✅" if self.passed else "❌"

    @property
    def headline(self) -> str:
        """``3 of 21 gates failed`` / ``all 21 gates passed`` (and failed queries)."""
        parts = []
        if self.gates == 0:
            parts.append("no gates")
        elif self.failed:
            detail = []
            if self.failed_regressions:
                detail.append(_plural(self.failed_regressions, "regression"))
            if self.failed_gates:
                detail.append(_plural(self.failed_gates, "threshold"))
            parts.append(f"{self.failed} of {self.gates} gates failed ({', '.join(detail)})")
        else:
            parts.append(f"all {_plural(self.gates, 'gate')} passed")
        if self.failed_queries:
            parts.append(f"{_plural(self.failed_queries, 'query', 'queries')} failed to run")
        return "; ".join(parts)

    @property
    def text(self) -> str:
        """``❌ 3 of 21 gates failed (3 regressions)``."""
        return f"{self.icon} {self.headline}"

    @property
    def section_title(self) -> str:
        """The terminal's ``retrieval gates`` section title."""
        return (
            f"retrieval gates: {self.failed} failed"
            if self.failed
            else "retrieval gates: all passed"
        )
