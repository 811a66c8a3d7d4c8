"""Filling judgment holes: pooling runs into a worksheet, and merging graded rows back.

**Pooling** (as TREC builds its judgments): for every query of the golden set outside the
held-out split (inside it too with ``include_heldout``), the documents ranked in the top
``depth`` of any given run that the query has no judgment for, each once. Rows are grouped by
query (golden-set order); within a query the documents most runs surfaced come first, then the
best-ranked, then by doc id, so a labeller who stops early has judged what matters most.

**Merging**: the graded rows become judgments, each with its provenance (who or what labelled
it, and when). Blank grades are skipped and counted. A row naming a query the golden set does
not have, or contradicting an existing judgment (or another row), is a problem; every problem
is reported at once and nothing is merged, unless ``overwrite`` lets the worksheet's grade win
over an existing judgment. The result is a new :class:`~pytest_retrieval.golden.model.GoldenSet`
(a new fingerprint when any judgment changed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InputError, Problem
from ..golden.context import thaw_context
from ..golden.model import MACHINE_PREFIX, MAX_GRADE, GoldenSet, Label, Query
from .worksheet import WorksheetRow, surfaced

#: ``prefill(query_id, query_text, doc_id, doc_title, doc_text) -> grade or None``.
Prefill = Callable[[str, str | None, str, str | None, str | None], int | None]


@dataclass(frozen=True, slots=True)
class Pool:
    """What :func:`pool` found."""

    rows: tuple[WorksheetRow, ...]
    #: Queries of the runs that the golden set does not have (ignored).
    unknown_queries: tuple[str, ...]
    #: Held-out queries left out (``include_heldout`` not set).
    heldout_left_out: int
    #: Queries with at least one row.
    queries: int


def pool(
    golden: GoldenSet,
    runs: Sequence[tuple[str, Mapping[str, Sequence[str]]]],
    *,
    depth: int,
    include_heldout: bool = False,
    corpus: Mapping[str, tuple[str | None, str | None]] | None = None,
    prefill: Prefill | None = None,
    prefill_name: str | None = None,
) -> Pool:
    """The unjudged documents in the top ``depth`` of any run (see the module docstring).

    ``runs`` is ``[(name, {query id: ranking})]``. ``corpus`` adds each document's title and
    text. ``prefill`` proposes a grade per row (its rows carry ``labeled_by =
    machine:<prefill_name>``); it may return None to leave a row blank.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    heldout = golden.heldout_split
    unknown = sorted({qid for _name, run in runs for qid in run if qid not in golden})
    rows: list[WorksheetRow] = []
    left_out = 0
    queries = 0
    for query in golden:
        if query.split == heldout and not include_heldout:
            if any(query.id in run for _name, run in runs):
                left_out += 1
            continue
        found: dict[str, list[tuple[str, int]]] = {}
        for name, run in runs:
            seen: set[str] = set()
            for rank, doc in enumerate(run.get(query.id, ())[:depth], start=1):
                if doc in query.judgments or doc in seen:
                    continue
                seen.add(doc)
                found.setdefault(doc, []).append((name, rank))
        if not found:
            continue
        queries += 1
        ordered = sorted(
            found.items(), key=lambda item: (-len(item[1]), min(r for _n, r in item[1]), item[0])
        )
        for doc, where in ordered:
            title, text = (corpus or {}).get(doc, (None, None))
            grade: int | None = None
            labeled_by: str | None = None
            if prefill is not None:
                grade = _prefilled(prefill, prefill_name, query, doc, title, text)
                labeled_by = f"{MACHINE_PREFIX}{prefill_name}" if grade is not None else None
            rows.append(
                WorksheetRow(
                    query_id=query.id,
                    doc_id=doc,
                    grade=grade,
                    labeled_by=labeled_by,
                    query=query.text,
                    title=title,
                    text=text,
                    surfaced_by=surfaced(where),
                )
            )
    return Pool(tuple(rows), tuple(unknown), left_out, queries)


def _prefilled(
    prefill: Prefill,
    name: str | None,
    query: Query,
    doc: str,
    title: str | None,
    text: str | None,
) -> int | None:
    grade = prefill(query.id, query.text, doc, title, text)
    if grade is None:
        return None
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
        shown = repr(grade) if len(repr(grade)) <= 60 else f"{repr(grade)[:60]}..."
        raise InputError(
            Problem(
                f"--prefill {name} returned {shown} for query {query.id!r}, doc {doc!r}; "
                f"expected an integer grade from 0 to {MAX_GRADE}, or None",
                fix="return a grade such as 0, 1 or 2, or None to leave the row blank",
            )
        )
    return grade


