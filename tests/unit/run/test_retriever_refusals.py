"""Clear refusals: what is not a ranking, or not a retriever, says what came back and what to do.

A per-query refusal fails that query only (its outcome names it); the other queries finish. A
retriever that cannot be called at all is refused before any query runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document

from pytest_retrieval.run.retriever import (
    QueryOutcome,
    QueryRequest,
    RetrieverShapeError,
    describe_retriever,
    run_pipeline,
)

REQUESTS = [QueryRequest("good", "good text"), QueryRequest("bad", "bad text")]


def run_with_bad(bad: Any) -> list[QueryOutcome]:
    """A retriever returning ``bad`` for query "bad" and a good ranking for query "good"."""
    return run_pipeline(REQUESTS, lambda text: bad if text == "bad text" else ["d1", "d2"])


def assert_refused(outcomes: list[QueryOutcome], message: str) -> None:
    good, bad = outcomes
    assert good.error is None
    assert good.rankings["retriever"] == ("d1", "d2")
    assert bad.query_id == "bad"
    assert (bad.error_type, bad.error_stage) == ("RetrieverOutputError", "retriever")
    assert bad.error == message
    assert "retriever" not in bad.rankings


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (
            {"d2", "d1"},
            "returned {'d1', 'd2'} (set): a ranking must be ordered: return a list, best first "
            "(e.g. sorted by score), not a set",
        ),
        (
            frozenset(["d1"]),
            "returned frozenset({'d1'}) (frozenset): a ranking must be ordered: return a list, "
            "best first (e.g. sorted by score), not a set",
        ),
    ],
    ids=["set", "frozenset"],
)
def test_an_unordered_ranking_is_refused(returned: Any, message: str) -> None:
    if isinstance(returned, set):
        # A set's repr order depends on PYTHONHASHSEED: the very reason it is refused.
        message = message.replace("{'d1', 'd2'}", repr(returned))
    assert_refused(run_with_bad(returned), message)


def test_a_dict_of_scores_is_refused_with_the_sorted_fix() -> None:
    assert_refused(
        run_with_bad({"d1": 0.9, "d2": 0.4}),
        "returned {'d1': 0.9, 'd2': 0.4} (dict), which is not a ranking: return a list of ids "
        "best first (for a dict of id -> score: sorted(scores, key=scores.get, reverse=True))",
    )


def test_a_single_document_instead_of_a_list_is_refused() -> None:
    # A pydantic Document iterates over its fields: read as a ranking it would be nonsense ids.
    document = Document(page_content="text", metadata={"source": "d1"})
    outcomes = run_with_bad(document)
    assert outcomes[1].error is not None
    assert outcomes[1].error.startswith("returned one Document (")
    assert outcomes[1].error.endswith("), not a ranking: return a list of them, best first")


def test_a_class_returned_per_query_is_refused() -> None:
    class Hits:
        pass

    outcomes = run_with_bad(Hits)
    assert outcomes[1].error is not None
    assert outcomes[1].error.startswith("returned the class ")
    assert outcomes[1].error.endswith(
        "Hits; expected a list of ids, (id, score) pairs, dicts with an id, or Document/Node "
        "objects (an instance, not its class)"
    )


def test_a_retriever_class_instead_of_an_instance_is_refused_before_any_query() -> None:
    calls: list[str] = []

    class MyRetriever:
        def invoke(self, text: str) -> list[str]:
            calls.append(text)
            return ["d1"]

    message = (
        "the retriever under test is the class "
        "test_a_retriever_class_instead_of_an_instance_is_refused_before_any_query.<locals>."
        "MyRetriever, not an instance of it: return "
        "test_a_retriever_class_instead_of_an_instance_is_refused_before_any_query.<locals>."
        "MyRetriever(...) from the retriever_under_test fixture, not "
        "test_a_retriever_class_instead_of_an_instance_is_refused_before_any_query.<locals>."
        "MyRetriever"
    )
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, MyRetriever)
    assert str(caught.value) == message
    assert calls == []
    # A TypeError: the plugin reports it as "cannot be called" for every test that needs it.
    assert isinstance(caught.value, TypeError)
    with pytest.raises(RetrieverShapeError, match="not an instance of it"):
        describe_retriever(MyRetriever)


def test_a_reranker_class_is_refused_too() -> None:
    class Rerank:
        def __call__(self, text: str, candidates: list[str]) -> list[str]:
            return candidates

    with pytest.raises(RetrieverShapeError, match=r"the reranker under test is the class .*Rerank"):
        run_pipeline(REQUESTS, lambda text: ["d1"], Rerank)


def test_an_object_of_no_known_shape_is_refused() -> None:
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, 42)
    assert str(caught.value) == (
        "the retriever under test is a int, which is neither callable nor has an "
        "invoke/retrieve/search/retrieve_batch/batch method; return a function "
        "`retrieve(query_text) -> ranked ids` from the retriever_under_test fixture"
    )


class DictBatch:
    def retrieve_batch(self, texts: list[str]) -> dict[str, list[str]]:
        return {text: ["d1"] for text in texts}


def test_a_batch_method_returning_a_dict_names_its_queries_and_the_fix() -> None:
    outcomes = run_pipeline(REQUESTS, DictBatch())
    expected = (
        "the batch method retrieve_batch(texts) returned {'good text': ['d1'], 'bad text': "
        "['d1']} (dict) for the queries good, bad; return a list with one ranking per query "
        "text, in order"
    )
    for outcome in outcomes:
        assert outcome.error_type == "RetrieverOutputError"
        assert outcome.error == expected
        assert outcome.rankings == {}


def test_a_batch_method_returning_none_is_not_reported_as_zero_results() -> None:
    class NoneBatch:
        def retrieve_batch(self, texts: list[str]) -> None:
            return None

    outcomes = run_pipeline(REQUESTS, NoneBatch())
    assert outcomes[0].error == (
        "the batch method retrieve_batch(texts) returned None (NoneType) for the queries good, "
        "bad; return a list with one ranking per query text, in order"
    )


def test_a_batch_refusal_fails_only_its_own_batch() -> None:
    class HalfBatch:
        def retrieve_batch(self, texts: list[str]) -> Any:
            if texts == ["bad text"]:
                return {"bad text": ["d1"]}
            return [["d1", "d2"] for _ in texts]

    outcomes = run_pipeline(REQUESTS, HalfBatch(), batch_size=1)
    assert_refused(
        outcomes,
        "the batch method retrieve_batch(texts) returned {'bad text': ['d1']} (dict) for the "
        "queries bad; return a list with one ranking per query text, in order",
    )


def test_a_haystack_style_result_dict_is_read_as_its_documents() -> None:
    # {"documents": [...]} is what a Haystack component's run() returns: not a refusal.
    outcomes = run_with_bad({"documents": [{"id": "d9"}, {"id": "d8"}]})
    assert outcomes[1].error is None
    assert outcomes[1].rankings["retriever"] == ("d9", "d8")
