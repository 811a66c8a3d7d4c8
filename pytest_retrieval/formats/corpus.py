"""Corpus files: the doc ids a golden set's judgments must exist in (the stale-id check)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from ..errors import GoldenSetError, Problem
from ..golden import CorpusSpec, GoldenSet, Query


def read_corpus_ids(corpus: CorpusSpec) -> frozenset[str]:
    """The doc ids of a corpus.

    ``corpus`` is a path to a BEIR folder (its ``corpus.jsonl`` is read), a ``.jsonl`` file with
    one JSON object per line (``_id`` as in BEIR, or ``id``), or any other file with one id per
    line (blank lines skipped, surrounding white space ignored); or an iterable of ids from
    code. Unreadable files raise :class:`~pytest_retrieval.errors.GoldenSetError`.
    """
    if not isinstance(corpus, (str, os.PathLike)):
        return frozenset(str(doc) for doc in corpus)
    source = os.fspath(corpus)
    if os.path.isdir(source):
        source = os.path.join(source, "corpus.jsonl")
    is_jsonl = source.lower().endswith((".jsonl", ".ndjson"))
    ids: set[str] = set()
    problems: list[Problem] = []
    try:
        with open(source, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                if not is_jsonl:
                    ids.add(line.strip())
                    continue
                doc_id = _jsonl_doc_id(line)
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
                    ids.add(doc_id)
    except FileNotFoundError:
        problems.append(Problem("corpus file not found", "check the path", source=source))
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(f"is not valid UTF-8 ({exc.reason})", "save it as UTF-8", source=source)
        )
    except OSError as exc:
        problems.append(Problem(f"cannot read the corpus: {exc.strerror}", source=source))
    if problems:
        raise GoldenSetError(problems, title=f"{source}: cannot read corpus ids")
    return frozenset(ids)


def _jsonl_doc_id(line: str) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    doc_id = record.get("_id", record.get("id"))
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        return None
    return str(doc_id)


_LISTED_STALE_IDS = 10


def corpus_problems(
    queries: Sequence[Query],
    known: frozenset[str],
    *,
    source: str | None,
    lines: Sequence[int | None] | None,
    corpus_version: str | None,
) -> list[Problem]:
    version = f" (labelled for corpus_version {corpus_version!r})" if corpus_version else ""
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
                "or check that the corpus matches the index build",
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
    )
    if problems:
        raise GoldenSetError(
            problems,
            title=f"{golden.source or 'golden set'}: {len(problems)} query(ies) judge doc ids "
            "missing from the corpus",
        )
