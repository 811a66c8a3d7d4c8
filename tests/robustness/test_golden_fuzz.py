"""Property tests: whatever a golden-set file holds, loading gives a GoldenSet or a
GoldenSetError, never another exception; and valid sets survive every writer unchanged."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_retrieval.errors import GoldenSetError
from pytest_retrieval.formats.golden_io import load_golden, write_golden
from pytest_retrieval.golden.model import GoldenSet, Query

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["tune", "heldout", "multi-hop", "", " ", "yes", "007", "1.5"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    ["id", "text", "relevant", "slices", "split", "relevent", "notes", "version", ""]
)
query_like = st.dictionaries(field_names, json_values, max_size=6)
documents = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"version": st.sampled_from([1, 2, "1", None, True]), "queries": st.lists(query_like)},
        optional={
            "name": json_values,
            "corpus_version": json_values,
            "defaults": st.dictionaries(field_names, json_values, max_size=3),
            "extra": json_values,
        },
    ),
)


def _loads_or_refuses(path: Path, **options: Any) -> None:
    """Loading gives a non-empty GoldenSet or a GoldenSetError listing problems; nothing else."""
    error: GoldenSetError | None = None
    try:
        result = load_golden(path, **options)
    except GoldenSetError as exc:
        error = exc
    if error is not None:
        assert error.problems
        assert str(error)
    else:
        assert isinstance(result, GoldenSet)
        assert len(result) > 0


def _load(name: str, data: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8", errors="surrogatepass")
        _loads_or_refuses(path)


def _yaml_dump(document: Any) -> str:
    import yaml

    return yaml.safe_dump(document, allow_unicode=True)


@FUZZ
@given(documents)
def test_any_json_document_loads_or_raises_a_golden_set_error(document: Any) -> None:
    _load("golden.json", json.dumps(document))


@FUZZ
@given(documents)
def test_any_yaml_document_loads_or_raises_a_golden_set_error(document: Any) -> None:
    _load("golden.yaml", _yaml_dump(document))


@FUZZ
@given(st.lists(st.one_of(query_like, json_values), max_size=5))
def test_any_jsonl_lines_load_or_raise_a_golden_set_error(records: list[Any]) -> None:
    _load("golden.jsonl", "\n".join(json.dumps(record) for record in records))


# Lines that are each plausible in a golden-set YAML file, including anchors, merge keys and
# tags, so that random sequences of them reach deep into the reader.
yaml_lines = st.lists(
    st.sampled_from(
        [
            "version: 1",
            "queries:",
            "  - id: a",
            "    text: t",
            "    relevant: [",
            "    relevant: {a: 1}",
            "  - &a {id: b, text: u, relevant: []}",
            "  - *a",
            "  - <<: *a",
            "    <<: [*a, *a]",
            "&r [*r]",
            "!!python/name:os.system",
            "    id: !!int x",
            "    relevant: !!omap [a: 1]",
            "    text: !!binary aGk=",
            "    split: !!timestamp 2001-12-14",
            "? [a]",
            ": b",
            "- [",
            "{",
            "}",
            ": :",
            "\t",
            "---",
        ]
    ),
    max_size=14,
).map("\n".join)


@FUZZ
@given(
    st.sampled_from(["golden.yaml", "golden.json", "golden.jsonl", "golden.csv", "qrels.txt"]),
    st.one_of(st.text(max_size=200), st.binary(max_size=200), yaml_lines),
)
def test_arbitrary_bytes_and_text_load_or_raise_a_golden_set_error(
    name: str, data: str | bytes
) -> None:
    _load(name, data)


ids = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=10).filter(
    lambda s: s.strip() != ""
)
names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,8}", fullmatch=True)
queries = st.builds(
    lambda qid, text, judgments, slices: (qid, text, judgments, slices),
    ids,
    ids,
    st.one_of(
        st.lists(ids, max_size=4, unique=True),
        st.dictionaries(ids, st.integers(min_value=0, max_value=5), max_size=4),
    ),
    st.lists(names, max_size=3),
)


@FUZZ
@given(st.lists(queries, min_size=1, max_size=6, unique_by=lambda q: q[0]), st.booleans())
def test_valid_golden_sets_round_trip_through_yaml_json_and_jsonl(
    parts: list[tuple[str, str, Any, list[str]]], graded_heldout: bool
) -> None:
    # One split only, so that random texts cannot collide across splits (leakage).
    split = "heldout" if graded_heldout else "tune"
    golden = GoldenSet(
        tuple(Query(qid, text, labels, slices, split) for qid, text, labels, slices in parts),
        name="fuzz",
    )
    with tempfile.TemporaryDirectory() as folder:
        for suffix in ("yaml", "json", "jsonl"):
            path = Path(folder) / f"golden.{suffix}"
            write_golden(golden, path)
            again = load_golden(path)
            assert again.queries == golden.queries
            assert again.fingerprint == golden.fingerprint
            assert again.name == "fuzz"


# --- structured fuzz of the table and folder formats -----------------------------------------
# Random text rarely looks like a CSV header or a qrels line, so these build files of the right
# shape, mostly from plausible cells (so that many files are valid) and sometimes from hostile
# ones: every mix must load or raise a GoldenSetError.


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` about seven times in eight, else ``bad`` (one_of would pick each half the time,
    and a file of several lines would then almost never be valid)."""
    return st.tuples(st.integers(0, 7), good, bad).map(lambda t: t[2] if t[0] == 7 else t[1])


