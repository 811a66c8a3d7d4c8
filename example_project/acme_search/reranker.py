"""Second stage: a deterministic, feature-based reranker over the BM25 candidates.

Why this method. BM25 scores each query term independently, so on a help centre it fails in
three recognisable ways: a chunk that repeats one query word many times beats a chunk that
contains *all* of them; the page *about* the topic (its title says so) does not beat a page that
mentions it in passing; and a query that says "SSO" misses a page that says "single sign-on"
(and the other way round). The reranker rescores the top candidates with one feature for each
failure, plus BM25 itself, and sorts by a fixed weighted sum:

* ``bm25`` - the first-stage score divided by the best candidate's score (0..1);
* ``coverage`` - the IDF-weighted share of the query's concepts that occur in the chunk;
* ``title`` - the IDF-weighted share of the query's concepts that occur in the document title;
* ``proximity`` - the IDF-weighted share of consecutive query concepts that occur within a few
  words of each other in the chunk (a cheap bigram / phrase match).

A *concept* is a query term, or an acronym together with its expansion: "SSO" and "single
sign-on" are one concept, matched by either form. Question and function words ("how", "does",
"my", ...) are not concepts: they say nothing about the topic, yet are rare in help articles, so
their IDF would otherwise make them look important. The expansions are mined from the corpus
itself - definitions written as ``long form (ACR)`` and glossary lines ``**ACR** - long form`` -
so they need no model, no download and no hand-kept list. Everything is plain Python over the
tokens the index already holds; the same query and candidates always give the same order (ties
keep the first-stage order).

**The freshness rule.** An outdated page (``superseded_by`` in its front matter) shares most of
its words with the page that replaced it, so on relevance alone it ranks right beside it, and
now and then above it: the 2024 refund policy first for "How long is the refund window?".
Handed to an LLM, it answers with last year's terms. :func:`rerank` therefore subtracts
:data:`FRESHNESS_PENALTY` from a superseded page's score, which puts it below every current
candidate: it stays in the list, after every current candidate (in practice beyond the 50
documents the gates score), so it never stands ahead of a current page. ``ACME_FRESHNESS=off``
ranks by :func:`rerank_by_relevance` alone, the break-it-on-purpose of the ``stale@3`` gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from .chunker import doc_id
from .corpus import Document, load_corpus
from .retriever import Index, Settings, get_index, index_for

#: Weights of the features; they add up to 1.
WEIGHTS: dict[str, float] = {"bm25": 0.4, "coverage": 0.25, "title": 0.2, "proximity": 0.15}

#: Subtracted from a superseded page's score: the weighted sum is in 0..1, so a penalty of 1
#: ranks every superseded candidate below every current one.
FRESHNESS_PENALTY = 1.0

#: Two concepts count as "near" when their tokens are at most this many positions apart.
WINDOW = 3

_FUNCTION_WORDS = {"a", "an", "and", "for", "in", "of", "the", "to"}

#: Words of the query that are not concepts (interrogatives, auxiliaries, pronouns).
_QUERY_STOP_TEXT = """
    what which who whom whose when where why how do does did doing done can could should would
    may might must shall i me my mine we us our ours you your yours he him his she her it its
    they them their am have has had having get gets got there here so than too very just
    i'm i've we're what's can't don't
"""
QUERY_STOP_WORDS = frozenset(_QUERY_STOP_TEXT.split())
_DEFINITION = re.compile(r"((?:[\w-]+\s+){0,8}[\w-]+)\s+\(([A-Z][A-Za-z0-9]{1,6})\)")
_GLOSSARY = re.compile(r"^\*\*([A-Z][A-Za-z0-9]{1,6})\*\*\s+[-\u2013\u2014]\s+([^,.:;\n]+)", re.M)

Concept = tuple[tuple[str, ...], ...]
"""Alternative token sequences for one query concept, e.g. ``(("sso",), ("singl", "sign"))``."""


def _initials(words: list[str], split_hyphens: bool) -> str:
    parts = [p for w in words for p in (w.split("-") if split_hyphens else [w]) if p]
    return "".join(p[0] for p in parts if p.lower() not in _FUNCTION_WORDS).lower()


def _long_form(acronym: str, preceding: str) -> str | None:
    """The shortest run of words ending ``preceding`` whose initials spell ``acronym``."""
    letters = "".join(ch for ch in acronym if ch.isupper() or ch.isdigit()).lower()
    if len(letters) < max(2, len(acronym) - 1):  # "IdP" is an acronym, "France" is not
        return None
    words = preceding.split()
    for n in range(1, min(len(words), len(letters) + 3) + 1):
        tail = words[-n:]
        if tail[0].lower() in _FUNCTION_WORDS:
            continue
        if letters in (_initials(tail, True), _initials(tail, False)):
            return " ".join(tail)
    return None


def mine_acronyms(documents: Iterable[Document]) -> dict[str, str]:
    """Find ``{ACRONYM: long form}`` definitions in the documents (first definition wins)."""
    found: dict[str, str] = {}
    for doc in documents:
        text = f"{doc.title}\n{doc.text}"
        pairs: list[tuple[str, str | None]] = []
        for m in _DEFINITION.finditer(text):  # "... single sign-on (SSO)"
            pairs.append((m.group(2), _long_form(m.group(2), m.group(1))))
        for m in _GLOSSARY.finditer(text):  # "**SSO** - Single sign-on."
            head = " ".join(m.group(2).split()[: len(m.group(1)) + 2])
            pairs.append((m.group(1), _long_form(m.group(1), head)))
        for acronym, long_form in pairs:
            if long_form and acronym not in found:
                found[acronym] = long_form
    return found


@lru_cache(maxsize=1)
def corpus_acronyms() -> dict[str, str]:
    """The acronym table of the corpus (mined once per process)."""
    return mine_acronyms(load_corpus())


@lru_cache(maxsize=8)
def _expansions(settings: Settings) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Tokenized ``{acronym: long form}`` and ``{long form: acronym}`` for these settings."""
    index = get_index(settings)
    table: dict[tuple[str, ...], tuple[str, ...]] = {}
    for acronym, long_form in corpus_acronyms().items():
        short, long = tuple(index.tokenize(acronym)), tuple(index.tokenize(long_form))
        if short and long and short != long:
            table.setdefault(short, long)
            table.setdefault(long, short)
    return table


