"""How a query's context reaches plain retrievers: functions, methods, batch methods, rerankers.

Every retriever here records what it was called with; the assertions are about those calls,
and about what ``describe_retriever`` says of them (the same decision, nothing called).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_retrieval.run.retriever import (
    QueryRequest,
    RetrieverShapeError,
    describe_retriever,
    run_pipeline,
)
from pytest_retrieval.run.retriever.context import ContextUse
from pytest_retrieval.run.retriever.shapes import context_warning

ACME = {"tenant": "acme", "groups": ["support"]}
GLOBEX = {"tenant": "globex", "groups": []}
REQUESTS = [
    QueryRequest("a", "refund window", context=ACME),
    QueryRequest("b", "refund window", context=GLOBEX),
    QueryRequest("c", "no context here"),
]
#: Each tenant's documents: a retriever that honours the tenant returns only its own.
DOCS = {"acme": ["acme-refund", "acme-faq"], "globex": ["globex-refund"], None: ["public"]}


class Calls:
    """A thread-safe log of calls."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[Any] = []

    def add(self, item: Any) -> None:
        with self.lock:
            self.seen.append(item)

    def by_text_and(self, key: str) -> list[tuple[str, Any]]:
        return sorted((s["text"], repr(s.get(key))) for s in self.seen)  # type: ignore[misc]


def rankings(outcomes: list[Any]) -> dict[str, tuple[str, ...]]:
    assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
    return {o.query_id: o.rankings["retriever"] for o in outcomes}


def test_a_function_with_a_context_parameter_gets_the_whole_context() -> None:
    calls = Calls()

    def search(text: str, k: int, context: Mapping[str, Any]) -> list[str]:
        calls.add({"text": text, "k": k, "context": context})
        return DOCS[context.get("tenant")][:k]

    outcomes = run_pipeline(REQUESTS, search, depth=5)
    assert rankings(outcomes) == {
        "a": ("acme-refund", "acme-faq"),
        "b": ("globex-refund",),
        "c": ("public",),  # a query without a context gets context={} in a run with contexts
    }
    assert sorted((c["context"].get("tenant") or "", c["k"]) for c in calls.seen) == [
        ("", 5),
        ("acme", 5),
        ("globex", 5),
    ]
    shape = describe_retriever(search, 5, context=ACME)
    assert (shape.call, shape.context) == ("search(text, k=5, context=context)", "context=context")


def test_a_function_gets_the_context_keys_it_declares_by_name() -> None:
    calls = Calls()

    def search(text: str, k: int, tenant: str | None = None, locale: str = "en") -> list[str]:
        calls.add({"text": text, "tenant": tenant, "locale": locale})
        return DOCS[tenant][:k]

    outcomes = run_pipeline(REQUESTS, search, depth=5)
    assert rankings(outcomes)["a"] == ("acme-refund", "acme-faq")
    assert rankings(outcomes)["b"] == ("globex-refund",)
    # groups is not declared: not passed; locale is not in any context: its default stays.
    assert sorted((c["tenant"] or "", c["locale"]) for c in calls.seen) == [
        ("", "en"),
        ("acme", "en"),
        ("globex", "en"),
    ]
    shape = describe_retriever(search, 5, context={"tenant": "x", "groups": []})
    assert shape.call == "search(text, k=5, tenant=context['tenant'])"
    assert shape.context == "tenant=context['tenant']"


def test_a_required_second_parameter_named_after_a_context_key_is_not_the_depth() -> None:
    calls = Calls()

    def search(text: str, tenant: str) -> list[str]:
        calls.add({"text": text, "tenant": tenant})
        return DOCS[tenant]

    outcomes = run_pipeline(REQUESTS[:2], search, depth=5)
    assert rankings(outcomes) == {"a": ("acme-refund", "acme-faq"), "b": ("globex-refund",)}
    assert sorted(c["tenant"] for c in calls.seen) == ["acme", "globex"]  # never 5
    shape = describe_retriever(search, 5, context=["tenant"])
    assert (shape.call, shape.depth_passed) == ("search(text, tenant=context['tenant'])", False)


def test_each_call_gets_its_own_copy_of_the_context() -> None:
    seen: list[list[str]] = []

    def search(text: str, k: int, context: dict[str, Any]) -> list[str]:
        context.setdefault("groups", []).append("tampered")  # a retriever that edits its input
        seen.append(list(context["groups"]))
        return ["d"]

    same = [QueryRequest(str(i), "t", context=ACME) for i in range(3)]
    run_pipeline(same, search, depth=2, concurrency=1)
    assert seen == [["support", "tampered"]] * 3
    assert ACME["groups"] == ["support"]


def test_a_run_without_contexts_calls_exactly_as_before() -> None:
    calls = Calls()

    def search(
        text: str, k: int, context: Any = "untouched", tenant: Any = "untouched"
    ) -> list[str]:
        calls.add({"text": text, "context": context, "tenant": tenant})
        return ["d"]

    run_pipeline([QueryRequest("a", "x"), QueryRequest("b", "y")], search, depth=3)
    assert [(c["context"], c["tenant"]) for c in calls.seen] == [("untouched", "untouched")] * 2
    # A function whose required second parameter is called context still gets the depth then.
    got: list[Any] = []
    run_pipeline([QueryRequest("a", "x")], lambda text, context: got.append(context) or [], depth=3)
    assert got == [3]


def test_kwargs_alone_declares_no_context_key() -> None:
    calls = Calls()

    def traced(text: str, k: int, **kwargs: Any) -> list[str]:
        calls.add({"text": text, "kwargs": kwargs})
        return ["d"]

    run_pipeline(REQUESTS, traced, depth=2)
    assert [c["kwargs"] for c in calls.seen] == [{}, {}, {}]
    shape = describe_retriever(traced, 2, context=ACME)
    assert shape.context is None
    assert shape.context_hint is not None
    assert "traced(query_text, k, context)" in shape.context_hint


