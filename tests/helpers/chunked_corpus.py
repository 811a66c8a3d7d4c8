"""A small chunked corpus for the depth tests: 12 documents of 3 or 4 chunks each (42 chunks).

Fewer documents than twice the largest cutoff (10) and at least three chunks per document, so
10 chunks hold fewer than 10 documents for most queries (their own document's chunks rank first)
and the run must ask deeper to fill 10 documents. ``q-step0`` is the exception: every document
has a ``step 0`` chunk, so its first 10 chunks are 10 documents and it is never asked again.

The embedding is a bag of words over the corpus' vocabulary (normalised counts plus a constant
so that no vector is zero): deterministic, no model, and a ranking that means something. Chunk
ids are ``<doc>#<n>``; the document is in ``metadata["source"]`` (``meta["source"]`` for
Haystack).
"""

from __future__ import annotations

import math
import re

TOPICS = [
    "refund",
    "shipping",
    "invoice",
    "password",
    "okta",
    "billing",
    "export",
    "mfa",
    "api",
    "webhook",
    "sso",
    "audit",
]

#: (chunk id, document id, text).
CHUNKS: list[tuple[str, str, str]] = [
    (
        f"{topic}#{n}",
        topic,
        f"{topic} guide part {n} explains {topic} step {n} " + "common words here " * (n + 1),
    )
    for i, topic in enumerate(TOPICS)
    for n in range(3 + i % 2)
]

_WORDS = sorted({w for _c, _d, text in CHUNKS for w in re.findall(r"\w+", text)})


def embed(text: str) -> list[float]:
    """The bag-of-words vector of ``text`` (unit length)."""
    words = re.findall(r"\w+", text.lower())
    vector = [float(words.count(w)) for w in _WORDS] + [0.01]
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def cosine_ranking(text: str) -> list[str]:
    """Every chunk id by cosine similarity to ``text`` (ties in corpus order)."""
    query = embed(text)
    scored = [
        (-sum(a * b for a, b in zip(query, embed(t))), i, c) for i, (c, _d, t) in enumerate(CHUNKS)
    ]
    return [c for _s, _i, c in sorted(scored)]


#: query id -> (text, relevant documents).
QUERIES = {
    "q-refund": ("refund step", ["refund", "export"]),
    "q-okta": ("okta guide", ["okta", "sso"]),
    "q-audit": ("audit common words", ["audit", "billing"]),
    "q-step0": ("step 0", ["api", "mfa"]),
}

GOLDEN = "version: 1\nqueries:\n" + "".join(
    f"  - id: {qid}\n    text: {text}\n    relevant: [{', '.join(relevant)}]\n"
    for qid, (text, relevant) in QUERIES.items()
)
