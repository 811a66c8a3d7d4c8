"""Calling the retriever under test: adapting what it returns, concurrency, errors, two stages.

Shapes
------
A *retriever* is what the user's ``retriever_under_test`` fixture returns. Recognised, in this
order (:func:`describe_retriever` says which one an object is and whether the depth reaches it):

* a :class:`HaystackPipeline`: a Haystack ``Pipeline`` with the socket that takes the query text
  named, ``HaystackPipeline(pipeline, input="retriever.query")``. The depth goes to the only open
  ``top_k`` socket (or the one named with ``top_k="retriever.top_k"``); the ranking is read from
  the only open ``documents`` output (or ``output="retriever.documents"``, which may be an inner
  component's). A bare ``Pipeline`` is refused: it cannot tell which input is the query.
* a Haystack component: ``run(query=text, top_k=depth)`` returning ``{"documents": [...]}``.
* a LangChain retriever (``langchain_core`` ``BaseRetriever``): ``batch(texts, k=depth)``. Its
  keyword arguments reach ``_get_relevant_documents`` only when that method takes extra
  arguments (``VectorStoreRetriever`` merges them into ``search_kwargs``); others
  (``BM25Retriever``, ``EnsembleRetriever``) drop them, and their depth is what they were
  built with. A bound ``retriever.invoke`` / ``retriever.ainvoke`` is called one query at a
  time, the same way.
* a LlamaIndex retriever (``llama_index`` ``BaseRetriever``): ``retrieve(text)``; a bound
  ``retriever.aretrieve`` is awaited. Its depth is ``similarity_top_k``, set when it is built: it
  cannot be passed.
* an object with a batch method ``retrieve_batch(texts)`` / ``batch(texts)``, called with batches
  of texts; the depth is passed when the method takes ``k``/``top_k`` or a required second
  parameter (``retrieve_batch(texts, k)``).
* a callable ``retrieve(text)`` or ``retrieve(text, k)`` (``k``/``top_k`` may be keyword
  parameters), plain or ``async def``.
* an object with ``invoke``, ``retrieve``, ``search`` or ``get_relevant_documents``, called like
  the callable above.

A class where an instance was expected, a bare Haystack ``Pipeline`` and an object of none of
these shapes are refused with :class:`RetrieverShapeError` (a ``TypeError``) before any query runs.

Return values
-------------
Per query, an ordered sequence (list, tuple, generator, numpy array) of: ids (``str`` or ``int``),
``(id, score)`` or ``(item, score)`` pairs, dicts with an id key, objects with an id attribute,
LangChain ``Document`` (id in ``.id`` or ``.metadata``), LlamaIndex ``NodeWithScore``
(``.node.node_id``) or Haystack ``Document`` (``.id``; ``meta.source`` as a path). A dict
``{"documents": [...]}`` (a Haystack component's result) is read as its documents. Where the id
lives can be set (``doc_id="metadata.source"``, ``"meta.source"``, ``"node.ref_doc_id"``) or
computed (``doc_id=callable``). A ``set`` is refused: a ranking must be ordered.

Conventions (the one chunk → document rule)
--------------------------------------------
* Ids are compared as strings: ``12`` and ``"12"`` are the same document.
* Each returned item becomes a document id in three steps: its id (the default lookup, the
  ``doc_id`` path or callable), then ``doc_map`` (a mapping or callable, chunk id → document id;
  an id it does not know is kept as it is), then ``doc_id_separator`` (``"#"`` turns ``guide#3``
  into ``guide``: the id is cut at the *last* separator, so document ids that contain the
  separator themselves, such as ``a#b#3``, keep it; an id without the separator is kept).
* Whatever the form, the ranking is a ranking of documents: each document at the rank of its
  best (first) item, later copies removed. A path that names the document (``metadata.source``)
  therefore gives the same ranking as a mapping of chunk ids to that document, and so do the
  callable and the separator forms.
* Scores, when the items carry them (``(id, score)`` pairs, a ``score`` key or attribute, LangChain
  ``metadata["score"]``), are kept beside the ranking: the score of each document's best item.
* An exception or a timeout in one query is recorded for that query (type and message); the other
  queries finish. The timeout covers the whole call, including iterating a lazy result (a
  generator) and awaiting a coroutine; an exception raised while a generator is consumed is that
  query's error. An ``async def`` that blocks the event loop (``time.sleep`` instead of
  ``await asyncio.sleep``) cannot hold the run past the timeout: its query times out, saying so,
  and the other queries the blocked loop held go on on a fresh event loop (one that had started
  is started again: on the blocked loop it could never answer in time).
* A malformed return value (``None``, a string, a number, a set, an item without an id) is
  recorded as an error naming what was returned and what to return instead.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, TypeGuard

RETRIEVER_STAGE = "retriever"
RERANKER_STAGE = "reranker"

_DEFAULT_ID_KEYS = ("id", "doc_id", "document_id", "_id", "node_id", "chunk_id")
_DEFAULT_METADATA_KEYS = ("id", "doc_id", "document_id", "source")

DocIdOption = str | Callable[[Any], Any] | None
DocMap = Callable[[str], Any] | Mapping[str, str] | None


class RetrieverOutputError(ValueError):
    """The retriever returned something that is not a ranking."""


class RetrieverShapeError(TypeError):
    """The retriever under test cannot be called as given (a class, a bare Pipeline, ...)."""


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """One query to send: its id (for messages) and its text."""

    id: str
    text: str


@dataclass(slots=True)
class QueryOutcome:
    """What happened to one query: its ranking per stage, latency, or the error it hit.

    ``scores`` holds, per stage whose items carried scores, one score per document of the
    ranking (``None`` where that item had none), aligned with ``rankings[stage]``. Stages whose
    items had no scores are absent.
    """

    query_id: str
    rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    error_type: str | None = None
    error_stage: str | None = None
    scores: dict[str, tuple[float | None, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RetrieverShape:
    """How the runner calls a retriever, and whether the requested depth reaches it.

    ``kind`` names the shape ("LangChain retriever", "function", ...); ``call`` shows the call
    (``batch(texts, k=50)``). ``depth_passed`` is False when the depth cannot be handed to the
    retriever (it returns what it was built to return); then ``depth_hint`` says how to set it
    (``index.as_retriever(similarity_top_k=50)``) and ``fixed_depth`` is the depth it was built
    with, when it can be read. Rankings shorter than the cutoffs scored are then to be expected.
    """

    kind: str
    call: str
    depth_passed: bool
    depth_hint: str | None = None
    fixed_depth: int | None = None


@dataclass(frozen=True, slots=True)
class HaystackPipeline:
    """A Haystack ``Pipeline`` as a retriever: where the query goes, the depth, the documents.

    ``input`` is ``"component.socket"`` receiving the query text (``"retriever.query"``, or
    ``"embedder.text"`` in front of an embedding retriever). ``top_k`` names the socket that
    receives the depth (default: the only open input socket called ``top_k``); ``output`` names
    the socket holding the ranked documents (default: the only open output called
    ``documents``). Each query runs ``pipeline.run(data)`` once.
    """

    pipeline: Any
    input: str
    top_k: str | None = None
    output: str | None = None

    def __post_init__(self) -> None:
        for name in ("input", "top_k", "output"):
            value = getattr(self, name)
            if value is None and name != "input":
                continue
            if not isinstance(value, str) or value.count(".") != 1 or "" in value.split("."):
                raise ValueError(
                    f"HaystackPipeline({name}={value!r}): expected 'component.socket', "
                    'e.g. input="retriever.query"'
                )


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _lookup_path(item: Any, path: str) -> Any:
    value = item
    for part in path.split("."):
        if isinstance(value, Mapping):
            if part not in value:
                return None
            value = value[part]
        else:
            value = getattr(value, part, None)
        if value is None:
            return None
    return value


def _is_integer(value: object) -> TypeGuard[Integral]:
    """An int or an integer-like id (numpy, FAISS), but never a bool."""
    # bool is an Integral to Python; typing's view of the numbers ABCs does not know it.
    return not isinstance(value, bool) and isinstance(value, Integral)


def _is_number(value: object) -> TypeGuard[Real]:
    return not isinstance(value, bool) and isinstance(value, Real)


def _scored_payload(item: Any) -> Any:
    """The item inside an ``(item, score)`` pair (``similarity_search_with_score``), else None."""
    if (
        isinstance(item, tuple)
        and len(item) == 2
        and not isinstance(item[0], str)
        and not _is_integer(item[0])
        and _is_number(item[1])
    ):
        return item[0]
    return None


def extract_doc_id(item: Any, doc_id: DocIdOption = None) -> str:
    """The id of one returned item, as a string; RetrieverOutputError if none.

    ``doc_id`` may name where the id lives (``"metadata.source"``, ``"node.ref_doc_id"``: a dotted
    path through keys and attributes, tried on the item and then on the item of an
    ``(item, score)`` pair) or be a callable ``item -> id``.
    """
    if callable(doc_id):
        value = doc_id(item)
    elif isinstance(doc_id, str):
        value = _lookup_path(item, doc_id)
        payload = _scored_payload(item)
        if value is None and payload is not None:
            value = _lookup_path(payload, doc_id)
        if value is None:
            raise RetrieverOutputError(
                f"item {_describe(item)} has no {doc_id!r} (set by the doc id option)"
            )
    else:
        value = _default_id(item)
    if _is_integer(value):
        return str(int(value))  # numpy / FAISS integer ids too: "3", never "np.int64(3)"
    if not isinstance(value, str):
        raise RetrieverOutputError(
            f"item {_describe(item)} gave the id {_describe(value)}, expected a str or int"
        )
    return value


def _default_id(item: Any) -> Any:
    if isinstance(item, str) or _is_integer(item):
        return item
    payload = _scored_payload(item)
    if payload is not None:  # (Document, score)
        return _default_id(payload)
    if isinstance(item, tuple) and len(item) == 2:  # (id, score)
        return item[0]
    if isinstance(item, Mapping):
        for key in _DEFAULT_ID_KEYS:
            if item.get(key) is not None:
                return item[key]
        metadata = item.get("metadata")
        if isinstance(metadata, Mapping):
            for key in _DEFAULT_METADATA_KEYS:
                if metadata.get(key) is not None:
                    return metadata[key]
        raise RetrieverOutputError(
            f"dict item {_describe(item)} has none of the keys {', '.join(_DEFAULT_ID_KEYS)}; "
            "set retrieval_doc_id to the key that holds the document id"
        )
    node = getattr(item, "node", None)  # LlamaIndex NodeWithScore
    if node is not None and getattr(node, "node_id", None) is not None:
        return node.node_id
    for attribute in _DEFAULT_ID_KEYS:
        value = getattr(item, attribute, None)
        if value is not None:
            return value
    metadata = getattr(item, "metadata", None)  # LangChain Document
    if isinstance(metadata, Mapping):
        for key in _DEFAULT_METADATA_KEYS:
            if metadata.get(key) is not None:
                return metadata[key]
    raise RetrieverOutputError(
        f"cannot find a document id in {_describe(item)} ({type(item).__name__}); set "
        "retrieval_doc_id to an attribute or key path (e.g. metadata.source) or a callable"
    )


def _score_of(item: Any) -> float | None:
    """The score an item carries, if any: a pair's second half, a ``score`` key or attribute."""
    if isinstance(item, tuple) and len(item) == 2:
        return float(item[1]) if _is_number(item[1]) else None
    if isinstance(item, Mapping):
        value = item.get("score")
    else:
        value = getattr(item, "score", None)  # NodeWithScore, Haystack Document
        if value is None:
            metadata = getattr(item, "metadata", None)
            if isinstance(metadata, Mapping):
                value = metadata.get("score")
    return float(value) if _is_number(value) else None


