"""The JSON artifact: written from a finished session, read back by the console script.

:func:`build_artifact` turns a session into the documented, schema-versioned JSON artifact, with
held-out rows redacted unless their details were asked for; :func:`read_artifact` reads and
checks one (the ``report``, ``gate`` and ``compare`` commands). Writer and reader live side by
side so that they cannot drift. :func:`leak_facts` is the leak metrics of a run as every report
shows them (the artifact's ``leaks`` block, which the terminal's leak table reads too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from ..files import LazyList
from ..gates.explain import Leak
from ..golden.context import thaw_context
from ..reading import load_json, read_text_file
from ..run.checks import coverage_warnings
from ..run.factories import hint_for
from ..run.retriever import RETRIEVER_STAGE
from ..scoring.metrics import MetricSpec
from ..session import findings
from ..session.session import RetrievalSession
from .summary import columns, depth_facts, depth_is_news, latency_percentiles, refused, shown_means

if TYPE_CHECKING:
    from ..golden.model import Query
    from ..run.retriever import QueryOutcome

ARTIFACT_SCHEMA = "pytest-retrieval/artifact"
ARTIFACT_SCHEMA_VERSION = 1


def _counts(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items()))


def build_artifact(
    session: RetrievalSession,
    *,
    plugin_version: str,
    extra_specs: Sequence[MetricSpec] = (),
    declared: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The JSON artifact of a session (see the README's "JSON artifact" section).

    A refused or errored run (:attr:`.RetrievalSession.stop`) has ``status``, ``reason`` and
    ``fix`` after ``created``, and no number: no results, per-query rows, snapshot, warnings,
    coverage, latency, probe or sweeps (the failed queries stay in ``errors``). Other runs have
    no ``status`` key (their verdict is the gates', the checks' and the errors')."""
    golden = session.golden
    settings = session.settings
    results: list[dict[str, Any]] = []
    specs = settings.metric_specs
    stop = session.stop
    scored = session.has_run and stop is None
    if scored:
        for stage in session.stages:
            evaluation = session.evaluation(stage, specs)
            # A metric a gate would refuse (every ranking shorter than its K) has no number.
            no_number = refused(session.ranked_run(), stage, specs)
            for label, selection in columns(golden, session.scope):
                sub = evaluation.restrict(q.id for q in session.select(selection))
                results.append(
                    {
                        "stage": stage,
                        "column": label,
                        "split": selection.split,
                        "slice": selection.slice,
                        "queries": len(sub.query_ids),
                        "evaluated": sub.evaluated,
                        "skipped_no_relevant": len(sub.skipped_no_relevant),
                        "metrics": shown_means(sub, no_number),
                    }
                )
    rows: Sequence[dict[str, Any]] = []
    redacted = 0
    leaks = leak_facts(session) if scored else None
    if scored:
        scorable = session.scorable_queries()
        shown = [q for q in scorable if not session.scope.redacted(q)]
        redacted = len(scorable) - len(shown)
        rows = _query_rows(session, shown, specs, leaks)
    gates = []
    for gate in session.gate_outcomes:
        entry = gate.to_dict()
        if session.scope.hides(gate.split):
            entry["message"] = entry["message"].split("\n", 1)[0]
        gates.append(entry)
    latency = {}
    for stage in session.stages if scored else ():
        pair = latency_percentiles(session.outcomes, stage)
        if pair is not None:
            latency[stage] = {"p50": pair[0], "p95": pair[1]}
    failed = session.failed_queries()
    warnings = [w.to_dict() for w in findings.short_rankings(session)] if scored else []
    coverage = findings.coverage(session) if scored else []
    warnings += [{k: v for k, v in w.items() if k != "short"} for w in coverage_warnings(coverage)]
    head: dict[str, Any] = {
        "schema": ARTIFACT_SCHEMA,
        "schema_version": ARTIFACT_SCHEMA_VERSION,
        "plugin_version": plugin_version,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **(stop.to_dict() if stop is not None else {}),
    }
    return {
        **head,
        "settings": settings.to_dict(),
        "golden": {
            "path": golden.source,
            "name": golden.name,
            "corpus_version": golden.corpus_version,
            "fingerprint": golden.fingerprint,
            "queries": len(golden),
            "splits": _counts(q.split for q in golden),
            "slices": _counts(s for q in golden for s in q.slices),
            "no_answer": sum(1 for q in golden if q.is_no_answer),
            "judgments": sum(len(q.judgments) for q in golden),
            "machine_judgments": session.machine_judgments(),
        },
        "heldout": session.scope.to_dict(),
        "retriever": _retriever_block(session),
        "run": session.run_info.to_dict() if session.run_info is not None else None,
        "commit": session.commit.to_dict() if session.commit is not None else None,
        "stages": list(session.stages),
        "results": results,
        "gates": gates,
        "errors": [
            {
                "query_id": o.query_id,
                "stage": o.error_stage,
                "type": o.error_type,
                "message": o.error,
            }
            for o in failed
            if not session.scope.redacted(golden[o.query_id])
        ],
        "warnings": warnings,
        "coverage": [c.to_dict() for c in coverage],
        "latency_ms": latency,
        "regressions": [r.to_dict() for r in session.regression_outcomes],
        "declared": {k: list(v) for k, v in (declared or {}).items()},
        "queries": rows,
        "redacted_queries": redacted,
        "snapshot": (session.snapshot(extra=extra_specs).to_dict(lazy=True) if scored else None),
        "family": _family(session),
        "determinism": (
            {**session.probe.to_dict(), "noisy": session.probe.noisy}
            if session.probe is not None and scored
            else None
        ),
        "abstention": abstention_block(session) if scored else None,
        "dedup": dedup_block(session),
        # Only a run that can measure a leak has the block: others stay byte for byte as before.
        **({"leaks": leaks.block} if leaks is not None else {}),
    }


