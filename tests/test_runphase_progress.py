"""The progress line of a long run (runphase.progress_line): shown on a terminal, also while
pytest captures the tests' output, and written past that capture."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import pytest

from pytest_retrieval.runphase import progress_line


class Stdout:
    """The process's stdout: a terminal only while pytest's capture is suspended (fd capture
    points the descriptor at a temporary file while a test runs)."""

    def __init__(self) -> None:
        self.suspended = False

    def isatty(self) -> bool:
        return self.suspended


class Capture:
    def __init__(self, stdout: Stdout) -> None:
        self.stdout = stdout

    @contextlib.contextmanager
    def global_and_fixture_disabled(self) -> Iterator[None]:
        self.stdout.suspended = True
        try:
            yield
        finally:
            self.stdout.suspended = False


class Terminal:
    def __init__(self, stdout: Stdout) -> None:
        self.stdout = stdout
        self.written: list[tuple[str, bool]] = []

    def write(self, text: str, flush: bool = False) -> None:
        self.written.append((text, self.stdout.suspended))


def test_the_line_shows_on_a_terminal_while_pytest_captures_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stdout = Stdout()
    monkeypatch.setattr(sys, "__stdout__", stdout)
    terminal = Terminal(stdout)
    show = progress_line(60, lambda: terminal, Capture(stdout))
    assert show is not None  # asked with the capture suspended: a terminal
    show(60, 60)
    # Written with the capture suspended, so it reaches the terminal, not the capture file.
    assert terminal.written == [("\rretrieval: 60/60 queries done\n", True)]


def test_no_line_off_a_terminal_or_for_a_short_run(monkeypatch: pytest.MonkeyPatch) -> None:
    stdout = Stdout()
    monkeypatch.setattr(sys, "__stdout__", stdout)
    terminal = Terminal(stdout)
    # Without a capture manager (-p no:capture) stdout is asked as it is: here no terminal.
    assert progress_line(60, lambda: terminal, None) is None
    assert progress_line(49, lambda: terminal, Capture(stdout)) is None
    assert terminal.written == []
