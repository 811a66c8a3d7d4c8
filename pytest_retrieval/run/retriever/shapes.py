"""Which shape a retriever has (callable, batch method, LangChain, LlamaIndex, Haystack), how
the depth reaches it and how a query's context does (:mod:`.context`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .context import (
    FILTER_SETTING,
    NO_CONTEXT,
    ContextUse,
    Route,
    batch_kwargs,
    batch_route,
    call_filtered,
    check_filter_sockets,
    context_names,
    function_hint,
    haystack_filters,
    haystack_filters_hint,
    haystack_shown,
    keyword_route,
    langchain_context,
    llamaindex_refusal,
    refuse_filter_setting,
    refuse_replaced,
    unused_message,
)
from .items import (
    HaystackPipeline,
    RetrieverOutputError,
    RetrieverShape,
    RetrieverShapeError,
    describe,
    is_integral,
)


def _in_mro(obj: Any, module_prefix: str, name: str) -> bool:
    """Whether ``obj``'s class derives from a class ``name`` defined under ``module_prefix``.

    Frameworks are recognised by name, never imported: importing llama_index costs a second.
    """
    return any(
        cls.__name__ == name and cls.__module__.startswith(module_prefix)
        for cls in getattr(type(obj), "__mro__", ())
    )


def _is_langchain_retriever(obj: Any) -> bool:
    return _in_mro(obj, "langchain_core", "BaseRetriever")


def _is_langchain_runnable(obj: Any) -> bool:
    return _in_mro(obj, "langchain_core", "Runnable")


def _is_llamaindex_retriever(obj: Any) -> bool:
    return _in_mro(obj, "llama_index", "BaseRetriever")


def _is_haystack_component(obj: Any) -> bool:
    return getattr(obj, "__haystack_input__", None) is not None and callable(
        getattr(obj, "run", None)
    )


def _is_haystack_pipeline(obj: Any) -> bool:
    return (
        _in_mro(obj, "haystack", "PipelineBase")
        or _in_mro(obj, "haystack", "Pipeline")
        or _in_mro(obj, "haystack", "AsyncPipeline")
    )


def _depth_parameter(
    fn: Callable[..., Any], exclude: frozenset[str] = frozenset()
) -> tuple[str | None, str | None]:
    """How to pass the cutoff ("positional", "k", "top_k", or None when it takes only a query)
    and the name of the parameter it goes to. ``exclude`` names parameters that are never the
    depth (in a run with contexts: ``context`` and the context keys)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None, None
    params = list(signature.parameters.values())
    for name in ("k", "top_k"):
        if name in signature.parameters:
            return name, name
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # Only a *required* second parameter is taken for the cutoff. An optional one may be
    # anything (LangChain's ``invoke(input, config=None)``), and ``*args`` is usually a
    # decorator's wrapper around ``search(text)``: passing the cutoff there breaks every call.
    if (
        len(positional) >= 2
        and positional[1].default is inspect.Parameter.empty
        and positional[1].name not in exclude
    ):
        return "positional", positional[1].name
    return None, None


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine (an async function or async ``__call__``)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


def _int_attribute(obj: Any, *names: str) -> int | None:
    for name in names:
        try:
            value = getattr(obj, name, None)
        except Exception:  # a property that fails: the depth is just unknown
            continue
        if is_integral(value):
            return int(value)
    return None


@dataclass(frozen=True, slots=True)
class CallPlan:
    """How to call a retriever: one query at a time (``single(text, context)``; a reranker's
    ``single(text, candidates, context)``) or in batches (``batch(texts, contexts)``); the
    context is the query's (None: it has none), used as the shape's :class:`.context.Route`
    says."""

    shape: RetrieverShape
    single: Callable[..., Any] | None = None
    batch: Callable[[list[str], list[Any]], Any] | None = None
    is_async: bool = False


def _n(depth: int | None) -> str:
    return str(depth) if depth is not None else "N"


def _depth_argument(how: str, depth: int | None) -> str:
    return _n(depth) if how == "positional" else f"{how}={_n(depth)}"


