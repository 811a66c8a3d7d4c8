"""Run files produced elsewhere (a nightly batch job, another tool), to gate instead of calling
the retriever: TREC run files and JSONL.

TREC: ``qid Q0 docid rank score tag``, read exactly as ``pytest-retrieval evaluate`` reads it
(:func:`pytest_retrieval.formats.trec.read_run`): ranked by score descending, ties broken by doc
id descending, the rank column ignored; so gating a TREC run gives evaluate's numbers.

JSONL: one object per line, ``{"query_id": "q1", "ranking": [...]}``. The ranking is in the
order given, best first (scores never reorder it); each item is a doc id (string or integer),
an ``[id, score]`` pair, or an object ``{"id": ..., "score": ...}`` (``score`` optional). Ids
are compared as strings: ``12`` and ``"12"`` are the same document. A query listed twice, or a
document listed twice for one query, is an error naming the lines, as for a TREC run.
Two optional keys carry what the in-process runner records (``pytest-retrieval run`` writes
them): ``"latency_ms"``, the query's latency in milliseconds, and ``"error"``, ``{"stage": ...,
"type": ..., "message": ...}`` when the retriever failed on it (its ranking is then empty). A
third, ``"context_sha256"``, identifies the context the ranking was made for (the sha256 of the
query's canonical context, :func:`~pytest_retrieval.golden.context.context_digest`; the context
itself is never written): a query's context is part of the run-file key, so a ranking made for
another tenant or history than the golden set now gives the query is refused
(:func:`context_mismatches`), never gated as its own. A TREC run, or a JSONL line without the
key, cannot say which context it was made for: it is gated as given.

Which format: ``format=`` when given; else the extension (``.jsonl``/``.ndjson`` JSONL,
``.trec``/``.run``/``.txt``/``.tsv`` TREC); else the content (a first line starting with ``{``
is JSONL).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any, Literal, TextIO

from ..errors import InputError, Problem, RunFileError
from ..files import atomic_write
from ..reading import load_json
from ..text import SURROGATE_FIX, surrogate_problem
from .trec import numbered_lines

RunFormat = Literal["trec", "jsonl"]

_JSONL_SUFFIXES = (".jsonl", ".ndjson")
_TREC_SUFFIXES = (".trec", ".run", ".txt", ".tsv")
_JSONL_SHAPE = '{"query_id": "q1", "ranking": ["doc-1", "doc-2"]}'


@dataclass(frozen=True, slots=True)
class RunFile:
    """A run read from ``source``: per query id (file order), its ranking (doc ids, best first)
    and the scores given for them (one per doc, ``None`` where an item had none)."""

    source: str
    format: RunFormat
    rankings: dict[str, tuple[str, ...]]
    scores: dict[str, tuple[float | None, ...]]
    #: Per query id, the latency (ms) and the error ``(stage, type, message)`` a JSONL run
    #: recorded; absent for the queries (and formats) that have none.
    latency_ms: dict[str, float] = field(default_factory=dict)
    errors: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    #: Per query id, the ``context_sha256`` a JSONL line recorded (the queries that have one).
    contexts: dict[str, str] = field(default_factory=dict)

    def pairs(self, query_id: str) -> list[tuple[str, float | None]]:
        """``[(doc id, score or None), ...]`` of one query, best first."""
        return list(zip(self.rankings[query_id], self.scores[query_id], strict=True))

    def __len__(self) -> int:
        return len(self.rankings)


@dataclass(frozen=True, slots=True)
class RunMatch:
    """A run matched to the judged queries: ``rankings`` has every judged query (in the order
    asked, an empty ranking where the run has none); ``missing`` lists those judged queries
    absent from the run, ``unknown`` the run's query ids that are not judged (file order)."""

    rankings: dict[str, tuple[str, ...]]
    missing: list[str]
    unknown: list[str]


def _format_by_suffix(path: str | os.PathLike[str]) -> RunFormat | None:
    suffix = Path(path).suffix.lower()
    if suffix in _JSONL_SUFFIXES:
        return "jsonl"
    if suffix in _TREC_SUFFIXES:
        return "trec"
    return None


def _format_of(first: str | None) -> RunFormat:
    return "jsonl" if first is not None and first.lstrip().startswith("{") else "trec"


