"""A query's context in the golden set: every format reads it, the writers write it back, the
fingerprint counts it, and a value that is not plain data is refused where it is written.

Expected fingerprints are sha256 digests of the serialisation docs/golden-sets.md documents,
written out by hand here, never taken from our own output.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import textwrap
from pathlib import Path

import pytest

from pytest_retrieval.errors import GoldenSetError
from pytest_retrieval.formats.golden_io import load_golden, write_golden
from pytest_retrieval.formats.labels import merge
from pytest_retrieval.formats.worksheet import WorksheetRow
from pytest_retrieval.golden.context import context_digest, context_json
from pytest_retrieval.golden.model import GoldenSet, Query, compute_fingerprint

CONTEXT = {
    "tenant": "acme",
    "groups": ["support", "billing"],
    "user": {"id": 7, "admin": False, "weight": 1.5, "team": None},
    "history": [{"role": "user", "text": "hi"}],
}

YAML = """\
version: 1
queries:
  - id: refund
    text: How long is the refund window?
    relevant: [refund-policy]
    context:
      tenant: acme
      groups: [support, billing]
      user: {id: 7, admin: false, weight: 1.5, team: null}
      history:
        - {role: user, text: hi}
  - id: plain
    text: Where are invoices?
    relevant: [invoices]
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _problems(path: Path) -> list[tuple[int | None, str | None, str | None, str]]:
    with pytest.raises(GoldenSetError) as caught:
        load_golden(path)
    return [(p.line, p.query_id, p.field, p.message) for p in caught.value.problems]


# --- the model --------------------------------------------------------------------------------


def test_a_set_without_contexts_keeps_the_fingerprint_the_docs_give() -> None:
    # docs/golden-sets.md: the canonical serialisation of this one query, hashed by hand.
    documented = (
        '[{"id":"q1","judgments":{"a":0,"b":2},"slices":["x"],"split":"tune","text":"Hi?"}]'
    )
    expected = hashlib.sha256(documented.encode()).hexdigest()
    assert compute_fingerprint([Query("q1", "Hi?", {"b": 2, "a": 0}, ["x"])]) == expected
    # An empty context is no context.
    assert (
        compute_fingerprint([Query("q1", "Hi?", {"b": 2, "a": 0}, ["x"], context={})]) == expected
    )


def test_a_context_is_in_the_fingerprint_as_the_docs_write_it() -> None:
    query = Query("q1", "Hi?", {"b": 2, "a": 0}, ["x"], context={"tenant": "acme", "n": 1})
    documented = (
        '[{"context":{"n":1,"tenant":"acme"},"id":"q1","judgments":{"a":0,"b":2},'
        '"slices":["x"],"split":"tune","text":"Hi?"}]'
    )
    assert compute_fingerprint([query]) == hashlib.sha256(documented.encode()).hexdigest()


@pytest.mark.parametrize(
    "other",
    [
        {"tenant": "globex", "n": 1},  # another tenant
        {"tenant": "acme", "n": 1.0},  # 1.0 is not 1 to a retriever
        {"tenant": "acme", "n": True},  # nor is true
        {"tenant": "acme", "n": 1, "history": ["hello"]},  # a history added
    ],
)
def test_any_change_of_the_context_changes_the_fingerprint(other: dict[str, object]) -> None:
    base = Query("q1", "Hi?", ["a"], context={"tenant": "acme", "n": 1})
    changed = Query("q1", "Hi?", ["a"], context=other)
    assert compute_fingerprint([base]) != compute_fingerprint([changed])


def test_the_canonical_text_and_digest_of_a_context() -> None:
    text = '{"groups":["support"],"tenant":"acme"}'
    assert context_json({"tenant": "acme", "groups": ["support"]}) == text
    assert context_digest({"tenant": "acme", "groups": ["support"]}) == (
        hashlib.sha256(text.encode()).hexdigest()
    )
    assert context_json({}) is None
    assert context_json(None) is None
    assert context_digest({}) is None


