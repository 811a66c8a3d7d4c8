"""Which shape a retriever has (callable, batch method, LangChain, LlamaIndex, Haystack) and how
the depth reaches it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .items import (
    HaystackPipeline,
    RetrieverOutputError,
    RetrieverShape,
    RetrieverShapeError,
    _describe,
    _is_integer,
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


def _accepts_k(fn: Callable[..., Any]) -> str | None:
    """How to pass the cutoff: "positional", "k", "top_k", or None when it takes only a query."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    for name in ("k", "top_k"):
        if name in signature.parameters:
            return name
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # Only a *required* second parameter is taken for the cutoff. An optional one may be
    # anything (LangChain's ``invoke(input, config=None)``), and ``*args`` is usually a
    # decorator's wrapper around ``search(text)``: passing the cutoff there breaks every call.
    if len(positional) >= 2 and positional[1].default is inspect.Parameter.empty:
        return "positional"
    return None


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


def _int_attribute(obj: Any, *names: str) -> int | None:
    for name in names:
        try:
            value = getattr(obj, name, None)
        except Exception:  # a property that fails: the depth is just unknown
            continue
        if _is_integer(value):
            return int(value)
    return None


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to call a retriever: one query at a time (``single``) or in batches (``batch``)."""

    shape: RetrieverShape
    single: Callable[[str], Any] | None = None
    batch: Callable[[list[str]], Any] | None = None
    is_async: bool = False


def _n(depth: int | None) -> str:
    return str(depth) if depth is not None else "N"


def _depth_argument(how: str, depth: int | None) -> str:
    return _n(depth) if how == "positional" else f"{how}={_n(depth)}"


def _with_depth(fn: Callable[..., Any], how: str | None, depth: int | None) -> Callable[[Any], Any]:
    if how is None or depth is None:
        return fn
    if how == "positional":
        return lambda text: fn(text, depth)
    return lambda text: fn(text, **{how: depth})


def _callable_plan(fn: Callable[..., Any], depth: int | None, kind: str, name: str) -> _Plan:
    how = _accepts_k(fn)
    is_async = _is_async(fn)
    kind = f"async {kind}" if is_async else kind
    if how is None:
        return _Plan(
            RetrieverShape(
                kind,
                f"{name}(text)",
                False,
                f"give it a k parameter, {name}(query_text, k), and it is called with "
                f"k={_n(depth)}",
            ),
            single=fn,
            is_async=is_async,
        )
    shown = f"{name}(text, {_depth_argument(how, depth)})"
    return _Plan(
        RetrieverShape(kind, shown, True), single=_with_depth(fn, how, depth), is_async=is_async
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
    if isinstance(search_kwargs, Mapping) and _is_integer(search_kwargs.get("k")):
        return int(search_kwargs["k"])
    return fixed


def _langchain_plan(retriever: Any, depth: int | None) -> _Plan:
    passed, hint, fixed = _langchain_depth(retriever, depth)
    kwargs: dict[str, Any] = {"k": depth} if passed and depth is not None else {}
    batch = retriever.batch

    def call_batch(texts: list[str]) -> Any:
        # return_exceptions: a query that raises fails alone, not its whole batch.
        return batch(texts, return_exceptions=True, **kwargs)

    shown = f"batch(texts, k={_n(depth)})" if passed else "batch(texts)"
    built = _langchain_built_depth(retriever, fixed)
    return _Plan(
        RetrieverShape("LangChain retriever", shown, passed, hint, fixed, built, not passed),
        batch=call_batch,
    )


def _langchain_method_plan(method: Any, depth: int | None) -> _Plan:
    owner = method.__self__
    passed, hint, fixed = _langchain_depth(owner, depth)
    name = method.__name__
    is_async = _is_async(method)
    single = (lambda text: method(text, k=depth)) if passed and depth is not None else method
    shown = f"{name}(text, k={_n(depth)})" if passed else f"{name}(text)"
    built = _langchain_built_depth(owner, fixed)
    return _Plan(
        RetrieverShape("LangChain retriever", shown, passed, hint, fixed, built, not passed),
        single=single,
        is_async=is_async,
    )


def _llamaindex_plan(retriever: Any, method: Any, depth: int | None) -> _Plan:
    fixed = _int_attribute(retriever, "similarity_top_k", "_similarity_top_k", "top_k")
    name = getattr(method, "__name__", "retrieve")
    return _Plan(
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
        single=method,
        is_async=_is_async(method),
    )


def _haystack_component_plan(component: Any, depth: int | None) -> _Plan:
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
    if "top_k" in parameters:
        kwargs: dict[str, Any] = {"top_k": depth} if depth is not None else {}
        return _Plan(
            RetrieverShape(
                "Haystack component",
                f"run(query=text, top_k={_n(depth)})",
                True,
                built_depth=built,
            ),
            single=lambda text: run(query=text, **kwargs),
        )
    return _Plan(
        RetrieverShape(
            "Haystack component",
            "run(query=text)",
            False,
            f"{name}.run() takes no top_k: build it with top_k={_n(depth)}",
            built,
            built,
            True,
        ),
        single=lambda text: run(query=text),
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


def _haystack_pipeline_plan(wrapper: HaystackPipeline, depth: int | None) -> _Plan:
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

    def data_for(text: Any, k: Any) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = {}
        for name in inputs:
            component, socket = name.split(".")
            data.setdefault(component, {})[socket] = text
        if k is not None:
            for name in top_k:
                component, socket = name.split(".")
                data.setdefault(component, {})[socket] = k
        return data

    def run(text: str) -> Any:
        data = data_for(text, depth)  # built afresh: a component may change what it is given
        result = (
            pipeline.run(data)
            if include is None
            else pipeline.run(data, include_outputs_from=include)
        )
        value = result.get(out_component, {}) if isinstance(result, Mapping) else None
        if not isinstance(value, Mapping) or out_socket not in value:
            raise RetrieverOutputError(
                f"the pipeline's result {_describe(result)} has no {output}; name the socket "
                "holding the documents with HaystackPipeline(..., output=...)"
            )
        return value[out_socket]

    shape = data_for("<text>", depth if depth is not None else "<N>")
    shown = "run(" + repr(shape).replace("'<text>'", "text").replace("'<N>'", "N") + ")"
    if top_k:
        # Never hand a retriever a smaller top_k than it was built with: the deepest readable.
        builts = [_component_top_k(pipeline, name.split(".")[0]) for name in top_k]
        built = max((b for b in builts if b is not None), default=None)
        passed = RetrieverShape("Haystack pipeline", shown, True, built_depth=built)
        return _Plan(passed, single=run)
    hint = (
        f"HaystackPipeline(top_k={wrapper.top_k!r}) gives the depth to no socket: build its "
        f"retrievers with top_k={_n(depth)}"
        if named_k is not None
        else f"the pipeline has no open top_k input: build its retriever with "
        f'top_k={_n(depth)}, or name the socket: HaystackPipeline(..., top_k="retriever.top_k")'
    )
    return _Plan(
        RetrieverShape("Haystack pipeline", shown, False, hint, hint_builds=True), single=run
    )


def _batch_method(retriever: Any) -> tuple[str, Callable[..., Any]] | None:
    for name in ("retrieve_batch", "batch"):
        method = getattr(retriever, name, None)
        if callable(method):
            return name, method
    return None


def _plan(retriever: Any, depth: int | None) -> _Plan:
    """How to call the retriever stage; RetrieverShapeError for what cannot be called."""
    if inspect.isclass(retriever):
        name = retriever.__qualname__
        raise RetrieverShapeError(
            f"the retriever under test is the class {name}, not an instance of it: return "
            f"{name}(...) from the retriever_under_test fixture, not {name}"
        )
    if isinstance(retriever, HaystackPipeline):
        return _haystack_pipeline_plan(retriever, depth)
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
        return _haystack_component_plan(retriever, depth)
    if _is_langchain_retriever(retriever):
        return _langchain_plan(retriever, depth)
    owner = getattr(retriever, "__self__", None)
    name = getattr(retriever, "__name__", "")
    if owner is not None and _is_langchain_retriever(owner) and name in ("invoke", "ainvoke"):
        return _langchain_method_plan(retriever, depth)
    if _is_llamaindex_retriever(retriever):
        return _llamaindex_plan(retriever, retriever.retrieve, depth)
    if owner is not None and _is_llamaindex_retriever(owner) and name in ("retrieve", "aretrieve"):
        return _llamaindex_plan(owner, retriever, depth)
    found = None if inspect.isroutine(retriever) else _batch_method(retriever)
    if found is not None:
        method_name, method = found
        how = _accepts_k(method)
        chain = _is_langchain_runnable(retriever)
        if chain:  # a chain: k= would not reach its retriever
            hint = (
                f"a LangChain {type(retriever).__name__} does not pass k= on: build its retriever "
                f'with as_retriever(search_kwargs={{"k": {_n(depth)}}})'
            )
        else:
            hint = f"give {method_name} a k parameter: {method_name}(texts, k)"
        if how is None:
            return _Plan(
                RetrieverShape(
                    "batch method", f"{method_name}(texts)", False, hint, hint_builds=chain
                ),
                batch=method,
            )
        return _Plan(
            RetrieverShape(
                "batch method", f"{method_name}(texts, {_depth_argument(how, depth)})", True
            ),
            batch=_with_depth(method, how, depth),
        )
    if callable(retriever):
        return _callable_plan(retriever, depth, "function", getattr(retriever, "__name__", "fn"))
    for method_name in ("invoke", "retrieve", "search", "get_relevant_documents"):
        found_method = getattr(retriever, method_name, None)
        if callable(found_method):
            return _callable_plan(found_method, depth, f"object.{method_name}", method_name)
    raise RetrieverShapeError(
        f"the retriever under test is a {type(retriever).__name__}, which is neither callable nor "
        "has an invoke/retrieve/search/retrieve_batch/batch method; return a function "
        "`retrieve(query_text) -> ranked ids` from the retriever_under_test fixture"
    )


def describe_retriever(retriever: Any, depth: int | None = None) -> RetrieverShape:
    """How :func:`run_pipeline` calls ``retriever`` and whether ``depth`` reaches it.

    The same decision the runner makes (nothing is called). Raises :class:`RetrieverShapeError`
    for a retriever the runner would refuse.
    """
    return _plan(retriever, depth).shape
