"""acme_search: the retrieval pipeline of the Acme Ledger help centre (the example project).

Pipeline: :func:`~acme_search.corpus.load_corpus` -> :func:`~acme_search.chunker.chunk_corpus`
-> BM25 first stage (:func:`~acme_search.retriever.search`, 50 candidate chunks) -> feature-based
reranker (:func:`~acme_search.reranker.rerank`, skipped with ``ACME_RERANKER=off``). Chunk ids are
``"<doc-id>#<n>"``; :func:`doc_id` maps them back to the documents the golden set judges.
"""

from __future__ import annotations

from .chunker import Chunk, chunk_corpus, chunk_document, doc_id
from .corpus import CORPUS_DIR, Document, load_corpus
from .reranker import rerank
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
    "retrieve",
    "retrieve_documents",
    "search",
]


def retrieve(query: str, k: int = 10) -> list[tuple[str, float]]:
    """Run the whole pipeline; return the top ``k`` ``(chunk_id, score)`` pairs, best first."""
    settings = Settings.from_env()
    candidates = search(query, k=max(k, CANDIDATES), settings=settings)
    if settings.reranker:
        candidates = rerank(query, candidates)
    return candidates[:k]


def retrieve_documents(query: str, k: int = 10) -> list[str]:
    """Run the whole pipeline; return up to ``k`` document ids, each at its best chunk's rank."""
    seen: dict[str, None] = {}
    for chunk_id, _ in retrieve(query, k=CANDIDATES):
        seen.setdefault(doc_id(chunk_id))
        if len(seen) == k:
            break
    return list(seen)