plausible_cells = st.sampled_from(
    ["q1", "q2", "q3", "first question", "second question", "d1", "d2;d3", "d1=2;d2=0", "1"]
)
hostile_cells = st.one_of(
    st.sampled_from(["", " ", "-1", "2.5", "x=", "a;;b", "bad name", '"', "\t", "=", "\ufeff"]),
    st.text(max_size=6),
)
cells = mostly(plausible_cells, hostile_cells)
csv_headers = st.one_of(
    st.just(["id", "text", "relevant"]),
    st.just(["id", "text", "relevant", "slices", "split"]),
    st.just(["query_id", "doc_id", "grade", "text"]),
    st.lists(
        st.sampled_from(
            ["id", "text", "relevant", "slices", "split", "query_id", "doc_id", "grade", "relevent"]
        ),
        min_size=1,
        max_size=6,
    ),
)


def _csv_cell(cell: str, delimiter: str) -> str:
    if any(c in cell for c in (delimiter, '"', "\n", "\r")):
        return '"' + cell.replace('"', '""') + '"'
    return cell


@st.composite
def csv_tables(draw: st.DrawFn) -> list[list[str]]:
    """A header and rows, mostly as wide as the header."""
    header = draw(csv_headers)
    width = len(header) if draw(st.integers(0, 3)) else draw(st.integers(1, 6))
    rows = draw(st.lists(st.lists(cells, min_size=width, max_size=width), min_size=1, max_size=5))
    return [header, *rows]


@FUZZ
@given(csv_tables(), st.sampled_from([("golden.csv", ","), ("golden.tsv", "\t")]))
def test_any_csv_table_loads_or_raises_a_golden_set_error(
    lines: list[list[str]], file: tuple[str, str]
) -> None:
    name, delimiter = file
    text = "\n".join(delimiter.join(_csv_cell(c, delimiter) for c in line) for line in lines)
    _load(name, text + "\n")


qrels_tokens = st.one_of(
    st.sampled_from(["q1", "q2", "0", "Q0", "d1", "d2", "1", "2", "-1", "0.5", "x", ""]),
    st.text(alphabet=st.characters(exclude_categories=["Cs", "Zs", "Cc"]), max_size=5),
)
plausible_qrels = st.tuples(
    st.sampled_from(["q1", "q2", "q3"]),
    st.sampled_from(["0", "Q0"]),
    st.sampled_from(["d1", "d2", "d3"]),
    st.sampled_from(["0", "1", "2", "-1"]),
).map(" ".join)
hostile_qrels = st.lists(qrels_tokens, max_size=6).map(" ".join)
qrels_lines = mostly(plausible_qrels, hostile_qrels)


@FUZZ
@given(
    st.lists(qrels_lines, min_size=1, max_size=8),
    st.one_of(
        st.none(),
        st.lists(
            st.tuples(st.sampled_from(["q1", "q2", "q3", "", "q 4"]), cells).map("\t".join),
            max_size=4,
        ).map("\n".join),
        st.sampled_from(
            [
                "<top>\n<num> Number: q1\n<title> first\n</top>",
                '<topics><topic number="q2"><query>second</query></topic></topics>',
                "<top><num>",
            ]
        ),
    ),
)
def test_any_trec_qrels_with_any_topics_load_or_raise_a_golden_set_error(
    lines: list[str], topics: str | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        qrels = Path(folder) / "qrels.txt"
        qrels.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
        topics_path = None
        if topics is not None:
            topics_path = Path(folder) / "topics.txt"
            topics_path.write_text(topics, encoding="utf-8", errors="surrogatepass")
        _loads_or_refuses(qrels, topics=topics_path)


plausible_beir_query = st.fixed_dictionaries(
    {"_id": st.sampled_from(["q3", "q4", "q5"]), "text": st.sampled_from(["first", "second"])},
    optional={"metadata": json_values},
).map(json.dumps)
beir_query_lines = mostly(
    plausible_beir_query,
    st.one_of(
        st.fixed_dictionaries({"_id": json_values, "text": json_values}).map(json.dumps),
        json_values.map(json.dumps),
        st.text(max_size=12),
    ),
)
beir_qrels = st.tuples(
    st.sampled_from(["q1", "q2", "q3"]),
    st.sampled_from(["d1", "d2", "d3"]),
    st.sampled_from(["0", "1", "2"]),
).map("\t".join)
beir_qrels_lines = mostly(
    beir_qrels,
    st.one_of(
        st.just("query-id\tcorpus-id\tscore"),
        st.tuples(
            st.sampled_from(["q1", "q2", "q3"]),
            st.sampled_from(["d1", "d2", "d3"]),
            st.sampled_from(["0", "1", "2", "-1"]),
        ).map("\t".join),
        st.lists(qrels_tokens, max_size=4).map("\t".join),
    ),
)


EVERY_BEIR_QUERY = [json.dumps({"_id": f"q{i}", "text": f"question {i}"}) for i in (1, 2)]


@FUZZ
@given(
    st.tuples(st.booleans(), st.lists(beir_query_lines, max_size=4)).map(
        lambda parts: (EVERY_BEIR_QUERY if parts[0] else []) + parts[1]
    ),
    st.dictionaries(
        st.one_of(
            *[st.sampled_from(["qrels/test.tsv", "qrels.tsv"])] * 4, st.just("qrels/a b.tsv")
        ),
        st.lists(beir_qrels_lines, min_size=1, max_size=5),
        min_size=1,
        max_size=2,
    ),
)
def test_any_beir_folder_loads_or_raises_a_golden_set_error(
    queries: list[str], qrels: dict[str, list[str]]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "beir"
        (root / "qrels").mkdir(parents=True)
        (root / "queries.jsonl").write_text(
            "\n".join(queries), encoding="utf-8", errors="surrogatepass"
        )
        for name, lines in qrels.items():
            (root / name).write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
        _loads_or_refuses(root)
