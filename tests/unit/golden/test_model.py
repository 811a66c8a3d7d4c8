"""The golden-set data model: queries, selection, qrels and the fingerprint."""

from __future__ import annotations

import hashlib
import pickle

import pytest

from pytest_retrieval.errors import GoldenSetError
from pytest_retrieval.golden.leakage import normalise_text
from pytest_retrieval.golden.model import GoldenSet, Query, compute_fingerprint, is_plain_name


def _acme() -> GoldenSet:
    return GoldenSet(
        (
            Query(
                "refund-window",
                "How long is the refund window?",
                ["refund-policy"],
                ["exact-lookup"],
            ),
            Query(
                "export-limits",
                "What are the export limits on the Team plan?",
                {"plans-and-limits": 3, "export-data": 1, "billing-faq": 0},
                ["multi-hop", "exact-lookup"],
                "heldout",
            ),
            Query("fax-support", "Can I send invoices by fax?", [], ["no-answer"]),
        ),
        name="acme",
    )


def test_a_list_of_ids_means_grade_one_each() -> None:
    query = Query("q", "text", ["a", "b"])
    assert dict(query.judgments) == {"a": 1, "b": 1}


def test_a_mapping_gives_grades_and_keeps_grade_zero_as_judged() -> None:
    query = Query("q", "text", {"a": 3, "b": 0})
    assert dict(query.judgments) == {"a": 3, "b": 0}
    assert query.relevant == ("a",)
    assert not query.is_no_answer


def test_an_empty_list_is_a_no_answer_query_and_so_is_only_grade_zero() -> None:
    assert Query("q", "text", []).is_no_answer
    assert Query("q", "text", {"a": 0}).is_no_answer


def test_split_defaults_to_tune_and_slices_are_sorted_without_duplicates() -> None:
    query = Query("q", "text", [], ["b", "a", "b"])
    assert query.split == "tune"
    assert query.slices == ("a", "b")


def test_judgments_are_read_only() -> None:
    query = Query("q", "text", ["a"])
    with pytest.raises(TypeError):
        query.judgments["b"] = 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"id": ""}, "id"),
        ({"text": "   "}, "text"),
        ({"judgments": {"a": True}}, "relevant"),
        ({"judgments": {"a": -1}}, "relevant"),
        ({"judgments": {"a": 1.0}}, "relevant"),
        ({"judgments": "doc-a"}, "relevant"),
        ({"judgments": [3]}, "relevant"),
        ({"slices": ["two words"]}, "slices"),
        ({"split": "-x"}, "split"),
    ],
)
def test_building_an_invalid_query_raises_a_golden_set_error_naming_the_field(
    kwargs: dict[str, object], field: str
) -> None:
    parts: dict[str, object] = {
        "id": "q",
        "text": "t",
        "judgments": [],
        "slices": (),
        "split": "tune",
    }
    parts.update(kwargs)
    with pytest.raises(GoldenSetError) as info:
        Query(**parts)  # type: ignore[arg-type]
    assert info.value.problems[0].field == field


def test_plain_names_allow_hyphens_dots_and_underscores_but_not_spaces() -> None:
    assert is_plain_name("multi-hop")
    assert is_plain_name("v1.2_final")
    assert is_plain_name("2024")
    assert not is_plain_name("-leading")
    assert not is_plain_name("two words")
    assert not is_plain_name("")
    assert not is_plain_name(3)


def test_selection_by_split_and_slice_keeps_file_order() -> None:
    golden = _acme()
    assert [q.id for q in golden.in_split("tune")] == ["refund-window", "fax-support"]
    assert [q.id for q in golden.heldout()] == ["export-limits"]
    assert [q.id for q in golden.in_slice("exact-lookup")] == ["refund-window", "export-limits"]
    assert len(golden.in_slice("unknown")) == 0
    assert [q.id for q in golden.where(lambda q: q.is_no_answer)] == ["fax-support"]
    assert golden.slices == ("exact-lookup", "multi-hop", "no-answer")
    assert golden.splits == ("heldout", "tune")
    assert len(golden) == 3
    assert [q.id for q in golden] == ["refund-window", "export-limits", "fax-support"]
    assert "fax-support" in golden
    assert golden["fax-support"].text == "Can I send invoices by fax?"


def test_qrels_include_no_answer_queries_and_are_fresh_dicts() -> None:
    golden = _acme()
    qrels = golden.qrels()
    assert qrels == {
        "refund-window": {"refund-policy": 1},
        "export-limits": {"plans-and-limits": 3, "export-data": 1, "billing-faq": 0},
        "fax-support": {},
    }
    qrels["fax-support"]["x"] = 1
    assert golden.qrels()["fax-support"] == {}
    assert golden.texts()["refund-window"] == "How long is the refund window?"


