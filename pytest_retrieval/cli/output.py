"""The console script's one way to print: every line through the one terminal/CI escaping.

:func:`echo` is what every command calls instead of ``print`` (a test over the sources finds any
other ``print``, ``sys.stdout.write`` or ``sys.stderr.write`` in the package): each line it
writes is :func:`~pytest_retrieval.text.terminal_text`, so an id, a path, a cache entry or an
exception message carrying ESC, NUL, BEL, a C1 control or a bidi override is shown escaped
(``\\x1b``, ``\\u202e``), and no line can start a GitHub Actions workflow command (``::error``).
Escaping is idempotent: text escaped where the message was built is printed as is.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..text import json_for_terminal, terminal_text


def echo(text: object = "", *, err: bool = False) -> None:
    """Print ``text`` (and a newline) on stdout, or on stderr with ``err``, every line made safe
    for a terminal and a CI log."""
    stream = sys.stderr if err else sys.stdout
    stream.write(terminal_text(text) + "\n")


def error_line(command: str, message: object, *, label: str = "error: ") -> None:
    """The one line of a usage error on stderr: ``COMMAND: error: MESSAGE``, the message on one
    line (its line breaks shown as ``\\n``)."""
    from ..text import for_terminal

    echo(f"{command}: {label}{for_terminal(message)}", err=True)


def echo_json(document: Any, *, ensure_ascii: bool = False) -> None:
    """Print ``document`` as indented JSON on stdout: the same document, with the characters
    :func:`echo` would escape written as JSON escapes (``\\u202e``), so it stays valid JSON."""
    echo(json_for_terminal(json.dumps(document, indent=2, ensure_ascii=ensure_ascii)))