@dataclass(frozen=True, slots=True)
class LeakFacts:
    """The leak metrics of a run, for every report: the artifact's ``leaks`` block (``block``)
    and, per query, its leaks at the largest leak cutoff (``by_query``, every stage)."""

    block: dict[str, Any]
    by_query: Mapping[str, Sequence[Leak]]


def leak_cutoffs(session: RetrievalSession) -> tuple[int, ...]:
    """The K of the leak table: the cutoffs the summary prints (``retrieval_ks``) and the K of
    every leak metric the run scores (a ``stale@3`` gate or ``retrieval_metrics`` entry), so
    the table has the number a gate judged."""
    ks = {*session.settings.ks}
    ks.update(
        s.k for s in session.scored_specs() if s.metric.source == "access" and s.k is not None
    )
    return tuple(sorted(ks))


def leak_facts(session: RetrievalSession) -> LeakFacts | None:
    """``forbidden@K`` and ``stale@K`` per stage at :func:`leak_cutoffs`, and each query's
    leaks; None when the run can measure neither (no forbidden list, no corpus access or
    status metadata: the reports then show nothing of it).

    Per stage, column (overall; the held-out split when it is scored) and metric at each K:
    ``documents`` (how many leaked documents sit in the top K, summed over the queries),
    ``queries`` (how many queries have one) and ``share`` (the metric's mean: the share of the
    top-K positions they took). The documents come from
    :meth:`~pytest_retrieval.session.session.RetrievalSession.leaks`, what the zero-tolerance
    gate names; the shares from the session's evaluation, what a threshold judges. Found once
    per run (:meth:`~pytest_retrieval.session.session.RetrievalSession.remember`): the terminal
    and the artifact read the same facts."""
    if not session.has_run or session.stop is not None:
        return None
    return session.remember(("leak_facts",), lambda: _find_leak_facts(session))


