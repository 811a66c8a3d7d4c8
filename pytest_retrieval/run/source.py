"""Where the run comes from: the retriever (through the retriever-output cache) or run files.

:func:`obtain` is the one place that decides how each scorable query of a run gets its
rankings, and says where they came from (:class:`RunInfo`, which it returns):

* ``retrieval_run`` is set: from the run files (:mod:`.formats.runs`), matched to the golden set;
  the retriever is never called. A judged query the run does not list is scored as an empty
  ranking and listed; a query id the golden set does not know is reported and ignored.
* ``retrieval_cache = off`` (default): the retriever is called for every query.
* ``use``: a query whose every stage has an entry is served from the cache (no call, no
  latency: cached queries are left out of latency percentiles); the others are called and
  their successful answers recorded. ``refresh``: every query is called and every answer
  overwrites its entry. ``replay``: nothing is called; a query without an entry stops the run
  (an :class:`~pytest_retrieval.errors.InputError`, exit status 4 under the plugin).

A query is served from the cache only whole: with a reranker, both stages must have an entry
(the reranker's key holds the candidate ids the cached first stage returned). When only the
reranker's entry is missing, the query is run through both stages again, because the reranker
is handed the retriever's own return values (documents, nodes), which the cache does not keep.

Each retriever call is its own entry, keyed by the depth it asked for: a query asked again
deeper (its chunks collapsed into too few documents, :mod:`.depthplan`) has an entry per
depth. The lookup walks them as the run did: an entry whose collapsed ranking fell short while
its call came back full leads to the entry of the next depth; the first depth without an entry
is where the live call starts.

A damaged or foreign cache file (:class:`~pytest_retrieval.run.store.CacheCorrupt`) is never read as
results: ``use`` warns and runs without the cache, ``refresh`` warns, moves a damaged file of
ours aside (``runs.sqlite3.corrupt``) and starts a new one (another program's file is left as
it is, and the run goes on without the cache), ``replay`` stops. A read-only cache serves its
hits and stores nothing, with one warning saying so.

Running with run files *and* a cache is refused (:func:`load_runs`): a stored run is not the
retriever's output, and caching it would only hide which of the two was gated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from ..settings.resolve import Settings
from .cachekey import (
    CacheEntry,
    CacheKey,
    corpus_fingerprint,
    doc_id_fingerprint,
    request_key,
    retriever_identity,
)
from .retriever import RERANKER_STAGE, RETRIEVER_STAGE, QueryOutcome, QueryRequest
from .retriever.items import RetrieverCall, deeper
from .stages import pipeline_order
from .store import CacheCorrupt, RunCache, cache_file, mode_reads, mode_writes

if TYPE_CHECKING:
    from ..formats.runs import RunFile
    from ..golden.model import Query
    from .depthplan import DepthPlan

#: Computes the outcomes of a list of queries (the live retriever, one outcome per request, in
#: the order given): ``compute(requests)``, or ``compute(requests, on_call)`` where queries may
#: be asked again deeper (``on_call`` then receives every successful retriever call).
Compute = Callable[..., list[QueryOutcome]]

#: ``deepen(asked, returned, documents)``: the depth a query is asked again at, or None
#: (:func:`~pytest_retrieval.run.retriever.items.deeper` with the session's depth plan).
Deepen = Callable[[int, int, int], "int | None"]

#: Runs a list of requests and says where their outcomes came from (one shard's work).
Process = Callable[[Sequence[QueryRequest]], "tuple[list[QueryOutcome], RunInfo]"]

#: Spreads ``requests`` over several processes (xdist workers sharing shards), running
#: ``process`` on this process's part; returns every outcome in order and the merged info. The
#: third argument is the info of a part whose process died (its ``called`` set to the part's
#: size): where the run comes from, without counts.
Distribute = Callable[
    [Sequence[QueryRequest], Process, "RunInfo"], "tuple[list[QueryOutcome], RunInfo]"
]

#: How many query ids a message names before it says "and N more".
_NAMED = 10


@dataclass(frozen=True, slots=True)
class RunInfo:
    """Where this session's run came from, for the summary line and the artifact.

    ``source`` is ``retriever`` or ``run files``. With the cache: its mode and file, how many
    queries were ``cached`` (served whole from the cache), ``called`` (sent to the retriever)
    and how many entries were ``stored``; ``warnings`` says why the cache was not (fully)
    used. With run files: ``run_files`` ``((stage, path), ...)``, per stage the judged queries
    ``missing`` from the run (scored as empty rankings; held-out ones only counted, in
    ``missing_hidden``) and the ``unknown`` query ids the golden set does not have.
    """

    source: str = "retriever"
    cache_mode: str = "off"
    cache_path: str | None = None
    index_version: str | None = None
    cached: int = 0
    called: int = 0
    stored: int = 0
    warnings: tuple[str, ...] = ()
    run_files: tuple[tuple[str, str], ...] = ()
    missing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    missing_hidden: Mapping[str, int] = field(default_factory=dict)
    unknown: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Builtins only (the xdist payload and the JSON artifact)."""
        return {
            "source": self.source,
            "cache": {
                "mode": self.cache_mode,
                "path": self.cache_path,
                "cached": self.cached,
                "called": self.called,
                "stored": self.stored,
                "warnings": list(self.warnings),
            },
            "index_version": self.index_version,
            "run_files": [
                {
                    "stage": stage,
                    "path": path,
                    "missing": list(self.missing.get(stage, ())),
                    "missing_hidden": self.missing_hidden.get(stage, 0),
                    "unknown": list(self.unknown.get(stage, ())),
                }
                for stage, path in self.run_files
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunInfo:
        """Inverse of :meth:`to_dict`."""
        cache = data.get("cache") or {}
        files = list(data.get("run_files") or [])
        return cls(
            source=str(data.get("source", "retriever")),
            cache_mode=str(cache.get("mode", "off")),
            cache_path=cache.get("path"),
            index_version=data.get("index_version"),
            cached=int(cache.get("cached", 0)),
            called=int(cache.get("called", 0)),
            stored=int(cache.get("stored", 0)),
            warnings=tuple(cache.get("warnings", ())),
            run_files=tuple((f["stage"], f["path"]) for f in files),
            missing={f["stage"]: tuple(f.get("missing", ())) for f in files},
            missing_hidden={f["stage"]: int(f.get("missing_hidden", 0)) for f in files},
            unknown={f["stage"]: tuple(f.get("unknown", ())) for f in files},
        )


def merge_infos(infos: Sequence[RunInfo]) -> RunInfo:
    """The info of a run computed in parts (xdist shards): counts summed, warnings once each in
    the order met; the rest is the first part's (every part has the same mode, file and index
    version)."""
    if not infos:
        return RunInfo()
    warnings = tuple(dict.fromkeys(w for info in infos for w in info.warnings))
    return replace(
        infos[0],
        cached=sum(i.cached for i in infos),
        called=sum(i.called for i in infos),
        stored=sum(i.stored for i in infos),
        warnings=warnings,
    )


@dataclass
class Sharded:
    """A :data:`Distribute` over xdist workers: shards claimed from one SQLite file in ``base``
    (a folder every worker of the session shares), named after the session's run id ``uid``
    (see :mod:`.shards`). ``key`` names what else the workers must agree on (mode, depth);
    ``worker`` is this worker's name (``gw0``), said of its shard if it dies.

    After a call, ``last`` is True in exactly one of the workers sharing the run (the one that
    completed its last shard): what runs once per session after the run (the determinism
    probe) runs there.
    """

    base: Path
    uid: str
    workers: int
    batch_size: int
    key: str = ""
    worker: str | None = None
    last: bool = field(default=False, init=False)

    def __call__(
        self, requests: Sequence[QueryRequest], process: Process, crashed: RunInfo
    ) -> tuple[list[QueryOutcome], RunInfo]:
        import json

        from .shards import run_sharded, shard_size

        run = run_sharded(
            self.base / f"pytest-retrieval-shards-{self.uid}.sqlite3",
            requests,
            process,
            size=shard_size(len(requests), self.workers, self.batch_size),
            info_to_json=lambda info: json.dumps(info.to_dict()),
            info_from_json=lambda text: RunInfo.from_dict(json.loads(text)),
            crashed_info=lambda count: replace(crashed, called=count),
            extra_key=self.key,
            worker=self.worker,
        )
        self.last = run.last
        return run.outcomes, merge_infos(run.infos)


def sharded(
    base: Path,
    uid: str,
    *,
    workers: int,
    batch_size: int,
    key: str = "",
    worker: str | None = None,
) -> Sharded:
    """The :class:`Sharded` distribution of a session's run among its xdist workers."""
    return Sharded(base, uid, workers, batch_size, key, worker)


def served_from_cache(outcome: QueryOutcome) -> bool:
    """True when ``outcome`` was served from the cache: a cache hit carries no latency (no call
    was made), while every answer of a live call has one, a failed one too (a query failed
    without a call, a crashed shard's, is not served either)."""
    return not outcome.latency_ms and outcome.error is None


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_NAMED])
    return shown + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")


