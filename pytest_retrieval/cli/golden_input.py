"""Reading the inputs of a ``pytest-retrieval golden`` subcommand, and its exit statuses.

Every subcommand checks that its input files exist first (a missing one is one line and a usage
error, 2), then loads its golden set: an invalid one prints every problem and exits 1.
"""

from __future__ import annotations

import argparse

from ..errors import GoldenSetError
from ..formats.golden_io import load_golden
from ..golden.model import DEFAULT_HELDOUT_SPLIT, GoldenSet
from ..reading import exists
from ..text import for_terminal
from .output import echo

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def missing_input(args: argparse.Namespace, *paths: tuple[str, str | None]) -> bool:
    """Print one line for the first input that does not exist; True if there was one."""
    for what, path in paths:
        if path is not None and not exists(path):
            echo(
                f"pytest-retrieval golden {args.golden_command}: error: {what} not found: "
                f"{for_terminal(path)}",
                err=True,
            )
            return True
    return False


def load_input(args: argparse.Namespace, path: str, corpus: str | None = None) -> GoldenSet | int:
    """The golden set, or the exit status after printing why it could not be loaded."""
    if missing_input(args, ("golden set", path), ("corpus", corpus), ("topics file", args.topics)):
        return EXIT_USAGE
    try:
        return load_golden(
            path,
            format=args.format,
            corpus=corpus,
            topics=args.topics,
            heldout_split=getattr(args, "heldout_split", DEFAULT_HELDOUT_SPLIT),
        )
    except GoldenSetError as exc:
        echo(exc, err=True)
        return EXIT_FAILED
