"""acme_search: the retrieval pipeline of the Acme Ledger help centre (the example project).

Pipeline: :func:`~acme_search.corpus.load_corpus` -> :func:`~acme_search.chunker.chunk_corpus`
-> BM25 first stage (:func:`~acme_search.retriever.search`, 50 candidate chunks, the tenant
filter) -> feature-based reranker with its freshness rule (:func:`~acme_search.reranker.rerank`,
skipped with ``ACME_RERANKER=off``; without the freshness rule with ``ACME_FRESHNESS=off``).
Chunk ids are
``"<doc-id>#<n>"``; :func:`doc_id` maps them back to the documents the golden set judges.
"""

from __future__ import annotations

from .chunker import Chunk, chunk_corpus, chunk_document, doc_id
from .corpus import CORPUS_DIR, Document, load_corpus
from .reranker import rerank, rerank_by_relevance
from .retriever import CANDIDATES, Settings, get_index, search

__all__ = [
    "CANDIDATES",
    "CORPUS_DIR",
    "Chunk",
    "Document",
    "Settings",
    "chunk_corpus",
    "chunk_document",
    "doc_id",
    "get_index",
    "load_corpus",
    "rerank",
    "rerank_by_relevance",
    "retrieve",
    "retrieve_documents",
    "search",
]


def retrieve(query: str, k: int = 10, tenant: str | None = None) -> list[tuple[str, float]]:
    """Run the whole pipeline for a user of ``tenant`` (None: an anonymous visitor); return the
    top ``k`` ``(chunk_id, score)`` pairs, best first."""
    settings = Settings.from_env()
    candidates = search(query, k=max(k, CANDIDATES), settings=settings, tenant=tenant)
    if settings.reranker:
        second_stage = rerank if settings.freshness else rerank_by_relevance
        candidates = second_stage(query, candidates, {"tenant": tenant} if tenant else None)
    return candidates[:k]


def retrieve_documents(query: str, k: int = 10, tenant: str | None = None) -> list[str]:
    """Run the whole pipeline; return up to ``k`` document ids, each at its best chunk's rank."""
    seen: dict[str, None] = {}
    for chunk_id, _ in retrieve(query, k=CANDIDATES, tenant=tenant):
        seen.setdefault(doc_id(chunk_id))
        if len(seen) == k:
            break
    return list(seen)