# --- run files --------------------------------------------------------------------------------


def load_runs(settings: Settings) -> dict[str, RunFile]:
    """The run files of ``retrieval_run`` by stage, read and checked (before any test runs).

    Refuses a run file together with the cache, and a file that cannot be read (the
    :class:`~pytest_retrieval.errors.RunFileError` names the file and line).
    """
    if not settings.run:
        return {}
    if settings.cache != "off":
        raise InputError(
            Problem(
                f"--retrieval-run gates a stored run and never calls the retriever, so "
                f"retrieval_cache = {settings.cache} has nothing to cache or replay (and a "
                "stored run read through the cache would hide which of the two was gated)",
                fix="pass --retrieval-cache=off with --retrieval-run, or drop --retrieval-run "
                "to run the retriever through the cache",
                source="--retrieval-run",
            )
        )
    from ..formats.runs import load_run_file

    return {stage: load_run_file(path) for stage, path in settings.run}


def describe_runs(runs: Mapping[str, RunFile]) -> str:
    """The "retriever name" of a run read from files, for the artifact."""
    return "run file " + ", ".join(f"{stage}={run.source}" for stage, run in runs.items())


def outcomes_from_runs(
    runs: Mapping[str, RunFile],
    queries: Sequence[Query],
    *,
    golden_ids: Sequence[str],
    redacted: Callable[[Query], bool],
) -> tuple[list[QueryOutcome], RunInfo]:
    """One outcome per scorable query from the run files (an empty ranking where a file lists
    no entry for it), and what was missing or unknown per stage.

    The rankings are the files' (TREC ordered as ``pytest-retrieval evaluate`` orders it), uncut;
    latencies and errors a JSONL run recorded (``pytest-retrieval run``) are kept, so a failed
    query fails the session as it would in-process.
    Ids of held-out queries (``redacted``) are counted, never named; a sealed held-out query the
    run lists is ignored without a word (naming it would leak it).
    """
    from ..formats.runs import match_run_to_golden

    ids = [q.id for q in queries]
    by_id = {q.id: q for q in queries}
    _refuse_other_contexts(runs, queries, redacted)
    known = set(golden_ids)
    outcomes = {qid: QueryOutcome(qid) for qid in ids}
    missing: dict[str, tuple[str, ...]] = {}
    hidden: dict[str, int] = {}
    unknown: dict[str, tuple[str, ...]] = {}
    ordered = pipeline_order(runs)
    for stage in ordered:
        run = runs[stage]
        match = match_run_to_golden(run, ids)
        given = run.scores
        for qid, ranking in match.rankings.items():
            outcome = outcomes[qid]
            outcome.rankings[stage] = ranking
            scores = given.get(qid)
            if scores and any(s is not None for s in scores):
                outcome.scores[stage] = scores
            if qid in run.latency_ms:
                outcome.latency_ms[stage] = run.latency_ms[qid]
            if qid in run.errors and outcome.error is None:
                # As the in-process runner records it: the failed stage has no ranking. A
                # stage this session does not gate is named as the file's own.
                failed, kind, message = run.errors[qid]
                failed = failed if failed in runs else stage
                outcome.error_stage, outcome.error_type, outcome.error = failed, kind, message
                if not ranking:
                    outcome.rankings.pop(stage, None)
        missing[stage] = tuple(q for q in match.missing if not redacted(by_id[q]))
        hidden[stage] = len(match.missing) - len(missing[stage])
        unknown[stage] = tuple(q for q in match.unknown if q not in known)
    info = RunInfo(
        source="run files",
        run_files=tuple((stage, runs[stage].source) for stage in ordered),
        missing=missing,
        missing_hidden=hidden,
        unknown=unknown,
    )
    return [outcomes[qid] for qid in ids], info