def _depth_arguments(how: str | None, depth: int | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if how is None or depth is None:
        return (), {}
    if how == "positional":
        return (depth,), {}
    return (), {how: depth}


def _caller(
    fn: Callable[..., Any], how: str | None, depth: int | None, route: Route | None
) -> Callable[[Any, Any], Any]:
    """``call(text, context)``: ``fn`` with the depth as ``how`` says and the context as
    ``route`` says (without a route, exactly the call of a run without contexts)."""
    args, kwargs = _depth_arguments(how, depth)
    if route is None:
        return lambda text, _context: fn(text, *args, **kwargs)
    extra = route.kwargs
    return lambda text, context: fn(text, *args, **kwargs, **extra(context))


def _batch_caller(
    fn: Callable[..., Any], how: str | None, depth: int | None, route: Route | None
) -> Callable[[list[str], list[Any]], Any]:
    """``call(texts, contexts)`` of a batch method (``contexts=`` when ``route`` is given)."""
    args, kwargs = _depth_arguments(how, depth)
    if route is None:
        return lambda texts, _contexts: fn(texts, *args, **kwargs)
    return lambda texts, contexts: fn(texts, *args, **kwargs, **batch_kwargs(contexts))


def _with_context(shown: str, route: Route | None) -> str:
    """``search(text, k=20)`` with the route's arguments: ``search(text, k=20, context=...)``."""
    if route is None:
        return shown
    return f"{shown[:-1]}, {route.shown})"


def _callable_plan(
    fn: Callable[..., Any], depth: int | None, kind: str, name: str, use: ContextUse
) -> CallPlan:
    how, parameter = _depth_parameter(fn, context_names(use))
    is_async = is_async_callable(fn)
    kind = f"async {kind}" if is_async else kind
    route = keyword_route(fn, use, depth=parameter)
    hint = function_hint(name, use) if use.active and route is None else None
    refuse_filter_setting(use, kind, route, hint or "")
    context = route.shown if route is not None else None
    if how is None:
        return CallPlan(
            RetrieverShape(
                kind,
                _with_context(f"{name}(text)", route),
                False,
                f"give it a k parameter, {name}(query_text, k), and it is called with "
                f"k={_n(depth)}",
                context=context,
                context_hint=hint,
            ),
            single=_caller(fn, None, depth, route),
            is_async=is_async,
        )
    shown = _with_context(f"{name}(text, {_depth_argument(how, depth)})", route)
    return CallPlan(
        RetrieverShape(kind, shown, True, context=context, context_hint=hint),
        single=_caller(fn, how, depth, route),
        is_async=is_async,
    )


def _langchain_depth(retriever: Any, depth: int | None) -> tuple[bool, str | None, int | None]:
    """Whether ``k=`` reaches a LangChain retriever's search, else how to set it and its k."""
    expects = getattr(retriever, "_expects_other_args", None)
    if expects is None:
        method = getattr(retriever, "_get_relevant_documents", None)
        expects = method is not None and any(
            p.kind is p.VAR_KEYWORD or p.name == "k"
            for p in inspect.signature(method).parameters.values()
        )
    if expects:
        return True, None, None
    name = type(retriever).__name__
    fixed = _int_attribute(retriever, "k", "top_k")
    n = _n(depth)
    if getattr(retriever, "retrievers", None) is not None:  # EnsembleRetriever and the like
        hint = (
            f"{name} drops k=: build each retriever it combines with k={n}, e.g. "
            f"BM25Retriever.from_documents(docs, k={n}) and "
            f'as_retriever(search_kwargs={{"k": {n}}})'
        )
    elif fixed is not None:
        hint = f"{name} drops k=: build it with k={n}, e.g. {name}.from_documents(docs, k={n})"
    else:
        hint = f"{name} drops k=: build it to return {n} results"
    return False, hint, fixed


def _langchain_built_depth(retriever: Any, fixed: int | None) -> int | None:
    """The k a LangChain retriever was built with: ``search_kwargs["k"]`` of a vector-store
    retriever, else its own ``k`` (``BM25Retriever``)."""
    search_kwargs = getattr(retriever, "search_kwargs", None)
    if isinstance(search_kwargs, Mapping) and is_integral(search_kwargs.get("k")):
        return int(search_kwargs["k"])
    return fixed


def _langchain_plan(retriever: Any, depth: int | None, use: ContextUse) -> CallPlan:
    passed, hint, fixed = _langchain_depth(retriever, depth)
    kwargs: dict[str, Any] = {"k": depth} if passed and depth is not None else {}
    built = _langchain_built_depth(retriever, fixed)
    route, context_hint = langchain_context(retriever, passed, use)
    if route is not None:
        # One query at a time: LangChain's batch() hands every input the same keyword
        # arguments, and each query has its own filter (the run's threads give concurrency).
        invoke = retriever.invoke
        extra = route.kwargs
        store = getattr(retriever, "vectorstore", None)
        shown = f"invoke(text, k={_n(depth)}, {route.shown})" if passed else "invoke(text)"
        return CallPlan(
            RetrieverShape(
                "LangChain retriever",
                shown,
                passed,
                hint,
                fixed,
                built,
                not passed,
                context=route.shown,
            ),
            single=lambda text, context: call_filtered(
                invoke, text, {**kwargs, **extra(context)}, store, use
            ),
        )
    batch = retriever.batch

    def call_batch(texts: list[str], _contexts: list[Any]) -> Any:
        # return_exceptions: a query that raises fails alone, not its whole batch.
        return batch(texts, return_exceptions=True, **kwargs)

    shown = f"batch(texts, k={_n(depth)})" if passed else "batch(texts)"
    return CallPlan(
        RetrieverShape(
            "LangChain retriever",
            shown,
            passed,
            hint,
            fixed,
            built,
            not passed,
            context_hint=context_hint or None,
        ),
        batch=call_batch,
    )


def _langchain_method_plan(method: Any, depth: int | None, use: ContextUse) -> CallPlan:
    owner = method.__self__
    passed, hint, fixed = _langchain_depth(owner, depth)
    name = method.__name__
    is_async = is_async_callable(method)
    route, context_hint = langchain_context(owner, passed, use)
    kwargs: dict[str, Any] = {"k": depth} if passed and depth is not None else {}
    extra = route.kwargs if route is not None else (lambda _context: {})
    store = getattr(owner, "vectorstore", None)
    if is_async:
        single = lambda text, context: method(text, **kwargs, **extra(context))  # noqa: E731
    else:
        single = lambda text, context: call_filtered(  # noqa: E731
            method, text, {**kwargs, **extra(context)}, store, use
        )
    shown = f"{name}(text, k={_n(depth)})" if passed else f"{name}(text)"
    built = _langchain_built_depth(owner, fixed)
    return CallPlan(
        RetrieverShape(
            "LangChain retriever",
            _with_context(shown, route),
            passed,
            hint,
            fixed,
            built,
            not passed,
            context=route.shown if route is not None else None,
            context_hint=context_hint or None,
        ),
        single=single,
        is_async=is_async,
    )


def _llamaindex_plan(retriever: Any, method: Any, depth: int | None, use: ContextUse) -> CallPlan:
    if use.active:
        raise RetrieverShapeError(llamaindex_refusal(f"LlamaIndex {type(retriever).__name__}"))
    fixed = _int_attribute(retriever, "similarity_top_k", "_similarity_top_k", "top_k")
    name = getattr(method, "__name__", "retrieve")
    return CallPlan(
        RetrieverShape(
            "LlamaIndex retriever",
            f"{name}(text)",
            False,
            f"a LlamaIndex retriever returns what it was built for: build it with "
            f"similarity_top_k={_n(depth)}, e.g. index.as_retriever(similarity_top_k={_n(depth)})",
            fixed,
            fixed,
            True,
        ),
        single=lambda text, _context: method(text),
        is_async=is_async_callable(method),
    )


def _haystack_component_plan(component: Any, depth: int | None, use: ContextUse) -> CallPlan:
    name = type(component).__name__
    try:
        parameters = inspect.signature(component.run).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    if "query" not in parameters:
        raise RetrieverShapeError(
            f"the retriever under test is the Haystack component {name}, whose run() takes no "
            f"query text (its inputs: {', '.join(parameters) or 'unknown'}); put it in a Pipeline "
            "after a text embedder and return "
            'HaystackPipeline(pipeline, input="embedder.text") from the retriever_under_test '
            "fixture"
        )
    run = component.run
    built = _int_attribute(component, "top_k")
    takes = "filters" in parameters
    if use.build_filter is not None and use.active and not takes:
        raise RetrieverShapeError(
            f"{FILTER_SETTING} = {use.filter_spec} builds each query's filters, and the Haystack "
            f"component {name}.run() takes no filters",
            f"drop {FILTER_SETTING} from the pytest configuration",
        )
    filtered = use.active and takes and use.gives_filters
    if filtered:
        refuse_replaced(component, name, use)
    hint = None
    if use.active and not filtered:
        hint = haystack_filters_hint(takes, use, f"{name}.run()")
    context = f"filters={haystack_shown(use)}" if filtered else None

    def call(text: str, context_: Any, **depth_: Any) -> Any:
        found = haystack_filters(use, context_) if filtered else None
        extra = {} if found is None else {"filters": found}
        return run(query=text, **depth_, **extra)

    with_filters = f", filters={haystack_shown(use)}" if filtered else ""
    if "top_k" in parameters:
        kwargs: dict[str, Any] = {"top_k": depth} if depth is not None else {}
        return CallPlan(
            RetrieverShape(
                "Haystack component",
                f"run(query=text, top_k={_n(depth)}{with_filters})",
                True,
                built_depth=built,
                context=context,
                context_hint=hint,
            ),
            single=lambda text, context_: call(text, context_, **kwargs),
        )
    return CallPlan(
        RetrieverShape(
            "Haystack component",
            f"run(query=text{with_filters})",
            False,
            f"{name}.run() takes no top_k: build it with top_k={_n(depth)}",
            built,
            built,
            True,
            context=context,
            context_hint=hint,
        ),
        single=call,
    )


def _sockets(described: Any) -> dict[str, list[str]]:
    """``{component: [socket, ...]}`` from Pipeline.inputs()/outputs()."""
    if not isinstance(described, Mapping):
        return {}
    return {str(c): list(s) if isinstance(s, Mapping) else [] for c, s in described.items()}


def _mandatory(described: Any) -> list[str]:
    """The ``component.socket``s Pipeline.inputs() marks mandatory: Haystack refuses a run that
    gives one of them nothing (``Missing mandatory input``)."""
    if not isinstance(described, Mapping):
        return []
    return [
        f"{c}.{name}"
        for c, sockets in described.items()
        if isinstance(sockets, Mapping)
        for name, about in sockets.items()
        if isinstance(about, Mapping) and about.get("is_mandatory") is True
    ]


def _only_socket(sockets: dict[str, list[str]], name: str) -> str | None:
    found = [f"{c}.{name}" for c, names in sockets.items() if name in names]
    return found[0] if len(found) == 1 else None


def _listed(sockets: dict[str, list[str]]) -> str:
    return ", ".join(f"{c}.{s}" for c, names in sockets.items() for s in names) or "none"


def _component_top_k(pipeline: Any, name: str) -> int | None:
    """The ``top_k`` the pipeline's component ``name`` was built with, when it can be read."""
    get = getattr(pipeline, "get_component", None)
    try:
        component = get(name) if callable(get) else None
    except (ValueError, KeyError, AttributeError, TypeError):  # no such component: unknown
        return None
    return _int_attribute(component, "top_k") if component is not None else None


def _is_open(sockets: dict[str, list[str]], name: str) -> bool:
    component, socket = name.split(".")
    return socket in sockets.get(component, [])


def _refuse_closed(
    option: str, given: object, names: tuple[str, ...], open_inputs: dict[str, list[str]]
) -> None:
    """RetrieverShapeError when a named socket is not an open input of the pipeline."""
    closed = [name for name in names if open_inputs and not _is_open(open_inputs, name)]
    if closed:
        raise RetrieverShapeError(
            f"HaystackPipeline({option}={given!r}): the pipeline has no open input "
            f"{', '.join(closed)} (its open inputs: {_listed(open_inputs)})"
        )


def _quoted(names: list[str]) -> str:
    return "[" + ", ".join(f'"{name}"' for name in names) + "]"


def _haystack_pipeline_plan(
    wrapper: HaystackPipeline, depth: int | None, use: ContextUse
) -> CallPlan:
    pipeline = wrapper.pipeline
    described = pipeline.inputs() if callable(getattr(pipeline, "inputs", None)) else {}
    open_inputs = _sockets(described)
    open_outputs = (
        _sockets(pipeline.outputs()) if callable(getattr(pipeline, "outputs", None)) else {}
    )
    inputs = wrapper.input_sockets
    _refuse_closed("input", wrapper.input, inputs, open_inputs)
    named_k = wrapper.top_k_sockets
    if named_k is None:  # every open top_k: each retriever of a hybrid and its joiner
        top_k = tuple(f"{c}.top_k" for c, names in open_inputs.items() if "top_k" in names)
        top_k = tuple(name for name in top_k if name not in inputs)
    else:
        _refuse_closed("top_k", wrapper.top_k, named_k, open_inputs)
        top_k = named_k
    # Haystack refuses a run leaving a mandatory input empty: every query would fail at run
    # time (a hybrid given only "bm25.query" never feeds its embedder). Refused here, once.
    starved = [name for name in _mandatory(described) if name not in inputs and name not in top_k]
    if starved:
        raise RetrieverShapeError(
            f"HaystackPipeline(input={wrapper.input!r}): the pipeline's mandatory input"
            f"{'s' if len(starved) > 1 else ''} {', '.join(starved)} would get nothing, so "
            "Haystack would refuse every query; name every socket that takes the query text, "
            f"e.g. HaystackPipeline(pipeline, input={_quoted([*inputs, *starved])})"
        )
    output = wrapper.output or _only_socket(open_outputs, "documents")
    if output is None:
        raise RetrieverShapeError(
            "HaystackPipeline: cannot tell which output holds the ranked documents (its open "
            f"outputs: {_listed(open_outputs)}); name it, e.g. "
            'HaystackPipeline(pipeline, input=..., output="retriever.documents")'
        )
    out_component, out_socket = output.split(".")
    # An inner component's output is only in the result when asked for.
    include = None if out_socket in open_outputs.get(out_component, []) else {out_component}
    filter_sockets = _filter_sockets(wrapper, open_inputs, inputs, top_k, use)
    filtered = use.active and use.gives_filters and bool(filter_sockets)

    def data_for(text: Any, k: Any, filters: Any = None) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = {}
        for name in inputs:
            component, socket = name.split(".")
            data.setdefault(component, {})[socket] = text
        if k is not None:
            for name in top_k:
                component, socket = name.split(".")
                data.setdefault(component, {})[socket] = k
        if filters is not None:
            for name in filter_sockets:
                component, socket = name.split(".")
                data.setdefault(component, {})[socket] = filters
        return data

    def run(text: str, context: Any) -> Any:
        filters = haystack_filters(use, context) if filtered else None
        # Built afresh: a component may change what it is given.
        data = data_for(text, depth, filters)
        result = (
            pipeline.run(data)
            if include is None
            else pipeline.run(data, include_outputs_from=include)
        )
        value = result.get(out_component, {}) if isinstance(result, Mapping) else None
        if not isinstance(value, Mapping) or out_socket not in value:
            raise RetrieverOutputError(
                f"the pipeline's result {describe(result)} has no {output}; name the socket "
                "holding the documents with HaystackPipeline(..., output=...)"
            )
        return value[out_socket]

    shape = data_for("<text>", depth if depth is not None else "<N>", "<F>" if filtered else None)
    shown = "run(" + repr(shape).replace("'<text>'", "text").replace("'<N>'", "N") + ")"
    shown = shown.replace("'<F>'", haystack_shown(use))
    context = f"filters={haystack_shown(use)} to {', '.join(filter_sockets)}" if filtered else None
    context_hint = None
    if use.active and not filtered:
        context_hint = haystack_filters_hint(
            bool(filter_sockets), use, "the pipeline has no open filters input: it"
        )
    if top_k:
        # Never hand a retriever a smaller top_k than it was built with: the deepest readable.
        builts = [_component_top_k(pipeline, name.split(".")[0]) for name in top_k]
        built = max((b for b in builts if b is not None), default=None)
        passed = RetrieverShape(
            "Haystack pipeline",
            shown,
            True,
            built_depth=built,
            context=context,
            context_hint=context_hint,
        )
        return CallPlan(passed, single=run)
    hint = (
        f"HaystackPipeline(top_k={wrapper.top_k!r}) gives the depth to no socket: build its "
        f"retrievers with top_k={_n(depth)}"
        if named_k is not None
        else f"the pipeline has no open top_k input: build its retriever with "
        f'top_k={_n(depth)}, or name the socket: HaystackPipeline(..., top_k="retriever.top_k")'
    )
    return CallPlan(
        RetrieverShape(
            "Haystack pipeline",
            shown,
            False,
            hint,
            hint_builds=True,
            context=context,
            context_hint=context_hint,
        ),
        single=run,
    )


def _filter_sockets(
    wrapper: HaystackPipeline,
    open_inputs: dict[str, list[str]],
    inputs: tuple[str, ...],
    top_k: tuple[str, ...],
    use: ContextUse,
) -> tuple[str, ...]:
    """The sockets a query's context filters go to: the ones named, else every open
    ``filters`` input. Refuses a named socket the pipeline does not have, a filter setting with
    no socket to go to, and a component whose own filters they would replace."""
    named = wrapper.filters_sockets
    if named is None:
        found = tuple(f"{c}.filters" for c, names in open_inputs.items() if "filters" in names)
        sockets = tuple(name for name in found if name not in inputs and name not in top_k)
    else:
        _refuse_closed("filters", wrapper.filters, named, open_inputs)
        sockets = named
    check_filter_sockets(wrapper.pipeline, sockets, use)
    return sockets


def _batch_method(retriever: Any) -> tuple[str, Callable[..., Any]] | None:
    for name in ("retrieve_batch", "batch"):
        method = getattr(retriever, name, None)
        if callable(method):
            return name, method
    return None


def _batch_plan(
    retriever: Any, method_name: str, method: Callable[..., Any], depth: int | None, use: ContextUse
) -> CallPlan:
    how, _parameter = _depth_parameter(method, context_names(use))
    chain = _is_langchain_runnable(retriever)
    if chain:  # a chain: k= would not reach its retriever
        hint = (
            f"a LangChain {type(retriever).__name__} does not pass k= on: build its retriever "
            f'with as_retriever(search_kwargs={{"k": {_n(depth)}}})'
        )
    else:
        hint = f"give {method_name} a k parameter: {method_name}(texts, k)"
    route = batch_route(method, use)
    context_hint = None
    if use.active and route is None:
        context_hint = (
            f"a LangChain {type(retriever).__name__} passes no context on: return its "
            "retriever, or a function that takes the context"
            if chain
            else f"give {method_name} a contexts parameter: {method_name}(texts, k, contexts) "
            "gets one context per text, in order"
        )
    refuse_filter_setting(use, "batch method", route, context_hint or "")
    context = route.shown if route is not None else None
    if how is None:
        return CallPlan(
            RetrieverShape(
                "batch method",
                _with_context(f"{method_name}(texts)", route),
                False,
                hint,
                hint_builds=chain,
                context=context,
                context_hint=context_hint,
            ),
            batch=_batch_caller(method, None, depth, route),
        )
    return CallPlan(
        RetrieverShape(
            "batch method",
            _with_context(f"{method_name}(texts, {_depth_argument(how, depth)})", route),
            True,
            context=context,
            context_hint=context_hint,
        ),
        batch=_batch_caller(method, how, depth, route),
    )


def plan_call(retriever: Any, depth: int | None, use: ContextUse = NO_CONTEXT) -> CallPlan:
    """How to call the retriever stage in a run whose contexts ``use`` describes;
    RetrieverShapeError for what cannot be called (or handed the context)."""
    if inspect.isclass(retriever):
        name = retriever.__qualname__
        raise RetrieverShapeError(
            f"the retriever under test is the class {name}, not an instance of it: return "
            f"{name}(...) from the retriever_under_test fixture, not {name}"
        )
    if isinstance(retriever, HaystackPipeline):
        return _haystack_pipeline_plan(retriever, depth, use)
    if _is_haystack_pipeline(retriever):
        inputs = (
            _sockets(retriever.inputs()) if callable(getattr(retriever, "inputs", None)) else {}
        )
        example = _only_socket(inputs, "query") or "retriever.query"
        raise RetrieverShapeError(
            f"the retriever under test is a Haystack {type(retriever).__name__}, which cannot tell "
            f"which input takes the query text (its open inputs: {_listed(inputs)}); return "
            f'HaystackPipeline(pipeline, input="{example}") (from pytest_retrieval import '
            "HaystackPipeline) from the retriever_under_test fixture"
        )
    if _is_haystack_component(retriever):
        return _haystack_component_plan(retriever, depth, use)
    if _is_langchain_retriever(retriever):
        return _langchain_plan(retriever, depth, use)
    owner = getattr(retriever, "__self__", None)
    name = getattr(retriever, "__name__", "")
    if owner is not None and _is_langchain_retriever(owner) and name in ("invoke", "ainvoke"):
        return _langchain_method_plan(retriever, depth, use)
    if _is_llamaindex_retriever(retriever):
        return _llamaindex_plan(retriever, retriever.retrieve, depth, use)
    if owner is not None and _is_llamaindex_retriever(owner) and name in ("retrieve", "aretrieve"):
        return _llamaindex_plan(owner, retriever, depth, use)
    found = None if inspect.isroutine(retriever) else _batch_method(retriever)
    if found is not None:
        return _batch_plan(retriever, found[0], found[1], depth, use)
    if callable(retriever):
        fn_name = getattr(retriever, "__name__", "fn")
        return _callable_plan(retriever, depth, "function", fn_name, use)
    for method_name in ("invoke", "retrieve", "search", "get_relevant_documents"):
        found_method = getattr(retriever, method_name, None)
        if callable(found_method):
            return _callable_plan(found_method, depth, f"object.{method_name}", method_name, use)
    raise RetrieverShapeError(
        f"the retriever under test is a {type(retriever).__name__}, which is neither callable nor "
        "has an invoke/retrieve/search/retrieve_batch/batch method; return a function "
        "`retrieve(query_text) -> ranked ids` from the retriever_under_test fixture"
    )


ContextSpec = ContextUse | Mapping[str, Any] | Iterable[str] | None
"""What :func:`describe_retriever` is told of a run's contexts: a :class:`.context.ContextUse`,
a sample context (its keys), the keys, or None (not known)."""


def context_use(context: ContextSpec) -> ContextUse | None:
    """The :class:`.context.ContextUse` of ``context`` (None when it is None)."""
    if context is None or isinstance(context, ContextUse):
        return context
    keys = list(context)
    if not all(isinstance(key, str) for key in keys):
        raise TypeError(f"context keys must be strings, got {keys!r}")
    return ContextUse(tuple(sorted(set(keys))))


def describe_retriever(
    retriever: Any, depth: int | None = None, *, context: ContextSpec = None
) -> RetrieverShape:
    """How :func:`run_pipeline` calls ``retriever``, whether ``depth`` reaches it and how a
    query's context does (``RetrieverShape.context``, :mod:`.context`).

    The same decision the runner makes (nothing is called). ``context`` says what the run's
    contexts hold (a sample context such as ``{"tenant": "acme"}``, or its keys): the call shown
    then hands it over as the run would, and ``context_hint`` says how to make a context reach
    a retriever that takes none. Without it the call is that of a run without contexts, and
    ``RetrieverShape.context`` says how a context would reach the retriever (any parameter it
    declares could be a key; a LangChain vector store's ``filter=`` needs
    ``retrieval_context_filter``, so none is said). Raises :class:`RetrieverShapeError` for a
    retriever the runner would refuse (a LlamaIndex retriever, when ``context`` has keys).
    """
    use = context_use(context)
    if use is not None:
        return plan_call(retriever, depth, use).shape
    shape = plan_call(retriever, depth).shape
    try:
        generic = plan_call(retriever, depth, ContextUse(any_key=True)).shape
    except RetrieverShapeError:  # it could take no context (LlamaIndex): said when one is given
        return shape
    return replace(shape, context=generic.context)


def context_warning(retriever: Any, depth: int | None, use: ContextUse, queries: int) -> str | None:
    """The one warning of a run whose ``queries`` contexts reach no part of the retriever
    (:func:`.context.unused_message`), or None: it takes them, the run has none, or the runner
    refuses the retriever (with its own message)."""
    if not use.keys:
        return None
    try:
        shape = plan_call(retriever, depth, use).shape
    except RetrieverShapeError:
        return None
    if shape.context is not None:
        return None
    return unused_message(shape.call, shape.context_hint, use, queries)
