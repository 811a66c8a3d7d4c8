"""Golden sets from a BEIR folder.

Layout: ``queries.jsonl`` (``{"_id", "text", ...}`` per line; an optional ``"context"``
object is the query's context, checked as in every golden format, and an optional
``"forbidden"`` list its forbidden doc ids; other keys such as
``metadata`` are ignored: BEIR's metadata describes a query, it is not handed to a retriever),
and qrels as ``qrels/<split>.tsv`` (BEIR's layout; the file name is the split) or
a single ``qrels.tsv`` at the top (split ``tune``). A qrels TSV has the columns ``query-id``,
``corpus-id``, ``score``, tab-separated, with an optional header row. ``corpus.jsonl`` may sit
beside them; it is read only when passed as the corpus to check against.

Queries come in ``queries.jsonl`` order. Only queries with at least one qrels row are kept:
BEIR's ``queries.jsonl`` usually holds every split's queries, and a query without qrels belongs
to a split that was not shipped. A qrels query missing from ``queries.jsonl`` is an error.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InputError
from ..golden.context import CONTEXT_FIX, context_problems
from ..golden.model import DEFAULT_SPLIT, Query, forbidden_problems, is_plain_name
from ..reading import load_json, split_lines
from ..text import SURROGATE_FIX, parse_int, surrogate_problem
from .golden_parsed import Parsed, read_text
from .golden_values import as_id, grade_problem, id_problem

_HEADER = ("query-id", "corpus-id", "score")


def qrels_files(folder: str) -> list[tuple[str, str]]:
    """``(split, path)`` of every qrels file of a BEIR folder, sorted by split name."""
    found: list[tuple[str, str]] = []
    top = os.path.join(folder, "qrels.tsv")
    if os.path.lexists(top):  # a FIFO there is refused by the reader, not skipped
        found.append((DEFAULT_SPLIT, top))
    nested = os.path.join(folder, "qrels")
    if os.path.isdir(nested):
        for name in sorted(os.listdir(nested)):
            if name.lower().endswith(".tsv"):
                found.append((name[: -len(".tsv")], os.path.join(nested, name)))
    return found


def _context(parsed: Parsed, path: str, line: int, qid: str, record: dict[str, Any]) -> Any:
    """The line's ``context`` (None without one), or False after recording its problems."""
    context = record.get("context")
    if context is None:
        return None
    if not isinstance(context, dict):
        parsed.fail(
            "'context' must be an object of names to plain values",
            CONTEXT_FIX,
            source=path,
            line=line,
            query_id=qid,
            field="context",
        )
        return False
    problems = list(context_problems(context))
    for _container, _key, message, fix in problems:
        parsed.fail(message, fix, source=path, line=line, query_id=qid, field="context")
    return False if problems else context


def _forbidden(parsed: Parsed, path: str, line: int, qid: str, record: dict[str, Any]) -> Any:
    """The line's ``forbidden`` ids (``()`` without), or False after recording its problem."""
    forbidden = record.get("forbidden")
    if forbidden is None:
        return ()
    if not isinstance(forbidden, list) or any(
        id_problem(doc, "doc id") is not None for doc in forbidden
    ):
        parsed.fail(
            f"'forbidden' must be a list of doc id strings, got {forbidden!r}",
            'write "forbidden": ["doc-a", "doc-b"]',
            source=path,
            line=line,
            query_id=qid,
            field="forbidden",
        )
        return False
    return [as_id(doc) for doc in forbidden]


def _read_queries(parsed: Parsed, path: str) -> dict[str, tuple[int, str, Any, Any]]:
    """``{query id: (line, text, context, forbidden)}`` in file order; the context is None
    without one, a refused context or forbidden list False (the problem is recorded)."""
    text = read_text(parsed, path, what="BEIR queries file")
    if text is None:
        return {}
    queries: dict[str, tuple[int, str, Any, Any]] = {}
    for line, row in split_lines(text):
        if not row.strip():
            continue
        try:
            record = load_json(
                row,
                source=path,
                what="BEIR queries file",
                expected='one {"_id": ..., "text": ...} object per line',
                line=line,
            )
        except InputError as exc:
            parsed.problems.extend(exc.problems)
            continue
        if not isinstance(record, dict):
            parsed.fail(
                "not a JSON object",
                'write one {"_id": ..., "text": ...} object per line',
                source=path,
                line=line,
            )
            continue
        qid = record.get("_id")
        bad = id_problem(qid, "query id")
        query_text = record.get("text")
        if bad is not None:
            parsed.fail(*bad, source=path, line=line, field="_id")
        elif as_id(qid) in queries:
            parsed.fail(
                f"duplicate query id (first on line {queries[as_id(qid)][0]})",
                "give every query a unique _id",
                source=path,
                line=line,
                query_id=as_id(qid),
                field="_id",
            )
        elif not isinstance(query_text, str) or not query_text.strip():
            parsed.fail(
                "query text is missing or blank",
                "give the query its text",
                source=path,
                line=line,
                query_id=as_id(qid),
                field="text",
            )
        elif (bad_text := surrogate_problem(query_text, "query text")) is not None:
            parsed.fail(
                bad_text,
                SURROGATE_FIX,
                source=path,
                line=line,
                query_id=as_id(qid),
                field="text",
            )
        else:  # a refused context is False: the query is known (its qrels are no strays)
            context = _context(parsed, path, line, as_id(qid), record)
            forbidden = _forbidden(parsed, path, line, as_id(qid), record)
            queries[as_id(qid)] = (line, query_text, context, forbidden)
    return queries