def _refuse_other_contexts(
    runs: Mapping[str, RunFile], queries: Sequence[Query], redacted: Callable[[Query], bool]
) -> None:
    """InputError when a run file's ranking was made for another context than the golden set
    gives the query now (the context is part of the run-file key); held-out ids are counted,
    never named, and no context is ever shown."""
    from ..formats.runs import context_mismatches
    from ..golden.context import context_digest

    digests = {q.id: context_digest(q.context) for q in queries}
    by_id = {q.id: q for q in queries}
    for stage in pipeline_order(runs):
        found = context_mismatches(runs[stage], digests)
        if not found:
            continue
        named = [qid for qid in found if not redacted(by_id[qid])]
        hidden = len(found) - len(named)
        listed = _named(named) + (
            f"{', ' if named else ''}{hidden} held-out (not named)" if hidden else ""
        )
        raise InputError(
            Problem(
                f"the run file {runs[stage].source} ({stage}) ranked {len(found)} "
                f"quer{'y' if len(found) == 1 else 'ies'} for another context than the golden "
                f"set gives {'it' if len(found) == 1 else 'them'} now: {listed}; a ranking made "
                "for another tenant, user or history is not this query's",
                fix="run pytest-retrieval run again against this golden set, or gate the "
                "golden set the run was made from",
                source="--retrieval-run",
            )
        )