def detect_format(path: str | os.PathLike[str]) -> RunFormat:
    """``jsonl`` or ``trec``, from the extension or else the first non-blank line."""
    by_suffix = _format_by_suffix(path)
    if by_suffix is not None:
        return by_suffix
    lines = numbered_lines(path)
    try:
        first = next(lines, None)
    except RunFileError:
        return "trec"  # the reader reports the bad bytes with their position
    finally:
        lines.close()
    return _format_of(None if first is None else first[1])


def load_run_file(path: str | os.PathLike[str], *, format: RunFormat | None = None) -> RunFile:
    """Read a TREC or JSONL run file (see the module docstring for both formats).

    The file is read once (a pipe such as ``<(command)`` is read once too), through the one
    safe reader (:func:`pytest_retrieval.formats.trec.numbered_lines`). Every problem is
    reported in one :class:`~pytest_retrieval.errors.RunFileError` naming the file and line; a
    file with no query at all is an error too (most likely the wrong file).
    """
    name = os.fspath(path)
    chosen = format or _format_by_suffix(name)
    if chosen not in (None, "trec", "jsonl"):
        raise RunFileError(
            Problem(f"unknown run format {chosen!r}", fix="use trec or jsonl", source=name)
        )
    lines: Iterator[tuple[int, str]] = numbered_lines(name)
    if chosen is None:  # the content tells: the first non-blank line
        first = next(lines, None)
        chosen = _format_of(None if first is None else first[1])
        lines = itertools.chain([] if first is None else [first], lines)
    run = _load_trec(lines, name) if chosen == "trec" else _load_jsonl(lines, name)
    if not run.rankings:
        raise RunFileError(
            Problem(
                f"the run file has no ranked query ({chosen} format)",
                fix=(
                    "write one line per ranked document (qid Q0 docid rank score tag)"
                    if chosen == "trec"
                    else f"write one line per query: {_JSONL_SHAPE}"
                ),
                source=name,
            )
        )
    return run


def _load_trec(lines: Iterable[tuple[int, str]], name: str) -> RunFile:
    from .trec import scored_rows

    # The order and checks of evaluate's reader (read_run), with the scores it parsed.
    rows = scored_rows(lines, name)
    return RunFile(
        source=name,
        format="trec",
        rankings={qid: tuple(doc for _score, doc in docs) for qid, docs in rows.items()},
        scores={qid: tuple(score for score, _doc in docs) for qid, docs in rows.items()},
    )


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (not isinstance(value, bool) and isinstance(value, Integral))


def _is_score(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not math.isnan(float(value))
    )


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _item(raw: Any) -> tuple[str, float | None] | str:
    """``(doc id, score)`` of one ranking item, or a message saying what is wrong with it."""
    doc: Any
    score: Any = None
    if _is_id(raw):
        doc = raw
    elif isinstance(raw, list):
        if len(raw) != 2:
            return f"{_describe(raw)} is a list of {len(raw)} values, expected [id, score]"
        doc, score = raw
    elif isinstance(raw, dict):
        if "id" not in raw:
            return f'{_describe(raw)} has no "id"'
        unexpected = sorted(set(raw) - {"id", "score"})
        if unexpected:
            return f"{_describe(raw)} has the unexpected key(s) {', '.join(unexpected)}"
        doc, score = raw["id"], raw.get("score")
    else:
        return f"{_describe(raw)} is not a doc id, an [id, score] pair or an object with an id"
    if not _is_id(doc):
        return f"the id {_describe(doc)} is not a string or an integer"
    if doc == "":
        return "an id is empty"
    if isinstance(doc, str) and (bad := surrogate_problem(doc, "the doc id")) is not None:
        # A JSON "\ud800": no judged id can hold it (the golden set's rule), so the document
        # would be a silent miss, and a worksheet would write it back as other text.
        return f"{bad} ({SURROGATE_FIX})"
    if score is not None and not _is_score(score):
        return f"the score {_describe(score)} of {_describe(doc)} is not a number"
    return str(doc), None if score is None else float(score)


