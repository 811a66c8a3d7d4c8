"""Load the Acme Ledger help-centre corpus: one Markdown file per document.

Each file ``corpus/<doc-id>.md`` starts with a ``# Title`` line; the rest is the body. The file
name (without ``.md``) is the document id used everywhere else, including in the golden set.
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


def parse_document(doc_id: str, markdown: str) -> Document:
    """Split a Markdown article into its ``# Title`` line and its body."""
    first, _, body = markdown.partition("\n")
    if not first.startswith("# "):
        raise ValueError(f"{doc_id}: the first line must be '# <Title>', got {first!r}")
    return Document(id=doc_id, title=first[2:].strip(), text=body.strip())


def load_corpus(directory: Path | None = None) -> list[Document]:
    """Return every document of the corpus, sorted by id (so the order is deterministic)."""
    root = CORPUS_DIR if directory is None else directory
    paths = sorted(root.glob("*.md"))
    if not paths:
        raise FileNotFoundError(
            f"no Markdown documents found in {root}; run from example_project/ or install it "
            "in editable mode (pip install -e example_project)"
        )
    return [parse_document(path.stem, path.read_text(encoding="utf-8")) for path in paths]
