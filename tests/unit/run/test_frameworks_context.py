"""A query's context reaching real framework retrievers, offline and in memory.

LangChain: an ``InMemoryVectorStore`` over a deterministic fake embedding, filtered by the
function ``retrieval_context_filter`` builds from each query's context; Haystack: an
``InMemoryDocumentStore`` with ``InMemoryBM25Retriever``, given ``filters``; LlamaIndex: refused,
and the wrapper the refusal shows is run here. Every expected ranking is the library's own
answer to the same filtered query, and every document in it is checked to be the tenant's.
"""

from __future__ import annotations

import os
import textwrap
import warnings
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network from the test suite

import pytest
from haystack import Document as HaystackDocument
from haystack import Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import FilterPolicy
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from pytest_retrieval.run.retriever import (
    HaystackPipeline,
    QueryRequest,
    RetrieverShapeError,
    describe_retriever,
    run_pipeline,
)
from pytest_retrieval.run.retriever.context import ContextUse
from pytest_retrieval.run.retriever.shapes import context_warning

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # "langchain-community is being sunset"
    from langchain_community.retrievers import BM25Retriever

TENANTS = ["acme", "globex"]
TOPICS = ["refund", "shipping", "invoice", "password", "okta", "export"]
#: Each topic's page once per tenant: the same words, another tenant's document.
PAGES = [(tenant, topic) for tenant in TENANTS for topic in TOPICS]
REQUESTS = [
    QueryRequest("acme-refund", "how does the refund work", context={"tenant": "acme"}),
    QueryRequest("globex-refund", "how does the refund work", context={"tenant": "globex"}),
    QueryRequest("acme-okta", "okta login steps", context={"tenant": "acme"}),
]
DEPTH = 4


def tenant_of(doc_id: str) -> str:
    return doc_id.split("/")[0]


# --- LangChain ------------------------------------------------------------------------------


def langchain_filter(context: dict[str, Any]) -> Any:
    """What a user writes as retrieval_context_filter for InMemoryVectorStore: a function of a
    Document."""
    tenant = context["tenant"]
    return lambda doc: doc.metadata["tenant"] == tenant


USE = ContextUse(("tenant",), langchain_filter, "tests.scope:langchain_filter")


@pytest.fixture(scope="module")
def store() -> InMemoryVectorStore:
    vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    vector_store.add_documents(
        [
            Document(
                id=f"{tenant}/{topic}",
                page_content=f"{topic}: how the {topic} works, step by step",
                metadata={"tenant": tenant},
            )
            for tenant, topic in PAGES
        ]
    )
    return vector_store


def test_the_filter_built_from_the_context_reaches_a_vector_store_retriever(
    store: InMemoryVectorStore,
) -> None:
    retriever = store.as_retriever()
    shape = describe_retriever(retriever, DEPTH, context=USE)
    assert (shape.call, shape.context) == (
        "invoke(text, k=4, filter=retrieval_context_filter(context))",
        "filter=retrieval_context_filter(context)",
    )
    outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH, context=USE)
    for request, outcome in zip(REQUESTS, outcomes, strict=True):
        assert outcome.error is None
        assert request.context is not None
        own = langchain_filter(dict(request.context))
        expected = tuple(
            str(d.id) for d in store.similarity_search(request.text, k=DEPTH, filter=own)
        )
        assert outcome.rankings["retriever"] == expected
        assert len(expected) == DEPTH
        assert {tenant_of(d) for d in expected} == {request.context["tenant"]}
    # Without the filter the same text ranks both tenants' pages: the filter made the difference.
    unfiltered = tuple(str(d.id) for d in store.similarity_search(REQUESTS[0].text, k=DEPTH * 3))
    assert {tenant_of(d) for d in unfiltered} == set(TENANTS)


def test_a_bound_invoke_gets_the_filter_too(store: InMemoryVectorStore) -> None:
    retriever = store.as_retriever()
    outcomes = run_pipeline(REQUESTS, retriever.invoke, depth=DEPTH, context=USE)
    assert all(
        {tenant_of(d) for d in o.rankings["retriever"]} == {o.query_id.split("-")[0]}
        for o in outcomes
    )


def test_a_filter_set_when_the_retriever_was_built_is_never_replaced(
    store: InMemoryVectorStore,
) -> None:
    retriever = store.as_retriever(search_kwargs={"filter": lambda doc: True})
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, retriever, depth=DEPTH, context=USE)
    message = str(caught.value)
    assert message.startswith("VectorStoreRetriever was built with a filter (search_kwargs=")
    assert message.endswith(
        "and retrieval_context_filter = tests.scope:langchain_filter would replace it with each "
        "query's filter"
    )
    assert caught.value.fix == (
        "build the retriever without a filter and apply both in langchain_filter(context), or "
        "drop retrieval_context_filter"
    )


