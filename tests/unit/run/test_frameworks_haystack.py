"""The runner against real Haystack: components, pipelines, ``Document.id`` and ``Document.meta``.

An ``InMemoryDocumentStore`` with ``InMemoryBM25Retriever`` (no model, no network; telemetry off).
Expected rankings are the component's own answers to the same query.
"""

from __future__ import annotations

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network from the test suite

import haystack_hybrid
import pytest
from haystack import Document, Pipeline, component
from haystack.components.builders import PromptBuilder
from haystack.components.joiners import DocumentJoiner
from haystack.components.retrievers.in_memory import (
    InMemoryBM25Retriever,
    InMemoryEmbeddingRetriever,
)
from haystack.document_stores.in_memory import InMemoryDocumentStore

from pytest_retrieval.run.cachekey import retriever_identity
from pytest_retrieval.run.retriever import (
    HaystackPipeline,
    QueryRequest,
    RetrieverShapeError,
    describe_retriever,
    run_pipeline,
)

TOPICS = ["refund", "shipping", "invoice", "password", "okta", "billing", "export", "mfa"]
DOCUMENTS = [
    Document(
        id=f"{topic}#{n}",
        content=f"{topic} guide part {n}: {topic} {'details ' * n}",
        meta={"source": topic},
    )
    for topic in TOPICS
    for n in range(3)
]
REQUESTS = [
    QueryRequest("q-refund", "refund guide details"),
    QueryRequest("q-okta", "okta guide"),
    QueryRequest("q-mfa", "mfa part details"),
]
DEPTH = 7


@pytest.fixture(scope="module")
def store() -> InMemoryDocumentStore:
    document_store = InMemoryDocumentStore()
    document_store.write_documents(DOCUMENTS)
    return document_store


def library_ids(store: InMemoryDocumentStore, text: str, top_k: int) -> tuple[str, ...]:
    documents = InMemoryBM25Retriever(store).run(query=text, top_k=top_k)["documents"]
    assert len(documents) == top_k  # the example is deep enough for the depth to show
    return tuple(d.id for d in documents)


def test_a_component_gets_the_depth_as_top_k(store: InMemoryDocumentStore) -> None:
    retriever = InMemoryBM25Retriever(store, top_k=2)
    shape = describe_retriever(retriever, DEPTH)
    assert (shape.kind, shape.call, shape.depth_passed) == (
        "Haystack component",
        "run(query=text, top_k=7)",
        True,
    )
    outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH)
    for request, outcome in zip(REQUESTS, outcomes):
        assert outcome.error is None
        assert outcome.rankings["retriever"] == library_ids(store, request.text, DEPTH)
        assert outcome.scores["retriever"][0] is not None  # BM25 scores are kept


def test_meta_source_collapses_chunks_to_documents(store: InMemoryDocumentStore) -> None:
    retriever = InMemoryBM25Retriever(store)
    outcome = run_pipeline(REQUESTS[:1], retriever, depth=DEPTH, doc_id="meta.source")[0]
    chunks = InMemoryBM25Retriever(store).run(query=REQUESTS[0].text, top_k=DEPTH)["documents"]
    sources = [d.meta["source"] for d in chunks]
    assert len(set(sources)) < len(sources)
    assert outcome.rankings["retriever"] == tuple(dict.fromkeys(sources))
    # The separator form reads the same documents out of the "<doc>#<n>" ids.
    by_separator = run_pipeline(REQUESTS[:1], retriever, depth=DEPTH, doc_id_separator="#")[0]
    assert by_separator.rankings == outcome.rankings


def test_a_bare_pipeline_is_refused_naming_its_inputs(store: InMemoryDocumentStore) -> None:
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store))
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, pipeline)
    assert str(caught.value) == (
        "the retriever under test is a Haystack Pipeline, which cannot tell which input takes the "
        "query text (its open inputs: retriever.query, retriever.filters, retriever.top_k, "
        'retriever.scale_score); return HaystackPipeline(pipeline, input="retriever.query") '
        "(from pytest_retrieval import HaystackPipeline) from the retriever_under_test fixture"
    )