def _read_qrels(
    parsed: Parsed, path: str, judged: dict[str, tuple[str, str, int, dict[str, int]]], split: str
) -> None:
    """Add ``{query id: (split, file, first line, {doc: grade})}`` from one qrels TSV."""
    text = read_text(parsed, path, what="BEIR qrels file")
    if text is None:
        return
    for line, row in split_lines(text):
        if not row.strip():
            continue
        fields = [field.strip() for field in row.split("\t")]
        if line == 1 and tuple(f.lower() for f in fields) == _HEADER:
            continue
        if len(fields) != 3:
            parsed.fail(
                f"expected 3 tab-separated fields (query-id, corpus-id, score), found "
                f"{len(fields)}",
                "separate the fields with tabs",
                source=path,
                line=line,
            )
            continue
        qid, doc, score = fields
        number = parse_int(score, signed=True)
        grade: object = score if number is None else number
        bad = id_problem(qid, "query id") or id_problem(doc, "doc id") or grade_problem(grade)
        if bad is not None:
            parsed.fail(*bad, source=path, line=line, query_id=qid or None)
            continue
        assert isinstance(grade, int)
        entry = judged.setdefault(qid, (split, path, line, {}))
        if entry[0] != split:
            parsed.fail(
                f"query is in split {entry[0]!r} ({entry[1]}, line {entry[2]}) and in split "
                f"{split!r}",
                "a query must be in one split only",
                source=path,
                line=line,
                query_id=qid,
            )
            continue
        if doc in entry[3]:
            parsed.fail(
                f"doc {doc!r} is judged twice for this query",
                "keep one row per query and document",
                source=path,
                line=line,
                query_id=qid,
            )
            continue
        entry[3][doc] = grade


def read_beir(folder: str) -> Parsed:
    """Read a BEIR folder (see the module docs)."""
    parsed = Parsed(folder)
    queries_path = os.path.join(folder, "queries.jsonl")
    parsed.line_source = queries_path
    if not os.path.isdir(folder):
        parsed.fail("is not a folder", "a BEIR golden set is a folder with queries.jsonl")
        return parsed
    files = qrels_files(folder)
    if not os.path.lexists(queries_path):
        parsed.fail(
            "BEIR folder without queries.jsonl",
            'add queries.jsonl with one {"_id": ..., "text": ...} per line',
        )
    if not files:
        parsed.fail(
            "BEIR folder without qrels",
            "add qrels/<split>.tsv or qrels.tsv with the columns query-id, corpus-id, score",
        )
    if parsed.problems:
        return parsed
    texts = _read_queries(parsed, queries_path)
    judged: dict[str, tuple[str, str, int, dict[str, int]]] = {}
    for split, path in files:
        if not is_plain_name(split):
            parsed.fail(
                f"split name {split!r} (from the file name) is not a plain identifier",
                "rename the file: letters, digits, '-', '_' or '.'",
                source=path,
            )
            continue
        _read_qrels(parsed, path, judged, split)
    for qid, (_split, path, line, _grades) in judged.items():
        if qid not in texts:
            parsed.fail(
                f"query is not in {queries_path}",
                "add it to queries.jsonl, or drop its qrels",
                source=path,
                line=line,
                query_id=qid,
            )
    if not judged and not parsed.problems:
        parsed.fail("the golden set is empty: the qrels have no judgments", "add qrels rows")
    for qid, (line, text, context, forbidden) in texts.items():
        if qid not in judged or context is False or forbidden is False:
            continue
        split, _path, _line, grades = judged[qid]
        contradictions = forbidden_problems(forbidden, grades)
        for _doc, message, fix in contradictions:
            parsed.fail(
                message, fix, source=queries_path, line=line, query_id=qid, field="forbidden"
            )
        if contradictions:
            continue
        parsed.add(
            Query._from_checked(qid, text, grades, (), split, None, context, forbidden), line
        )
    return parsed
