"""Golden-set formats: canonical YAML, JSON, JSONL, CSV, TREC qrels (+ topics) and BEIR."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from paths import SHARED

from pytest_retrieval.errors import GoldenSetError, InputError
from pytest_retrieval.formats.corpus import check_corpus, read_corpus_ids
from pytest_retrieval.formats.golden_io import infer_format, load_golden, write_golden
from pytest_retrieval.golden.model import GoldenSet, Query

TREC = SHARED / "peer-suites" / "trec_eval"
SCIFACT = SHARED / "datasets" / "scifact"

CANONICAL = """\
version: 1
name: acme-help-centre
corpus_version: "2026-11-01"
defaults:
  split: tune
  slices: []
queries:
  - id: refund-window
    text: How long is the refund window?
    relevant: [refund-policy]
    slices: [exact-lookup]
  - id: export-limits
    text: What are the export limits on the Team plan?
    relevant: {plans-and-limits: 3, export-data: 1, billing-faq: 0}
    split: heldout
  - id: fax-support
    text: Can I send invoices by fax?
    relevant: []
    slices: [no-answer]
  - id: sso-and-audit
    text: "Which plans include SSO: and do they keep audit logs?"
    relevant: [sso, audit-log]
    slices: [multi-hop, exact-lookup]
    split: heldout
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _expected_acme() -> tuple[Query, ...]:
    return (
        Query(
            "refund-window", "How long is the refund window?", ["refund-policy"], ["exact-lookup"]
        ),
        Query(
            "export-limits",
            "What are the export limits on the Team plan?",
            {"plans-and-limits": 3, "export-data": 1, "billing-faq": 0},
            (),
            "heldout",
        ),
        Query("fax-support", "Can I send invoices by fax?", [], ["no-answer"]),
        Query(
            "sso-and-audit",
            "Which plans include SSO: and do they keep audit logs?",
            ["sso", "audit-log"],
            ["exact-lookup", "multi-hop"],
            "heldout",
        ),
    )


# --- canonical YAML and its round trips ------------------------------------------------------


def test_the_canonical_yaml_example_loads_with_every_field(tmp_path: Path) -> None:
    golden = load_golden(_write(tmp_path, "golden.yaml", CANONICAL))
    assert golden.queries == _expected_acme()
    assert golden.name == "acme-help-centre"
    assert golden.corpus_version == "2026-11-01"
    assert golden.source == str(tmp_path / "golden.yaml")
    assert golden.heldout_split == "heldout"


def test_yaml_to_jsonl_to_yaml_preserves_everything_and_the_fingerprint(tmp_path: Path) -> None:
    original = load_golden(_write(tmp_path, "golden.yaml", CANONICAL))
    write_golden(original, tmp_path / "golden.jsonl")
    via_jsonl = load_golden(tmp_path / "golden.jsonl")
    write_golden(via_jsonl, tmp_path / "again.yaml")
    again = load_golden(tmp_path / "again.yaml")
    for golden in (via_jsonl, again):
        assert golden.queries == original.queries
        assert golden.name == original.name
        assert golden.corpus_version == original.corpus_version
        assert golden.fingerprint == original.fingerprint


def test_json_round_trips_too(tmp_path: Path) -> None:
    original = load_golden(_write(tmp_path, "golden.yaml", CANONICAL))
    write_golden(original, tmp_path / "golden.json")
    document = json.loads((tmp_path / "golden.json").read_text(encoding="utf-8"))
    assert document["version"] == 1
    assert document["queries"][2]["relevant"] == []
    assert load_golden(tmp_path / "golden.json").queries == original.queries


def test_the_yaml_writer_uses_lists_for_binary_and_mappings_for_graded_labels(
    tmp_path: Path,
) -> None:
    original = load_golden(_write(tmp_path, "golden.yaml", CANONICAL))
    write_golden(original, tmp_path / "out.yaml")
    text = (tmp_path / "out.yaml").read_text(encoding="utf-8")
    assert "relevant: [refund-policy]" in text
    assert "relevant: {plans-and-limits: 3, export-data: 1, billing-faq: 0}" in text
    assert "relevant: []" in text
    assert f"# fingerprint: {original.fingerprint}" in text