def _find_leak_facts(session: RetrievalSession) -> LeakFacts | None:
    """:func:`leak_facts` of a run that has outcomes, found anew."""
    access = session.access
    measured = access.measured
    if not measured:
        return None
    ks = leak_cutoffs(session)
    specs = [MetricSpec(name, k) for name in measured for k in ks]
    chosen = [
        (label, selection, session.select(selection))
        for label, selection in columns(session.golden, session.scope)
        if selection.slice is None
    ]
    by_query: dict[str, list[Leak]] = {}
    results: list[dict[str, Any]] = []
    for stage in session.stages:
        evaluation = session.evaluation(stage, specs)
        found = {name: session.leaks(name, ks[-1], stage) for name in measured}
        for leak in (leak for name in measured for leak in found[name]):
            by_query.setdefault(leak.query_id, []).append(leak)
        for label, selection, queries in chosen:
            ids = {q.id for q in queries}
            means = evaluation.restrict(ids).means
            for spec in specs:
                assert spec.k is not None
                inside = [
                    leak
                    for leak in found[spec.name]
                    if leak.rank <= spec.k and leak.query_id in ids
                ]
                results.append(
                    {
                        "stage": stage,
                        "column": label,
                        "split": selection.split,
                        "metric": str(spec),
                        "documents": len(inside),
                        "queries": len({leak.query_id for leak in inside}),
                        "share": means[str(spec)],
                    }
                )
    unmeasured = {
        name: why
        for name, why in (
            ("forbidden", access.forbidden_unmeasured),
            ("stale", access.stale_unmeasured),
        )
        if why is not None
    }
    block = {
        "cutoffs": list(ks),
        "measured": list(measured),
        "unmeasured": unmeasured,
        "results": results,
    }
    return LeakFacts(block, by_query)


def _retriever_block(session: RetrievalSession) -> dict[str, Any]:
    """The retriever's name, depth hint and index version; and how deep it was asked when that
    is news (asked deeper than the configured depth, a query asked again, results collapsing
    into documents: :func:`.summary.depth_facts`)."""
    block: dict[str, Any] = {
        "name": session.retriever_name,
        "depth_hint": _depth_hint(session),
        "index_version": session.settings.index_version,
    }
    facts = depth_facts(session.depth_plan, session.outcomes) if session.has_run else None
    if facts is not None and depth_is_news(facts, session.effective_depth):
        block["depth"] = facts
    return block


def _depth_hint(session: RetrievalSession) -> str | None:
    """How to set the retriever's depth: where its chunks collapsed short of K, the knob at the
    number that fills K, as the short-ranking warning names it (its ``hint``, the one home of
    that number); otherwise the knob at the configured depth."""
    if session.has_run:
        for found in findings.short_rankings(session):
            if found.stage == RETRIEVER_STAGE and found.collapse_fix is not None:
                return found.hint
    return hint_for(session.depth_hint, session.effective_depth)


def abstention_block(session: RetrievalSession) -> dict[str, Any] | None:
    """The score floors, per stage the sweep of candidate floors (stages with scores and
    no-answer queries), and why abstention cannot be measured where it cannot."""
    if not session.has_run:
        return None
    sweeps = []
    unmeasured: dict[str, str] = {}
    for stage in session.stages:
        found = session.abstention_sweep(stage)
        if found is not None and found.no_answer:
            sweeps.append(found.to_dict())
        evaluation = session.evaluation(stage, session.settings.metric_specs)
        for name in ("abstain_rate", "answer_rate"):
            if name in evaluation.unmeasured:
                unmeasured[stage] = evaluation.unmeasured[name]
    floors = session.settings.floors_dict()
    if not sweeps and not unmeasured and not floors:
        return None
    return {"floors": floors, "sweeps": sweeps, "unmeasured": unmeasured}


def dedup_block(session: RetrievalSession) -> dict[str, Any] | None:
    """Where the duplicate groups came from and how many there are (None: no groups)."""
    groups = session.duplicates
    if groups is None:
        return None
    return {
        "source": groups.source,
        "groups": len(groups),
        "documents": sum(len(m) for m in groups.groups.values()),
    }


def _family(session: RetrievalSession) -> dict[str, Any] | None:
    """The family of regression checks, from the checks' own records (xdist-safe)."""
    from ..regression.family import describe

    for outcome in session.regression_outcomes:
        if outcome.multiplicity is not None and outcome.family_size:
            alpha = outcome.alpha if outcome.alpha is not None else session.settings.alpha
            return {
                "method": outcome.multiplicity,
                "alpha": alpha,
                "size": outcome.family_size,
                "test": outcome.test,
                "description": describe(
                    outcome.family_size, alpha, outcome.multiplicity, outcome.test
                ),
            }
    return None


