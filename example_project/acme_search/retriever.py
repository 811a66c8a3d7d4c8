"""First-stage retrieval: BM25 over chunks, with the ``bm25s`` library.

The index is built once per :class:`Settings` and scope (the pages a user may see) and cached
for the life of the process (:func:`get_index`). Settings come from environment variables, so a
gate can be broken on purpose without touching the code:

============================  =========  ===================================================
variable                      default    meaning
============================  =========  ===================================================
``ACME_CHUNK_SIZE``           ``200``    words per chunk
``ACME_CHUNK_OVERLAP``        size // 5  words shared by consecutive chunks of a document
``ACME_RERANKER``             ``on``     ``off`` skips the second stage (see ``reranker``)
``ACME_TOKENIZER``            ``stem``   ``naive`` splits on whitespace only: no lower-casing,
                                         no stop words, no stemming (a deliberately bad setting)
``ACME_TENANT_FILTER``        ``on``     ``off`` drops the tenant filter: every customer's own
                                         pages become searchable by everyone (a leak)
``ACME_FRESHNESS``            ``on``     ``off`` drops the reranker's freshness rule: superseded
                                         pages rank where their words put them
============================  =========  ===================================================

**The tenant filter.** A page with a ``tenant`` (front matter, see ``corpus``) belongs to that
customer: :func:`search` given ``tenant="northwind"`` searches the public pages and Northwind's,
and without a tenant (an anonymous visitor) the public pages only. It filters *before* scoring:
each scope has its own index (:func:`index_for`), so the ``k`` results are ``k`` visible chunks
(never ``k`` minus the hidden ones) and BM25's term statistics come from what the user may see,
so one customer's pages do not even move the scores another customer (or the public) gets.

The default tokenizer is bm25s' own (lower-case, ``\\w\\w+`` tokens, English stop words) with a
small suffix-stripping stemmer of ours, so the example needs no stemming library.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import bm25s  # type: ignore[import-untyped]  # bm25s ships no type hints

from .chunker import DEFAULT_CHUNK_SIZE, Chunk, chunk_corpus, default_overlap
from .corpus import load_corpus

#: How many chunks the first stage hands to the reranker.
CANDIDATES = 50

TOKENIZERS = ("stem", "naive")


@dataclass(frozen=True)
class Settings:
    """Everything that changes the index or the pipeline. Hashable: it keys the index cache."""

    chunk_size: int = DEFAULT_CHUNK_SIZE
    overlap: int = default_overlap(DEFAULT_CHUNK_SIZE)
    reranker: bool = True
    tokenizer: str = "stem"
    tenant_filter: bool = True
    freshness: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the ``ACME_*`` variables (see the module docstring); unset ones keep defaults."""
        env = os.environ if environ is None else environ
        size = _int_var(env, "ACME_CHUNK_SIZE", DEFAULT_CHUNK_SIZE)
        overlap = _int_var(env, "ACME_CHUNK_OVERLAP", default_overlap(size))
        reranker = _switch(env, "ACME_RERANKER")
        tokenizer = env.get("ACME_TOKENIZER", "stem").strip().lower()
        if tokenizer not in TOKENIZERS:
            raise ValueError(f"ACME_TOKENIZER must be one of {TOKENIZERS}, got {tokenizer!r}")
        if size < 1 or not 0 <= overlap < size:
            raise ValueError(f"need ACME_CHUNK_SIZE >= 1 and 0 <= overlap < size: {size}/{overlap}")
        return cls(
            size,
            overlap,
            reranker,
            tokenizer,
            _switch(env, "ACME_TENANT_FILTER"),
            _switch(env, "ACME_FRESHNESS"),
        )


def _switch(env: Mapping[str, str], name: str) -> bool:
    """An ``on``/``off`` variable (unset: on)."""
    value = env.get(name, "on").strip().lower()
    if value not in ("on", "off"):
        raise ValueError(f"{name} must be 'on' or 'off', got {value!r}")
    return value == "on"