def test_awkward_texts_and_ids_survive_a_yaml_round_trip(tmp_path: Path) -> None:
    texts = [
        "yes",
        "null",
        "1.5",
        "a: b",
        "#not a comment",
        "  leading",
        "tab\there",
        "two\nlines",
        "'quoted'",
        '"double"',
        "émoji 🎉",
        "- dash",
    ]
    golden = GoldenSet(
        tuple(
            Query(f"q{i}", text, {"007": 1, "yes": 2, "1.5": 0}, (), "tune")
            for i, text in enumerate(texts)
        )
    )
    write_golden(golden, tmp_path / "tricky.yaml")
    assert load_golden(tmp_path / "tricky.yaml").queries == golden.queries


def test_numeric_ids_in_yaml_become_the_strings_as_written(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "ids.yaml",
        """\
        version: 1
        queries:
          - id: 42
            text: numbered
            relevant: [12, 007, 1_000]
          - id: q2
            text: graded numbers
            relevant: {13: 2}
        """,
    )
    golden = load_golden(path)
    assert golden["42"].judgments == {"12": 1, "007": 1, "1_000": 1}
    assert golden["q2"].judgments == {"13": 2}


def test_defaults_set_the_split_and_add_slices_to_every_query(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "defaults.yaml",
        """\
        version: 1
        defaults:
          split: heldout
          slices: [faq]
        queries:
          - id: a
            text: first
            relevant: [d]
          - id: b
            text: second
            relevant: [d]
            slices: [multi-hop]
            split: tune
        """,
    )
    golden = load_golden(path)
    assert (golden["a"].split, golden["a"].slices) == ("heldout", ("faq",))
    assert (golden["b"].split, golden["b"].slices) == ("tune", ("faq", "multi-hop"))


def test_a_yaml_merge_key_is_resolved(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "merge.yaml",
        """\
        version: 1
        queries:
          - &base
            id: a
            text: first
            relevant: [d]
            slices: [shared]
          - <<: *base
            id: b
            text: second
        """,
    )
    golden = load_golden(path)
    assert golden["b"].slices == ("shared",)
    assert golden["b"].judgments == {"d": 1}


def test_the_heldout_split_name_is_configurable(tmp_path: Path) -> None:
    golden = load_golden(_write(tmp_path, "golden.yaml", CANONICAL), heldout_split="tune")
    assert [q.id for q in golden.heldout()] == ["refund-window", "fax-support"]


# --- JSONL ----------------------------------------------------------------------------------


def test_jsonl_without_a_header_line_loads(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.jsonl",
        """\
        {"id": "a", "text": "first", "relevant": ["d1", "d2"], "slices": ["s"]}

        {"id": "b", "text": "second", "relevant": {"d1": 2, "d3": 0}, "split": "heldout"}
        {"id": "c", "text": "third", "relevant": []}
        """,
    )
    golden = load_golden(path)
    assert [q.id for q in golden] == ["a", "b", "c"]
    assert golden["b"].judgments == {"d1": 2, "d3": 0}
    assert golden["c"].is_no_answer
    assert golden.name is None


def test_a_jsonl_header_line_gives_metadata_and_defaults(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.ndjson",
        """\
        {"version": 1, "name": "n", "corpus_version": "v7", "defaults": {"split": "heldout"}}
        {"id": "a", "text": "first", "relevant": ["d1"]}
        """,
    )
    golden = load_golden(path)
    assert (golden.name, golden.corpus_version, golden["a"].split) == ("n", "v7", "heldout")


# --- CSV ------------------------------------------------------------------------------------


