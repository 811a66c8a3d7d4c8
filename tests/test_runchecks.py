"""The short-ranking rule (runchecks.short_rankings), on hand-made rankings."""

from __future__ import annotations

from pytest_retrieval.runchecks import short_rankings


def ranks(*lengths: int) -> list[tuple[str, ...]]:
    return [tuple(f"d{i}" for i in range(n)) for n in lengths]


def test_a_retriever_that_ignores_the_depth_is_reported_with_its_flat_cutoffs() -> None:
    found = short_rankings("retriever", ranks(4, 4, 4), cutoffs=(1, 5, 10), depth=10)
    assert found is not None
    assert (found.longest, found.short, found.queries, found.flat) == (4, 3, 3, (5, 10))


def test_chunks_collapsing_into_fewer_documents_are_not_reported() -> None:
    # One ranking is full length (the depth reaches the retriever); the median, 45, is more than
    # half of the 50 asked for.
    assert short_rankings("retriever", ranks(50, 45, 44, 46), cutoffs=(10, 50), depth=50) is None


def test_rankings_mostly_far_shorter_than_asked_are_reported_even_with_one_full() -> None:
    found = short_rankings("retriever", ranks(50, 10, 12, 8), cutoffs=(10, 50), depth=50)
    assert found is not None
    assert found.median == 11
    assert found.flat == ()  # the longest reaches 50: no cutoff is flat


def test_long_enough_rankings_are_not_reported() -> None:
    assert short_rankings("retriever", ranks(10, 10), cutoffs=(5, 10), depth=10) is None
