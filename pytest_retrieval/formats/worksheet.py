"""The labelling worksheet: unjudged documents to grade, written by ``golden pool`` and read by
``golden merge``.

One row per (query, document) to judge. Columns, in this order: ``query_id``, ``doc_id``,
``grade`` (empty: fill it in; an integer from 0, not relevant, up to the golden set's top
grade), ``labeled_by`` (empty, or ``machine:module:function`` for a machine pre-label), then
context to judge by: ``query`` (its text), ``title`` and ``text`` of the document (when a corpus
was given), ``runs`` (how many runs surfaced it), ``best_rank`` and ``surfaced_by`` (each run
and the rank it gave, e.g. ``current:3 baseline:5``). Only the first three are needed to merge.

Formats by extension: ``.csv`` (default, opens in a spreadsheet), ``.jsonl`` (one object per
line) and ``.yaml``/``.yml`` (a list of rows).

**Formula injection.** A spreadsheet runs a CSV cell that starts with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return as a formula (``=HYPERLINK(...)``, ``=cmd|...``, ``@SUM(...)``), and
query texts, corpus texts and returned ids are not ours. In a CSV worksheet every cell that
starts with one of those (or a line feed, or the full-width forms U+FF1D, U+FF0B, U+FF0D,
U+FF20) *or with a single quote* is written with a ``'`` in front, which spreadsheets show as
text; reading a CSV worksheet removes exactly one leading ``'`` from every cell that has one.
The rule is unambiguous because a cell that really starts with ``'`` is written with a second
one: every value reads back exactly as it was (:func:`neutralise_cell`, :func:`restore_cell`).
JSONL and YAML worksheets are not opened by spreadsheets and hold the values as they are.

**Ids are kept exactly.** ``query_id`` and ``doc_id`` are read as written, white space
included (``"z "`` is not ``"z"``: a golden set may hold both); an id that is empty or only
white space is a problem of its row. A corpus for the context columns is a BEIR
``corpus.jsonl`` (``_id``, ``title``, ``text``), a BEIR folder, or a text file of
``id<TAB>text`` lines.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, Problem
from ..golden.model import MAX_GRADE
from ..text import parse_int

#: Every column, in the order the worksheet writes them.
COLUMNS = (
    "query_id",
    "doc_id",
    "grade",
    "labeled_by",
    "query",
    "title",
    "text",
    "runs",
    "best_rank",
    "surfaced_by",
)
#: The columns ``golden merge`` needs.
REQUIRED = ("query_id", "doc_id", "grade")

_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".yaml": "yaml", ".yml": "yaml"}


@dataclass(frozen=True, slots=True)
class WorksheetRow:
    """One document to judge for one query (``grade`` None: not graded yet)."""

    query_id: str
    doc_id: str
    grade: int | None = None
    labeled_by: str | None = None
    query: str | None = None
    title: str | None = None
    text: str | None = None
    #: (run name, rank) of every run that surfaced the document, best rank first.
    surfaced_by: tuple[tuple[str, int], ...] = ()
    #: Where the row was read from (1-based line or record number), for error messages.
    line: int | None = None

    @property
    def runs(self) -> int:
        """How many runs surfaced the document."""
        return len(self.surfaced_by)

    @property
    def best_rank(self) -> int | None:
        """The best rank any run gave it."""
        return min((rank for _name, rank in self.surfaced_by), default=None)

    def to_dict(self) -> dict[str, Any]:
        """The row as plain values, in :data:`COLUMNS` order."""
        return {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "grade": self.grade,
            "labeled_by": self.labeled_by,
            "query": self.query,
            "title": self.title,
            "text": self.text,
            "runs": self.runs,
            "best_rank": self.best_rank,
            "surfaced_by": " ".join(f"{name}:{rank}" for name, rank in self.surfaced_by),
        }


def worksheet_format(path: str | os.PathLike[str]) -> str:
    """``csv``, ``jsonl`` or ``yaml`` from the file name (CSV unless it says otherwise)."""
    return _FORMATS.get(os.path.splitext(os.fspath(path))[1].lower(), "csv")


#: What a spreadsheet may read as the start of a formula (OWASP's list: ``= + - @``, tab, CR; the
#: full-width forms; a line feed), and the quote that marks a neutralised cell (see the module
#: docstring).
FORMULA_START = frozenset("=+-@\t\r\n\uff1d\uff0b\uff0d\uff20")
_QUOTE = "'"


def neutralise_cell(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs as a formula: a ``'`` in front when it starts
    with a formula character or with ``'`` itself (so :func:`restore_cell` is exact)."""
    first = text[:1]
    return _QUOTE + text if first and (first in FORMULA_START or first == _QUOTE) else text