def test_without_the_filter_setting_no_context_reaches_langchain_and_the_warning_says_why(
    store: InMemoryVectorStore,
) -> None:
    retriever = store.as_retriever()
    use = ContextUse(("tenant",))
    shape = describe_retriever(retriever, DEPTH, context=use)
    assert (shape.call, shape.context) == ("batch(texts, k=4)", None)
    warning = context_warning(retriever, DEPTH, use, 3)
    assert warning is not None
    assert (
        "set retrieval_context_filter = module:function: it builds each query's filter=" in warning
    )
    outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH, context=use)  # not refused
    assert outcomes[0].rankings["retriever"] == outcomes[1].rankings["retriever"]


def test_a_retriever_that_drops_keyword_arguments_refuses_the_filter_setting() -> None:
    bm25 = BM25Retriever.from_documents([Document(page_content="refund", id="a")], k=3)
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, bm25, depth=DEPTH, context=USE)
    assert str(caught.value).startswith(
        "retrieval_context_filter = tests.scope:langchain_filter builds a filter= for each "
        "query, and BM25Retriever drops the keyword arguments it is given"
    )


class ScopedRetriever(BaseRetriever):
    """A retriever of the user's own whose search takes the context."""

    docs: list[Document]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int = 100,
        context: Any = None,
    ) -> list[Document]:
        tenant = (context or {}).get("tenant")
        return [d for d in self.docs if d.metadata["tenant"] == tenant][:k]


def test_a_langchain_retriever_of_ones_own_gets_context_when_it_declares_it() -> None:
    docs = [Document(id=f"{t}/{p}", page_content=p, metadata={"tenant": t}) for t, p in PAGES]
    retriever = ScopedRetriever(docs=docs)
    use = ContextUse(("tenant",))
    assert describe_retriever(retriever, DEPTH, context=use).context == "context=context"
    outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH, context=use)
    assert outcomes[1].rankings["retriever"] == tuple(f"globex/{p}" for p in TOPICS[:DEPTH])


# --- Haystack --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def document_store() -> InMemoryDocumentStore:
    documents = InMemoryDocumentStore()
    documents.write_documents(
        [
            HaystackDocument(
                id=f"{tenant}/{topic}",
                content=f"{topic} guide: the {topic} {'details ' * (i + 1)}",
                meta={"tenant": tenant},
            )
            for i, (tenant, topic) in enumerate(PAGES)
        ]
    )
    return documents


def haystack_filter(tenant: str) -> dict[str, Any]:
    return {"field": "meta.tenant", "operator": "==", "value": tenant}


def with_filters(requests: list[QueryRequest]) -> list[QueryRequest]:
    """The requests with Haystack filters in each context, as a golden set would write them."""
    out = []
    for r in requests:
        assert r.context is not None
        tenant = r.context["tenant"]
        out.append(
            QueryRequest(
                r.id, r.text, context={"tenant": tenant, "filters": haystack_filter(tenant)}
            )
        )
    return out


def library_ids(document_store: InMemoryDocumentStore, text: str, filters: Any) -> tuple[str, ...]:
    found = InMemoryBM25Retriever(document_store).run(query=text, top_k=DEPTH, filters=filters)
    return tuple(d.id for d in found["documents"])


def test_context_filters_reach_a_haystack_retriever(document_store: InMemoryDocumentStore) -> None:
    retriever = InMemoryBM25Retriever(document_store)
    requests = with_filters(REQUESTS)
    use = ContextUse.of(r.context for r in requests)
    shape = describe_retriever(retriever, DEPTH, context=use)
    assert shape.call == "run(query=text, top_k=4, filters=context['filters'])"
    outcomes = run_pipeline(requests, retriever, depth=DEPTH, context=use)
    for request, outcome in zip(requests, outcomes, strict=True):
        assert request.context is not None
        expected = library_ids(document_store, request.text, request.context["filters"])
        assert outcome.rankings["retriever"] == expected
        assert {tenant_of(d) for d in expected} == {request.context["tenant"]}
    unfiltered = library_ids(document_store, REQUESTS[0].text, None)
    assert {tenant_of(d) for d in unfiltered} == set(TENANTS)  # the filter made the difference


def test_the_filter_setting_builds_haystack_filters_from_the_context(
    document_store: InMemoryDocumentStore,
) -> None:
    use = ContextUse(("tenant",), lambda c: haystack_filter(c["tenant"]), "tests.scope:filters")
    retriever = InMemoryBM25Retriever(document_store)
    assert describe_retriever(retriever, DEPTH, context=use).context == (
        "filters=retrieval_context_filter(context)"
    )
    outcomes = run_pipeline(REQUESTS, retriever, depth=DEPTH, context=use)
    for request, outcome in zip(REQUESTS, outcomes, strict=True):
        assert request.context is not None
        tenant = request.context["tenant"]
        assert outcome.rankings["retriever"] == library_ids(
            document_store, request.text, haystack_filter(tenant)
        )