_EXPECTED = "expected a list of ids, (id, score) pairs, dicts with an id, or Document/Node objects"


def _check_ranking(result: Any) -> Any:
    """``result`` if it can be read as a ranking (a Haystack result: its documents)."""
    if isinstance(result, Mapping) and "documents" in result:
        documents = result["documents"]
        if isinstance(documents, (list, tuple)):
            return documents
    if isinstance(result, (set, frozenset)):
        raise RetrieverOutputError(
            f"returned {_describe(result)} ({type(result).__name__}): a ranking must be ordered: "
            "return a list, best first (e.g. sorted by score), not a set"
        )
    if isinstance(result, Mapping):
        raise RetrieverOutputError(
            f"returned {_describe(result)} ({type(result).__name__}), which is not a ranking: "
            "return a list of ids best first (for a dict of id -> score: "
            "sorted(scores, key=scores.get, reverse=True))"
        )
    if _looks_like_one_item(result) and not isinstance(result, Iterator):
        raise RetrieverOutputError(
            f"returned one {type(result).__name__} ({_describe(result)}), not a ranking: "
            "return a list of them, best first"
        )
    if inspect.isclass(result):
        raise RetrieverOutputError(
            f"returned the class {result.__qualname__}; {_EXPECTED} (an instance, not its class)"
        )
    if result is None or isinstance(result, (str, bytes, int, float)):
        raise RetrieverOutputError(
            f"returned {_describe(result)} ({type(result).__name__}); {_EXPECTED}"
        )
    if not isinstance(result, Iterable):
        raise RetrieverOutputError(
            f"returned {_describe(result)} ({type(result).__name__}), which is not a list; "
            f"{_EXPECTED}"
        )
    return result


