"""Golden-set validation: every problem in one pass, each with its location and its fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_retrieval.errors import GoldenSetError, Problem
from pytest_retrieval.formats.golden_io import load_golden


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _problems(path: Path, **kwargs: object) -> list[Problem]:
    with pytest.raises(GoldenSetError) as info:
        load_golden(path, **kwargs)  # type: ignore[arg-type]
    assert str(path) in str(info.value)
    return list(info.value.problems)


def _only(path: Path, **kwargs: object) -> Problem:
    problems = _problems(path, **kwargs)
    assert len(problems) == 1, problems
    return problems[0]


def _yaml(tmp_path: Path, queries: str, head: str = "version: 1\n") -> Path:
    return _write(tmp_path, "golden.yaml", head + "queries:\n" + textwrap.dedent(queries))


# --- syntax ---------------------------------------------------------------------------------


def test_a_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.yaml",
        """\
        version: 1
        queries:
          - id: a
            text: what: now
            relevant: []
        """,
    )
    problem = _only(path)
    # Line 4 is "    text: what: now"; the second ':' is at column 15.
    assert (problem.source, problem.line, problem.column) == (str(path), 4, 15)
    assert "the golden set is not valid YAML" in problem.message
    assert problem.fix
    assert "quote" in problem.fix
    assert f"{path}:4:15" in str(problem)


def test_a_json_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.json", '{"version": 1,\n "queries": [\n  {"id": "a",, }\n]}\n')
    problem = _only(path)
    assert (problem.line, problem.column) == (3, 14)
    assert "the golden set is not valid JSON" in problem.message
    assert problem.fix
    assert "comma" in problem.fix


def test_a_jsonl_syntax_error_does_not_hide_problems_on_other_lines(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.jsonl",
        """\
        {"id": "a", "text": "first", "relevant": []}
        {"id": "b", "text": "second", "relevant": [}
        {"id": "c", "text": "third", "relevant": [], "slice": ["x"]}
        """,
    )
    problems = _problems(path)
    assert [(p.line, p.query_id) for p in problems] == [(2, None), (3, "c")]
    assert problems[0].column == 44  # the "}" after "["
    assert problems[1].fix == "did you mean 'slices'?"


# --- ids and text ---------------------------------------------------------------------------


def test_a_duplicate_query_id_names_both_lines(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: [d]
        - id: b
          text: second
          relevant: [d]
        - id: a
          text: third
          relevant: [d]
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.query_id, problem.field) == (9, "a", "id")
    assert "already used on line 3" in problem.message
    assert problem.fix
    assert "unique id" in problem.fix


def test_a_duplicate_id_is_found_even_when_the_query_has_other_problems(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: [d]
        - id: a
          text: ""
          relevant: [d]
        """,
    )
    problems = _problems(path)
    assert [(p.line, p.field) for p in problems] == [(7, "text"), (6, "id")]


def test_a_missing_query_id_is_reported_at_the_query(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - text: first
          relevant: [d]
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.field) == (3, "id")
    assert problem.fix
    assert "id:" in problem.fix


def test_missing_text_names_the_query_and_the_fix(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          relevant: [d]
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.query_id, problem.field) == (3, "a", "text")
    assert problem.message == "query has no 'text'"
    assert problem.fix
    assert "text:" in problem.fix


@pytest.mark.parametrize("value", ['""', '"   "', "", "[a, b]"])
def test_blank_or_non_string_text_names_the_line_of_the_text(tmp_path: Path, value: str) -> None:
    path = _yaml(
        tmp_path,
        f"""\
        - id: a
          text: {value}
          relevant: [d]
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.query_id, problem.field) == (4, "a", "text")
    assert problem.fix
    assert "question" in problem.fix


def test_a_boolean_doc_id_is_refused_with_a_hint_about_yaml_booleans(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: [yes, doc-2]
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.column, problem.field) == (5, 14, "relevant")
    assert "boolean" in problem.message
    assert problem.fix
    assert "quote it" in problem.fix


# --- relevant and grades --------------------------------------------------------------------


def test_a_missing_relevant_field_is_an_error_not_a_no_answer_query(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.query_id, problem.field) == (3, "a", "relevant")
    assert problem.fix
    assert "relevant: []" in problem.fix


@pytest.mark.parametrize(
    ("grade", "message", "fix"),
    [
        ('"2"', "got the string '2'", "without quotes"),
        ("1.5", "got 1.5", "whole number"),
        ("2.0", "got 2.0", "write 2"),
        ("-1", "must be >= 0", "leave unjudged documents out"),
        ("true", "boolean", "0 for judged not relevant"),
        ("", "nothing (null)", "whole number"),
    ],
)
def test_a_grade_that_is_not_a_non_negative_integer_names_its_position(
    tmp_path: Path, grade: str, message: str, fix: str
) -> None:
    path = _yaml(
        tmp_path,
        f"""\
        - id: a
          text: first
          relevant: {{good: 1, bad: {grade}}}
        """,
    )
    problem = _only(path)
    # Line 5 is "  relevant: {good: 1, bad: ...}"; "bad" starts at column 23.
    assert (problem.line, problem.column, problem.query_id) == (5, 23, "a")
    assert problem.field == "relevant"
    assert message in problem.message
    assert problem.fix
    assert fix in problem.fix


def test_a_relevant_string_instead_of_a_list_suggests_the_list(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: doc-1
        """,
    )
    problem = _only(path)
    assert problem.line == 5
    assert problem.fix == "write 'relevant: [doc-1]'"


