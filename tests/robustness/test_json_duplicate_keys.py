"""``load_json`` refuses a key written twice in one object, whatever the text around it: the
fast path (decode without the hook, compare the ':' count with the keys decoded) must find
every duplicate the hook finds, and refuse nothing else."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_retrieval.errors import InputError
from pytest_retrieval.reading import load_json

# Keys and strings that hold the characters the fast path counts (':') and quotes.
_TEXT = st.sampled_from(["a", "b", "a:b", ":", 'q"', "http://x", "é", ""])
_SPACE = st.sampled_from(["", " ", "\n", " \t "])


@st.composite
def _value(draw: st.DrawFn, depth: int = 0) -> tuple[str, bool]:
    """(JSON text, whether some object in it writes a key twice)."""
    kinds = ["scalar", "string", "list", "object"] if depth < 3 else ["scalar"]
    kind = draw(st.sampled_from(kinds))
    if kind == "scalar":
        return draw(st.sampled_from(["1", "2.5", "null", "true"])), False
    if kind == "string":
        return json.dumps(draw(_TEXT)), False
    size = draw(st.integers(0, 4))
    members = [draw(_value(depth + 1)) for _ in range(size)]
    twice = any(dup for _text, dup in members)
    if kind == "list":
        return "[" + ",".join(text for text, _dup in members) + "]", twice
    keys = [draw(_TEXT) for _ in members]
    twice = twice or len(set(keys)) < len(keys)
    pairs = [
        json.dumps(key) + draw(_SPACE) + ":" + draw(_SPACE) + text
        for key, (text, _dup) in zip(keys, members)
    ]
    return "{" + ",".join(pairs) + "}", twice


@settings(max_examples=400, deadline=None)
@given(_value())
def test_a_key_written_twice_is_refused_and_nothing_else(case: tuple[str, bool]) -> None:
    text, twice = case
    if twice:
        with pytest.raises(InputError, match="appears twice in one object"):
            load_json(text, source="f.json")
    else:
        assert load_json(text, source="f.json") == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a" : 1, "a": 2}',  # a space before one ':'
        '{"u": "http://x", "b": {"c": 1, "c": 2}}',  # a ':' in a string and a duplicate deeper
        '[{"k": 1}, {"k": 2, "k": 3}]',
    ],
)
def test_duplicates_beside_colons_in_strings_or_spaces_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="appears twice in one object"):
        load_json(text, source="f.json")