def test_the_fingerprint_is_sha256_of_the_documented_canonical_json() -> None:
    golden = GoldenSet((Query("q1", "Hi?", {"b": 2, "a": 0}, ["x"]),))
    canonical = '[{"id":"q1","judgments":{"a":0,"b":2},"slices":["x"],"split":"tune","text":"Hi?"}]'
    assert golden.fingerprint == hashlib.sha256(canonical.encode()).hexdigest()
    assert golden.short_fingerprint == golden.fingerprint[:12]


def test_the_fingerprint_keeps_non_ascii_text_unescaped() -> None:
    golden = GoldenSet((Query("q", "Straße?", ["d"]),))
    canonical = '[{"id":"q","judgments":{"d":1},"slices":[],"split":"tune","text":"Straße?"}]'
    assert golden.fingerprint == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_the_fingerprint_ignores_query_and_judgment_order_and_metadata() -> None:
    a = Query("a", "first", {"x": 1, "y": 2})
    b = Query("b", "second", [])
    reordered_a = Query("a", "first", {"y": 2, "x": 1})
    one = GoldenSet((a, b), name="one", corpus_version="1", source="x.yaml")
    two = GoldenSet((b, reordered_a), name="two")
    assert one.fingerprint == two.fingerprint


@pytest.mark.parametrize(
    "changed",
    [
        Query("a", "first", {"x": 1, "y": 3}),  # a grade
        Query("a", "first", {"x": 1}),  # a judgment dropped
        Query("a", "first", {"x": 1, "y": 2, "z": 0}),  # a grade-0 judgment added
        Query("a", "First", {"x": 1, "y": 2}),  # the text
        Query("a", "first", {"x": 1, "y": 2}, ["s"]),  # a slice
        Query("a", "first", {"x": 1, "y": 2}, (), "heldout"),  # the split
        Query("a2", "first", {"x": 1, "y": 2}),  # the id
    ],
)
def test_any_label_change_changes_the_fingerprint(changed: Query) -> None:
    base = compute_fingerprint([Query("a", "first", {"x": 1, "y": 2})])
    assert compute_fingerprint([changed]) != base


def test_a_selection_has_its_own_fingerprint() -> None:
    golden = _acme()
    tune = golden.in_split("tune")
    assert tune.fingerprint == compute_fingerprint([golden["refund-window"], golden["fax-support"]])
    assert tune.fingerprint != golden.fingerprint


def test_duplicate_ids_and_leakage_are_refused_when_building_from_code() -> None:
    with pytest.raises(GoldenSetError, match="duplicate query id"):
        GoldenSet((Query("a", "one", []), Query("a", "two", [])))
    with pytest.raises(GoldenSetError, match="leakage"):
        GoldenSet(
            (Query("a", "Refund window?", []), Query("b", "refund  WINDOW", [], (), "heldout"))
        )


def test_leakage_compares_the_context_with_the_text_when_building_from_code() -> None:
    acme = Query("a", "Refund window?", [], (), "heldout", context={"tenant": "acme"})
    globex = Query("b", "refund  WINDOW", [], context={"tenant": "globex"})
    assert len(GoldenSet((acme, globex))) == 2
    with pytest.raises(GoldenSetError, match="leakage: the same text and context as query 'a'"):
        GoldenSet((acme, Query("b", "refund window", [], context={"tenant": "acme"})))
    with pytest.raises(GoldenSetError, match="leakage: the same text as query 'a'"):
        GoldenSet((Query("a", "Refund", [], (), "heldout"), Query("b", "refund", [])))


def test_the_same_text_twice_in_one_split_is_not_leakage() -> None:
    golden = GoldenSet((Query("a", "Refund window?", []), Query("b", "refund window", [])))
    assert len(golden) == 2


def test_normalised_text_folds_case_drops_punctuation_and_collapses_space() -> None:
    assert normalise_text("What's  the Refund-window?") == "whats the refundwindow"
    assert normalise_text("  ¿Qué   PASA?  ") == "qué pasa"
    assert normalise_text("C++ vs C#") == "c++ vs c"  # '+' is a symbol, '#' punctuation


def test_golden_sets_and_queries_survive_pickling() -> None:
    golden = _acme()
    copy = pickle.loads(pickle.dumps(golden))
    assert copy == golden
    assert copy.fingerprint == golden.fingerprint
    assert hash(copy.queries[0]) == hash(golden.queries[0])


def test_an_invalid_heldout_split_name_is_refused() -> None:
    with pytest.raises(GoldenSetError, match="held-out split"):
        GoldenSet((), heldout_split="held out")


def test_the_repr_of_a_golden_set_is_a_short_summary() -> None:
    assert repr(_acme()) == "GoldenSet(3 queries, name='acme', splits=('heldout', 'tune'))"