def unrecorded_context_warning(runs: Mapping[str, RunFile], queries: Sequence[Query]) -> str | None:
    """The warning of run files that record no context while queries have one (gated as
    given: which context they were ranked for cannot be told)."""
    from ..formats.runs import unrecorded_contexts
    from ..golden.context import context_digest

    digests = {q.id: context_digest(q.context) for q in queries}
    said = [
        f"the run file {runs[stage].source} records no context (no context_sha256) for "
        f"{len(found)} quer{'y' if len(found) == 1 else 'ies'} that have one"
        for stage in pipeline_order(runs)
        if (found := unrecorded_contexts(runs[stage], digests))
    ]
    if not said:
        return None
    return (
        "; ".join(said) + ": which context each was ranked for cannot be checked, so they are "
        "gated as given (pytest-retrieval run records it)"
    )


# --- the cache --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyTemplates:
    """The cache key of each stage with an empty query text (filled in per query)."""

    retriever: CacheKey
    reranker: CacheKey | None = None


def key_templates(settings: Settings, *, retriever: Any, reranker: Any, depth: int) -> KeyTemplates:
    """Everything the key holds besides the query text (and the reranker's candidates).

    The corpus part is a sha256 of the ``retrieval_corpus`` file's bytes when it is set, so an
    edited corpus file is a miss; the doc-id part covers ``retrieval_doc_id`` and the bytes of
    ``retrieval_doc_id_map``.
    """
    corpus = corpus_fingerprint(settings.corpus) if settings.corpus else None
    doc_ids = doc_id_fingerprint(settings.doc_id, settings.doc_id_map)
    first = CacheKey(
        stage=RETRIEVER_STAGE,
        query="",
        depth=depth,
        retriever=retriever_identity(retriever),
        factory=settings.retriever,
        index_version=settings.index_version,
        corpus=corpus,
        doc_ids=doc_ids,
        context_filter=settings.context_filter,  # in every query's key: each one is filtered
    )
    if reranker is None:
        return KeyTemplates(first)
    second = replace(
        first,
        stage=RERANKER_STAGE,
        retriever=retriever_identity(reranker),
        factory=settings.reranker,
        candidates=(),
    )
    return KeyTemplates(first, second)


