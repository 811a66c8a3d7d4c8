"""The ``pytest-retrieval`` console script: the same pipeline as the plugin, without pytest.

Exit status: 0 success, 1 a check failed (validation, gate), 2 usage error (bad option, missing
or malformed file, unknown metric), each error printed as a clear message on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import InputError
from .args import positive_int as positive_int  # re-exported: older imports

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    from . import cache as cache_command
    from . import evaluate as evaluate_command
    from . import golden as golden_command
    from . import offline as offline_command
    from . import report as report_command

    parser = argparse.ArgumentParser(
        prog="pytest-retrieval",
        description="Score, validate and gate retrieval runs (the pytest plugin's CLI twin).",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    evaluate_command.register(subparsers)
    golden_command.register(subparsers)
    offline_command.register(subparsers)
    report_command.register(subparsers)
    cache_command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from ..version import __version__

        print(f"pytest-retrieval {__version__}")
        return EXIT_OK
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        status: int = func(args)
    except InputError as exc:
        print(f"pytest-retrieval {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover - e.g. piped into `head`
        return EXIT_OK
    return status


def _one_line(exc: InputError) -> str:
    """The first problem of an error, with a count of the others, on one line."""
    if len(exc.problems) <= 1:
        return str(exc).replace("\n", " ")
    more = len(exc.problems) - 1
    return f"{exc.problems[0]} (and {more} more problem{'s' if more > 1 else ''} like it)"
