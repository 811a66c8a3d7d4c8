"""What a retriever returns: the outcome model, id extraction, the one chunk → document rule."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from ...golden.model import Query

_DEFAULT_ID_KEYS = ("id", "doc_id", "document_id", "_id", "node_id", "chunk_id")
_DEFAULT_METADATA_KEYS = ("id", "doc_id", "document_id", "source")

DocIdOption = str | Callable[[Any], Any] | None
DocMap = Callable[[str], Any] | Mapping[str, str] | None


class RetrieverOutputError(ValueError):
    """The retriever returned something that is not a ranking."""


class DocIdPathError(RetrieverOutputError):
    """A returned item has nothing at the ``doc_id`` path (the doc-id setting names a key the
    results do not have); the session turns it into one usage error when every query has it."""


class RetrieverShapeError(TypeError):
    """The retriever under test cannot be called as given (a class, a bare Pipeline, ...).

    ``fix`` is the refusal's own fix when it has one (drop a setting, build the retriever
    otherwise); None: the caller's general one (return an object the plugin can call).
    ``stage`` is the stage refused (``retriever``, ``reranker``): the caller names where that
    stage's object came from (its fixture, or the ``retrieval_<stage>`` factory)."""

    def __init__(self, message: str, fix: str | None = None, stage: str = "retriever") -> None:
        super().__init__(message)
        self.fix = fix
        self.stage = stage

    @property
    def fixture(self) -> str:
        """``the retriever_under_test fixture``: where the message says the object came from."""
        return f"the {self.stage}_under_test fixture"

    def naming(self, origin: str) -> str:
        """The message with ``origin`` (``your factory (retrieval_retriever = m:f)``, ``your
        --retriever factory``) where it names the fixture: the object came from there."""
        return str(self).replace(self.fixture, origin)


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """One query to send: its id (for messages), its text and, when it is not the run's, the
    depth of its first retriever call (a query the cache knows must be asked deeper, the
    determinism probe re-running a query at the depth its ranking came from). ``context`` is
    the query's context (None: it has none), handed over as :mod:`.context` says."""

    id: str
    text: str
    depth: int | None = None
    context: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, query: Query, depth: int | None = None) -> QueryRequest:
        """The request of a golden-set query: its id, text and context."""
        return cls(query.id, query.text or "", depth, query.context or None)


@dataclass(slots=True)
class QueryOutcome:
    """What happened to one query: its ranking per stage, latency, or the error it hit.

    ``rankings[stage]`` is the document ranking: each document at its best (first) rank, later
    repeats removed (the chunk → document rule of the package docstring). ``returned[stage]``
    is the ids as returned, in order, repeats kept: present only for the stages where it
    differs from the ranking (a chunked index, a retriever returning an id twice), so nothing
    is stored when nothing repeats.

    ``scores`` holds, per stage whose items carried scores, one score per document of the
    ranking (``None`` where that item had none), aligned with ``rankings[stage]``. Stages whose
    items had no scores are absent.

    ``asked`` is the depth the retriever stage's ranking was asked with, when it is not the
    run's own depth (the query was asked again, deeper, to fill the documents its collapsed
    ranking lacked: :func:`deeper`); ``None`` means the run's depth. ``deeper_error`` says why
    asking deeper failed (the query keeps the answer of its last successful call).
    ``latency_ms`` of the retriever stage covers every call the query took.
    """

    query_id: str
    rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    error_type: str | None = None
    error_stage: str | None = None
    scores: dict[str, tuple[float | None, ...]] = field(default_factory=dict)
    returned: dict[str, tuple[str, ...]] = field(default_factory=dict)
    asked: int | None = None
    deeper_error: str | None = None

    def as_returned(self, stage: str) -> tuple[str, ...]:
        """The ids of ``stage`` as returned, repeats kept (the ranking when none repeated)."""
        found = self.returned.get(stage)
        if found is not None:
            return found
        return self.rankings.get(stage, ())