def test_a_csv_with_one_row_per_query_loads_grades_slices_and_no_answer(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.csv",
        """\
        id,text,relevant,slices,split
        refund-window,How long is the refund window?,refund-policy,exact-lookup,
        export-limits,What are the export limits on the Team plan?,"plans-and-limits=3;
          export-data=1; billing-faq=0",,heldout
        fax-support,Can I send invoices by fax?,,no-answer,
        sso-and-audit,"Which plans include SSO: and do they keep audit logs?","sso;
          audit-log",multi-hop;exact-lookup,heldout
        """,
    )
    golden = load_golden(path)
    assert golden.queries == _expected_acme()
    yaml_twin = load_golden(_write(tmp_path, "golden.yaml", CANONICAL))
    assert golden.fingerprint == yaml_twin.fingerprint


def test_a_csv_with_one_row_per_judgment_groups_rows_by_query(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "golden.csv",
        """\
        query_id,doc_id,grade,text,slices,split
        refund-window,refund-policy,1,How long is the refund window?,exact-lookup,
        export-limits,plans-and-limits,3,What are the export limits on the Team plan?,,heldout
        export-limits,export-data,1,,,
        fax-support,,,Can I send invoices by fax?,no-answer,
        sso-and-audit,sso,1,"Which plans include SSO: and do they keep audit logs?","multi-hop;
          exact-lookup",heldout
        export-limits,billing-faq,0,,,heldout
        sso-and-audit,audit-log,1,,,
        """,
    )
    golden = load_golden(path)
    assert golden.queries == _expected_acme()


def test_a_tsv_uses_tabs_and_a_csv_without_grade_column_means_grade_one(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "golden.tsv", "query_id\tdoc_id\ttext\nq1\td1\tHello, world\nq1\td2\t\n"
    )
    golden = load_golden(path)
    assert golden["q1"].judgments == {"d1": 1, "d2": 1}
    assert golden["q1"].text == "Hello, world"


def test_an_excel_bom_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffid,text,relevant\nq1,hello,d1\n".encode())
    assert load_golden(path)["q1"].judgments == {"d1": 1}


# --- TREC qrels ----------------------------------------------------------------------------


def test_the_trec_eval_qrels_load_with_the_right_counts() -> None:
    # Counts from the peer suite's README: 3 topics, 3,681 judgments, relevant 474/77/10.
    golden = load_golden(TREC / "qrels.test")
    assert [q.id for q in golden] == ["301", "302", "303"]
    assert sum(len(q.judgments) for q in golden) == 3681
    assert [len(q.relevant) for q in golden] == [474, 77, 10]
    assert all(q.text is None and q.split == "tune" for q in golden)
    assert golden.texts() == {}


def test_negative_trec_grades_are_read_as_unjudged() -> None:
    # qrels.rel_level: the same 3,681 pairs; 304 are graded -1 ("pooled, not judged").
    golden = load_golden(TREC / "qrels.rel_level", format="trec")
    assert sum(len(q.judgments) for q in golden) == 3681 - 304
    assert [len(q.relevant) for q in golden] == [474, 77, 8]
    assert all(grade >= 0 for q in golden for grade in q.judgments.values())


def test_a_tsv_topics_file_gives_the_query_texts(tmp_path: Path) -> None:
    qrels = _write(tmp_path, "qrels.txt", "1 0 d1 1\n1 0 d2 0\n2 0 d3 2\n")
    topics = _write(tmp_path, "topics.tsv", "1\tfirst  question\n2\tsecond question\n9\tunused\n")
    golden = load_golden(qrels, topics=topics)
    assert golden.texts() == {"1": "first question", "2": "second question"}
    assert golden["2"].judgments == {"d3": 2}


def test_classic_trec_topics_use_the_title_as_text(tmp_path: Path) -> None:
    qrels = _write(tmp_path, "run.qrels", "301 0 d1 1\n302 0 d2 1\n")
    topics = _write(
        tmp_path,
        "topics.301-302",
        """\
        <top>
        <num> Number: 301
        <title> International Organized Crime

        <desc> Description:
        Identify organizations that participate in international criminal activity.
        </top>

        <top>
        <num> Number: 302
        <title> Poliomyelitis and
          Post-Polio
        <desc> Description:
        Is the disease of Poliomyelitis (polio) under control in the world?
        </top>
        """,
    )
    golden = load_golden(qrels, topics=topics)
    assert golden.texts() == {
        "301": "International Organized Crime",
        "302": "Poliomyelitis and Post-Polio",
    }