def _lookup(
    cache: RunCache,
    requests: Sequence[QueryRequest],
    keys: KeyTemplates,
    deepen: Deepen | None = None,
) -> tuple[dict[int, QueryOutcome], dict[int, int]]:
    """The requests (by position) whose every stage has an entry, as outcomes (without latency:
    no call was made, which is how :func:`served_from_cache` tells them); and, for the others
    whose first stage was found at some depth but not deep enough (or whose reranker entry is
    missing), the depth their live call starts at."""
    base = keys.retriever.depth
    pending = {i: base for i in range(len(requests))}
    first: dict[int, tuple[int, CacheEntry]] = {}
    start: dict[int, int] = {}
    while pending:
        found = cache.get_many(
            {
                i: request_key(keys.retriever, requests[i], depth=depth)
                for i, depth in pending.items()
            }
        )
        deeper_still: dict[int, int] = {}
        for i, depth in pending.items():
            entry = found.get(i)
            if entry is None:
                if depth != base:
                    start[i] = depth
                continue
            more = (
                deepen(depth, entry.returned_count, len(entry.ranking))
                if deepen is not None
                else None
            )
            if more is None:
                first[i] = (depth, entry)
            else:
                deeper_still[i] = more
        pending = deeper_still

    def outcome(i: int, *stages: tuple[str, CacheEntry]) -> QueryOutcome:
        depth = first[i][0]
        return QueryOutcome(
            requests[i].id,
            rankings={stage: entry.ranking for stage, entry in stages},
            scores=_scores_of(*stages),
            returned={s: e.returned for s, e in stages if e.returned is not None},
            asked=depth if depth != base else None,
        )

    if keys.reranker is None:
        return {i: outcome(i, (RETRIEVER_STAGE, entry)) for i, (_d, entry) in first.items()}, start
    reranker = keys.reranker
    second = cache.get_many(
        {
            i: request_key(reranker, requests[i], depth=depth, candidates=entry.ranking)
            for i, (depth, entry) in first.items()
        }
    )
    for i, (depth, _entry) in first.items():
        if i not in second and depth != base:
            start[i] = depth  # both stages again, at the depth the candidates came from
    return {
        i: outcome(i, (RETRIEVER_STAGE, first[i][1]), (RERANKER_STAGE, entry))
        for i, entry in second.items()
    }, start


def _scores_of(*entries: tuple[str, CacheEntry]) -> dict[str, tuple[float | None, ...]]:
    """The stored scores per stage (stages stored without scores are absent, as live)."""
    return {stage: entry.scores for stage, entry in entries if entry.scores is not None}


def _entries(
    requests: Sequence[QueryRequest],
    outcomes: Sequence[QueryOutcome],
    keys: KeyTemplates,
    calls: Sequence[RetrieverCall] | None = None,
) -> list[tuple[CacheKey, CacheEntry]]:
    """The successful answers of a live run as cache entries (a failed stage is not stored,
    so it is retried next time): the retriever's final answer per query, or, when ``calls``
    are given (queries may have been asked again), every retriever call at its own depth."""
    base = keys.retriever.depth
    items: list[tuple[CacheKey, CacheEntry]] = []
    if calls is not None:
        for call in calls:
            depth = call.depth if call.depth is not None else base
            items.append(
                (
                    request_key(keys.retriever, requests[call.index], depth=depth),
                    CacheEntry(call.ranking, call.scores, call.latency_ms, returned=call.returned),
                )
            )
    for request, outcome in zip(requests, outcomes, strict=True):
        first = outcome.rankings.get(RETRIEVER_STAGE)
        if first is None:
            continue
        depth = outcome.asked if outcome.asked is not None else base
        if calls is None:
            items.append(
                (
                    request_key(keys.retriever, request, depth=depth),
                    CacheEntry(
                        first,
                        scores=outcome.scores.get(RETRIEVER_STAGE),
                        latency_ms=outcome.latency_ms.get(RETRIEVER_STAGE),
                        returned=outcome.returned.get(RETRIEVER_STAGE),
                    ),
                )
            )
        second = outcome.rankings.get(RERANKER_STAGE)
        if keys.reranker is not None and second is not None:
            items.append(
                (
                    request_key(keys.reranker, request, depth=depth, candidates=first),
                    CacheEntry(
                        second,
                        scores=outcome.scores.get(RERANKER_STAGE),
                        latency_ms=outcome.latency_ms.get(RERANKER_STAGE),
                        returned=outcome.returned.get(RERANKER_STAGE),
                    ),
                )
            )
    return items


