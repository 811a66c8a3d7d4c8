"""The runner against real LlamaIndex: a ``VectorStoreIndex`` over ``SentenceSplitter`` nodes.

``MockEmbedding`` (no model, no network) and a whitespace tokenizer for the splitter (its default
tokenizer would be fetched). The depth of a LlamaIndex retriever is ``similarity_top_k``, fixed
when it is built: the runner cannot pass it and says so. Expected rankings are the retriever's
own answers.
"""

from __future__ import annotations

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import BaseNode

from pytest_retrieval.run.retriever import QueryRequest, describe_retriever, run_pipeline

TOPICS = ["refund", "okta", "mfa", "export"]
REQUESTS = [QueryRequest("q-okta", "okta"), QueryRequest("q-mfa", "mfa setup")]


@pytest.fixture(scope="module")
def nodes() -> list[BaseNode]:
    documents = [
        Document(
            text=" ".join(
                f"{topic} sentence {i} explains one more {topic} detail in plenty of words."
                for i in range(12)
            ),
            doc_id=topic,
        )
        for topic in TOPICS
    ]
    splitter = SentenceSplitter(chunk_size=60, chunk_overlap=0, tokenizer=str.split)
    chunks = splitter.get_nodes_from_documents(documents)
    assert len(chunks) > len(TOPICS)  # several chunks per document
    return chunks


@pytest.fixture(scope="module")
def index(nodes: list[BaseNode]) -> VectorStoreIndex:
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))


def test_similarity_top_k_cannot_be_passed_and_the_hint_says_how_to_set_it(
    index: VectorStoreIndex,
) -> None:
    retriever = index.as_retriever(similarity_top_k=2)
    shape = describe_retriever(retriever, 10)
    assert (shape.kind, shape.call, shape.depth_passed, shape.fixed_depth) == (
        "LlamaIndex retriever",
        "retrieve(text)",
        False,
        2,
    )
    assert shape.depth_hint == (
        "a LlamaIndex retriever returns what it was built for: build it with "
        "similarity_top_k=10, e.g. index.as_retriever(similarity_top_k=10)"
    )
    outcomes = run_pipeline(REQUESTS, retriever, depth=10)
    for request, outcome in zip(REQUESTS, outcomes):
        assert outcome.error is None
        expected = tuple(n.node.node_id for n in retriever.retrieve(request.text))
        assert outcome.rankings["retriever"] == expected
        assert len(expected) == 2


@pytest.mark.parametrize("method", ["retrieve", "aretrieve"])
def test_bound_retrieve_and_aretrieve_give_the_library_ranking(
    index: VectorStoreIndex, method: str
) -> None:
    retriever = index.as_retriever(similarity_top_k=6)
    bound = getattr(retriever, method)
    shape = describe_retriever(bound, 6)
    assert (shape.call, shape.fixed_depth) == (f"{method}(text)", 6)
    outcomes = run_pipeline(REQUESTS, bound, depth=6)
    for request, outcome in zip(REQUESTS, outcomes):
        assert outcome.error is None
        expected = tuple(n.node.node_id for n in retriever.retrieve(request.text))
        assert outcome.rankings["retriever"] == expected
        # NodeWithScore.score is kept for each document.
        assert outcome.scores["retriever"] == tuple(
            float(n.score) for n in retriever.retrieve(request.text) if n.score is not None
        )


def test_node_ref_doc_id_collapses_splitter_chunks_to_their_document(
    index: VectorStoreIndex,
) -> None:
    retriever = index.as_retriever(similarity_top_k=8)
    outcome = run_pipeline(REQUESTS[:1], retriever, doc_id="node.ref_doc_id")[0]
    chunks = retriever.retrieve(REQUESTS[0].text)
    documents = [n.node.ref_doc_id for n in chunks]
    assert len(set(documents)) < len(documents)  # UUID node ids of one document repeat
    assert outcome.rankings["retriever"] == tuple(dict.fromkeys(documents))
    # A callable form and a node id -> document mapping give the same document ranking.
    by_callable = run_pipeline(REQUESTS[:1], retriever, doc_id=lambda n: n.node.ref_doc_id)[0]
    mapping = {n.node.node_id: str(n.node.ref_doc_id) for n in chunks}
    by_map = run_pipeline(REQUESTS[:1], retriever, doc_map=mapping)[0]
    assert by_callable.rankings == outcome.rankings == by_map.rankings