def test_a_wrapped_pipeline_gets_the_query_and_the_depth(store: InMemoryDocumentStore) -> None:
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=2))
    wrapped = HaystackPipeline(pipeline, input="retriever.query")
    shape = describe_retriever(wrapped, DEPTH)
    assert (shape.kind, shape.depth_passed) == ("Haystack pipeline", True)
    assert shape.call == "run({'retriever': {'query': text, 'top_k': 7}})"
    outcomes = run_pipeline(REQUESTS, wrapped, depth=DEPTH)
    for request, outcome in zip(REQUESTS, outcomes):
        assert outcome.error is None
        assert outcome.rankings["retriever"] == library_ids(store, request.text, DEPTH)


def test_an_inner_component_output_is_read_when_named(store: InMemoryDocumentStore) -> None:
    # retriever -> prompt builder: the only open output is the prompt, not the documents.
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store))
    pipeline.add_component(
        "prompt",
        PromptBuilder(
            "{% for d in documents %}{{ d.content }}{% endfor %}", required_variables=["documents"]
        ),
    )
    pipeline.connect("retriever.documents", "prompt.documents")
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, HaystackPipeline(pipeline, input="retriever.query"))
    assert str(caught.value) == (
        "HaystackPipeline: cannot tell which output holds the ranked documents (its open "
        "outputs: prompt.prompt); name it, e.g. HaystackPipeline(pipeline, input=..., "
        'output="retriever.documents")'
    )
    wrapped = HaystackPipeline(pipeline, input="retriever.query", output="retriever.documents")
    outcomes = run_pipeline(REQUESTS, wrapped, depth=DEPTH)
    assert [o.rankings["retriever"] for o in outcomes] == [
        library_ids(store, r.text, DEPTH) for r in REQUESTS
    ]


def test_a_wrong_socket_name_lists_the_open_inputs(store: InMemoryDocumentStore) -> None:
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(store))
    with pytest.raises(RetrieverShapeError) as caught:
        describe_retriever(HaystackPipeline(pipeline, input="retriever.query"))
    assert str(caught.value) == (
        "HaystackPipeline(input='retriever.query'): the pipeline has no open input "
        "retriever.query (its open inputs: bm25.query, bm25.filters, bm25.top_k, bm25.scale_score)"
    )


@pytest.mark.parametrize("bad", ["retriever", "a.b.c", ".query"])
def test_a_socket_must_be_component_dot_socket(bad: str) -> None:
    with pytest.raises(ValueError, match=r"expected 'component\.socket'"):
        HaystackPipeline(object(), input=bad)


@component
class KeywordRetriever:
    """A user's component: run(query) only, its depth fixed when built."""

    def __init__(self, store: InMemoryDocumentStore, top_k: int = 3) -> None:
        self.store = store
        self.top_k = top_k

    @component.output_types(documents=list[Document])
    def run(self, query: str) -> dict[str, list[Document]]:
        documents = InMemoryBM25Retriever(self.store).run(query=query, top_k=self.top_k)
        return {"documents": documents["documents"]}


def test_a_component_without_top_k_says_how_to_set_the_depth(
    store: InMemoryDocumentStore,
) -> None:
    shape = describe_retriever(KeywordRetriever(store), DEPTH)
    assert (shape.depth_passed, shape.fixed_depth) == (False, 3)
    assert shape.depth_hint == "KeywordRetriever.run() takes no top_k: build it with top_k=7"
    outcomes = run_pipeline(REQUESTS, KeywordRetriever(store), depth=DEPTH)
    assert [len(o.rankings["retriever"]) for o in outcomes] == [3, 3, 3]