def restore_cell(text: str) -> str:
    """The value of a CSV cell :func:`neutralise_cell` wrote: one leading ``'`` removed."""
    return text[1:] if text.startswith(_QUOTE) else text


def render_worksheet(rows: Iterable[WorksheetRow], fmt: str) -> str:
    """The text of a worksheet in ``fmt`` (``csv``, ``jsonl`` or ``yaml``); CSV cells are
    neutralised against formula injection (:func:`neutralise_cell`)."""
    records = [row.to_dict() for row in rows]
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(records, sort_keys=False, allow_unicode=True, width=1 << 16)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow(
            {k: "" if v is None else neutralise_cell(str(v)) for k, v in record.items()}
        )
    return out.getvalue()


def write_worksheet(rows: Iterable[WorksheetRow], path: str | os.PathLike[str]) -> None:
    """Write a worksheet, in the format its name asks for, atomically."""
    from ..files import atomic_write_text

    atomic_write_text(path, render_worksheet(rows, worksheet_format(path)), what="worksheet")


def _cell(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _id(value: object, what: str) -> tuple[str | None, tuple[str, str] | None]:
    """``(id, None)``: an id cell exactly as written (no white space removed; None when empty or
    blank); ``(None, (message, fix))``: the golden set's words for a value that is no id (a
    YAML boolean, a float, a list)."""
    from .golden_values import as_id, id_problem

    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    problem = id_problem(value, what)
    return (None, problem) if problem is not None else (as_id(value), None)


def _grade(value: object) -> int | str | None:
    """The grade of a cell: None when blank, an int, or the problem (a string)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return f"grade {value!r} is not an integer"
    if isinstance(value, int):
        grade: int | None = value
    elif isinstance(value, float) and value.is_integer():
        grade = int(value)
    else:
        grade = parse_int(str(value).strip())
    if grade is None:
        return f"grade {str(value)!r} is not an integer"
    if not 0 <= grade <= MAX_GRADE:
        return f"grade {grade} is outside 0..{MAX_GRADE}"
    return grade


def _records(path: str, fmt: str) -> list[tuple[int, object]]:
    """(line or record number, raw row) of every row of a worksheet file, read through the one
    safe reader and the guarded JSON and YAML decoders."""
    from ..reading import load_json, load_yaml, read_text_file, split_lines

    text = read_text_file(path, what="worksheet")
    fix = f"write the worksheet as {fmt.upper()}, as `pytest-retrieval golden pool` does"
    if fmt == "csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        try:
            fieldnames = reader.fieldnames or ()
            twice = sorted({c for c in fieldnames if c and list(fieldnames).count(c) > 1})
            if twice:  # csv.DictReader keeps the last of the two cells silently
                raise InputError(
                    Problem(
                        f"the worksheet's column {twice[0]!r} appears twice in the header",
                        fix="keep one",
                        source=path,
                        line=1,
                    )
                )
            missing = [c for c in REQUIRED if c not in fieldnames]
            if missing:
                raise InputError(
                    Problem(
                        f"the worksheet has no {', '.join(missing)} column(s) (header: "
                        f"{', '.join(fieldnames) or 'none'})",
                        fix="keep the header row that `golden pool` wrote",
                        source=path,
                        line=1,
                    )
                )
            return [
                (reader.line_num, {k: v if v is None else _restored(v) for k, v in row.items()})
                for row in reader
            ]
        except csv.Error as exc:  # a cell over the csv module's field limit, say
            raise InputError(
                Problem(
                    f"the worksheet is not valid CSV ({exc})",
                    fix=fix,
                    source=path,
                    line=reader.reader.line_num,  # the line being read (DictReader's lags)
                )
            ) from None
    if fmt == "jsonl":
        rows: list[tuple[int, object]] = []
        for number, line in split_lines(text):
            if not line.strip():
                continue
            expected = "one JSON object per line with query_id, doc_id and grade"
            record = load_json(line, source=path, what="worksheet", expected=expected, line=number)
            rows.append((number, record))
        return rows
    data = load_yaml(text, source=path, what="worksheet", expected="a list of rows")
    if not isinstance(data, list):
        raise InputError(Problem("a YAML worksheet must be a list of rows", fix=fix, source=path))
    return list(enumerate(data, start=1))


def _restored(value: object) -> object:
    # csv gives a str per cell, and a list for the cells of a row longer than the header.
    return restore_cell(value) if isinstance(value, str) else value


def read_worksheet(path: str | os.PathLike[str]) -> tuple[list[WorksheetRow], list[Problem]]:
    """The rows of a worksheet and every problem in them (bad or missing ids, bad grades).

    Rows with a problem are left out of the rows; the caller decides whether problems stop it
    (``golden merge`` refuses the whole worksheet). A file that cannot be read at all raises
    :class:`~pytest_retrieval.errors.InputError`.
    """
    name = os.fspath(path)
    fmt = worksheet_format(name)
    rows: list[WorksheetRow] = []
    problems: list[Problem] = []
    for number, raw in _records(name, fmt):
        if not isinstance(raw, Mapping):
            problems.append(
                Problem(
                    "a row must be an object with query_id, doc_id and grade",
                    source=name,
                    line=number,
                )
            )
            continue
        (qid, bad_qid), (doc, bad_doc) = (
            _id(raw.get("query_id"), "query_id"),
            _id(raw.get("doc_id"), "doc_id"),
        )
        bad = bad_qid or bad_doc
        if bad is not None:
            problems.append(Problem(bad[0], fix=bad[1], source=name, line=number))
            continue
        if qid is None or doc is None:
            problems.append(
                Problem(
                    "the row has no query_id or no doc_id",
                    fix="keep the two id columns `golden pool` wrote",
                    source=name,
                    line=number,
                )
            )
            continue
        grade = _grade(raw.get("grade"))
        if isinstance(grade, str):
            problems.append(
                Problem(
                    grade,
                    fix=f"write an integer from 0 (not relevant) to {MAX_GRADE}, or leave it blank",
                    source=name,
                    line=number,
                    query_id=qid,
                    field="grade",
                )
            )
            continue
        rows.append(
            WorksheetRow(
                query_id=qid,
                doc_id=doc,
                grade=grade,
                labeled_by=_cell(raw.get("labeled_by")),
                query=_cell(raw.get("query")),
                title=_cell(raw.get("title")),
                text=_cell(raw.get("text")),
                line=number,
            )
        )
    return rows, problems


def corpus_columns(path: str | os.PathLike[str]) -> dict[str, tuple[str | None, str | None]]:
    """``{doc id: (title, text)}`` of a corpus file, as the worksheet's context columns show
    them (stripped; None when empty), read by the one corpus reader
    (:func:`~pytest_retrieval.formats.corpus.read_corpus`): an unreadable file, a line that is
    not a document and a corpus with no document raise its error naming the file (and the
    line): a worksheet silently without texts would be labelled blind.
    """
    from .corpus import read_corpus

    return {
        doc: (_cell(found.title), _cell(found.text)) for doc, found in read_corpus(path).items()
    }


def surfaced(rankings: Sequence[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """(run, rank) pairs sorted best rank first, then by run name."""
    return tuple(sorted(rankings, key=lambda pair: (pair[1], pair[0])))
