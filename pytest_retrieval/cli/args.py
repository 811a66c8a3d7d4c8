"""Argument types shared by the console script's commands."""

from __future__ import annotations

import argparse

from ..text import parse_int


def positive_int(text: str) -> int:
    """argparse type: a positive integer, or an error that quotes the value."""
    value = parse_int(text)  # ASCII digits only ("²", "1_0" and Arabic-Indic digits are refused)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value
