"""``pytest-retrieval evaluate -m forbidden@K stale@K``: the leak metrics of a TREC run, from a
``--forbidden`` file (``qid docid``) and a ``--corpus`` whose metadata marks stale documents;
what cannot be measured is refused with the flag that gives it.

The fixture, by hand (run order from the scores, descending):

* q1: a, x, old (x forbidden for q1; old superseded by a)
* q2: old, c, y (y forbidden for q2)
* q3 (no relevant document, still scored: a leak is a leak whatever the answer): y, x
  (x forbidden for q3)

forbidden@2: q1 x at rank 2 (1/2), q2 none (0), q3 x at rank 2 (1/2): mean 1/3, 2 documents
in 2 queries. stale@2: only q2's old at rank 1: mean (0 + 1/2 + 0) / 3 = 1/6, 1 document in 1
query. forbidden@3: q1 x, q2 y, q3 x, each 1/3 (K divides, as precision: q3 returned 2):
mean 1/3, 3 documents in 3 queries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_retrieval.cli import main

QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 1\nq3 0 d 0\n"
RUN = (
    "q1 Q0 a 1 3 t\nq1 Q0 x 2 2 t\nq1 Q0 old 3 1 t\n"
    "q2 Q0 old 1 3 t\nq2 Q0 c 2 2 t\nq2 Q0 y 3 1 t\n"
    "q3 Q0 y 1 3 t\nq3 Q0 x 2 2 t\n"
)
FORBIDDEN = "# qid docid\nq1 x\nq2 y\nq3 x\n"
CORPUS = [
    {"_id": "a", "text": "A"},
    {"_id": "b", "text": "B"},
    {"_id": "c", "text": "C"},
    {"_id": "d", "text": "D"},
    {"_id": "x", "text": "X"},
    {"_id": "y", "text": "Y"},
    {"_id": "old", "text": "Old", "superseded_by": "a"},
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {
        "qrels": tmp_path / "qrels.txt",
        "run": tmp_path / "run.txt",
        "forbidden": tmp_path / "forbidden.tsv",
        "corpus": tmp_path / "corpus.jsonl",
    }
    paths["qrels"].write_text(QRELS, "utf-8")
    paths["run"].write_text(RUN, "utf-8")
    paths["forbidden"].write_text(FORBIDDEN, "utf-8")
    paths["corpus"].write_text("\n".join(json.dumps(d) for d in CORPUS) + "\n", "utf-8")
    return {name: str(path) for name, path in paths.items()}


def _base(files: dict[str, str]) -> list[str]:
    return ["evaluate", "--qrels", files["qrels"], "--run", files["run"]]


def test_forbidden_and_stale_at_k_are_the_hand_counted_shares_and_counts_in_json(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*_base(files), "--forbidden", files["forbidden"], "--corpus", files["corpus"]]
    status = main([*args, "-m", "forbidden@2", "stale@2", "forbidden@3", "--json"])
    assert status == 0
    document = json.loads(capsys.readouterr().out)
    assert list(document) == ["metrics", "leaks", "queries"]
    assert document["metrics"] == {
        "forbidden@2": pytest.approx(1 / 3),
        "stale@2": pytest.approx(1 / 6),
        "forbidden@3": pytest.approx(1 / 3),
    }
    assert document["leaks"] == {
        "forbidden@2": {"documents": 2, "queries": 2},
        "stale@2": {"documents": 1, "queries": 1},
        "forbidden@3": {"documents": 3, "queries": 3},
    }


def test_the_table_prints_each_leak_metric_with_its_count(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*_base(files), "--forbidden", files["forbidden"], "--corpus", files["corpus"]]
    assert main([*args, "-m", "stale@2,forbidden@2", "recall@2"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in out[2:5]]
    assert rows == [
        ["stale@2", "0.1667", "3"],
        ["forbidden@2", "0.3333", "3"],
        ["recall@2", "1.0000", "2"],
    ]
    assert "stale@2: 1 document in the top 2 of 1 query" in out
    assert "forbidden@2: 2 documents in the top 2 of 2 queries" in out


def test_stale_at_k_without_a_corpus_is_refused_with_the_flag(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_base(files), "-m", "stale@2"]) == 2
    err = capsys.readouterr().err
    assert "stale@K needs a corpus that marks documents stale" in err
    assert "--corpus FILE" in err


def test_stale_at_k_with_a_corpus_without_status_metadata_is_refused_naming_it(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"_id": "a", "text": "A"}\n', "utf-8")
    assert main([*_base(files), "--corpus", str(plain), "-m", "stale@2"]) == 2
    err = capsys.readouterr().err
    assert f"{plain} gives no document 'superseded_by' or 'status' metadata" in err


def test_forbidden_at_k_from_a_tenant_corpus_alone_is_refused_qrels_have_no_context(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scoped = tmp_path / "scoped.jsonl"
    scoped.write_text('{"_id": "a", "text": "A", "tenant": "acme"}\n', "utf-8")
    assert main([*_base(files), "--corpus", str(scoped), "-m", "forbidden@2"]) == 2
    err = capsys.readouterr().err
    assert "qrels carry no query context" in err
    assert "--forbidden FILE" in err


def test_a_bad_forbidden_line_is_named_by_file_and_line(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1 x\nq2 y extra\n", "utf-8")
    assert main([*_base(files), "--forbidden", str(bad), "-m", "forbidden@2"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: expected 2 fields (qid docid), found 3" in err


def test_a_forbidden_document_the_qrels_judge_relevant_is_refused_naming_the_line(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1 x\nq1 a\n", "utf-8")  # a is q1's relevant document (grade 1)
    assert main([*_base(files), "--forbidden", str(bad), "-m", "forbidden@2"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2" in err
    assert "doc 'a' is forbidden, but the qrels judge it relevant (grade 1)" in err


def test_a_forbidden_line_for_a_query_without_qrels_is_warned_naming_file_line_and_query(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # q9 has no qrels line: evaluate scores the judged queries only (q9 is not in the run
    # either), so its two lines count nowhere; q1's x still counts (forbidden@2 as before).
    listed = tmp_path / "listed.tsv"
    listed.write_text("q1 x\nq9 a\nq9 b\n", "utf-8")
    args = [*_base(files), "--forbidden", str(listed), "-m", "forbidden@2", "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        f"pytest-retrieval evaluate: warning: {listed}:2: query 'q9': the qrels have no line "
        "for this query, so it is not evaluated and 2 forbidden lines are ignored (add a qrels "
        "line for it, a grade-0 line makes it a scored no-answer query; or drop the line)\n"
    )
    # q1 x at rank 2 (1/2), q2 and q3 nothing listed: mean 1/6, 1 document in 1 query.
    assert json.loads(captured.out)["leaks"] == {"forbidden@2": {"documents": 1, "queries": 1}}