def _replay_missing(
    path: Path, missing: Sequence[QueryRequest], total: int, redacted: Callable[[str], bool]
) -> InputError:
    named = [r.id for r in missing if not redacted(r.id)]
    hidden = len(missing) - len(named)
    listed = _named(named) if named else ""
    if hidden:
        listed += (", " if listed else "") + f"{hidden} held-out (not named)"
    return InputError(
        Problem(
            f"replay: {len(missing)} of {total} queries have no entry in "
            f"{path}: {listed}; replay never calls the retriever, so nothing was gated",
            fix="record them first with --retrieval-cache=use (or refresh); an entry also "
            "misses when the index version, depth, doc-id mapping, query text or context, "
            "retriever or reranker changed",
            source="--retrieval-cache",
        )
    )


def through_cache(
    requests: Sequence[QueryRequest],
    compute: Compute,
    *,
    mode: str,
    path: Path,
    keys: KeyTemplates,
    redacted: Callable[[str], bool] = lambda _qid: False,
    warn: Callable[[str], None] | None = None,
    index_version: str | None = None,
    deepen: Deepen | None = None,
) -> tuple[list[QueryOutcome], RunInfo]:
    """The outcomes of ``requests`` in ``mode`` (``use``, ``refresh`` or ``replay``), calling
    ``compute`` only for what the cache does not serve; and how many came from where.

    ``deepen`` (queries asked again deeper): the lookup follows a query's entries depth by
    depth, a live call starts at the first depth without one, and every call is stored at its
    own depth. Raises :class:`~pytest_retrieval.errors.InputError` in ``replay`` when a query
    has no entry or the cache cannot be read. ``warn`` receives each reason the cache was not
    used.
    """
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        if warn is not None:
            warn(message)

    def refused(exc: CacheCorrupt) -> InputError:
        return InputError(
            Problem(
                f"replay: {exc}",
                fix="replay reads only the cache: repair it by recording again with "
                "--retrieval-cache=refresh",
                source="--retrieval-cache",
            )
        )

    if mode == "replay" and not path.exists():
        raise _replay_missing(path, requests, len(requests), redacted)
    cache: RunCache | None = None
    try:
        cache = RunCache(path)
    except CacheCorrupt as exc:
        if mode == "replay":
            raise refused(exc) from None
        if mode == "refresh" and exc.ours:
            try:
                cache = RunCache.rebuild(path)
            except (CacheCorrupt, OSError) as again:
                note(
                    f"{exc}; refresh could not move it aside ({again}), so this run stores nothing"
                )
            else:
                note(f"{exc}; refresh moved it aside to {path.name}.corrupt and starts a new cache")
        else:
            note(f"{exc}; this run calls the retriever for every query")
    if cache is not None and cache.read_only and mode_writes(mode):
        note(
            f"retrieval cache {path}: read-only (its folder or the file cannot be written): "
            + ("hits are served from it, " if mode_reads(mode) else "")
            + "this run's answers are not stored"
        )
    try:
        hits: dict[int, QueryOutcome] = {}
        start: dict[int, int] = {}
        if cache is not None and mode_reads(mode):
            try:
                hits, start = _lookup(cache, requests, keys, deepen)
            except CacheCorrupt as exc:
                if mode == "replay":
                    raise refused(exc) from None
                note(f"{exc}; this run calls the retriever for every query")
                cache.close()
                cache = None
                hits, start = {}, {}
        todo = [
            replace(r, depth=start[i]) if i in start else r
            for i, r in enumerate(requests)
            if i not in hits
        ]
        if mode == "replay" and todo:
            raise _replay_missing(path, todo, len(requests), redacted)
        calls: list[RetrieverCall] | None = None
        if not todo:
            fresh = []
        elif deepen is not None:
            calls = []
            fresh = compute(todo, calls.append)
        else:
            fresh = compute(todo)
        if len(fresh) != len(todo):  # pragma: no cover - the runner's contract
            raise RuntimeError(f"{len(fresh)} outcomes for {len(todo)} queries")
        stored = 0
        if cache is not None and not cache.read_only and mode_writes(mode) and fresh:
            try:
                stored = cache.put_many(_entries(todo, fresh, keys, calls))
            except CacheCorrupt as exc:
                note(f"{exc}; this run's answers were not stored")
    finally:
        if cache is not None:
            cache.close()
    by_id = {r.id: o for r, o in zip(todo, fresh, strict=True)}
    outcomes = [hits[i] if i in hits else by_id[r.id] for i, r in enumerate(requests)]
    info = RunInfo(
        source="retriever",
        cache_mode=mode,
        cache_path=str(path),
        index_version=index_version,
        cached=len(hits),
        called=len(todo),
        stored=stored,
        warnings=tuple(notes),
    )
    return outcomes, info