def test_a_query_keeps_its_context_read_only_and_pickles_with_it() -> None:
    query = Query("q1", "Hi?", ["a"], context=CONTEXT)
    assert query.context["groups"] == ("support", "billing")
    with pytest.raises(TypeError):
        query.context["tenant"] = "globex"  # type: ignore[index]
    CONTEXT["groups"].append("sales")  # the caller's own dict changes nothing in the query
    try:
        assert query.context["groups"] == ("support", "billing")
    finally:
        CONTEXT["groups"].pop()
    again = pickle.loads(pickle.dumps(query))
    assert again == query
    assert context_json(again.context) == context_json(query.context)
    assert query != Query("q1", "Hi?", ["a"], context={"tenant": "globex"})


def test_a_golden_set_names_the_keys_its_contexts_use() -> None:
    golden = GoldenSet(
        (
            Query("a", "one", ["d"], context={"tenant": "acme", "user": "u1"}),
            Query("b", "two", ["d"]),
            Query("c", "three", ["d"], context={"tenant": "globex", "locale": "de"}),
        )
    )
    assert golden.context_keys == ("locale", "tenant", "user")
    assert GoldenSet((Query("a", "one", ["d"]),)).context_keys == ()


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ("acme", "context must be a mapping, got 'acme'"),
        ({"tenant": {1, 2}}, "context.tenant: set {1, 2} is not plain data"),
        ({"tenant": b"acme"}, "context.tenant: bytes b'acme' is not plain data"),
        ({"n": float("nan")}, "context.n: nan is not a finite number"),
        ({"n": [1, float("inf")]}, "context.n[1]: inf is not a finite number"),
        ({3: "x"}, "context has the key 3: keys must be non-blank strings"),
        ({" ": "x"}, "context has the key ' ': keys must be non-blank strings"),
        ({"u": {True: "x"}}, "context.u has the key True: keys must be non-blank strings"),
        ({"t": "\ud800"}, "context.t: the text contains a lone surrogate (U+D800)"),
    ],
)
def test_a_context_from_code_that_is_not_plain_data_is_refused(
    context: object, message: str
) -> None:
    with pytest.raises(GoldenSetError) as caught:
        Query("q1", "Hi?", ["a"], context=context)  # type: ignore[arg-type]
    [problem] = caught.value.problems
    assert (problem.query_id, problem.field) == ("q1", "context")
    assert problem.message.startswith(message)
    assert problem.fix


def test_a_context_that_contains_itself_or_nests_too_deep_is_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(GoldenSetError, match=r"context\.l\[0\] contains itself"):
        Query("q1", "Hi?", ["a"], context={"l": loop})
    deep: dict[str, object] = {}
    node = deep
    for _ in range(40):
        node["d"] = {}
        node = node["d"]  # type: ignore[assignment]
    with pytest.raises(GoldenSetError, match="nests more than 32 levels deep"):
        Query("q1", "Hi?", ["a"], context=deep)


def test_merging_labels_keeps_the_context() -> None:
    golden = GoldenSet((Query("q1", "Hi?", ["a"], context={"tenant": "acme"}),))
    merged = merge(golden, [WorksheetRow("q1", "b", 2)], labeled_by="alice", labeled_at=None)
    assert dict(merged.golden["q1"].judgments) == {"a": 1, "b": 2}
    assert dict(merged.golden["q1"].context) == {"tenant": "acme"}


# --- every format reads it, the writers write it back ---------------------------------------


def test_yaml_reads_the_context_as_plain_data(tmp_path: Path) -> None:
    golden = load_golden(_write(tmp_path, "g.yaml", YAML))
    assert context_json(golden["refund"].context) == context_json(CONTEXT)
    assert golden["plain"].context == {}


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_every_writer_writes_the_context_back_with_the_same_fingerprint(
    tmp_path: Path, suffix: str
) -> None:
    golden = load_golden(_write(tmp_path, "g.yaml", YAML))
    out = tmp_path / f"out{suffix}"
    write_golden(golden, out)
    again = load_golden(out)
    assert again.fingerprint == golden.fingerprint
    assert context_json(again["refund"].context) == context_json(CONTEXT)
    assert again["plain"].context == {}
    assert out.read_text(encoding="utf-8").count("context") == 1  # only the query that has one