def _load_jsonl(lines: Iterable[tuple[int, str]], name: str) -> RunFile:
    rankings: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float | None, ...]] = {}
    latency: dict[str, float] = {}
    errors: dict[str, tuple[str, str, str]] = {}
    contexts: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems: list[Problem] = []

    def problem(message: str, number: int, fix: str, query_id: str | None = None) -> None:
        problems.append(Problem(message, fix=fix, source=name, line=number, query_id=query_id))

    for number, line in lines:
        try:
            record = load_json(
                line,
                source=name,
                what="run file",
                expected=f"one JSON object per line: {_JSONL_SHAPE}",
                line=number,
            )
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if not isinstance(record, dict):
            problem(
                f"expected a JSON object, found {_describe(record)}",
                number,
                f"write one JSON object per line: {_JSONL_SHAPE}",
            )
            continue
        raw_qid = record.get("query_id")
        if raw_qid is None or not _is_id(raw_qid) or raw_qid == "":
            found = 'no "query_id"' if raw_qid is None else f"query_id {_describe(raw_qid)}"
            problem(
                f"{found}; expected a query id (a non-empty string or an integer)",
                number,
                "give each line the id of its golden-set query",
            )
            continue
        qid = str(raw_qid)
        if (not_text := surrogate_problem(qid, "the query id")) is not None:
            problem(not_text, number, SURROGATE_FIX)
            continue
        ranking = record.get("ranking")
        if not isinstance(ranking, list):
            found = 'no "ranking"' if ranking is None else f"ranking {_describe(ranking)}"
            problem(
                f"{found}; expected a list of doc ids, [id, score] pairs or "
                '{"id": ..., "score": ...} objects',
                number,
                f"write e.g. {_JSONL_SHAPE}",
                qid,
            )
            continue
        if qid in first_line:
            problem(
                f"the query is listed twice (lines {first_line[qid]} and {number})",
                number,
                "a run lists each query once",
                qid,
            )
            continue
        docs: list[str] = []
        doc_scores: list[float | None] = []
        seen: dict[str, int] = {}
        bad = False
        for position, raw in enumerate(ranking, start=1):
            item = _item(raw)
            if isinstance(item, str):
                problem(
                    f"ranking item {position}: {item}",
                    number,
                    'write a doc id, [id, score] or {"id": ..., "score": ...}',
                    qid,
                )
                bad = True
                continue
            doc, score = item
            if doc in seen:
                problem(
                    f"doc {doc!r} is listed twice in the ranking (items {seen[doc]} and "
                    f"{position})",
                    number,
                    "a run lists each document at most once per query",
                    qid,
                )
                bad = True
                continue
            seen[doc] = position
            docs.append(doc)
            doc_scores.append(score)
        first_line[qid] = number
        recorded = _recorded(record)
        if isinstance(recorded, str):
            problem(recorded, number, _RECORDED_FIX, qid)
            bad = True
        else:
            if recorded[0] is not None:
                latency[qid] = recorded[0]
            if recorded[1] is not None:
                errors[qid] = recorded[1]
        digest = record.get("context_sha256")
        if digest is not None:
            if isinstance(digest, str) and _SHA256.fullmatch(digest):
                contexts[qid] = digest
            else:
                problem(
                    f"context_sha256 {_describe(digest)} is not a sha256 (64 hex digits)",
                    number,
                    "leave it as pytest-retrieval run wrote it, or drop the key",
                    qid,
                )
                bad = True
        if not bad:
            rankings[qid] = tuple(docs)
            scores[qid] = tuple(doc_scores)
    if problems:
        raise RunFileError(problems, title=f"{name}: cannot read run ({len(problems)} problems)")
    return RunFile(
        source=name,
        format="jsonl",
        rankings=rankings,
        scores=scores,
        latency_ms=latency,
        errors=errors,
        contexts=contexts,
    )


_SHA256 = re.compile(r"[0-9a-f]{64}")

_RECORDED_FIX = (
    'write "latency_ms" as a number of milliseconds and "error" as '
    '{"stage": "retriever", "type": "TimeoutError", "message": "..."}, or leave them out'
)