def _check_separator(separator: str | None) -> None:
    if separator is not None and (not isinstance(separator, str) or not separator):
        raise ValueError(f"doc_id_separator must be a non-empty string, got {separator!r}")


def adapt_scored(
    result: Any,
    *,
    doc_id: DocIdOption = None,
    doc_map: DocMap = None,
    doc_id_separator: str | None = None,
) -> tuple[tuple[str, ...], tuple[float | None, ...]]:
    """One query's return value as a document ranking and the score of each document.

    The chunk → document rule of the module docstring: id, then ``doc_map``, then the separator;
    each document at its best rank, later copies removed; its score is its best item's.
    """
    _check_separator(doc_id_separator)
    items = list(_check_ranking(result))
    mapper: Callable[[str], Any] | None = doc_map.get if isinstance(doc_map, Mapping) else doc_map
    ranking: dict[str, float | None] = {}
    for item in items:
        document = extract_doc_id(item, doc_id)
        if mapper is not None:
            mapped = mapper(document)
            if mapped is not None:  # not in the map: the id already names a document
                document = str(int(mapped)) if _is_integer(mapped) else str(mapped)
        if doc_id_separator is not None:
            head, found, _chunk = document.rpartition(doc_id_separator)
            if found and head:
                document = head
        if document not in ranking:
            ranking[document] = _score_of(item)
    return tuple(ranking), tuple(ranking.values())


