"""Text where identity or safety matters: the one integer parser, the leakage key, the one
plural helper, and the escaping of user text on its way to a terminal, a CI log or Markdown.

* :func:`parse_int` accepts ASCII digits only. ``str.isdigit()`` says yes to ``"²"`` and
  ``int()`` to ``"١٢"``, ``"1_000"`` and ``" 7 "``; a setting, a cutoff or a grade is none of
  those, and 5,000 digits would hit Python's integer-string limit.
* :func:`plural` is how a message counts things (``1 query``, ``2 queries``): never
  ``query(ies)``.
* :func:`leakage_key` is the form two query texts share when a person would call them the same
  question (NFKC + case folding): NFC and NFD spellings of "café" are one text.
* :func:`for_terminal` escapes control characters in user text (an id, a doc id, an exception
  message), so user data can never start a line of output, and :func:`guard_lines` makes sure no
  line we print starts with ``::`` (a GitHub Actions workflow command) or ``##[``.
* :func:`terminal_text` is both, line by line: what every line the package prints goes through
  on its way out (the console script's one print helper, ``cli/output.py``, and the plugin's one
  line writer), so a piece of user text that was not escaped where the message was built is
  escaped there.

What is escaped: the C0 and C1 control characters (NUL, BEL, ESC, CSI, ...; a tab is kept), the
line and paragraph separators, lone surrogates and Unicode's bidirectional controls (the
``Bidi_Control`` property: U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), each as
Python writes it (``\\x1b``, ``\\u202e``). Escaping is idempotent: escaped text has none of
them left, so escaping a message again changes nothing.
"""

from __future__ import annotations

import re
import unicodedata

#: The most digits :func:`parse_int` reads: far above any cutoff, grade or seed, far below
#: Python's integer-string limit (4,300 digits).
MAX_INT_DIGITS = 18

_ASCII_INT = re.compile(r"[+-]?[0-9]+\Z", re.ASCII)


def plural(count: int, one: str, many: str | None = None) -> str:
    """``count`` and the noun that fits it: ``1 query``, ``2 queries`` (``many`` defaults to
    ``one`` + ``s``)."""
    return f"{count} {one if count == 1 else many or one + 's'}"


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


def surrogate_problem(value: str, what: str) -> str | None:
    """Why ``value`` cannot be stored (a lone surrogate, e.g. from a JSON ``"\\ud800"``
    escape, is not a character and cannot be written as UTF-8), or None."""
    found = first_surrogate(value) if has_surrogate(value) else None
    if found is None:
        return None
    return f"{what} contains a lone surrogate ({found}), which is not a character"


#: Fix for :func:`surrogate_problem`.
SURROGATE_FIX = "write the character itself, or a pair of \\u escapes for one beyond U+FFFF"

# Bidirectional overrides, embeddings, isolates and marks reorder or hide what a reader sees
# ("Trojan source"): Unicode's Bidi_Control property, in full.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


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


def terminal_text(text: object) -> str:
    """``text`` made safe to print, line by line: within each line (split at ``\\n`` only) every
    character :func:`for_terminal` escapes is escaped (a ``\\r`` too: it would overwrite the
    line), and no line starts a workflow command (:func:`guard_line`). Our own messages are
    unchanged by it; it is the last step before a terminal or a CI log."""
    value = str(text)
    if value.isascii() and value.isprintable():
        return guard_line(value)
    return "\n".join(guard_line(for_terminal(line)) for line in value.split("\n"))


def json_for_terminal(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with every character
    :func:`for_terminal` escapes written as a JSON ``\\uXXXX`` escape instead: the same
    document, safe to print (such characters can only sit inside JSON strings)."""
    if text.isascii() and "\x7f" not in text:
        return text  # json escapes every ASCII control character already
    # A raw line feed is the indentation's (inside a string json wrote \\n): it stays.
    return "".join(f"\\u{ord(ch):04x}" if ch != "\n" and _unsafe(ch) else ch for ch in text)
