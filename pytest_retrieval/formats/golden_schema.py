"""The canonical golden-set schema, shared by the YAML, JSON, JSONL and CSV readers.

A reader decodes its file into plain Python values (mappings, lists, strings, ints) and records
where each came from in a :class:`~.golden_parsed.Marks`; :class:`SchemaReader` then checks those
values against the schema and turns them into :class:`~pytest_retrieval.golden.model.Query` records,
collecting every problem (located by file, line, column, query id and field) in a
:class:`~.golden_parsed.Parsed` instead of stopping at the first. A single value (an id, a
grade) is checked by :mod:`~.golden_values`.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..golden.context import CONTEXT_FIX, context_json, context_problems
from ..golden.model import (
    DEFAULT_SPLIT,
    MAX_GRADE,
    SCHEMA_VERSION,
    Label,
    Query,
    forbidden_problems,
    is_plain_name,
)
from ..text import SURROGATE_FIX, has_surrogate, surrogate_problem
from .golden_parsed import Loc, Locate, Parsed, Written
from .golden_values import SourceInt, as_id, describe, grade_problem, id_problem, suggest_field

#: Fields of one query, in the order the writers emit them.
QUERY_FIELDS = (
    "id",
    "text",
    "relevant",
    "slices",
    "split",
    "context",
    "forbidden",
    "provenance",
)
#: Keys of one judgment's provenance (``provenance: {doc: {by: NAME, at: TIME}}``).
PROVENANCE_FIELDS = ("by", "at")
#: Top-level keys of a YAML or JSON golden-set document.
TOP_FIELDS = ("version", "name", "corpus_version", "defaults", "queries")
#: Keys of the optional JSONL header line.
HEADER_FIELDS = ("version", "name", "corpus_version", "defaults")
#: Keys of ``defaults``.
DEFAULTS_FIELDS = ("split", "slices")

PLAIN_NAME_FIX = "use letters, digits, '-', '_' or '.', starting with a letter or digit"


def _nowhere(container: object, key: object = None) -> Loc:
    return (None, None)


@dataclass(frozen=True, slots=True)
class Defaults:
    """The ``defaults`` block: the split of queries that name none, slices added to all."""

    split: str = DEFAULT_SPLIT
    slices: tuple[str, ...] = ()


class SchemaReader:
    """Checks decoded documents against the schema and collects queries and problems.

    ``locate`` finds where a value was written and ``written`` how a boolean was spelled (see
    :class:`~.golden_parsed.Marks`). With
    ``paths=True`` (for formats without lines, i.e. JSON) a problem's field is prefixed with the
    path of its query, e.g. ``queries[3].relevant``.
    """

    def __init__(
        self,
        parsed: Parsed,
        locate: Locate | None = None,
        *,
        paths: bool = False,
        written: Written | None = None,
    ):
        self.parsed = parsed
        self.locate: Locate = locate or _nowhere
        self.written = written
        self.paths = paths

    def problem(
        self,
        message: str,
        fix: str | None,
        container: object,
        key: object = None,
        *,
        field: str | None = None,
        query_id: str | None = None,
        label: str | None = None,
    ) -> None:
        """Record a problem located at ``container[key]``."""
        line, column = self.locate(container, key)
        if self.paths and label is not None:
            field = f"{label}.{field}" if field else label
        self.parsed.fail(message, fix, line=line, column=column, query_id=query_id, field=field)

    def unknown_keys(
        self,
        mapping: Mapping[Any, Any],
        known: tuple[str, ...],
        *,
        where: str,
        query_id: str | None = None,
        label: str | None = None,
    ) -> None:
        """Report every key of ``mapping`` that is not in ``known``, suggesting the nearest."""
        for key in mapping:
            if key not in known:
                self.problem(
                    f"unknown field {str(key)!r} in {where}",
                    suggest_field(key, known),
                    mapping,
                    key,
                    field=str(key),
                    query_id=query_id,
                    label=label,
                )

    # --- document level ------------------------------------------------------------------

    def read_document(self, doc: object) -> None:
        """Read a whole YAML/JSON document: ``version``, metadata, ``defaults``, ``queries``."""
        if not isinstance(doc, Mapping):
            self.problem(
                f"a golden set must be a mapping with 'version' and 'queries', got {describe(doc)}",
                "start the file with 'version: 1' and list the queries under 'queries:'",
                doc,
            )
            return
        self.unknown_keys(doc, TOP_FIELDS, where="the golden set")
        defaults = self.read_header(doc, version_required=True)
        if "queries" not in doc:
            self.problem(
                "missing 'queries'",
                "list the queries under 'queries:', each with id, text and relevant",
                doc,
                field="queries",
            )
            return
        queries = doc["queries"]
        if queries is None or (isinstance(queries, list) and not queries):
            self.problem(
                "the golden set is empty: 'queries' has no entries",
                "add at least one query with id, text and relevant",
                doc,
                "queries",
                field="queries",
            )
            return
        if not isinstance(queries, list):
            self.problem(
                f"'queries' must be a list, got {describe(queries)}",
                "write each query as a list item starting with '- id: ...'",
                doc,
                "queries",
                field="queries",
            )
            return
        for index, record in enumerate(queries):
            self.read_query(record, defaults, queries, index, label=f"queries[{index}]")

    def read_header(self, header: Mapping[Any, Any], *, version_required: bool) -> Defaults:
        """Read ``version``, ``name``, ``corpus_version`` and ``defaults`` from ``header``."""
        if "version" in header:
            version = header["version"]
            if type(version) is not int and not isinstance(version, SourceInt):
                self.problem(
                    f"'version' must be the integer {SCHEMA_VERSION}, got {describe(version)}",
                    f"write 'version: {SCHEMA_VERSION}'",
                    header,
                    "version",
                    field="version",
                )
            elif version != SCHEMA_VERSION:
                self.problem(
                    f"unknown golden-set version {version}; this release reads version "
                    f"{SCHEMA_VERSION}",
                    f"write 'version: {SCHEMA_VERSION}', or upgrade pytest-retrieval",
                    header,
                    "version",
                    field="version",
                )
        elif version_required:
            self.problem(
                "missing 'version'",
                f"add 'version: {SCHEMA_VERSION}' at the top of the file",
                header,
                field="version",
            )
        self.parsed.name = self._optional_text(header, "name")
        self.parsed.corpus_version = self._optional_text(header, "corpus_version")
        if "defaults" not in header or header["defaults"] is None:
            return Defaults()
        block = header["defaults"]
        if not isinstance(block, Mapping):
            self.problem(
                f"'defaults' must be a mapping, got {describe(block)}",
                "write 'defaults:' with 'split:' and/or 'slices:' under it",
                header,
                "defaults",
                field="defaults",
            )
            return Defaults()
        self.unknown_keys(block, DEFAULTS_FIELDS, where="defaults")
        split = self._split(block, Defaults().split, field="defaults.split")
        slices = self._names(block, field="defaults.slices")
        return Defaults(split if split is not None else DEFAULT_SPLIT, slices or ())

    def _optional_text(self, header: Mapping[Any, Any], key: str) -> str | None:
        value = header.get(key)
        if value is None:
            return None
        if isinstance(value, datetime.date):
            return value.isoformat()
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return as_id(value)
        self.problem(
            f"{key!r} must be a string, got {describe(value)}",
            "quote it",
            header,
            key,
            field=key,
        )
        return None

    # --- query level ---------------------------------------------------------------------

    def read_query(
        self,
        record: object,
        defaults: Defaults,
        container: object,
        key: object,
        *,
        label: str | None = None,
    ) -> None:
        """Check one query record found at ``container[key]``; keep it if it is valid."""
        line = self.locate(container, key)[0]
        before = len(self.parsed.problems)
        if not isinstance(record, Mapping):
            self.problem(
                f"a query must be a mapping with id, text and relevant, got {describe(record)}",
                "write it as '- id: ...' followed by 'text:' and 'relevant:' lines",
                container,
                key,
                label=label,
            )
            return
        qid: str | None = None
        if "id" not in record:
            self.problem(
                "query has no 'id'",
                "add a unique 'id:' to every query",
                record,
                field="id",
                label=label,
            )
        else:
            bad = id_problem(record["id"], "query id")
            if bad:
                self.problem(*bad, record, "id", field="id", label=label)
            else:
                qid = as_id(record["id"])
        self.unknown_keys(record, QUERY_FIELDS, where="a query", query_id=qid, label=label)
        text = self._text(record, qid, label)
        judgments = self._judgments(record, qid, label)
        split = self._split(record, defaults.split, query_id=qid, label=label)
        slices = self._names(record, query_id=qid, label=label)
        provenance = self._provenance(record, judgments, qid, label)
        context = self._context(record, qid, label)
        forbidden = self._forbidden(record, judgments, qid, label)
        if len(self.parsed.problems) != before:
            if qid is not None:
                self.parsed.note(qid, text, split, line, context_json(context))
            return
        assert qid is not None
        assert text is not None
        assert judgments is not None
        assert split is not None
        assert slices is not None
        slices = (*defaults.slices, *slices) if defaults.slices else slices
        query = Query._from_checked(
            qid, text, judgments, slices, split, provenance, context, forbidden or ()
        )
        self.parsed.add(query, line)

    def _forbidden(
        self,
        record: Mapping[Any, Any],
        judgments: Mapping[str, int] | None,
        qid: str | None,
        label: str | None,
    ) -> list[str] | None:
        """``forbidden: [doc-a, ...]``: documents this query's user must not be shown; an id
        also judged relevant is a problem (it cannot be both the answer and a leak)."""
        if "forbidden" not in record or record["forbidden"] is None:
            return None
        block = record["forbidden"]
        where: dict[str, Any] = {"field": "forbidden", "query_id": qid, "label": label}
        if not isinstance(block, list):
            self.problem(
                f"'forbidden' must be a list of doc ids, got {describe(block)}",
                "write forbidden: [doc-a, doc-b]",
                record,
                "forbidden",
                **where,
            )
            return None
        ids: list[str] = []
        ok = True
        for index, doc in enumerate(block):
            bad = id_problem(doc, "doc id")
            if bad is not None:
                self.problem(*bad, block, index, **where)
                ok = False
                continue
            ids.append(as_id(doc))
        for doc, message, fix in forbidden_problems(ids, judgments or {}):
            self.problem(message, fix, block, ids.index(str(doc)), **where)
            ok = False
        return ids if ok else None

    def _context(
        self, record: Mapping[Any, Any], qid: str | None, label: str | None
    ) -> Mapping[str, Any] | None:
        """``context: {tenant: acme, ...}``: plain data handed to the retriever; every value
        that is not plain data is a problem located where it is written."""
        if "context" not in record or record["context"] is None:
            return None
        block = record["context"]
        where: dict[str, Any] = {"field": "context", "query_id": qid, "label": label}
        if not isinstance(block, Mapping):
            self.problem(
                f"'context' must be a mapping of names to plain values, got {describe(block)}",
                CONTEXT_FIX,
                record,
                "context",
                **where,
            )
            return None
        ok = True
        for container, key, message, fix in context_problems(block, self.written):
            self.problem(message, fix, container, key, **where)
            ok = False
        return block if ok else None

    def _provenance(
        self,
        record: Mapping[Any, Any],
        judgments: Mapping[str, int] | None,
        qid: str | None,
        label: str | None,
    ) -> dict[str, Label] | None:
        """``provenance: {doc: {by: NAME, at: TIME}}``: who or what graded each judgment."""
        if "provenance" not in record or record["provenance"] is None:
            return None
        block = record["provenance"]
        where: dict[str, Any] = {"field": "provenance", "query_id": qid, "label": label}
        fix = "write 'provenance: {doc-a: {by: alice, at: 2024-05-01}}' for judged documents"
        if not isinstance(block, Mapping):
            self.problem(
                f"'provenance' must be a mapping of doc id to {{by, at}}, got {describe(block)}",
                fix,
                record,
                "provenance",
                **where,
            )
            return None
        out: dict[str, Label] = {}
        for doc, entry in block.items():
            doc_id = as_id(doc) if id_problem(doc, "doc id") is None else None
            if doc_id is None or (judgments is not None and doc_id not in judgments):
                self.problem(
                    f"provenance names {str(doc)!r}, which has no judgment in 'relevant'",
                    fix,
                    block,
                    doc,
                    **where,
                )
                continue
            if not isinstance(entry, Mapping):
                self.problem(
                    f"provenance of {doc_id!r} must be a mapping with 'by' (and 'at'), got "
                    f"{describe(entry)}",
                    fix,
                    block,
                    doc,
                    **where,
                )
                continue
            self.unknown_keys(
                entry, PROVENANCE_FIELDS, where="a provenance", query_id=qid, label=label
            )
            by = entry.get("by")
            at = entry.get("at")
            if isinstance(at, datetime.date):  # YAML reads an unquoted date or time as one
                at = at.isoformat()
            if not isinstance(by, str) or not by.strip():
                self.problem(
                    f"provenance of {doc_id!r} needs 'by': who or what graded it, got "
                    f"{describe(by)}",
                    fix,
                    entry,
                    "by" if "by" in entry else None,
                    **where,
                )
                continue
            if at is not None and not isinstance(at, str):
                self.problem(
                    f"'at' of {doc_id!r} must be a date or time, got {describe(at)}",
                    "write an ISO 8601 time such as 2024-05-01T10:00:00Z",
                    entry,
                    "at",
                    **where,
                )
                continue
            out[doc_id] = Label(by, at)
        return out

    def _text(self, record: Mapping[Any, Any], qid: str | None, label: str | None) -> str | None:
        if "text" not in record:
            self.problem(
                "query has no 'text'",
                "add 'text:' with the question as a user would ask it",
                record,
                field="text",
                query_id=qid,
                label=label,
            )
            return None
        text = record["text"]
        if isinstance(text, str) and text.strip():
            bad = surrogate_problem(text, "query text")
            if bad is None:
                return text
            self.problem(
                bad, SURROGATE_FIX, record, "text", field="text", query_id=qid, label=label
            )
            return None
        if isinstance(text, str) or text is None:
            message = "query text is blank"
        else:
            message = f"query text must be a string, got {describe(text)}"
        self.problem(
            message,
            "write the question as a user would ask it; quote it if YAML reads it as another type",
            record,
            "text",
            field="text",
            query_id=qid,
            label=label,
        )
        return None

    def _judgments(
        self, record: Mapping[Any, Any], qid: str | None, label: str | None
    ) -> dict[str, int] | None:
        if "relevant" not in record or record["relevant"] is None:
            self.problem(
                "query has no 'relevant' list"
                if "relevant" not in record
                else "'relevant' is empty (null)",
                "list the relevant doc ids as 'relevant: [doc-a, doc-b]', grade them as "
                "'relevant: {doc-a: 2, doc-b: 0}', or write 'relevant: []' for a no-answer query",
                record,
                "relevant" if "relevant" in record else None,
                field="relevant",
                query_id=qid,
                label=label,
            )
            return None
        relevant = record["relevant"]
        grades: dict[str, int] = {}
        ok = True
        if isinstance(relevant, list):
            pairs: list[tuple[object, object, object]] = [
                (doc, 1, index) for index, doc in enumerate(relevant)
            ]
        elif isinstance(relevant, Mapping):
            pairs = [(doc, grade, doc) for doc, grade in relevant.items()]
        else:
            fix = (
                f"write 'relevant: [{relevant}]'"
                if isinstance(relevant, (str, int)) and not isinstance(relevant, bool)
                else "write a list of doc ids or a mapping of doc id to grade"
            )
            self.problem(
                f"'relevant' must be a list of doc ids or a mapping of doc id to grade, got "
                f"{describe(relevant)}",
                fix,
                record,
                "relevant",
                field="relevant",
                query_id=qid,
                label=label,
            )
            return None
        for doc, grade, key in pairs:
            # The common case (a string id and a plain int grade) skips the detailed checks.
            if (
                type(doc) is str
                and type(grade) is int
                and 0 <= grade <= MAX_GRADE
                and doc.strip()
                and not has_surrogate(doc)
                and doc not in grades
            ):
                grades[doc] = grade
                continue
            bad = id_problem(doc, "doc id") or grade_problem(grade)
            if bad is None and as_id(doc) in grades:
                bad = (f"doc {as_id(doc)!r} is listed twice", "list each judged doc once")
            if bad is not None:
                self.problem(*bad, relevant, key, field="relevant", query_id=qid, label=label)
                ok = False
                continue
            grades[as_id(doc)] = int(grade)  # type: ignore[call-overload]
        return grades if ok else None

    def _split(
        self,
        block: Mapping[Any, Any],
        default: str,
        *,
        field: str = "split",
        query_id: str | None = None,
        label: str | None = None,
    ) -> str | None:
        if "split" not in block:
            return default
        split = block["split"]
        if is_plain_name(split):
            assert isinstance(split, str)
            return split
        self.problem(
            f"split name {describe(split)} is not a plain identifier",
            PLAIN_NAME_FIX,
            block,
            "split",
            field=field,
            query_id=query_id,
            label=label,
        )
        return None

    def _names(
        self,
        block: Mapping[Any, Any],
        *,
        field: str = "slices",
        query_id: str | None = None,
        label: str | None = None,
    ) -> tuple[str, ...] | None:
        if "slices" not in block:
            return ()
        slices = block["slices"]
        if not isinstance(slices, list):
            fix = (
                f"write 'slices: [{slices}]'"
                if isinstance(slices, str)
                else "write a list of names, e.g. 'slices: [multi-hop]' (or 'slices: []')"
            )
            self.problem(
                f"'slices' must be a list of names, got {describe(slices)}",
                fix,
                block,
                "slices",
                field=field,
                query_id=query_id,
                label=label,
            )
            return None
        ok = True
        for index, name in enumerate(slices):
            if not is_plain_name(name):
                self.problem(
                    f"slice name {describe(name)} is not a plain identifier",
                    PLAIN_NAME_FIX,
                    slices,
                    index,
                    field=field,
                    query_id=query_id,
                    label=label,
                )
                ok = False
        return tuple(slices) if ok else None
