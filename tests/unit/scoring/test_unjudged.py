"""Judgment holes in scoring: ``judged@K`` (coverage) and ``unjudged = skip`` (trec_eval ``-J``).

Expected values come from hand computation, or from an independent reference: the design seed's
formulas (copied below as they are written there) applied to each ranking after its unjudged
documents are removed, which is what trec_eval's ``-J`` (judged documents only) does. The peer
suite has no ``-J`` output, so the reference stands in for it; pytrec_eval's
``judged_docs_only_flag`` is checked as well (it is in the ``test`` extra).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from pytest_retrieval.errors import InputError
from pytest_retrieval.formats.trec import read_qrels, read_run
from pytest_retrieval.scoring.evaluate import evaluate
from pytest_retrieval.scoring.metrics import MetricSpec, judged_at_k

# --- judged@K by hand ----------------------------------------------------------------------


def test_judged_counts_grade_zero_as_judged_and_absent_ids_as_holes() -> None:
    grades = {"a": 2, "b": 0, "c": 1}
    # top 4 = a (judged), x (hole), b (judged, grade 0), y (hole): 2 of 4.
    assert judged_at_k(["a", "x", "b", "y", "c"], grades, 4) == 0.5
    # top 1 = a: 1 of 1; top 5 = a x b y c: 3 of 5.
    assert judged_at_k(["a", "x", "b", "y", "c"], grades, 1) == 1.0
    assert judged_at_k(["a", "x", "b", "y", "c"], grades, 5) == pytest.approx(3 / 5)


def test_judged_divides_by_the_results_returned_when_fewer_than_k() -> None:
    # 2 results, both judged: full coverage of what was shown, not 2/10.
    assert judged_at_k(["a", "b"], {"a": 1, "b": 0}, 10) == 1.0
    assert judged_at_k(["a", "x", "y"], {"a": 1}, 10) == pytest.approx(1 / 3)
    # Nothing returned: no coverage to measure.
    assert judged_at_k([], {"a": 1}, 10) is None


def test_judged_treats_negative_grades_as_unjudged_and_counts_a_repeated_id_once() -> None:
    # TREC's -1 is "in the pool, not judged".
    assert judged_at_k(["a", "b"], {"a": -1, "b": 0}, 2) == 0.5
    # A repeated id is one document, as in the quality metrics: a a x is the documents a, x,
    # one of them judged -> 1 of 2.
    assert judged_at_k(["a", "a", "x"], {"a": 1}, 3) == 0.5


def test_judged_has_one_spelling_and_needs_a_cutoff() -> None:
    assert str(MetricSpec.parse("Judged@10")) == "judged@10"
    assert MetricSpec.parse("judged@10") == MetricSpec("judged", 10)
    with pytest.raises(InputError, match="judged needs a cutoff"):
        MetricSpec.parse("judged")


def test_judged_in_batch_is_defined_for_no_answer_queries_whatever_no_relevant_says() -> None:
    run = {"answer": ["a", "x"], "no-answer": ["b", "y", "z", "w"], "empty": []}
    qrels = {"answer": {"a": 1}, "no-answer": {"b": 0, "z": 0}, "empty": {"a": 1}}
    for mode in ("skip", "zero", "one"):
        evaluation = evaluate(run, qrels, ["judged@4", "precision@4"], no_relevant=mode)
        per_query = evaluation.per_query
        # answer: a judged, x a hole -> 1/2 (two results); no-answer: b, z judged -> 2/4.
        assert per_query["answer"]["judged@4"] == 0.5
        assert per_query["no-answer"]["judged@4"] == 0.5
        assert per_query["empty"]["judged@4"] is None
        assert evaluation.means["judged@4"] == 0.5
        assert evaluation.counts["judged@4"] == 2
    skipped = evaluate(run, qrels, ["precision@4"], no_relevant="skip")
    assert skipped.per_query["no-answer"]["precision@4"] is None


def test_judged_is_measured_before_skip_removes_the_holes() -> None:
    run = {"q": ["x", "a", "y", "b"]}
    qrels = {"q": {"a": 1, "b": 0}}
    evaluation = evaluate(run, qrels, ["judged@2", "precision@2"], unjudged="skip")
    # Coverage of what the retriever showed: x is a hole, a is judged.
    assert evaluation.value("q", "judged@2") == 0.5
    # Scored as [a, b]: one relevant in the top 2.
    assert evaluation.value("q", "precision@2") == 0.5
    assert evaluation.unjudged == "skip"


def test_skip_by_hand() -> None:
    run = {"q": ["x", "a", "y", "b", "c"]}
    qrels = {"q": {"a": 1, "b": 0, "c": 1}}
    kept = evaluate(run, qrels, ["precision@2", "mrr", "map", "recall@2"])
    dropped = evaluate(run, qrels, ["precision@2", "mrr", "map", "recall@2"], unjudged="skip")
    # nonrelevant: x a | y b c -> P@2 = 1/2, RR = 1/2, AP = (1/2 + 2/5) / 2, R@2 = 1/2.
    assert kept.per_query["q"] == pytest.approx(
        {"precision@2": 0.5, "mrr": 0.5, "map": (0.5 + 0.4) / 2, "recall@2": 0.5}
    )
    # skip: the ranking becomes a b c -> P@2 = 1/2, RR = 1, AP = (1 + 2/3) / 2, R@2 = 1/2.
    assert dropped.per_query["q"] == pytest.approx(
        {"precision@2": 0.5, "mrr": 1.0, "map": (1 + 2 / 3) / 2, "recall@2": 0.5}
    )


def test_an_unknown_unjudged_mode_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'nonrelevant'.*'skip'"):
        evaluate({"q": ["a"]}, {"q": {"a": 1}}, ["mrr"], unjudged="drop")  # type: ignore[arg-type]


# --- the independent reference: drop the unjudged, then the seed's formulas ------------------


def _seed_precision(retrieved: Sequence[str], relevant: set[str], k: int) -> float:
    return sum(1 for d in retrieved[:k] if d in relevant) / k


def _seed_recall(retrieved: Sequence[str], relevant: set[str], k: int) -> float | None:
    if not relevant:
        return None
    return sum(1 for d in retrieved[:k] if d in relevant) / len(relevant)


def _seed_rr(retrieved: Sequence[str], relevant: set[str]) -> float:
    for i, d in enumerate(retrieved, start=1):
        if d in relevant:
            return 1.0 / i
    return 0.0


def _seed_ap(retrieved: Sequence[str], relevant: set[str], k: int) -> float | None:
    if not relevant:
        return None
    hits, total = 0, 0.0
    for i, d in enumerate(retrieved[:k], start=1):
        if d in relevant:
            hits += 1
            total += hits / i
    return total / len(relevant)


def _seed_ndcg(retrieved: Sequence[str], grades: Mapping[str, int], k: int) -> float | None:
    # The seed's formula with trec_eval's linear gain (g instead of 2**g - 1); grades <= 0
    # gain nothing.
    def dcg(values: Sequence[int]) -> float:
        return sum(max(g, 0) / math.log2(i + 1) for i, g in enumerate(values, 1))

    positive = {d: g for d, g in grades.items() if g > 0}
    if not positive:
        return None
    actual = [positive.get(d, 0) for d in retrieved[:k]]
    ideal = sorted(positive.values(), reverse=True)[:k]
    return dcg(actual) / dcg(ideal)


def _reference(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], min_grade: int = 1
) -> dict[str, dict[str, float | None]]:
    """Per query: the judged-only ranking scored with the seed's formulas (K = 5, 10, 1000)."""
    out: dict[str, dict[str, float | None]] = {}
    for qid, grades in qrels.items():
        ranking = [d for d in run.get(qid, ()) if grades.get(d, -1) >= 0]
        relevant = {d for d, g in grades.items() if g >= min_grade}
        if not relevant:
            continue
        values: dict[str, float | None] = {"mrr": _seed_rr(ranking, relevant)}
        for k in (5, 10, 1000):
            values[f"precision@{k}"] = _seed_precision(ranking, relevant, k)
            values[f"recall@{k}"] = _seed_recall(ranking, relevant, k)
            values[f"map@{k}"] = _seed_ap(ranking, relevant, k)
            values[f"ndcg@{k}"] = _seed_ndcg(ranking, grades, k)
        out[qid] = values
    return out


