"""What one row of the retriever-output cache holds: the complete key and the stored entry.

**The key is complete or the cache is wrong.** A :class:`CacheKey` holds the stage, the query
text, the depth asked for, the retriever's identity (its qualified name and, for a factory, the
factory spec), the user-declared index version, the corpus fingerprint, the doc-id mapping's
fingerprint, for the reranker stage the candidate list it was given, and the query's context
(its canonical JSON, :func:`~pytest_retrieval.golden.context.context_json`, with the
``retrieval_context_filter`` that turns it into a filter, in every query's key while it is set:
a query without a context is filtered too): a ranking cached for tenant A is never served for
tenant B, one text with two histories is two entries, and a ranking cached without the filter is
never served to a filtered run. A query of a run without the setting and without a context has
the key it always had. The row is looked up by
a sha256 of all of them: any change is a miss, never a stale hit. What the key cannot see is the
index's *content*: rebuilding an index without changing ``retrieval_index_version`` reuses the old
rankings. That is the user's contract, and why the version is recorded in artifacts and baselines.

A :class:`CacheEntry` is stored as compact JSON (:meth:`CacheEntry.to_value`) beside a checksum of
the key's digest and that text (:func:`row_checksum`); :func:`entry_from_value` refuses a value
that is not one we wrote. The SQLite file that holds the rows, and what makes one damaged, are
:mod:`pytest_retrieval.run.store`'s.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..golden.context import context_json

if TYPE_CHECKING:
    from .retriever.items import QueryRequest

#: ``PRAGMA user_version``: bumped on any incompatible change of the tables or the key.
SCHEMA_VERSION = 1
#: Part of every key's digest: bumped when what an entry must hold changes, so that older
#: entries are misses rather than read as if they held it (2: the ids as returned beside the
#: document ranking; an entry of 1 cannot say whether its call came back full).
ENTRY_REVISION = 2

_K = TypeVar("_K")


# --- the key ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheKey:
    """Everything a ranking depends on that pytest-retrieval can see.

    ``retriever`` is the qualified name of the retriever (:func:`retriever_identity`) and
    ``factory`` the ``module:function`` spec it came from, if any. ``index_version`` is the
    user-declared ``retrieval_index_version``; ``corpus`` the corpus fingerprint when
    ``retrieval_corpus`` is set; ``doc_ids`` the doc-id mapping's fingerprint
    (:func:`doc_id_fingerprint`); ``candidates`` the ids handed to a reranker (None for the
    first stage). ``context`` is the query's context as canonical JSON and ``context_filter``
    the ``retrieval_context_filter`` spec that builds its filter (``context`` None for a query
    without one, ``context_filter`` None when the setting is not set; a None field is left out
    of :meth:`to_dict`, so a run without contexts or the setting has the digest it had before
    contexts existed and an existing cache stays valid). ``None`` and ``""`` are
    different values.
    """

    stage: str
    query: str
    depth: int
    retriever: str
    factory: str | None = None
    index_version: str | None = None
    corpus: str | None = None
    doc_ids: str | None = None
    candidates: tuple[str, ...] | None = None
    context: str | None = None
    context_filter: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Builtins only (candidates as a list; the context fields only when set)."""
        out = asdict(self)
        if self.candidates is not None:
            out["candidates"] = list(self.candidates)
        for name in ("context", "context_filter"):
            if out[name] is None:
                del out[name]
        return out

    @property
    def digest(self) -> str:
        """sha256 hex of the canonical JSON of every field, the schema version and the entry
        revision."""
        document = {"schema": SCHEMA_VERSION, "entry": ENTRY_REVISION, **self.to_dict()}
        text = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def retriever_identity(retriever: object) -> str:
    """``module.qualname`` of a function, or of the class of a retriever object; a wrapper of
    ours that holds the user's retriever (``HaystackPipeline``) names what it wraps through its
    ``retrieval_identity()``."""
    import inspect

    own = getattr(type(retriever), "retrieval_identity", None)
    if callable(own) and type(retriever).__module__.startswith("pytest_retrieval."):
        return str(own(retriever))
    target: Any = retriever
    # A function names itself; an object (a class instance with a retrieve method) by its class.
    if not (inspect.isfunction(retriever) or inspect.ismethod(retriever)):
        target = type(retriever)
    module = getattr(target, "__module__", None) or "?"
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or "?"
    return f"{module}.{name}"


def doc_id_fingerprint(
    doc_id: str | Callable[..., Any] | None = None,
    doc_id_map: str | os.PathLike[str] | Mapping[str, str] | None = None,
    *,
    separator: str | None = None,
) -> str | None:
    """A sha256 of how returned ids become document ids; None when nothing maps them.

    ``doc_id`` is the ``retrieval_doc_id`` option text (a path such as ``metadata.source`` or a
    ``module:function``) or a callable (identified by its qualified name); ``doc_id_map`` a map
    file (its bytes are hashed, so editing the file is a miss) or a mapping (its items are
    hashed); ``separator`` any chunk-id separator in use.
    """
    if doc_id is None and doc_id_map is None and separator is None:
        return None
    parts: dict[str, Any] = {"separator": separator}
    if callable(doc_id):
        parts["doc_id"] = "callable:" + retriever_identity(doc_id)
    else:
        parts["doc_id"] = doc_id
    if isinstance(doc_id_map, Mapping):
        items = sorted((str(k), str(v)) for k, v in doc_id_map.items())
        parts["doc_id_map"] = "mapping:" + _sha256_text(json.dumps(items, ensure_ascii=False))
    elif doc_id_map is not None:
        parts["doc_id_map"] = "file:" + _sha256_file(doc_id_map, what="doc-id map")
    else:
        parts["doc_id_map"] = None
    return _sha256_text(json.dumps(parts, sort_keys=True, ensure_ascii=False))


