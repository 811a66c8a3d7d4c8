"""Wire the Acme search pipeline into pytest-retrieval: the only code a team has to write."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from acme_search import CANDIDATES, Settings, rerank, search

Candidates = list[tuple[str, float]]


@pytest.fixture(scope="session")
def retriever_under_test() -> Callable[[str], Candidates]:
    """First stage: BM25 over chunks, the candidate list the reranker sees.

    It takes ``k``, so pytest-retrieval can ask for as many chunks as its cutoffs need in
    documents: where 50 chunks collapse into fewer than 50 documents, the query is asked again
    deeper (and the reranker is handed that deeper list)."""

    def first_stage(query: str, k: int = CANDIDATES) -> Candidates:
        return search(query, k=k)

    return first_stage


@pytest.fixture(scope="session")
def reranker_under_test() -> Callable[[str, Candidates], Candidates]:
    """Second stage: the feature reranker (ACME_RERANKER=off keeps the BM25 order)."""
    if not Settings.from_env().reranker:
        return lambda query, candidates: candidates
    return rerank
