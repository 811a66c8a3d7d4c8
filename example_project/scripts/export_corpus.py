"""Write ``corpus.jsonl``: the corpus ids and metadata, for pytest-retrieval's leak gates.

Run from ``example_project/`` after adding, renaming or re-tagging a page::

    python scripts/export_corpus.py          # rewrite corpus.jsonl
    python scripts/export_corpus.py --check  # exit 1 if corpus.jsonl is out of date

The metadata's one home is each page's front matter (``tenant``, ``superseded_by``; see
``acme_search/corpus.py``), which the pipeline reads. pytest-retrieval reads a corpus as
BEIR-style JSON lines (``retrieval_corpus = "corpus.jsonl"``): one line per page with its id,
its title and, for the pages that have any, the metadata under ``metadata``. From it, the
plugin knows every id (a judged or returned id that is not a page is an error), which pages
belong to a tenant (another tenant's page in a ranking counts for ``forbidden@K``) and which
are superseded (``stale@K``). The texts stay in ``corpus/``: the file holds no copy of them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acme_search.corpus import METADATA_KEYS, load_corpus  # noqa: E402

OUTPUT = ROOT / "corpus.jsonl"


def corpus_lines() -> str:
    """The text of ``corpus.jsonl``: one JSON object per page, sorted by id."""
    lines = []
    for doc in load_corpus():
        record: dict[str, object] = {"_id": doc.id, "title": doc.title}
        metadata = {key: getattr(doc, key) for key in METADATA_KEYS if getattr(doc, key)}
        if metadata:
            record["metadata"] = metadata
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    expected = corpus_lines()
    if "--check" in argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != expected:
            print(f"{OUTPUT.name} is out of date: run python scripts/export_corpus.py")
            return 1
        print(f"ok: {OUTPUT.name} matches corpus/")
        return 0
    OUTPUT.write_text(expected, encoding="utf-8")
    print(f"wrote {OUTPUT.name}: {expected.count(chr(10))} pages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
