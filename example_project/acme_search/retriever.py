"""First-stage retrieval: BM25 over chunks, with the ``bm25s`` library.

The index is built once per :class:`Settings` and cached for the life of the process
(:func:`get_index`). Settings come from environment variables, so a gate can be broken on purpose
without touching the code:

============================  =========  ===================================================
variable                      default    meaning
============================  =========  ===================================================
``ACME_CHUNK_SIZE``           ``200``    words per chunk
``ACME_CHUNK_OVERLAP``        size // 5  words shared by consecutive chunks of a document
``ACME_RERANKER``             ``on``     ``off`` skips the second stage (see ``reranker``)
``ACME_TOKENIZER``            ``stem``   ``naive`` splits on whitespace only: no lower-casing,
                                         no stop words, no stemming (a deliberately bad setting)
============================  =========  ===================================================

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

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the ``ACME_*`` variables (see the module docstring); unset ones keep defaults."""
        env = os.environ if environ is None else environ
        size = _int_var(env, "ACME_CHUNK_SIZE", DEFAULT_CHUNK_SIZE)
        overlap = _int_var(env, "ACME_CHUNK_OVERLAP", default_overlap(size))
        reranker = env.get("ACME_RERANKER", "on").strip().lower()
        if reranker not in ("on", "off"):
            raise ValueError(f"ACME_RERANKER must be 'on' or 'off', got {reranker!r}")
        tokenizer = env.get("ACME_TOKENIZER", "stem").strip().lower()
        if tokenizer not in TOKENIZERS:
            raise ValueError(f"ACME_TOKENIZER must be one of {TOKENIZERS}, got {tokenizer!r}")
        if size < 1 or not 0 <= overlap < size:
            raise ValueError(f"need ACME_CHUNK_SIZE >= 1 and 0 <= overlap < size: {size}/{overlap}")
        return cls(size, overlap, reranker == "on", tokenizer)


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


@lru_cache(maxsize=8)
def get_index(settings: Settings) -> Index:
    """Build (once per settings) the BM25 index over the chunked corpus."""
    chunks = chunk_corpus(load_corpus(), settings.chunk_size, settings.overlap)
    chunk_tokens = tokenize([c.text for c in chunks], settings.tokenizer)
    title_tokens = tokenize([c.title for c in chunks], settings.tokenizer)
    model = bm25s.BM25()
    model.index(chunk_tokens, show_progress=False)
    return Index(settings, chunks, chunk_tokens, title_tokens, model)


def search(
    query: str, k: int = CANDIDATES, settings: Settings | None = None
) -> list[tuple[str, float]]:
    """Return up to ``k`` ``(chunk_id, bm25_score)`` pairs, best first.

    Chunks that share no term with the query (score 0) are left out, so fewer than ``k`` pairs
    may come back.
    """
    index = get_index(Settings.from_env() if settings is None else settings)
    tokens = index.tokenize(query)
    if not tokens or k < 1:
        return []
    k = min(k, len(index.chunks))
    ids, scores = index.model.retrieve([tokens], k=k, show_progress=False)
    return [
        (index.chunks[int(i)].id, float(s)) for i, s in zip(ids[0], scores[0], strict=True) if s > 0
    ]
