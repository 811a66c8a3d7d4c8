"""The runner against real LangChain retrievers: langchain-core and langchain-community.

An ``InMemoryVectorStore`` over a deterministic fake embedding (no model, no network) and a
``BM25Retriever`` (rank_bm25). What each test expects is asked of the library itself (the
vector store's own ``similarity_search``), never taken from our output.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from pytest_retrieval.run.retriever import QueryRequest, describe_retriever, run_pipeline
from pytest_retrieval.scoring.metrics import ndcg_at_k

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # "langchain-community is being sunset"
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

TOPICS = ["refund", "shipping", "invoice", "password", "okta", "billing", "export", "mfa"]
# Three chunks per document, ids "<doc>#<n>", the document in metadata["source"].
CHUNKS = [
    Document(
        id=f"{topic}#{n}",
        page_content=f"{topic} part {n}: how {topic} works, step {n}",
        metadata={"source": topic},
    )
    for topic in TOPICS
    for n in range(3)
]
REQUESTS = [
    QueryRequest("q-refund", "how does refund work"),
    QueryRequest("q-okta", "okta step 2"),
    QueryRequest("q-export", "export part 1"),
]
DEPTH = 10


@pytest.fixture(scope="module")
def store() -> InMemoryVectorStore:
    vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    vector_store.add_documents(CHUNKS)
    return vector_store


def ids_from_library(store: InMemoryVectorStore, text: str, k: int) -> tuple[str, ...]:
    return tuple(str(d.id) for d in store.similarity_search(text, k=k))


def test_the_depth_reaches_a_vector_store_retriever_through_batch(
    store: InMemoryVectorStore,
) -> None:
    retriever = store.as_retriever()  # LangChain's default k is 4
    assert len(retriever.invoke("refund")) == 4
    shape = describe_retriever(retriever, DEPTH)
    assert (shape.kind, shape.call, shape.depth_passed) == (
        "LangChain retriever",
        "batch(texts, k=10)",
        True,
    )
    assert shape.depth_hint is None
    outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH, batch_size=2)
    for request, outcome in zip(REQUESTS, outcomes):
        assert outcome.error is None
        assert outcome.rankings["retriever"] == ids_from_library(store, request.text, DEPTH)
        assert len(outcome.rankings["retriever"]) == DEPTH


@pytest.mark.parametrize("method", ["invoke", "ainvoke"])
def test_the_depth_reaches_a_bound_invoke_or_ainvoke(
    store: InMemoryVectorStore, method: str
) -> None:
    bound = getattr(store.as_retriever(), method)
    shape = describe_retriever(bound, DEPTH)
    assert (shape.call, shape.depth_passed) == (f"{method}(text, k=10)", True)
    outcomes = run_pipeline(REQUESTS, bound, depth=DEPTH)
    for request, outcome in zip(REQUESTS, outcomes):
        assert outcome.error is None
        assert outcome.rankings["retriever"] == ids_from_library(store, request.text, DEPTH)


def test_bm25_drops_k_and_says_how_to_set_it() -> None:
    retriever = BM25Retriever.from_documents(CHUNKS)  # k=4 unless built otherwise
    shape = describe_retriever(retriever, DEPTH)
    assert shape.depth_passed is False
    assert shape.fixed_depth == 4
    assert shape.depth_hint == (
        "BM25Retriever drops k=: build it with k=10, e.g. BM25Retriever.from_documents(docs, k=10)"
    )
    outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH)
    assert [len(o.rankings["retriever"]) for o in outcomes] == [4, 4, 4]
    # Following the hint gives the depth asked for.
    deep = BM25Retriever.from_documents(CHUNKS, k=DEPTH)
    assert [len(o.rankings["retriever"]) for o in run_pipeline(REQUESTS, deep)] == [10, 10, 10]
    top = BM25Retriever.from_documents(CHUNKS, k=DEPTH).invoke(REQUESTS[0].text)
    assert run_pipeline(REQUESTS[:1], deep)[0].rankings["retriever"] == tuple(
        str(d.id) for d in top
    )


def test_an_ensemble_hint_names_the_retrievers_it_combines(store: InMemoryVectorStore) -> None:
    ensemble = EnsembleRetriever(
        retrievers=[BM25Retriever.from_documents(CHUNKS), store.as_retriever()], weights=[0.5, 0.5]
    )
    shape = describe_retriever(ensemble, 50)
    assert shape.depth_passed is False
    assert shape.depth_hint == (
        "EnsembleRetriever drops k=: build each retriever it combines with k=50, e.g. "
        'BM25Retriever.from_documents(docs, k=50) and as_retriever(search_kwargs={"k": 50})'
    )
    outcome = run_pipeline(REQUESTS[:1], ensemble, depth=50)[0]
    assert outcome.error is None
    # 4 + 4 candidates fused, fewer when both found the same chunk.
    assert 4 <= len(outcome.rankings["retriever"]) <= 8


class FlakyRetriever(BaseRetriever):
    """A real BaseRetriever that takes k (so the depth reaches it) and fails on one query."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int = 4
    ) -> list[Document]:
        if "okta" in query:
            raise ConnectionError("okta index offline")
        return CHUNKS[:k]


