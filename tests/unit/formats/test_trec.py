"""Reading TREC qrels and run files the way trec_eval does."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_retrieval.errors import RunFileError
from pytest_retrieval.formats.trec import read_qrels, read_qrels_records, read_run


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_comment_lines_are_skipped_but_a_hash_inside_a_doc_id_is_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "qrels",
        "# a comment line\n1 0 doc#4_17 1\n\n1 0 CR#93 0\n#not-a-comment 0 d 1\n",
    )
    # "#not-a-comment" is a query id: only a first field that is exactly "#" starts a comment.
    assert read_qrels(path) == {"1": {"doc#4_17": 1, "CR#93": 0}, "#not-a-comment": {"d": 1}}


def test_negative_grades_are_kept_as_read(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "1 0 a -1\n1 0 b 2\n")
    assert read_qrels(path) == {"1": {"a": -1, "b": 2}}


def test_qrels_records_carry_their_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "# header\n1 0 a 1\n2 0 b 0\n")
    assert read_qrels_records(path) == [(2, "1", "a", 1), (3, "2", "b", 0)]


def test_every_malformed_qrels_line_is_named_with_its_number(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels", "1 0 a 1\n1 0 b\n1 0 c high\n1 0 a 2\n")
    with pytest.raises(RunFileError) as info:
        read_qrels(path)
    message = str(info.value)
    assert f"{path}:2: expected 4 fields" in message
    assert f"{path}:3: query '1': grade 'high' is not an integer" in message
    assert f"{path}:4: query '1': doc 'a' is judged twice (first on line 1)" in message
    assert len(info.value.problems) == 3


def test_run_order_comes_from_scores_with_trec_evals_tie_break(tmp_path: Path) -> None:
    # The rank column says the opposite order: it is ignored. Ties on 1.0 are broken by doc id
    # descending as strings, so "9" comes before "10" and "b" before "a".
    path = write(
        tmp_path,
        "run",
        "q Q0 10 1 1.0 t\nq Q0 9 2 1.0 t\nq Q0 low 3 0.5 t\nq Q0 top 4 3 t\nq Q0 a 5 1.0 t\n"
        "q Q0 b 6 1.0 t extra fields are ignored\n",
    )
    assert read_run(path) == {"q": ["top", "b", "a", "9", "10", "low"]}


def test_keep_file_order_ignores_the_scores(tmp_path: Path) -> None:
    path = write(tmp_path, "run", "q Q0 x 1 0.1 t\nq Q0 y 2 0.9 t\n")
    assert read_run(path, keep_file_order=True) == {"q": ["x", "y"]}


def test_a_document_listed_twice_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "run", "q Q0 x 1 0.9 t\nq Q0 y 2 0.8 t\nq Q0 x 3 0.7 t\n")
    with pytest.raises(
        RunFileError, match=r"doc 'x' is listed twice for this query \(lines 1 and 3\)"
    ):
        read_run(path)


def test_a_short_run_line_or_a_bad_score_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "run", "q Q0 x 1\nq Q0 y 2 abc t\nq Q0 z 3 nan t\n")
    with pytest.raises(RunFileError) as info:
        read_run(path)
    message = str(info.value)
    assert f"{path}:1: expected at least 6 fields" in message
    assert f"{path}:2: query 'q': score 'abc' is not a number" in message
    assert f"{path}:3: query 'q': score 'nan' is not a number" in message


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match=r"nope\.txt: file not found"):
        read_qrels(tmp_path / "nope.txt")


def test_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match="is a directory"):
        read_run(tmp_path)


def test_a_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1"
    path.write_bytes("1 0 caf\xe9 1\n".encode("latin-1"))
    with pytest.raises(RunFileError, match="not valid UTF-8"):
        read_qrels(path)


def test_the_trec_eval_qrels_have_the_documented_relevant_counts(trec_eval_dir: Path) -> None:
    qrels = read_qrels(trec_eval_dir / "qrels.test")
    assert sum(len(j) for j in qrels.values()) == 3681
    relevant = {q: sum(1 for g in j.values() if g > 0) for q, j in qrels.items()}
    assert relevant == {"301": 474, "302": 77, "303": 10}


def test_the_trec_eval_run_has_500_documents_per_topic(trec_eval_dir: Path) -> None:
    run = read_run(trec_eval_dir / "results.test")
    assert {q: len(r) for q, r in run.items()} == {"301": 500, "302": 500, "303": 500}
