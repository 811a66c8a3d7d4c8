"""Text where identity or safety matters: the one integer parser, the leakage key, and the
escaping of user text on its way to a terminal, a CI log or Markdown.

* :func:`parse_int` accepts ASCII digits only. ``str.isdigit()`` says yes to ``"²"`` and
  ``int()`` to ``"١٢"``, ``"1_000"`` and ``" 7 "``; a setting, a cutoff or a grade is none of
  those, and 5,000 digits would hit Python's integer-string limit.
* :func:`leakage_key` is the form two query texts share when a person would call them the same
  question (NFKC + case folding): NFC and NFD spellings of "café" are one text.
* :func:`for_terminal` escapes control characters in user text (an id, a doc id, an exception
  message), so user data can never start a line of output, and :func:`guard_lines` makes sure no
  line we print starts with ``::`` (a GitHub Actions workflow command) or ``##[``.
"""

from __future__ import annotations

import re
import unicodedata

#: The most digits :func:`parse_int` reads: far above any cutoff, grade or seed, far below
#: Python's integer-string limit (4,300 digits).
MAX_INT_DIGITS = 18

_ASCII_INT = re.compile(r"[+-]?[0-9]+\Z", re.ASCII)


def parse_int(text: str, *, signed: bool = False) -> int | None:
    """The integer ``text`` spells in ASCII digits (surrounding white space allowed), else None.

    A sign is accepted only with ``signed=True``. More than :data:`MAX_INT_DIGITS` digits is
    None too (no setting or grade is that large), so the caller's "not an integer" or range
    message applies.
    """
    stripped = text.strip()
    if not _ASCII_INT.match(stripped):
        return None
    if stripped[0] in "+-" and not signed:
        return None
    if len(stripped.lstrip("+-")) > MAX_INT_DIGITS:
        return None
    return int(stripped)


def leakage_key(text: str) -> str:
    """NFKC of the case-folded NFKC form (Unicode's NFKC_Casefold, without its removal of
    default-ignorable code points): the form in which two texts are the same question."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def has_surrogate(text: str) -> bool:
    """True if ``text`` holds a lone surrogate (U+D800..U+DFFF), which UTF-8 cannot encode."""
    return not text.isascii() and any("\ud800" <= ch <= "\udfff" for ch in text)


def first_surrogate(text: str) -> str | None:
    """The first lone surrogate of ``text`` as ``U+XXXX``, or None."""
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            return f"U+{ord(ch):04X}"
    return None


# Bidirectional overrides and isolates reorder what a reader sees ("Trojan source").
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _unsafe(ch: str) -> bool:
    return ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs")


def for_terminal(text: object) -> str:
    """``text`` with every control character, line or paragraph separator, bidi control and lone
    surrogate escaped as Python does (``\\n``, ``\\x1b``, ``\\u2028``): one line, shown as is
    otherwise. For user-controlled text printed to a terminal or a log."""
    value = str(text)
    if value.isprintable() and value.isascii():
        return value
    out = []
    for ch in value:
        if ch == "\t":
            out.append(ch)
        elif _unsafe(ch):
            out.append(repr(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


_COMMAND_START = re.compile(r"\s*(::|##\[)")


def guard_line(line: str) -> str:
    """``line``, with a leading ``::`` or ``##[`` (after white space) escaped: GitHub Actions
    reads such a line as a workflow command (``::add-mask::``, ``::error ...``). Our own lines
    never start so, so a line that does carries user data."""
    match = _COMMAND_START.match(line)
    if match is None:
        return line
    start = match.start(1)
    return line[:start] + "\\x" + f"{ord(line[start]):02x}" + line[start + 1 :]


def guard_lines(text: str) -> str:
    """:func:`guard_line` on every line of ``text`` (a message of several lines)."""
    if "::" not in text and "##[" not in text:
        return text
    return "\n".join(guard_line(line) for line in text.split("\n"))