def _query_rows(
    session: RetrievalSession,
    queries: Sequence[Query],
    specs: Sequence[MetricSpec],
    leaks: LeakFacts | None = None,
) -> LazyList:
    """The artifact's per-query rows, each built when it is read: the writer encodes them a
    slice at a time, so 100,000 rows never sit in memory at once (nor a second copy of every
    ranking and metric value)."""
    assert session.outcomes is not None
    outcomes = session.outcomes
    largest_k = max(session.settings.ks)
    columns = {stage: session.evaluation(stage, specs) for stage in session.stages}
    # Per query, how deep it was asked and what its results collapsed into, when some query's
    # did (otherwise every ranking is as returned, at the run's depth: nothing to add).
    facts = depth_facts(session.depth_plan, outcomes)
    per_query_depth = facts is not None and bool(facts["asked_again"] or facts["collapsed"])
    # Nothing is handed to a retriever the depth cannot reach: no depth was asked.
    first = session.first_depth if facts is not None and facts["passed"] else None
    positions = {
        stage: {qid: i for i, qid in enumerate(e.query_ids)} for stage, e in columns.items()
    }

    # Per stage, the metric names and their value columns, in the evaluation's order.
    tables = {stage: (list(e.columns), list(e.columns.values())) for stage, e in columns.items()}

    def metrics(stage: str, query_id: str) -> dict[str, float | None]:
        row = positions[stage].get(query_id)
        if row is None:
            return {}
        names, values = tables[stage]
        return dict(zip(names, [column[row] for column in values]))

    def depth(outcome: QueryOutcome) -> dict[str, dict[str, int | None]]:
        asked = outcome.asked if outcome.asked is not None or first is None else first
        return {
            stage: {
                "asked": asked if stage == RETRIEVER_STAGE else None,
                "returned": len(outcome.as_returned(stage)),
                "documents": len(ranking),
            }
            for stage, ranking in outcome.rankings.items()
        }

    def build(i: int) -> dict[str, Any]:
        query = queries[i]
        outcome = outcomes.get(query.id)
        row: dict[str, Any] = {
            "id": query.id,
            "text": query.text,
            "split": query.split,
            "slices": list(query.slices),
            "rankings": {
                stage: list(r[:largest_k])
                for stage, r in (outcome.rankings.items() if outcome else ())
            },
            "metrics": {stage: metrics(stage, query.id) for stage in columns},
            "latency_ms": dict(outcome.latency_ms) if outcome else {},
            "error": (
                {
                    "stage": outcome.error_stage,
                    "type": outcome.error_type,
                    "message": outcome.error,
                }
                if outcome and outcome.error
                else None
            ),
        }
        if query.context:  # a held-out query's row is never built unless its details are shown
            row["context"] = thaw_context(query.context)
        if outcome is not None and outcome.returned:
            # The ids as returned where they repeated (chunks of one document): what
            # distinct@K and K counted in results are measured on.
            row["returned"] = {
                stage: list(ids[:largest_k]) for stage, ids in outcome.returned.items()
            }
        if per_query_depth and outcome is not None:
            row["depth"] = depth(outcome)
        if leaks is not None:  # a run that measures leaks: each row says, even when none
            row["leaks"] = [leak.to_dict() for leak in leaks.by_query.get(query.id, ())]
        return row

    return LazyList(len(queries), build)


# --- terminal ------------------------------------------------------------------------------


def read_artifact(path: str) -> dict[str, Any]:
    """Read and check a JSON artifact; InputError naming the file otherwise."""
    fix = "pass the file written by pytest --retrieval-json PATH"
    try:
        # A regular file of bounded size only (a symlink to /dev/zero never ends), decoded by
        # the one guarded decoder (depth, digits, the line and column of a syntax error).
        text = read_text_file(path, what="artifact")
        data = load_json(
            text,
            source=path,
            what="artifact",
            expected="an artifact",
            fix=fix,
            allow_duplicate_keys=True,  # ours, read at scale; checked field by field below
        )
    except FileNotFoundError:
        raise InputError(
            Problem(
                "artifact not found",
                fix="pass the file written by pytest --retrieval-json PATH",
                source=path,
            )
        ) from None
    if not isinstance(data, dict) or data.get("schema") != ARTIFACT_SCHEMA:
        raise InputError(
            Problem(
                "not a pytest-retrieval JSON artifact",
                fix="pass the file written by pytest --retrieval-json PATH",
                source=path,
            )
        )
    version = data.get("schema_version")
    if version != ARTIFACT_SCHEMA_VERSION:
        raise InputError(
            Problem(
                f"artifact schema version {version!r} is not supported (this version reads "
                f"{ARTIFACT_SCHEMA_VERSION})",
                fix="render it with the pytest-retrieval version that wrote it",
                source=path,
            )
        )
    problems = artifact_problems(data, source=path)
    if problems:
        raise InputError(problems, title=f"{path}: not a valid artifact")
    return data


