"""Filling judgment holes: ``golden pool`` (runs → worksheet) and ``golden merge`` (back).

Every expected row and count below is worked out by hand from the golden set and the runs
written in the test.
"""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import pytest

from pytest_retrieval.cli import main
from pytest_retrieval.errors import InputError
from pytest_retrieval.formats.golden_io import load_golden
from pytest_retrieval.formats.labels import merge, pool
from pytest_retrieval.formats.worksheet import (
    WorksheetRow,
    read_worksheet,
    render_worksheet,
    write_worksheet,
)
from pytest_retrieval.golden.model import GoldenSet, Label, Query

GOLDEN = """\
version: 1
queries:
  - id: q1
    text: How long is the refund window?
    relevant: {refund-policy: 2, shipping: 0}
  - id: q2
    text: How do I reset my password?
    relevant: [password-reset]
  - id: q3
    text: What does the Team plan cost?
    relevant: [pricing]
    split: heldout
"""


def _golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.yaml"
    path.write_text(GOLDEN, encoding="utf-8")
    return path


def _run(tmp_path: Path, name: str, rankings: dict[str, list[str]]) -> Path:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(
        "".join(json.dumps({"query_id": q, "ranking": r}) + "\n" for q, r in rankings.items()),
        encoding="utf-8",
    )
    return path


CURRENT = {
    "q1": ["refund-policy", "returns", "shipping", "faq", "deep"],
    "q2": ["login-help", "password-reset", "faq"],
    "q3": ["pricing", "plans"],
    "ghost": ["x"],
}
OTHER = {
    "q1": ["returns", "refund-policy", "warranty"],
    "q2": ["faq", "sso"],
}


def test_pool_lists_exactly_the_unjudged_top_n_of_every_run_once() -> None:
    golden = load_golden_text()
    found = pool(golden, [("current", CURRENT), ("other", OTHER)], depth=3)
    rows = [(r.query_id, r.doc_id, r.surfaced_by) for r in found.rows]
    # q1 top 3: current refund-policy (judged), returns, shipping (judged 0); other returns,
    # refund-policy, warranty. Unjudged: returns (both runs) and warranty (other, rank 3).
    # q2 top 3: current login-help, password-reset (judged), faq; other faq, sso.
    # faq: two runs (best rank 1); login-help: rank 1, one run; sso: rank 2, one run.
    # q3 is held out; "deep" is below the depth; "ghost" is not in the golden set.
    assert rows == [
        ("q1", "returns", (("other", 1), ("current", 2))),
        ("q1", "warranty", (("other", 3),)),
        ("q2", "faq", (("other", 1), ("current", 3))),
        ("q2", "login-help", (("current", 1),)),
        ("q2", "sso", (("other", 2),)),
    ]
    assert all(r.grade is None and r.labeled_by is None for r in found.rows)
    assert (found.unknown_queries, found.heldout_left_out, found.queries) == (("ghost",), 1, 2)
    assert found.rows[0].query == "How long is the refund window?"
    held = pool(golden, [("current", CURRENT)], depth=3, include_heldout=True)
    assert [(r.query_id, r.doc_id) for r in held.rows if r.query_id == "q3"] == [("q3", "plans")]


def load_golden_text() -> GoldenSet:
    import yaml

    from pytest_retrieval.formats.golden_parsed import Parsed
    from pytest_retrieval.formats.golden_schema import SchemaReader

    parsed = Parsed(source="golden.yaml")
    SchemaReader(parsed).read_document(yaml.safe_load(GOLDEN))
    assert not parsed.problems
    return GoldenSet(tuple(parsed.queries))


def test_prefill_grades_rows_and_marks_them_machine_made() -> None:
    golden = load_golden_text()

    def judge(
        qid: str, text: str | None, doc: str, title: str | None, body: str | None
    ) -> int | None:
        return None if doc == "sso" else int(doc == "faq")

    found = pool(golden, [("other", OTHER)], depth=2, prefill=judge, prefill_name="m:judge")
    graded = {(r.doc_id, r.grade, r.labeled_by) for r in found.rows}
    assert graded == {
        ("returns", 0, "machine:m:judge"),
        ("faq", 1, "machine:m:judge"),
        ("sso", None, None),
    }

    def bad(qid: str, text: str | None, doc: str, title: str | None, body: str | None) -> int:
        return -1

    with pytest.raises(InputError, match="expected an integer grade from 0 to 1000, or None"):
        pool(golden, [("other", OTHER)], depth=1, prefill=bad, prefill_name="m:bad")  # type: ignore[arg-type]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".yaml"])
