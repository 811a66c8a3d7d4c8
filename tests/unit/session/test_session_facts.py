"""The run checks, the summary and the run source take facts, not a session; a session built
directly (stand-in callbacks, no pytest) gives them its own (findings, sessionledger).

Expected texts and numbers are worked out by hand in the comments."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import pytest

from pytest_retrieval.golden.model import GoldenSet, Query
from pytest_retrieval.report.summary import columns, refused, table
from pytest_retrieval.run import checks as runchecks
from pytest_retrieval.run.retriever import RETRIEVER_STAGE, QueryOutcome, QueryRequest
from pytest_retrieval.run.shortrankings import RankedRun, depth_problem
from pytest_retrieval.run.source import RunInfo, obtain
from pytest_retrieval.scoring.metrics import MetricSpec
from pytest_retrieval.session import findings
from pytest_retrieval.session import ledger as sessionledger
from pytest_retrieval.session.session import RetrievalSession
from pytest_retrieval.settings.resolve import Settings

GOLDEN = GoldenSet(
    (
        Query("t1", "refunds", ["a"], split="tune"),
        Query("t2", "returns", ["b"], split="tune"),
        Query("h1", "exports", ["c"], split="heldout"),
    )
)


def _stop(reason: str) -> NoReturn:
    raise LookupError(reason)


def session_of(settings: Settings) -> RetrievalSession:
    return RetrievalSession(settings=settings, golden=GOLDEN, on_skip=_stop, on_sealed=_stop)


def ranked(qid: str, *ids: str) -> QueryOutcome:
    return QueryOutcome(qid, rankings={RETRIEVER_STAGE: ids}, latency_ms={RETRIEVER_STAGE: 1.0})


def failed(qid: str) -> QueryOutcome:
    return QueryOutcome(
        qid, error="timed out", error_type="TimeoutError", error_stage=RETRIEVER_STAGE
    )


def test_every_query_failed_quotes_the_first_visible_query_never_a_held_out_one() -> None:
    session = session_of(Settings(heldout=True))  # unsealed, aggregates only
    session.set_outcomes([failed("h1"), failed("t2"), failed("t1")])
    stop = findings.every_query_failed(session)
    assert stop is not None
    # h1 comes first but is held out: t2 is the first visible failure.
    assert stop.reason == (
        "every query failed in the retriever (3 of 3); the first, query 't2' [retriever]: "
        "TimeoutError: timed out"
    )


def test_every_query_failed_of_held_out_queries_only_names_none() -> None:
    stop = runchecks.every_query_failed([failed("h1")], redacted=lambda qid: True)
    assert stop is not None
    assert stop.reason == (
        "every query failed in the retriever (1 of 1) (held-out queries: details hidden; "
        "--retrieval-heldout-details shows them)"
    )
    assert runchecks.every_query_failed([failed("h1"), ranked("t1", "a")], lambda q: False) is None


def test_short_rankings_of_a_session_read_its_run_and_its_cutoffs() -> None:
    session = session_of(Settings(ks=(10,), metrics=("recall",)))
    session.set_outcomes([ranked("t1", "a", "x", "y"), ranked("t2", "b", "z", "w")])
    (found,) = findings.short_rankings(session)
    # Two rankings of 3 results against K = 10 at the configured depth 10: both short.
    assert found.finding == (
        "short rankings [retriever]: 2 of 2 rankings are shorter than the cutoff 10 (longest 3, "
        "median 3; 10 were asked for); every metric at @10 is scored on at most 3 results"
    )
    assert found.fix == (
        "make the retriever return 10 results per query, or lower retrieval_ks "
        "(retrieval_short_rankings = off if the corpus is that small)"
    )
    off = session_of(Settings(ks=(10,), metrics=("recall",), short_rankings="off"))
    off.set_outcomes([ranked("t1", "a", "x", "y"), ranked("t2", "b", "z", "w")])
    assert findings.short_rankings(off) == []


def run_of(*outcomes: QueryOutcome, stored: bool = False) -> RankedRun:
    return RankedRun({o.query_id: o for o in outcomes}, (RETRIEVER_STAGE,), depth=10, stored=stored)


def test_a_gate_deeper_than_every_ranking_is_refused_from_the_run_alone() -> None:
    run = run_of(ranked("t1", "a", "x", "y"), ranked("t2", "b"))
    spec = MetricSpec("recall", 10)
    assert depth_problem(run, spec, RETRIEVER_STAGE) == (
        "recall@10 cannot be scored: every ranking [retriever] is shorter than 10 (longest 3, "
        "10 asked for), so it would be scored on at most 3 results. Fix: make the retriever "
        "return at least 10 results per query; if 10 is deeper than you need, gate a smaller "
        "K (retrieval_short_rankings = off if the corpus is that small)"
    )
    stored = run_of(ranked("t1", "a", "x", "y"), stored=True)
    assert "(longest 3, as stored in the run file)" in (
        depth_problem(stored, spec, RETRIEVER_STAGE) or ""
    )
    # recall@3 is filled by the longest ranking: nothing to refuse.
    assert depth_problem(run, MetricSpec("recall", 3), RETRIEVER_STAGE) is None


def test_the_summary_table_shows_no_number_a_gate_would_refuse() -> None:
    session = session_of(Settings(ks=(1, 10), metrics=("recall",)))
    session.set_outcomes([ranked("t1", "a", "x", "y"), ranked("t2", "z", "b", "w")])
    specs = session.settings.metric_specs
    no_number = refused(session.ranked_run(), RETRIEVER_STAGE, specs)
    assert no_number == frozenset({"recall@10"})
    assert refused(None, RETRIEVER_STAGE, specs) == frozenset()  # no run, nothing refused
    cols = [(label, session.select(s)) for label, s in columns(GOLDEN, session.scope)]
    headers, rows = table(session.evaluation(RETRIEVER_STAGE, specs), cols, specs, no_number)
    # Sealed: one column, the two tune queries. recall@1: t1 finds a first (1), t2 finds z (0).
    assert headers == ["metric", "overall (n=2)"]
    assert rows == [["recall@1", 0.5], ["recall@10", None]]


def test_obtain_returns_where_the_run_came_from_and_leaves_the_session_alone(
    tmp_path: Path,
) -> None:
    session = session_of(Settings())
    asked: list[str] = []

    def compute(requests: Sequence[QueryRequest]) -> list[QueryOutcome]:
        asked.extend(r.id for r in requests)
        return [ranked(r.id, "a") for r in requests]

    outcomes, info = obtain(
        session.settings,
        session.scorable_queries(),
        rootdir=tmp_path,
        compute=compute,
        redacted=session.scope.redacted,
        depth=session.first_depth,
    )
    assert asked == ["t1", "t2"]  # sealed: the held-out query is never run
    assert [o.query_id for o in outcomes] == ["t1", "t2"]
    assert info == RunInfo(called=2)
    assert session.run_info is None  # the caller keeps it: RetrievalSession.set_run_info
    session.set_run_info(info)
    assert session.run_info is info


def test_a_session_without_a_commit_records_nothing_in_the_ledger() -> None:
    session = session_of(Settings())
    session.set_outcomes([ranked("t1", "a"), ranked("t2", "b")])
    assert sessionledger.entry_of(session, plugin_version="0") is None


@pytest.mark.parametrize("details", [False, True])
def test_the_coverage_where_the_gates_look_leaves_the_held_out_split_out(details: bool) -> None:
    session = session_of(
        Settings(ks=(2,), metrics=("recall",), heldout=True, heldout_details=details)
    )
    # t1: a judged, x not: judged@2 = 0.5; t2: b judged, z not: 0.5; h1 (held out): c, d.
    session.set_outcomes([ranked("t1", "a", "x"), ranked("t2", "z", "b"), ranked("h1", "c", "d")])
    (found,) = findings.coverage(session)
    assert (found.stage, found.cutoff, found.value, found.queries, found.with_holes) == (
        RETRIEVER_STAGE,
        2,
        0.5,
        2,
        2,
    )
