"""One ``Conventions`` value for every scoring path, and ``min_grade`` as trec_eval ``-lN``.

The min_grade numbers are pytrec_eval's (an independent implementation of trec_eval) with
``relevance_level = N``; the exponential gain is checked through the same library by giving it
the grades ``2**g - 1`` (its gain is linear, so ``2**g - 1`` is our exponential gain, and
``g >= N`` exactly when ``2**g - 1 >= 2**N - 1``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import pytrec_eval

from pytest_retrieval.cli import main
from pytest_retrieval.scoring.dedup import DuplicateGroups
from pytest_retrieval.scoring.evaluate import Conventions, evaluate
from pytest_retrieval.settings.resolve import resolve

#: Graded judgments with queries whose positive grades all sit below 2 ("ones") or 3 ("twos"),
#: one with no positive grade at all ("zero") and ordinary ones.
QRELS = {
    "mixed": {"a": 3, "b": 2, "c": 1, "d": 0},
    "ones": {"a": 1, "b": 1, "e": 0},
    "twos": {"a": 2, "c": 1},
    "zero": {"a": 0, "b": 0},
    "deep": {"f": 3, "a": 1},
}
RUN = {
    "mixed": ["c", "x", "a", "b", "d"],
    "ones": ["x", "b", "a"],
    "twos": ["c", "a", "y"],
    "zero": ["a", "b"],
    "deep": ["a", "x", "y", "z", "f"],
}
#: Our spelling → trec_eval's measure.
MEASURES = {
    "ndcg@3": "ndcg_cut_3",
    "ndcg": "ndcg",
    "precision@3": "P_3",
    "recall@3": "recall_3",
    "map": "map",
    "map@3": "map_cut_3",
    "mrr": "recip_rank",
    "r_precision": "Rprec",
    "hit_rate@3": "success_3",
}


def trec_eval(level: int, *, exponential: bool) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values at ``relevance_level = level`` (scores descending)."""
    qrels = {
        qid: {doc: (2**g - 1 if exponential else g) for doc, g in judged.items()}
        for qid, judged in QRELS.items()
    }
    run = {
        qid: {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}
        for qid, ranking in RUN.items()
    }
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, set(MEASURES.values()), relevance_level=2**level - 1 if exponential else level
    )
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


@pytest.mark.parametrize("gain", ["linear", "exponential"])
@pytest.mark.parametrize("min_grade", [1, 2, 3])
def test_min_grade_with_no_relevant_zero_is_trec_eval_with_its_relevance_level(
    min_grade: int, gain: str
) -> None:
    expected = trec_eval(min_grade, exponential=gain == "exponential")
    ev = evaluate(RUN, QRELS, list(MEASURES), gain=gain, min_grade=min_grade, no_relevant="zero")  # type: ignore[arg-type]
    assert set(expected) == set(QRELS)  # trec_eval scores every query, the zero one too
    for qid, values in expected.items():
        for ours, theirs in MEASURES.items():
            assert ev.per_query[qid][ours] == pytest.approx(values[theirs], abs=1e-12), (
                qid,
                ours,
            )
    for ours, theirs in MEASURES.items():
        mean = sum(values[theirs] for values in expected.values()) / len(expected)
        assert ev.means[ours] == pytest.approx(mean, abs=1e-12)


def test_a_query_graded_below_min_grade_keeps_its_ndcg_by_hand() -> None:
    # "ones" at min_grade 2, linear gain: x, b (1), a (1). DCG@3 = 1/log2(3) + 1/log2(4),
    # IDCG@3 = 1 + 1/log2(3): 0.6934. It has no relevant document for the binary metrics.
    ev = evaluate(RUN, QRELS, ["ndcg@3", "recall@3", "mrr"], gain="linear", min_grade=2)
    zero = evaluate(
        RUN, QRELS, ["ndcg@3", "recall@3", "mrr"], gain="linear", min_grade=2, no_relevant="zero"
    )
    one = evaluate(
        RUN, QRELS, ["ndcg@3", "recall@3", "mrr"], gain="linear", min_grade=2, no_relevant="one"
    )
    ndcg = (1 / math.log2(3) + 1 / 2) / (1 + 1 / math.log2(3))
    assert zero.per_query["ones"] == {"ndcg@3": pytest.approx(ndcg), "recall@3": 0.0, "mrr": 0.0}
    assert one.per_query["ones"] == {"ndcg@3": pytest.approx(ndcg), "recall@3": 1.0, "mrr": 1.0}
    # skip: skipped for every metric, NDCG too, and counted.
    assert ev.per_query["ones"] == {"ndcg@3": None, "recall@3": None, "mrr": None}
    assert ev.skipped_no_relevant == ("ones", "zero")
    # The query without any positive grade has no NDCG to score: the convention's constant.
    assert zero.per_query["zero"] == {"ndcg@3": 0.0, "recall@3": 0.0, "mrr": 0.0}
    assert one.per_query["zero"] == {"ndcg@3": 1.0, "recall@3": 1.0, "mrr": 1.0}
    assert zero.skipped_no_relevant == one.skipped_no_relevant == ()


def write_trec(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, judged in QRELS.items() for d, g in judged.items()),
        encoding="utf-8",
    )
    run = tmp_path / "run.txt"
    run.write_text(
        "".join(
            f"{q} Q0 {d} {i + 1} {len(ranking) - i} t\n"
            for q, ranking in RUN.items()
            for i, d in enumerate(ranking)
        ),
        encoding="utf-8",
    )
    return qrels, run