def test_xml_style_trec_topics_use_the_query_element(tmp_path: Path) -> None:
    qrels = _write(tmp_path, "qrels.web", "201 0 d1 1\n")
    topics = _write(
        tmp_path,
        "topics.xml",
        """\
        <webtrack2013>
        <topic number="201" type="faceted">
          <query>raspberry pi</query>
          <description>What is a raspberry pi?</description>
        </topic>
        </webtrack2013>
        """,
    )
    assert load_golden(qrels, format="trec", topics=topics).texts() == {"201": "raspberry pi"}


def test_a_qrels_query_missing_from_the_topics_is_an_error_at_its_first_line(
    tmp_path: Path,
) -> None:
    qrels = _write(tmp_path, "qrels.txt", "1 0 d1 1\n2 0 d3 2\n")
    topics = _write(tmp_path, "topics.tsv", "1\tfirst\n")
    with pytest.raises(GoldenSetError) as info:
        load_golden(qrels, topics=topics)
    (problem,) = info.value.problems
    assert (problem.line, problem.query_id, problem.field) == (2, "2", "text")
    assert "topics" in str(problem)


def test_qrels_without_topics_cannot_be_written_to_the_canonical_format(tmp_path: Path) -> None:
    golden = load_golden(TREC / "qrels.test")
    with pytest.raises(GoldenSetError, match="without text") as info:
        write_golden(golden, tmp_path / "out.yaml")
    assert "topics file" in str(info.value)
    assert not (tmp_path / "out.yaml").exists()


def test_malformed_qrels_lines_are_reported_as_golden_set_errors(tmp_path: Path) -> None:
    qrels = _write(tmp_path, "qrels.bad", "1 0 d1 1\n1 0 d2\n2 0 d3 x\n")
    with pytest.raises(GoldenSetError) as info:
        load_golden(qrels, format="trec")
    assert [p.line for p in info.value.problems] == [2, 3]


# --- BEIR ----------------------------------------------------------------------------------