def adapt_ranking(
    result: Any,
    *,
    doc_id: DocIdOption = None,
    doc_map: DocMap = None,
    doc_id_separator: str | None = None,
) -> tuple[str, ...]:
    """Turn one query's return value into a ranking of document id strings (see adapt_scored)."""
    ranking, _scores = adapt_scored(
        result, doc_id=doc_id, doc_map=doc_map, doc_id_separator=doc_id_separator
    )
    return ranking


# --- shapes -------------------------------------------------------------------------------


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


def _langchain_plan(retriever: Any, depth: int | None) -> _Plan:
    passed, hint, fixed = _langchain_depth(retriever, depth)
    kwargs: dict[str, Any] = {"k": depth} if passed and depth is not None else {}
    batch = retriever.batch

    def call_batch(texts: list[str]) -> Any:
        # return_exceptions: a query that raises fails alone, not its whole batch.
        return batch(texts, return_exceptions=True, **kwargs)

    shown = f"batch(texts, k={_n(depth)})" if passed else "batch(texts)"
    return _Plan(
        RetrieverShape("LangChain retriever", shown, passed, hint, fixed), batch=call_batch
    )


def _langchain_method_plan(method: Any, depth: int | None) -> _Plan:
    owner = method.__self__
    passed, hint, fixed = _langchain_depth(owner, depth)
    name = method.__name__
    is_async = _is_async(method)
    single = (lambda text: method(text, k=depth)) if passed and depth is not None else method
    shown = f"{name}(text, k={_n(depth)})" if passed else f"{name}(text)"
    return _Plan(
        RetrieverShape("LangChain retriever", shown, passed, hint, fixed),
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
    if "top_k" in parameters:
        kwargs: dict[str, Any] = {"top_k": depth} if depth is not None else {}
        return _Plan(
            RetrieverShape("Haystack component", f"run(query=text, top_k={_n(depth)})", True),
            single=lambda text: run(query=text, **kwargs),
        )
    return _Plan(
        RetrieverShape(
            "Haystack component",
            "run(query=text)",
            False,
            f"{name}.run() takes no top_k: build it with top_k={_n(depth)}",
            _int_attribute(component, "top_k"),
        ),
        single=lambda text: run(query=text),
    )


def _sockets(described: Any) -> dict[str, list[str]]:
    """``{component: [socket, ...]}`` from Pipeline.inputs()/outputs()."""
    if not isinstance(described, Mapping):
        return {}
    return {str(c): list(s) if isinstance(s, Mapping) else [] for c, s in described.items()}


def _only_socket(sockets: dict[str, list[str]], name: str) -> str | None:
    found = [f"{c}.{name}" for c, names in sockets.items() if name in names]
    return found[0] if len(found) == 1 else None


def _listed(sockets: dict[str, list[str]]) -> str:
    return ", ".join(f"{c}.{s}" for c, names in sockets.items() for s in names) or "none"


def _haystack_pipeline_plan(wrapper: HaystackPipeline, depth: int | None) -> _Plan:
    pipeline = wrapper.pipeline
    open_inputs = _sockets(pipeline.inputs()) if callable(getattr(pipeline, "inputs", None)) else {}
    open_outputs = (
        _sockets(pipeline.outputs()) if callable(getattr(pipeline, "outputs", None)) else {}
    )
    component, socket = wrapper.input.split(".")
    if open_inputs and socket not in open_inputs.get(component, []):
        raise RetrieverShapeError(
            f"HaystackPipeline(input={wrapper.input!r}): the pipeline has no open input "
            f"{wrapper.input} (its open inputs: {_listed(open_inputs)})"
        )
    top_k = wrapper.top_k or _only_socket(open_inputs, "top_k")
    if wrapper.top_k is not None and open_inputs:
        k_component, k_socket = wrapper.top_k.split(".")
        if k_socket not in open_inputs.get(k_component, []):
            raise RetrieverShapeError(
                f"HaystackPipeline(top_k={wrapper.top_k!r}): the pipeline has no open input "
                f"{wrapper.top_k} (its open inputs: {_listed(open_inputs)})"
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

    def run(text: str) -> Any:
        data: dict[str, dict[str, Any]] = {component: {socket: text}}
        if top_k is not None and depth is not None:
            k_component, k_socket = top_k.split(".")
            data.setdefault(k_component, {})[k_socket] = depth
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

    shape: dict[str, dict[str, Any]] = {component: {socket: "<text>"}}
    if top_k is not None:
        k_component, k_socket = top_k.split(".")
        shape.setdefault(k_component, {})[k_socket] = depth if depth is not None else "<N>"
    shown = "run(" + repr(shape).replace("'<text>'", "text").replace("'<N>'", "N") + ")"
    if top_k is not None:
        return _Plan(RetrieverShape("Haystack pipeline", shown, True), single=run)
    return _Plan(
        RetrieverShape(
            "Haystack pipeline",
            shown,
            False,
            f"the pipeline has no open top_k input: build its retriever with top_k={_n(depth)}, "
            'or name the socket: HaystackPipeline(..., top_k="retriever.top_k")',
        ),
        single=run,
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
            f'HaystackPipeline(pipeline, input="{example}") (from pytest_retrieval.retriever) '
            "from the retriever_under_test fixture"
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
        if _is_langchain_runnable(retriever):  # a chain: k= would not reach its retriever
            hint = (
                f"a LangChain {type(retriever).__name__} does not pass k= on: build its retriever "
                f'with as_retriever(search_kwargs={{"k": {_n(depth)}}})'
            )
        else:
            hint = f"give {method_name} a k parameter: {method_name}(texts, k)"
        if how is None:
            return _Plan(
                RetrieverShape("batch method", f"{method_name}(texts)", False, hint),
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


# --- calling ------------------------------------------------------------------------------


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _collect_async(iterable: Any) -> list[Any]:
    return [item async for item in iterable]


def _looks_like_one_item(value: Any) -> bool:
    """A single Document/Node rather than a list of them.

    LangChain's and LlamaIndex's are pydantic models, which iterate over their fields: read as a
    ranking, they would give nonsense ids. An iterable container of the user's own that happens
    to have a ``metadata`` attribute is still read as a ranking.
    """
    if isinstance(value, (Sequence, Mapping)) or not any(
        hasattr(value, name) for name in ("page_content", "node", "node_id", "meta", "metadata")
    ):
        return False
    return not isinstance(value, Iterable) or hasattr(type(value), "model_fields")


def _listed_if_lazy(value: Any) -> Any:
    """An iterator (generator, map) or another one-pass iterable as a list; others unchanged."""
    if isinstance(value, Iterator):
        return list(value)
    if (
        isinstance(value, (str, bytes, Sequence, Mapping, set, frozenset))
        or inspect.isclass(value)
        or _looks_like_one_item(value)
        or not isinstance(value, Iterable)
    ):
        return value
    return list(value)  # numpy arrays too: their items are numpy ids, read later


def _materialise(value: Any) -> Any:
    """Await and iterate a result to the end, in the calling (timed) thread."""
    if inspect.isawaitable(value):
        # A coroutine from a sync-looking callable (a partial of an async def): this worker
        # thread has no running loop, so it gets its own.
        value = asyncio.run(_awaited(value))
    if hasattr(value, "__aiter__"):
        value = asyncio.run(_collect_async(value))
    return _listed_if_lazy(value)


async def _materialise_async(value: Any) -> Any:
    if inspect.isawaitable(value):
        value = await value
    if hasattr(value, "__aiter__"):
        value = await _collect_async(value)
    return _listed_if_lazy(value)


def _error_text(exc: BaseException) -> tuple[str, str]:
    message = str(exc) or type(exc).__name__
    return type(exc).__name__, message if len(message) <= 500 else message[:497] + "..."


Done = Callable[[int, Any, BaseException | None, float], None]


def _run_threads(
    fn: Callable[[int], Any],
    count: int,
    *,
    concurrency: int,
    timeout: float | None,
    on_done: Done,
) -> None:
    """Call ``fn(i)`` for i in range(count) on daemon threads; report each result via on_done.

    A call that runs past ``timeout`` seconds is reported as a TimeoutError and abandoned: its
    thread is a daemon, replaced by a fresh worker, so a hanging retriever cannot hang pytest.
    """
    jobs: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    results: queue.SimpleQueue[tuple[int, Any, BaseException | None, float]] = queue.SimpleQueue()
    lock = threading.Lock()
    running: dict[int, tuple[int, float]] = {}  # worker id -> (job, start)
    next_worker = [0]

    def work(wid: int) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            start = time.perf_counter()
            with lock:
                running[wid] = (job, start)
            value: Any = None
            error: BaseException | None = None
            try:
                value = fn(job)
            except BaseException as exc:
                error = exc
            elapsed = time.perf_counter() - start
            with lock:
                mine = running.pop(wid, None)
            if mine is None:
                return  # timed out and replaced: drop the late result
            results.put((job, value, error, elapsed))

    def spawn() -> None:
        wid = next_worker[0]
        next_worker[0] += 1
        threading.Thread(target=work, args=(wid,), name=f"retrieval-{wid}", daemon=True).start()

    for job in range(count):
        jobs.put(job)
    for _ in range(min(concurrency, count)):
        spawn()
    done = 0
    while done < count:
        wait: float | None = None
        if timeout is not None:
            with lock:
                starts = [start for _job, start in running.values()]
            now = time.perf_counter()
            wait = max(0.0, min((s + timeout - now for s in starts), default=timeout)) + 0.005
        try:
            job, value, error, elapsed = results.get(timeout=wait)
        except queue.Empty:
            now = time.perf_counter()
            expired = []
            with lock:
                for wid, (job, start) in list(running.items()):
                    if timeout is not None and now - start >= timeout:
                        del running[wid]
                        expired.append((job, now - start))
            for job, elapsed in expired:
                on_done(job, None, TimeoutError(f"no answer within {timeout:g} s"), elapsed)
                done += 1
                spawn()
            continue
        on_done(job, value, error, elapsed)
        done += 1
    for _ in range(next_worker[0]):
        jobs.put(None)


#: How long the event loop may stay silent (its heartbeat ticks every _HEARTBEAT s) before the run
#: counts it as blocked by a coroutine running blocking code.
_LOOP_GRACE = 0.25
_HEARTBEAT = 0.05


def _running_query(thread: threading.Thread, code: Any) -> int | None:
    """The query whose ``call`` coroutine is executing on ``thread`` right now, if any."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code is code:
            value = frame.f_locals.get("i")
            return value if isinstance(value, int) else None
        frame = frame.f_back
    return None


def _run_async(
    fn: Callable[[Any], Any],
    payloads: Sequence[Any],
    *,
    concurrency: int,
    timeout: float | None,
    on_done: Done,
) -> None:
    """Await ``fn(payload)`` for every payload on one private event loop, ``concurrency`` at once.

    One loop for the whole run, so that async clients bound to a loop keep working. The loop
    times its queries out itself (``wait_for``). A coroutine that blocks the loop cannot be timed
    out from inside it, so this thread watches the deadlines and the loop's heartbeat: when a
    query is past its deadline and the loop is silent, the query blocking it (found from the
    loop thread's stack) is timed out from here, the loop is abandoned (a daemon thread), and the
    other queries it held, started or not, are run again on a fresh loop.
    """
    count = len(payloads)
    lock = threading.Lock()
    pending = collections.deque(range(count))
    running: dict[int, tuple[float, int]] = {}  # query -> (start, loop generation)
    finished: set[int] = set()
    beats: dict[int, float] = {}
    generation = [0]
    results: queue.SimpleQueue[tuple[int, Any, BaseException | None, float]] = queue.SimpleQueue()
    threads: dict[int, threading.Thread] = {}
    abandoned: set[int] = set()  # generations whose loop was blocked

    def claim(gen: int) -> tuple[int, float] | None:
        with lock:
            if gen != generation[0] or not pending:
                return None
            i = pending.popleft()
            start = time.perf_counter()
            running[i] = (start, gen)
            return i, start

    async def call(i: int, gen: int, start: float) -> None:
        with lock:
            if running.get(i, (0.0, -1))[1] != gen:
                return  # moved to a fresh loop while this one was blocked
        # What the call raised is reported, not raised: asyncio lets a SystemExit escape the
        # event loop (failing every query), and it must fail this query only, as in a thread.
        value: Any = None
        error: BaseException | None = None
        try:
            value = await _materialise_async(fn(payloads[i]))
        except asyncio.CancelledError:  # the timeout cancelling the call
            raise
        except BaseException as exc:
            error = exc
        # Reported the moment it is known: the worker's own resumption may be held up behind
        # another query that blocks the loop.
        results.put((i, value, error, time.perf_counter() - start))

    async def worker(gen: int) -> None:
        while (claimed := claim(gen)) is not None:
            i, start = claimed
            try:
                await asyncio.wait_for(call(i, gen, start), timeout)
            except asyncio.TimeoutError:
                error = TimeoutError(f"no answer within {timeout:g} s")
                results.put((i, None, error, time.perf_counter() - start))

    async def ticker(gen: int) -> None:
        while True:
            beats[gen] = time.perf_counter()
            await asyncio.sleep(_HEARTBEAT)

    async def main(gen: int) -> None:
        beat = asyncio.ensure_future(ticker(gen))
        try:
            await asyncio.gather(*(worker(gen) for _ in range(min(concurrency, count))))
        finally:
            beat.cancel()

    def start_loop(gen: int) -> None:
        beats[gen] = time.perf_counter()

        def runner() -> None:
            try:
                asyncio.run(main(gen))
            except BaseException as exc:  # our own failure: surface it, do not hang
                results.put((-1, None, exc, 0.0))

        thread = threading.Thread(target=runner, name=f"retrieval-async-{gen}", daemon=True)
        threads[gen] = thread
        thread.start()

    blocked_message = (
        f"no answer within {timeout:g} s (the event loop was blocked: an async def ran blocking "
        "code, such as time.sleep or a synchronous client, without await)"
    )
    start_loop(0)
    done = 0
    while done < count:
        wait: float | None = None
        if timeout is not None:
            with lock:
                starts = [start for start, _g in running.values()]
            now = time.perf_counter()
            deadline = min((s + timeout + _LOOP_GRACE - now for s in starts), default=_LOOP_GRACE)
            wait = max(0.0, min(deadline, _LOOP_GRACE)) + 0.005
        try:
            i, value, error, elapsed = results.get(timeout=wait)
        except queue.Empty:
            pass
        else:
            if i < 0:
                assert error is not None
                raise error
            with lock:
                running.pop(i, None)
                late = i in finished
                finished.add(i)
            if not late:  # not already reported as timed out from here
                on_done(i, value, error, elapsed)
                done += 1
            continue
        assert timeout is not None  # without a timeout the wait above has none either
        now = time.perf_counter()
        timed_out: list[tuple[int, float, str]] = []
        with lock:
            current = generation[0]
            blocked = now - beats.get(current, now) > _LOOP_GRACE
            mine = {i: start for i, (start, g) in running.items() if g == current}
            if blocked and any(now - start >= timeout for start in mine.values()):
                culprit = _running_query(threads[current], call.__code__)
                for i, start in mine.items():
                    if i == culprit or (culprit is None and now - start >= timeout):
                        if now - start >= timeout:
                            timed_out.append((i, now - start, blocked_message))
                        continue  # a culprit not yet due stays, timed out when it is
                    del running[i]
                    pending.appendleft(i)  # held up by the culprit: run again on a fresh loop
                abandoned.add(current)
                generation[0] += 1
            reported = {t for t, _e, _m in timed_out}
            for i, (start, g) in running.items():  # past the deadline and not timed out inside:
                if now - start >= timeout + _LOOP_GRACE and i not in reported:
                    # A culprit on a loop it blocked, or a call that ignores its cancellation.
                    message = (
                        blocked_message if g in abandoned else f"no answer within {timeout:g} s"
                    )
                    timed_out.append((i, now - start, message))
            for i, _elapsed, _message in timed_out:
                finished.add(i)
                del running[i]
        for i, elapsed, message in timed_out:
            on_done(i, None, TimeoutError(message), elapsed)
            done += 1
        if generation[0] != current:
            start_loop(generation[0])
    threads[generation[0]].join(_LOOP_GRACE)  # a healthy loop is closing; a blocked one is left


Progress = Callable[[int, int], None]


def _batch_results(
    value: Any, texts: list[str], requests: Sequence[QueryRequest], shown: str
) -> list[tuple[Any, BaseException | None]]:
    """A batch call's return value as one (result, error) per query, materialised."""
    ids = ", ".join(r.id for r in requests)
    if isinstance(value, (Mapping, str, bytes, set, frozenset)) or not isinstance(value, Iterable):
        raise RetrieverOutputError(
            f"the batch method {shown} returned {_describe(value)} ({type(value).__name__}) for "
            f"the queries {ids}; return a list with one ranking per query text, in order"
        )
    values = list(value)
    if len(values) != len(texts):
        raise RetrieverOutputError(
            f"the batch method returned {len(values)} results for {len(texts)} queries ({ids}); "
            "return a list with one ranking per query text, in order"
        )
    out: list[tuple[Any, BaseException | None]] = []
    for item in values:
        if isinstance(item, BaseException):  # LangChain's return_exceptions=True
            out.append((None, item))
            continue
        try:
            out.append((_materialise(item), None))
        except Exception as exc:  # a lazy result raising while consumed: that query only
            out.append((None, exc))
    return out


def _stage_call(
    plan: _Plan,
    requests: Sequence[QueryRequest],
    inputs: Sequence[Any],
    *,
    concurrency: int,
    timeout: float | None,
    batch_size: int,
    on_result: Done,
) -> None:
    """Call one stage over ``inputs`` (texts, or (text, candidates) for the reranker)."""
    count = len(requests)
    if plan.batch is not None:
        batch = plan.batch
        chunks = [list(range(i, min(i + batch_size, count))) for i in range(0, count, batch_size)]

        def call_chunk(c: int) -> list[tuple[Any, BaseException | None]]:
            texts = [inputs[i] for i in chunks[c]]
            result = batch(texts)
            if inspect.isawaitable(result):
                # An async batch method: each worker thread runs it on its own event loop.
                result = asyncio.run(_awaited(result))
            return _batch_results(result, texts, [requests[i] for i in chunks[c]], plan.shape.call)

        def chunk_done(c: int, value: Any, error: BaseException | None, elapsed: float) -> None:
            members = chunks[c]
            for position, i in enumerate(members):
                item, item_error = (None, error) if error is not None else value[position]
                on_result(i, item, item_error, elapsed / len(members))

        _run_threads(
            call_chunk, len(chunks), concurrency=concurrency, timeout=timeout, on_done=chunk_done
        )
        return
    single = plan.single
    assert single is not None
    if plan.is_async:
        _run_async(
            lambda payload: single(*payload),
            [
                tuple(inputs[i]) if isinstance(inputs[i], tuple) else (inputs[i],)
                for i in range(count)
            ],
            concurrency=concurrency,
            timeout=timeout,
            on_done=on_result,
        )
        return

    def one(i: int) -> Any:
        payload = inputs[i]
        return _materialise(single(*payload) if isinstance(payload, tuple) else single(payload))

    _run_threads(one, count, concurrency=concurrency, timeout=timeout, on_done=on_result)


def _reranker_plan(reranker: Any) -> _Plan:
    if inspect.isclass(reranker):
        name = reranker.__qualname__
        raise RetrieverShapeError(
            f"the reranker under test is the class {name}, not an instance of it: return "
            f"{name}(...) from the reranker_under_test fixture, not {name}"
        )
    if callable(reranker):
        return _Plan(
            RetrieverShape("function", "fn(text, candidates)", True),
            single=reranker,
            is_async=_is_async(reranker),
        )
    for name in ("invoke", "retrieve", "search", "get_relevant_documents", "rerank"):
        method = getattr(reranker, name, None)
        if callable(method):
            return _Plan(
                RetrieverShape(f"object.{name}", f"{name}(text, candidates)", True),
                single=method,
                is_async=_is_async(method),
            )
    raise RetrieverShapeError(
        f"the reranker under test is a {type(reranker).__name__}, which is neither callable nor "
        "has an invoke/rerank/retrieve/search method; return a function "
        "`rerank(query_text, candidates) -> ranked ids` from the reranker_under_test fixture"
    )


def run_pipeline(
    requests: Sequence[QueryRequest],
    retriever: Any,
    reranker: Any = None,
    *,
    depth: int | None = None,
    concurrency: int = 8,
    timeout: float | None = 60.0,
    batch_size: int = 32,
    doc_id: DocIdOption = None,
    doc_map: DocMap = None,
    doc_id_separator: str | None = None,
    progress: Progress | None = None,
) -> list[QueryOutcome]:
    """Run every query through the retriever (and the reranker, if any); one outcome per query.

    Stage ``retriever`` is the candidate list, asked for ``depth`` results where the shape
    allows (:func:`describe_retriever`); stage ``reranker`` (when a reranker is given) is
    ``reranker(query_text, candidates)`` on the retriever's raw (materialised) candidates. A query
    whose retriever call failed is not sent to the reranker. ``doc_id``, ``doc_map`` and
    ``doc_id_separator`` turn returned items into document ids (the module's chunk → document
    rule). Raises :class:`RetrieverShapeError` (a TypeError) for a retriever it cannot call.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    _check_separator(doc_id_separator)
    plan = _plan(retriever, depth)
    rerank_plan = _reranker_plan(reranker) if reranker is not None else None
    outcomes = [QueryOutcome(r.id) for r in requests]
    raw: list[Any] = [None] * len(requests)
    total = len(requests) * (2 if reranker is not None else 1)
    finished = [0]
    lock = threading.Lock()

    def record(stage: str) -> Done:
        def on_result(i: int, value: Any, error: BaseException | None, elapsed: float) -> None:
            outcome = outcomes[i]
            outcome.latency_ms[stage] = elapsed * 1000.0
            if error is None:
                try:
                    ranking, scores = adapt_scored(
                        value, doc_id=doc_id, doc_map=doc_map, doc_id_separator=doc_id_separator
                    )
                except Exception as exc:  # a user doc_id / doc_map callable failing too
                    error = exc
                else:
                    outcome.rankings[stage] = ranking
                    if any(s is not None for s in scores):
                        outcome.scores[stage] = scores
                    raw[i] = _check_ranking(value)
            if error is not None:
                outcome.error_type, outcome.error = _error_text(error)
                outcome.error_stage = stage
            if progress is not None:
                with lock:
                    finished[0] += 1
                    progress(finished[0], total)

        return on_result

    texts = [r.text for r in requests]
    _stage_call(
        plan,
        requests,
        texts,
        concurrency=concurrency,
        timeout=timeout,
        batch_size=batch_size,
        on_result=record(RETRIEVER_STAGE),
    )
    if rerank_plan is None:
        return outcomes
    ok = [i for i, o in enumerate(outcomes) if o.error is None]
    if len(ok) < len(requests) and progress is not None:
        with lock:
            finished[0] += len(requests) - len(ok)
    rerank_requests = [requests[i] for i in ok]
    rerank_inputs = [(texts[i], raw[i]) for i in ok]
    remember = record(RERANKER_STAGE)
    _stage_call(
        rerank_plan,
        rerank_requests,
        rerank_inputs,
        concurrency=concurrency,
        timeout=timeout,
        batch_size=batch_size,
        on_result=lambda j, value, error, elapsed: remember(ok[j], value, error, elapsed),
    )
    return outcomes
