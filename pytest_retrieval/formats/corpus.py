"""Corpus files (``retrieval_corpus``, ``--corpus``): THE reader, and the stale-id check.

:func:`read_corpus` is the one reader of a corpus file: every use of one reads it through it
(the stale-id check's ids, :func:`read_corpus_ids`; the texts duplicate groups are computed
from, :func:`read_corpus_texts`; the worksheet's context columns, ``golden pool --corpus``).
A corpus is a BEIR folder (its ``corpus.jsonl``), a ``.jsonl`` file of one JSON object per
line (``_id`` as in BEIR, or ``id``; ``title`` and ``text``), or any other file of one id per
line (blank lines skipped, surrounding white space ignored; an id may be followed by a tab and
the document's text).

A ``.jsonl`` document may carry access metadata (:func:`read_access_rules`, the rules of
:mod:`pytest_retrieval.golden.access`): ``tenant`` (a string), ``groups`` (a list of strings),
``superseded_by`` (the id of the document that replaces it, which must be in the corpus) and
``status`` (``retired`` makes it stale), at the top level of the line or under its
``metadata`` object (BEIR's). A value of the wrong type is a problem of its line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import GoldenSetError, Problem
from ..golden.access import AccessRules, DocumentAccess
from ..golden.model import CorpusSpec, GoldenSet, Query
from ..text import plural


@dataclass(frozen=True, slots=True)
class CorpusDocument:
    """One document of a corpus file: its id, and its title and text as written (None: the
    line gives none, or a value that is not a string; a line of the id-per-line form gives its
    text stripped, never a title)."""

    id: str
    title: str | None = None
    text: str | None = None
    #: Its access metadata (tenant, groups, superseded_by, status); None when it has none.
    access: DocumentAccess | None = None

    @property
    def body(self) -> str:
        """The title and the text joined by a space (the text duplicates are computed from)."""
        return " ".join(part for part in (self.title, self.text) if part)


def read_corpus(corpus: str | os.PathLike[str], *, texts: bool = True) -> dict[str, CorpusDocument]:
    """Every document of a corpus file, by id, in file order (a later line with the same id
    replaces the earlier one). ``texts=False`` keeps the ids only (no title or text is held:
    a corpus can be gigabytes).

    Every problem (a missing or unreadable file, a line that is not a document, a corpus with
    no document at all) is reported at once, with its file and line, in one
    :class:`~pytest_retrieval.errors.GoldenSetError`.
    """
    from ..errors import InputError
    from ..reading import load_json, read_lines

    source = os.fspath(corpus)
    if os.path.isdir(source):
        source = os.path.join(source, "corpus.jsonl")
    is_jsonl = source.lower().endswith((".jsonl", ".ndjson"))
    documents: dict[str, CorpusDocument] = {}
    problems: list[Problem] = []
    try:
        # The one safe reader, line by line: a corpus can be gigabytes.
        for number, line in read_lines(source, what="corpus"):
            if not line.strip():
                continue
            if not is_jsonl:
                doc, _tab, text = line.strip().partition("\t")
                body = (text.strip() or None) if texts else None
                documents[doc.strip()] = CorpusDocument(doc.strip(), None, body)
                continue
            try:
                record = load_json(
                    line, source=source, what="corpus", expected=_CORPUS_LINE, line=number
                )
            except InputError as exc:
                problems.extend(exc.problems)
                continue
            found = _jsonl_doc(record, texts=texts)
            if found is not None and isinstance(record, dict):
                access, bad = _access(record)
                for message in bad:
                    problems.append(
                        Problem(
                            message,
                            "write tenant: a string, groups: a list of strings, "
                            "superseded_by: a doc id, status: a string such as retired",
                            source=source,
                            line=number,
                        )
                    )
                if access is not None:
                    found = CorpusDocument(found.id, found.title, found.text, access)
            if found is None:
                problems.append(
                    Problem(
                        "not a JSON object with an '_id' (or 'id') string",
                        "write one document per line, as in BEIR's corpus.jsonl",
                        source=source,
                        line=number,
                    )
                )
            else:
                documents[found.id] = found
    except FileNotFoundError:
        problems.append(Problem("corpus file not found", "check the path", source=source))
    except InputError as exc:
        problems.extend(exc.problems)
    if not documents and not problems:  # every judged id would be "not in the corpus"
        problems.append(
            Problem(
                "the corpus holds no document id",
                "check that it is the corpus file: one id per line, or BEIR's corpus.jsonl",
                source=source,
            )
        )
    if problems:
        raise GoldenSetError(problems, title=f"{source}: cannot read corpus ids")
    return documents


def read_corpus_ids(corpus: CorpusSpec) -> frozenset[str]:
    """The doc ids of a corpus: a corpus file (:func:`read_corpus`), or an iterable of ids
    from code. Unreadable files raise :class:`~pytest_retrieval.errors.GoldenSetError`.
    """
    if not isinstance(corpus, (str, os.PathLike)):
        return frozenset(str(doc) for doc in corpus)
    return frozenset(read_corpus(corpus, texts=False))


def read_corpus_texts(corpus: str | os.PathLike[str]) -> dict[str, str]:
    """``{doc id: text}`` of a corpus file, for computing duplicate groups.

    A BEIR ``corpus.jsonl`` (or its folder) gives ``title`` and ``text`` joined by a space; any
    other file gives, per line, the text after the id and a tab. A corpus without texts (a file
    of bare ids) raises :class:`~pytest_retrieval.errors.GoldenSetError` saying so.
    """
    texts = {doc: found.body for doc, found in read_corpus(corpus).items()}
    if texts and not any(texts.values()):
        source = os.fspath(corpus)
        raise GoldenSetError(
            [
                Problem(
                    "the corpus holds ids but no texts, so duplicates cannot be computed from it",
                    "give a BEIR corpus.jsonl (title, text) or one `id<TAB>text` line per "
                    "document, or declare the groups with retrieval_duplicates = PATH",
                    source=source,
                )
            ],
            title=f"{source}: no document texts",
        )
    return texts


_ACCESS_KEYS = ("tenant", "groups", "superseded_by", "status")


def _access(record: dict[str, object]) -> tuple[DocumentAccess | None, list[str]]:
    """A corpus line's access metadata (top level, else its ``metadata`` object) and the
    problems of its values."""
    meta = record.get("metadata")
    values = {key: record[key] for key in _ACCESS_KEYS if key in record}
    if isinstance(meta, dict):
        for key in _ACCESS_KEYS:
            if key in meta and key not in values:
                values[key] = meta[key]
    values = {key: value for key, value in values.items() if value is not None}
    if not values:
        return None, []
    problems: list[str] = []
    strings: dict[str, str | None] = {}
    for key in ("tenant", "superseded_by", "status"):
        value = values.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            problems.append(f"{key!r} must be a non-blank string, got {value!r}")
            value = None
        strings[key] = value if isinstance(value, str) else None
    groups = values.get("groups", [])
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
        problems.append(f"'groups' must be a list of group names, got {groups!r}")
        groups = []
    access = DocumentAccess(
        strings["tenant"], tuple(groups), strings["superseded_by"], strings["status"]
    )
    return access, problems


def read_access_rules(corpus: str | os.PathLike[str]) -> AccessRules:
    """The access metadata of a corpus file (:class:`~pytest_retrieval.golden.access.
    AccessRules`), read by :func:`read_corpus`; a ``superseded_by`` naming a document that is
    not in the corpus is refused (the replacement must exist to be the current one)."""
    documents = read_corpus(corpus, texts=False)
    source = os.fspath(corpus)
    rules = {doc: found.access for doc, found in documents.items() if found.access is not None}
    missing = [
        Problem(
            f"{doc!r} is superseded by {access.superseded_by!r}, which is not in the corpus",
            "give the id of the document that replaces it",
            source=source,
        )
        for doc, access in rules.items()
        if access.superseded_by is not None and access.superseded_by not in documents
    ]
    if missing:
        raise GoldenSetError(missing, title=f"{source}: unknown replacement documents")
    return AccessRules(rules, source)


_CORPUS_LINE = 'one document per line, as in BEIR\'s corpus.jsonl: {"_id": ..., "text": ...}'


def _jsonl_doc(record: object, *, texts: bool) -> CorpusDocument | None:
    if not isinstance(record, dict):
        return None
    doc_id = record.get("_id", record.get("id"))
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        return None
    if not texts:
        return CorpusDocument(str(doc_id))
    title, text = record.get("title"), record.get("text")
    return CorpusDocument(
        str(doc_id),
        title if isinstance(title, str) else None,
        text if isinstance(text, str) else None,
    )


_LISTED_STALE_IDS = 10


def corpus_problems(
    queries: Sequence[Query],
    known: frozenset[str],
    *,
    source: str | None,
    lines: Sequence[int | None] | None,
    corpus_version: str | None,
    corpus: str | None = None,
) -> list[Problem]:
    """One problem per query judging doc ids missing from ``known`` (the ids of the corpus
    file ``corpus``, named in the fix when given), and one per query listing ``forbidden`` ids
    missing from it (a typo would never be retrieved, so it would forbid nothing), each with
    the closest corpus id when there is one."""
    version = f" (labelled for corpus_version {corpus_version!r})" if corpus_version else ""
    named = f" ({corpus})" if corpus else ""
    problems: list[Problem] = []
    for index, query in enumerate(queries):
        line = lines[index] if lines is not None else None
        unknown = [doc for doc in query.forbidden if doc not in known]
        if unknown:
            problems.append(_unknown_forbidden(query, unknown, known, named, source, line))
        stale = [doc for doc in query.judgments if doc not in known]
        if not stale:
            continue
        shown = ", ".join(repr(doc) for doc in stale[:_LISTED_STALE_IDS])
        if len(stale) > _LISTED_STALE_IDS:
            shown += f" and {len(stale) - _LISTED_STALE_IDS} more"
        problems.append(
            Problem(
                f"{len(stale)} judged doc id(s) not in the corpus{version}: {shown}",
                "the documents were removed or given new ids since labelling: re-label them, "
                f"or check that the corpus{named} matches the index build",
                source=source,
                line=line,
                query_id=query.id,
                field="relevant",
            )
        )
    return problems


def _unknown_forbidden(
    query: Query,
    unknown: Sequence[str],
    known: frozenset[str],
    named: str,
    source: str | None,
    line: int | None,
) -> Problem:
    """The problem of ``query``'s forbidden ids that no corpus document has, each shown with
    the closest corpus id (difflib, only on this error path: a corpus can be large)."""
    import difflib

    shown = []
    for doc in unknown[:_LISTED_STALE_IDS]:
        close = difflib.get_close_matches(doc, known, n=1, cutoff=0.8)
        shown.append(f"{doc!r} (did you mean {close[0]!r}?)" if close else repr(doc))
    more = (
        f" and {len(unknown) - _LISTED_STALE_IDS} more" if len(unknown) > _LISTED_STALE_IDS else ""
    )
    return Problem(
        f"{len(unknown)} forbidden doc id(s) not in the corpus{named}: {', '.join(shown)}{more}",
        "a forbidden id no document has is never retrieved, so it forbids nothing: fix its "
        "spelling, or drop it if the document was removed",
        source=source,
        line=line,
        query_id=query.id,
        field="forbidden",
    )


def check_corpus(golden: GoldenSet, corpus: CorpusSpec) -> None:
    """Raise :class:`~pytest_retrieval.errors.GoldenSetError` if a judged doc id is not in
    ``corpus`` (any form :func:`read_corpus_ids` accepts), listing the stale ids per query
    (forbidden ids too).

    Every judged id counts, grade 0 included.
    """
    problems = corpus_problems(
        golden.queries,
        read_corpus_ids(corpus),
        source=golden.source,
        lines=None,
        corpus_version=golden.corpus_version,
        corpus=os.fspath(corpus) if isinstance(corpus, (str, os.PathLike)) else None,
    )
    if problems:
        raise GoldenSetError(
            problems,
            title=f"{golden.source or 'golden set'}: {plural(len(problems), 'query', 'queries')} "
            f"{'judges' if len(problems) == 1 else 'judge'} doc ids missing from the corpus",
        )