def corpus_fingerprint(path: str | os.PathLike[str]) -> str:
    """A sha256 of the ``retrieval_corpus`` file's bytes: editing the corpus file is a miss."""
    return "file:" + _sha256_file(path, what="corpus")


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sha256_file(path: str | os.PathLike[str], *, what: str) -> str:
    from ..reading import file_digest

    # The one safe reader's rule: a regular file (a FIFO would wait forever for a writer).
    return file_digest(path, what=what)


def request_key(
    template: CacheKey,
    request: QueryRequest,
    *,
    depth: int | None = None,
    candidates: Sequence[str] | None = None,
) -> CacheKey:
    """The key of one request: ``template`` (its stage's key without a query) with the
    request's text and context, at ``depth`` (default: the template's) and, for the reranker,
    the ``candidates`` it was handed. The template's ``context_filter`` (set only when
    ``retrieval_context_filter`` is) is kept for every query: a query without a context is
    filtered too, built from ``{}``, so its ranking depends on the filter."""
    from dataclasses import replace

    context = context_json(request.context)
    return replace(
        template,
        query=request.text,
        depth=template.depth if depth is None else depth,
        candidates=template.candidates if candidates is None else tuple(candidates),
        context=context,
        context_filter=template.context_filter,
    )


def keys_for(
    texts: Mapping[_K, str],
    template: CacheKey,
    candidates: Mapping[_K, Sequence[str]] | None = None,
) -> dict[_K, CacheKey]:
    """One key per query: ``template`` with each query's text (and reranker candidates)."""
    from dataclasses import replace

    return {
        label: replace(
            template,
            query=text,
            candidates=template.candidates if candidates is None else tuple(candidates[label]),
        )
        for label, text in texts.items()
    }


# --- the value -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One stored answer: the ranking (doc id strings, best first), optional scores (one per
    id), the latency of the call that produced it (ms), when it was stored (Unix seconds;
    0 until stored) and the ids as returned (repeats kept) when they differ from the ranking:
    what re-scoring ``distinct@K`` and K counted in results needs, and what says whether the
    call came back full (a query asked again deeper)."""

    ranking: tuple[str, ...]
    scores: tuple[float | None, ...] | None = None
    latency_ms: float | None = None
    created: float = field(default=0.0, compare=False)
    returned: tuple[str, ...] | None = None

    @property
    def returned_count(self) -> int:
        """How many results the call returned (repeats included)."""
        return len(self.returned) if self.returned is not None else len(self.ranking)

    def __post_init__(self) -> None:
        if self.scores is not None and len(self.scores) != len(self.ranking):
            raise ValueError(
                f"{len(self.scores)} scores for a ranking of {len(self.ranking)} ids; give one "
                "score per id or none"
            )

    def to_value(self) -> str:
        """The stored value: ranking, scores and latency, compact JSON (``created`` is a column)."""
        scores = None
        if self.scores is not None:
            # JSON has no NaN/inf: keep them as strings so the entry round-trips exactly.
            scores = [s if s is None or math.isfinite(s) else repr(float(s)) for s in self.scores]
        document: dict[str, Any] = {
            "ranking": list(self.ranking),
            "scores": scores,
            "latency_ms": self.latency_ms,
        }
        if self.returned is not None:  # only when ids repeated: the value is otherwise unchanged
            document["returned"] = list(self.returned)
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def entry_from_value(value: str, created: float) -> CacheEntry:
    """Parse a stored value; ValueError when it is not one we wrote (the guarded decoder's
    InputError is one: a row edited to nest deep or hold a huge number is damage too)."""
    from ..reading import load_json

    document = load_json(value, source="cache row", what="cache entry", expected="a cache entry")
    if not isinstance(document, dict):
        raise ValueError("not an object")
    ranking = document.get("ranking")
    if not isinstance(ranking, list) or not all(isinstance(d, str) for d in ranking):
        raise ValueError("ranking is not a list of strings")
    raw_scores = document.get("scores")
    scores: tuple[float | None, ...] | None = None
    if raw_scores is not None:
        if not isinstance(raw_scores, list):
            raise ValueError("scores is not a list")
        scores = tuple(None if s is None else float(s) for s in raw_scores)
    latency = document.get("latency_ms")
    if latency is not None and not isinstance(latency, (int, float)):
        raise ValueError("latency_ms is not a number")
    returned = document.get("returned")
    if returned is not None and (
        not isinstance(returned, list) or not all(isinstance(d, str) for d in returned)
    ):
        raise ValueError("returned is not a list of strings")
    return CacheEntry(
        tuple(ranking),
        scores,
        None if latency is None else float(latency),
        float(created),
        None if returned is None else tuple(returned),
    )


def row_checksum(digest: str, value: str) -> str:
    """The checksum stored beside a row: of the key's digest and the stored value."""
    return hashlib.sha256(f"{digest}\n{value}".encode()).hexdigest()[:32]