def test_a_doc_listed_twice_is_an_error(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: [d1, d2, d1]
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.column) == (5, 22)
    assert "'d1' is listed twice" in problem.message


# --- field names, version, emptiness --------------------------------------------------------


def test_an_unknown_field_suggests_the_nearest_known_one(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: [d]
          slcies: [x]
          judgments: [d]
          colour: blue
        """,
    )
    problems = _problems(path)
    assert [(p.line, p.field, p.fix) for p in problems] == [
        (6, "slcies", "did you mean 'slices'?"),
        (7, "judgments", "did you mean 'relevant'?"),
        (
            8,
            "colour",
            "known fields are id, text, relevant, slices, split, context, forbidden, provenance",
        ),
    ]


def test_relevent_is_corrected_to_relevant(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevent: [d]
        """,
    )
    problems = _problems(path)
    assert problems[0].field == "relevent"
    assert problems[0].fix == "did you mean 'relevant'?"
    assert problems[0].line == 5
    assert "unknown field 'relevent'" in str(problems[0])


def test_an_unknown_top_level_key_is_reported_with_a_suggestion(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.yaml",
        """\
        version: 1
        corpus-version: x
        queries:
          - {id: a, text: first, relevant: []}
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.field) == (2, "corpus-version")
    assert problem.fix == "did you mean 'corpus_version'?"


def test_an_unknown_version_is_refused_with_the_supported_one(tmp_path: Path) -> None:
    path = _yaml(tmp_path, "  - {id: a, text: first, relevant: []}\n", head="version: 2\n")
    problem = _only(path)
    assert (problem.line, problem.field) == (1, "version")
    assert "unknown golden-set version 2" in problem.message
    assert problem.fix
    assert "version: 1" in problem.fix


def test_a_missing_version_is_an_error(tmp_path: Path) -> None:
    path = _yaml(tmp_path, "  - {id: a, text: first, relevant: []}\n", head="name: x\n")
    problem = _only(path)
    assert problem.field == "version"
    assert problem.fix
    assert "version: 1" in problem.fix


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("golden.yaml", "version: 1\nqueries: []\n"),
        ("golden.yaml", "version: 1\nqueries:\n"),
        ("golden.yaml", "# nothing but a comment\n"),
        ("golden.json", '{"version": 1, "queries": []}'),
        ("golden.jsonl", "\n\n"),
        ("golden.jsonl", '{"version": 1}\n'),
        ("golden.csv", "id,text,relevant\n"),
        ("golden.csv", ""),
        ("qrels.txt", "# only a comment\n"),
    ],
)
def test_an_empty_golden_set_is_an_error(tmp_path: Path, name: str, text: str) -> None:
    problem = _only(_write(tmp_path, name, text))
    assert "empty" in problem.message
    assert problem.fix


# --- leakage and names ----------------------------------------------------------------------


def test_the_same_text_in_two_splits_is_leakage(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: How long is the refund window?
          relevant: [d]
        - id: b
          text: "how long is the  REFUND window"
          relevant: [d]
          split: heldout
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.query_id, problem.field) == (6, "b", "text")
    assert "leakage" in problem.message
    assert "'a' (on line 3)" in problem.message
    assert "'heldout'" in problem.message
    assert "'tune'" in problem.message
    assert problem.fix
    assert "one split only" in problem.fix


def test_leakage_in_json_names_the_queries_by_position(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.json",
        """\
        {"version": 1, "queries": [
          {"id": "a", "text": "Same text", "relevant": []},
          {"id": "b", "text": "same text!", "relevant": [], "split": "heldout"}
        ]}
        """,
    )
    problem = _only(path)
    assert problem.query_id == "b"
    assert "'a' (by query #1)" in problem.message


def test_a_slice_name_that_is_not_a_plain_identifier_is_refused(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: []
          slices: [multi-hop, "multi hop"]
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.column, problem.field) == (6, 23, "slices")
    assert "'multi hop'" in problem.message
    assert problem.fix
    assert "letters, digits" in problem.fix


def test_a_slices_string_instead_of_a_list_suggests_the_list(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: []
          slices: multi-hop
        """,
    )
    assert _only(path).fix == "write 'slices: [multi-hop]'"