def test_a_component_that_takes_no_query_text_is_refused(store: InMemoryDocumentStore) -> None:
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, InMemoryEmbeddingRetriever(store))
    message = str(caught.value)
    assert message.startswith(
        "the retriever under test is the Haystack component InMemoryEmbeddingRetriever, whose "
        "run() takes no query text (its inputs: query_embedding, "
    )
    assert message.endswith(
        'return HaystackPipeline(pipeline, input="embedder.text") from the retriever_under_test '
        "fixture"
    )


# A hybrid: BM25 and an embedder (two entries that both take the query text) → joiner.
@pytest.fixture(scope="module")
def hybrid() -> Pipeline:
    return haystack_hybrid.hybrid_pipeline(haystack_hybrid.indexed_store())


HYBRID_INPUTS = ["bm25.query", "embedder.text"]


def test_a_hybrid_pipeline_gets_the_text_on_every_input_and_the_depth_on_every_top_k(
    hybrid: Pipeline,
) -> None:
    wrapped = HaystackPipeline(hybrid, input=HYBRID_INPUTS)
    shape = describe_retriever(wrapped, 3)
    assert (shape.kind, shape.depth_passed) == ("Haystack pipeline", True)
    assert shape.call == (
        "run({'bm25': {'query': text, 'top_k': 3}, 'embedder': {'text': text}, "
        "'dense': {'top_k': 3}, 'joiner': {'top_k': 3}})"
    )
    texts = list(haystack_hybrid.HYBRID_AT_3)
    requests = [QueryRequest(f"q{n}", text) for n, text in enumerate(texts)]
    outcomes = run_pipeline(requests, wrapped, depth=3)
    for text, outcome in zip(texts, outcomes):
        assert outcome.error is None
        # The pipeline's own answer, and the ranking derived by hand in haystack_hybrid.
        assert outcome.rankings["retriever"] == haystack_hybrid.direct_ids(hybrid, text, 3)
        assert outcome.rankings["retriever"] == haystack_hybrid.HYBRID_AT_3[text]


def test_a_mapping_of_inputs_is_the_same_as_a_list(hybrid: Pipeline) -> None:
    listed = HaystackPipeline(hybrid, input=HYBRID_INPUTS)
    mapped = HaystackPipeline(hybrid, input={"bm25": "query", "embedder": "text"})
    assert mapped.input == listed.input == ("bm25.query", "embedder.text")
    assert describe_retriever(mapped, 3) == describe_retriever(listed, 3)


def test_named_top_k_sockets_are_the_only_ones_given_the_depth(hybrid: Pipeline) -> None:
    both = HaystackPipeline(hybrid, input=HYBRID_INPUTS, top_k=["bm25.top_k", "dense.top_k"])
    assert describe_retriever(both, 1).call == (
        "run({'bm25': {'query': text, 'top_k': 1}, 'embedder': {'text': text}, "
        "'dense': {'top_k': 1}})"
    )
    # Without joiner.top_k the joiner keeps all it gets: BM25's refund-policy, dense's money-back.
    outcome = run_pipeline([QueryRequest("q", "refund window")], both, depth=1)[0]
    assert set(outcome.rankings["retriever"]) == {"refund-policy", "money-back"}
    none = describe_retriever(HaystackPipeline(hybrid, input=HYBRID_INPUTS, top_k=[]), 3)
    assert none.depth_passed is False
    assert none.depth_hint == (
        "HaystackPipeline(top_k=()) gives the depth to no socket: build its retrievers with top_k=3"
    )


def test_a_hybrid_given_one_input_is_refused_naming_the_socket_left_empty(
    hybrid: Pipeline,
) -> None:
    # Haystack itself would fail every query at run time ("Missing mandatory input 'text'").
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, HaystackPipeline(hybrid, input="bm25.query"), depth=3)
    assert str(caught.value) == (
        "HaystackPipeline(input='bm25.query'): the pipeline's mandatory input embedder.text "
        "would get nothing, so Haystack would refuse every query; name every socket that takes "
        'the query text, e.g. HaystackPipeline(pipeline, input=["bm25.query", "embedder.text"])'
    )