def _recorded(record: Mapping[str, Any]) -> tuple[float | None, tuple[str, str, str] | None] | str:
    """A line's optional latency and error, or a message saying what is wrong with them."""
    latency = record.get("latency_ms")
    if latency is not None and (not _is_score(latency) or not 0 <= float(latency) < math.inf):
        return f"latency_ms {_describe(latency)} is not a number of milliseconds (finite, >= 0)"
    error = record.get("error")
    if error is None:
        return (None if latency is None else float(latency)), None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return f'error {_describe(error)} is not an object with a "message" string'
    stage, kind = error.get("stage", "retriever"), error.get("type", "Error")
    if not isinstance(stage, str) or not isinstance(kind, str):
        return f'error {_describe(error)}: "stage" and "type" must be strings'
    return (None if latency is None else float(latency)), (stage, kind, error["message"])


def match_run_to_golden(
    run: RunFile | Mapping[str, Sequence[str]], query_ids: Sequence[str]
) -> RunMatch:
    """Line a run up with the judged ``query_ids``: their rankings (empty where the run has
    none: scored as an empty ranking), the ids missing from the run, and the run's unknown ids.

    Query ids are compared as strings, exactly (no case folding or trimming).
    """
    rankings = run.rankings if isinstance(run, RunFile) else run
    judged = dict.fromkeys(query_ids)
    matched = {qid: tuple(rankings.get(qid, ())) for qid in judged}
    missing = [qid for qid in judged if qid not in rankings]
    unknown = [qid for qid in rankings if qid not in judged]
    return RunMatch(matched, missing, unknown)


def context_mismatches(run: RunFile, digests: Mapping[str, str | None]) -> list[str]:
    """The query ids whose ranking in ``run`` was made for another context than the golden set
    gives them now: ``digests`` is each query's
    :func:`~pytest_retrieval.golden.context.context_digest` (None: no context), in the order to
    report. A run that records contexts (``pytest-retrieval run`` writes one for every query that
    has one) and none for a query made that ranking without one; a run that records no context at
    all cannot tell (:func:`unrecorded_contexts`).
    """
    recorded = run.contexts
    return [
        qid
        for qid, digest in digests.items()
        if qid in run.rankings and bool(recorded) and recorded.get(qid) != digest
    ]


def unrecorded_contexts(run: RunFile, digests: Mapping[str, str | None]) -> list[str]:
    """The query ids that have a context while ``run`` records no context at all (a TREC run,
    JSONL written elsewhere or before the golden set had contexts): which context they were
    ranked for cannot be told, so they are gated as given."""
    if run.contexts:
        return []
    return [qid for qid, digest in digests.items() if digest is not None and qid in run.rankings]


def write_run_jsonl(
    path: str | os.PathLike[str],
    rankings: Mapping[str, Sequence[str]],
    scores: Mapping[str, Sequence[float | None] | None] | None = None,
    *,
    latency_ms: Mapping[str, float] | None = None,
    errors: Mapping[str, tuple[str, str, str]] | None = None,
    contexts: Mapping[str, str] | None = None,
) -> None:
    """Write ``{query id: ranking}`` as a JSONL run, atomically (temp file and rename).

    With ``scores`` for a query (one per doc), its items are ``[id, score]`` pairs (an item
    whose score is None is written as a bare id); otherwise bare ids. ``latency_ms`` and
    ``errors`` (``(stage, type, message)``) add those keys to the queries they name, and
    ``contexts`` (``{query id: context digest}``) ``context_sha256``. Reading the file back with
    :func:`load_run_file` gives the same rankings, scores, latencies, errors and contexts.
    """

    def write(out: TextIO) -> None:
        for qid, docs in rankings.items():
            given = None if scores is None else scores.get(qid)
            items: list[Any]
            if given is None:
                items = [str(doc) for doc in docs]
            else:
                if len(given) != len(docs):
                    raise ValueError(
                        f"query {qid!r}: {len(given)} scores for {len(docs)} documents"
                    )
                items = [
                    str(doc) if score is None else [str(doc), score]
                    for doc, score in zip(docs, given, strict=True)
                ]
            record: dict[str, Any] = {"query_id": str(qid), "ranking": items}
            if latency_ms is not None and qid in latency_ms:
                record["latency_ms"] = latency_ms[qid]
            if errors is not None and qid in errors:
                stage, kind, message = errors[qid]
                record["error"] = {"stage": stage, "type": kind, "message": message}
            if contexts is not None and qid in contexts:
                record["context_sha256"] = contexts[qid]
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
            out.write("\n")

    atomic_write(path, write, what="run file")
