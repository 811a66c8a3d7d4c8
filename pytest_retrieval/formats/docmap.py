"""Doc-id map files: chunk id -> document id, as a JSON object or a two-column TSV."""

from __future__ import annotations

import json

from ..errors import InputError, Problem
from ..files import read_text_file


def load_doc_map(path: str) -> dict[str, str]:
    """Read ``retrieval_doc_id_map``: a ``.json`` object, else ``chunk id<TAB>document id``
    lines (blank lines and ``#`` comments skipped). InputError naming the file and line."""
    try:
        # A regular UTF-8 file of bounded size (read_text_file): a Latin-1 map is a usage
        # error naming the file and line, not a UnicodeDecodeError.
        text = read_text_file(path, what="doc-id map")
    except FileNotFoundError:
        raise InputError(
            Problem(f"retrieval_doc_id_map = {path}: cannot be read (No such file or directory)")
        ) from None
    except InputError as exc:
        problem = exc.problems[0]
        raise InputError(
            Problem(
                f"retrieval_doc_id_map: {problem.message}",
                fix=problem.fix,
                source=problem.source,
                line=problem.line,
            )
        ) from None
    if path.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                Problem(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})")
            ) from None
        if not isinstance(data, dict):
            raise InputError(Problem(f"{path}: expected a JSON object of chunk id -> document id"))
        return {str(k): str(v) for k, v in data.items()}
    mapping = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputError(Problem(f"{path}:{number}: expected 'chunk id<TAB>document id'"))
        mapping[parts[0].strip()] = parts[1].strip()
    return mapping