_REWRITE = "write it again with pytest --retrieval-json PATH; do not edit it by hand"

#: The artifact's top-level fields and the JSON type each must have when present.
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "settings": dict,
    "golden": dict,
    "heldout": dict,
    "retriever": dict,
    "stages": list,
    "results": list,
    "gates": list,
    "errors": list,
    "latency_ms": dict,
    "regressions": list,
    "declared": dict,
    "queries": list,
    "redacted_queries": int,
    "leaks": dict,
}
#: Lists whose items must be objects.
_LISTS_OF_OBJECTS = ("results", "gates", "errors", "regressions", "queries")


def artifact_problems(data: Mapping[str, Any], *, source: str) -> list[Problem]:
    """How an artifact breaks its schema (the types the renderers and the offline commands
    read; the per-query snapshot in full, see
    :func:`~pytest_retrieval.regression.baseline.snapshot_problems`); empty if it is whole."""
    from ..regression.baseline import snapshot_problems

    problems: list[Problem] = []
    for key, kind in _FIELDS.items():
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            shown = kind.__name__ if isinstance(kind, type) else kind[0].__name__
            expected = {"dict": "an object", "list": "a list", "int": "an integer"}[shown]
            problems.append(
                Problem(f'"{key}" must be {expected}', fix=_REWRITE, source=source, field=key)
            )
        elif (
            key in _LISTS_OF_OBJECTS
            and isinstance(value, list)
            and not all(isinstance(item, dict) for item in value)
        ):
            problems.append(
                Problem(
                    f'every item of "{key}" must be an object',
                    fix=_REWRITE,
                    source=source,
                    field=key,
                )
            )
    problems.extend(_stop_problems(data, source))
    problems.extend(_result_problems(data.get("results"), source))
    problems.extend(_leak_problems(data.get("leaks"), data.get("queries"), source))
    settings = data.get("settings")
    if isinstance(settings, dict):
        ks = settings.get("ks")
        if ks is not None and not (
            isinstance(ks, list) and all(type(k) is int and k >= 1 for k in ks)
        ):
            problems.append(
                Problem(
                    '"ks" must be a list of positive integers',
                    fix=_REWRITE,
                    source=source,
                    field="settings.ks",
                )
            )
        for key in ("alpha", "confidence"):
            value = settings.get(key)
            if value is not None and not (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and 0.0 < value < 1.0
            ):
                problems.append(
                    Problem(
                        f'"{key}" must be a number between 0 and 1',
                        fix=_REWRITE,
                        source=source,
                        field=f"settings.{key}",
                    )
                )
        problems.extend(_recorded_number_problems(settings, source))
    snapshot = data.get("snapshot")
    if snapshot is not None:
        # Types only here: a report needs the relevant ranks; the offline compare and gate
        # commands check that every query has every metric (complete_snapshot_problems).
        problems.extend(
            snapshot_problems(snapshot, source=f"{source} (snapshot)", fix=_REWRITE, complete=False)
        )
    return problems


def _result_problems(results: Any, source: str) -> list[Problem]:
    """The overall and per-slice means a report shows and ``gate`` judges: each metric a
    number from 0 to 1, or null (every metric of ours is a share). A NaN, an Infinity or a 7.5
    edited in would be rendered, or pass a gate, as if the run had scored it."""
    problems: list[Problem] = []
    for index, row in enumerate(results if isinstance(results, list) else ()):
        metrics = row.get("metrics") if isinstance(row, dict) else None
        if metrics is None:
            continue
        if not isinstance(metrics, dict):
            problems.append(
                Problem(
                    '"metrics" must be an object of metric -> value',
                    fix=_REWRITE,
                    source=source,
                    field=f"results[{index}].metrics",
                )
            )
            continue
        for metric, value in metrics.items():
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if value is not None and not (number and 0.0 <= value <= 1.0):  # NaN fails too
                problems.append(
                    Problem(
                        f"{metric} = {value!r} is not a number between 0 and 1 (or null)",
                        fix=_REWRITE,
                        source=source,
                        field=f"results[{index}].metrics",
                    )
                )
                break
    return problems


