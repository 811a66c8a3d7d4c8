"""A hybrid Haystack pipeline, offline: BM25 + a text embedder + an embedding retriever + RRF.

Real Haystack wiring (``Pipeline``, ``InMemoryDocumentStore``, ``InMemoryBM25Retriever``,
``InMemoryEmbeddingRetriever``, ``DocumentJoiner``, ``DocumentWriter``); only the embedders are
ours, because no model may be downloaded: :class:`ConceptEmbedder` and its document twin
:class:`ConceptDocumentEmbedder` count, per text, the words of each concept in :data:`CONCEPTS`
(so "money" is near "refund" although BM25 never matches them). The pytester test copies this file
into its project, so it imports nothing from the test suite.

Rankings, by hand (``DocumentJoiner`` in ``reciprocal_rank_fusion`` mode scores a document
Σ 1/(61 + rank₀) over the lists holding it, up to one common factor; BM25 returns only documents
with a query word; the embedding retriever scores the dot product and keeps ties in the order the
documents were written), at depth 3 (every ``top_k`` 3):

* "refund window": BM25 [refund-policy]; dense [money-back 3, refund-policy 1, shipping 0] →
  refund-policy 1/61+1/62, money-back 1/61, shipping 1/63.
* "okta sso": BM25 [okta]; dense [sso-setup 4, okta 2, refund-policy 0] →
  okta, sso-setup, refund-policy.
* "parcel": BM25 [shipping]; dense [shipping 2, refund-policy 0, money-back 0] →
  shipping, refund-policy, money-back.
"""

from __future__ import annotations

import os
from dataclasses import replace

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network from the test suite

from haystack import Document, Pipeline, component
from haystack.components.joiners import DocumentJoiner
from haystack.components.retrievers.in_memory import (
    InMemoryBM25Retriever,
    InMemoryEmbeddingRetriever,
)
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore

#: word → concept (the embedding's dimension)
CONCEPTS = {
    "refund": 0,
    "money": 0,
    "returned": 0,
    "okta": 1,
    "sso": 1,
    "login": 1,
    "shipping": 2,
    "parcel": 2,
}

#: id → content, written in this order
CORPUS = {
    "refund-policy": "refund window thirty days",
    "money-back": "money money returned",
    "shipping": "shipping times",
    "okta": "okta guide",
    "sso-setup": "login login with your identity provider",
    "contact": "contact us by phone",
}

#: query text → the hybrid's ranking at depth 3, derived by hand above
HYBRID_AT_3 = {
    "refund window": ("refund-policy", "money-back", "shipping"),
    "okta sso": ("okta", "sso-setup", "refund-policy"),
    "parcel": ("shipping", "refund-policy", "money-back"),
}


def embed(text: str) -> list[float]:
    vector = [0.0] * (max(CONCEPTS.values()) + 1)
    for word in text.lower().split():
        if word in CONCEPTS:
            vector[CONCEPTS[word]] += 1.0
    return vector


@component
class ConceptEmbedder:
    """A text embedder, as a Haystack component: ``run(text) -> {"embedding": [...]}``."""

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        return {"embedding": embed(text)}


@component
class ConceptDocumentEmbedder:
    """Its document twin: ``run(documents) -> {"documents": [... with .embedding]}``."""

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        embedded = [replace(d, embedding=embed(d.content or "")) for d in documents]
        return {"documents": embedded}


def indexed_store() -> InMemoryDocumentStore:
    """The corpus embedded and written by an indexing pipeline."""
    store = InMemoryDocumentStore()
    indexing = Pipeline()
    indexing.add_component("embedder", ConceptDocumentEmbedder())
    indexing.add_component("writer", DocumentWriter(store))
    indexing.connect("embedder.documents", "writer.documents")
    documents = [Document(id=i, content=c) for i, c in CORPUS.items()]
    indexing.run({"embedder": {"documents": documents}})
    return store


def hybrid_pipeline(store: InMemoryDocumentStore) -> Pipeline:
    """bm25 and embedder → dense, both → joiner (reciprocal rank fusion)."""
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(store))
    pipeline.add_component("embedder", ConceptEmbedder())
    pipeline.add_component("dense", InMemoryEmbeddingRetriever(store))
    pipeline.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion"))
    pipeline.connect("embedder.embedding", "dense.query_embedding")
    pipeline.connect("bm25.documents", "joiner.documents")
    pipeline.connect("dense.documents", "joiner.documents")
    return pipeline


def direct_ids(pipeline: Pipeline, text: str, top_k: int) -> tuple[str, ...]:
    """The pipeline's own answer, run by hand: the text to both entries, top_k to all three."""
    result = pipeline.run(
        {
            "bm25": {"query": text, "top_k": top_k},
            "embedder": {"text": text},
            "dense": {"top_k": top_k},
            "joiner": {"top_k": top_k},
        }
    )
    return tuple(d.id for d in result["joiner"]["documents"])