@dataclass(frozen=True, slots=True)
class Merge:
    """What :func:`merge` did."""

    golden: GoldenSet
    #: Judgments added (the document had none) and changed (``overwrite``).
    added: int
    changed: int
    #: Graded rows that agreed with an existing judgment (nothing to do).
    unchanged: int
    #: Rows left blank.
    blank: int
    #: Ids of the queries whose judgments changed, in golden-set order.
    changed_queries: tuple[str, ...]
    #: Judgments made by a machine among those merged.
    machine: int


def merge(
    golden: GoldenSet,
    rows: Sequence[WorksheetRow],
    *,
    labeled_by: str,
    labeled_at: str | None,
    overwrite: bool = False,
    source: str | None = None,
) -> Merge:
    """The golden set with the graded rows added as judgments (see the module docstring).

    A row's own ``labeled_by`` (a machine pre-label) wins over ``labeled_by``. Raises
    :class:`~pytest_retrieval.errors.InputError` listing every problem.
    """
    if not labeled_by.strip():
        raise InputError(Problem("--labeled-by is blank", fix="name who labelled the worksheet"))
    problems: list[Problem] = []
    wanted: dict[str, dict[str, tuple[int, str]]] = {}
    first_line: dict[tuple[str, str], int | None] = {}
    blank = 0
    for row in rows:
        where = {"source": source, "line": row.line, "query_id": row.query_id}
        if row.grade is None:
            blank += 1
            continue
        if row.query_id not in golden:
            problems.append(
                Problem(
                    f"unknown query id (doc {row.doc_id!r})",
                    fix="merge into the golden set the worksheet was pooled from",
                    **where,  # type: ignore[arg-type]
                )
            )
            continue
        by = row.labeled_by or labeled_by
        grades = wanted.setdefault(row.query_id, {})
        earlier = grades.get(row.doc_id)
        if earlier is not None and earlier[0] != row.grade:
            line = first_line[(row.query_id, row.doc_id)]
            problems.append(
                Problem(
                    f"doc {row.doc_id!r} is graded {row.grade} here and {earlier[0]} on line "
                    f"{line}",
                    fix="grade each document once per query",
                    **where,  # type: ignore[arg-type]
                )
            )
            continue
        first_line.setdefault((row.query_id, row.doc_id), row.line)
        grades[row.doc_id] = (row.grade, by)
    for qid, grades in wanted.items():
        judged = golden[qid].judgments
        for doc, (grade, _by) in grades.items():
            if doc in judged and judged[doc] != grade and not overwrite:
                problems.append(
                    Problem(
                        f"doc {doc!r} is graded {grade} in the worksheet but {judged[doc]} in "
                        "the golden set",
                        fix="fix the row, or let the worksheet win with --overwrite",
                        source=source,
                        line=first_line.get((qid, doc)),
                        query_id=qid,
                        field="grade",
                    )
                )
    if problems:
        raise InputError(problems, title=f"{source or 'worksheet'}: nothing merged")
    added = changed = unchanged = machine = 0
    changed_ids: list[str] = []
    queries = []
    for query in golden:
        grades = wanted.get(query.id, {})
        judgments = dict(query.judgments)
        provenance = dict(query.provenance)
        touched = False
        for doc, (grade, by) in grades.items():
            if judgments.get(doc) == grade:
                unchanged += 1
                continue
            if doc in judgments:
                changed += 1
            else:
                added += 1
            judgments[doc] = grade
            label = Label(by, labeled_at)
            provenance[doc] = label
            machine += label.is_machine
            touched = True
        if touched:
            changed_ids.append(query.id)
            query = Query(
                query.id,
                query.text,
                judgments,
                query.slices,
                query.split,
                provenance,
                thaw_context(query.context) or None,  # the labels change, the context stays
            )
        queries.append(query)
    merged = GoldenSet(
        tuple(queries),
        source=golden.source,
        name=golden.name,
        corpus_version=golden.corpus_version,
        heldout_split=golden.heldout_split,
    )
    return Merge(merged, added, changed, unchanged, blank, tuple(changed_ids), machine)


def provenance_counts(golden: GoldenSet) -> dict[str, int]:
    """``{"judgments", "with_provenance", "machine", "human"}`` over the whole golden set."""
    total = sum(len(q.judgments) for q in golden)
    labels = [label for q in golden for label in q.provenance.values()]
    machine = sum(1 for label in labels if label.is_machine)
    return {
        "judgments": total,
        "with_provenance": len(labels),
        "machine": machine,
        "human": len(labels) - machine,
    }