def test_a_worksheet_round_trips(tmp_path: Path, suffix: str) -> None:
    rows = [
        WorksheetRow(
            "q1",
            "returns",
            None,
            None,
            'How long, "exactly"?',
            "Returns",
            "a, b\nc",
            (("other", 1), ("current", 2)),
        ),
        WorksheetRow("q2", "faq", 1, "machine:m:judge"),
    ]
    path = tmp_path / f"sheet{suffix}"
    write_worksheet(rows, path)
    back, problems = read_worksheet(path)
    assert problems == []
    assert [
        (r.query_id, r.doc_id, r.grade, r.labeled_by, r.query, r.title, r.text) for r in back
    ] == [
        ("q1", "returns", None, None, 'How long, "exactly"?', "Returns", "a, b\nc"),
        ("q2", "faq", 1, "machine:m:judge", None, None, None),
    ]
    if suffix == ".csv":
        header = path.read_text(encoding="utf-8").splitlines()[0]
        assert header.startswith("query_id,doc_id,grade,")
        assert "other:1 current:2" in render_worksheet(rows, "csv")


def test_merge_adds_graded_rows_with_provenance_and_skips_blank_ones() -> None:
    golden = load_golden_text()
    rows = [
        WorksheetRow("q1", "returns", 1, line=2),
        WorksheetRow("q1", "warranty", None, line=3),
        WorksheetRow("q2", "faq", 0, "machine:m:judge", line=4),
        WorksheetRow("q1", "shipping", 0, line=5),  # agrees with the golden set
    ]
    result = merge(golden, rows, labeled_by="alice", labeled_at="2024-05-01T10:00:00Z")
    assert (result.added, result.changed, result.unchanged, result.blank) == (2, 0, 1, 1)
    assert (result.machine, result.changed_queries) == (1, ("q1", "q2"))
    q1 = result.golden["q1"]
    assert dict(q1.judgments) == {"refund-policy": 2, "shipping": 0, "returns": 1}
    assert q1.provenance == {"returns": Label("alice", "2024-05-01T10:00:00Z")}
    assert result.golden["q2"].provenance["faq"].is_machine
    assert result.golden.fingerprint != golden.fingerprint
    # Nothing graded: the same labels, the same fingerprint.
    same = merge(golden, rows[1:2], labeled_by="alice", labeled_at=None)
    assert same.golden.fingerprint == golden.fingerprint


def test_merge_reports_every_conflict_at_once_and_merges_nothing() -> None:
    golden = load_golden_text()
    rows = [
        WorksheetRow("q1", "shipping", 2, line=2),  # golden set says 0
        WorksheetRow("nope", "x", 1, line=3),  # unknown query
        WorksheetRow("q2", "faq", 1, line=4),
        WorksheetRow("q2", "faq", 0, line=5),  # contradicts line 4
    ]
    with pytest.raises(InputError) as caught:
        merge(golden, rows, labeled_by="alice", labeled_at=None, source="sheet.csv")
    found = {(p.line, p.query_id, p.message) for p in caught.value.problems}
    assert found == {
        (2, "q1", "doc 'shipping' is graded 2 in the worksheet but 0 in the golden set"),
        (3, "nope", "unknown query id (doc 'x')"),
        (5, "q2", "doc 'faq' is graded 0 here and 1 on line 4"),
    }
    overwritten = merge(golden, rows[:1], labeled_by="bob", labeled_at=None, overwrite=True)
    assert overwritten.golden["q1"].judgments["shipping"] == 2
    assert overwritten.changed == 1