METRICS = [f"{m}@{k}" for m in ("precision", "recall", "map", "ndcg") for k in (5, 10, 1000)]
METRICS.append("mrr")


def _assert_matches_reference(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    min_grade: int = 1,
) -> int:
    expected = _reference(run, qrels, min_grade)
    got = evaluate(
        run, qrels, METRICS, gain="linear", min_grade=min_grade, unjudged="skip"
    ).per_query
    mismatches = [
        f"{qid} {metric}: reference {want}, ours {got[qid][metric]}"
        for qid, values in expected.items()
        for metric, want in values.items()
        if want is None or abs(want - (got[qid][metric] or 0.0)) > 1e-12
    ]
    assert not mismatches, "\n".join(mismatches)
    return len(expected)


@pytest.mark.parametrize(
    ("qrels", "run", "min_grade"),
    [
        ("qrels.test", "results.test", 1),
        ("qrels.test", "results.trunc", 1),
        # Graded, with -1 ("in the pool, not judged") in topic 303.
        ("qrels.rel_level", "results.test", 2),
    ],
)
def test_skip_matches_the_reference_on_the_peer_suite(
    trec_eval_dir: Path, qrels: str, run: str, min_grade: int
) -> None:
    judged = read_qrels(trec_eval_dir / qrels)
    ranked = read_run(trec_eval_dir / run)
    # The run really has holes, or the test would prove nothing.
    assert any(d not in judged[q] for q in ranked for d in ranked[q] if q in judged)
    plain = evaluate(ranked, judged, ["map@1000"], min_grade=min_grade).means["map@1000"]
    holes_removed = evaluate(ranked, judged, ["map@1000"], min_grade=min_grade, unjudged="skip")
    assert holes_removed.means["map@1000"] != plain
    assert _assert_matches_reference(ranked, judged, min_grade=min_grade) == 3


