"""No-answer queries (``abstain_rate``, ``answer_rate``, the sweep) and duplicate groups
(scoring per group, ``distinct@K``), on examples small enough to compute by hand.

The per-group numbers use the design seed's worked Example 3: relevant {A, C} in the ranking
[A, B, C, D, E] gives NDCG@5 = 1.5 / 1.6309 = 0.9197. Here B is A's copy (A2), judged relevant
too: scored raw, precision@5 counts three hits; scored per group, the copy is filler and the
numbers are the seed's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_retrieval.errors import GoldenSetError, InputError
from pytest_retrieval.formats.corpus import read_corpus_ids, read_corpus_texts
from pytest_retrieval.run.cachekey import CacheEntry, CacheKey
from pytest_retrieval.run.store import RunCache
from pytest_retrieval.scoring.abstention import ANY_RESULT, sweep
from pytest_retrieval.scoring.dedup import (
    DuplicateGroups,
    distinct_at_k,
    exact_groups,
    judged_duplicates,
    load_duplicates,
    near_groups,
    parse_duplicates,
)
from pytest_retrieval.scoring.evaluate import Conventions, evaluate
from pytest_retrieval.scoring.metrics import MetricSpec
from pytest_retrieval.settings.resolve import resolve

# --- abstention --------------------------------------------------------------------------------

#: a1, a2 answerable; n1, n2, n3 no-answer (n3's ranking is empty).
QRELS = {"a1": {"x": 1}, "a2": {"y": 2}, "n1": {}, "n2": {"z": 0}, "n3": {}}
RUN = {"a1": ["x", "q"], "a2": ["q", "y"], "n1": ["p"], "n2": ["z", "p"], "n3": []}
SCORES: dict[str, list[float | None]] = {
    "a1": [0.9, 0.1],
    "a2": [0.3, 0.2],
    "n1": [0.7],
    "n2": [0.2, None],
}
ABSTENTION = ["abstain_rate", "answer_rate"]


def test_a_floor_splits_answers_from_abstentions_by_hand() -> None:
    # floor 0.5: a1 answers (0.9), a2 does not (0.3) -> answer_rate 1/2; n1 answers (0.7) and
    # so fails to abstain, n2 (0.2) and n3 (empty) abstain -> abstain_rate 2/3.
    result = evaluate(RUN, QRELS, ABSTENTION, scores=SCORES, score_floor=0.5)
    assert result.means["answer_rate"] == pytest.approx(0.5)
    assert result.means["abstain_rate"] == pytest.approx(2 / 3)
    assert result.counts == {"abstain_rate": 3, "answer_rate": 2}
    # Each is None outside its domain, so slices and macro means see their own queries only.
    assert result.per_query["a1"] == {"abstain_rate": None, "answer_rate": 1.0}
    assert result.per_query["n1"] == {"abstain_rate": 0.0, "answer_rate": None}
    assert result.unmeasured == {}
    assert result.restrict(["n2", "n3"]).means == {"abstain_rate": 1.0, "answer_rate": None}


def test_the_floor_is_inclusive() -> None:
    result = evaluate(RUN, QRELS, ABSTENTION, scores=SCORES, score_floor=0.7)
    assert result.value("n1", "abstain_rate") == 0.0  # 0.7 is at the floor: an answer


def test_without_scores_only_empty_means_nothing() -> None:
    # floor `empty`: any result answers. a1, a2 answer (1.0); n1, n2 answer, n3 is empty: 1/3.
    result = evaluate(RUN, QRELS, ABSTENTION, score_floor=ANY_RESULT)
    assert result.means == {"abstain_rate": pytest.approx(1 / 3), "answer_rate": 1.0}


def test_without_a_floor_or_without_scores_they_cannot_be_measured() -> None:
    no_floor = evaluate(RUN, QRELS, [*ABSTENTION, "recall@2"], scores=SCORES)
    assert no_floor.means["abstain_rate"] is None
    assert "no score floor" in no_floor.unmeasured["abstain_rate"]
    assert no_floor.means["recall@2"] == pytest.approx(1.0)  # the other metrics are unaffected
    no_scores = evaluate(RUN, QRELS, ABSTENTION, score_floor=0.5)
    assert set(no_scores.unmeasured) == {"abstain_rate", "answer_rate"}
    assert "needs scores" in no_scores.unmeasured["answer_rate"]
    assert "'a1'" in no_scores.unmeasured["answer_rate"]
    assert all(v is None for v in no_scores.columns["abstain_rate"])


def test_abstention_ignores_the_no_relevant_convention_and_missing_queries_score_zero() -> None:
    run = {qid: r for qid, r in RUN.items() if qid not in ("a2", "n2")}  # both failed
    result = evaluate(
        run, QRELS, ["abstain_rate", "answer_rate", "recall@2"], scores=SCORES,
        score_floor=0.5, no_relevant="zero",
    )  # fmt: skip
    assert result.value("n3", "recall@2") == 0.0  # no_relevant="zero" for the judged metrics
    assert result.value("n3", "abstain_rate") == 1.0  # ... but not for abstention
    # A query missing from the run (its call failed) neither abstains nor answers.
    assert result.value("n2", "abstain_rate") == 0.0
    assert result.value("a2", "answer_rate") == 0.0


def test_the_sweep_by_hand() -> None:
    # Top scores: a1 0.9, a2 0.3, n1 0.7, n2 0.2, n3 none. The candidates are the observed top
    # scores plus the configured floor 0.5.
    found = sweep("retriever", list(QRELS), RUN, QRELS, SCORES, floor=0.5)
    assert found is not None
    assert (found.no_answer, found.answerable) == (3, 2)
    table = [(p.floor, p.abstain_rate, p.answer_rate) for p in found.points]
    assert table == [
        (0.2, pytest.approx(1 / 3), 1.0),  # n2 (0.2) answers at 0.2; only n3 abstains
        (0.3, pytest.approx(2 / 3), 1.0),
        (0.5, pytest.approx(2 / 3), 0.5),
        (0.7, pytest.approx(2 / 3), 0.5),  # n1's 0.7 is at the floor: still an answer
        (0.9, 1.0, 0.5),
    ]
    assert sweep("retriever", list(QRELS), RUN, QRELS, {}) is None  # no scores, no sweep


def test_the_sweep_keeps_at_most_its_points_spread_over_the_scores() -> None:
    qrels = {f"q{i}": ({"d": 1} if i % 2 else {}) for i in range(100)}
    run = {qid: ["d"] for qid in qrels}
    scores: dict[str, list[float | None]] = {f"q{i}": [i / 100] for i in range(100)}
    found = sweep("retriever", list(qrels), run, qrels, scores, points=5)
    assert found is not None
    floors = [p.floor for p in found.points]
    assert floors == [0.0, 0.25, 0.5, 0.74, 0.99]  # ranks 0, 25, 50, 74 (24.75 rounded), 99
    rates = [p.abstain_rate for p in found.points]
    assert rates == sorted(rates)


def test_score_floor_settings_per_stage() -> None:
    settings = resolve({}, {"golden": "g.yaml", "score_floor": "retriever=0.5, reranker=0.2"})
    conventions = Conventions.from_settings(settings)
    assert conventions.floor_for("retriever") == 0.5
    assert conventions.floor_for("reranker") == 0.2
    mixed = resolve({}, {"golden": "g.yaml", "score_floor": "0.4, reranker=empty"})
    assert Conventions.from_settings(mixed).floor_for("retriever") == 0.4
    assert Conventions.from_settings(mixed).floor_for("reranker") == -math.inf
    assert mixed.floors_dict() == {"*": 0.4, "reranker": "empty"}
    assert mixed.affecting_numbers()["score_floor"] == {"*": 0.4, "reranker": "empty"}
    assert [str(s) for s in mixed.metric_specs][-2:] == ["abstain_rate", "answer_rate"]
    unset = resolve({}, {"golden": "g.yaml"})
    assert Conventions.from_settings(unset).floor_for("retriever") is None
    assert "score_floor" not in unset.affecting_numbers()  # old baselines stay comparable
    for bad, expected in [
        ("rerankr=0.2", "unknown stage 'rerankr'"),
        ("high", "'high' is not a number"),
        ("0.5, 0.6", "two floors"),
        ("nan", "not a finite score"),
    ]:
        with pytest.raises(InputError, match=expected):
            resolve({}, {"golden": "g.yaml", "score_floor": bad})


def test_metric_spellings() -> None:
    assert str(MetricSpec.parse("Abstain_Rate")) == "abstain_rate"
    assert str(MetricSpec.parse("answer")) == "answer_rate"
    assert str(MetricSpec.parse("distinct@5")) == "distinct@5"
    with pytest.raises(InputError, match="distinct needs a cutoff"):
        MetricSpec.parse("distinct")
    with pytest.raises(InputError, match="abstain_rate takes no cutoff"):
        MetricSpec.parse("abstain_rate@5")
    families = resolve({}, {"golden": "g.yaml", "metrics": "recall, abstain_rate, distinct"})
    assert [str(s) for s in families.metric_specs] == [
        "recall@1", "recall@3", "recall@5", "recall@10", "recall@20", "recall@50", "recall@100",
        "abstain_rate",
        "distinct@1", "distinct@3", "distinct@5", "distinct@10", "distinct@20", "distinct@50",
        "distinct@100",
    ]  # fmt: skip


# --- duplicate groups -------------------------------------------------------------------------

RANKING = {"q": ["A", "A2", "C", "D", "E"]}
JUDGED = {"q": {"A": 1, "A2": 1, "C": 1}}
SPECS = ["precision@5", "recall@5", "ndcg@5", "map@5", "distinct@5"]


def test_a_groups_file_scores_copies_once(tmp_path: Path) -> None:
    path = tmp_path / "dups.tsv"
    path.write_text("# copies\nA\tg1\nA2\tg1\n", encoding="utf-8")
    groups = load_duplicates(str(path))
    raw = evaluate(RANKING, JUDGED, SPECS)
    grouped = evaluate(RANKING, JUDGED, SPECS, duplicates=groups)
    # Raw: three relevant hits in five; the copy inflates precision and NDCG.
    assert raw.means["precision@5"] == pytest.approx(3 / 5)
    assert raw.means["ndcg@5"] == pytest.approx(1.0)
    assert raw.means["distinct@5"] == 1.0  # without groups, A and A2 are different ids
    # Per group: relevant groups {A, C}; the copy at rank 2 is filler (the seed's Example 3).
    assert grouped.means["precision@5"] == pytest.approx(2 / 5)
    assert grouped.means["recall@5"] == pytest.approx(2 / 2)
    assert grouped.means["ndcg@5"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert grouped.means["ndcg@5"] == pytest.approx(0.9197, abs=1e-4)
    assert grouped.means["map@5"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert grouped.means["distinct@5"] == pytest.approx(4 / 5)
    assert grouped.deduplicated
    assert not raw.deduplicated
    assert (
        groups.describe() == f"1 duplicate groups (2 documents) from retrieval_duplicates = {path}"
    )


def test_a_group_takes_its_best_judged_member_and_counts_once() -> None:
    groups = DuplicateGroups.from_groups([["A", "A2"]])
    # Only the copy is judged relevant (grade 2); the original, retrieved first, is judged 0.
    run, qrels = {"q": ["A", "B", "A2"]}, {"q": {"A": 0, "A2": 2}}
    raw = evaluate(run, qrels, ["precision@1", "mrr", "ndcg@3", "recall@3"])
    grouped = evaluate(run, qrels, ["precision@1", "mrr", "ndcg@3", "recall@3"], duplicates=groups)
    assert raw.means["precision@1"] == 0.0
    assert raw.means["mrr"] == pytest.approx(1 / 3)
    assert grouped.means == {"precision@1": 1.0, "mrr": 1.0, "ndcg@3": 1.0, "recall@3": 1.0}
    # Two relevant copies count as one relevant group: recall's denominator is 1, not 2.
    both = evaluate({"q": ["B", "A2"]}, {"q": {"A": 1, "A2": 1}}, ["recall@2"], duplicates=groups)
    assert both.means["recall@2"] == 1.0
    unretrieved = evaluate({"q": ["B"]}, {"q": {"A": 1, "A2": 1, "C": 1}}, ["recall@1"])
    assert unretrieved.means["recall@1"] == 0.0


def test_exact_groups_compare_normalised_text() -> None:
    texts = {
        "d1": "Refund policy: 30 days!",
        "d2": "refund   POLICY — 30 days",
        "d3": "Shipping policy: 30 days",
        "d4": "",
        "d5": "   ",
    }
    groups = exact_groups(texts)
    assert dict(groups.groups) == {"d1": ("d1", "d2")}  # empty texts are never copies
    result = evaluate({"q": ["d2", "d1", "d3"]}, {"q": {"d1": 1, "d2": 1}}, ["precision@3"])
    grouped = evaluate(
        {"q": ["d2", "d1", "d3"]}, {"q": {"d1": 1, "d2": 1}}, ["precision@3"], duplicates=groups
    )
    assert (result.means["precision@3"], grouped.means["precision@3"]) == (2 / 3, 1 / 3)


def test_near_groups_use_shingle_jaccard() -> None:
    words = [f"w{i}" for i in range(40)]
    texts = {
        "a": " ".join(words),
        "b": " ".join([*words[:-1], "changed"]),  # 38 shingles, 37 shared: Jaccard 37/39
        "c": " ".join(reversed(words)),
        "d": " ".join([*words[:30], *(f"x{i}" for i in range(10))]),  # with a: 28/48
    }
    assert dict(near_groups(texts, 0.9).groups) == {"a": ("a", "b")}
    # d is 0.58 from a and from b: all three are one group; c shares no shingle with them.
    assert dict(near_groups(texts, 0.5).groups) == {"a": ("a", "b", "d")}


def test_near_without_datasketch_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def blocked(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("datasketch"):
            raise ImportError(name)
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", blocked)
    with pytest.raises(InputError, match=r"pytest-retrieval\[dedup\]"):
        near_groups({"a": "x y z", "b": "x y z"})


def test_distinct_at_k() -> None:
    groups = DuplicateGroups.from_mapping({"a": "g", "b": "g"})
    assert distinct_at_k(["a", "b", "c", "a"], 4, groups) == pytest.approx(2 / 4)
    assert distinct_at_k(["a", "b", "c", "a"], 3, groups) == pytest.approx(2 / 3)
    assert distinct_at_k(["a", "a", "c"], 3) == pytest.approx(2 / 3)  # the same id twice
    assert distinct_at_k(["a", "c"], 5) == 1.0  # the share of what was returned
    assert distinct_at_k([], 5) is None
    result = evaluate(
        {"q": ["a", "b"]}, {"q": {}, "r": {"a": 1}}, ["distinct@2"], duplicates=groups
    )
    assert result.columns["distinct@2"] == [0.5, None]  # a no-answer query has one too


def test_groups_files_json_and_their_errors(tmp_path: Path) -> None:
    as_lists = parse_duplicates(json.dumps([["a", "b"], ["b", "c"], ["x", "y"]]), source="g.json")
    assert dict(as_lists.groups) == {"a": ("a", "b", "c"), "x": ("x", "y")}
    as_map = parse_duplicates(json.dumps({"a": "g", "b": "g", "c": "h"}), source="g.json")
    assert dict(as_map.groups) == {"a": ("a", "b")}  # a group of one is no group
    with pytest.raises(InputError, match=r"g.tsv:2: expected `doc id<TAB>group id`"):
        parse_duplicates("a\tg\nb g\n", source="g.tsv")
    with pytest.raises(InputError, match=r"g.tsv:2: doc id 'a' is in two groups"):
        parse_duplicates("a\tg\na\th\n", source="g.tsv")
    with pytest.raises(InputError, match="not valid JSON"):
        parse_duplicates("{nope", source="g.json")
    with pytest.raises(InputError, match="duplicates file not found"):
        load_duplicates(str(tmp_path / "missing.tsv"))


def test_judged_duplicates_for_validate() -> None:
    groups = DuplicateGroups.from_groups([["a", "b"], ["c", "d"]])
    judged = {"q1": {"a": 3, "b": 1}, "q2": {"c": 2}, "q3": {"d": 1}}
    found = judged_duplicates(judged, groups)
    assert found == [
        ("a", ("a", "b"), {"q1": {"a": 3, "b": 1}}),
        ("c", ("c", "d"), {"q2": {"c": 2}, "q3": {"d": 1}}),
    ]


def test_corpus_texts_from_beir_and_tsv(tmp_path: Path) -> None:
    beir = tmp_path / "corpus.jsonl"
    beir.write_text(
        '{"_id": "d1", "title": "Refunds", "text": "30 days"}\n{"_id": "d2", "text": "x"}\n',
        encoding="utf-8",
    )
    assert read_corpus_texts(str(beir)) == {"d1": "Refunds 30 days", "d2": "x"}
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("d1\tRefund policy\nd2\tShipping\n", encoding="utf-8")
    assert read_corpus_texts(str(tsv)) == {"d1": "Refund policy", "d2": "Shipping"}
    assert read_corpus_ids(str(tsv)) == {"d1", "d2"}  # the stale-id check reads the ids only
    ids = tmp_path / "ids.txt"
    ids.write_text("d1\nd2\n", encoding="utf-8")
    with pytest.raises(GoldenSetError, match="no texts"):
        read_corpus_texts(str(ids))


def test_dedup_settings_need_a_corpus_and_exclude_a_file() -> None:
    with pytest.raises(InputError, match="retrieval_corpus is not set"):
        resolve({}, {"golden": "g.yaml", "dedup": "exact"})
    with pytest.raises(InputError, match="both say where duplicate groups come from"):
        resolve({}, {"golden": "g.yaml", "dedup": "near", "duplicates": "d.tsv", "corpus": "c"})
    with pytest.raises(InputError, match="not a Jaccard threshold"):
        resolve({}, {"golden": "g.yaml", "dedup": "near=1.5", "corpus": "c"})
    near = resolve({}, {"golden": "g.yaml", "dedup": "near = 0.80", "corpus": "c"})
    assert near.dedup == "near=0.8"
    assert near.affecting_numbers()["dedup"] == "near=0.8"
    assert "distinct@5" in {str(s) for s in near.metric_specs}


# --- scores in the run cache ------------------------------------------------------------------


def test_scores_round_trip_through_the_cache(tmp_path: Path) -> None:
    key = CacheKey(stage="retriever", query="q", depth=5, retriever="r")
    entry = CacheEntry(("a", "b", "c"), (2.5, None, -math.inf), 1.0)
    with RunCache(tmp_path / "runs.sqlite3") as cache:
        cache.put(key, entry)
        hit = cache.get(key)
    assert hit is not None
    assert hit.scores == (2.5, None, -math.inf)


def test_evaluate_takes_duplicate_groups_as_a_mapping_or_a_file_as_the_ini_does(
    tmp_path: Path,
) -> None:
    # a2 is a copy of the judged a1: per group, the top 1 holds the relevant group, so
    # recall@1 = 1/1 (without the groups it is 0/1). evaluate(duplicates={doc: group}) was a
    # bare ValueError ("duplicates must be DuplicateGroups or None, got dict").

    run, qrels = {"q": ["a2", "b"]}, {"q": {"a1": 1}}
    assert evaluate(run, qrels, ["recall@1"]).means["recall@1"] == 0.0
    mapping = {"a1": "g", "a2": "g"}
    assert evaluate(run, qrels, ["recall@1"], duplicates=mapping).means["recall@1"] == 1.0
    tsv = tmp_path / "dups.tsv"
    tsv.write_text("a1\tg\na2\tg\n", encoding="utf-8")
    assert evaluate(run, qrels, ["recall@1"], duplicates=tsv).means["recall@1"] == 1.0
    assert evaluate(run, qrels, ["recall@1"], duplicates=str(tsv)).means["recall@1"] == 1.0
    with pytest.raises(ValueError, match=r"got list: pass DuplicateGroups\.from_mapping\("):
        evaluate(run, qrels, ["recall@1"], duplicates=[["a1", "a2"]])  # type: ignore[arg-type]


# --- one corpus reader: every use of a corpus file reads it the same way ---------------------

from pytest_retrieval.formats.corpus import read_corpus  # noqa: E402
from pytest_retrieval.formats.worksheet import corpus_columns  # noqa: E402

#: Every use of a corpus file: the stale-id check, the texts of duplicate groups, the pool's
#: context columns.
CORPUS_USES = (read_corpus_ids, read_corpus_texts, corpus_columns)


def test_every_use_of_a_corpus_file_reads_the_same_documents(tmp_path: Path) -> None:
    tsv = tmp_path / "corpus.tsv"
    # a tab before the id, spaces around it, a line without text, a later line for an id
    tsv.write_text("\tx1\t Refunds \n y2 \n x1\tRefunds in 30 days\n\n", encoding="utf-8")
    assert read_corpus_ids(str(tsv)) == {"x1", "y2"}
    assert read_corpus_texts(str(tsv)) == {"x1": "Refunds in 30 days", "y2": ""}
    assert corpus_columns(str(tsv)) == {"x1": (None, "Refunds in 30 days"), "y2": (None, None)}
    beir = tmp_path / "corpus.jsonl"
    beir.write_text(
        '{"_id": "d1", "title": " Refunds ", "text": "30 days"}\n'
        '{"id": 7, "title": 3, "text": "x"}\n',
        encoding="utf-8",
    )
    assert set(read_corpus(str(beir))) == read_corpus_ids(str(beir)) == {"d1", "7"}
    # a title that is no string is no title, for the groups and the worksheet alike
    assert read_corpus_texts(str(beir)) == {"d1": " Refunds  30 days", "7": "x"}
    assert corpus_columns(str(beir)) == {"d1": ("Refunds", "30 days"), "7": (None, "x")}


@pytest.mark.parametrize("use", CORPUS_USES, ids=lambda f: f.__name__)
def test_every_use_of_a_corpus_file_reports_each_bad_line_at_once(
    use: object, tmp_path: Path
) -> None:
    beir = tmp_path / "corpus.jsonl"
    beir.write_text('{"_id": "d1", "text": "a"}\n[1]\n{"text": "no id"}\n', encoding="utf-8")
    with pytest.raises(GoldenSetError) as raised:
        use(str(beir))  # type: ignore[operator]
    lines = sorted(p.line for p in raised.value.problems)
    assert lines == [2, 3]
    assert all(p.source == str(beir) for p in raised.value.problems)
