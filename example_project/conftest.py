"""Wire the Acme search pipeline into pytest-retrieval: the only code a team has to write."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from acme_search import CANDIDATES, Settings, rerank, rerank_by_relevance, search

Candidates = list[tuple[str, float]]


@pytest.fixture(scope="session")
def retriever_under_test() -> Callable[..., Candidates]:
    """First stage: BM25 over chunks, the candidate list the reranker sees.

    It takes ``k``, so pytest-retrieval can ask for as many chunks as its cutoffs need in
    documents: where 50 chunks collapse into fewer than 50 documents, the query is asked again
    deeper (and the reranker is handed that deeper list). It takes ``tenant``, so a golden
    query with ``context: {tenant: northwind}`` is searched as a Northwind user (the public
    pages and Northwind's own); a query without one as an anonymous visitor.

    ``ACME_TENANT_FILTER=off`` is the bug the forbidden@10 gate exists for: a first stage that
    never hears of the tenant and searches every customer's pages."""
    if not Settings.from_env().tenant_filter:

        def first_stage_without_tenant_filter(query: str, k: int = CANDIDATES) -> Candidates:
            return search(query, k=k)

        return first_stage_without_tenant_filter

    def first_stage(query: str, k: int = CANDIDATES, tenant: str | None = None) -> Candidates:
        return search(query, k=k, tenant=tenant)

    return first_stage


@pytest.fixture(scope="session")
def reranker_under_test() -> Callable[..., Candidates]:
    """Second stage: the feature reranker and its freshness rule (superseded pages below every
    current one). It takes ``context=``, so it scores a customer's query on the pages that
    customer searched. ``ACME_RERANKER=off`` keeps the BM25 order; ``ACME_FRESHNESS=off``
    reranks by relevance alone: the bug the stale@3 gate exists for."""
    settings = Settings.from_env()
    if not settings.reranker:
        return lambda query, candidates: candidates
    return rerank if settings.freshness else rerank_by_relevance