def _beir(folder: Path) -> Path:
    _write(
        folder,
        "queries.jsonl",
        """\
        {"_id": "q1", "text": "What is BM25?", "metadata": {}}
        {"_id": "q2", "text": "Who wrote BEIR?"}
        {"_id": "q3", "text": "A train-only query"}
        {"_id": 4, "text": "A numeric id"}
        """,
    )
    _write(folder, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\n4\td3\t1\n")
    _write(folder, "qrels/dev.tsv", "q2\td1\t0\nq2\td4\t1\n")
    _write(
        folder,
        "corpus.jsonl",
        "".join(json.dumps({"_id": f"d{i}", "title": "", "text": "x"}) + "\n" for i in range(1, 5)),
    )
    return folder


def test_a_beir_folder_loads_splits_from_the_qrels_file_names(tmp_path: Path) -> None:
    golden = load_golden(_beir(tmp_path / "beir"), corpus=tmp_path / "beir" / "corpus.jsonl")
    assert [q.id for q in golden] == ["q1", "q2", "4"]  # queries.jsonl order; q3 has no qrels
    assert golden.splits == ("dev", "test")
    assert golden["q1"].judgments == {"d1": 1, "d2": 2}
    assert golden["q2"].split == "dev"
    assert golden["q2"].judgments == {"d1": 0, "d4": 1}
    assert golden["4"].text == "A numeric id"
    assert len(golden.in_split("test")) == 2


def test_a_beir_folder_can_name_its_test_split_as_the_heldout_one(tmp_path: Path) -> None:
    golden = load_golden(_beir(tmp_path / "beir"), heldout_split="test")
    assert [q.id for q in golden.heldout()] == ["q1", "4"]


def test_a_beir_qrels_query_missing_from_queries_jsonl_names_the_qrels_line(
    tmp_path: Path,
) -> None:
    folder = _beir(tmp_path / "beir")
    _write(folder, "qrels/dev.tsv", "q2\td1\t0\nq9\td4\t1\n")
    with pytest.raises(GoldenSetError) as info:
        load_golden(folder)
    (problem,) = info.value.problems
    assert problem.source == str(folder / "qrels" / "dev.tsv")
    assert (problem.line, problem.query_id) == (2, "q9")


def test_scifact_loads_as_a_beir_folder_with_its_corpus() -> None:
    # Counts from the dataset's README: 300 queries, 339 judgments, all score 1, max 5 per query.
    golden = load_golden(SCIFACT, corpus=SCIFACT / "corpus.jsonl")
    assert len(golden) == 300
    assert sum(len(q.judgments) for q in golden) == 339
    assert {g for q in golden for g in q.judgments.values()} == {1}
    assert max(len(q.judgments) for q in golden) == 5
    assert golden.splits == ("tune",)
    assert golden.queries[0].id == "1"
    assert golden.queries[0].text == "0-dimensional biomaterials show inductive properties."


# --- corpus check ---------------------------------------------------------------------------


def test_the_corpus_check_lists_stale_ids_per_query(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.yaml", CANONICAL)
    ids = _write(tmp_path, "ids.txt", "refund-policy\nplans-and-limits\n\nsso\n")
    with pytest.raises(GoldenSetError) as info:
        load_golden(path, corpus=ids)
    problems = info.value.problems
    assert [(p.query_id, p.line) for p in problems] == [
        ("export-limits", 12),
        ("sso-and-audit", 20),
    ]
    assert "'export-data', 'billing-faq'" in problems[0].message
    assert "'audit-log'" in problems[1].message
    assert "2026-11-01" in problems[0].message
    assert problems[0].fix


def test_the_corpus_check_accepts_ids_from_code(tmp_path: Path) -> None:
    golden = load_golden(_write(tmp_path, "golden.yaml", CANONICAL))
    every = {"refund-policy", "plans-and-limits", "export-data", "billing-faq", "sso", "audit-log"}
    check_corpus(golden, every)
    with pytest.raises(GoldenSetError, match="billing-faq"):
        check_corpus(golden, every - {"billing-faq"})


def test_corpus_ids_come_from_a_beir_corpus_jsonl_or_its_folder(tmp_path: Path) -> None:
    folder = _beir(tmp_path / "beir")
    assert read_corpus_ids(folder) == {"d1", "d2", "d3", "d4"}
    assert read_corpus_ids(folder / "corpus.jsonl") == {"d1", "d2", "d3", "d4"}


# --- format inference -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("g.yaml", "yaml"),
        ("g.YML", "yaml"),
        ("g.json", "json"),
        ("g.jsonl", "jsonl"),
        ("g.ndjson", "jsonl"),
        ("g.csv", "csv"),
        ("g.tsv", "csv"),
        ("run.qrels", "trec"),
        ("qrels.test", "trec"),
        ("qrels.dev.txt", "trec"),
    ],
)
def test_the_format_is_inferred_from_the_file_name(name: str, expected: str) -> None:
    assert infer_format(name) == expected


def test_a_folder_is_a_beir_folder(tmp_path: Path) -> None:
    assert infer_format(tmp_path) == "beir"


def test_an_unknown_suffix_asks_for_an_explicit_format(tmp_path: Path) -> None:
    with pytest.raises(GoldenSetError, match="pass the format explicitly"):
        load_golden(_write(tmp_path, "golden.txt", CANONICAL))
    assert len(load_golden(tmp_path / "golden.txt", format="yaml")) == 4


def test_writing_an_unsupported_format_is_refused(tmp_path: Path) -> None:
    golden = GoldenSet((Query("q", "t", []),))
    with pytest.raises(InputError, match="cannot write"):
        write_golden(golden, tmp_path / "golden.csv")
    write_golden(golden, tmp_path / "golden.txt", format="jsonl")
    assert load_golden(tmp_path / "golden.txt", format="jsonl").queries == golden.queries
