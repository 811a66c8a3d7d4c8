"""Agreement with trec_eval 10.0 on its own test files, per query and over all queries.

trec_eval prints 4 decimals, so every value must be within 5e-5 of the printed one. The measure
names map to ours as documented in the README's "trec_eval compatibility" section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_retrieval.formats.trec import read_qrels, read_run
from pytest_retrieval.scoring.evaluate import evaluate

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
MEASURES = {
    **{f"P_{k}": f"precision@{k}" for k in CUTOFFS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTOFFS},
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTOFFS},
    **{f"map_cut_{k}": f"map@{k}" for k in CUTOFFS},
    **{f"success_{k}": f"hit_rate@{k}" for k in (1, 5, 10)},
    "map": "map",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "ndcg": "ndcg",
}

# expected output, qrels, run, the options matching trec_eval's command line, topics expected.
CASES = [
    ("out.test.aq", "qrels.test", "results.test", {}, 3),
    # -c: topic 302 is judged but missing from the run, and counts as 0.
    ("out.test.aqc", "qrels.test", "results.trunc", {}, 3),
    # -l2: binary measures count grade >= 2; NDCG (linear) uses every positive grade.
    ("out.test.aql", "qrels.rel_level", "results.test", {"min_grade": 2}, 3),
    # `#` comments and ids containing `#`; a zero-relevant topic averaged in as 0.
    ("out.comment.test", "qrels.comment.test", "results.comment.test", {"no_relevant": "zero"}, 31),
]


def _expected(path: Path) -> dict[tuple[str, str], float]:
    values = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split()
        if measure in MEASURES:
            values[(measure, qid)] = float(value)
    return values


@pytest.mark.parametrize(
    ("out", "qrels", "run", "options", "topics"), CASES, ids=[c[0] for c in CASES]
)
def test_every_value_matches_trec_eval_within_its_printed_precision(
    trec_eval_dir: Path, out: str, qrels: str, run: str, options: dict[str, Any], topics: int
) -> None:
    expected = _expected(trec_eval_dir / out)
    assert len(expected) >= 12, "the oracle file lost its measures"
    evaluation = evaluate(
        read_run(trec_eval_dir / run),
        read_qrels(trec_eval_dir / qrels),
        sorted(set(MEASURES.values())),
        gain="linear",
        **options,
    )
    assert evaluation.evaluated == topics
    per_query = evaluation.per_query
    means = evaluation.means
    mismatches = []
    for (measure, qid), want in expected.items():
        got = means[MEASURES[measure]] if qid == "all" else per_query[qid][MEASURES[measure]]
        if got is None or abs(got - want) > 5e-5:
            mismatches.append(f"{measure} {qid}: trec_eval {want:.4f}, ours {got}")
    assert not mismatches, "\n".join(mismatches)


def test_the_comment_suite_has_one_zero_relevant_topic_that_skip_leaves_out(
    trec_eval_dir: Path,
) -> None:
    qrels = read_qrels(trec_eval_dir / "qrels.comment.test")
    run = read_run(trec_eval_dir / "results.comment.test")
    skipped = evaluate(run, qrels, ["precision@10"], gain="linear")
    zero = evaluate(run, qrels, ["precision@10"], gain="linear", no_relevant="zero")
    assert skipped.skipped_no_relevant == ("2024-36302",)
    assert skipped.evaluated == 30
    assert len(skipped.without_judgments) == 270  # run topics that nobody judged
    # The trec_eval README's rule: under skip, a mean becomes all * 31 / 30.
    assert skipped.means["precision@10"] == pytest.approx(zero.means["precision@10"] * 31 / 30)


def test_the_missing_topic_is_reported_as_missing_from_the_run(trec_eval_dir: Path) -> None:
    evaluation = evaluate(
        read_run(trec_eval_dir / "results.trunc"), read_qrels(trec_eval_dir / "qrels.test"), ["map"]
    )
    assert evaluation.missing_from_run == ("302",)
    assert evaluation.per_query["302"]["map"] == 0.0
