"""Check the golden set against the corpus and print a summary.

Run from ``example_project/``::

    python scripts/check_golden.py [golden/acme-help.yaml]

Checks: unique query ids (readable slugs), unique normalised query texts per tenant (one text
asked by two customers is two queries), known slices and splits, grades in 0..3, that every
judged document id exists in ``corpus/``, that a ``context.tenant`` is a tenant some page names,
that a customer's own page is judged only by that customer's queries, and that ``corpus.jsonl``
is current (``scripts/export_corpus.py``). Exits non-zero on the first kind of problem it finds,
after printing all problems.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from acme_search.corpus import load_corpus  # noqa: E402
from export_corpus import corpus_lines  # noqa: E402

SLICES = {"exact-lookup", "paraphrase", "multi-hop", "acronym", "no-answer"}
SPLITS = {"tune", "heldout"}
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def normalise(text: str) -> str:
    """Lower-case, drop punctuation and collapse whitespace."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def judgements(relevant: Any) -> dict[str, int]:
    """Return ``{doc_id: grade}`` for the list form (grade 1) or the mapping form."""
    if isinstance(relevant, list):
        return {str(doc): 1 for doc in relevant}
    if isinstance(relevant, dict):
        return {str(doc): grade for doc, grade in relevant.items()}
    raise TypeError(f"relevant must be a list or a mapping, got {type(relevant).__name__}")


def check(path: Path) -> list[str]:
    """Validate the golden file at ``path``; print a summary and return the problems found."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    pages = {doc.id: doc for doc in load_corpus()}
    corpus = set(pages)
    tenants = {doc.tenant for doc in pages.values() if doc.tenant}
    default_split = data.get("defaults", {}).get("split", "tune")
    problems: list[str] = []
    ids: Counter[str] = Counter()
    texts: dict[str, str] = {}
    per_slice: Counter[str] = Counter()
    per_split: Counter[str] = Counter()
    slice_split: Counter[tuple[str, str]] = Counter()
    graded = answerable = 0

    for query in data["queries"]:
        qid = query["id"]
        ids[qid] += 1
        if not SLUG.fullmatch(qid):
            problems.append(f"{qid}: id is not a slug")
        tenant = (query.get("context") or {}).get("tenant")
        if tenant is not None and tenant not in tenants:
            problems.append(f"{qid}: context.tenant {tenant!r} is no tenant of the corpus")
        norm = f"{tenant or ''}\t{normalise(query['text'])}"
        if norm in texts:
            problems.append(f"{qid}: same normalised text (and tenant) as {texts[norm]}")
        texts[norm] = qid
        split = query.get("split", default_split)
        if split not in SPLITS:
            problems.append(f"{qid}: unknown split {split!r}")
        per_split[split] += 1
        for name in query["slices"]:
            if name not in SLICES:
                problems.append(f"{qid}: unknown slice {name!r}")
            per_slice[name] += 1
            slice_split[(name, split)] += 1
        judged = judgements(query["relevant"])
        for doc, grade in judged.items():
            if doc not in corpus:
                problems.append(f"{qid}: unknown document {doc!r}")
            elif grade and pages[doc].tenant not in (None, tenant):
                problems.append(f"{qid}: judges {doc!r}, a page of {pages[doc].tenant}, relevant")
            if not isinstance(grade, int) or not 0 <= grade <= 3:
                problems.append(f"{qid}: grade {grade!r} for {doc} is not an int in 0..3")
        is_no_answer = "no-answer" in query["slices"]
        if is_no_answer and any(judged.values()):
            problems.append(f"{qid}: no-answer query has relevant documents")
        if not is_no_answer:
            answerable += 1
            if not any(judged.values()):
                problems.append(f"{qid}: answerable query has no relevant document")
            graded += isinstance(query["relevant"], dict) and any(
                grade not in (0, 1) for grade in judged.values()
            )

    problems += [f"{qid}: duplicate id" for qid, n in ids.items() if n > 1]
    jsonl = ROOT / "corpus.jsonl"
    if not jsonl.exists() or jsonl.read_text(encoding="utf-8") != corpus_lines():
        problems.append("corpus.jsonl is out of date: run python scripts/export_corpus.py")
    print(f"{path.name}: {sum(ids.values())} queries, {len(corpus)} documents in corpus")
    for name in sorted(per_slice):
        tune, held = slice_split[(name, "tune")], slice_split[(name, "heldout")]
        print(f"  {name:<13} {per_slice[name]:>3}  (tune {tune}, heldout {held})")
    print(f"  splits: {dict(per_split)}")
    print(f"  graded (0..3) among answerable: {graded}/{answerable}")
    return problems


def main(argv: list[str]) -> int:
    """Entry point: check the given golden file (default ``golden/acme-help.yaml``)."""
    path = Path(argv[1]) if len(argv) > 1 else ROOT / "golden" / "acme-help.yaml"
    problems = check(path)
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