def test_one_failing_query_of_a_langchain_batch_fails_alone() -> None:
    assert describe_retriever(FlakyRetriever(), 6).depth_passed is True
    outcomes = run_pipeline(REQUESTS, FlakyRetriever(), depth=6, batch_size=3)
    assert [o.error for o in outcomes] == [None, "okta index offline", None]
    assert outcomes[1].error_type == "ConnectionError"
    expected = tuple(str(d.id) for d in CHUNKS[:6])
    assert outcomes[0].rankings["retriever"] == expected
    assert outcomes[2].rankings["retriever"] == expected


def test_similarity_search_with_score_pairs_keep_ids_and_scores(
    store: InMemoryVectorStore,
) -> None:
    def search(text: str, k: int) -> list[tuple[Document, float]]:
        return store.similarity_search_with_score(text, k=k)

    outcome = run_pipeline(REQUESTS[:1], search, depth=DEPTH)[0]
    pairs = store.similarity_search_with_score(REQUESTS[0].text, k=DEPTH)
    assert outcome.rankings["retriever"] == tuple(str(d.id) for d, _s in pairs)
    assert outcome.scores["retriever"] == tuple(float(s) for _d, s in pairs)


def chunk_forms() -> dict[str, dict[str, Any]]:
    return {
        "path metadata.source": {"doc_id": "metadata.source"},
        "callable": {"doc_id": lambda d: d.metadata["source"]},
        "mapping": {"doc_map": {str(c.id): c.metadata["source"] for c in CHUNKS}},
        "separator #": {"doc_id_separator": "#"},
    }


def test_the_same_retriever_scores_the_same_under_every_chunk_form(
    store: InMemoryVectorStore,
) -> None:
    retriever = store.as_retriever()
    grades = {"refund": 2, "okta": 1, "export": 1}
    rankings: dict[str, list[tuple[str, ...]]] = {}
    for name, form in chunk_forms().items():
        outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH, **form)
        assert all(o.error is None for o in outcomes), name
        rankings[name] = [o.rankings["retriever"] for o in outcomes]
    # The document ranking, derived here from the library's own chunk ranking.
    expected = []
    for request in REQUESTS:
        chunks = store.similarity_search(request.text, k=DEPTH)
        sources = [d.metadata["source"] for d in chunks]
        assert len(set(sources)) < len(sources)  # chunks of one document do repeat
        expected.append(tuple(dict.fromkeys(sources)))
    for name, found in rankings.items():
        assert found == expected, name
    ndcgs = {name: [ndcg_at_k(r, grades, 10) for r in found] for name, found in rankings.items()}
    assert len({tuple(v) for v in ndcgs.values()}) == 1
