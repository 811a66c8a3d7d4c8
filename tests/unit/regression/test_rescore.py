"""Baselines that survive new labels (``rescore``) and holes in regression diffs.

The numbers are hand-computed from rankings written out below; the property checked against
the design's statement is that a rescored old baseline gives the same verdict (and the same
numbers) as a fresh baseline made from the same rankings under the new labels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest

# numpy (through stats) must be imported early; see baseline_helpers.
import pytest_retrieval.scoring.stats  # noqa: F401
from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.golden.model import GoldenSet, Query
from pytest_retrieval.regression.outcome import RegressionOutcome
from pytest_retrieval.regression.pairs import CompareOptions
from pytest_retrieval.regression.rule import compare
from pytest_retrieval.regression.snapshot import (
    QuerySnapshot,
    Snapshot,
    average_snapshots,
    build_snapshot,
)
from pytest_retrieval.scoring.evaluate import evaluate

STAGE = "retriever"
SETTINGS = {"gain": "exponential", "min_grade": 1, "no_relevant": "skip", "depth": 3}
METRICS = ("precision@3", "mrr", "ndcg@3")


def golden(extra: Mapping[str, Mapping[str, int]] | None = None) -> GoldenSet:
    """q01..q12, each with doc-NN relevant; ``extra`` adds judgments (a merged worksheet)."""
    queries = []
    for n in range(1, 13):
        qid = f"q{n:02d}"
        judgments = {f"doc-{n:02d}": 1, **(extra or {}).get(qid, {})}
        queries.append(Query(qid, f"question {n:02d}", judgments))
    return GoldenSet(tuple(queries))


def snapshot(gold: GoldenSet, rankings: Mapping[str, Sequence[str]]) -> Snapshot:
    run = {q.id: list(rankings[q.id]) for q in gold}
    evaluation = evaluate(run, gold.qrels(), METRICS)
    return build_snapshot(
        gold,
        {STAGE: evaluation},
        lambda qid, stage: tuple(run[qid]),
        metric_names=METRICS,
        settings=SETTINGS,
    )


def check(
    baseline: Snapshot, current: Snapshot, mode: str, line: str = "precision@3 0.01"
) -> RegressionOutcome:
    return compare(
        baseline,
        current,
        parse_budget(line),
        options=CompareOptions(mode=mode, resamples=2000),
    )


def base_rankings() -> dict[str, list[str]]:
    # Every query: its relevant document first, then two unlabelled fillers.
    return {f"q{n:02d}": [f"doc-{n:02d}", f"new-{n:02d}", "filler"] for n in range(1, 13)}


#: The worksheet's labels: new-NN is relevant for q01..q08, judged not relevant for q09..q12.
MERGED = {f"q{n:02d}": {f"new-{n:02d}": 1 if n <= 8 else 0} for n in range(1, 13)}


def test_new_labels_make_a_baseline_incomparable_unless_rescored() -> None:
    old = snapshot(golden(), base_rankings())
    current = snapshot(golden(MERGED), base_rankings())
    strict = check(old, current, "strict")
    assert strict.status == "incomparable"
    assert "--retrieval-baseline-mode=rescore" in strict.message
    rescored = check(old, current, "rescore")
    # The same rankings on the same labels: P@3 = 2/3 for q01..q08, 1/3 for q09..q12, on both
    # sides, so the mean is (8 * 2/3 + 4 * 1/3) / 12 = 5/9 before and after.
    assert rescored.status == "pass"
    assert rescored.baseline_mean == pytest.approx(5 / 9, abs=1e-6)
    assert rescored.current_mean == pytest.approx(5 / 9, abs=1e-6)
    assert rescored.delta == 0
    assert "rescore mode" in rescored.message
    assert "12 relabelled queries" in rescored.message


@pytest.mark.parametrize("line", ["precision@3 0.01", "mrr 0.01", "ndcg@3 0.01"])
def test_rescoring_gives_the_verdict_of_a_fresh_baseline_on_unchanged_rankings(line: str) -> None:
    old = snapshot(golden(), base_rankings())
    # The new run: q01..q08 lose doc-NN to the bottom (new-NN, filler, doc-NN).
    degraded = base_rankings()
    for n in range(1, 9):
        degraded[f"q{n:02d}"] = [f"new-{n:02d}", "filler", f"doc-{n:02d}"]
    current = snapshot(golden(MERGED), degraded)
    fresh = snapshot(golden(MERGED), base_rankings())  # a baseline made after the merge
    rescored = check(old, current, "rescore", line)
    expected = check(fresh, current, "strict", line)
    assert expected.status in ("regression", "pass")
    assert (rescored.status, rescored.n) == (expected.status, expected.n)
    assert rescored.baseline_mean == pytest.approx(expected.baseline_mean)
    assert rescored.current_mean == pytest.approx(expected.current_mean)
    assert rescored.p_value == pytest.approx(expected.p_value)


def test_rescoring_by_hand_when_the_new_labels_turn_a_drop_into_a_tie() -> None:
    # Before the merge the swap doc-NN <-> new-NN (rank 1 -> 2) halves MRR on q01..q08; once
    # new-NN is labelled relevant there, MRR is 1 on both sides for them.
    swapped = base_rankings()
    for n in range(1, 9):
        swapped[f"q{n:02d}"] = [f"new-{n:02d}", f"doc-{n:02d}", "filler"]
    old = snapshot(golden(), base_rankings())
    unlabelled = check(old, snapshot(golden(), swapped), "strict", "mrr 0.01")
    # 8 queries at 1/2, 4 at 1: mean 2/3, a drop of 1/3, significant (p = 1/256).
    assert unlabelled.status == "regression"
    assert unlabelled.delta == pytest.approx(-1 / 3, abs=1e-6)
    # The diffs say why: new-NN is unjudged and now ranks above the lost doc-NN.
    assert unlabelled.hole_queries == 8
    assert unlabelled.hole_delta == pytest.approx(-1 / 3, abs=1e-6)
    assert unlabelled.worse[0].holes == 1
    assert "1 unjudged document now ranks above the lost one" in unlabelled.message
    assert "label them (pytest-retrieval golden pool)" in unlabelled.message
    rescored = check(old, snapshot(golden(MERGED), swapped), "rescore", "mrr 0.01")
    assert rescored.status == "pass"
    assert rescored.delta == pytest.approx(0.0)
    assert rescored.hole_queries == 0


def test_a_query_whose_text_changed_is_left_out_of_a_rescore() -> None:
    old = snapshot(golden(), base_rankings())
    queries = list(golden(MERGED))
    queries[0] = Query("q01", "a different question", queries[0].judgments)
    current = snapshot(GoldenSet(tuple(queries)), base_rankings())
    outcome = check(old, current, "rescore")
    assert outcome.n == 11
    assert "leaving out 1 whose text, context, split or slices changed (q01)" in outcome.message


def test_a_version_1_baseline_cannot_be_rescored_and_says_how_to_fix_it() -> None:
    new = snapshot(golden(), base_rankings())
    old = Snapshot(
        fingerprint=new.fingerprint,
        settings=new.settings,
        stages=new.stages,
        metrics=new.metrics,
        queries={
            qid: QuerySnapshot(q.split, q.slices, q.labels, q.metrics, q.relevant_ranks, q.top)
            for qid, q in new.queries.items()
        },
        schema_version=1,
    )
    outcome = check(old, snapshot(golden(MERGED), base_rankings()), "rescore")
    assert outcome.status == "incomparable"
    assert "schema version 1" in outcome.message
    assert "--retrieval-update-baseline" in outcome.message
    # Without a label change a version-1 baseline compares as it always did.
    assert check(old, new, "rescore").status == "pass"


def test_no_hole_when_the_documents_above_the_lost_one_are_judged() -> None:
    gold = golden({f"q{n:02d}": {"filler": 0, f"new-{n:02d}": 0} for n in range(1, 13)})
    old = snapshot(gold, base_rankings())
    swapped = base_rankings()
    for n in range(1, 9):
        swapped[f"q{n:02d}"] = ["filler", f"new-{n:02d}", f"doc-{n:02d}"]
    outcome = check(old, snapshot(gold, swapped), "strict", "mrr 0.01")
    assert outcome.status == "regression"
    assert outcome.hole_queries == 0
    assert outcome.hole_delta is None
    assert all(d.holes == 0 for d in outcome.worse)
    assert "unjudged" not in outcome.message


def test_holes_count_only_unjudged_documents_that_entered_above_the_lost_one() -> None:
    # q01 before: doc-01 new-01 filler; after: filler x-1 x-2 ... doc-01 left the top 3.
    # filler was below doc-01 before and is unjudged: a hole; x-1 and x-2 are new holes too.
    old = snapshot(golden(), base_rankings())
    moved = base_rankings()
    moved["q01"] = ["filler", "x-1", "x-2"]
    outcome = check(old, snapshot(golden(), moved), "strict", "mrr 0.01")
    (diff,) = outcome.worse
    assert (diff.query_id, diff.holes, diff.lost) == ("q01", 3, "doc-01")
    # One query changed: the sign-flip test cannot reach alpha, but the diff is still marked.
    assert outcome.hole_queries == 1
    assert outcome.hole_delta == pytest.approx(-1 / 12, abs=1e-6)
    again = RegressionOutcome.from_dict(outcome.to_dict())
    assert (again.hole_queries, again.worse[0].holes, again.worse[0].lost) == (1, 3, "doc-01")


def test_abstain_rate_is_refused_in_rescore_mode_with_the_reason() -> None:
    # A baseline stores rankings, not the retriever's scores, which abstain_rate reads: it
    # cannot be re-scored, and the check says so rather than "no query to compare".
    def scored(gold: GoldenSet) -> Snapshot:
        run = {q.id: base_rankings()[q.id] for q in gold}
        scores: dict[str, list[float | None]] = {qid: [0.9, 0.5, 0.1] for qid in run}
        metrics = (*METRICS, "abstain_rate")
        evaluation = evaluate(run, gold.qrels(), metrics, scores=scores, score_floor=0.3)
        return build_snapshot(
            gold,
            {STAGE: evaluation},
            lambda qid, stage: tuple(run[qid]),
            metric_names=metrics,
            settings={**SETTINGS, "score_floor": {"*": 0.3}},
        )

    outcome = check(scored(golden()), scored(golden(MERGED)), "rescore", "abstain_rate 0.01")
    assert outcome.status == "incomparable"
    assert (
        "incomparable in rescore mode: abstain_rate is measured on the retriever's scores, which "
        "a baseline does not store, so it cannot be re-scored"
    ) in outcome.message


def test_a_version_2_baseline_cut_at_the_depth_is_refused_for_whole_ranking_metrics() -> None:
    # Version 2 kept each ranking to the depth (3 here): every stored ranking reaches it, so a
    # relevant document below rank 3 could have been cut off: mrr (the whole ranking) cannot
    # be re-scored exactly; precision@3 reads only the top 3 and is re-scored.
    old = dataclasses.replace(snapshot(golden(), base_rankings()), schema_version=2)
    current = snapshot(golden(MERGED), base_rankings())
    refused = check(old, current, "rescore", "mrr 0.01")
    assert refused.status == "incomparable"
    assert (
        "the baseline (schema version 2) stores each ranking cut at the retrieval depth (3), "
        "and mrr reads the whole ranking: 12 of its rankings reach the cut"
    ) in refused.message
    assert "refresh the baseline once (--retrieval-update-baseline)" in refused.message
    assert check(old, current, "rescore", "precision@3 0.01").status == "pass"
    # Rankings shorter than the cut were whole: re-scored.
    short = {qid: ranking[:2] for qid, ranking in base_rankings().items()}
    whole = dataclasses.replace(snapshot(golden(), short), schema_version=2)
    assert check(whole, snapshot(golden(MERGED), short), "rescore", "mrr 0.01").status == "pass"


def test_a_baseline_of_several_runs_says_why_it_cannot_be_rescored() -> None:
    # It holds the means of its runs and one run's rankings: re-scoring those would not give
    # its values. The reason is that, not the schema version.
    runs = average_snapshots([snapshot(golden(), base_rankings())] * 2)
    assert runs.n_runs == 2
    outcome = check(runs, snapshot(golden(MERGED), base_rankings()), "rescore")
    assert outcome.status == "incomparable"
    assert (
        "incomparable in rescore mode: the baseline holds the means of 2 runs of the retriever "
        "(retrieval_baseline_runs) and one run's rankings, so it cannot be re-scored"
    ) in outcome.message
    assert "schema version" not in outcome.message


def test_stale_at_k_is_refused_in_rescore_mode_with_the_reason() -> None:
    # A baseline stores rankings, not the forbidden and stale documents its run had: stale@3
    # cannot be re-scored from them, and the check says so rather than compare Nones.
    def scored(gold: GoldenSet) -> Snapshot:
        run = {q.id: base_rankings()[q.id] for q in gold}
        metrics = (*METRICS, "stale@3")
        evaluation = evaluate(run, gold.qrels(), metrics, stale={"filler"})
        return build_snapshot(
            gold,
            {STAGE: evaluation},
            lambda qid, stage: tuple(run[qid]),
            metric_names=metrics,
            settings=SETTINGS,
        )

    baseline = scored(golden())
    # "filler" at rank 3 of every ranking: stale@3 = 1/3 for each query.
    assert baseline.queries["q01"].metrics[STAGE]["stale@3"] == pytest.approx(1 / 3)
    outcome = check(baseline, scored(golden(MERGED)), "rescore", "stale@3 0.01")
    assert outcome.status == "incomparable"
    assert outcome.message == (
        "incomparable in rescore mode: stale@3 is counted from the forbidden and stale documents "
        "of the golden set and the corpus as they were, which a baseline does not store, so it "
        "cannot be re-scored; compare the unchanged queries with "
        "--retrieval-baseline-mode=intersect, or refresh the baseline"
    )
