"""Argument types shared by the console script's commands."""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import InputError, Problem
from ..text import parse_int


def positive_int(text: str) -> int:
    """argparse type: a positive integer, or an error that quotes the value."""
    value = parse_int(text)  # ASCII digits only ("²", "1_0" and Arabic-Indic digits are refused)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def setting(name: str) -> Callable[[str], Any]:
    """argparse type of a flag that is the plugin setting ``name`` outside pytest (``--timeout``
    is ``retrieval_timeout``): the option table's parser, its range and its message."""
    from ..settings.resolve import option
    from ..settings.values import InvalidValue

    parse = option(name).parse

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except InvalidValue as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name  # argparse names the type in some messages
    return convert


def probability(text: str) -> float:
    """argparse type: a number strictly between 0 and 1 (a significance level), in ASCII."""
    try:
        value = float(text) if text.strip().isascii() else math.nan
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:  # NaN and inf fail this too
        raise argparse.ArgumentTypeError(f"{text!r} is not a number strictly between 0 and 1")
    return value


@contextlib.contextmanager
def tampered(path: str) -> Iterator[None]:
    """Turn what a hand-edited artifact breaks deep inside a renderer or a check (a number where
    a list belongs, a missing key) into a usage error naming the file.

    :func:`~pytest_retrieval.report.artifact.read_artifact` checks the artifact's structure and
    its snapshot in full; this is the boundary for the nested parts the renderers read, which
    only the plugin writes.
    """
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        if isinstance(exc, InputError):
            raise
        detail = f"{type(exc).__name__}: {exc}"
        raise InputError(
            Problem(
                f"the artifact does not match its schema ({detail[:200]})",
                fix="write it again with pytest --retrieval-json PATH; do not edit it by hand",
                source=path,
            )
        ) from None