@pytest.mark.parametrize("min_grade", [1, 2, 3])
def test_the_cli_reproduces_trec_eval_l_n(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], min_grade: int
) -> None:
    # The command: evaluate --gain linear --min-grade 2 --no-relevant zero -m ndcg@3.
    qrels, run = write_trec(tmp_path)
    expected = trec_eval(min_grade, exponential=False)
    args = ["evaluate", "--qrels", str(qrels), "--run", str(run), "--json", "--per-query"]
    args += ["--gain", "linear", "--min-grade", str(min_grade), "--no-relevant", "zero"]
    assert main([*args, "-m", *MEASURES, "--no-id-check"]) == 0
    document = json.loads(capsys.readouterr().out)
    for ours, theirs in MEASURES.items():
        mean = sum(values[theirs] for values in expected.values()) / len(expected)
        assert document["metrics"][ours] == pytest.approx(mean, abs=1e-12), ours
        for qid, values in expected.items():
            assert document["per_query"][qid][ours] == pytest.approx(values[theirs], abs=1e-12)


# --- the Conventions value --------------------------------------------------------------------


def test_conventions_give_the_numbers_of_the_same_keyword_arguments() -> None:
    groups = DuplicateGroups.from_groups([["a", "b"]])
    keywords = evaluate(
        RUN,
        QRELS,
        list(MEASURES),
        gain="linear",
        min_grade=2,
        no_relevant="zero",
        duplicates=groups,
        unjudged="skip",
    )
    conventions = Conventions(
        gain="linear", min_grade=2, no_relevant="zero", duplicates=groups, unjudged="skip"
    )
    value = evaluate(RUN, QRELS, list(MEASURES), conventions=conventions)
    assert value.per_query == keywords.per_query
    assert value.conventions == keywords.conventions == conventions
    assert (value.gain, value.min_grade, value.no_relevant) == ("linear", 2, "zero")
    assert value.deduplicated
    assert value.unjudged == "skip"


def test_conventions_and_keyword_arguments_together_are_refused() -> None:
    with pytest.raises(ValueError, match=r"not both \(gain=, min_grade= given with conventions="):
        evaluate(RUN, QRELS, ["mrr"], conventions=Conventions(), gain="linear", min_grade=2)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gain", "log", "gain must be 'exponential'"),
        ("min_grade", 0, "min_grade must be an integer >= 1"),
        ("no_relevant", "none", "no_relevant must be 'skip', 'zero' or 'one'"),
        ("unjudged", "drop", "unjudged must be 'nonrelevant'"),
        ("cutoff_unit", "chunks", "cutoff_unit must be 'documents'"),
        ("repeated_ids", "keep", "repeated_ids must be 'best_rank'"),
        ("score_floor", "high", "score_floor must be a number or None"),
        ("stage_floors", (("reranker", math.nan),), "the floor of stage 'reranker' must be"),
    ],
)
def test_a_convention_no_path_knows_is_refused_when_the_value_is_made(
    field: str, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Conventions(**{field: value})  # type: ignore[arg-type]


def test_from_settings_carries_every_setting_that_changes_numbers() -> None:
    settings = resolve(
        {},
        {
            "golden": "g.yaml",
            "gain": "linear",
            "min_grade": "2",
            "no_relevant": "zero",
            "unjudged": "skip",
            "score_floor": "0.4, reranker=empty",
            "cutoff_unit": "results",
        },
    )
    groups = DuplicateGroups.from_groups([["a", "b"]])
    conventions = Conventions.from_settings(settings, duplicates=groups)
    assert conventions == Conventions(
        gain="linear",
        min_grade=2,
        no_relevant="zero",
        unjudged="skip",
        duplicates=groups,
        score_floor=0.4,
        stage_floors=(("reranker", -math.inf),),
        repeated_ids="best_rank",
        cutoff_unit="results",
    )
    assert conventions.floor_for("retriever") == 0.4  # the floor of every stage
    assert conventions.floor_for("reranker") == -math.inf  # its own
    # What a baseline records of these settings gives the same conventions back (the rescore
    # mode and pytest-retrieval compare read them), the groups apart: only their fingerprint
    # is recorded.
    recorded = Conventions.from_recorded(settings.affecting_numbers(), duplicates=groups)
    assert recorded == conventions
    # A run read from run files refuses repeated ids, as its reader does.
    stored = resolve({}, {"golden": "g.yaml", "run": "run.jsonl"})
    assert Conventions.from_settings(stored).repeated_ids == "refuse"
    assert Conventions.from_settings(resolve({}, {"golden": "g.yaml"})) == Conventions()


def test_repeated_ids_refused_by_the_conventions_name_the_query_and_the_id() -> None:
    refuse = Conventions(repeated_ids="refuse")
    assert evaluate({"q": ["a", "c"]}, {"q": {"c": 1}}, ["mrr"], conventions=refuse).means == {
        "mrr": 0.5
    }
    with pytest.raises(ValueError, match=r"run\['q'\] lists 'a' twice, and these conventions"):
        evaluate({"q": ["a", "a", "c"]}, {"q": {"c": 1}}, ["mrr"], conventions=refuse)


def test_an_evaluation_restricted_to_a_slice_keeps_its_conventions() -> None:
    conventions = dataclasses.replace(Conventions(), min_grade=2, no_relevant="zero")
    ev = evaluate(RUN, QRELS, ["mrr"], conventions=conventions)
    assert ev.restrict(["mixed"]).conventions is conventions
