"""Doc-id map files: chunk id -> document id, as a JSON object or a two-column TSV."""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError, Problem
from ..reading import load_json, read_text_file, split_lines

_SETTING = "retrieval_doc_id_map"
_JSON_SHAPE = 'a JSON object of chunk id -> document id: {"chunk-1": "doc-a"}'


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (type(value) is int)


def load_doc_map(path: str) -> dict[str, str]:
    """Read ``retrieval_doc_id_map``: a ``.json`` object, else ``chunk id<TAB>document id``
    lines (blank lines and ``#`` comments skipped). InputError naming the setting, the file and
    the line."""
    try:
        # The one safe reader (a regular UTF-8 file of bounded size) and the guarded decoder:
        # a Latin-1 map or a tampered JSON one is a usage error naming the file and line.
        text = read_text_file(path, what="doc-id map")
        data = (
            load_json(text, source=path, what="doc-id map", expected=_JSON_SHAPE)
            if path.endswith(".json")
            else None
        )
    except FileNotFoundError:
        raise InputError(
            Problem(f"{_SETTING} = {path}: cannot be read (No such file or directory)")
        ) from None
    except InputError as exc:
        problem = exc.problems[0]
        raise InputError(replace(problem, message=f"{_SETTING}: {problem.message}")) from None
    if path.endswith(".json"):
        if not isinstance(data, dict):
            raise InputError(
                Problem(f"{_SETTING}: expected {_JSON_SHAPE}", fix="write one", source=path)
            )
        bad = [key for key, value in data.items() if not _is_id(value)]
        if bad:
            raise InputError(
                Problem(
                    f"{_SETTING}: chunk {bad[0]!r} maps to {type(data[bad[0]]).__name__}, not a "
                    "document id",
                    fix="map each chunk id to its document id, a string",
                    source=path,
                )
            )
        return {str(k): str(v) for k, v in data.items()}
    mapping: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, line in split_lines(text):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputError(
                Problem(
                    f"{_SETTING}: expected 'chunk id<TAB>document id', found {len(parts)} "
                    "tab-separated field(s)",
                    fix="write one chunk id and its document id per line, separated by a tab",
                    source=path,
                    line=number,
                )
            )
        chunk, doc = parts[0].strip(), parts[1].strip()
        if chunk in mapping and mapping[chunk] != doc:
            # A dict would keep the last line silently: half the chunk's hits then count for
            # a document the map's author may not have meant.
            raise InputError(
                Problem(
                    f"{_SETTING}: chunk {chunk!r} maps to {mapping[chunk]!r} on line "
                    f"{first_line[chunk]} and to {doc!r} here",
                    fix="give each chunk id one document id",
                    source=path,
                    line=number,
                )
            )
        mapping[chunk] = doc
        first_line.setdefault(chunk, number)
    return mapping
