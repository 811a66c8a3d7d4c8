"""Errors raised for bad user input.

Every user mistake (a malformed file, an unknown metric, a bad option value) becomes an
:class:`InputError` carrying one or more :class:`Problem` records. Each problem names where it
happened (file, line, column, query id, field or option), what was wrong and expected, and how to
fix it, so the plugin and the CLI can print it without a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .text import plural

#: How many problems an error message lists before it says how many more there were.
MAX_LISTED_PROBLEMS = 50


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input, located as precisely as the format allows."""

    message: str
    fix: str | None = None
    source: str | None = None
    line: int | None = None
    column: int | None = None
    query_id: str | None = None
    field: str | None = None

    @property
    def location(self) -> str:
        """``path:line:column`` (as much of it as is known), or an empty string."""
        parts = [self.source] if self.source else []
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def __str__(self) -> str:
        # Compiler style: "path:line:column: query 'q', field 'f': message (fix)".
        context = []
        if self.query_id is not None:
            context.append(f"query {self.query_id!r}")
        if self.field is not None:
            context.append(f"field {self.field!r}")
        text = self.message
        if context:
            text = f"{', '.join(context)}: {text}"
        if self.location:
            text = f"{self.location}: {text}"
        if self.fix:
            text += f" ({self.fix})"
        return text


class InputError(ValueError):
    """Bad user input: one or more :class:`Problem` records, listed in the message."""

    def __init__(self, problems: Problem | str | Iterable[Problem], *, title: str = "") -> None:
        if isinstance(problems, str):
            problems = (Problem(problems),)
        elif isinstance(problems, Problem):
            problems = (problems,)
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.title = title
        super().__init__(self._render())

    def _render(self) -> str:
        listed = [str(p) for p in self.problems[:MAX_LISTED_PROBLEMS]]
        hidden = len(self.problems) - len(listed)
        if hidden > 0:
            listed.append(f"... and {plural(hidden, 'more problem')} not listed")
        if not self.title and len(listed) == 1:
            return listed[0]
        title = self.title or plural(len(self.problems), "problem")
        return "\n".join([title + ":", *(f"  - {line}" for line in listed)])

    def reason_and_fix(self) -> tuple[str, str | None]:
        """The message without the fixes, and the fixes (each once, in order; None when no
        problem has one): a refused run reports the two apart."""
        bare = InputError([replace(p, fix=None) for p in self.problems], title=self.title)
        fixes = dict.fromkeys(p.fix for p in self.problems if p.fix)
        return str(bare), "; ".join(fixes) or None

    @property
    def source(self) -> str | None:
        """The file or option of the first problem, if known."""
        return self.problems[0].source if self.problems else None

    @property
    def line(self) -> int | None:
        """The line of the first problem, if known."""
        return self.problems[0].line if self.problems else None

    @property
    def query_id(self) -> str | None:
        """The query id of the first problem, if known."""
        return self.problems[0].query_id if self.problems else None


class GoldenSetError(InputError):
    """A golden set could not be loaded or failed validation; lists every problem found."""


class RunFileError(InputError):
    """A run or qrels file could not be read."""