def test_an_unknown_socket_among_several_is_named_with_the_open_inputs(hybrid: Pipeline) -> None:
    with pytest.raises(RetrieverShapeError) as caught:
        describe_retriever(HaystackPipeline(hybrid, input=["bm25.query", "embed.text"]))
    assert str(caught.value) == (
        "HaystackPipeline(input=('bm25.query', 'embed.text')): the pipeline has no open input "
        "embed.text (its open inputs: bm25.query, bm25.filters, bm25.top_k, bm25.scale_score, "
        "embedder.text, dense.filters, dense.top_k, dense.scale_score, dense.return_embedding, "
        "joiner.documents, joiner.top_k)"
    )
    with pytest.raises(RetrieverShapeError, match=r"^HaystackPipeline\(top_k=\('joiner.k',\)\)"):
        describe_retriever(HaystackPipeline(hybrid, input=HYBRID_INPUTS, top_k=["joiner.k"]))


def test_sockets_that_reach_nothing_are_refused_when_built() -> None:
    with pytest.raises(ValueError) as empty:
        HaystackPipeline(object(), input=[])
    assert str(empty.value) == (
        "HaystackPipeline(input=[]): no socket would get the query text; name each socket that "
        'takes it, e.g. input=["bm25.query", "embedder.text"]'
    )
    with pytest.raises(ValueError) as member:
        HaystackPipeline(object(), input=["bm25.query", "embedder"])
    assert str(member.value) == (
        "HaystackPipeline(input=['bm25.query', 'embedder']): expected 'component.socket' "
        "('embedder' is not), e.g. input=\"retriever.query\" or "
        'input=["bm25.query", "embedder.text"]'
    )
    with pytest.raises(ValueError, match=r"named both as an input .* and as a top_k socket"):
        HaystackPipeline(object(), input=["bm25.query"], top_k="bm25.query")


def test_a_hybrid_is_never_asked_for_fewer_than_its_deepest_built_top_k() -> None:
    # Built with bm25 top_k=40 and dense top_k=25 (the joiner: Haystack's default, none): the
    # run must not hand either retriever fewer than 40, the deepest it was built to return.
    store = haystack_hybrid.indexed_store()
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(store, top_k=40))
    pipeline.add_component("embedder", haystack_hybrid.ConceptEmbedder())
    pipeline.add_component("dense", InMemoryEmbeddingRetriever(store, top_k=25))
    pipeline.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion"))
    pipeline.connect("embedder.embedding", "dense.query_embedding")
    pipeline.connect("bm25.documents", "joiner.documents")
    pipeline.connect("dense.documents", "joiner.documents")
    shape = describe_retriever(HaystackPipeline(pipeline, input=HYBRID_INPUTS), 10)
    assert (shape.depth_passed, shape.built_depth) == (True, 40)


def test_the_cache_tells_two_pipelines_apart_and_knows_one_built_twice(hybrid: Pipeline) -> None:
    # The wrapper is our class: keyed by it alone, every pipeline would share cached rankings.
    store = haystack_hybrid.indexed_store()
    same = retriever_identity(
        HaystackPipeline(haystack_hybrid.hybrid_pipeline(store), input=HYBRID_INPUTS)
    )
    assert retriever_identity(HaystackPipeline(hybrid, input=HYBRID_INPUTS)) == same
    bm25_only = Pipeline()
    bm25_only.add_component("bm25", InMemoryBM25Retriever(store))
    deeper = Pipeline()
    deeper.add_component("bm25", InMemoryBM25Retriever(store, top_k=50))
    others = {
        retriever_identity(HaystackPipeline(bm25_only, input="bm25.query")),
        retriever_identity(HaystackPipeline(deeper, input="bm25.query")),
        retriever_identity(
            HaystackPipeline(hybrid, input=HYBRID_INPUTS, top_k=["bm25.top_k", "dense.top_k"])
        ),
        same,
    }
    assert len(others) == 4
