"""Golden sets from TREC qrels (``qid iter docid grade``), with an optional topics file.

The qrels are read by :func:`pytest_retrieval.formats.trec.read_qrels_records`, exactly as
trec_eval reads them. For a golden set, a negative grade (trec_eval's "in the pool, not judged")
means *unjudged*: the pair is left out, though its query is kept. Every query goes to the
``tune`` split with no slices; queries keep the order of their first qrels line.

Without a topics file the queries have no text (``text`` is None): such a set can be evaluated
against runs but not written to the canonical formats. A topics file is either TSV
(``qid<TAB>text`` per line, as MS MARCO's ``queries.tsv``) or TREC topics: classic ``<top>``
blocks with ``<num> Number: 301`` and ``<title>`` (the title is the query text), or
``<topic number="201">`` elements with a ``<query>`` (or ``<title>``).
"""

from __future__ import annotations

import re

from ..errors import RunFileError
from ..golden.model import DEFAULT_SPLIT, Query
from ..reading import split_lines
from .golden_parsed import Parsed, read_text
from .trec import read_qrels_records

_TOP = re.compile(r"<top>(.*?)(?:</top>|\Z)", re.IGNORECASE | re.DOTALL)
_NUM = re.compile(r"<num>\s*(?:Number\s*:)?\s*([^\s<]+)", re.IGNORECASE)
_TITLE = re.compile(r"<title>\s*(?:Topic\s*:)?\s*([^<]*)", re.IGNORECASE)
_TOPIC = re.compile(r"<topic\b([^>]*)>(.*?)</topic>", re.IGNORECASE | re.DOTALL)
_NUMBER_ATTR = re.compile(r"""\bnumber\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)
_QUERY = re.compile(r"<(query|title)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def read_topics(path: str, parsed: Parsed) -> dict[str, str]:
    """``{query id: text}`` from a TSV or TREC topics file; problems go to ``parsed``."""
    text = read_text(parsed, path, what="topics file")
    if text is None:
        return {}
    entries: list[tuple[int, str, str]] = []  # (line, qid, text)
    if re.search(r"<top>", text, re.IGNORECASE):
        for block in _TOP.finditer(text):
            line = _line_at(text, block.start())
            num = _NUM.search(block.group(1))
            title = _TITLE.search(block.group(1))
            if num is None:
                parsed.fail(
                    "topic without a <num>", "add '<num> Number: <id>'", source=path, line=line
                )
                continue
            entries.append((line, num.group(1), title.group(1) if title else ""))
    elif re.search(r"<topic\b", text, re.IGNORECASE):
        for block in _TOPIC.finditer(text):
            line = _line_at(text, block.start())
            number = _NUMBER_ATTR.search(block.group(1))
            query = _QUERY.search(block.group(2))
            if number is None:
                parsed.fail(
                    "topic without a number attribute",
                    'write <topic number="...">',
                    source=path,
                    line=line,
                )
                continue
            entries.append((line, number.group(1), query.group(2) if query else ""))
    else:
        for line, row in split_lines(text):
            if not row.strip():
                continue
            qid, tab, query_text = row.partition("\t")
            if not tab:
                parsed.fail(
                    "expected 'query id<TAB>text'",
                    "separate the id from the text with a tab",
                    source=path,
                    line=line,
                )
                continue
            entries.append((line, qid.strip(), query_text))
    topics: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line, qid, query_text in entries:
        query_text = " ".join(query_text.split())
        if qid in topics:
            parsed.fail(
                f"topic given twice (first on line {first_line[qid]})",
                "keep one",
                source=path,
                line=line,
                query_id=qid,
            )
        elif not query_text:
            parsed.fail(
                "topic has no text", "write the query text", source=path, line=line, query_id=qid
            )
        else:
            topics[qid] = query_text
            first_line[qid] = line
    if not entries and not parsed.problems:
        parsed.fail("the topics file has no topics", "check the file", source=path)
    return topics


def read_trec(path: str, *, topics: str | None = None) -> Parsed:
    """Read TREC qrels (and, if given, a topics file for the query texts)."""
    parsed = Parsed(path)
    try:
        records = read_qrels_records(path)
    except RunFileError as exc:
        parsed.problems.extend(exc.problems)
        return parsed
    texts = read_topics(topics, parsed) if topics is not None else None
    judged: dict[str, tuple[int, dict[str, int]]] = {}
    for line, qid, doc, grade in records:
        grades = judged.setdefault(qid, (line, {}))[1]
        if grade >= 0:
            grades[doc] = grade
    if not judged:
        parsed.fail(
            "the golden set is empty: the qrels have no judgments",
            "write one 'qid 0 docid grade' line per judgment",
        )
    for qid, (line, grades) in judged.items():
        text = None
        if texts is not None:
            text = texts.get(qid)
            if text is None:
                parsed.fail(
                    f"no text for this query in the topics file {topics}",
                    "add the topic to the topics file, or drop its judgments",
                    line=line,
                    query_id=qid,
                    field="text",
                )
                continue
        # qrels fields are non-blank by construction and grades were filtered to >= 0.
        parsed.add(Query._from_checked(qid, text, grades, (), DEFAULT_SPLIT), line)
    return parsed
