"""Golden sets as CSV (``.csv``, comma) or TSV (``.tsv``, tab), in one of two shapes.

The header row decides the shape:

* **one row per query**: ``id,text,relevant[,slices][,split][,context]``. ``relevant`` lists
  doc ids separated by ``;``; ``doc=2`` gives a grade (default 1); an empty cell is a no-answer
  query. ``slices`` is ``;``-separated too; an empty ``split`` means ``tune``.
* **one row per judgment**: ``query_id,doc_id[,grade],text[,slices][,split][,context]``. Rows of
  one query need not be adjacent; ``text``, ``slices``, ``split`` and ``context`` may be given on
  any of its rows and must agree where given twice. An empty ``grade`` cell is an error; without
  a ``grade`` column every grade is 1. A row with an empty ``doc_id`` (and grade) marks a
  no-answer query.

``forbidden`` lists the query's forbidden doc ids as ``slices`` lists names (separated by
``;`` or ``|``; on any one row of the per-judgment form). ``context`` is one cell holding a
JSON object (``{"tenant": "acme", "groups": ["support"]}``,
quoted as CSV quotes a cell with commas); an empty cell is no context. One JSON cell rather than
a column per key: a context holds lists, mappings, numbers and booleans, which JSON writes
exactly and a column per key could not (is ``42`` a number or an id?). A ``context.tenant``
column is refused with that fix.

Cells are stripped of surrounding white space. An Excel BOM is fine.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from ..errors import InputError
from ..reading import load_json
from ..text import parse_int
from .golden_parsed import Marks, Parsed, read_text
from .golden_schema import Defaults, SchemaReader
from .golden_values import suggest_field

#: Columns of the one-row-per-query shape.
PER_QUERY_COLUMNS = ("id", "text", "relevant", "slices", "split", "context", "forbidden")
#: Columns of the one-row-per-judgment shape.
PER_JUDGMENT_COLUMNS = (
    "query_id",
    "doc_id",
    "grade",
    "text",
    "slices",
    "split",
    "context",
    "forbidden",
)

_SHAPES = (
    "one row per query: id,text,relevant[,slices][,split][,context][,forbidden]; or one row "
    "per judgment: query_id,doc_id[,grade],text[,slices][,split][,context][,forbidden]"
)

#: Fix for a context cell that is not a JSON object, or a column per context key.
_CONTEXT_CELL_FIX = (
    "write the whole context as one JSON object in the context column, e.g. "
    '"{""tenant"": ""acme"", ""groups"": [""support""]}" (CSV doubles the quotes inside a '
    "quoted cell); leave the cell empty for no context"
)


def _grade(text: str) -> int | str:
    # Anything that is not an integer stays text, so the schema check reports it verbatim.
    value = parse_int(text, signed=True)
    return text if value is None else value


def _names(cell: str) -> list[str]:
    return [part.strip() for part in cell.split(";") if part.strip()]


def read_csv(path: str) -> Parsed:
    """Read a CSV/TSV golden set in either shape (see the module docs)."""
    parsed = Parsed(path)
    text = read_text(parsed)
    if text is None:
        return parsed
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    rows: list[tuple[int, list[str]]] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append((reader.line_num, [cell.strip() for cell in row]))
    except csv.Error as exc:
        parsed.fail(
            f"CSV syntax error: {exc}",
            "quote cells that contain the delimiter, quotes or line breaks",
            line=reader.line_num,
        )
        return parsed
    if not rows:
        parsed.fail("the golden set is empty: the file has no header and no rows", _SHAPES)
        return parsed
    header_line, header = rows[0]
    columns: tuple[str, ...]
    if "relevant" in header:
        columns = PER_QUERY_COLUMNS
        required: tuple[str, ...] = ("id", "text", "relevant")
    elif "doc_id" in header:
        columns = PER_JUDGMENT_COLUMNS
        required = ("query_id", "doc_id", "text")
    else:
        parsed.fail(
            f"cannot tell the CSV shape from the header {','.join(header)!r}",
            f"the header must name the columns, {_SHAPES}",
            line=header_line,
        )
        return parsed
    ok = True
    for index, name in enumerate(header):
        if name not in columns:
            parsed.fail(
                f"unknown column {name!r}",
                _CONTEXT_CELL_FIX if name.startswith("context.") else suggest_field(name, columns),
                line=header_line,
                field=name,
            )
            ok = False
        elif name in header[:index]:
            parsed.fail(f"column {name!r} appears twice", "keep one", line=header_line, field=name)
            ok = False
    for name in required:
        if name not in header:
            parsed.fail(
                f"missing column {name!r}", f"add it to the header ({_SHAPES})", line=header_line
            )
            ok = False
    if not ok:
        return parsed
    body = [
        (line, dict(zip(header, cells, strict=False)))
        for line, cells in rows[1:]
        if _row_width_ok(parsed, line, cells, len(header))
    ]
    if not body and not parsed.problems:
        parsed.fail("the golden set is empty: the file has a header but no rows", _SHAPES)
        return parsed
    if columns is PER_QUERY_COLUMNS:
        _per_query(parsed, body)
    else:
        _per_judgment(parsed, body, has_grade="grade" in header)
    return parsed


def _row_width_ok(parsed: Parsed, line: int, cells: list[str], width: int) -> bool:
    if len(cells) == width:
        return True
    parsed.fail(
        f"expected {width} cells like the header, found {len(cells)}",
        "quote cells that contain the delimiter",
        line=line,
    )
    return False


_BAD_CELL = object()


def _differ(first: object, value: object) -> bool:
    """Whether two cells of one column differ; contexts as JSON writes them (``1`` and
    ``true`` are equal to Python, and different contexts)."""
    if isinstance(first, (dict, list)) or isinstance(value, (dict, list)):
        return json.dumps(first, sort_keys=True) != json.dumps(value, sort_keys=True)
    return first != value


def _context_cell(parsed: Parsed, marks: Marks, cell: str, line: int, qid: str) -> Any:
    """The decoded JSON of a ``context`` cell (its containers marked at ``line``), or
    ``_BAD_CELL`` after recording why it cannot be read; the schema checks the value itself."""
    try:
        value = load_json(
            cell,
            source=parsed.source,
            what="context cell",
            expected="a JSON object",
            fix=_CONTEXT_CELL_FIX,
            line=line,
        )
    except InputError as exc:
        for problem in exc.problems:
            parsed.fail(
                problem.message, problem.fix, line=line, query_id=qid or None, field="context"
            )
        return _BAD_CELL
    stack = [value]
    while stack:  # every container of the cell is on its row (json has no columns to give)
        item = stack.pop()
        if isinstance(item, (dict, list)):
            marks.at[id(item)] = (line, None)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return value


def _per_query(parsed: Parsed, body: list[tuple[int, dict[str, str]]]) -> None:
    marks = Marks()
    schema = SchemaReader(parsed, marks.locate)
    records: list[dict[str, Any]] = []  # keeps every record alive while marks are in use
    for line, row in body:
        record: dict[str, Any] = {"id": row["id"], "text": row["text"]}
        relevant: list[str] | dict[str, int | str]
        items = _names(row["relevant"])
        if any("=" in item for item in items):
            graded: dict[str, int | str] = {}
            for item in items:
                doc, sep, grade = item.rpartition("=")
                doc, grade = (doc.strip(), grade.strip()) if sep else (item, "1")
                if doc in graded:
                    parsed.fail(
                        f"doc {doc!r} is listed twice",
                        "list each judged doc once",
                        line=line,
                        query_id=row["id"] or None,
                        field="relevant",
                    )
                graded[doc] = _grade(grade)
            relevant = graded
        else:
            relevant = items
        record["relevant"] = relevant
        if row.get("slices"):
            record["slices"] = _names(row["slices"])
        if row.get("split"):
            record["split"] = row["split"]
        if row.get("forbidden"):
            record["forbidden"] = _names(row["forbidden"])
        if row.get("context"):
            context = _context_cell(parsed, marks, row["context"], line, row["id"])
            if context is _BAD_CELL:
                records.append(record)
                if row["id"]:
                    parsed.note(row["id"], row["text"] or None, row.get("split") or None, line)
                continue
            record["context"] = context
        records.append(record)
        for container in (record, relevant, record.get("slices"), record.get("forbidden")):
            if container is not None:
                marks.at[id(container)] = (line, None)
        schema.read_query(record, Defaults(), record, None)


def _per_judgment(
    parsed: Parsed, body: list[tuple[int, dict[str, str]]], *, has_grade: bool
) -> None:
    marks = Marks()
    schema = SchemaReader(parsed, marks.locate)
    records: dict[str, dict[str, Any]] = {}
    given: dict[tuple[str, str], tuple[int, object]] = {}  # (query, column) -> (line, value)
    for line, row in body:
        qid = row["query_id"]
        record = records.get(qid)
        if record is None:
            record = records[qid] = {"id": qid, "relevant": {}}
            marks.at[id(record)] = marks.at[id(record["relevant"])] = (line, None)
            marks.keys[id(record)] = {}
            marks.keys[id(record["relevant"])] = {}
        for column in ("text", "slices", "split", "context", "forbidden"):
            cell = row.get(column, "")
            if not cell:
                continue
            listed = column in ("slices", "forbidden")
            value: object = sorted(set(_names(cell))) if listed else cell
            if column == "context":
                value = _context_cell(parsed, marks, cell, line, qid)
                if value is _BAD_CELL:
                    continue
            first = given.get((qid, column))
            if first is None:
                given[(qid, column)] = (line, value)
                record[column] = value
                marks.keys[id(record)][column] = (line, None)
                if isinstance(value, list):
                    marks.at[id(value)] = (line, None)
            elif _differ(first[1], value):
                parsed.fail(
                    f"{column} differs from the one given on line {first[0]}",
                    f"give the same {column} on every row of the query, or only on one row",
                    line=line,
                    query_id=qid or None,
                    field=column,
                )
        doc = row["doc_id"]
        grade_cell = row.get("grade", "")
        if not doc:
            if grade_cell:
                parsed.fail(
                    "a grade without a doc id",
                    "fill in doc_id, or leave both empty to mark a no-answer query",
                    line=line,
                    query_id=qid or None,
                    field="doc_id",
                )
            continue
        relevant: dict[str, object] = record["relevant"]
        if doc in relevant:
            parsed.fail(
                f"doc {doc!r} is judged twice for this query "
                f"(first on line {marks.keys[id(relevant)][doc][0]})",
                "keep one row per query and document",
                line=line,
                query_id=qid or None,
                field="doc_id",
            )
            continue
        if has_grade and not grade_cell:
            parsed.fail(
                "grade is empty",
                "write a grade: 1 or more = relevant, 0 = judged not relevant",
                line=line,
                query_id=qid or None,
                field="grade",
            )
            continue
        relevant[doc] = _grade(grade_cell) if has_grade else 1
        marks.keys[id(relevant)][doc] = (line, None)
    for record in records.values():
        schema.read_query(record, Defaults(), record, None)