def test_an_object_method_and_an_async_function_get_the_context_too() -> None:
    class Index:
        def search(self, text: str, k: int, tenant: str | None = None) -> list[str]:
            return DOCS[tenant][:k]

    async def asearch(text: str, k: int, context: Mapping[str, Any]) -> list[str]:
        return DOCS[context.get("tenant")][:k]

    for retriever in (Index(), asearch):
        assert rankings(run_pipeline(REQUESTS, retriever, depth=1)) == {
            "a": ("acme-refund",),
            "b": ("globex-refund",),
            "c": ("public",),
        }


def test_a_batch_method_gets_contexts_aligned_with_the_texts() -> None:
    calls = Calls()

    class Batch:
        def retrieve_batch(
            self, texts: list[str], k: int, contexts: list[dict[str, Any]]
        ) -> list[list[str]]:
            calls.add({"texts": texts, "contexts": contexts})
            return [DOCS[c.get("tenant")][:k] for c in contexts]

    outcomes = run_pipeline(REQUESTS, Batch(), depth=5, batch_size=2)
    assert rankings(outcomes) == {
        "a": ("acme-refund", "acme-faq"),
        "b": ("globex-refund",),
        "c": ("public",),
    }
    batches = sorted((tuple(c["texts"]), len(c["contexts"])) for c in calls.seen)
    assert batches == [(("no context here",), 1), (("refund window", "refund window"), 2)]
    shape = describe_retriever(Batch(), 5, context=ACME)
    assert shape.call == "retrieve_batch(texts, k=5, contexts=[context, ...])"


def test_a_reranker_gets_the_context_when_it_declares_it() -> None:
    calls = Calls()

    def retrieve(text: str, k: int) -> list[str]:
        return ["acme-refund", "globex-refund", "public"][:k]

    def rerank(text: str, candidates: list[str], context: Mapping[str, Any]) -> list[str]:
        calls.add({"text": text, "tenant": context.get("tenant")})
        own = [c for c in candidates if c.startswith(f"{context.get('tenant')}-")]
        return own + [c for c in candidates if c not in own]

    def plain_rerank(text: str, candidates: list[str]) -> list[str]:
        return list(reversed(candidates))

    outcomes = run_pipeline(REQUESTS, retrieve, rerank, depth=3)
    by_id = {o.query_id: o.rankings["reranker"] for o in outcomes}
    assert by_id["b"] == ("globex-refund", "acme-refund", "public")
    assert sorted(repr(c["tenant"]) for c in calls.seen) == ["'acme'", "'globex'", "None"]
    # A reranker without a context parameter is called as before.
    outcomes = run_pipeline(REQUESTS, retrieve, plain_rerank, depth=3)
    assert {o.query_id: o.rankings["reranker"][0] for o in outcomes} == dict.fromkeys(
        "abc", "public"
    )


def test_the_run_wide_keys_plan_every_call_alike() -> None:
    # The cache may leave only the queries without a context to call: the plan is still the
    # run's, so search(text, tenant) never gets the depth as its tenant.
    got: list[Any] = []

    def search(text: str, tenant: Any = "unset") -> list[str]:
        got.append(tenant)
        return ["d"]

    run_pipeline([QueryRequest("c", "x")], search, depth=4, context=ContextUse(("tenant",)))
    assert got == ["unset"]


def test_the_filter_setting_is_refused_for_a_function_that_gets_the_context_itself() -> None:
    def search(text: str, k: int, tenant: str) -> list[str]:
        return []

    use = ContextUse(("tenant",), build_filter=lambda c: c, filter_spec="shop.scope:only")
    with pytest.raises(RetrieverShapeError) as caught:
        run_pipeline(REQUESTS[:1], search, depth=2, context=use)
    assert str(caught.value) == (
        "retrieval_context_filter = shop.scope:only builds the filter= of a LangChain retriever "
        "and the filters= of a Haystack one, and the retriever under test is a function: it is "
        "handed the context itself (tenant=context['tenant'])"
    )
    assert caught.value.fix == "drop retrieval_context_filter from the pytest configuration"


def test_a_retriever_that_takes_no_context_is_warned_about_not_refused() -> None:
    def search(text: str, k: int) -> list[str]:
        return DOCS[None]

    use = ContextUse(("groups", "tenant"))
    assert context_warning(search, 5, use, 2) == (
        "2 queries of the golden set have a context (groups, tenant), and none of it reaches the "
        "retriever, called as search(text, k=5); take it: search(query_text, k, context) gets "
        "the whole context, or name the keys it needs as parameters, search(query_text, k, "
        "groups). It ranks the same for every tenant, user or history: its rankings are scored "
        "as they come"
    )
    outcomes = run_pipeline(REQUESTS, search, depth=5, context=use)
    assert rankings(outcomes) == dict.fromkeys("abc", ("public",))

    def scoped(text: str, k: int, tenant: str | None = None) -> list[str]:
        return []

    assert context_warning(scoped, 5, use, 2) is None
    assert context_warning(search, 5, ContextUse(), 0) is None


def test_describe_without_a_context_says_how_one_would_reach_the_retriever() -> None:
    def search(text: str, k: int, tenant: str | None = None) -> list[str]:
        return []

    def whole(text: str, k: int, context: Any = None) -> list[str]:
        return []

    def plain(text: str, k: int) -> list[str]:
        return []

    assert describe_retriever(search, 5).call == "search(text, k=5)"  # the call of a plain run
    assert describe_retriever(search, 5).context == "tenant=context['tenant']"
    assert describe_retriever(whole, 5).context == "context=context"
    assert describe_retriever(plain, 5).context is None
