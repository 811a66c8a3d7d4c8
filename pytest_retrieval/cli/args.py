"""Argument types shared by the console script's commands."""

from __future__ import annotations

import argparse
import math

from ..text import parse_int


def positive_int(text: str) -> int:
    """argparse type: a positive integer, or an error that quotes the value."""
    value = parse_int(text)  # ASCII digits only ("²", "1_0" and Arabic-Indic digits are refused)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def probability(text: str) -> float:
    """argparse type: a number strictly between 0 and 1 (a significance level), in ASCII."""
    try:
        value = float(text) if text.strip().isascii() else math.nan
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:  # NaN and inf fail this too
        raise argparse.ArgumentTypeError(f"{text!r} is not a number strictly between 0 and 1")
    return value