@lru_cache(maxsize=8)
def _query_stop_tokens(settings: Settings) -> frozenset[str]:
    """:data:`QUERY_STOP_WORDS` as the index tokenizes them (stemmed, or as is when naive)."""
    index = get_index(settings)
    return frozenset(t for word in QUERY_STOP_WORDS for t in index.tokenize(word))


def query_concepts(query: str, index: Index) -> list[Concept]:
    """Turn a query into concepts, merging each acronym with its expansion."""
    stop = _query_stop_tokens(index.settings)
    tokens = [t for t in index.tokenize(query) if t not in stop]
    table = _expansions(index.settings)
    longest = max((len(key) for key in table), default=1)
    concepts: list[Concept] = []
    i = 0
    while i < len(tokens):
        for n in range(min(longest, len(tokens) - i), 0, -1):
            phrase = tuple(tokens[i : i + n])
            if phrase in table:
                concept: Concept = (phrase, table[phrase])
                break
        else:
            n, concept = 1, ((tokens[i],),)
        if concept not in concepts:
            concepts.append(concept)
        i += n
    return concepts


def _weight(concept: Concept, index: Index) -> float:
    return max(sum(index.idf(t) for t in alt) / len(alt) for alt in concept)


def _matches(concept: Concept, tokens: set[str]) -> bool:
    return any(all(t in tokens for t in alt) for alt in concept)


def _positions(concept: Concept, where: dict[str, list[int]]) -> list[int]:
    return [p for alt in concept if all(t in where for t in alt) for t in alt for p in where[t]]


def features(concepts: list[Concept], chunk_index: int, index: Index) -> dict[str, float]:
    """The ``coverage``, ``title`` and ``proximity`` features of one chunk (each 0..1)."""
    tokens = index.chunk_tokens[chunk_index]
    body, title = set(tokens), set(index.title_tokens[chunk_index])
    weights = [_weight(c, index) for c in concepts]
    total = sum(weights) or 1.0
    coverage = sum(w for c, w in zip(concepts, weights, strict=True) if _matches(c, body))
    in_title = sum(w for c, w in zip(concepts, weights, strict=True) if _matches(c, title))
    where: dict[str, list[int]] = {}
    for pos, token in enumerate(tokens):
        where.setdefault(token, []).append(pos)
    near = pairs = 0.0
    for i in range(len(concepts) - 1):
        pair_weight = min(weights[i], weights[i + 1])
        a, b = _positions(concepts[i], where), _positions(concepts[i + 1], where)
        near += pair_weight * any(abs(p - q) <= WINDOW for p in a for q in b)
        pairs += pair_weight
    return {
        "coverage": coverage / total,
        "title": in_title / total,
        "proximity": near / pairs if pairs else 0.0,
    }


def rerank(
    query: str, candidates: list[tuple[str, float]], context: Mapping[str, object] | None = None
) -> list[tuple[str, float]]:
    """The second stage as shipped: :func:`rerank_by_relevance`, then the freshness rule (a
    superseded page's score minus :data:`FRESHNESS_PENALTY`, so it ranks below every current
    page; the order within each kind is kept)."""
    ranked = rerank_by_relevance(query, candidates, context)
    superseded = get_index(Settings.from_env()).superseded
    rescored = [
        (score - FRESHNESS_PENALTY if doc_id(chunk_id) in superseded else score, rank, chunk_id)
        for rank, (chunk_id, score) in enumerate(ranked)
    ]
    rescored.sort(key=lambda item: (-item[0], item[1]))
    return [(chunk_id, round(score, 6)) for score, _, chunk_id in rescored]


def rerank_by_relevance(
    query: str, candidates: list[tuple[str, float]], context: Mapping[str, object] | None = None
) -> list[tuple[str, float]]:
    """Rescore ``(chunk_id, bm25_score)`` candidates by relevance alone (the four features, no
    freshness rule); return them best first with the new score. ``context`` is the query's
    (``{"tenant": ...}`` for a customer's user): the features are computed on the index that
    user searched (:func:`~acme_search.retriever.index_for`)."""
    if not candidates:
        return []
    tenant = (context or {}).get("tenant")
    index = index_for(Settings.from_env(), tenant if isinstance(tenant, str) else None)
    concepts = query_concepts(query, index)
    best = max(score for _, score in candidates) or 1.0
    rescored: list[tuple[float, int, str]] = []
    for rank, (chunk_id, bm25_score) in enumerate(candidates):
        values = features(concepts, index.position[chunk_id], index)
        values["bm25"] = bm25_score / best
        score = sum(WEIGHTS[name] * value for name, value in values.items())
        rescored.append((score, rank, chunk_id))
    rescored.sort(key=lambda item: (-item[0], item[1]))
    return [(chunk_id, round(score, 6)) for score, _, chunk_id in rescored]