def test_a_set_without_contexts_is_written_as_before(tmp_path: Path) -> None:
    golden = GoldenSet((Query("q1", "Hi?", ["a"]),))
    write_golden(golden, tmp_path / "g.jsonl")
    assert (tmp_path / "g.jsonl").read_text(encoding="utf-8") == (
        '{"version": 1}\n'
        '{"id": "q1", "text": "Hi?", "relevant": ["a"], "slices": [], "split": "tune"}\n'
    )


def test_json_and_jsonl_read_the_context(tmp_path: Path) -> None:
    record = {"id": "q1", "text": "Hi?", "relevant": ["a"], "context": CONTEXT}
    document = {"version": 1, "queries": [record]}
    from_json = load_golden(_write(tmp_path, "g.json", json.dumps(document)))
    from_jsonl = load_golden(_write(tmp_path, "g.jsonl", json.dumps(record) + "\n"))
    for golden in (from_json, from_jsonl):
        assert context_json(golden["q1"].context) == context_json(CONTEXT)


def test_csv_reads_a_context_cell_in_both_shapes(tmp_path: Path) -> None:
    cell = json.dumps({"tenant": "acme", "groups": ["support"]}).replace('"', '""')
    per_query = _write(
        tmp_path,
        "q.csv",
        f'id,text,relevant,context\nq1,Hi?,a,"{cell}"\nq2,Bye?,b,\n',
    )
    per_judgment = _write(
        tmp_path,
        "j.csv",
        f'query_id,doc_id,text,context\nq1,a,Hi?,"{cell}"\nq1,c,,\nq2,b,Bye?,\n',
    )
    for path in (per_query, per_judgment):
        golden = load_golden(path)
        assert dict(golden["q1"].context) == {"tenant": "acme", "groups": ("support",)}
        assert golden["q2"].context == {}


