"""Corpus files: the doc ids a golden set's judgments must exist in (the stale-id check)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import GoldenSetError, Problem
from ..golden import CorpusSpec, GoldenSet, Query


def read_corpus_ids(corpus: CorpusSpec) -> frozenset[str]:
    """The doc ids of a corpus.

    ``corpus`` is a path to a BEIR folder (its ``corpus.jsonl`` is read), a ``.jsonl`` file with
    one JSON object per line (``_id`` as in BEIR, or ``id``), or any other file with one id per
    line (blank lines skipped, surrounding white space ignored; an id may be followed by a tab
    and the document's text); or an iterable of ids from code. Unreadable files raise
    :class:`~pytest_retrieval.errors.GoldenSetError`.
    """
    if not isinstance(corpus, (str, os.PathLike)):
        return frozenset(str(doc) for doc in corpus)
    return frozenset(_read_corpus(corpus, texts=False))


def read_corpus_texts(corpus: str | os.PathLike[str]) -> dict[str, str]:
    """``{doc id: text}`` of a corpus file, for computing duplicate groups.

    A BEIR ``corpus.jsonl`` (or its folder) gives ``title`` and ``text`` joined by a space; any
    other file gives, per line, the text after the id and a tab. A corpus without texts (a file
    of bare ids) raises :class:`~pytest_retrieval.errors.GoldenSetError` saying so.
    """
    texts = _read_corpus(corpus, texts=True)
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


_CORPUS_LINE = 'one document per line, as in BEIR\'s corpus.jsonl: {"_id": ..., "text": ...}'


def _read_corpus(corpus: str | os.PathLike[str], *, texts: bool) -> dict[str, str]:
    from ..errors import InputError
    from ..reading import load_json, read_lines

    source = os.fspath(corpus)
    if os.path.isdir(source):
        source = os.path.join(source, "corpus.jsonl")
    is_jsonl = source.lower().endswith((".jsonl", ".ndjson"))
    ids: dict[str, str] = {}
    problems: list[Problem] = []
    try:
        # The one safe reader, line by line: a corpus can be gigabytes.
        for number, line in read_lines(source, what="corpus"):
            if not line.strip():
                continue
            if not is_jsonl:
                doc, _tab, text = line.strip().partition("\t")
                ids[doc.strip()] = text.strip()
                continue
            try:
                record = load_json(
                    line, source=source, what="corpus", expected=_CORPUS_LINE, line=number
                )
            except InputError as exc:
                problems.extend(exc.problems)
                continue
            doc_id, text = _jsonl_doc(record, texts=texts)
            if doc_id is None:
                problems.append(
                    Problem(
                        "not a JSON object with an '_id' (or 'id') string",
                        "write one document per line, as in BEIR's corpus.jsonl",
                        source=source,
                        line=number,
                    )
                )
            else:
                ids[doc_id] = text
    except FileNotFoundError:
        problems.append(Problem("corpus file not found", "check the path", source=source))
    except InputError as exc:
        problems.extend(exc.problems)
    if not ids and not problems:  # every judged id would be "not in the corpus"
        problems.append(
            Problem(
                "the corpus holds no document id",
                "check that it is the corpus file: one id per line, or BEIR's corpus.jsonl",
                source=source,
            )
        )
    if problems:
        raise GoldenSetError(problems, title=f"{source}: cannot read corpus ids")
    return ids


def _jsonl_doc(record: object, *, texts: bool) -> tuple[str | None, str]:
    if not isinstance(record, dict):
        return None, ""
    doc_id = record.get("_id", record.get("id"))
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        return None, ""
    if not texts:
        return str(doc_id), ""
    parts = [record.get("title"), record.get("text")]
    return str(doc_id), " ".join(p for p in parts if isinstance(p, str) and p)


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
    file ``corpus``, named in the fix when given)."""
    version = f" (labelled for corpus_version {corpus_version!r})" if corpus_version else ""
    named = f" ({corpus})" if corpus else ""
    problems: list[Problem] = []
    for index, query in enumerate(queries):
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
                line=lines[index] if lines is not None else None,
                query_id=query.id,
                field="relevant",
            )
        )
    return problems


def check_corpus(golden: GoldenSet, corpus: CorpusSpec) -> None:
    """Raise :class:`~pytest_retrieval.errors.GoldenSetError` if a judged doc id is not in
    ``corpus`` (any form :func:`read_corpus_ids` accepts), listing the stale ids per query.

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
            title=f"{golden.source or 'golden set'}: {len(problems)} query(ies) judge doc ids "
            "missing from the corpus",
        )
