"""The values of a golden-set file, one at a time: ids, grades and field names.

Every reader (the canonical schema's, BEIR's) asks these whether a decoded value is a usable
query or doc id (:func:`id_problem`, then :func:`as_id`) or grade (:func:`grade_problem`); each
answer is a message and a fix, with the value shown as the user wrote it (:func:`describe`,
:class:`SourceInt`). :func:`suggest_field` names the field an unknown key was meant to be.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Mapping

from ..golden.model import MAX_GRADE, MAX_GRADE_FIX, describe_grade
from ..text import MAX_INT_DIGITS, SURROGATE_FIX, surrogate_problem

# Names people reach for that difflib would not match to ours.
_ALIASES = {
    "judgments": "relevant",
    "judgements": "relevant",
    "qrels": "relevant",
    "labels": "relevant",
    "relevance": "relevant",
    "docs": "relevant",
    "documents": "relevant",
    "relevant_docs": "relevant",
    "relevant_ids": "relevant",
    "query": "text",
    "question": "text",
    "qid": "id",
    "query_id": "id",
    "_id": "id",
    "slice": "slices",
    "tags": "slices",
    "tag": "slices",
}


def suggest_field(key: object, known: tuple[str, ...]) -> str:
    """The fix for an unknown field: the nearest known name, or the list of known names."""
    text = str(key)
    alias = _ALIASES.get(text.lower())
    if alias in known:
        return f"did you mean {alias!r}?"
    close = difflib.get_close_matches(text.lower(), known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"known fields are {', '.join(known)}"


class SourceInt(int):
    """An int read from YAML that remembers how it was written (``007`` stays ``"007"``).

    YAML 1.1 reads ``007`` as octal 7 and ``1_000`` as 1000; as an id the user meant the text.
    """

    text: str


def describe(value: object) -> str:
    """A decoded value for a message: as written (``007``), or what kind of value it is."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {value!r}"
    if isinstance(value, SourceInt):
        return value.text
    if isinstance(value, (Mapping, list)):
        return f"a {'mapping' if isinstance(value, Mapping) else 'list'}"
    return repr(value)


def id_problem(value: object, what: str) -> tuple[str, str] | None:
    """Why ``value`` is not a usable id, and the fix; None if it is one."""
    if isinstance(value, str):
        if value.strip():
            bad = surrogate_problem(value, what)
            return None if bad is None else (bad, SURROGATE_FIX)
        return f"{what} is blank", f"give the {what} a non-blank value"
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, bool):
        return (
            f"{what} must be a string, got {describe(value)}",
            "quote it: YAML reads unquoted yes/no/on/off/true/false as booleans",
        )
    if isinstance(value, (float, datetime.date)):
        return f"{what} must be a string, got {describe(value)}", "quote it"
    return f"{what} must be a string, got {describe(value)}", f"write the {what} as a string"


def as_id(value: object) -> str:
    """The string form of an id already checked by :func:`id_problem`."""
    if isinstance(value, SourceInt):
        return value.text
    return str(value)


def grade_problem(value: object) -> tuple[str, str] | None:
    """Why ``value`` is not a grade, and the fix; None if it is one."""
    if isinstance(value, bool):
        return (
            f"grade must be an integer, got {describe(value)}",
            "write 1 or a higher grade for relevant, 0 for judged not relevant",
        )
    if isinstance(value, int):
        if value > MAX_GRADE:
            return f"grade {describe_grade(value)} is above the maximum {MAX_GRADE}", MAX_GRADE_FIX
        if value >= 0:
            return None
        return (
            f"grade must be >= 0, got {value}",
            "use 0 for judged not relevant, and leave unjudged documents out",
        )
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        if len(value.strip()) > MAX_INT_DIGITS:
            shown = f"a number of {len(value.strip())} digits"
            return f"grade {shown} is above the maximum {MAX_GRADE}", MAX_GRADE_FIX
        return f"grade must be an integer, got the string {value!r}", "write it without quotes"
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return f"grade must be an integer, got {value!r}", f"write {int(value)}"
    return (
        f"grade must be an integer, got {describe(value)}",
        "use a whole number: 0 = judged not relevant, 1 or more = relevant",
    )
