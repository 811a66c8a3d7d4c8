"""Reading and writing golden sets in every supported format: the one dispatch.

:func:`load_golden` reads every supported format (canonical YAML, JSON, JSONL, CSV, TREC qrels
with optional topics, a BEIR folder) and reports *all* problems it finds in one
:class:`~pytest_retrieval.errors.GoldenSetError`; :func:`write_golden` writes YAML, JSON or JSONL.
Nothing heavy (yaml, csv readers) is imported until a file is actually read, because the pytest
plugin imports this module.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import GoldenSetError, InputError, Problem
from ..golden.leakage import set_problems
from ..golden.model import (
    DEFAULT_HELDOUT_SPLIT,
    PLAIN_NAME_FIX,
    CorpusSpec,
    GoldenSet,
    is_plain_name,
    join_golden_sets,
)
from ..reading import exists
from ..text import plural
from .corpus import corpus_problems, read_corpus_ids

if TYPE_CHECKING:
    from .golden_parsed import Parsed

#: Format names :func:`load_golden` accepts.
READ_FORMATS = ("yaml", "json", "jsonl", "csv", "trec", "beir")
#: Format names :func:`write_golden` accepts.
WRITE_FORMATS = ("yaml", "json", "jsonl")

_SUFFIX_FORMATS = {
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "csv",
    ".qrels": "trec",
}


def infer_format(path: str | os.PathLike[str]) -> str:
    """The format name for ``path``: a folder is ``beir`` (unless its name ends in one of the
    suffixes below: then it is that format's file, refused as a directory); otherwise by suffix.

    ``.yaml``/``.yml``, ``.json``, ``.jsonl``/``.ndjson``, ``.csv``/``.tsv``, and ``.qrels`` or a
    file name starting with ``qrels`` (``qrels.test``, ``qrels.txt``) for TREC. Raises
    :class:`~pytest_retrieval.errors.GoldenSetError` if it cannot tell.
    """
    p = Path(path)
    if p.is_dir() and p.suffix.lower() not in _SUFFIX_FORMATS:
        # golden.yaml made a folder by mistake is read as YAML, and refused as a directory.
        return "beir"
    fmt = _SUFFIX_FORMATS.get(p.suffix.lower())
    if fmt is None and p.name.lower().startswith("qrels"):
        fmt = "trec"
    if fmt is None:
        raise GoldenSetError(
            Problem(
                "cannot tell the golden-set format from the file name",
                f"use a known suffix (.yaml, .json, .jsonl, .csv, .tsv, .qrels) or pass the "
                f"format explicitly (one of {', '.join(READ_FORMATS)})",
                source=os.fspath(path),
            )
        )
    return fmt


def _read(fmt: str, source: str, topics: str | None) -> Parsed:
    if fmt in ("yaml", "json", "jsonl"):
        from . import golden_files

        return golden_files.read(source, fmt)
    if fmt == "csv":
        from . import golden_csv

        return golden_csv.read_csv(source)
    if fmt == "trec":
        from . import golden_trec

        return golden_trec.read_trec(source, topics=topics)
    from . import golden_beir

    return golden_beir.read_beir(source)


def load_golden(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    corpus: CorpusSpec | None = None,
    heldout_split: str = DEFAULT_HELDOUT_SPLIT,
    topics: str | os.PathLike[str] | None = None,
) -> GoldenSet:
    """Read and validate a golden set.

    ``format`` is one of :data:`READ_FORMATS`, inferred from ``path`` when omitted (see
    :func:`infer_format`). ``topics`` gives query texts for TREC qrels (a TSV ``qid<TAB>text``
    or a TREC topics file). ``corpus`` (a file of ids, a BEIR ``corpus.jsonl`` or folder, or an
    iterable of doc ids) turns on the corpus check: every judged doc id must be in it.
    ``heldout_split`` names the held-out split.

    Every problem found (syntax, schema, duplicates, leakage, stale doc ids) is reported in one
    :class:`~pytest_retrieval.errors.GoldenSetError`; no other exception escapes for bad input.
    """
    source = os.fspath(path)
    if not exists(source):  # a symlink loop exists: its reader says so
        raise GoldenSetError(
            Problem("no such file or folder", "check the path", source=source),
            title=f"{source}: cannot load golden set",
        )
    fmt = infer_format(path) if format is None else format
    usage: list[Problem] = []
    if fmt not in READ_FORMATS:
        usage.append(
            Problem(
                f"unknown golden-set format {fmt!r}",
                f"use one of {', '.join(READ_FORMATS)}",
                source=source,
                field="format",
            )
        )
    if topics is not None and fmt != "trec":
        usage.append(
            Problem(
                "a topics file only applies to TREC qrels",
                "drop the topics file, or pass format='trec'",
                source=source,
                field="topics",
            )
        )
    if not is_plain_name(heldout_split):
        usage.append(
            Problem(
                f"held-out split name {heldout_split!r} is not a plain identifier",
                PLAIN_NAME_FIX,
                field="heldout_split",
            )
        )
    if usage:
        raise GoldenSetError(usage, title=f"{source}: cannot load golden set")
    parsed = _read(fmt, source, os.fspath(topics) if topics is not None else None)
    problems = list(parsed.problems)
    line_source = parsed.line_source or source
    problems.extend(set_problems(parsed.entries, source=line_source, lines=parsed.entry_lines))
    if corpus is not None:
        try:
            problems.extend(
                corpus_problems(
                    parsed.queries,
                    read_corpus_ids(corpus),
                    source=line_source,
                    lines=parsed.lines,
                    corpus_version=parsed.corpus_version,
                    corpus=os.fspath(corpus) if isinstance(corpus, (str, os.PathLike)) else None,
                )
            )
        except GoldenSetError as exc:
            problems.extend(exc.problems)
    if problems:
        raise GoldenSetError(
            problems, title=f"{source}: golden set has {plural(len(problems), 'problem')}"
        )
    return GoldenSet._from_checked(
        tuple(parsed.queries),
        source=source,
        name=parsed.name,
        corpus_version=parsed.corpus_version,
        heldout_split=heldout_split,
    )


def write_golden(
    golden: GoldenSet,
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
) -> None:
    """Write ``golden`` as canonical YAML, JSON or JSONL (inferred from the suffix).

    Every query is written with its resolved split and slices (no ``defaults``), so reading the
    file back gives an equal set with the same fingerprint. Queries without text (TREC qrels
    read without topics) cannot be written: that raises
    :class:`~pytest_retrieval.errors.GoldenSetError` listing them.
    """
    target = os.fspath(path)
    fmt = format
    if fmt is None:
        fmt = _SUFFIX_FORMATS.get(Path(target).suffix.lower())
    if fmt not in WRITE_FORMATS:
        raise InputError(
            Problem(
                f"cannot write golden sets as {fmt or 'this file type'}",
                f"write one of {', '.join(WRITE_FORMATS)} (.yaml, .json or .jsonl)",
                source=target,
                field="format",
            )
        )
    textless = [
        Problem(
            "query has no text, which the canonical formats require",
            "load the TREC qrels with a topics file that gives every query's text",
            source=golden.source,
            query_id=q.id,
            field="text",
        )
        for q in golden.queries
        if q.text is None
    ]
    if textless:
        raise GoldenSetError(
            textless,
            title=f"cannot write {target}: {plural(len(textless), 'query', 'queries')} "
            "without text",
        )
    from . import golden_files

    golden_files.write(golden, target, fmt)


def load_golden_files(
    paths: Sequence[str | os.PathLike[str]],
    *,
    format: str | None = None,
    corpus: CorpusSpec | None = None,
    heldout_split: str = DEFAULT_HELDOUT_SPLIT,
) -> GoldenSet:
    """Load every file and join them into one golden set (ids must stay unique)."""
    sets = [
        load_golden(path, format=format, corpus=corpus, heldout_split=heldout_split)
        for path in paths
    ]
    return join_golden_sets(sets, heldout_split=heldout_split)
