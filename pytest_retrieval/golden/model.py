"""Golden sets: the labelled queries every retrieval gate stands on.

A :class:`GoldenSet` is an ordered tuple of :class:`Query` records. Each query has a string id,
its text, graded judgments (``{doc id: grade}``: grade 0 means judged not relevant, a doc that is
absent is unjudged, and an empty mapping marks a *no-answer* query), any number of slice tags and
exactly one split (``tune`` unless stated; the held-out split is called ``heldout`` unless
configured otherwise). A judgment may carry its provenance (:class:`Label`: who or what graded
it, and when), which is kept in the file and counted by ``golden stats`` but is not a label:
the fingerprint ignores it. A query may carry a *context* (:data:`Context`: a tenant, a user,
groups, filters, a conversation's history, a locale, any key): plain data handed to the
retriever with the text (:mod:`pytest_retrieval.run.retriever.context`), part of the fingerprint,
of the cache key and of the run-file key (:func:`context_json`, :func:`context_digest`).

This module is the model only (queries, the set's rules, the fingerprint, joining sets; the
leakage guard it applies is :mod:`pytest_retrieval.golden.leakage`). Every reader and writer lives
in :mod:`pytest_retrieval.formats`, which imports this module and never the reverse:
``load_golden`` / ``write_golden`` are in :mod:`pytest_retrieval.formats.golden_io` (and in the
public API, ``pytest_retrieval``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import GoldenSetError, Problem
from ..text import SURROGATE_FIX, plural, surrogate_problem
from .context import (
    CONTEXT_SLICE_FIX,
    EVERY_VALUE,
    Context,
    context_json,
    context_problems,
    context_slice,
    freeze_context,
    slice_values,
    thaw_context,
)
from .leakage import set_problems

QueryId = str
DocId = str
#: ``{doc id: grade}``; 0 = judged not relevant, a doc that is absent is unjudged.
Judgments = Mapping[DocId, int]

#: The split of a query that names none.
DEFAULT_SPLIT = "tune"
#: The default name of the held-out split (configurable per load).
DEFAULT_HELDOUT_SPLIT = "heldout"
#: The only ``version:`` of the canonical schema this release reads and writes.
SCHEMA_VERSION = 1

#: A path, or an iterable of doc ids given from code.
CorpusSpec = str | os.PathLike[str] | Iterable[str]

_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
PLAIN_NAME_FIX = "use letters, digits, '-', '_' or '.', starting with a letter or digit"


def is_plain_name(name: object) -> bool:
    """True if ``name`` is a usable slice or split name: ``[A-Za-z0-9][A-Za-z0-9_.-]*``."""
    return isinstance(name, str) and _PLAIN_NAME.match(name) is not None


#: The highest grade a golden set may give (``2**grade - 1`` must stay a finite float). Grades
#: are relevance levels such as 0-3; a larger number is almost always a score or a typo.
MAX_GRADE = 1000

#: Fix for a grade above :data:`MAX_GRADE`.
MAX_GRADE_FIX = f"grades are relevance levels (0 to {MAX_GRADE}): rescale the labels"


def describe_grade(value: int) -> str:
    """A grade for a message: digits, or how many there are when that is too long to show."""
    digits = len(str(abs(value))) if value.bit_length() < 20_000 else None
    if digits is not None and digits <= 20:
        return str(value)
    return f"a number of {digits or 'over 6,000'} digits"


def _checked_context(context: object, qid: str | None) -> tuple[list[Problem], Context]:
    if context is None:
        return [], MappingProxyType({})
    problems = [
        Problem(message, fix, query_id=qid, field="context")
        for _container, _key, message, fix in context_problems(context)
    ]
    if problems:
        return problems, MappingProxyType({})
    assert isinstance(context, Mapping)
    return [], freeze_context(context)


def _query_problems(
    query_id: object, text: object, judgments: object, slices: object, split: object
) -> tuple[list[Problem], dict[str, int], tuple[str, ...]]:
    """Check the parts of one query; return the problems, the judgments and the slices."""
    problems: list[Problem] = []
    qid = query_id if isinstance(query_id, str) else None
    if not isinstance(query_id, str) or not query_id.strip():
        problems.append(
            Problem(
                f"query id must be a non-blank string, got {query_id!r}",
                "give every query a unique string id",
                field="id",
            )
        )
    if text is not None and (not isinstance(text, str) or not text.strip()):
        problems.append(
            Problem(
                f"text must be a non-blank string, got {text!r}",
                "give the query's text as a user would type it",
                query_id=qid,
                field="text",
            )
        )
    for value, what, where in ((query_id, "query id", "id"), (text, "text", "text")):
        bad = surrogate_problem(value, what) if isinstance(value, str) else None
        if bad is not None:
            problems.append(Problem(bad, SURROGATE_FIX, query_id=None, field=where))
    grades: dict[str, int] = {}
    pairs: Iterable[tuple[object, object]]
    if isinstance(judgments, Mapping):
        pairs = judgments.items()
    elif isinstance(judgments, (str, bytes)) or not isinstance(judgments, Iterable):
        problems.append(
            Problem(
                f"judgments must be a list of doc ids or a mapping of doc id to grade, got "
                f"{judgments!r}",
                "pass [doc_id, ...] for binary labels or {doc_id: grade} for graded ones",
                query_id=qid,
                field="relevant",
            )
        )
        pairs = ()
    else:
        pairs = ((doc, 1) for doc in judgments)
    for doc, grade in pairs:
        if not isinstance(doc, str) or not doc.strip():
            problems.append(
                Problem(
                    f"doc id must be a non-blank string, got {doc!r}",
                    "convert numeric ids with str()",
                    query_id=qid,
                    field="relevant",
                )
            )
        elif (bad := surrogate_problem(doc, "doc id")) is not None:
            problems.append(Problem(bad, SURROGATE_FIX, query_id=qid, field="relevant"))
        elif type(grade) is not int or grade < 0:
            problems.append(
                Problem(
                    f"grade of {doc!r} must be an integer >= 0, got {grade!r}",
                    "use 0 for judged not relevant and 1 or more for relevant",
                    query_id=qid,
                    field="relevant",
                )
            )
        elif grade > MAX_GRADE:
            problems.append(
                Problem(
                    f"grade of {doc!r} is {describe_grade(grade)}, above the maximum {MAX_GRADE}",
                    MAX_GRADE_FIX,
                    query_id=qid,
                    field="relevant",
                )
            )
        elif doc in grades:
            problems.append(
                Problem(
                    f"doc {doc!r} is judged twice",
                    "list each judged doc once",
                    query_id=qid,
                    field="relevant",
                )
            )
        else:
            grades[doc] = grade
    names: tuple[str, ...] = ()
    if isinstance(slices, (str, bytes)) or not isinstance(slices, Iterable):
        problems.append(
            Problem(
                f"slices must be a list of names, got {slices!r}",
                "pass a list, e.g. ['multi-hop']",
                query_id=qid,
                field="slices",
            )
        )
    else:
        names = tuple(slices)
        for name in names:
            if not is_plain_name(name):
                problems.append(
                    Problem(
                        f"slice name {name!r} is not a plain identifier",
                        PLAIN_NAME_FIX,
                        query_id=qid,
                        field="slices",
                    )
                )
    if not is_plain_name(split):
        problems.append(
            Problem(
                f"split name {split!r} is not a plain identifier",
                PLAIN_NAME_FIX,
                query_id=qid,
                field="split",
            )
        )
    return problems, grades, names


def forbidden_problems(
    forbidden: object, judgments: Mapping[str, int]
) -> list[tuple[object, str, str]]:
    """``(id, message, fix)`` per problem of a query's ``forbidden`` list: it must be a list of
    non-blank doc id strings, each once, none of them judged relevant (a grade above 0): a
    document the user must not see cannot be the answer they must get."""
    if isinstance(forbidden, (str, bytes)) or not isinstance(forbidden, Iterable):
        return [
            (
                None,
                f"'forbidden' must be a list of doc ids, got {forbidden!r}",
                "write forbidden: [doc-a, doc-b]",
            )
        ]
    problems: list[tuple[object, str, str]] = []
    seen: set[str] = set()
    for doc in forbidden:
        if not isinstance(doc, str) or not doc.strip():
            problems.append(
                (doc, f"forbidden doc id must be a non-blank string, got {doc!r}", "quote it")
            )
        elif doc in seen:
            problems.append((doc, f"doc {doc!r} is listed twice", "list each forbidden doc once"))
        elif judgments.get(doc, 0) > 0:
            problems.append(
                (
                    doc,
                    f"doc {doc!r} is both judged relevant (grade {judgments[doc]}) and forbidden",
                    "a document the user must not see cannot be their answer: take it out of "
                    "'relevant' (or grade it 0), or out of 'forbidden'",
                )
            )
        if isinstance(doc, str):
            seen.add(doc)
    return problems


def _checked_forbidden(
    forbidden: object, judgments: Mapping[str, int], qid: str | None
) -> tuple[list[Problem], tuple[str, ...]]:
    found = forbidden_problems(forbidden, judgments)
    if found:
        return [Problem(m, f, query_id=qid, field="forbidden") for _d, m, f in found], ()
    assert isinstance(forbidden, Iterable)
    return [], tuple(sorted(set(forbidden)))


#: The prefix of a ``labeled_by`` that names a machine (``--prefill``), not a person.
MACHINE_PREFIX = "machine:"


@dataclass(frozen=True, slots=True)
class Label:
    """Where one judgment came from: ``by`` (a person's name, or ``machine:module:function``
    for a machine pre-label) and ``at`` (an ISO 8601 date or time, or None)."""

    by: str
    at: str | None = None

    @property
    def is_machine(self) -> bool:
        """True for a machine-made judgment (``by`` starts with ``machine:``)."""
        return self.by.startswith(MACHINE_PREFIX)

    def to_dict(self) -> dict[str, str]:
        """``{"by": ..., "at": ...}`` (``at`` left out when unknown)."""
        return {"by": self.by} if self.at is None else {"by": self.by, "at": self.at}


def _provenance_problems(
    provenance: object, judgments: Mapping[str, int], qid: str | None
) -> tuple[list[Problem], dict[str, Label]]:
    problems: list[Problem] = []
    labels: dict[str, Label] = {}
    if provenance is None:
        return problems, labels
    if not isinstance(provenance, Mapping):
        problems.append(
            Problem(
                f"provenance must be a mapping of doc id to Label, got {provenance!r}",
                "pass {doc_id: Label(by, at)}",
                query_id=qid,
                field="provenance",
            )
        )
        return problems, labels
    for doc, label in provenance.items():
        if doc not in judgments:
            problems.append(
                Problem(
                    f"provenance names {doc!r}, which has no judgment",
                    "give provenance only for judged documents",
                    query_id=qid,
                    field="provenance",
                )
            )
        elif not isinstance(label, Label) or not isinstance(label.by, str) or not label.by.strip():
            problems.append(
                Problem(
                    f"provenance of {doc!r} must be a Label with a non-blank 'by', got {label!r}",
                    "name who or what graded it: Label('alice', '2024-05-01')",
                    query_id=qid,
                    field="provenance",
                )
            )
        else:
            labels[doc] = label
    return problems, labels


@dataclass(frozen=True, slots=True, init=False)
class Query:
    """One labelled query.

    ``Query(id, text, judgments, slices=(), split="tune")``. ``judgments`` is either a list of
    doc ids (grade 1 each) or a mapping ``{doc id: grade}`` with integer grades >= 0 (0 = judged
    not relevant); an empty list or mapping makes a *no-answer* query. Ids are strings: convert
    numeric ids yourself (the file loaders do). ``text`` is ``None`` only for TREC qrels read
    without a topics file. Slices are stored sorted and without duplicates; the judgments keep
    their given order in a read-only mapping. Invalid parts raise
    :class:`~pytest_retrieval.errors.GoldenSetError`. ``provenance`` maps judged doc ids to
    their :class:`Label`; it is not compared, hashed or fingerprinted (it is not a label).
    ``context`` is what the retriever is handed with the text (:data:`Context`: plain data,
    checked by :func:`context_problems`); it is kept read-only (lists as tuples), empty when
    the query has none, and it is part of the query: compared and fingerprinted.
    ``forbidden`` lists the documents this query's user must not be shown (another tenant's,
    a revoked one): stored sorted, scored by ``forbidden@K``, fingerprinted; a forbidden id
    judged relevant (grade > 0) is refused.
    """

    id: QueryId
    text: str | None
    judgments: Judgments = field(hash=False)
    slices: tuple[str, ...]
    split: str
    provenance: Mapping[DocId, Label] = field(hash=False, compare=False)
    context: Context = field(hash=False)
    forbidden: tuple[DocId, ...] = field(hash=False)

    def __init__(
        self,
        id: QueryId,
        text: str | None,
        judgments: Judgments | Iterable[DocId],
        slices: Iterable[str] = (),
        split: str = DEFAULT_SPLIT,
        provenance: Mapping[DocId, Label] | None = None,
        context: Context | None = None,
        forbidden: Iterable[DocId] = (),
    ) -> None:
        problems, grades, names = _query_problems(id, text, judgments, slices, split)
        qid = id if isinstance(id, str) else None
        more, labels = _provenance_problems(provenance, grades, qid)
        problems += more
        bad_context, frozen = _checked_context(context, qid)
        problems += bad_context
        bad_forbidden, denied = _checked_forbidden(forbidden, grades, qid)
        problems += bad_forbidden
        if problems:
            raise GoldenSetError(problems, title=f"invalid query {id!r}")
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "judgments", MappingProxyType(grades))
        object.__setattr__(self, "slices", tuple(sorted(set(names))))
        object.__setattr__(self, "split", split)
        object.__setattr__(self, "provenance", MappingProxyType(labels))
        object.__setattr__(self, "context", frozen)
        object.__setattr__(self, "forbidden", denied)

    @classmethod
    def _from_checked(
        cls,
        query_id: QueryId,
        text: str | None,
        judgments: dict[DocId, int],
        slices: Iterable[str],
        split: str,
        provenance: dict[DocId, Label] | None = None,
        context: Context | None = None,
        forbidden: Iterable[DocId] = (),
    ) -> Query:
        """Build a query from parts a reader has already validated (no checks: fast); a
        ``context`` given here has passed :func:`context_problems` and is frozen here, and
        ``forbidden`` has passed :func:`forbidden_problems`."""
        query = object.__new__(cls)
        object.__setattr__(query, "id", query_id)
        object.__setattr__(query, "text", text)
        object.__setattr__(query, "judgments", MappingProxyType(judgments))
        object.__setattr__(query, "slices", tuple(sorted(set(slices))))
        object.__setattr__(query, "split", split)
        object.__setattr__(query, "provenance", MappingProxyType(provenance or {}))
        frozen = freeze_context(context) if context else MappingProxyType({})
        object.__setattr__(query, "context", frozen)
        object.__setattr__(query, "forbidden", tuple(sorted(set(forbidden))))
        return query

    def __reduce__(self) -> tuple[type[Query], tuple[Any, ...]]:
        # A mappingproxy cannot be pickled, so rebuild from a plain dict.
        return (
            Query,
            (
                self.id,
                self.text,
                dict(self.judgments),
                self.slices,
                self.split,
                dict(self.provenance),
                thaw_context(self.context) or None,
                self.forbidden,
            ),
        )

    @property
    def relevant(self) -> tuple[DocId, ...]:
        """The doc ids with a grade > 0, in judgment order."""
        return tuple(doc for doc, grade in self.judgments.items() if grade > 0)

    @property
    def is_no_answer(self) -> bool:
        """True if no document has a grade > 0 (``relevant: []``, or only grade-0 judgments)."""
        return not any(grade > 0 for grade in self.judgments.values())


def _canonical_query(query: Query) -> dict[str, Any]:
    canonical: dict[str, Any] = {
        "id": query.id,
        "text": query.text,
        "judgments": query.judgments,
        "slices": query.slices,
        "split": query.split,
    }
    if query.context:  # only then: a set without contexts keeps the fingerprint it had
        canonical["context"] = thaw_context(query.context)
    if query.forbidden:  # likewise: a set without forbidden lists keeps its fingerprint
        canonical["forbidden"] = list(query.forbidden)
    return canonical


def _encode_default(value: object) -> object:
    # json cannot encode a mappingproxy; handing it a dict view here avoids a copy per query.
    if isinstance(value, MappingProxyType):
        return dict(value)
    raise TypeError(f"cannot encode {type(value).__name__}")  # pragma: no cover


def compute_fingerprint(queries: Iterable[Query]) -> str:
    """sha256 (hex) of the canonical serialisation of ``queries``.

    The serialisation is compact JSON (``sort_keys``, no white space, UTF-8 unescaped) of a list,
    sorted by query id, of ``{"id", "text", "judgments", "slices", "split"}`` per query. It is
    therefore independent of the file format, key order, white space and the order of the
    queries in the file (reordering changes no label), and changes with any id, text, grade,
    slice or split. A query with a forbidden list adds ``"forbidden"`` (its ids, sorted). A
    query with a context adds ``"context"`` (its plain data, as
    :func:`context_json` writes it) to its object, so a changed tenant or history changes the
    fingerprint while a set without contexts keeps the one it always had. The set's name,
    corpus version and source path are not part of it.
    """
    ordered = sorted(queries, key=lambda q: q.id)
    payload = json.dumps(
        [_canonical_query(q) for q in ordered],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=_encode_default,
    )
    # "surrogatepass": a text without lone surrogates (every loaded one) encodes exactly as
    # plain UTF-8; one from code that slipped past the checks hashes instead of crashing.
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True, repr=False)
class GoldenSet:
    """An ordered, validated collection of :class:`Query` records.

    Construction checks that query ids are unique and that no query text (compared by
    :func:`normalise_text`) appears in two splits, raising
    :class:`~pytest_retrieval.errors.GoldenSetError` otherwise. An empty set is allowed here (a
    selection may be empty) but not when loading a file. Iteration follows file order.
    ``source`` is the file it was read from, ``corpus_version`` the index build the labels
    belong to, ``heldout_split`` the name of the held-out split.
    """

    queries: tuple[Query, ...]
    source: str | None = None
    name: str | None = None
    corpus_version: str | None = None
    heldout_split: str = DEFAULT_HELDOUT_SPLIT
    _by_id: Mapping[str, Query] = field(init=False, repr=False, compare=False, hash=False)
    _fingerprint: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        queries = tuple(self.queries)
        problems = [
            Problem(f"expected a Query, got {type(q).__name__}", source=self.source)
            for q in queries
            if not isinstance(q, Query)
        ]
        if not is_plain_name(self.heldout_split):
            problems.append(
                Problem(
                    f"held-out split name {self.heldout_split!r} is not a plain identifier",
                    PLAIN_NAME_FIX,
                    field="heldout_split",
                )
            )
        if not problems:
            entries = [(q.id, q.text, q.split, context_json(q.context)) for q in queries]
            problems = set_problems(entries, source=self.source)
        if problems:
            title = f"{self.source or 'golden set'}: {plural(len(problems), 'problem')}"
            raise GoldenSetError(problems, title=title)
        object.__setattr__(self, "queries", queries)
        object.__setattr__(self, "_by_id", MappingProxyType({q.id: q for q in queries}))

    @classmethod
    def _from_checked(
        cls,
        queries: tuple[Query, ...],
        *,
        source: str | None,
        name: str | None,
        corpus_version: str | None,
        heldout_split: str,
    ) -> GoldenSet:
        """Build a set whose cross-query checks already passed (a loader's, or a subset of a
        valid set, since unique ids and split-disjoint texts stay so in any subset)."""
        golden = object.__new__(cls)
        for name_, value in (
            ("queries", queries),
            ("source", source),
            ("name", name),
            ("corpus_version", corpus_version),
            ("heldout_split", heldout_split),
            ("_by_id", MappingProxyType({q.id: q for q in queries})),
            ("_fingerprint", None),
        ):
            object.__setattr__(golden, name_, value)
        return golden

    def __reduce__(self) -> tuple[type[GoldenSet], tuple[Any, ...]]:
        return (
            GoldenSet,
            (self.queries, self.source, self.name, self.corpus_version, self.heldout_split),
        )

    def __repr__(self) -> str:
        # A golden set can hold 100,000 queries: never print them all (pytest shows reprs).
        about = [f"{len(self.queries)} queries"]
        about += [
            f"{key}={value!r}"
            for key, value in (
                ("name", self.name),
                ("source", self.source),
                ("corpus_version", self.corpus_version),
            )
            if value is not None
        ]
        about.append(f"splits={self.splits!r}")
        return f"GoldenSet({', '.join(about)})"

    def __len__(self) -> int:
        return len(self.queries)

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries)

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._by_id

    def __getitem__(self, query_id: QueryId) -> Query:
        """The query with this id (``KeyError`` if there is none)."""
        return self._by_id[query_id]

    @property
    def fingerprint(self) -> str:
        """sha256 hex digest of the labels; see :func:`compute_fingerprint`. Computed once."""
        if self._fingerprint is None:
            object.__setattr__(self, "_fingerprint", compute_fingerprint(self.queries))
        assert self._fingerprint is not None
        return self._fingerprint

    @property
    def short_fingerprint(self) -> str:
        """The first 12 hex characters of :attr:`fingerprint`, for display."""
        return self.fingerprint[:12]

    @property
    def slices(self) -> tuple[str, ...]:
        """Every slice name used by at least one query, sorted."""
        return tuple(sorted({name for q in self.queries for name in q.slices}))

    @property
    def splits(self) -> tuple[str, ...]:
        """Every split name used by at least one query, sorted."""
        return tuple(sorted({q.split for q in self.queries}))

    @property
    def context_keys(self) -> tuple[str, ...]:
        """Every key some query's context has, sorted (empty when no query has a context)."""
        return tuple(sorted({key for q in self.queries for key in q.context}))

    def context_values(self, key: str) -> tuple[str, ...]:
        """Every value some query's ``context[key]`` answers a context slice to
        (:func:`~.context.slice_values`), sorted: what ``slice=KEY:*`` expands to."""
        found = {v for q in self.queries if key in q.context for v in slice_values(q.context[key])}
        return tuple(sorted(found))

    def slice_problem(self, name: str) -> tuple[str, str] | None:
        """``(message, fix)`` when ``name`` selects nothing this set can score: a slice no query
        is tagged with, or a context slice (``tenant:acme``, ``tenant:*``) whose key no query's
        context has, or whose value none answers (the fix names the keys or values present);
        None when it selects (``*``, every slice, always does)."""
        if name == "*":
            return None
        try:
            wanted = context_slice(name)
        except ValueError as exc:
            return str(exc), CONTEXT_SLICE_FIX
        if wanted is None:
            if name in self.slices:
                return None
            return (
                f"unknown slice {name!r}",
                f"the golden set has: {', '.join(self.slices) or 'no slices'}",
            )
        key, value = wanted
        if key not in self.context_keys:
            present = ", ".join(self.context_keys)
            return (
                f"slice {name!r}: no query's context has the key {key!r}",
                f"the contexts' keys are {present}" if present else "no query has a context",
            )
        values = self.context_values(key)
        if not values:
            return (
                f"slice {name!r}: context.{key} holds no text, number or list of them to slice by",
                "slice by a key whose values are text, numbers or lists of them",
            )
        if value != EVERY_VALUE and value not in values:
            return (
                f"slice {name!r}: no query's context.{key} is {value!r}",
                f"its values are {', '.join(values)}",
            )
        return None

    def _subset(self, queries: Iterable[Query]) -> GoldenSet:
        return GoldenSet._from_checked(
            tuple(queries),
            source=self.source,
            name=self.name,
            corpus_version=self.corpus_version,
            heldout_split=self.heldout_split,
        )

    def where(self, predicate: Callable[[Query], bool]) -> GoldenSet:
        """The queries for which ``predicate`` is true, in file order (possibly none)."""
        return self._subset(q for q in self.queries if predicate(q))

    def in_split(self, split: str) -> GoldenSet:
        """The queries of one split, in file order (possibly none). Has its own fingerprint."""
        return self._subset(q for q in self.queries if q.split == split)

    def in_slice(self, name: str) -> GoldenSet:
        """The queries tagged with slice ``name``, in file order (possibly none)."""
        return self._subset(q for q in self.queries if name in q.slices)

    def heldout(self) -> GoldenSet:
        """The queries of the held-out split (:attr:`heldout_split`)."""
        return self.in_split(self.heldout_split)

    def qrels(self) -> dict[QueryId, dict[DocId, int]]:
        """``{query id: {doc id: grade}}`` for every query, no-answer queries included (``{}``).

        Fresh dicts: the caller may modify them.
        """
        return {q.id: dict(q.judgments) for q in self.queries}

    def texts(self) -> dict[QueryId, str]:
        """``{query id: text}`` in file order, skipping queries without text (TREC qrels)."""
        return {q.id: q.text for q in self.queries if q.text is not None}


def join_golden_sets(sets: Sequence[GoldenSet], *, heldout_split: str) -> GoldenSet:
    """One golden set from several (in order); query ids must stay unique across them.

    The name and corpus version are the first set's; the source lists every file.
    """
    if len(sets) == 1:
        return sets[0]
    return GoldenSet(
        tuple(q for s in sets for q in s),
        source=", ".join(str(s.source) for s in sets),
        name=sets[0].name,
        corpus_version=sets[0].corpus_version,
        heldout_split=heldout_split,
    )