def _int_var(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def stem(word: str) -> str:
    """A light, deterministic English stemmer: plurals, ``-ing``, ``-ed`` and a final ``-e``.

    ``invoices``/``invoiced``/``invoicing`` -> ``invoic``; ``policies`` -> ``policy``;
    ``taxes`` -> ``tax``. Words with digits (``e1042``, ``2fa``) and short words are kept as is.
    """
    if len(word) <= 3 or any(ch.isdigit() for ch in word):
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    elif word.endswith("ing") and len(word) >= 6:
        word = word[:-3]
    elif word.endswith("ed") and len(word) >= 5:
        word = word[:-2]
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def stem_words(words: list[str]) -> list[str]:
    """Stem a list of words (the callable shape ``bm25s.tokenize`` expects)."""
    return [stem(w) for w in words]


def tokenize(texts: list[str], mode: str = "stem") -> list[list[str]]:
    """Tokenize texts for BM25: bm25s' tokenizer with stop words and :func:`stem`, or naive."""
    if mode == "naive":
        return [text.split() for text in texts]
    tokens = bm25s.tokenize(
        texts, stopwords="en", stemmer=stem_words, return_ids=False, show_progress=False
    )
    return [list(t) for t in tokens]


@dataclass
class Index:
    """A BM25 index over the chunks of the corpus, plus what the reranker needs."""

    settings: Settings
    chunks: list[Chunk]
    chunk_tokens: list[list[str]]
    title_tokens: list[list[str]]
    model: bm25s.BM25
    #: Per chunk, the tenant of its document (None: a public page).
    tenants: list[str | None]
    #: ``{doc id: the id of the page that replaces it}`` for every superseded page.
    superseded: dict[str, str]
    position: dict[str, int] = field(init=False)
    doc_freq: Counter[str] = field(init=False)

    def __post_init__(self) -> None:
        self.position = {chunk.id: i for i, chunk in enumerate(self.chunks)}
        self.doc_freq = Counter(t for tokens in self.chunk_tokens for t in set(tokens))

    def tokenize(self, text: str) -> list[str]:
        """Tokenize one text the way the index was built."""
        return tokenize([text], self.settings.tokenizer)[0]

    def idf(self, token: str) -> float:
        """BM25's inverse document frequency of a token over the chunks (never negative)."""
        n, df = len(self.chunks), self.doc_freq.get(token, 0)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


@lru_cache(maxsize=16)
def get_index(settings: Settings, scope: tuple[str, ...] | None = None) -> Index:
    """Build (once per settings and scope) the BM25 index over the chunked corpus: every page
    (``scope=None``), or the public pages and the own pages of the tenants in ``scope``."""
    documents = [
        doc for doc in load_corpus() if scope is None or doc.tenant is None or doc.tenant in scope
    ]
    chunks = chunk_corpus(documents, settings.chunk_size, settings.overlap)
    chunk_tokens = tokenize([c.text for c in chunks], settings.tokenizer)
    title_tokens = tokenize([c.title for c in chunks], settings.tokenizer)
    model = bm25s.BM25()
    model.index(chunk_tokens, show_progress=False)
    tenant_of = {doc.id: doc.tenant for doc in documents}
    superseded = {doc.id: doc.superseded_by for doc in documents if doc.superseded_by}
    tenants = [tenant_of[c.doc_id] for c in chunks]
    return Index(settings, chunks, chunk_tokens, title_tokens, model, tenants, superseded)


def index_for(settings: Settings, tenant: str | None) -> Index:
    """The index a user of ``tenant`` (None: an anonymous visitor) searches: the public pages
    and that tenant's, or every page with ``ACME_TENANT_FILTER=off``."""
    if not settings.tenant_filter:
        return get_index(settings)
    return get_index(settings, (tenant,) if tenant is not None else ())


def search(
    query: str,
    k: int = CANDIDATES,
    settings: Settings | None = None,
    tenant: str | None = None,
) -> list[tuple[str, float]]:
    """Return up to ``k`` ``(chunk_id, bm25_score)`` pairs, best first, of the chunks a user of
    ``tenant`` may see (the public pages and that tenant's; without a tenant, the public pages
    only). With ``ACME_TENANT_FILTER=off`` every chunk is searched, whoever asks.

    Chunks that share no term with the query (score 0) are left out, so fewer than ``k`` pairs
    may come back.
    """
    index = index_for(Settings.from_env() if settings is None else settings, tenant)
    tokens = index.tokenize(query)
    if not tokens or k < 1:
        return []
    k = min(k, len(index.chunks))
    ids, scores = index.model.retrieve([tokens], k=k, show_progress=False)
    return [
        (index.chunks[int(i)].id, float(s)) for i, s in zip(ids[0], scores[0], strict=True) if s > 0
    ]