def test_beir_reads_a_context_key_and_ignores_metadata(tmp_path: Path) -> None:
    lines = [
        {"_id": "1", "text": "Hi?", "context": {"tenant": "acme"}, "metadata": {"kind": "x"}},
        {"_id": "2", "text": "Bye?", "metadata": {"tenant": "not a context"}},
    ]
    _write(tmp_path, "beir/queries.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    _write(tmp_path, "beir/qrels/test.tsv", "query-id\tcorpus-id\tscore\n1\ta\t1\n2\tb\t1\n")
    golden = load_golden(tmp_path / "beir")
    assert dict(golden["1"].context) == {"tenant": "acme"}
    assert golden["2"].context == {}


# --- bad input: the file, the line, the query and the fix -----------------------------------


def test_yaml_values_that_are_not_plain_data_are_refused_where_written(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "g.yaml",
        """\
        version: 1
        queries:
          - id: q1
            text: Hi?
            relevant: [a]
            context:
              tenant: 0012
              since: 2024-05-01
              score: .nan
              1: one
          - id: q2
            text: Bye?
            relevant: [b]
            context: acme
        """,
    )
    assert _problems(path) == [
        (
            7,
            "q1",
            "context",
            "context.tenant: YAML reads 0012 as the number 10, not the text '0012'",
        ),
        (8, "q1", "context", "context.since: the date 2024-05-01 is not plain data"),
        (9, "q1", "context", "context.score: nan is not a finite number"),
        (10, "q1", "context", "context has the key 1: keys must be non-blank strings"),
        (14, "q2", "context", "'context' must be a mapping of names to plain values, got 'acme'"),
    ]
    with pytest.raises(GoldenSetError) as caught:
        load_golden(path)
    fixes = [p.fix for p in caught.value.problems]
    assert fixes[0] == "quote it ('0012') if it is an id or a code, or write 10"
    assert fixes[1] == "quote it ('2024-05-01') to pass the text"
    assert str(caught.value).startswith(f"{path}: golden set has 5 problems")


def test_a_json_context_problem_names_the_query_by_position(tmp_path: Path) -> None:
    document = {
        "version": 1,
        "queries": [
            {
                "id": "q1",
                "text": "Hi?",
                "relevant": ["a"],
                "context": {"n": [1, {"deep": None}, "x"], "k": 1e999},
            }
        ],
    }
    path = _write(tmp_path, "g.json", json.dumps(document).replace("Infinity", "1e999"))
    [problem] = [p for p in _problems(path)]
    assert problem[1:] == ("q1", "queries[0].context", "context.k: inf is not a finite number")


def test_csv_refuses_a_cell_that_is_not_json_and_a_column_per_key(tmp_path: Path) -> None:
    bad_cell = _write(tmp_path, "bad.csv", 'id,text,relevant,context\nq1,Hi?,a,"{tenant: acme}"\n')
    [(line, qid, field, message)] = _problems(bad_cell)
    assert (line, qid, field) == (2, "q1", "context")
    assert message.startswith("the context cell is not valid JSON")
    per_key = _write(tmp_path, "keys.csv", "id,text,relevant,context.tenant\nq1,Hi?,a,acme\n")
    with pytest.raises(GoldenSetError) as caught:
        load_golden(per_key)
    [problem] = caught.value.problems
    assert problem.message == "unknown column 'context.tenant'"
    assert problem.fix is not None
    assert "one JSON object in the context column" in problem.fix


def test_csv_refuses_two_different_contexts_for_one_query(tmp_path: Path) -> None:
    one = json.dumps({"tenant": "acme", "n": 1}).replace('"', '""')
    other = json.dumps({"tenant": "acme", "n": True}).replace('"', '""')  # equal to Python
    path = _write(
        tmp_path, "j.csv", f'query_id,doc_id,text,context\nq1,a,Hi?,"{one}"\nq1,b,,"{other}"\n'
    )
    assert _problems(path) == [(3, "q1", "context", "context differs from the one given on line 2")]


def test_beir_refuses_a_bad_context_on_its_line(tmp_path: Path) -> None:
    lines = [{"_id": "1", "text": "Hi?", "context": {"tenant": [1, {"x": float("nan")}]}}]
    _write(tmp_path, "beir/queries.jsonl", json.dumps(lines[0]) + "\n")
    _write(tmp_path, "beir/qrels/test.tsv", "1\ta\t1\n")
    with pytest.raises(GoldenSetError) as caught:
        load_golden(tmp_path / "beir")
    [problem] = caught.value.problems  # and not "query is not in queries.jsonl" besides
    assert (problem.source, problem.line, problem.query_id) == (
        str(tmp_path / "beir" / "queries.jsonl"),
        1,
        "1",
    )
    assert problem.message == "context.tenant[1].x: nan is not a finite number"


# --- the console script -----------------------------------------------------------------------


def test_golden_convert_carries_the_context_and_stats_count_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_retrieval.cli import main

    cell = json.dumps({"tenant": "acme", "history": ["hi"]}).replace('"', '""')
    source = _write(tmp_path, "g.csv", f'id,text,relevant,context\nq1,Hi?,a,"{cell}"\nq2,Bye?,b,\n')
    assert main(["golden", "convert", str(source), str(tmp_path / "g.yaml")]) == 0
    converted = load_golden(tmp_path / "g.yaml")
    assert converted.fingerprint == load_golden(source).fingerprint
    assert dict(converted["q1"].context) == {"tenant": "acme", "history": ("hi",)}
    capsys.readouterr()
    assert main(["golden", "stats", str(tmp_path / "g.yaml"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["contexts"] == {"queries": 1, "keys": {"history": 1, "tenant": 1}}
    assert main(["golden", "stats", str(tmp_path / "g.yaml")]) == 0
    assert "queries with a context: 1 (keys: history 1, tenant 1)" in capsys.readouterr().out
    plain = _write(
        tmp_path, "plain.yaml", "version: 1\nqueries:\n  - {id: q, text: t, relevant: [a]}\n"
    )
    assert main(["golden", "stats", str(plain), "--json"]) == 0
    assert "contexts" not in json.loads(capsys.readouterr().out)
