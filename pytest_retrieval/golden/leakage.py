"""The leakage guard: the checks that span the queries of a golden set.

Two queries may not share an id, and one query (its text compared by :func:`normalise_text`,
never as written, together with its context) may not be in two splits: a query that is both
tuned on and held out leaks the held-out split. The context counts because it is part of what
the retriever is asked (the cache, run files and fingerprint key a query by it): "How long is
the refund window?" for tenant acme and for tenant globex are two queries, which may sit in
two splits; the same text with the same context (or both without one) may not.
:class:`~pytest_retrieval.golden.model.GoldenSet` runs these checks when it is built, and every
loader runs them over the queries of a file (valid or not), with their lines.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Sequence

from ..errors import Problem
from ..text import leakage_key

# Only category P* (not symbols such as '+' or '$'), so the ASCII fast path agrees with the
# Unicode path below.
_ASCII_PUNCTUATION = str.maketrans(
    "", "", "".join(c for c in string.punctuation if unicodedata.category(c).startswith("P"))
)


def normalise_text(text: str) -> str:
    """The form of a query text used to detect leakage between splits (never the fingerprint,
    which hashes the text as written).

    NFKC-normalised and case-folded (:func:`~pytest_retrieval.text.leakage_key`: "café" in NFC
    and in NFD, "ＣＡＦÉ" and "cafe\u0301" are one text), punctuation (Unicode category P*)
    deleted, runs of white space collapsed to one space and trimmed:
    ``"What's  the Refund-window?"`` becomes ``"whats the refundwindow"``.
    """
    if text.isascii():
        folded = text.translate(_ASCII_PUNCTUATION).lower()
    else:
        folded = "".join(
            ch for ch in leakage_key(text) if not unicodedata.category(ch).startswith("P")
        )
    return " ".join(folded.split())


def _where(index: int, lines: Sequence[int | None] | None) -> str:
    line = lines[index] if lines is not None else None
    return f"on line {line}" if line is not None else f"by query #{index + 1}"


#: What the cross-query checks need of a query: id, text, split (None where invalid) and its
#: context as canonical JSON (:func:`~pytest_retrieval.golden.context.context_json`; None: no
#: context, or an invalid one).
Entry = tuple[str, str | None, str | None, str | None]


def set_problems(
    entries: Sequence[Entry],
    *,
    source: str | None = None,
    lines: Sequence[int | None] | None = None,
) -> list[Problem]:
    """Problems that span queries: duplicate ids and the same query in two splits (leakage).

    ``entries[i]`` is ``(id, text, split, context_json)`` of the i-th query of the file,
    ``lines[i]`` its line where the format has lines. Two entries leak when their normalised
    texts and their contexts are equal and their splits differ. A loader also passes the
    queries that failed other checks (with None for their invalid parts), so a duplicate id is
    reported even then.
    """
    problems: list[Problem] = []
    first_of_id: dict[str, int] = {}
    first_of_text: dict[tuple[str, str | None], dict[str, int]] = {}
    for index, (query_id, text, split, context) in enumerate(entries):
        line = lines[index] if lines is not None else None
        if query_id in first_of_id:
            problems.append(
                Problem(
                    f"duplicate query id: already used {_where(first_of_id[query_id], lines)}",
                    "give every query a unique id, or merge the two entries",
                    source=source,
                    line=line,
                    query_id=query_id,
                    field="id",
                )
            )
            continue
        first_of_id[query_id] = index
        if text is None or split is None:
            continue
        splits = first_of_text.setdefault((normalise_text(text), context), {})
        if splits and split not in splits:
            other_split, other = next(iter(splits.items()))
            # The context is never shown: either query may be held out.
            same = "the same text and context" if context is not None else "the same text"
            problems.append(
                Problem(
                    f"leakage: {same} as query {entries[other][0]!r} "
                    f"({_where(other, lines)}) is in split {split!r} and in split "
                    f"{other_split!r}",
                    "a query (its text and context) must be in one split only: delete one "
                    "of the two queries or move both into the same split",
                    source=source,
                    line=line,
                    query_id=query_id,
                    field="text",
                )
            )
        splits.setdefault(split, index)
    return problems
