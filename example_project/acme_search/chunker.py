"""Split documents into overlapping word windows ("chunks").

Sizes are counted in whitespace-separated words, a close enough stand-in for tokens in this
example. Chunk ids are ``"<doc-id>#<n>"`` (n from 0), so a chunk maps back to its document with
:func:`doc_id`. Every chunk starts with its document's title, so a short chunk from the middle of
an article still says what the article is about.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .corpus import Document

#: Default window: 200 words keeps most articles (80-400 words) to one or two chunks.
DEFAULT_CHUNK_SIZE = 200


@dataclass(frozen=True)
class Chunk:
    """A window of one document's words, prefixed with the document title."""

    id: str
    doc_id: str
    title: str
    text: str


def doc_id(chunk_id: str) -> str:
    """Map a chunk id ``"<doc-id>#<n>"`` to its document id."""
    return chunk_id.split("#")[0]


def default_overlap(chunk_size: int) -> int:
    """The overlap used when none is given: a fifth of the window (40 words for 200)."""
    return chunk_size // 5


def chunk_document(
    document: Document, chunk_size: int = DEFAULT_CHUNK_SIZE, overlap: int | None = None
) -> list[Chunk]:
    """Split one document into windows of ``chunk_size`` words overlapping by ``overlap`` words.

    The last window ends at the end of the document; no trailing window is made of words that
    the previous window already holds.
    """
    if overlap is None:
        overlap = default_overlap(chunk_size)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if not 0 <= overlap < chunk_size:
        raise ValueError(f"overlap must be in [0, chunk_size), got {overlap} for {chunk_size}")
    words = document.text.split()
    step = chunk_size - overlap
    chunks: list[Chunk] = []
    start = 0
    while True:
        window = " ".join(words[start : start + chunk_size])
        chunks.append(
            Chunk(
                id=f"{document.id}#{len(chunks)}",
                doc_id=document.id,
                title=document.title,
                text=f"{document.title}\n{window}",
            )
        )
        if start + chunk_size >= len(words):
            return chunks
        start += step


def chunk_corpus(
    documents: Iterable[Document],
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    overlap: int | None = None,
) -> list[Chunk]:
    """Chunk every document, keeping corpus order."""
    return [c for d in documents for c in chunk_document(d, chunk_size, overlap)]
