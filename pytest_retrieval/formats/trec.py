"""TREC qrels and run files, read the way trec_eval reads them.

qrels: ``qid iter docid grade`` separated by white space. ``iter`` is ignored. A line whose first
field is ``#`` is a comment; a ``#`` anywhere else is part of the doc id. Grades are integers; a
negative grade (trec_eval's "in the pool, not judged") is kept as is and counts as non-relevant.

run: ``qid Q0 docid rank score tag [ignored...]``. The rank column is ignored: the order comes
from the scores, descending, ties broken by doc id descending compared as plain strings (so "9"
before "10"), exactly as trec_eval does. ``keep_file_order=True`` keeps the file's line order
instead. The same doc id twice for one query is an error naming both lines, as in trec_eval.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TextIO

from ..errors import InputError, Problem, RunFileError
from ..golden.model import MAX_GRADE, MAX_GRADE_FIX
from ..text import parse_int

_QRELS_FIELDS = "qid iter docid grade"
_RUN_FIELDS = "qid Q0 docid rank score tag"


def numbered_lines(
    path: str | os.PathLike[str], *, what: str = "run file"
) -> Generator[tuple[int, str], None, None]:
    """Yield (line number, line) for every non-blank line of a UTF-8 text file (a run, qrels or
    JSONL run file), read once, as it goes, by the one safe reader
    (:func:`pytest_retrieval.reading.read_lines`: regular files or a pipe meant as one, a
    byte-order mark dropped, a bad byte named by its line and column); RunFileError naming the
    file otherwise."""
    from ..reading import read_lines

    name = os.fspath(path)
    try:
        for number, line in read_lines(name, what=what):
            if line.strip():
                yield number, line
    except FileNotFoundError:
        raise RunFileError(Problem("file not found", fix="check the path", source=name)) from None
    except RunFileError:
        raise
    except InputError as exc:
        raise RunFileError(exc.problems) from None


def fields_of(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every non-comment line of ``lines`` (white space separated)."""
    for number, line in lines:
        fields = line.split()
        if fields[0] != "#":
            yield number, fields