def test_bad_grades_in_a_worksheet_are_listed_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text(
        "query_id,doc_id,grade\nq1,a,1\nq1,b,two\nq1,c,-1\nq1,d,\nq1,,1\n", encoding="utf-8"
    )
    rows, problems = read_worksheet(path)
    assert [(r.doc_id, r.grade) for r in rows] == [("a", 1), ("d", None)]
    assert [(p.line, p.message) for p in problems] == [
        (3, "grade 'two' is not an integer"),
        (4, "grade '-1' is not an integer"),
        (6, "the row has no query_id or no doc_id"),
    ]
    missing = tmp_path / "nogrades.csv"
    missing.write_text("query_id,doc_id\nq1,a\n", encoding="utf-8")
    with pytest.raises(InputError, match="no grade column"):
        read_worksheet(missing)


def test_the_commands_pool_fill_and_merge_round_trip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = _golden(tmp_path)
    current = _run(tmp_path, "current", CURRENT)
    other = _run(tmp_path, "other", OTHER)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"_id": "returns", "title": "Returns", "text": "Send it back."}) + "\n",
        encoding="utf-8",
    )
    sheet = tmp_path / "sheet.csv"
    argv = ["golden", "pool", str(current), str(other), "--depth", "3", "--golden", str(golden)]
    assert main([*argv, "--corpus", str(corpus), "--output", str(sheet)]) == 0
    out = capsys.readouterr().out
    assert "wrote 5 unjudged documents of 2 queries (2 runs, top 3)" in out
    assert "1 held-out queries left out" in out
    assert "1 query ids of the runs are not in the golden set (ignored): ghost" in out
    with sheet.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [(r["query_id"], r["doc_id"], r["grade"]) for r in table][:2] == [
        ("q1", "returns", ""),
        ("q1", "warranty", ""),
    ]
    assert (table[0]["title"], table[0]["text"], table[0]["runs"]) == (
        "Returns",
        "Send it back.",
        "2",
    )
    # Fill in three grades, leave two blank.
    for row, grade in zip(table, ["1", "", "0", "1", ""]):
        row["grade"] = grade
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    merged = tmp_path / "merged.yaml"
    code = main(
        [
            "golden",
            "merge",
            str(golden),
            str(sheet),
            "--output",
            str(merged),
            "--labeled-by",
            "alice",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "merged 3 judgments" in out
    assert "2 blank rows skipped" in out
    assert "2 queries changed: q1, q2" in out
    new = load_golden(merged)
    assert dict(new["q1"].judgments) == {"refund-policy": 2, "shipping": 0, "returns": 1}
    assert dict(new["q2"].judgments) == {"password-reset": 1, "faq": 0, "login-help": 1}
    assert new["q1"].provenance["returns"].by == "alice"
    # Pool again from the merged set: only the two blank rows are left.
    again = tmp_path / "again.jsonl"
    assert main([*argv[:-1], str(merged), "--output", str(again)]) == 0
    rows, _ = read_worksheet(again)
    assert [(r.query_id, r.doc_id) for r in rows] == [("q1", "warranty"), ("q2", "sso")]
    # golden stats counts the provenance.
    capsys.readouterr()
    assert main(["golden", "stats", str(merged), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["provenance"] == {
        "judgments": 7,
        "with_provenance": 3,
        "machine": 0,
        "human": 3,
        "by": {"alice": 3},
    }


def test_merge_refuses_a_conflicting_worksheet_listing_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = _golden(tmp_path)
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        textwrap.dedent(
            """\
            query_id,doc_id,grade
            q1,shipping,2
            q9,x,1
            q2,faq,high
            """
        ),
        encoding="utf-8",
    )
    out = tmp_path / "merged.yaml"
    assert main(["golden", "merge", str(golden), str(sheet), "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert "3 problems, nothing merged" in err
    assert f"{sheet}:4:" in err
    assert "doc 'shipping' is graded 2 in the worksheet but 0 in the golden set" in err
    assert "unknown query id" in err
    assert "grade 'high' is not an integer" in err
    assert not out.exists()


def test_pool_reads_a_baseline_s_stored_rankings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_retrieval.regression.baseline import dump_baseline
    from pytest_retrieval.regression.snapshot import build_snapshot
    from pytest_retrieval.scoring.evaluate import evaluate

    golden = load_golden_text()
    visible = golden.where(lambda q: q.split != "heldout")
    run = {q.id: CURRENT[q.id] for q in visible}
    snapshot = build_snapshot(
        visible,
        {"retriever": evaluate(run, visible.qrels(), ["mrr"])},
        lambda qid, stage: tuple(run[qid]),
        metric_names=["mrr"],
        settings={"gain": "exponential", "min_grade": 1, "no_relevant": "skip", "depth": 4},
    )
    path = tmp_path / "retrieval-baseline.json"
    path.write_text(dump_baseline(snapshot), encoding="utf-8")
    sheet = tmp_path / "sheet.yaml"
    argv = ["golden", "pool", str(path), "--depth", "10", "--golden", str(_golden(tmp_path))]
    assert main([*argv, "--output", str(sheet)]) == 0
    rows, _ = read_worksheet(sheet)
    # The baseline keeps each ranking whole, as scored, past its depth (4): q1's "deep" (rank
    # 5) is pooled too.
    assert [(r.query_id, r.doc_id) for r in rows] == [
        ("q1", "returns"),
        ("q1", "faq"),
        ("q1", "deep"),
        ("q2", "login-help"),
        ("q2", "faq"),
    ]


def test_pool_says_when_a_version_2_baseline_keeps_rankings_shallower_than_the_depth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    from pytest_retrieval.regression.baseline import dump_baseline
    from pytest_retrieval.regression.snapshot import build_snapshot
    from pytest_retrieval.scoring.evaluate import evaluate

    golden = load_golden_text()
    visible = golden.where(lambda q: q.split != "heldout")
    # A version-2 baseline kept each ranking cut at its depth (4): what it holds is all pool gets.
    run = {q.id: CURRENT[q.id][:4] for q in visible}
    snapshot = build_snapshot(
        visible,
        {"retriever": evaluate(run, visible.qrels(), ["mrr"])},
        lambda qid, stage: tuple(run[qid]),
        metric_names=["mrr"],
        settings={"gain": "exponential", "min_grade": 1, "no_relevant": "skip", "depth": 4},
    )
    path = tmp_path / "retrieval-baseline.json"
    path.write_text(dump_baseline(dataclasses.replace(snapshot, schema_version=2)), "utf-8")
    argv = ["golden", "pool", str(path), "--depth", "10", "--golden", str(_golden(tmp_path))]
    assert main([*argv, "--output", str(tmp_path / "sheet.yaml")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        f"note: {path} keeps rankings to depth 4 only, so it is pooled to 4, not 10 (refresh "
        "the baseline: one written now keeps whole rankings)"
    ) in out


def test_provenance_is_refused_for_a_document_without_judgment() -> None:
    with pytest.raises(Exception, match="provenance names 'x', which has no judgment"):
        Query("q", "t", {"a": 1}, provenance={"x": Label("alice")})


def test_the_pool_command_prefills_with_a_user_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_judge.py").write_text(
        "def judge(query_id, text, doc_id, title, body):\n"
        "    return 2 if doc_id == 'returns' else None\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    golden = _golden(tmp_path)
    other = _run(tmp_path, "other", OTHER)
    sheet = tmp_path / "sheet.csv"
    argv = ["golden", "pool", str(other), "--depth", "1", "--golden", str(golden)]
    assert main([*argv, "--prefill", "my_judge:judge", "--output", str(sheet)]) == 0
    assert "1 pre-graded by my_judge:judge" in capsys.readouterr().out
    rows, _ = read_worksheet(sheet)
    assert [(r.doc_id, r.grade, r.labeled_by) for r in rows] == [
        ("returns", 2, "machine:my_judge:judge"),
        ("faq", None, None),
    ]
    merged = tmp_path / "merged.yaml"
    assert main(["golden", "merge", str(golden), str(sheet), "--output", str(merged)]) == 0
    assert "1 machine-made" in capsys.readouterr().out
    assert main(["golden", "stats", str(merged)]) == 0
    assert "judgments with provenance: 1 of 5 (1 machine-made, 0 by people)" in (
        capsys.readouterr().out
    )
