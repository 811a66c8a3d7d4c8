"""The canonical golden-set schema, shared by the YAML, JSON, JSONL and CSV readers.

A reader decodes its file into plain Python values (mappings, lists, strings, ints) and records
where each came from in a :class:`Marks`; :class:`SchemaReader` then checks those values against
the schema and turns them into :class:`~pytest_retrieval.golden.Query` records, collecting every
problem (located by file, line, column, query id and field) instead of stopping at the first.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import Problem
from ..golden import (
    DEFAULT_SPLIT,
    MAX_GRADE,
    MAX_GRADE_FIX,
    SCHEMA_VERSION,
    SURROGATE_FIX,
    Label,
    Query,
    describe_grade,
    is_plain_name,
    surrogate_problem,
)
from ..text import MAX_INT_DIGITS, has_surrogate

#: Fields of one query, in the order the writers emit them.
QUERY_FIELDS = ("id", "text", "relevant", "slices", "split", "provenance")
#: Keys of one judgment's provenance (``provenance: {doc: {by: NAME, at: TIME}}``).
PROVENANCE_FIELDS = ("by", "at")
#: Top-level keys of a YAML or JSON golden-set document.
TOP_FIELDS = ("version", "name", "corpus_version", "defaults", "queries")
#: Keys of the optional JSONL header line.
HEADER_FIELDS = ("version", "name", "corpus_version", "defaults")
#: Keys of ``defaults``.
DEFAULTS_FIELDS = ("split", "slices")

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

_PLAIN_NAME_FIX = "use letters, digits, '-', '_' or '.', starting with a letter or digit"

#: ``(line, column)``, 1-based, either unknown (None).
Loc = tuple[int | None, int | None]
#: ``locate(container, key)``: where ``container[key]`` (or the container itself, key None) is.
Locate = Callable[[object, object], Loc]


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


class Marks:
    """Where decoded values came from, keyed by the identity of their containers.

    ``at[id(c)]`` is where container ``c`` starts; ``keys[id(d)][k]`` where key ``k`` of mapping
    ``d`` is written; ``items[id(s)][i]`` where item ``i`` of list ``s`` is. The decoded tree must
    stay alive while the marks are used, since ids of dead objects are reused.
    """

    __slots__ = ("at", "items", "keys")

    def __init__(self) -> None:
        self.at: dict[int, Loc] = {}
        self.keys: dict[int, dict[Any, Loc]] = {}
        self.items: dict[int, list[Loc]] = {}

    def locate(self, container: object, key: object = None) -> Loc:
        """Where ``container[key]`` is, else where ``container`` starts, else unknown."""
        if key is not None:
            if isinstance(container, Mapping):
                found = self.keys.get(id(container), {}).get(key)
                if found is not None:
                    return found
            elif isinstance(container, list) and isinstance(key, int):
                items = self.items.get(id(container))
                if items is not None and 0 <= key < len(items):
                    return items[key]
        return self.at.get(id(container), (None, None))


def read_text(parsed: Parsed, path: str | None = None) -> str | None:
    """The text of ``path`` (default: the parsed source) as UTF-8, a BOM tolerated; None after
    recording why it cannot be read."""
    name = parsed.source if path is None else path
    try:
        with open(name, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        parsed.fail("file not found", "check the path", source=name)
        return None
    except IsADirectoryError:
        parsed.fail("is a folder, expected a file", "name the file itself", source=name)
        return None
    except OSError as exc:
        parsed.fail(f"cannot be read: {exc.strerror}", "check its permissions", source=name)
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        parsed.fail(
            f"is not valid UTF-8 ({exc.reason} at byte {exc.start})",
            "save the file as UTF-8",
            source=name,
            line=raw.count(b"\n", 0, exc.start) + 1,
        )
        return None


def _nowhere(container: object, key: object = None) -> Loc:
    return (None, None)


@dataclass(slots=True)
class Parsed:
    """What a reader produced: queries with their lines, problems, and document metadata."""

    source: str
    queries: list[Query] = field(default_factory=list)
    lines: list[int | None] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    name: str | None = None
    corpus_version: str | None = None
    #: The file that ``lines`` refer to, when not ``source`` itself (a BEIR folder).
    line_source: str | None = None
    #: ``(id, text, split)`` of every query with a usable id, valid or not, for the
    #: cross-query checks; ``entry_lines`` holds their lines.
    entries: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    entry_lines: list[int | None] = field(default_factory=list)

    def add(self, query: Query, line: int | None) -> None:
        """Append a valid query read from ``line``."""
        self.queries.append(query)
        self.lines.append(line)
        self.note(query.id, query.text, query.split, line)

    def note(self, query_id: str, text: str | None, split: str | None, line: int | None) -> None:
        """Remember a query for the cross-query checks even if it is invalid."""
        self.entries.append((query_id, text, split))
        self.entry_lines.append(line)

    def fail(self, message: str, fix: str | None = None, **where: Any) -> None:
        """Record a problem in this file (or in ``where["source"]``)."""
        where.setdefault("source", self.source)
        self.problems.append(Problem(message, fix, **where))


@dataclass(frozen=True, slots=True)
class Defaults:
    """The ``defaults`` block: the split of queries that name none, slices added to all."""

    split: str = DEFAULT_SPLIT
    slices: tuple[str, ...] = ()


def _describe(value: object) -> str:
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
            f"{what} must be a string, got {_describe(value)}",
            "quote it: YAML reads unquoted yes/no/on/off/true/false as booleans",
        )
    if isinstance(value, (float, datetime.date)):
        return f"{what} must be a string, got {_describe(value)}", "quote it"
    return f"{what} must be a string, got {_describe(value)}", f"write the {what} as a string"


def as_id(value: object) -> str:
    """The string form of an id already checked by :func:`id_problem`."""
    if isinstance(value, SourceInt):
        return value.text
    return str(value)


def grade_problem(value: object) -> tuple[str, str] | None:
    """Why ``value`` is not a grade, and the fix; None if it is one."""
    if isinstance(value, bool):
        return (
            f"grade must be an integer, got {_describe(value)}",
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
        f"grade must be an integer, got {_describe(value)}",
        "use a whole number: 0 = judged not relevant, 1 or more = relevant",
    )


class SchemaReader:
    """Checks decoded documents against the schema and collects queries and problems.

    ``locate`` finds where a value was written (see :class:`Marks`). With ``paths=True`` (for
    formats without lines, i.e. JSON) a problem's field is prefixed with the path of its query,
    e.g. ``queries[3].relevant``.
    """

    def __init__(self, parsed: Parsed, locate: Locate | None = None, *, paths: bool = False):
        self.parsed = parsed
        self.locate: Locate = locate or _nowhere
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
                f"a golden set must be a mapping with 'version' and 'queries', got "
                f"{_describe(doc)}",
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
                f"'queries' must be a list, got {_describe(queries)}",
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
                    f"'version' must be the integer {SCHEMA_VERSION}, got {_describe(version)}",
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
                f"'defaults' must be a mapping, got {_describe(block)}",
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
            f"{key!r} must be a string, got {_describe(value)}",
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
                f"a query must be a mapping with id, text and relevant, got {_describe(record)}",
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
        if len(self.parsed.problems) != before:
            if qid is not None:
                self.parsed.note(qid, text, split, line)
            return
        assert qid is not None
        assert text is not None
        assert judgments is not None
        assert split is not None
        assert slices is not None
        slices = (*defaults.slices, *slices) if defaults.slices else slices
        query = Query._from_checked(qid, text, judgments, slices, split, provenance)
        self.parsed.add(query, line)

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
                f"'provenance' must be a mapping of doc id to {{by, at}}, got {_describe(block)}",
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
                    f"{_describe(entry)}",
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
                    f"{_describe(by)}",
                    fix,
                    entry,
                    "by" if "by" in entry else None,
                    **where,
                )
                continue
            if at is not None and not isinstance(at, str):
                self.problem(
                    f"'at' of {doc_id!r} must be a date or time, got {_describe(at)}",
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
            message = f"query text must be a string, got {_describe(text)}"
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
                f"{_describe(relevant)}",
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
            f"split name {_describe(split)} is not a plain identifier",
            _PLAIN_NAME_FIX,
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
                f"'slices' must be a list of names, got {_describe(slices)}",
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
                    f"slice name {_describe(name)} is not a plain identifier",
                    _PLAIN_NAME_FIX,
                    slices,
                    index,
                    field=field,
                    query_id=query_id,
                    label=label,
                )
                ok = False
        return tuple(slices) if ok else None