@dataclass(frozen=True, slots=True)
class RetrieverCall:
    """One successful call of the retriever stage for one query (what the cache stores per
    depth): the request's position, the depth asked, the document ranking, the ids as
    returned when they differ from it, the scores aligned with the ranking, the call's
    latency."""

    index: int
    depth: int | None
    ranking: tuple[str, ...]
    returned: tuple[str, ...] | None
    scores: tuple[float | None, ...] | None
    latency_ms: float


def deeper(asked: int, returned: int, documents: int, *, fill: int, max_depth: int) -> int | None:
    """The depth to ask next so that a ranking holds ``fill`` documents, or None: the one rule
    for asking a query again.

    A call asked for ``asked`` results gave ``returned`` of them, collapsing into ``documents``
    documents. It is asked again only when its documents fell short of ``fill`` while the call
    came back full (``returned >= asked``: the index has more to give) and ``asked`` is below
    ``max_depth``. The next depth is the larger of twice ``asked`` and the depth the call's own
    results-per-document ratio says would fill ``fill`` (``asked * fill / documents``, rounded
    up), at most ``max_depth``.
    """
    if documents >= fill or returned < asked or asked >= max_depth:
        return None
    estimate = -(-asked * fill // max(documents, 1))
    return min(max_depth, max(2 * asked, estimate))


def stage_scores(
    outcomes: Mapping[str, QueryOutcome], stage: str
) -> dict[str, tuple[float | None, ...]]:
    """The scores of one stage per query, where its items had them (failed queries: none)."""
    return {
        qid: o.scores[stage] for qid, o in outcomes.items() if stage in o.scores and o.error is None
    }


def stage_run(
    outcomes: Mapping[str, QueryOutcome], queries: Iterable[Query], stage: str
) -> dict[str, tuple[str, ...]]:
    """``{query id: ranking}`` at ``stage`` of those ``queries`` that have one there."""
    return {
        q.id: outcomes[q.id].rankings[stage]
        for q in queries
        if q.id in outcomes and stage in outcomes[q.id].rankings
    }


@dataclass(frozen=True, slots=True)
class RetrieverShape:
    """How the runner calls a retriever, and whether the requested depth reaches it.

    ``kind`` names the shape ("LangChain retriever", "function", ...); ``call`` shows the call
    (``batch(texts, k=50)``). ``depth_passed`` is False when the depth cannot be handed to the
    retriever (it returns what it was built to return); then ``depth_hint`` says how to set it
    (``index.as_retriever(similarity_top_k=50)``) and ``fixed_depth`` is the depth it was built
    with, when it can be read. Rankings shorter than the cutoffs scored are then to be expected.
    ``built_depth`` is the depth the retriever was built to return, when it can be read, whether
    or not the call overrides it (LangChain ``search_kwargs["k"]`` or ``k``, LlamaIndex
    ``similarity_top_k``, a Haystack component's ``top_k``): the run never asks it for fewer
    unless ``retrieval_depth`` says so. ``hint_builds`` is True when ``depth_hint`` sets the depth
    the retriever is built to return (its number is how many results it will give), False when
    it makes the depth reach the retriever (a ``k`` parameter: the run then asks for what it
    needs).

    ``context`` says how a query's context reaches the retriever (``context=context``,
    ``tenant=context['tenant']``, ``filters=context['filters']``: :mod:`.context`), None when it
    takes none; then ``context_hint`` says how to make it take it.
    """

    kind: str
    call: str
    depth_passed: bool
    depth_hint: str | None = None
    fixed_depth: int | None = None
    built_depth: int | None = None
    hint_builds: bool = False
    context: str | None = None
    context_hint: str | None = None


Sockets = str | Collection[str] | Mapping[str, str]
"""Sockets of a Haystack pipeline: ``"component.socket"``, several of them (a list, a tuple, a
set) or a mapping ``{"component": "socket"}``."""


def _is_socket(name: object) -> bool:
    return isinstance(name, str) and name.count(".") == 1 and "" not in name.split(".")


def _socket_names(option: str, value: Any) -> str | tuple[str, ...]:
    """``value`` as ``"component.socket"`` (one) or a tuple of them (several; a repeated name is
    kept once, where it first appears).

    ValueError naming the option for anything else: a string without exactly one dot, an empty
    collection for ``input``, a member that is not a string.
    """
    example = {
        "input": 'e.g. input="retriever.query" or input=["bm25.query", "embedder.text"]',
        "top_k": 'e.g. top_k="retriever.top_k" or top_k=["bm25.top_k", "dense.top_k"]',
        "filters": 'e.g. filters="retriever.filters" or filters=["bm25.filters", "dense.filters"]',
    }[option]
    if isinstance(value, str):
        names: list[Any] = [value]
    elif isinstance(value, Mapping):
        names = [
            f"{c}.{s}" if isinstance(c, str) and isinstance(s, str) else (c, s)
            for c, s in value.items()
        ]
    elif isinstance(value, Collection):
        # A set has no order: sorted, so the call (and the cache key's shape) is the same each run.
        names = sorted(value, key=repr) if isinstance(value, Set) else list(value)
    else:
        names = [value]
    for name in names:
        if not _is_socket(name):
            which = "" if value is name else f" ({name!r} is not)"
            raise ValueError(
                f"HaystackPipeline({option}={value!r}): expected 'component.socket'{which}, "
                f"{example}"
            )
    if not names and option == "input":
        raise ValueError(
            f"HaystackPipeline(input={value!r}): no socket would get the query text; name each "
            'socket that takes it, e.g. input=["bm25.query", "embedder.text"]'
        )
    if isinstance(value, str):
        return value
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class HaystackPipeline:
    """A Haystack ``Pipeline`` as a retriever: where the query goes, the depth, the documents.

    ``input`` names the sockets receiving the query text: one ``"component.socket"``
    (``"retriever.query"``, or ``"embedder.text"`` in front of an embedding retriever), or several
    for a pipeline with more than one entry (a hybrid: ``["bm25.query", "embedder.text"]``, or the
    mapping ``{"bm25": "query", "embedder": "text"}``); every one gets the same text. ``top_k``
    names the sockets receiving the depth (one or several; an empty list: none); by default every
    open input socket called ``top_k`` gets it (each retriever of a hybrid and its joiner).
    ``output`` names the socket holding the ranked documents (default: the only open output
    called ``documents``). ``filters`` names the sockets receiving a query's context filters
    (:mod:`.context`; by default every open input socket called ``filters``; an empty list:
    none). Each query runs ``pipeline.run(data)`` once. Several sockets are kept as a tuple, in
    the order given.
    """

    pipeline: Any
    input: Sockets
    top_k: Sockets | None = None
    output: str | None = None
    filters: Sockets | None = None

    def __post_init__(self) -> None:
        # Frozen: the normalised form (a tuple for several) replaces what was given.
        object.__setattr__(self, "input", _socket_names("input", self.input))
        if self.top_k is not None:
            object.__setattr__(self, "top_k", _socket_names("top_k", self.top_k))
        if self.filters is not None:
            object.__setattr__(self, "filters", _socket_names("filters", self.filters))
        if self.output is not None and not _is_socket(self.output):
            raise ValueError(
                f"HaystackPipeline(output={self.output!r}): expected one 'component.socket', "
                'e.g. output="retriever.documents"'
            )
        named = [
            ("an input (the query text)", set(self.input_sockets)),
            ("a top_k socket (the depth)", set(self.top_k_sockets or ())),
            ("a filters socket (the context's filters)", set(self.filters_sockets or ())),
        ]
        for i, (first, these) in enumerate(named):
            for second, those in named[i + 1 :]:
                both = these & those
                if both:
                    raise ValueError(
                        f"HaystackPipeline: {', '.join(sorted(both))} is named both as {first} "
                        f"and as {second}; a socket gets one of them"
                    )

    @property
    def input_sockets(self) -> tuple[str, ...]:
        """Every ``"component.socket"`` that gets the query text."""
        return (self.input,) if isinstance(self.input, str) else tuple(self.input)

    @property
    def top_k_sockets(self) -> tuple[str, ...] | None:
        """The ``"component.socket"``s named for the depth; None: every open ``top_k``."""
        if self.top_k is None:
            return None
        return (self.top_k,) if isinstance(self.top_k, str) else tuple(self.top_k)

    @property
    def filters_sockets(self) -> tuple[str, ...] | None:
        """The ``"component.socket"``s named for the filters; None: every open ``filters``."""
        if self.filters is None:
            return None
        return (self.filters,) if isinstance(self.filters, str) else tuple(self.filters)

    def retrieval_identity(self) -> str:
        """What the retriever-output cache keys this pipeline by
        (:func:`~pytest_retrieval.run.cachekey.retriever_identity`): every component's name, class
        and readable ``top_k``, every connection, and the sockets named here. The wrapper's own
        class alone would let two different pipelines share cached rankings."""
        pipeline = self.pipeline
        walk = getattr(pipeline, "walk", None)
        components = []
        for name, component in walk() if callable(walk) else ():
            kind = f"{type(component).__module__}.{type(component).__qualname__}"
            top_k = getattr(component, "top_k", None)
            components.append(f"{name}={kind}" + (f"(top_k={top_k})" if type(top_k) is int else ""))
        graph = getattr(pipeline, "graph", None)
        edges = getattr(graph, "edges", None)
        connections = (
            [f"{u}->{v}:{key}" for u, v, key in edges(keys=True)] if callable(edges) else []
        )
        kind = f"{type(pipeline).__module__}.{type(pipeline).__qualname__}"
        # The filters sockets only when named: a pipeline keeps the identity it always had.
        filters = "" if self.filters is None else f"; filters {self.filters!r}"
        return (
            f"HaystackPipeline[{kind}; components {', '.join(sorted(components))}; "
            f"connections {', '.join(sorted(connections))}; input {self.input!r}; "
            f"top_k {self.top_k!r}; output {self.output!r}{filters}]"
        )


def describe(value: Any) -> str:
    """``value`` as a message quotes it: its repr, cut to 80 characters."""
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


def is_integral(value: object) -> TypeGuard[Integral]:
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
        and not is_integral(item[0])
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
            raise DocIdPathError(
                f"item {describe(item)} has no {doc_id!r} (set by the doc id option)"
            )
    else:
        value = _default_id(item)
    if is_integral(value):
        return str(int(value))  # numpy / FAISS integer ids too: "3", never "np.int64(3)"
    if not isinstance(value, str):
        raise RetrieverOutputError(
            f"item {describe(item)} gave the id {describe(value)}, expected a str or int"
        )
    return value


def _default_id(item: Any) -> Any:
    if isinstance(item, str) or is_integral(item):
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
        found = _metadata_id(item.get("metadata"))
        if found is not None:
            return found
        raise RetrieverOutputError(
            f"dict item {describe(item)} has none of the keys {', '.join(_DEFAULT_ID_KEYS)}; "
            "set retrieval_doc_id to the key that holds the document id"
        )
    node = getattr(item, "node", None)  # LlamaIndex NodeWithScore
    if node is not None and getattr(node, "node_id", None) is not None:
        return node.node_id
    for attribute in _DEFAULT_ID_KEYS:
        value = getattr(item, attribute, None)
        if value is not None:
            return value
    found = _metadata_id(getattr(item, "metadata", None))  # LangChain Document
    if found is not None:
        return found
    raise RetrieverOutputError(
        f"cannot find a document id in {describe(item)} ({type(item).__name__}); set "
        "retrieval_doc_id to an attribute or key path (e.g. metadata.source) or a callable"
    )


def _metadata_id(metadata: Any) -> Any:
    """The id under the first default metadata key that holds one, or None."""
    if isinstance(metadata, Mapping):
        for key in _DEFAULT_METADATA_KEYS:
            if metadata.get(key) is not None:
                return metadata[key]
    return None


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


def check_ranking(result: Any) -> Any:
    """``result`` if it can be read as a ranking (a Haystack result: its documents)."""
    if isinstance(result, Mapping) and "documents" in result:
        documents = result["documents"]
        if isinstance(documents, (list, tuple)):
            return documents
    if isinstance(result, (set, frozenset)):
        raise RetrieverOutputError(
            f"returned {describe(result)} ({type(result).__name__}): a ranking must be ordered: "
            "return a list, best first (e.g. sorted by score), not a set"
        )
    if isinstance(result, Mapping):
        raise RetrieverOutputError(
            f"returned {describe(result)} ({type(result).__name__}), which is not a ranking: "
            "return a list of ids best first (for a dict of id -> score: "
            "sorted(scores, key=scores.get, reverse=True))"
        )
    if looks_like_one_item(result) and not isinstance(result, Iterator):
        raise RetrieverOutputError(
            f"returned one {type(result).__name__} ({describe(result)}), not a ranking: "
            "return a list of them, best first"
        )
    if inspect.isclass(result):
        raise RetrieverOutputError(
            f"returned the class {result.__qualname__}; {_EXPECTED} (an instance, not its class)"
        )
    if result is None or isinstance(result, (str, bytes, int, float)):
        raise RetrieverOutputError(
            f"returned {describe(result)} ({type(result).__name__}); {_EXPECTED}"
        )
    if not isinstance(result, Iterable):
        raise RetrieverOutputError(
            f"returned {describe(result)} ({type(result).__name__}), which is not a list; "
            f"{_EXPECTED}"
        )
    return result


def check_separator(separator: str | None) -> None:
    """Refuse a ``doc_id_separator`` that is not a non-empty string (a ``ValueError``)."""
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
    ranking, scores, _returned = adapt_fast(
        result, doc_id=doc_id, doc_map=doc_map, doc_id_separator=doc_id_separator
    )
    return ranking, (None,) * len(ranking) if scores is None else scores


def _plain_ids(ids: Sequence[str]) -> tuple[tuple[str, ...], None, tuple[str, ...] | None]:
    ranking = tuple(dict.fromkeys(ids))
    return ranking, None, tuple(ids) if len(ranking) != len(ids) else None


def adapt_fast(
    result: Any,
    *,
    doc_id: DocIdOption = None,
    doc_map: DocMap = None,
    doc_id_separator: str | None = None,
) -> tuple[tuple[str, ...], tuple[float | None, ...] | None, tuple[str, ...] | None]:
    """:func:`adapt_scored`, with ``None`` for the scores when no item carries one, and the
    document ids as returned (repeats kept) when they differ from the ranking (None when no
    id repeats): the runner's hot path (100,000 queries of 100 ids are 10,000,000 items)."""
    plain = doc_id is None and doc_map is None and doc_id_separator is None
    # The common case, a list of plain string ids: each is its own document and carries no
    # score (what the general loop gives them, without a lookup per item).
    if plain and type(result) in (list, tuple) and set(map(type, result)) == _ONLY_STR:
        return _plain_ids(result)
    check_separator(doc_id_separator)
    items = list(check_ranking(result))
    if plain and set(map(type, items)) == _ONLY_STR:
        return _plain_ids(items)
    mapper: Callable[[str], Any] | None = doc_map.get if isinstance(doc_map, Mapping) else doc_map
    ranking: dict[str, float | None] = {}
    returned: list[str] = []
    for item in items:
        document = extract_doc_id(item, doc_id)
        if mapper is not None:
            mapped = mapper(document)
            if mapped is not None:  # not in the map: the id already names a document
                document = str(int(mapped)) if is_integral(mapped) else str(mapped)
        if doc_id_separator is not None:
            head, found, _chunk = document.rpartition(doc_id_separator)
            if found and head:
                document = head
        returned.append(document)
        if document not in ranking:
            ranking[document] = _score_of(item)
    scores = tuple(ranking.values())
    as_returned = tuple(returned) if len(returned) != len(ranking) else None
    return tuple(ranking), scores if any(s is not None for s in scores) else None, as_returned


_ONLY_STR = {str}


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


def looks_like_one_item(value: Any) -> bool:
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
