"""Load the Acme Ledger help-centre corpus: one Markdown file per document.

Each file ``corpus/<doc-id>.md`` starts with a ``# Title`` line; the rest is the body. The file
name (without ``.md``) is the document id used everywhere else, including in the golden set.

A file may open with a front-matter block of ``key: value`` lines between two ``---`` lines,
before its title. Two keys are known, and any other is an error (a typo must not silently make
a page public or current):

* ``tenant: <name>`` - a customer's own page (its contract, its sign-in set-up), visible only
  to that tenant's users; pages without a tenant are the public help centre.
* ``superseded_by: <doc-id>`` - an outdated version of a page: the named page replaces it (it
  must exist). The reranker's freshness rule ranks it below every current page.

``scripts/export_corpus.py`` writes the same metadata to ``corpus.jsonl``, the file
pytest-retrieval's leak gates read (``retrieval_corpus``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Where the corpus lives: ``example_project/corpus``, next to this package.
CORPUS_DIR = Path(__file__).resolve().parent.parent / "corpus"


@dataclass(frozen=True)
class Document:
    """One help-centre article."""

    id: str
    title: str
    text: str
    #: The customer whose page this is; None for a public help-centre page.
    tenant: str | None = None
    #: The id of the page that replaces this one; None for a current page.
    superseded_by: str | None = None


#: The front-matter keys a document may set (see the module docstring).
METADATA_KEYS = ("tenant", "superseded_by")


def parse_front_matter(doc_id: str, markdown: str) -> tuple[dict[str, str], str]:
    """Split a leading ``---`` block of ``key: value`` lines off ``markdown``; return the
    metadata and the rest. Without a block, the metadata is empty and the text is unchanged."""
    if not markdown.startswith("---\n"):
        return {}, markdown
    block, fence, rest = markdown[4:].partition("\n---\n")
    if not fence:
        raise ValueError(f"{doc_id}: the front matter opened by '---' is never closed")
    metadata: dict[str, str] = {}
    for line in block.splitlines():
        key, colon, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not colon or key not in METADATA_KEYS or not value:
            raise ValueError(
                f"{doc_id}: front matter line {line!r} is not one of "
                f"{', '.join(k + ': <value>' for k in METADATA_KEYS)}"
            )
        metadata[key] = value
    return metadata, rest


def parse_document(doc_id: str, markdown: str) -> Document:
    """Split a Markdown article into its front matter, its ``# Title`` line and its body."""
    metadata, markdown = parse_front_matter(doc_id, markdown)
    first, _, body = markdown.partition("\n")
    if not first.startswith("# "):
        raise ValueError(f"{doc_id}: the first line must be '# <Title>', got {first!r}")
    return Document(id=doc_id, title=first[2:].strip(), text=body.strip(), **metadata)


def load_corpus(directory: Path | None = None) -> list[Document]:
    """Return every document of the corpus, sorted by id (so the order is deterministic)."""
    root = CORPUS_DIR if directory is None else directory
    paths = sorted(root.glob("*.md"))
    if not paths:
        raise FileNotFoundError(
            f"no Markdown documents found in {root}; run from example_project/ or install it "
            "in editable mode (pip install -e example_project)"
        )
    documents = [parse_document(path.stem, path.read_text(encoding="utf-8")) for path in paths]
    ids = {doc.id for doc in documents}
    for doc in documents:
        if doc.superseded_by is not None and doc.superseded_by not in ids:
            raise ValueError(f"{doc.id}: superseded_by {doc.superseded_by!r} is not in {root}")
    return documents
