"""How a query's context reaches the retriever: the one home of that decision.

A query's context (:data:`pytest_retrieval.golden.context.Context`: a tenant, a user, groups,
filters, a conversation's history, any key; plain data) is handed over as the shape allows:

* a function, or a retriever object's ``invoke`` / ``retrieve`` / ``search`` method: ``context=``
  (the whole mapping) when it has a parameter called ``context``; otherwise each context key it
  declares as a parameter, by name (``search(text, k, tenant)`` gets ``tenant="acme"``). The
  first parameter (the text) and the depth's (``k``, ``top_k``) are never filled from the
  context; ``**kwargs`` is not a declaration (a decorator's wrapper has one).
* a batch method: ``contexts=`` (a list aligned with the texts, ``{}`` for a query without a
  context) when it has that parameter;
* a reranker (the second stage): ``context=`` when it has that parameter;
* a LangChain retriever: ``filter=`` built by the user's ``retrieval_context_filter =
  module:function`` (``function(context)`` returns what the store filters with: a function of a
  ``Document`` for ``InMemoryVectorStore``, a dict for most others; None for no filter), where
  the retriever passes keyword arguments on to its search (a ``VectorStoreRetriever``); and
  ``context=`` when its own ``_get_relevant_documents`` declares it. A filter set when it was
  built (``search_kwargs={"filter": ...}``) is never replaced: that is an error;
* a Haystack component or :class:`~pytest_retrieval.run.retriever.items.HaystackPipeline`:
  ``filters=`` (every open ``filters`` socket of a pipeline, or the ones named), from
  ``retrieval_context_filter(context)`` when it is set, else ``context["filters"]``; a component
  built with its own ``filters`` and ``filter_policy=REPLACE`` would lose them: an error;
* a LlamaIndex retriever: refused (its filters are fixed when it is built); the message shows
  the wrapper to write.

Nothing is passed while no query of the run has a context and ``retrieval_context_filter`` is not
set: every call is exactly the call of a run without contexts. With the setting, every query's
filter is built (from ``{}`` when the golden set has no context at all). A query without a context
in a run where others have one gets ``context={}`` (``contexts`` holds ``{}`` for it) and no
keyword from its absent keys. Every call gets its own copy of the context
(:func:`~pytest_retrieval.golden.context.thaw_context`), so a retriever that changes what it was
given changes nothing for another call. What the shape takes is said by
:func:`~pytest_retrieval.run.retriever.describe_retriever` (``RetrieverShape.context``); a run
whose contexts reach no part of the retriever is not refused (a retriever that ignores a tenant is
what the leak gates are for) but warned about once (:func:`unused_message`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...golden.context import thaw_context
from .items import RetrieverShapeError, describe

#: What a ``retrieval_context_filter`` function is: ``function(context) -> filter or None``.
FilterBuilder = Callable[[dict[str, Any]], Any]

#: The ini key of the filter builder, as messages name it.
FILTER_SETTING = "retrieval_context_filter"


class ContextFilterError(RuntimeError):
    """The ``retrieval_context_filter`` function raised: the query's error, naming the
    function (never the context: a held-out query's context is not shown)."""


@dataclass(frozen=True, slots=True)
class ContextUse:
    """What a run hands its retriever besides the text.

    ``keys`` is every key some query of the run has in its context (sorted): a shape is
    planned for the whole run, never for the part the cache did not serve, so one call never
    differs from another by which queries came with it. ``build_filter`` is the
    ``retrieval_context_filter`` function (``filter_spec`` its ``module:function``), None when it
    is not set. ``any_key`` describes a retriever for a run whose keys are not known
    (:func:`~pytest_retrieval.run.retriever.describe_retriever` without a context): every parameter
    it declares could be one.
    """

    keys: tuple[str, ...] = ()
    build_filter: FilterBuilder | None = None
    filter_spec: str | None = None
    any_key: bool = False

    @property
    def active(self) -> bool:
        """True when some query has a context (or the keys are not known), or a
        ``retrieval_context_filter`` is set: its filter is built for every query (from ``{}``
        for a query without a context), so a golden set with no context is filtered too."""
        return bool(self.keys) or self.any_key or self.build_filter is not None

    def has(self, key: str) -> bool:
        """True when ``key`` may be in a query's context."""
        return self.any_key or key in self.keys

    @property
    def gives_filters(self) -> bool:
        """True when a Haystack ``filters`` input gets something: the builder, or a
        ``filters`` key in the contexts."""
        return self.build_filter is not None or self.has("filters")

    @classmethod
    def of(
        cls,
        contexts: Iterable[Mapping[str, Any] | None],
        *,
        build_filter: FilterBuilder | None = None,
        filter_spec: str | None = None,
    ) -> ContextUse:
        """The use of a run whose queries have ``contexts`` (None or empty: none)."""
        keys = sorted({key for context in contexts if context for key in context})
        return cls(tuple(keys), build_filter, filter_spec)


#: A run without contexts.
NO_CONTEXT = ContextUse()


@dataclass(frozen=True, slots=True)
class Route:
    """How one callable takes a query's context: ``shown`` in the call ``describe_retriever``
    prints (``tenant=context['tenant']``) and ``kwargs(context)``, the keyword arguments of one
    call (fresh copies; None: the query has no context)."""

    shown: str
    kwargs: Callable[[Mapping[str, Any] | None], dict[str, Any]]


def _keyword_names(fn: Callable[..., Any]) -> list[str] | None:
    """The parameters of ``fn`` that can be passed by keyword, the first positional one (the
    text) left out; None when the signature cannot be read."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    names: list[str] = []
    first = True
    for p in parameters:
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        if positional and first:
            first = False
            continue
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.append(p.name)
    return names


def whole_context(name: str = "context") -> Route:
    """The whole context as one keyword argument ``name`` (``{}`` for a query without one)."""

    def kwargs(context: Mapping[str, Any] | None) -> dict[str, Any]:
        return {name: thaw_context(context) if context else {}}

    return Route(f"{name}=context", kwargs)


def context_names(use: ContextUse) -> frozenset[str]:
    """The parameter names that are never the depth in a run with contexts: ``context``,
    ``contexts`` and every key of the run (``search(text, tenant)``: its second parameter is the
    tenant, not ``k``)."""
    if not use.active:
        return frozenset()
    return frozenset({"context", "contexts", *use.keys})


def keyword_route(fn: Callable[..., Any], use: ContextUse, *, depth: str | None) -> Route | None:
    """How a function (or a method) takes the context: ``context=`` when it declares that
    parameter, else the context keys it declares by name; None when it takes none (or the
    run has no context). ``depth`` is the parameter the depth goes to (never a context key)."""
    if not use.active:
        return None
    names = _keyword_names(fn)
    if not names:
        return None
    if "context" in names:
        return whole_context()
    declared = [n for n in names if n != depth and n not in ("k", "top_k") and use.has(n)]
    if not declared:
        return None

    def kwargs(context: Mapping[str, Any] | None) -> dict[str, Any]:
        if not context:
            return {}
        return {n: thaw_context(context[n]) for n in declared if n in context}

    return Route(", ".join(f"{n}=context[{n!r}]" for n in declared), kwargs)


def batch_route(method: Callable[..., Any], use: ContextUse) -> Route | None:
    """``contexts=`` for a batch method that declares it (a list aligned with the texts);
    :func:`batch_kwargs` makes the argument."""
    if not use.active or "contexts" not in (_keyword_names(method) or ()):
        return None
    return Route("contexts=[context, ...]", lambda _context: {})


def batch_kwargs(contexts: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The ``contexts=`` argument of one batch call: a fresh copy per query, ``{}`` for none."""
    return {"contexts": [thaw_context(c) if c else {} for c in contexts]}


def reranker_route(fn: Callable[..., Any], use: ContextUse) -> Route | None:
    """``context=`` for a reranker that declares it; None otherwise."""
    if not use.active or "context" not in (_keyword_names(fn) or ()):
        return None
    return whole_context()


def _built_filter(use: ContextUse, context: Mapping[str, Any]) -> Any:
    assert use.build_filter is not None
    try:
        return use.build_filter(thaw_context(context))
    except Exception as exc:  # the user's function: the query fails with its error, named
        raise ContextFilterError(
            f"{FILTER_SETTING} = {use.filter_spec} raised {type(exc).__name__}: {exc}"
        ) from exc


def _takes_a_function(store: object) -> bool:
    """True for a store whose ``filter=`` is a function of a ``Document``: LangChain's
    ``InMemoryVectorStore`` (and subclasses). Read from the class, so nothing is imported."""
    return any(
        c.__name__ == "InMemoryVectorStore" and c.__module__.startswith("langchain_core")
        for c in type(store).__mro__
    )


def _store_takes(store: object) -> str:
    """What ``store``'s ``filter=`` is, for a message."""
    if _takes_a_function(store):
        return "a function of a Document, e.g. lambda doc: doc.metadata['tenant'] == tenant"
    return "what its documentation says (a dict for most stores)"


def call_filtered(
    call: Callable[..., Any], text: Any, kwargs: dict[str, Any], store: object, use: ContextUse
) -> Any:
    """``call(text, **kwargs)``; a TypeError raised with a ``filter=`` from
    ``retrieval_context_filter`` in ``kwargs`` fails the query naming the setting, the type it
    returned and what ``store`` takes (never the filter's value: it is made from the context,
    and a held-out query's context is not shown)."""
    try:
        return call(text, **kwargs)
    except TypeError as exc:
        if use.build_filter is None or "filter" not in kwargs:
            raise
        shown = type(store).__name__ if store is not None else "the retriever"
        raise ContextFilterError(
            f"{shown} raised {type(exc).__name__}: {exc}, given the filter= that "
            f"{FILTER_SETTING} = {use.filter_spec} returned (a {type(kwargs['filter']).__name__}): "
            f"if the filter is the cause, return {_store_takes(store)}"
        ) from exc


def langchain_filter_route(use: ContextUse, store: object = None) -> Route | None:
    """``filter=`` for a LangChain retriever that passes keyword arguments on to its search:
    what ``retrieval_context_filter`` builds (called with ``{}`` for a query without a context;
    no filter where it returns None). ``store`` is the retriever's vector store when it has
    one: a filter of the wrong type for it (not a function for ``InMemoryVectorStore``) fails
    the query naming the setting, not deep in the store."""
    if not use.active or use.build_filter is None:
        return None

    def kwargs(context: Mapping[str, Any] | None) -> dict[str, Any]:
        # A query without a context is filtered too, built from {}: "no tenant, no groups"
        # is the user's function's call (it may admit only the shared documents), never
        # "no filter", which would hand that query every restricted document.
        built = _built_filter(use, context or {})
        if built is not None and not callable(built) and _takes_a_function(store):
            raise ContextFilterError(
                f"{FILTER_SETTING} = {use.filter_spec} returned a {type(built).__name__}, and "
                f"{type(store).__name__} filters with a function of a Document: return one, "
                "e.g. lambda doc: doc.metadata['tenant'] == context['tenant']"
            )
        return {} if built is None else {"filter": built}

    return Route(f"filter={FILTER_SETTING}(context)", kwargs)


def haystack_filters(use: ContextUse, context: Mapping[str, Any] | None) -> Any:
    """The ``filters`` of one Haystack call: ``retrieval_context_filter(context)`` when it is
    set (``{}`` for a query without a context, as LangChain's filter is built), else
    ``context["filters"]`` (a fresh copy); None for none."""
    if use.build_filter is not None:
        return _built_filter(use, context or {})
    if not context:
        return None
    found = context.get("filters")
    return None if found is None else thaw_context(found)


def haystack_shown(use: ContextUse) -> str:
    """Where a Haystack call's ``filters`` come from, for ``describe_retriever``."""
    return f"{FILTER_SETTING}(context)" if use.build_filter is not None else "context['filters']"


def combined(*routes: Route | None) -> Route | None:
    """One route from several (a LangChain retriever may take ``context=`` and ``filter=``)."""
    found = [r for r in routes if r is not None]
    if not found:
        return None
    if len(found) == 1:
        return found[0]

    def kwargs(context: Mapping[str, Any] | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for route in found:
            out.update(route.kwargs(context))
        return out

    return Route(", ".join(r.shown for r in found), kwargs)


def keys_shown(use: ContextUse) -> str:
    """The run's context keys for a message (``tenant, user``)."""
    return ", ".join(use.keys) if use.keys else "its keys"


def function_hint(name: str, use: ContextUse) -> str:
    """How to make a function take the context."""
    example = use.keys[0] if use.keys else "tenant"
    return (
        f"take it: {name}(query_text, k, context) gets the whole context, or name the keys it "
        f"needs as parameters, {name}(query_text, k, {example})"
    )


def llamaindex_refusal(kind: str) -> str:
    """Why a LlamaIndex retriever cannot be handed a context, and the wrapper to write."""
    return (
        f"the golden set gives its queries a context, and a {kind} cannot take one: its "
        "filters are fixed when it is built. Return a function that builds the retriever for "
        "each query's context from the retriever_under_test fixture, e.g.\n\n"
        "    from llama_index.core.vector_stores import MetadataFilter, MetadataFilters\n\n"
        "    def retrieve(text, k, tenant):\n"
        "        filters = MetadataFilters(filters=[MetadataFilter(key='tenant', value=tenant)])\n"
        "        return index.as_retriever(similarity_top_k=k, filters=filters).retrieve(text)\n\n"
        "    return retrieve\n\n"
        "(or drop the contexts from the golden set to gate it unscoped)"
    )


def unused_message(call: str, hint: str | None, use: ContextUse, queries: int) -> str | None:
    """The one warning of a run whose contexts reach no part of the retriever (``call`` is how
    it is called, ``hint`` how to make it take them), or None when the run has no context."""
    if not use.keys:
        return None
    said = f"; {hint}" if hint else ""
    have = "has" if queries == 1 else "have"
    return (
        f"{queries} quer{'y' if queries == 1 else 'ies'} of the golden set {have} a context "
        f"({keys_shown(use)}), and none of it reaches the retriever, called as {call}{said}. "
        "It ranks the same for every tenant, user or history: its rankings are scored as they "
        "come"
    )


# --- the shapes' refusals ---------------------------------------------------------------


def refuse_filter_setting(use: ContextUse, kind: str, route: Route | None, hint: str) -> None:
    """A ``retrieval_context_filter`` the retriever cannot be handed: refused (set, it would
    change nothing)."""
    if use.build_filter is None or not use.active:
        return
    takes = f"it is handed the context itself ({route.shown})" if route else hint
    raise RetrieverShapeError(
        f"{FILTER_SETTING} = {use.filter_spec} builds the filter= of a LangChain retriever and "
        f"the filters= of a Haystack one, and the retriever under test is a {kind}: {takes}",
        f"drop {FILTER_SETTING} from the pytest configuration",
    )


def langchain_context(retriever: Any, passed: bool, use: ContextUse) -> tuple[Route | None, str]:
    """How a LangChain retriever takes the context (``context=`` when its
    ``_get_relevant_documents`` declares it, ``filter=`` from ``retrieval_context_filter`` when
    it passes keyword arguments on), and the hint when it takes none. Refuses a filter setting
    it would drop, and one that would replace the filter it was built with."""
    name = type(retriever).__name__
    if not use.active:
        return None, ""
    method = getattr(retriever, "_get_relevant_documents", None)
    declares = False
    if method is not None:
        try:
            declares = "context" in inspect.signature(method).parameters
        except (TypeError, ValueError):
            declares = False
    own = whole_context() if declares else None
    if use.build_filter is not None and not passed:
        raise RetrieverShapeError(
            f"{FILTER_SETTING} = {use.filter_spec} builds a filter= for each query, and {name} "
            "drops the keyword arguments it is given (it passes nothing on to a search)",
            "wrap it in a function that filters by the context, search(text, k, tenant), and "
            f"drop {FILTER_SETTING}",
        )
    search_kwargs = getattr(retriever, "search_kwargs", None)
    if (
        use.build_filter is not None
        and isinstance(search_kwargs, Mapping)
        and search_kwargs.get("filter") is not None
    ):
        raise RetrieverShapeError(
            f"{name} was built with a filter (search_kwargs={{'filter': "
            f"{describe(search_kwargs['filter'])}}}), and {FILTER_SETTING} = {use.filter_spec} "
            "would replace it with each query's filter",
            "build the retriever without a filter and apply both in "
            f"{use.filter_spec.rpartition(':')[2] if use.filter_spec else 'it'}(context), or "
            f"drop {FILTER_SETTING}",
        )
    store = getattr(retriever, "vectorstore", None)
    route = combined(own, langchain_filter_route(use, store) if passed else None)
    if route is not None:
        return route, ""
    if passed:
        hint = (
            f"set {FILTER_SETTING} = module:function: it builds each query's filter= from its "
            "context (a function of a Document for InMemoryVectorStore, a dict for most stores)"
        )
    else:
        hint = (
            f"{name} passes nothing on to a search: wrap it in a function that filters by the "
            "context, search(text, k, tenant)"
        )
    return None, hint


def refuse_replaced(component: Any, label: str, use: ContextUse) -> None:
    """A Haystack component built with its own filters and ``filter_policy=REPLACE`` would
    lose them to each query's context filters: refused, never silently replaced."""
    built = getattr(component, "filters", None)
    policy = getattr(component, "filter_policy", None)
    policy = getattr(policy, "value", policy)
    if not built or str(policy).lower() != "replace":
        return
    raise RetrieverShapeError(
        f"the Haystack component {label} was built with filters={describe(built)} and "
        f"filter_policy=REPLACE, so each query's filters (from {haystack_shown(use)}) would "
        "replace them",
        "build it with filter_policy=FilterPolicy.MERGE to apply both (from "
        "haystack.document_stores.types import FilterPolicy), or move its filters into the "
        "queries' contexts",
    )


def haystack_filters_hint(takes: bool, use: ContextUse, where: str) -> str:
    """How to make a Haystack retriever take the context (it takes it through ``filters``)."""
    if not takes:
        return f"{where} takes no filters: the context reaches a Haystack retriever as filters"
    return (
        "give the queries' contexts a filters key (Haystack's filter syntax), or set "
        f"{FILTER_SETTING} = module:function to build each query's filters from its context"
    )


def check_filter_sockets(pipeline: Any, sockets: Sequence[str], use: ContextUse) -> None:
    """Refuse a filter setting with no socket to go to, and a component of ``pipeline`` whose
    own filters the context's would replace (:func:`refuse_replaced`)."""
    if use.build_filter is not None and use.active and not sockets:
        raise RetrieverShapeError(
            f"{FILTER_SETTING} = {use.filter_spec} builds each query's filters, and the "
            "pipeline has no filters socket to give them to",
            f'drop {FILTER_SETTING}, or name a socket, HaystackPipeline(..., filters="retriever.'
            'filters")',
        )
    if not (use.active and use.gives_filters):
        return
    get = getattr(pipeline, "get_component", None)
    for name in sockets:
        component_name = name.split(".")[0]
        try:
            component = get(component_name) if callable(get) else None
        except (ValueError, KeyError, AttributeError, TypeError):  # unreadable: not checked
            component = None
        if component is not None:
            refuse_replaced(component, component_name, use)