def _random_case(seed: int) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    rng = random.Random(seed)
    corpus = [f"d{i}" for i in range(60)]
    run: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(25):
        qid = f"q{q}"
        judged = rng.sample(corpus, rng.randint(1, 30))
        qrels[qid] = {d: rng.choice((0, 0, 1, 2, 3)) for d in judged}
        if q % 7 == 0:  # some queries whose judged docs are all grade 0
            qrels[qid] = dict.fromkeys(judged, 0)
        run[qid] = rng.sample(corpus, rng.randint(0, 40))
    return run, qrels


@pytest.mark.parametrize("seed", range(8))
def test_skip_matches_the_reference_on_seeded_random_runs(seed: int) -> None:
    run, qrels = _random_case(seed)
    assert _assert_matches_reference(run, qrels) > 0
    assert _assert_matches_reference(run, qrels, min_grade=2) > 0


# --- pytrec_eval's judged_docs_only_flag ---------------------------------------------------

_PYTREC = {
    **{f"P_{k}": f"precision@{k}" for k in (5, 10, 1000)},
    **{f"recall_{k}": f"recall@{k}" for k in (5, 10, 1000)},
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in (5, 10, 1000)},
    **{f"map_cut_{k}": f"map@{k}" for k in (5, 10, 1000)},
    "recip_rank": "mrr",
}


def _pytrec_values(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], min_grade: int
) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip(
        "pytrec_eval", reason="pytrec-eval-terrier is in the test extra; install it"
    )
    # Scores strictly descending: pytrec_eval's own tie-breaking never comes into play.
    scored = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in run.items() if r}
    # pytrec_eval reads the cutoffs from the measure names with parameters.
    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: dict(g) for q, g in qrels.items()},
        {
            "P.5,10,1000",
            "recall.5,10,1000",
            "ndcg_cut.5,10,1000",
            "map_cut.5,10,1000",
            "recip_rank",
        },
        relevance_level=min_grade,
        judged_docs_only_flag=True,
    )
    result: dict[str, dict[str, float]] = evaluator.evaluate(scored)
    return result


def _assert_matches_pytrec_eval(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], min_grade: int = 1
) -> int:
    theirs = _pytrec_values(run, qrels, min_grade)
    ours = evaluate(
        run, qrels, list(_PYTREC.values()), gain="linear", min_grade=min_grade, unjudged="skip"
    ).per_query
    compared = 0
    mismatches = []
    for qid, values in theirs.items():
        if ours[qid]["mrr"] is None:  # no relevant document: trec_eval scores 0, we skip
            continue
        compared += 1
        for measure, value in values.items():
            mine = ours[qid][_PYTREC[measure]]
            if mine is None or abs(mine - value) > 1e-9:
                mismatches.append(f"{qid} {measure}: pytrec_eval {value}, ours {mine}")
    assert not mismatches, "\n".join(mismatches)
    return compared


@pytest.mark.parametrize(
    ("qrels", "run", "min_grade"),
    [("qrels.test", "results.test", 1), ("qrels.rel_level", "results.test", 2)],
)
def test_skip_agrees_with_pytrec_eval_judged_docs_only_on_the_peer_suite(
    trec_eval_dir: Path, qrels: str, run: str, min_grade: int
) -> None:
    judged = read_qrels(trec_eval_dir / qrels)
    assert _assert_matches_pytrec_eval(read_run(trec_eval_dir / run), judged, min_grade) == 3


@pytest.mark.parametrize("seed", range(8))
def test_skip_agrees_with_pytrec_eval_judged_docs_only_on_seeded_random_runs(seed: int) -> None:
    run, qrels = _random_case(seed)
    assert _assert_matches_pytrec_eval(run, qrels) > 0
    assert _assert_matches_pytrec_eval(run, qrels, min_grade=2) > 0


def test_the_evaluate_command_takes_unjudged_skip(
    trec_eval_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from pytest_retrieval.cli import main

    qrels, run = trec_eval_dir / "qrels.test", trec_eval_dir / "results.test"
    argv = ["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "map@1000", "--json"]
    assert main([*argv, "--per-query", "--unjudged", "skip"]) == 0
    per_query = json.loads(capsys.readouterr().out)["per_query"]
    expected = _reference(read_run(run), read_qrels(qrels))
    assert {q: v["map@1000"] for q, v in per_query.items()} == pytest.approx(
        {q: v["map@1000"] for q, v in expected.items()}
    )
