"""Closing judgment holes on a real collection: Cranfield (../shared/datasets/cranfield).

The loop of the "Labels and holes" README section, end to end: take Cranfield's graded
judgments (``qrels-gain.tsv``, gains 0..4) for the first 40 queries (a subset, so the three
plugin runs stay fast), remove a seeded share of them, run a BM25 retriever (bm25s) through the
plugin, pool the top 10 into a worksheet, fill the worksheet from the *full* judgments (a
document Cranfield never judged is graded 0, the pooling assumption), merge it, run again, and
check that every query has ``judged@10`` = 1.0 and the precision@10 the full judgments give.

The expected precision@10 is not computed by us: it is the plugin's own number on the full
judgments, which the reduced-then-merged golden set must reproduce query by query.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from plugin_helpers import RetrievalProject

from pytest_retrieval.cli import main

QUERIES = 40  # the first 40 of Cranfield's 225 queries
REMOVED_SHARE = 0.5
SEED = 15

CONFTEST = """\
import json
import os

import bm25s
import pytest

CORPUS = {corpus!r}


@pytest.fixture(scope="session")
def retriever_under_test():
    ids, texts = [], []
    with open(CORPUS, encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            ids.append(doc["_id"])
            texts.append(doc["title"] + " " + doc["text"])
    model = bm25s.BM25()
    model.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def search(text, k):
        tokens = bm25s.tokenize([text], stopwords="en", show_progress=False)
        found, _scores = model.retrieve(tokens, k=k, show_progress=False)
        return [ids[int(i)] for i in found[0]]

    return search
"""

TESTS = """\
from pytest_retrieval import assert_precision_at


def test_precision():
    assert_precision_at(10) >= 0.0
"""


def _golden_yaml(judgments: dict[str, dict[str, int]], texts: dict[str, str]) -> str:
    lines = ["version: 1", "queries:"]
    for qid, grades in judgments.items():
        lines.append(f"  - id: '{qid}'")
        lines.append(f"    text: {json.dumps(texts[qid])}")
        lines.append(f"    relevant: {json.dumps(grades)}")
    return "\n".join(lines) + "\n"


def _per_query(artifact: dict[str, object], metric: str) -> dict[str, float | None]:
    rows = artifact["queries"]
    assert isinstance(rows, list)
    return {row["id"]: row["metrics"]["retriever"][metric] for row in rows}


@pytest.fixture(scope="module")
def cranfield(shared_dir: Path) -> Path:
    folder = shared_dir / "datasets" / "cranfield"
    if not (folder / "qrels-gain.tsv").exists():
        pytest.fail(f"the Cranfield collection is missing from {folder} (see its README)")
    return folder


def test_pooling_and_merging_fills_the_holes_bm25_surfaces(
    pytester: pytest.Pytester, cranfield: Path
) -> None:
    texts = {}
    with (cranfield / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            query = json.loads(line)
            texts[query["_id"]] = query["text"]
    wanted = [str(n) for n in range(1, QUERIES + 1)]
    full: dict[str, dict[str, int]] = {qid: {} for qid in wanted}
    with (cranfield / "qrels-gain.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["query-id"] in full:
                full[row["query-id"]][row["corpus-id"]] = int(row["score"])
    # Remove a seeded half of the judgments, keeping at least one relevant one per query so
    # that every query is scored (no_relevant = skip would otherwise drop it).
    rng = random.Random(SEED)
    reduced: dict[str, dict[str, int]] = {}
    for qid, grades in full.items():
        docs = sorted(grades)
        keep = {d for d in docs if rng.random() >= REMOVED_SHARE}
        if not any(grades[d] > 0 for d in keep):
            keep.add(next(d for d in docs if grades[d] > 0))
        reduced[qid] = {d: grades[d] for d in docs if d in keep}
    removed = sum(len(g) for g in full.values()) - sum(len(g) for g in reduced.values())
    assert removed > 100  # a real share of the labels is gone

    project = RetrievalProject(pytester).write(
        golden=None,
        ini={
            "retrieval_golden": "golden.yaml",
            "retrieval_metrics": "precision, judged",
            "retrieval_json": "out.json",
        },
        ks="10",
        conftest=CONFTEST.format(corpus=str(cranfield / "corpus.jsonl")),
    )
    project.tests(TESTS, "test_cranfield.py")
    (pytester.path / "full.yaml").write_text(_golden_yaml(full, texts), encoding="utf-8")
    (pytester.path / "golden.yaml").write_text(_golden_yaml(reduced, texts), encoding="utf-8")

    def run(golden: str) -> dict[str, object]:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "--retrieval-golden", golden
        )
        assert result.ret == 0, result.stdout.str()
        artifact: dict[str, object] = json.loads((pytester.path / "out.json").read_text())
        return artifact

    truth = run("full.yaml")
    before = run("golden.yaml")
    coverage_before = _per_query(before, "judged@10")
    assert min(v for v in coverage_before.values() if v is not None) < 1.0
    worksheet = pytester.path / "worksheet.csv"
    code = main(
        [
            "golden",
            "pool",
            str(pytester.path / "out.json"),
            "--depth",
            "10",
            "--output",
            str(worksheet),
        ]
    )
    assert code == 0
    with worksheet.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    # The worksheet lists exactly the unjudged documents of each query's top 10.
    rankings = {r["id"]: r["rankings"]["retriever"][:10] for r in before["queries"]}  # type: ignore[index, union-attr]
    expected = {(q, d) for q, ranking in rankings.items() for d in ranking if d not in reduced[q]}
    assert {(r["query_id"], r["doc_id"]) for r in rows} == expected
    assert len(rows) == len(expected)  # each once
    for row in rows:  # fill from the full judgments; never judged in Cranfield: 0
        row["grade"] = str(full[row["query_id"]].get(row["doc_id"], 0))
    with worksheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    merged = pytester.path / "merged.yaml"
    assert (
        main(
            [
                "golden",
                "merge",
                str(pytester.path / "golden.yaml"),
                str(worksheet),
                "--output",
                str(merged),
                "--labeled-by",
                "cranfield-qrels",
            ]
        )
        == 0
    )
    after = run("merged.yaml")
    judged = _per_query(after, "judged@10")
    assert set(judged) == set(wanted)
    assert all(value == 1.0 for value in judged.values()), judged
    precision, expected_precision = (
        _per_query(after, "precision@10"),
        _per_query(truth, "precision@10"),
    )
    assert precision == expected_precision
    # And the holes mattered: the reduced set scored lower somewhere.
    assert _per_query(before, "precision@10") != expected_precision