def test_a_pipeline_gets_the_filters_at_every_open_filters_socket(
    document_store: InMemoryDocumentStore,
) -> None:
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(document_store))
    wrapped = HaystackPipeline(pipeline, input="retriever.query")
    requests = with_filters(REQUESTS)
    use = ContextUse.of(r.context for r in requests)
    shape = describe_retriever(wrapped, DEPTH, context=use)
    assert shape.context == "filters=context['filters'] to retriever.filters"
    assert shape.call == (
        "run({'retriever': {'query': text, 'top_k': 4, 'filters': context['filters']}})"
    )
    outcomes = run_pipeline(requests, wrapped, depth=DEPTH, context=use)
    for request, outcome in zip(requests, outcomes, strict=True):
        assert request.context is not None
        assert outcome.rankings["retriever"] == library_ids(
            document_store, request.text, request.context["filters"]
        )
    # filters=[] names no socket: the pipeline then takes no context, and says how.
    none = HaystackPipeline(pipeline, input="retriever.query", filters=[])
    assert describe_retriever(none, DEPTH, context=use).context is None


def test_a_haystack_retriever_built_with_filters_and_replace_policy_is_refused(
    document_store: InMemoryDocumentStore,
) -> None:
    built = {"field": "meta.tenant", "operator": "!=", "value": "nobody"}
    replacing = InMemoryBM25Retriever(document_store, filters=built)
    requests = with_filters(REQUESTS)
    use = ContextUse.of(r.context for r in requests)
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(requests, replacing, depth=DEPTH, context=use)
    assert str(caught.value).startswith(
        "the Haystack component InMemoryBM25Retriever was built with filters={'field': "
        "'meta.tenant', 'operator': '!=', 'value': 'nobody'} and filter_policy=REPLACE, so each "
        "query's filters (from context['filters']) would replace them"
    )
    assert str(caught.value.fix).startswith("build it with filter_policy=FilterPolicy.MERGE")
    merging = InMemoryBM25Retriever(document_store, filters=built, filter_policy=FilterPolicy.MERGE)
    outcomes = run_pipeline(requests, merging, depth=DEPTH, context=use)
    for request, outcome in zip(requests, outcomes, strict=True):
        assert request.context is not None
        expected = merging.run(query=request.text, top_k=DEPTH, filters=request.context["filters"])
        assert outcome.rankings["retriever"] == tuple(d.id for d in expected["documents"])


# --- LlamaIndex ------------------------------------------------------------------------------


def test_a_llamaindex_retriever_is_refused_with_the_wrapper_to_write_and_the_wrapper_works() -> (
    None
):
    from llama_index.core import Document as LlamaDocument
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    index = VectorStoreIndex.from_documents(
        [
            LlamaDocument(
                text=f"{topic} guide", doc_id=f"{tenant}/{topic}", metadata={"tenant": tenant}
            )
            for tenant, topic in PAGES
        ],
        embed_model=MockEmbedding(embed_dim=8),
    )
    retriever = index.as_retriever(similarity_top_k=3)
    use = ContextUse(("tenant",))
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS, retriever, depth=DEPTH, context=use)
    message = str(caught.value)
    assert message.startswith(
        "the golden set gives its queries a context, and a LlamaIndex VectorIndexRetriever "
        "cannot take one: its filters are fixed when it is built."
    )
    # The wrapper the message shows, run as written: each query's tenant scopes its retriever.
    snippet = message.split("e.g.\n\n", 1)[1].split("\n\n(or drop", 1)[0]
    body = textwrap.indent(textwrap.dedent(snippet), "    ")
    namespace: dict[str, Any] = {"index": index}
    exec(f"def fixture():\n{body}\n", namespace)  # the text of our own message
    wrapper = namespace["fixture"]()
    outcomes = run_pipeline(REQUESTS, wrapper, depth=DEPTH, context=use)
    for request, outcome in zip(REQUESTS, outcomes, strict=True):
        assert outcome.error is None, outcome.error
        assert request.context is not None
        ranking = outcome.rankings["retriever"]
        assert len(ranking) == DEPTH
        # Node ids are generated: the node's metadata says whose document it is.
        nodes = [index.docstore.get_node(node_id) for node_id in ranking]
        assert {n.metadata["tenant"] for n in nodes} == {request.context["tenant"]}


def test_a_filter_function_that_raises_fails_its_query_alone_naming_the_function(
    store: InMemoryVectorStore,
) -> None:
    def picky(context: dict[str, Any]) -> Any:
        if context["tenant"] == "globex":
            raise KeyError("region")
        return langchain_filter(context)

    use = ContextUse(("tenant",), picky, "tests.scope:picky")
    outcomes = run_pipeline(REQUESTS, store.as_retriever(), depth=DEPTH, context=use)
    failed = {o.query_id: (o.error_type, o.error) for o in outcomes if o.error is not None}
    assert failed == {
        "globex-refund": (
            "ContextFilterError",
            "retrieval_context_filter = tests.scope:picky raised KeyError: 'region'",
        )
    }
    assert {tenant_of(d) for d in outcomes[0].rankings["retriever"]} == {"acme"}