def field_lines(
    path: str | os.PathLike[str], *, what: str = "run file"
) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, fields) for every non-blank, non-comment line of a text file."""
    return fields_of(numbered_lines(path, what=what))


def read_qrels_records(path: str | os.PathLike[str]) -> list[tuple[int, str, str, int]]:
    """Read a TREC qrels file into ``(line number, query id, doc id, grade)`` records.

    Every malformed line is reported in one :class:`~pytest_retrieval.errors.RunFileError`
    naming the file and line. A (query, doc) pair judged twice is an error as well, because
    trec_eval would silently keep one of the two grades.
    """
    name = os.fspath(path)
    records: list[tuple[int, str, str, int]] = []
    problems: list[Problem] = []
    first_line: dict[tuple[str, str], int] = {}
    for number, fields in field_lines(path, what="qrels file"):
        if len(fields) != 4:
            problems.append(
                Problem(
                    f"expected 4 fields ({_QRELS_FIELDS}), found {len(fields)}",
                    fix="separate the fields with spaces or tabs; comment lines start with '# '",
                    source=name,
                    line=number,
                )
            )
            continue
        qid, _iteration, doc, grade_text = fields
        grade = parse_int(grade_text, signed=True)
        digits = grade_text.lstrip("+-")
        too_long = grade is None and digits.isascii() and digits.isdigit()
        if too_long or (grade is not None and grade > MAX_GRADE):
            shown = f"{grade}" if grade is not None else f"of {len(grade_text)} digits"
            problems.append(
                Problem(
                    f"grade {shown} is above the maximum {MAX_GRADE}",
                    fix=MAX_GRADE_FIX,
                    source=name,
                    line=number,
                    query_id=qid,
                )
            )
            continue
        if grade is None:
            problems.append(
                Problem(
                    f"grade {grade_text!r} is not an integer",
                    fix="use an integer grade such as 0, 1 or 2",
                    source=name,
                    line=number,
                    query_id=qid,
                )
            )
            continue
        key = (qid, doc)
        if key in first_line:
            problems.append(
                Problem(
                    f"doc {doc!r} is judged twice (first on line {first_line[key]})",
                    fix="keep one judgment per query and document",
                    source=name,
                    line=number,
                    query_id=qid,
                )
            )
            continue
        first_line[key] = number
        records.append((number, qid, doc, grade))
    if problems:
        raise RunFileError(problems, title=f"{name}: cannot read qrels ({len(problems)} problems)")
    return records


def read_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """Read a TREC qrels file into ``{query id: {doc id: grade}}`` (file order kept). A file
    with no judgment (empty, blank or comments only) is a RunFileError: every query would be
    "without judgments" and no number would be computed."""
    qrels: dict[str, dict[str, int]] = {}
    for _number, qid, doc, grade in read_qrels_records(path):
        qrels.setdefault(qid, {})[doc] = grade
    if not qrels:
        raise RunFileError(
            Problem(
                "the qrels file has no judgments",
                fix=f"write one '{_QRELS_FIELDS}' line per judgment",
                source=os.fspath(path),
            )
        )
    return qrels


def read_forbidden(
    path: str | os.PathLike[str],
    qrels: dict[str, dict[str, int]] | None = None,
    *,
    warn: Callable[[Problem], None] | None = None,
) -> dict[str, frozenset[str]]:
    """Read a forbidden-documents file, ``qid docid`` per line (white space separated, ``#``
    comments as in qrels), into ``{query id: doc ids}``: the documents each query must not be
    shown, what a golden set's ``forbidden: [ids]`` lists (TREC qrels have no place for them).

    Every bad line is reported in one :class:`~pytest_retrieval.errors.RunFileError` naming the
    file and line: a line without exactly two fields, and (given the ``qrels``) a document the
    same query judges relevant (grade above 0): it cannot be both the answer and a leak.
    Given the ``qrels`` and ``warn``, each query with forbidden lines but no qrels line is
    passed to ``warn`` once (its first line, how many lines): the judged queries are the
    evaluated ones, so its lines count nowhere, as a run query without judgments is ignored."""
    name = os.fspath(path)
    found: dict[str, set[str]] = {}
    problems: list[Problem] = []
    unjudged: dict[str, list[int]] = {}
    for number, fields in field_lines(path, what="forbidden-documents file"):
        if len(fields) != 2:
            problems.append(
                Problem(
                    f"expected 2 fields (qid docid), found {len(fields)}",
                    fix="write one 'qid docid' line per forbidden document; comment lines "
                    "start with '# '",
                    source=name,
                    line=number,
                )
            )
            continue
        qid, doc = fields
        grade = (qrels or {}).get(qid, {}).get(doc, 0)
        if grade > 0:
            problems.append(
                Problem(
                    f"doc {doc!r} is forbidden, but the qrels judge it relevant (grade {grade})",
                    fix="a document the user must not see cannot be their answer: fix the "
                    "qrels or drop the line",
                    source=name,
                    line=number,
                    query_id=qid,
                )
            )
            continue
        if qrels is not None and qid not in qrels:
            unjudged.setdefault(qid, []).append(number)
        found.setdefault(qid, set()).add(doc)
    if problems:
        raise RunFileError(
            problems, title=f"{name}: cannot read forbidden documents ({len(problems)} problems)"
        )
    if warn is not None:
        for qid, numbers in unjudged.items():
            lines = f"{len(numbers)} forbidden lines are" if len(numbers) > 1 else "its line is"
            warn(
                Problem(
                    f"the qrels have no line for this query, so it is not evaluated and {lines} "
                    "ignored",
                    fix="add a qrels line for it, a grade-0 line makes it a scored no-answer "
                    "query; or drop the line",
                    source=name,
                    line=numbers[0],
                    query_id=qid,
                )
            )
    return {qid: frozenset(docs) for qid, docs in found.items()}


def read_run(
    path: str | os.PathLike[str], *, keep_file_order: bool = False
) -> dict[str, list[str]]:
    """Read a TREC run file into ``{query id: [doc id, ...]}`` ranked best first.

    Order: score descending, ties broken by doc id descending as plain strings (trec_eval's
    ``strcmp``), the rank column ignored; or the file's line order with ``keep_file_order``.
    Fields after the tag are ignored. A doc id listed twice for one query is an error naming
    both lines. A file with no ranked document (empty, blank or comments only) is a
    RunFileError, as a run file given to pytest is: it would score every query 0.
    """
    name = os.fspath(path)
    rows = scored_rows(numbered_lines(name), name, keep_file_order=keep_file_order)
    if not rows:
        raise RunFileError(
            Problem(
                "the run file has no ranked query (trec format)",
                fix=f"write one line per ranked document ({_RUN_FIELDS})",
                source=name,
            )
        )
    return {qid: [doc for _score, doc in docs] for qid, docs in rows.items()}


def scored_rows(
    lines: Iterable[tuple[int, str]], name: str, *, keep_file_order: bool = False
) -> dict[str, list[tuple[float, str]]]:
    """``{query id: [(score, doc id), ...]}`` of the run file ``name``'s ``lines`` (read once),
    ranked as :func:`read_run` ranks them; RunFileError listing every malformed line."""
    rows: dict[str, list[tuple[float, str]]] = {}
    first_line: dict[tuple[str, str], int] = {}
    problems: list[Problem] = []
    for number, fields in fields_of(lines):
        if len(fields) < 6:
            problems.append(
                Problem(
                    f"expected at least 6 fields ({_RUN_FIELDS}), found {len(fields)}",
                    fix="write one ranked document per line",
                    source=name,
                    line=number,
                )
            )
            continue
        qid, doc, score_text = fields[0], fields[2], fields[4]
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if math.isnan(score):
            problems.append(
                Problem(
                    f"score {score_text!r} is not a number",
                    fix="the fifth field must be the document's score",
                    source=name,
                    line=number,
                    query_id=qid,
                )
            )
            continue
        key = (qid, doc)
        if key in first_line:
            problems.append(
                Problem(
                    f"doc {doc!r} is listed twice for this query (lines {first_line[key]} "
                    f"and {number})",
                    fix="a run lists each document at most once per query",
                    source=name,
                    line=number,
                    query_id=qid,
                )
            )
            continue
        first_line[key] = number
        rows.setdefault(qid, []).append((score, doc))
    if problems:
        raise RunFileError(problems, title=f"{name}: cannot read run ({len(problems)} problems)")
    if not keep_file_order:
        for docs in rows.values():
            # Python compares str by code point, which for UTF-8 text orders like C's strcmp on
            # the encoded bytes, so "9" > "10" here just as in trec_eval.
            docs.sort(reverse=True)
    return rows


def write_run(
    run: dict[str, list[str]], path: str | os.PathLike[str], *, tag: str = "pytest-retrieval"
) -> None:
    """Write a run as a TREC run file (scores descending from the list length)."""
    from ..files import atomic_write

    def write(out: TextIO) -> None:
        for qid, docs in run.items():
            for rank, doc in enumerate(docs, start=1):
                out.write(f"{qid} Q0 {doc} {rank} {len(docs) - rank + 1} {tag}\n")

    atomic_write(path, write, what="TREC run")