def test_a_split_name_that_is_not_a_plain_identifier_is_refused(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: a
          text: first
          relevant: []
          split: held out
        """,
    )
    problem = _only(path)
    assert (problem.line, problem.field) == (6, "split")
    assert problem.fix
    assert "letters, digits" in problem.fix


def test_a_bad_default_split_is_named_as_defaults_split(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        "  - {id: a, text: first, relevant: []}\n",
        head="version: 1\ndefaults:\n  split: 'x y'\n",
    )
    problem = _only(path)
    assert (problem.line, problem.field) == (3, "defaults.split")


# --- many problems at once ------------------------------------------------------------------


def test_every_problem_is_reported_in_one_pass(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.yaml",
        """\
        version: 3
        queries:
          - id: a
            text: first
            relevent: [d]
          - id: b
            text: ""
            relevant: {d: -2}
            split: "x y"
          - id: a
            text: FIRST
            relevant: []
            split: heldout
        """,
    )
    problems = _problems(path)
    assert [(p.line, p.field) for p in problems] == [
        (1, "version"),
        (5, "relevent"),
        (3, "relevant"),
        (7, "text"),
        (8, "relevant"),
        (9, "split"),
        (10, "id"),
    ]


def test_a_long_problem_list_is_capped_in_the_message(tmp_path: Path) -> None:
    lines = "".join(
        f'{{"id": "q{i}", "text": "t{i}", "relevant": [], "x": 1}}\n' for i in range(60)
    )
    with pytest.raises(GoldenSetError) as info:
        load_golden(_write(tmp_path, "golden.jsonl", lines))
    assert len(info.value.problems) == 60
    assert "... and 10 more problems not listed" in str(info.value)


# --- CSV ------------------------------------------------------------------------------------


def test_an_unknown_csv_column_suggests_the_nearest_one(tmp_path: Path) -> None:
    problem = _only(_write(tmp_path, "golden.csv", "id,text,relevant,slice\nq,t,d,x\n"))
    assert (problem.line, problem.field, problem.fix) == (1, "slice", "did you mean 'slices'?")


def test_a_csv_without_a_recognised_header_explains_both_shapes(tmp_path: Path) -> None:
    problem = _only(_write(tmp_path, "golden.csv", "qid,question\nq,t\n"))
    assert problem.line == 1
    assert problem.fix
    assert "query_id,doc_id" in problem.fix
    assert "id,text,relevant" in problem.fix


def test_a_bad_grade_in_a_csv_row_names_the_row_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.csv", "query_id,doc_id,grade,text\nq,d1,1,t\nq,d2,high,\n")
    problem = _only(path)
    assert (problem.line, problem.query_id, problem.field) == (3, "q", "relevant")
    assert "'high'" in problem.message


def test_conflicting_text_across_judgment_rows_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.csv", "query_id,doc_id,text\nq,d1,one\nq,d2,two\n")
    problem = _only(path)
    assert (problem.line, problem.field) == (3, "text")
    assert "line 2" in problem.message


def test_a_csv_row_with_too_many_cells_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.csv", "id,text,relevant\nq,hello, world,d\n")
    problem = _only(path)
    assert problem.line == 2
    assert problem.fix
    assert "quote" in problem.fix


# --- files that cannot be read --------------------------------------------------------------


def test_a_missing_file_is_a_golden_set_error(tmp_path: Path) -> None:
    problem = _only(tmp_path / "nope.yaml")
    assert problem.message == "no such file or folder"


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_bytes(b"version: 1\nqueries:\n  - id: caf\xe9\n")
    problem = _only(path)
    assert problem.line == 3
    assert problem.fix == "save the file as UTF-8"


def test_python_tags_are_refused_by_the_safe_loader(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        """\
        - id: !!python/object/apply:os.system ["echo hacked"]
          text: first
          relevant: []
        """,
    )
    problems = _problems(path)
    assert problems[0].line == 3
    assert "unsupported YAML tag" in problems[0].message
