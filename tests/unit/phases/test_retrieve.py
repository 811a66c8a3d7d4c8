"""The progress line of a long run (runphase.progress_line): shown on a terminal, also while
pytest captures the tests' output, and written past that capture (unit cases with stand-ins
for the capture manager, then a real pytest run in a pseudo-terminal)."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_retrieval.phases.retrieve import progress_line


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


def test_a_real_pytest_run_on_a_terminal_shows_the_line(tmp_path: Path) -> None:
    # pytest's own fd capture, in a pseudo-terminal: the line must reach the terminal.
    lines = ["version: 1", "queries:"]
    for i in range(60):
        lines += [f"  - id: q{i}", f"    text: question {i}", f"    relevant: [doc-{i}]"]
    (tmp_path / "golden.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nretrieval_golden = golden.yaml\nretrieval_ks = 1\n", encoding="utf-8"
    )
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n"
        "@pytest.fixture(scope='session')\n"
        "def retriever_under_test():\n"
        "    return lambda text, k: ['doc-' + text.split()[-1]]\n",
        encoding="utf-8",
    )
    (tmp_path / "test_gate.py").write_text(
        "from pytest_retrieval import assert_recall_at\n\n"
        "def test_recall():\n    assert_recall_at(1) >= 1.0\n",
        encoding="utf-8",
    )
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=tmp_path,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    output = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal closed: the run is over
            break
        if not chunk:
            break
        output += chunk
    os.close(primary)
    assert process.wait(timeout=120) == 0, output.decode(errors="replace")
    assert b"retrieval: 60/60 queries done" in output