# --- the session's run ------------------------------------------------------------------------


def obtain(
    settings: Settings,
    queries: Sequence[Query],
    *,
    rootdir: Path,
    compute: Compute | None,
    redacted: Callable[[Query], bool],
    golden_ids: Sequence[str] = (),
    run_files: Mapping[str, RunFile] | None = None,
    depth: int,
    plan: DepthPlan | None = None,
    retriever: Any = None,
    reranker: Any = None,
    warn: Callable[[str], None] | None = None,
    distribute: Distribute | None = None,
) -> tuple[list[QueryOutcome], RunInfo]:
    """The outcomes of the scorable ``queries``, from the ``run_files``, the cache or
    ``compute``, and where they came from (the session keeps it:
    :meth:`~pytest_retrieval.session.session.RetrievalSession.set_run_info`).

    ``redacted`` is the held-out rule (ids of queries it hides are counted, never named);
    ``golden_ids`` every query id of the golden set (a run file's other ids are unknown);
    ``depth`` the depth of each query's first call and ``plan`` the run's depth plan (which
    queries are asked again deeper), both keying the cache. ``compute`` (and
    ``retriever``/``reranker``, whose identities key the cache) may be None only with run
    files. Raises InputError for a replay that cannot be served.

    ``distribute`` (xdist) shares the queries the retriever may be called on with other
    processes: each part goes through the cache as a whole run would, so a query is looked up,
    called and stored by one process only. Run files and ``replay`` never call the retriever
    and are read whole by every process.
    """
    if run_files:
        outcomes, info = outcomes_from_runs(
            run_files, queries, golden_ids=golden_ids, redacted=redacted
        )
        unchecked = unrecorded_context_warning(run_files, queries)
        if unchecked is not None and warn is not None:
            warn(unchecked)
        return outcomes, replace(info, index_version=settings.index_version)
    if compute is None:
        raise ValueError("no run files and nothing to compute the run with")
    requests = [QueryRequest.of(q) for q in queries]
    if settings.cache == "off":
        if distribute is None:
            return compute(requests), RunInfo(
                called=len(requests), index_version=settings.index_version
            )
        live = compute

        def call(part: Sequence[QueryRequest]) -> tuple[list[QueryOutcome], RunInfo]:
            return live(part), RunInfo(called=len(part), index_version=settings.index_version)

        blank = RunInfo(index_version=settings.index_version)
        return distribute(requests, call, blank)
    by_id = {q.id: q for q in queries}
    path = cache_file(settings.cache_directory(rootdir))
    keys = key_templates(settings, retriever=retriever, reranker=reranker, depth=depth)
    deepen: Deepen | None = None
    if plan is not None and plan.fill is not None:
        fill, cap = plan.fill, plan.max_depth

        def deepen(asked: int, returned: int, documents: int) -> int | None:
            return deeper(asked, returned, documents, fill=fill, max_depth=cap)

    seen: set[str] = set()

    def warn_once(message: str) -> None:  # every shard meets a damaged cache: one warning
        if warn is not None and message not in seen:
            seen.add(message)
            warn(message)

    def cached(part: Sequence[QueryRequest]) -> tuple[list[QueryOutcome], RunInfo]:
        return through_cache(
            part,
            compute,
            mode=settings.cache,
            path=path,
            keys=keys,
            redacted=lambda qid: redacted(by_id[qid]),
            warn=warn_once,
            index_version=settings.index_version,
            deepen=deepen,
        )

    if distribute is None or settings.cache == "replay":
        return cached(requests)
    blank = RunInfo(
        cache_mode=settings.cache, cache_path=str(path), index_version=settings.index_version
    )
    return distribute(requests, cached, blank)
