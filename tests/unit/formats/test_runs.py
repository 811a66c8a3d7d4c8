"""Run files produced elsewhere (``pytest_retrieval.formats.runs``): TREC as evaluate reads it,
JSONL with optional scores, every bad line named, matching to the golden set, writing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_retrieval.errors import InputError, RunFileError
from pytest_retrieval.formats.runs import (
    RunFile,
    detect_format,
    load_run_file,
    match_run_to_golden,
    write_run_jsonl,
)

SHAPE = '{"query_id": "q1", "ranking": ["doc-1", "doc-2"]}'


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- TREC ------------------------------------------------------------------------------------


def test_a_trec_run_is_ranked_by_score_with_trec_eval_tie_breaks(tmp_path: Path) -> None:
    # q1: scores 1, 3, 3 -> the two 3s first, ties by doc id descending as strings ("9" > "10")
    # whatever the file order or the rank column says.
    path = write(
        tmp_path,
        "run.trec",
        "q1 Q0 a 1 1.0 t\nq1 Q0 10 2 3 t\nq1 Q0 9 3 3 t\nq2 Q0 x 1 0.5 t extra fields\n",
    )
    run = load_run_file(path)
    assert run.format == "trec"
    assert run.rankings == {"q1": ("9", "10", "a"), "q2": ("x",)}
    assert run.scores == {"q1": (3.0, 3.0, 1.0), "q2": (0.5,)}
    assert run.pairs("q1") == [("9", 3.0), ("10", 3.0), ("a", 1.0)]
    assert len(run) == 2
    assert run.source == str(path)


def test_a_bad_trec_line_is_reported_as_evaluate_reports_it(tmp_path: Path) -> None:
    path = write(tmp_path, "run.txt", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2\nq1 Q0 c 3 high t\n")
    with pytest.raises(RunFileError) as info:
        load_run_file(path)
    assert str(info.value) == (
        f"{path}: cannot read run (2 problems):\n"
        f"  - {path}:2: expected at least 6 fields (qid Q0 docid rank score tag), found 4 "
        "(write one ranked document per line)\n"
        f"  - {path}:3: query 'q1': score 'high' is not a number (the fifth field must be the "
        "document's score)"
    )


def test_a_trec_run_without_extension_is_detected_from_its_content(tmp_path: Path) -> None:
    path = write(tmp_path, "nightly", "\n1 Q0 d1 1 2.0 bm25\n")
    assert detect_format(path) == "trec"
    assert load_run_file(path).rankings == {"1": ("d1",)}


# --- JSONL -----------------------------------------------------------------------------------


def test_jsonl_items_may_be_ids_pairs_or_objects_with_optional_scores(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "run.jsonl",
        '{"query_id": "q1", "ranking": ["a", ["b", 2], {"id": 3, "score": 1.5}, {"id": "c"}]}\n'
        "\n"
        '{"query_id": 7, "ranking": []}\n',
    )
    run = load_run_file(path)
    assert run.format == "jsonl"
    assert run.rankings == {"q1": ("a", "b", "3", "c"), "7": ()}
    assert run.scores == {"q1": (None, 2.0, 1.5, None), "7": ()}


def test_jsonl_keeps_the_given_order_even_when_scores_disagree(tmp_path: Path) -> None:
    path = write(tmp_path, "run.jsonl", '{"query_id": "q", "ranking": [["a", 1], ["b", 9]]}\n')
    assert load_run_file(path).rankings == {"q": ("a", "b")}


def test_a_jsonl_run_is_detected_from_its_content(tmp_path: Path) -> None:
    path = write(tmp_path, "run.out", '  {"query_id": "q", "ranking": ["a"]}\n')
    assert detect_format(path) == "jsonl"
    assert load_run_file(path).rankings == {"q": ("a",)}


def test_the_format_can_be_forced(tmp_path: Path) -> None:
    path = write(tmp_path, "run.txt", '{"query_id": "q", "ranking": ["a"]}\n')
    assert load_run_file(path, format="jsonl").rankings == {"q": ("a",)}


def bad_jsonl(tmp_path: Path, line: str) -> str:
    """The single problem reported for a file whose second line is ``line``."""
    path = write(tmp_path, "run.jsonl", '{"query_id": "ok", "ranking": ["a"]}\n' + line + "\n")
    with pytest.raises(RunFileError) as info:
        load_run_file(path)
    assert len(info.value.problems) == 1
    assert info.value.line == 2
    assert info.value.source == str(path)
    return str(info.value.problems[0]).removeprefix(f"{path}:")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "{not json",
            "2:2: the run file is not valid JSON (Expecting property name enclosed in double "
            "quotes) "
            f"(write one JSON object per line: {SHAPE}; look for a missing comma, quote or "
            "bracket)",
        ),
        (
            '["q1", ["a"]]',
            f'2: expected a JSON object, found ["q1", ["a"]] (write one JSON object per line: '
            f"{SHAPE})",
        ),
        (
            '{"ranking": ["a"]}',
            '2: no "query_id"; expected a query id (a non-empty string or an integer) '
            "(give each line the id of its golden-set query)",
        ),
        (
            '{"query_id": "", "ranking": ["a"]}',
            '2: query_id ""; expected a query id (a non-empty string or an integer) '
            "(give each line the id of its golden-set query)",
        ),
        (
            '{"query_id": true, "ranking": ["a"]}',
            "2: query_id true; expected a query id (a non-empty string or an integer) "
            "(give each line the id of its golden-set query)",
        ),
        (
            '{"query_id": "q2"}',
            "2: query 'q2': no \"ranking\"; expected a list of doc ids, [id, score] pairs or "
            f'{{"id": ..., "score": ...}} objects (write e.g. {SHAPE})',
        ),
        (
            '{"query_id": "q2", "ranking": "a b"}',
            "2: query 'q2': ranking \"a b\"; expected a list of doc ids, [id, score] pairs or "
            f'{{"id": ..., "score": ...}} objects (write e.g. {SHAPE})',
        ),
        (
            '{"query_id": "ok", "ranking": ["b"]}',
            "2: query 'ok': the query is listed twice (lines 1 and 2) (a run lists each query "
            "once)",
        ),
        (
            '{"query_id": "q2", "ranking": ["a", 7, "7"]}',
            "2: query 'q2': doc '7' is listed twice in the ranking (items 2 and 3) (a run lists "
            "each document at most once per query)",
        ),
        (
            '{"query_id": "q2", "ranking": [["a", 1, 2]]}',
            "2: query 'q2': ranking item 1: [\"a\", 1, 2] is a list of 3 values, expected "
            '[id, score] (write a doc id, [id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": ["a", {"score": 1}]}',
            '2: query \'q2\': ranking item 2: {"score": 1} has no "id" (write a doc id, '
            '[id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": [{"id": "a", "rank": 1}]}',
            '2: query \'q2\': ranking item 1: {"id": "a", "rank": 1} has the unexpected key(s) '
            'rank (write a doc id, [id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": [["a", "high"]]}',
            '2: query \'q2\': ranking item 1: the score "high" of "a" is not a number (write a '
            'doc id, [id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": [["a", NaN]]}',
            "2: query 'q2': ranking item 1: the score NaN of \"a\" is not a number (write a "
            'doc id, [id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": [["a", true]]}',
            "2: query 'q2': ranking item 1: the score true of \"a\" is not a number (write a "
            'doc id, [id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": [1.5]}',
            "2: query 'q2': ranking item 1: 1.5 is not a doc id, an [id, score] pair or an "
            'object with an id (write a doc id, [id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": [[null, 1]]}',
            "2: query 'q2': ranking item 1: the id null is not a string or an integer (write a "
            'doc id, [id, score] or {"id": ..., "score": ...})',
        ),
        (
            '{"query_id": "q2", "ranking": [""]}',
            "2: query 'q2': ranking item 1: an id is empty (write a doc id, [id, score] or "
            '{"id": ..., "score": ...})',
        ),
    ],
)
def test_every_bad_jsonl_line_is_named_with_what_was_expected(
    tmp_path: Path, line: str, message: str
) -> None:
    assert bad_jsonl(tmp_path, line) == message


def test_every_bad_jsonl_line_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "run.jsonl",
        '{"query_id": "q1", "ranking": ["a"]}\nnope\n{"query_id": "q2", "ranking": [1.5, []]}\n',
    )
    with pytest.raises(RunFileError) as info:
        load_run_file(path)
    assert [(p.line, p.query_id) for p in info.value.problems] == [
        (2, None),
        (3, "q2"),
        (3, "q2"),
    ]
    assert str(info.value).startswith(f"{path}: cannot read run (3 problems):\n")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match=r"run.jsonl: file not found \(check the path\)"):
        load_run_file(tmp_path / "run.jsonl")


def test_a_missing_file_without_extension_is_named_too(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match=r"nightly: file not found"):
        load_run_file(tmp_path / "nightly")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match="the run file path is a directory"):
        load_run_file(tmp_path)


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b'{"query_id": "q\xff", "ranking": []}\n')
    with pytest.raises(RunFileError) as info:
        load_run_file(path)
    assert str(info.value) == (
        # Named by its line and column (the 16th character of line 1), not a buffer offset.
        f"{path}:1:16: the run file is not valid UTF-8 (byte 0xff: invalid start byte) (save "
        "the file as UTF-8)"
    )


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("run.jsonl", f"write one line per query: {SHAPE}"),
        ("run.trec", "write one line per ranked document (qid Q0 docid rank score tag)"),
    ],
)
def test_an_empty_run_file_is_an_error(tmp_path: Path, name: str, fix: str) -> None:
    path = write(tmp_path, name, "\n\n")
    with pytest.raises(RunFileError) as info:
        load_run_file(path)
    fmt = "jsonl" if name.endswith("jsonl") else "trec"
    assert str(info.value) == f"{path}: the run file has no ranked query ({fmt} format) ({fix})"


# --- matching to the golden set --------------------------------------------------------------


def test_missing_judged_queries_get_empty_rankings_and_unknown_ids_are_listed() -> None:
    run = RunFile(
        "r.jsonl",
        "jsonl",
        {"q9": ("x",), "q2": ("b", "a"), "q7": ()},
        {"q9": (None,), "q2": (None, None), "q7": ()},
    )
    match = match_run_to_golden(run, ["q1", "q2", "q3", "q7"])
    assert match.rankings == {"q1": (), "q2": ("b", "a"), "q3": (), "q7": ()}
    assert list(match.rankings) == ["q1", "q2", "q3", "q7"]  # the golden set's order
    assert match.missing == ["q1", "q3"]  # q7 is in the run, with an empty ranking
    assert match.unknown == ["q9"]


def test_matching_accepts_a_plain_mapping_and_compares_ids_exactly() -> None:
    match = match_run_to_golden({"Q1": ["a"], "q1 ": ["b"]}, ["q1"])
    assert match.rankings == {"q1": ()}
    assert match.missing == ["q1"]
    assert match.unknown == ["Q1", "q1 "]


# --- writing ---------------------------------------------------------------------------------


def test_a_written_jsonl_run_reads_back_the_same(tmp_path: Path) -> None:
    path = tmp_path / "out" / "run.jsonl"
    rankings = {"q1": ["a", "b"], "q2": [], "3": ["ü"]}
    write_run_jsonl(path, rankings, {"q1": [2.0, None], "3": None})
    assert path.read_text(encoding="utf-8") == (
        '{"query_id":"q1","ranking":[["a",2.0],"b"]}\n'
        '{"query_id":"q2","ranking":[]}\n'
        '{"query_id":"3","ranking":["ü"]}\n'
    )
    run = load_run_file(path)
    assert run.rankings == {"q1": ("a", "b"), "q2": (), "3": ("ü",)}
    assert run.scores == {"q1": (2.0, None), "q2": (), "3": (None,)}


def test_writing_scores_of_the_wrong_length_fails_and_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"query 'q1': 1 scores for 2 documents"):
        write_run_jsonl(path, {"q1": ["a", "b"]}, {"q1": [1.0]})
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl"]  # no temp file left


def test_writing_into_a_path_whose_folder_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r"cannot write the run file: .*blocker is a file"):
        write_run_jsonl(tmp_path / "blocker" / "run.jsonl", {"q": ["a"]})
