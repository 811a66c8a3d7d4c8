"""Which shapes get the depth, what describe_retriever reports, and that it matches the calls.

Framework shapes are tested against the real libraries in tests/unit/run/test_frameworks_*.py;
here the plain Python shapes: functions, batch methods and objects, sync and async.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import pytest

from pytest_retrieval.run.retriever import (
    QueryRequest,
    RetrieverShape,
    describe_retriever,
    run_pipeline,
)

REQUESTS = [QueryRequest("a", "first"), QueryRequest("b", "second"), QueryRequest("c", "third")]
POOL = [f"d{i}" for i in range(20)]


class Batch:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def retrieve_batch(self, texts: list[str], k: int) -> list[list[str]]:
        self.seen.append(k)
        return [POOL[:k] for _ in texts]


class BatchPositional:
    def retrieve_batch(self, texts: list[str], n: int) -> list[list[str]]:
        return [POOL[:n] for _ in texts]


class BatchTopK:
    def batch(self, texts: list[str], top_k: int = 4) -> list[list[str]]:
        return [POOL[:top_k] for _ in texts]


class BatchNoK:
    def retrieve_batch(self, texts: list[str]) -> list[list[str]]:
        return [POOL[:4] for _ in texts]


class Search:
    def search(self, text: str, k: int) -> list[str]:
        return POOL[:k]


class SearchNoK:
    def search(self, text: str) -> list[str]:
        return POOL[:4]


def plain(text: str) -> list[str]:
    return POOL[:4]


def with_k(text: str, k: int) -> list[str]:
    return POOL[:k]


async def async_top_k(text: str, *, top_k: int = 4) -> list[str]:
    return POOL[:top_k]


def traced(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)  # keeps the signature visible: the depth still reaches it
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


SHAPES: dict[str, tuple[Callable[[], Any], RetrieverShape, int]] = {
    "retrieve_batch(texts, k)": (
        Batch,
        RetrieverShape("batch method", "retrieve_batch(texts, k=7)", True),
        7,
    ),
    "retrieve_batch(texts, n)": (
        BatchPositional,
        RetrieverShape("batch method", "retrieve_batch(texts, 7)", True),
        7,
    ),
    "batch(texts, top_k=)": (
        BatchTopK,
        RetrieverShape("batch method", "batch(texts, top_k=7)", True),
        7,
    ),
    "retrieve_batch(texts)": (
        BatchNoK,
        RetrieverShape(
            "batch method",
            "retrieve_batch(texts)",
            False,
            "give retrieve_batch a k parameter: retrieve_batch(texts, k)",
        ),
        4,
    ),
    "search(text, k)": (
        Search,
        RetrieverShape("object.search", "search(text, k=7)", True),
        7,
    ),
    "search(text)": (
        SearchNoK,
        RetrieverShape(
            "object.search",
            "search(text)",
            False,
            "give it a k parameter, search(query_text, k), and it is called with k=7",
        ),
        4,
    ),
    "a function of (text)": (
        lambda: plain,
        RetrieverShape(
            "function",
            "plain(text)",
            False,
            "give it a k parameter, plain(query_text, k), and it is called with k=7",
        ),
        4,
    ),
    "a function of (text, k)": (
        lambda: with_k,
        RetrieverShape("function", "with_k(text, k=7)", True),
        7,
    ),
    "an async function of (text, *, top_k)": (
        lambda: async_top_k,
        RetrieverShape("async function", "async_top_k(text, top_k=7)", True),
        7,
    ),
    "a functools.wraps decorator": (
        lambda: traced(with_k),
        RetrieverShape("function", "with_k(text, k=7)", True),
        7,
    ),
}


@pytest.mark.parametrize(("build", "shape", "length"), SHAPES.values(), ids=list(SHAPES))
def test_describe_says_whether_the_depth_reaches_the_retriever_and_it_does(
    build: Callable[[], Any], shape: RetrieverShape, length: int
) -> None:
    retriever = build()
    assert describe_retriever(retriever, 7) == shape
    outcomes = run_pipeline(REQUESTS, retriever, depth=7, batch_size=2)
    assert [o.rankings["retriever"] for o in outcomes] == [tuple(POOL[:length])] * 3


def test_a_batch_method_gets_the_depth_in_every_batch() -> None:
    batch = Batch()
    run_pipeline(REQUESTS, batch, depth=9, batch_size=2)
    assert batch.seen == [9, 9]


def test_without_a_depth_nothing_is_passed_and_the_hint_has_a_placeholder() -> None:
    assert describe_retriever(SearchNoK()).depth_hint == (
        "give it a k parameter, search(query_text, k), and it is called with k=N"
    )
    outcomes = run_pipeline(REQUESTS, BatchTopK())  # the method's own default top_k=4
    assert outcomes[0].rankings["retriever"] == tuple(POOL[:4])


def test_describe_does_not_call_the_retriever() -> None:
    calls: list[str] = []

    def search(text: str) -> list[str]:
        calls.append(text)
        return []

    describe_retriever(search, 5)
    assert calls == []


def test_frameworks_are_recognised_without_being_imported() -> None:
    # The runner recognises LangChain, LlamaIndex and Haystack by class names: describing a plain
    # function must not import any of them (llama_index alone costs a second).
    before = set(sys.modules)
    describe_retriever(plain, 5)
    run_pipeline(REQUESTS[:1], plain)
    imported = set(sys.modules) - before
    assert not {
        m for m in imported if m.split(".")[0] in {"langchain_core", "llama_index", "haystack"}
    }
