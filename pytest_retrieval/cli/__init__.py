"""The ``pytest-retrieval`` console script: the same pipeline as the plugin, without pytest.

Exit status: 0 success, 1 a check failed (validation, gate), 2 usage error (bad option, missing
or malformed file, unknown metric) or an interrupt (Ctrl-C), each error printed as a clear
message on stderr.

One error path: :func:`main` turns every usage error, whether argparse's (an unknown option, a
value out of range), an :class:`~pytest_retrieval.errors.InputError` or an ``OSError`` from a
file, into one line ``pytest-retrieval COMMAND: error: ...`` and exit status 2, with user text
escaped (:func:`~pytest_retrieval.text.for_terminal`). Every line any command prints goes through
:func:`~pytest_retrieval.cli.output.echo` (the one terminal/CI escaping). Every file is written
atomically, so Ctrl-C leaves none half-written.

Modules:

* ``args``: the argument types the commands share (``positive_int``, ``tampered``).
* ``output``: ``echo``, the one way a command prints, and the error line.
* ``evaluate``: ``evaluate``: score a TREC run against TREC qrels.
* ``golden``: ``golden validate``, ``stats``, ``convert``.
* ``golden_input``: a golden subcommand's inputs, missing or invalid, and its exit statuses.
* ``labelling``: ``golden pool`` and ``golden merge`` (the labelling worksheet out and back).
* ``offline``: ``compare`` and ``gate``: gating a stored run (artifact), offline.
* ``report``: ``report``: the Markdown and HTML reports of a stored run.
* ``run``: ``run``: the retrieval phase outside pytest (local or on Ray), written as a run file.
* ``cache``: ``cache show`` and ``cache clear``.
* ``ledger``: ``ledger record``, ``merge``, ``show``, ``trend``, ``label``, ``prune``.
* ``comment``: ``comment``: the report as one pull-request comment (where to post, from the CI
  environment, and the one warning when it cannot).
* ``forges``: the GitHub and GitLab API subset it speaks over urllib (timeouts, retries,
  paging, which comment is its own, the token kept to the API's address).

Decisions that live here: the escaping of every line the console script prints
(``output.echo``, through ``text.terminal_text``); which comment is the command's own (its
author: ``forges.ours``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from ..errors import InputError
from ..run.factories import UserCodeError
from .output import echo, error_line

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """An argparse error: the command's name and one line of message."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse, with errors raised (not printed as usage + message and exited): :func:`main`
    prints them as the one line every usage error is."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from . import cache as cache_command
    from . import comment as comment_command
    from . import evaluate as evaluate_command
    from . import golden as golden_command
    from . import ledger as ledger_command
    from . import offline as offline_command
    from . import report as report_command
    from . import run as run_command

    parser = _Parser(
        prog="pytest-retrieval",
        description="Score, validate and gate retrieval runs (the pytest plugin's CLI twin).",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser
    )
    evaluate_command.register(subparsers)
    golden_command.register(subparsers)
    offline_command.register(subparsers)
    report_command.register(subparsers)
    cache_command.register(subparsers)
    run_command.register(subparsers)
    ledger_command.register(subparsers)
    comment_command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    parser = build_parser()
    command = "pytest-retrieval"
    try:
        args = parser.parse_args(argv)
        command = f"pytest-retrieval {args.command}" if getattr(args, "command", None) else command
        if args.version:
            from ..version import __version__

            echo(f"pytest-retrieval {__version__}")
            return EXIT_OK
        func = getattr(args, "func", None)
        if func is None:
            _error(command, "no command given; see `pytest-retrieval --help`")
            return EXIT_USAGE
        status: int = func(args)
    except SystemExit as exc:  # --help and --version of argparse: it printed, and exits
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except UsageError as exc:
        hint = f"; see `{exc.prog} --help`"
        _error(exc.prog, f"{exc}{hint}")
        return EXIT_USAGE
    except InputError as exc:
        _error(command, _one_line(exc))
        if isinstance(exc, UserCodeError) and exc.trace:  # the user's own frames, under it
            echo(exc.trace, err=True)
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover - e.g. piped into `head`
        return EXIT_OK
    except (OSError, UnicodeError) as exc:  # a file the user named: unreadable, unwritable
        where = getattr(exc, "filename", None)
        reason = getattr(exc, "strerror", None) or str(exc)
        _error(command, f"{where}: {reason}" if where else reason)
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error(command, "interrupted; no file was written half-way", label="")
        return EXIT_USAGE
    return status


def _error(command: str, message: str, *, label: str = "error: ") -> None:
    """One line on stderr: the command, and the message with user text escaped."""
    error_line(command, message, label=label)


def _one_line(exc: InputError) -> str:
    """The first problem of an error, with a count of the others, on one line."""
    if isinstance(exc, UserCodeError):
        return exc.summary
    if len(exc.problems) <= 1:
        return str(exc).replace("\n", " ")
    more = len(exc.problems) - 1
    return f"{exc.problems[0]} (and {more} more problem{'s' if more > 1 else ''} like it)"
