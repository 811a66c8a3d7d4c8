"""One chunk → document rule, whatever the form: path, callable, mapping or separator.

The running example: a retriever returns chunks of documents ``a``, ``b``, ``c`` in the order
a#0, a#1, b#0, c#0, b#1 (several chunks of a document, and one coming back after another
document). Relevant: b and c. Collapsed to documents at their best chunk's rank: a, b, c, so
recall@3 = 2/2 = 1 and the reciprocal rank is 1/2. Kept as chunks (the old path-form behaviour),
the top 3 documents would be a, a, b: recall@3 = 1/2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_retrieval.run.retriever import QueryRequest, adapt_ranking, adapt_scored, run_pipeline
from pytest_retrieval.scoring.evaluate import evaluate
from pytest_retrieval.scoring.metrics import recall_at_k, reciprocal_rank

CHUNKS = ["a#0", "a#1", "b#0", "c#0", "b#1"]
SCORES = [0.9, 0.8, 0.7, 0.6, 0.5]
COLLAPSED = ("a", "b", "c")
RELEVANT = ["b", "c"]


@dataclass
class Chunk:
    id: str
    metadata: dict[str, Any]
    score: float


def chunk_objects() -> list[Chunk]:
    return [
        Chunk(chunk, {"source": chunk.split("#")[0]}, score) for chunk, score in zip(CHUNKS, SCORES)
    ]


FORMS: dict[str, dict[str, Any]] = {
    "path": {"doc_id": "metadata.source"},
    "callable": {"doc_id": lambda item: item.metadata["source"]},
    "mapping": {"doc_map": {c: c.split("#")[0] for c in CHUNKS}},
    "callable map": {"doc_map": lambda chunk: chunk.split("#")[0]},
    "separator": {"doc_id_separator": "#"},
}


@pytest.mark.parametrize("form", FORMS.values(), ids=list(FORMS))
def test_every_form_collapses_chunks_to_their_document_at_its_best_rank(
    form: dict[str, Any],
) -> None:
    outcome = run_pipeline([QueryRequest("q", "text")], lambda text: chunk_objects(), **form)[0]
    ranking = outcome.rankings["retriever"]
    assert ranking == COLLAPSED
    assert recall_at_k(ranking, RELEVANT, 3) == 1.0
    assert reciprocal_rank(ranking, RELEVANT) == 0.5
    # Each document's score is its best chunk's: a#0, b#0, c#0.
    assert outcome.scores["retriever"] == (0.9, 0.7, 0.6)


def test_without_collapsing_the_example_would_score_differently() -> None:
    # Guards the example itself: the rule changes the number, so the test above means something.
    # Scored on the top 3 chunks instead (K counted in results as returned), a, a, b hold one
    # relevant document of two.
    as_chunks = [c.split("#")[0] for c in CHUNKS]
    top3 = set(as_chunks[:3])
    assert len(top3 & set(RELEVANT)) / len(RELEVANT) == 0.5
    chunks_as_returned = evaluate({"q": as_chunks}, {"q": dict.fromkeys(RELEVANT, 1)}, ["recall@3"])
    assert chunks_as_returned.per_query["q"]["recall@3"] == 1.0  # documents a, b, c
    by_results = evaluate(
        {"q": as_chunks}, {"q": dict.fromkeys(RELEVANT, 1)}, ["recall@3"], cutoff_unit="results"
    )
    assert by_results.per_query["q"]["recall@3"] == 0.5


def test_the_separator_cuts_at_the_last_separator() -> None:
    ranking = adapt_ranking(
        ["guide::intro::3", "guide::intro::4", "faq::0", "plain", "::7", "faq"],
        doc_id_separator="::",
    )
    # "guide::intro" keeps its inner separator; "plain" has none and is kept; "::7" would be an
    # empty document id and is kept whole; "faq" (a document id) meets "faq::0"'s document.
    assert ranking == ("guide::intro", "faq", "plain", "::7")


def test_the_separator_applies_after_the_map() -> None:
    # id -> doc_map -> separator: the map may rename chunk ids into doc#n form.
    ranking = adapt_ranking(
        ["x", "y", "z"], doc_map={"x": "d1#0", "y": "d1#1"}, doc_id_separator="#"
    )
    assert ranking == ("d1", "z")


def test_integer_ids_from_a_map_are_strings() -> None:
    assert adapt_ranking(["c1", "c2", "c3"], doc_map={"c1": 7, "c2": 7, "c3": 8}) == ("7", "8")


def test_duplicates_are_removed_without_any_mapping() -> None:
    # The same id twice is one document, at its first rank: d3 moves up to rank 2.
    assert adapt_ranking(["d1", "d1", "d3"]) == ("d1", "d3")


@pytest.mark.parametrize("separator", ["", 3])
def test_a_bad_separator_is_refused(separator: Any) -> None:
    with pytest.raises(ValueError, match="doc_id_separator must be a non-empty string"):
        run_pipeline([QueryRequest("q", "t")], lambda text: ["a"], doc_id_separator=separator)


def test_scores_come_from_pairs_keys_and_attributes_and_may_be_missing() -> None:
    assert adapt_scored([("d1", 2.5), ("d2", 1)]) == (("d1", "d2"), (2.5, 1.0))
    assert adapt_scored([{"id": "d1", "score": 0.3}, {"id": "d2"}]) == (
        ("d1", "d2"),
        (0.3, None),
    )
    # No item carries a score: the outcome records none for that stage.
    outcome = run_pipeline([QueryRequest("q", "t")], lambda text: ["d1", "d2"])[0]
    assert outcome.scores == {}


def test_a_bool_is_not_a_score() -> None:
    assert adapt_scored([{"id": "d1", "score": True}]) == (("d1",), (None,))


def test_a_doc_id_path_reaches_into_an_item_score_pair() -> None:
    # LangChain's similarity_search_with_score returns (Document, score) pairs.
    pairs = [(c, s) for c, s in zip(chunk_objects(), SCORES)]
    assert adapt_scored(pairs, doc_id="metadata.source") == (COLLAPSED, (0.9, 0.7, 0.6))
    assert adapt_scored(pairs) == (tuple(CHUNKS), tuple(SCORES))


def test_the_reranker_gets_the_raw_chunks_not_the_collapsed_ids() -> None:
    seen: list[Any] = []

    def rerank(text: str, candidates: list[Chunk]) -> list[Chunk]:
        seen.extend(candidates)
        return list(reversed(candidates))

    outcome = run_pipeline(
        [QueryRequest("q", "t")], lambda text: chunk_objects(), rerank, doc_id="metadata.source"
    )[0]
    assert [c.id for c in seen] == CHUNKS
    # Reversed chunks b#1, c#0, b#0, a#1, a#0 -> documents b, c, a.
    assert outcome.rankings["reranker"] == ("b", "c", "a")