def _leak_problems(leaks: Any, queries: Any, source: str) -> list[Problem]:
    """The ``leaks`` block and the per-query leaks the reports read: cutoffs positive
    integers, each row's ``documents`` / ``queries`` counts and ``share`` a number from 0 to 1
    (or null), each leak's ``rank`` a positive integer (the first problem of each part)."""

    def count(value: Any, low: int = 0) -> bool:
        return type(value) is int and value >= low

    def problem(message: str, where: str) -> Problem:
        return Problem(message, fix=_REWRITE, source=source, field=where)

    problems: list[Problem] = []
    if isinstance(leaks, dict):
        cutoffs = leaks.get("cutoffs")
        if not (isinstance(cutoffs, list) and cutoffs and all(count(k, 1) for k in cutoffs)):
            problems.append(problem('"cutoffs" must be a list of positive integers', "leaks"))
        rows = leaks.get("results")
        for index, row in enumerate(rows if isinstance(rows, list) else [None]):
            share = row.get("share") if isinstance(row, dict) else None
            number = isinstance(share, (int, float)) and not isinstance(share, bool)
            if not (
                isinstance(row, dict)
                and isinstance(row.get("metric"), str)
                and count(row.get("documents"))
                and count(row.get("queries"))
                and (share is None or (number and 0.0 <= share <= 1.0))
            ):
                problems.append(
                    problem(
                        "each leak result must have a metric, documents and queries counts "
                        "and a share from 0 to 1 (or null)",
                        f"leaks.results[{index}]",
                    )
                )
                break
    for index, query in enumerate(queries if isinstance(queries, list) else ()):
        found = query.get("leaks") if isinstance(query, dict) else None
        if found is None:
            continue
        if not (
            isinstance(found, list)
            and all(isinstance(leak, dict) and count(leak.get("rank"), 1) for leak in found)
        ):
            problems.append(
                problem('"leaks" must be a list of leaks, each with a rank', f"queries[{index}]")
            )
            break
    return problems


#: The numeric settings an artifact records that the offline commands use again (a
#: ``resamples`` edited to 10**17 would ask numpy for an array of that size).
_RECORDED_NUMBERS = (
    "depth",
    "min_grade",
    "worst",
    "seed",
    "resamples",
    "determinism_probe",
    "baseline_runs",
)


def _recorded_number_problems(settings: Mapping[str, Any], source: str) -> list[Problem]:
    """The recorded numeric settings outside the range the option table accepts."""
    from ..settings.resolve import option
    from ..settings.values import InvalidValue

    problems = []
    for key in _RECORDED_NUMBERS:
        value = settings.get(key)
        if value is None:
            continue
        try:
            if type(value) is not int:
                raise InvalidValue(f"{value!r} is not an integer")
            option(key).parse(str(value))
        except InvalidValue as exc:
            problems.append(
                Problem(
                    f'"{key}": {exc}',
                    fix=_REWRITE,
                    source=source,
                    field=f"settings.{key}",
                )
            )
    return problems


def _stop_problems(data: Mapping[str, Any], source: str) -> list[Problem]:
    """``status``, ``reason`` and ``fix``: absent, or a refused or errored run's (a status this
    version does not know would be read as a run with numbers)."""
    from ..verdict import ERRORED, REFUSED

    problems = []
    status = data.get("status")
    if "status" in data and status not in (REFUSED, ERRORED):
        problems.append(
            Problem(
                f'"status" must be "{REFUSED}" or "{ERRORED}" (not {status!r})',
                fix=_REWRITE,
                source=source,
                field="status",
            )
        )
    for key, optional in (("reason", False), ("fix", True)):
        value = data.get(key)
        if "status" in data and not (isinstance(value, str) or (optional and value is None)):
            shown = "a string or null" if optional else "a string"
            problems.append(
                Problem(f'"{key}" must be {shown}', fix=_REWRITE, source=source, field=key)
            )
    return problems
