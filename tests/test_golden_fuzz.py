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
from pytest_retrieval.golden import GoldenSet, Query, load_golden, write_golden

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


def _load(name: str, data: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8", errors="surrogatepass")
        error: GoldenSetError | None = None
        try:
            result = load_golden(path)
        except GoldenSetError as exc:
            error = exc
        if error is not None:
            assert error.problems
            assert str(error)
        else:
            assert isinstance(result, GoldenSet)
            assert len(result) > 0


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
