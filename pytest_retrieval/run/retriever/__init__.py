"""Calling the retriever under test: adapting what it returns, concurrency, errors, two stages.

Shapes
------
A *retriever* is what the user's ``retriever_under_test`` fixture returns. Recognised, in this
order (:func:`describe_retriever` says which one an object is and whether the depth reaches it):

* a :class:`HaystackPipeline`: a Haystack ``Pipeline`` with the sockets that take the query text
  named, ``HaystackPipeline(pipeline, input="retriever.query")``, or several for a hybrid
  (``input=["bm25.query", "embedder.text"]``: each gets the text). The depth goes to every open
  ``top_k`` socket (or the ones named with ``top_k="retriever.top_k"`` or a list); the ranking is
  read from the only open ``documents`` output (or ``output="retriever.documents"``, which may be
  an inner component's). A bare ``Pipeline`` is refused: it cannot tell which input is the query;
  so is a wrapped one leaving a mandatory input empty (Haystack would refuse every query).
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

Context
-------
A request's ``context`` (the golden-set query's tenant, filters, history, ...) reaches each
shape as :mod:`.context` says: ``context=`` or the keys a function declares by name,
``contexts=`` for a batch method, ``context=`` for a reranker, ``filters`` for Haystack, a
``filter=`` built by ``retrieval_context_filter`` for a LangChain vector-store retriever; a
LlamaIndex retriever is refused. A run without contexts calls exactly as before.

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
  callable and the separator forms. The document ids as returned, repeats kept, are kept beside
  it where they differ (``QueryOutcome.returned``): ``distinct@K`` and
  ``retrieval_cutoff_unit = results`` are measured on them (docs/metrics.md, "Repeated ids and
  what K counts").
* Depth: each query's first call asks ``depth`` results (or the request's own). With ``fill``,
  a query whose results collapse into fewer than ``fill`` documents while the call came back
  full is asked again deeper (:func:`~.items.deeper`, up to ``max_depth``), where the shape
  passes the depth; the reranker gets the items of the query's last call.
* Scores, when the items carry them (``(id, score)`` pairs, a ``score`` key or attribute, LangChain
  ``metadata["score"]``), are kept beside the ranking: the score of each document's best item.
* Threads: a synchronous retriever is called on ``concurrency`` long-lived worker threads that
  take the queries in batches (one hand-off per batch, sized from the calls' latency), each call
  timed on its own; with no timeout and a concurrency of 1 it is called in the caller's thread
  (nothing to abandon, nothing to overlap). An ``async def`` runs on one private event loop.
* An exception or a timeout in one query is recorded for that query (type and message); the other
  queries finish. The timeout covers the whole call, including iterating a lazy result (a
  generator) and awaiting a coroutine; an exception raised while a generator is consumed is that
  query's error. An ``async def`` that blocks the event loop (``time.sleep`` instead of
  ``await asyncio.sleep``) cannot hold the run past the timeout: its query times out, saying so,
  and the other queries the blocked loop held go on on a fresh event loop (one that had started
  is started again: on the blocked loop it could never answer in time).
* A malformed return value (``None``, a string, a number, a set, an item without an id) is
  recorded as an error naming what was returned and what to return instead.

Modules:

* ``shapes``: what a retriever object is, and whether the depth reaches it (``CallPlan``,
  ``plan_call``, ``describe_retriever``).
* ``context``: how a query's context reaches each shape (``context=``, keys by name,
  ``contexts=``, LangChain ``filter=``, Haystack ``filters=``) and the refusals; ``ContextUse``.
* ``items``: what the retriever returns -> ids and scores, the chunk -> document rule;
  ``QueryOutcome``.
* ``calling``: sync, async and batch calls, concurrency, timeouts, per-query errors, two stages.

Decisions that live here: the chunk -> document rule and id extraction (``items``); how a
query's context reaches the retriever and when it cannot (``context``).
"""

from __future__ import annotations

from ..stages import RERANKER_STAGE as RERANKER_STAGE
from ..stages import RETRIEVER_STAGE as RETRIEVER_STAGE

# The package is the runner's one entry point: these names are what the rest of pytest-retrieval
# uses (the submodules are items, shapes and calling).
from .calling import run_pipeline as run_pipeline
from .items import DocIdOption as DocIdOption
from .items import DocMap as DocMap
from .items import HaystackPipeline as HaystackPipeline
from .items import QueryOutcome as QueryOutcome
from .items import QueryRequest as QueryRequest
from .items import RetrieverCall as RetrieverCall
from .items import RetrieverOutputError as RetrieverOutputError
from .items import RetrieverShape as RetrieverShape
from .items import RetrieverShapeError as RetrieverShapeError
from .items import adapt_ranking as adapt_ranking
from .items import adapt_scored as adapt_scored
from .items import deeper as deeper
from .items import extract_doc_id as extract_doc_id
from .items import stage_run as stage_run
from .items import stage_scores as stage_scores
from .shapes import describe_retriever as describe_retriever
