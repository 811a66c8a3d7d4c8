"""The retriever runner as a library: shapes of retrievers and ids, without pytest's plugin."""

from __future__ import annotations

import asyncio

import numpy as np

from pytest_retrieval.run.retriever import QueryRequest, run_pipeline

REQUESTS = [QueryRequest("a", "first"), QueryRequest("b", "second"), QueryRequest("c", "third")]


def test_an_async_batch_method_is_awaited() -> None:
    class AsyncBatch:
        async def retrieve_batch(self, texts: list[str]) -> list[list[str]]:
            await asyncio.sleep(0)
            return [[f"{text}-1", f"{text}-2"] for text in texts]

    outcomes = run_pipeline(REQUESTS, AsyncBatch(), batch_size=2)
    assert [o.error for o in outcomes] == [None, None, None]
    assert [o.rankings["retriever"] for o in outcomes] == [
        ("first-1", "first-2"),
        ("second-1", "second-2"),
        ("third-1", "third-2"),
    ]


def test_numpy_integer_ids_are_ids() -> None:
    # FAISS returns numpy arrays of int64 positions: the ids are "3", "1", "2".
    outcomes = run_pipeline(REQUESTS[:1], lambda text: np.array([3, 1, 2]))
    assert outcomes[0].error is None
    assert outcomes[0].rankings["retriever"] == ("3", "1", "2")


def test_a_bool_is_never_an_id() -> None:
    outcomes = run_pipeline(REQUESTS[:1], lambda text: [True])
    assert outcomes[0].error is not None
    assert "True" in outcomes[0].error
