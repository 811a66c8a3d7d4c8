"""Every file reader of the package, fed hostile bytes: a clean refusal or a value, nothing else.

:data:`READERS` lists every function of the package that reads a file we did not write, with
the drivers that reach it through a public entry (a console-script command, a plugin setting
through ``configure.build_session``, or the loader function itself). Two guards keep it whole:

* every function that calls the one safe reader or a guarded decoder
  (:mod:`pytest_retrieval.reading`) is in the table, found by ``ast`` (a new reader cannot be
  missed), and each has a driver;
* no module but ``reading`` opens or decodes a file itself (``open``, ``json.loads``,
  ``yaml.safe_load``, ``Path.read_text``...), except the few listed in :data:`RAW_READS` with
  the reason each is not a side file.

The property test draws, for each driver, hostile bytes (BOMs, NULs, invalid UTF-8, UTF-16,
5,000-digit numbers, nesting 100,000 deep, YAML alias bombs and recursive aliases, control
characters, truncated and mutated valid files) and where the file is (a regular file, a FIFO
with no writer, a symlink to ``/dev/zero``, a folder, a symlink loop). Whatever it draws, the
entry returns or refuses with the documented error (the console script's exit status 2, or 1
for the ``golden`` commands' "invalid input"; an ``InputError`` from a loader) whose message
names the file (a loop as a loop, not "not found"), and the line where the problem is a byte
or a syntax error; never another exception,
never a traceback, never a hang (each input runs under a time limit, and a memory limit), and
the file is left byte for byte.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import signal
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import PACKAGE
from test_bad_inputs_cli import artifact, baseline

from pytest_retrieval.cli import main
from pytest_retrieval.errors import InputError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero are POSIX")


GOLDEN = (
    "version: 1\nqueries:\n  - {id: q1, text: refund window, relevant: [d1]}\n"
    "  - {id: q2, text: shipping, relevant: [d2]}\n"
)
QRELS = "q1 0 d1 1\nq2 0 d2 1\n"
RUN = "q1 Q0 d1 1 9 t\nq1 Q0 d3 2 8 t\nq2 Q0 d2 1 9 t\n"
JSONL_RUN = (
    '{"query_id": "q1", "ranking": ["d1", ["d3", 0.5]]}\n{"query_id": "q2", "ranking": []}\n'
)


# --- the drivers: one public entry each, the hostile file at ``target`` ------------------------


@dataclass(frozen=True)
class Outcome:
    """What an entry did: ``refused`` with the text shown, or accepted the file."""

    refused: bool
    text: str = ""


def cli(*argv: str, failed_is_refusal: bool = False) -> Callable[[Path, str], Outcome]:
    """A console-script command; ``{}`` in ARGV is the hostile file. Exit 2 (or 1 for the
    ``golden`` commands, which list an invalid input's problems) is a refusal; 0, or 1 for
    a sound input that fails a check, is acceptance."""

    def run(folder: Path, target: str) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([target if a == "{}" else a for a in argv])
        text = err.getvalue()
        assert "Traceback" not in text
        assert status in (0, 1, 2), text
        if status == 2 and not failed_is_refusal:  # the golden commands list every problem
            assert len(text.splitlines()) == 1, text  # one line, as every usage error
        refused = status == 2 or (failed_is_refusal and status == 1 and target in text)
        return Outcome(refused, text)

    return run


def loader(call: Callable[[str], object]) -> Callable[[Path, str], Outcome]:
    """A loader function: returning is acceptance, an InputError a refusal."""

    def run(folder: Path, target: str) -> Outcome:
        try:
            call(target)
        except InputError as exc:
            return Outcome(True, str(exc))
        return Outcome(False)

    return run


def plugin(setting: str, **others: str) -> Callable[[Path, str], Outcome]:
    """A plugin setting naming the hostile file, resolved and loaded as pytest does
    (``settings.resolve``, ``configure.build_session``): an InputError is a usage error."""

    def run(folder: Path, target: str) -> Outcome:
        from pytest_retrieval.phases.start import build_session
        from pytest_retrieval.settings.resolve import resolve

        def refuse(reason: str) -> None:
            raise AssertionError(f"skipped: {reason}")

        ini: dict[str, object] = {"golden": "golden.yaml", "ks": "1,2", **others}
        ini[setting] = target
        try:
            settings_ = resolve({}, ini, ini_base=folder)
            build_session(settings_, rootdir=folder, on_skip=refuse, on_sealed=refuse)  # type: ignore[arg-type]
        except InputError as exc:
            return Outcome(True, str(exc))
        return Outcome(False)

    return run


def _doc_map(target: str) -> object:
    from pytest_retrieval.formats.docmap import load_doc_map

    return load_doc_map(target)


def _fingerprint(target: str) -> object:
    from pytest_retrieval.run.cachekey import corpus_fingerprint

    return corpus_fingerprint(target)


def _comment_report(target: str) -> object:
    from pytest_retrieval.cli.comment import _read_report

    return _read_report(target)


def _comment_event(folder: Path, target: str) -> Outcome:
    # GITHUB_EVENT_PATH is the CI's file: one it cannot read stops the comment with a warning
    # naming it (exit 0 by design: the gate is the pytest step), never a traceback.
    from pytest_retrieval.cli.comment import _github_event
    from pytest_retrieval.cli.forges import CannotPost

    try:
        _github_event({"GITHUB_EVENT_PATH": target})
    except CannotPost as exc:
        return Outcome(True, str(exc))
    return Outcome(False)


def _ini_search(folder: Path, target: str) -> Outcome:
    from pytest_retrieval.settings.preflight import _ini_from

    found = _ini_from(folder)  # pytest's own search: it never raises, it finds or skips
    assert found is None or isinstance(found, Path)
    return Outcome(False)


def _cache_row(folder: Path, target: str) -> Outcome:
    """The hostile bytes as a cache row's stored value, with a matching checksum."""
    from pytest_retrieval.run.cachekey import CacheEntry, CacheKey, row_checksum
    from pytest_retrieval.run.store import CacheCorrupt, RunCache

    key = CacheKey(stage="retriever", query="q", depth=3, retriever="r")
    path = folder / "cache" / "runs.sqlite3"
    with RunCache(path) as cache:
        cache.put(key, CacheEntry(("d1",)))
    value = Path(target).read_bytes().decode("utf-8", "replace")
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute(
            "UPDATE entries SET value = ?, checksum = ?",
            (value, row_checksum(key.digest, value)),
        )
    finally:
        db.close()
    try:
        with RunCache(path) as cache:
            cache.get(key)
    except CacheCorrupt as exc:
        refused = exc
    else:
        return Outcome(False)
    assert "runs.sqlite3" in str(refused)  # the cache names its file
    return Outcome(True, f"{target}: {refused}")  # the row came from the hostile file


@dataclass(frozen=True)
class Driver:
    """A public entry that reads a file named ``name`` (in a folder holding :data:`FILES`),
    with a valid ``seed`` the hostile bytes are made from. ``kinds``: where the file may be."""

    id: str
    name: str
    seed: str
    run: Callable[[Path, str], Outcome]
    kinds: tuple[str, ...] = ("file", "fifo", "dev-zero", "folder", "loop")
    #: Whether a byte or syntax error is named at a line of the file (not a cache row's).
    located: bool = True
    #: Whether a FIFO, /dev/zero or a folder must be refused (pytest's ini search skips them).
    refuses_others: bool = True


FILES = {
    "golden.yaml": GOLDEN,
    "qrels.txt": QRELS,
    "run.trec": RUN,
    "art.json": artifact(),
}
WORKSHEET = "query_id,doc_id,grade\nq1,d3,1\n"
GATES = "version: 1\nthresholds:\n  - mrr >= 0.5\n"
CORPUS = '{"_id": "d1", "title": "Refunds", "text": "30 days"}\n{"_id": "d2", "text": "ships"}\n'
POOL = ("golden", "pool", "{}", "--depth", "2", "--golden", "golden.yaml", "--output", "w.csv")

DRIVERS = [
    Driver(
        "evaluate-run", "hostile.trec", RUN, cli("evaluate", "--qrels", "qrels.txt", "--run", "{}")
    ),
    Driver(
        "evaluate-qrels",
        "hostile.txt",
        QRELS,
        cli("evaluate", "--qrels", "{}", "--run", "run.trec"),
    ),
    Driver("pool-jsonl-run", "hostile.jsonl", JSONL_RUN, cli(*POOL, failed_is_refusal=True)),
    Driver("pool-trec-run", "hostile.run", RUN, cli(*POOL, failed_is_refusal=True)),
    Driver("pool-json-input", "hostile.json", baseline(), cli(*POOL, failed_is_refusal=True)),
    Driver(
        "pool-corpus",
        "hostile.jsonl",
        CORPUS,
        cli(
            "golden",
            "pool",
            "run.trec",
            "--depth",
            "2",
            "--golden",
            "golden.yaml",
            "--output",
            "w.csv",
            "--corpus",
            "{}",
            failed_is_refusal=True,
        ),
    ),
    Driver(
        "merge-csv",
        "hostile.csv",
        WORKSHEET,
        cli("golden", "merge", "golden.yaml", "{}", "--output", "n.yaml", failed_is_refusal=True),
    ),
    Driver(
        "merge-jsonl",
        "hostile.jsonl",
        '{"query_id": "q1", "doc_id": "d3", "grade": 1}\n',
        cli("golden", "merge", "golden.yaml", "{}", "--output", "n.yaml", failed_is_refusal=True),
    ),
    Driver(
        "merge-yaml",
        "hostile.yaml",
        "- {query_id: q1, doc_id: d3, grade: 1}\n",
        cli("golden", "merge", "golden.yaml", "{}", "--output", "n.yaml", failed_is_refusal=True),
    ),
    Driver(
        "validate-yaml",
        "hostile.yaml",
        GOLDEN,
        cli("golden", "validate", "{}", failed_is_refusal=True),
    ),
    Driver(
        "validate-json",
        "hostile.json",
        json.dumps({"version": 1, "queries": [{"id": "q1", "text": "t", "relevant": {"d1": 2}}]}),
        cli("golden", "validate", "{}", failed_is_refusal=True),
    ),
    Driver(
        "validate-jsonl",
        "hostile.jsonl",
        '{"version": 1}\n{"id": "q1", "text": "t", "relevant": ["d1"]}\n',
        cli("golden", "validate", "{}", failed_is_refusal=True),
    ),
    Driver(
        "validate-csv",
        "hostile.csv",
        "id,text,relevant\nq1,refund window,d1;d2\n",
        cli("golden", "validate", "{}", failed_is_refusal=True),
    ),
    Driver(
        "validate-csv-context",
        "hostile.csv",
        'id,text,relevant,context\nq1,refund window,d1,"{""tenant"": ""acme"", ""n"": [1]}"\n',
        cli("golden", "validate", "{}", failed_is_refusal=True),
    ),
    Driver(
        "validate-trec-qrels",
        "hostile.qrels",
        QRELS,
        cli("golden", "validate", "{}", "--format", "trec", failed_is_refusal=True),
    ),
    Driver(
        "validate-trec-topics",
        "hostile.tsv",
        "q1\trefund window\nq2\tshipping\n",
        cli(
            "golden",
            "validate",
            "qrels.txt",
            "--format",
            "trec",
            "--topics",
            "{}",
            failed_is_refusal=True,
        ),
    ),
    Driver(
        "validate-beir-queries",
        "beir/queries.jsonl",
        '{"_id": "q1", "text": "refund window"}\n',
        cli("golden", "validate", "beir", failed_is_refusal=True),
        kinds=("file", "fifo", "dev-zero", "loop"),
    ),
    Driver(
        "validate-beir-qrels",
        "beir/qrels/test.tsv",
        "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
        cli("golden", "validate", "beir", failed_is_refusal=True),
        kinds=("file", "fifo", "dev-zero", "loop"),
    ),
    Driver(
        "validate-corpus-jsonl",
        "hostile.jsonl",
        CORPUS,
        cli("golden", "validate", "golden.yaml", "--corpus", "{}", failed_is_refusal=True),
    ),
    Driver(
        "validate-corpus-ids",
        "hostile.tsv",
        "d1\tRefunds take 30 days\nd2\tShipping\n",
        cli("golden", "validate", "golden.yaml", "--corpus", "{}", failed_is_refusal=True),
    ),
    Driver(
        "validate-duplicates",
        "hostile.json",
        '{"d1": "g", "d2": "g"}',
        cli("golden", "validate", "golden.yaml", "--duplicates", "{}", failed_is_refusal=True),
    ),
    Driver("report-artifact", "hostile.json", artifact(), cli("report", "{}")),
    Driver(
        "report-baseline", "hostile.json", baseline(), cli("report", "art.json", "--baseline", "{}")
    ),
    Driver("gate-gates-file", "hostile.yaml", GATES, cli("gate", "art.json", "--gates", "{}")),
    Driver("doc-id-map-json", "hostile.json", '{"d1#0": "d1"}', loader(_doc_map)),
    Driver("doc-id-map-tsv", "hostile.tsv", "d1#0\td1\n", loader(_doc_map)),
    Driver("cache-key-fingerprint", "hostile.tsv", "d1\n", loader(_fingerprint)),
    Driver(
        "cache-row",
        "hostile.txt",
        '{"ranking": ["d1"], "scores": null}',
        _cache_row,
        ("file",),
        located=False,
    ),
    Driver("ini-file-search", "tox.ini", "[pytest]\n", _ini_search, refuses_others=False),
    Driver("plugin-run-trec", "hostile.trec", RUN, plugin("run")),
    Driver("plugin-run-jsonl", "hostile.jsonl", JSONL_RUN, plugin("run")),
    Driver("plugin-golden", "hostile.yaml", GOLDEN, plugin("golden")),
    Driver("plugin-baseline", "hostile.json", baseline(), plugin("baseline")),
    Driver("plugin-gates-file", "hostile.yaml", GATES, plugin("gates_file")),
    Driver("plugin-duplicates", "hostile.tsv", "d1\tg\nd2\tg\n", plugin("duplicates")),
    Driver("plugin-corpus", "hostile.jsonl", CORPUS, plugin("corpus")),
    Driver("comment-report", "hostile.md", "## Retrieval quality\n", loader(_comment_report)),
    Driver(
        "comment-event",
        "hostile.json",
        '{"pull_request": {"number": 7}}',
        _comment_event,
        located=False,
    ),
]
BY_ID = {d.id: d for d in DRIVERS}

#: Every reader of the package (module, function) and the drivers that reach it.
READERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("pytest_retrieval.regression.baseline", "load_baseline"): (
        "report-baseline",
        "plugin-baseline",
    ),
    ("pytest_retrieval.run.cachekey", "_sha256_file"): ("cache-key-fingerprint",),
    ("pytest_retrieval.run.cachekey", "entry_from_value"): ("cache-row",),
    ("pytest_retrieval.cli.labelling", "_pool_input"): ("pool-json-input",),
    ("pytest_retrieval.gates.declared", "gates_file_entries"): (
        "gate-gates-file",
        "plugin-gates-file",
    ),
    ("pytest_retrieval.scoring.dedup", "load_duplicates"): (
        "validate-duplicates",
        "plugin-duplicates",
    ),
    ("pytest_retrieval.scoring.dedup", "parse_duplicates"): ("validate-duplicates",),
    ("pytest_retrieval.formats.corpus", "read_corpus"): (
        "validate-corpus-jsonl",
        "validate-corpus-ids",
        "plugin-corpus",
        "pool-corpus",
    ),
    ("pytest_retrieval.formats.docmap", "load_doc_map"): ("doc-id-map-json", "doc-id-map-tsv"),
    ("pytest_retrieval.formats.golden_beir", "_read_queries"): ("validate-beir-queries",),
    ("pytest_retrieval.formats.golden_csv", "_context_cell"): ("validate-csv-context",),
    ("pytest_retrieval.formats.golden_files", "read_json"): ("validate-json",),
    ("pytest_retrieval.formats.golden_files", "read_jsonl"): ("validate-jsonl",),
    ("pytest_retrieval.formats.golden_files", "read_yaml"): ("validate-yaml", "plugin-golden"),
    ("pytest_retrieval.formats.golden_parsed", "read_text"): (
        "validate-csv",
        "validate-trec-topics",
        "validate-beir-qrels",
    ),
    ("pytest_retrieval.formats.runs", "_load_jsonl"): ("pool-jsonl-run", "plugin-run-jsonl"),
    ("pytest_retrieval.formats.trec", "numbered_lines"): (
        "evaluate-run",
        "evaluate-qrels",
        "pool-trec-run",
        "validate-trec-qrels",
        "plugin-run-trec",
    ),
    ("pytest_retrieval.formats.worksheet", "_records"): ("merge-csv", "merge-jsonl", "merge-yaml"),
    ("pytest_retrieval.settings.preflight", "_ini_from"): ("ini-file-search",),
    ("pytest_retrieval.report.artifact", "read_artifact"): ("report-artifact",),
    ("pytest_retrieval.cli.comment", "_read_report"): ("comment-report",),
    ("pytest_retrieval.cli.comment", "_github_event"): ("comment-event",),
}

#: The only reads outside ``reading``: (module, function, call) and why each is not a side
#: file read with the safe reader.
RAW_READS = {
    ("pytest_retrieval.run.store", "RunCache._open", "sqlite3.connect"): (
        "the cache file is SQLite: its own checks (application id, schema version, page count, "
        "row checksums) refuse a foreign or damaged file as CacheCorrupt"
    ),
    ("pytest_retrieval.run.shards", "ShardStore.__init__", "sqlite3.connect"): (
        "the xdist shard store: a private SQLite file this session creates"
    ),
    ("pytest_retrieval.run.shards", "_Life.__init__", "sqlite3.connect"): (
        "a worker's life lock: a private SQLite file this worker creates"
    ),
    ("pytest_retrieval.run.shards", "alive", "sqlite3.connect"): (
        "another worker's life lock, opened only to test its lock"
    ),
    ("pytest_retrieval.run.shards", "decode_outcomes", "json.loads"): (
        "outcomes this session's workers encoded into the shard store"
    ),
    ("pytest_retrieval.session.payload", "Report.from_dict", "json.loads"): (
        "outcomes this session's xdist workers encoded for the controller"
    ),
    ("pytest_retrieval.run.executors", "_decoded", "json.loads"): (
        "outcomes Ray's actors encoded for this process"
    ),
    ("pytest_retrieval.run.executors", "RayRunner.__call__", "json.loads"): (
        "the query contexts this process encoded (canonical JSON) for Ray's actors"
    ),
    ("pytest_retrieval.regression.ledger", "Ledger.__init__", "sqlite3.connect"): (
        "the run ledger is SQLite: its own checks (application id, schema version, a checksum "
        "per entry) refuse a foreign or damaged file as a usage error"
    ),
    ("pytest_retrieval.regression.ledger", "Ledger._decoded", "json.loads"): (
        "an entry this package wrote, decoded only after its checksum matched"
    ),
    ("pytest_retrieval.run.store", "_header", "os.open"): (
        "the first 100 bytes of the cache file, non-blocking, regular files only: to tell "
        "SQLite from a foreign file before SQLite opens it"
    ),
    ("pytest_retrieval.run.store", "_header", "os.read"): ("the same 100 bytes (see os.open)"),
    ("pytest_retrieval.cli.forges", "Client._once", "json.loads"): (
        "a GitHub or GitLab API answer over HTTP, not a file; a body that is not JSON is an "
        "ApiError the command warns about"
    ),
    ("pytest_retrieval.cli.forges", "_message", "json.loads"): (
        "the message of an API error answer, best effort (its raw text otherwise)"
    ),
    ("pytest_retrieval.run.source", "Sharded.__call__", "json.loads"): (
        "run information this session's workers encoded into the shard store"
    ),
}


# --- the guards ----------------------------------------------------------------------------------


_ENTRIES = {
    "read_text_file",
    "read_lines",
    "file_digest",
    "load_json",
    "load_yaml",
    "yaml_document",
    "compose_yaml",
}
#: Calls that read or decode a file (or a document) by themselves.
_RAW = {
    "open",
    "json.load",
    "json.loads",
    "json.JSONDecoder",
    "yaml.load",
    "yaml.safe_load",
    "yaml.full_load",
    "yaml.unsafe_load",
    "yaml.load_all",
    "yaml.safe_load_all",
    "yaml.compose",
    "yaml.compose_all",
    "yaml.parse",
    "yaml.scan",
    "os.read",
    "io.open",
    "codecs.open",
    "tomllib.load",
    "tomllib.loads",
    "sqlite3.connect",
}
_RAW_METHODS = {"read_text", "read_bytes"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _walk(module: str, node: ast.AST, scope: list[str]) -> Iterator[tuple[str, str, str, ast.Call]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _walk(module, child, [*scope, child.name])
            continue
        if isinstance(child, ast.Call):
            yield module, ".".join(scope), _dotted(child.func), child
        yield from _walk(module, child, scope)


def _calls() -> Iterator[tuple[str, str, str, ast.Call]]:
    """(module, enclosing function's qualified name, dotted callee, call) of every call."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        yield from _walk(_module_name(path), tree, [])


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _readers_found() -> set[tuple[str, str]]:
    found = set()
    for module, scope, callee, _call in _calls():
        if module == "pytest_retrieval.reading":
            continue
        if callee.rsplit(".", 1)[-1] in _ENTRIES:
            # A nested helper's reads are its enclosing (public or private) function's.
            found.add((module, scope))
    return found


def test_every_reader_of_the_package_is_in_the_table() -> None:
    found = _readers_found()
    assert found - set(READERS) == set(), "a new reader: add it to READERS with a driver"
    assert set(READERS) - found == set(), "a reader left: remove it from READERS"


def test_every_reader_has_a_driver_and_every_driver_exists() -> None:
    for reader, drivers in READERS.items():
        assert drivers, reader
        assert all(d in BY_ID for d in drivers), (reader, drivers)
    covered = {d for drivers in READERS.values() for d in drivers}
    assert covered <= set(BY_ID)


def test_the_reader_guard_would_see_a_new_reader() -> None:
    # The scan is what makes the table complete: it must find a reader written anywhere.
    code = "def new_one(path):\n    return load_json(read_text_file(path), source=path)\n"
    tree = ast.parse(code)
    names = {_dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert names & _ENTRIES == {"load_json", "read_text_file"}


def _raw_reads() -> set[tuple[str, str, str]]:
    found = set()
    for module, scope, callee, call in _calls():
        if module == "pytest_retrieval.reading":
            continue
        method = callee.rsplit(".", 1)[-1]
        if callee in _RAW or (method in _RAW_METHODS and "." in callee):
            found.add((module, scope, callee))
        if callee == "os.open" and not _opens_for_writing(call):
            found.add((module, scope, callee))
        if callee == "os.fdopen" and _mode(call) in (None, "r", "rb"):
            found.add((module, scope, callee))
    return found


def _opens_for_writing(call: ast.Call) -> bool:
    flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
    return "O_WRONLY" in flags or "O_RDWR" in flags


def _mode(call: ast.Call) -> str | None:
    if len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
        return str(call.args[1].value)
    return None


def test_no_module_but_reading_opens_or_decodes_a_file_itself() -> None:
    assert _raw_reads() == set(RAW_READS)


def test_the_raw_read_guard_would_see_an_open_call() -> None:
    tree = ast.parse(
        "def sneaky(p):\n    with open(p) as f:\n        return json.loads(f.read())\n"
    )
    names = {_dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert {"open", "json.loads"} <= names & _RAW


# --- hostile bytes -----------------------------------------------------------------------------


def _yaml_bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


#: Whole files no reader should choke on.
HOSTILE_FILES = [
    b"",
    b"\n\n\n",
    b"\xef\xbb\xbf",
    b"\xff\xfe" + "q1 0 d1 1\n".encode("utf-16-le"),
    ("[" * 100_000 + "]" * 100_000).encode(),
    ('{"a": ' * 50_000 + "1" + "}" * 50_000).encode(),
    ('{"query_id": "q1", "ranking": [' + "9" * 5000 + "]}\n").encode(),
    ("9" * 5000 + "\n").encode(),
    ("- " * 2000 + "x\n").encode(),
    _yaml_bomb().encode(),
    b"a: &a [*a]\n",
    b"- &r {query_id: *r, doc_id: d, grade: 1}\n",
    b"!!python/object/apply:os.system [echo owned]\n",
    b"x: !!binary AAAA\ny: 2024-13-45\n",
    b'{"a": NaN, "b": Infinity, "c": -1e999}',
    b"\x00" * 64,
    b"\x1b[31m::error::owned\r\n\x0b\x0c\xe2\x80\xa8\n",
    b"q1 Q0 d1 1 nan t\nq1 Q0 d1 2 inf t\n",
    b"\xed\xa0\x80\xed\xb0\x80\n",  # a surrogate pair spelt in UTF-8 (invalid)
    ("x" * 200_000 + "\n").encode(),
]
FRAGMENTS = [
    b"\xef\xbb\xbf",
    b"\x00",
    b"\xff",
    b"\xc3\x28",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\r",
    b"\r\n",
    b"\t",
    b"\x1b[2J",
    b"\xe2\x80\xa8",
    b'"',
    b"{",
    b"]",
    b"\\",
    b"#",
    b"*a",
    b"&a ",
    b": ",
    b"9" * 400,
    b"[" * 300,
    b"\n",
]


@st.composite
def hostile_bytes(draw: st.DrawFn, seed: bytes) -> bytes:
    """Bytes made to break a reader of files like ``seed``: a whole hostile file, random
    bytes, the seed truncated, or the seed with hostile fragments spliced in."""
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return draw(st.sampled_from(HOSTILE_FILES))
    if choice == 1:
        return draw(st.binary(max_size=200))
    if choice == 2:
        return seed[: draw(st.integers(0, len(seed)))]
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.sampled_from(FRAGMENTS))
    return bytes(data)


@contextlib.contextmanager
def inside(folder: str) -> Iterator[None]:
    """``cd folder`` for the block (``contextlib.chdir`` is Python 3.11+)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"no answer within {seconds:g} s: the reader hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def memory_limit(extra: int = 1 << 30) -> Iterator[None]:
    """At most ``extra`` more bytes of address space for the block (Linux): a reader that reads
    ``/dev/zero`` whole, or builds an alias bomb, fails with MemoryError instead of taking the
    machine's memory."""
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    capped = size + extra if hard == resource.RLIM_INFINITY else min(size + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (capped, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_LOCATED = ("not valid UTF-8", "NUL byte", "not valid JSON", "not valid YAML", "is UTF-16")


def _feed(driver: Driver, kind: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as name, inside(name):
        folder = Path(name)
        for file, content in FILES.items():
            (folder / file).write_text(content, encoding="utf-8")
        target = folder / driver.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if driver.name.startswith("beir/"):  # the rest of a BEIR folder, whole
            (folder / "beir" / "qrels").mkdir(exist_ok=True)
            for part, content in (
                ("beir/queries.jsonl", '{"_id": "q1", "text": "refund window"}\n'),
                ("beir/qrels/test.tsv", "q1\td1\t1\n"),
            ):
                if part != driver.name:
                    (folder / part).write_text(content, encoding="utf-8")
        if kind == "file":
            target.write_bytes(data)
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "dev-zero":
            target.symlink_to("/dev/zero")
        elif kind == "loop":
            target.symlink_to(target.name)  # a link to itself: ELOOP
        else:
            target.mkdir()
        with time_limit(20), memory_limit():
            outcome = driver.run(folder, driver.name)
        if kind == "file":
            assert target.read_bytes() == data  # nothing lost
        if kind != "file" and driver.refuses_others:
            assert outcome.refused, f"{kind} accepted: {outcome}"
        if not outcome.refused:
            return
        shown = outcome.text
        assert driver.name in shown or driver.name.split("/")[0] in shown, shown
        if kind == "loop":  # it is there: "not found" would send the user looking elsewhere
            assert "symbolic link" in shown, shown
            assert "not found" not in shown, shown
        if driver.located and any(marker in shown for marker in _LOCATED):
            # A byte or a syntax error has a place: the file and its line.
            assert re.search(re.escape(Path(driver.name).name) + r":\d+", shown), shown


PROPERTY = settings(
    max_examples=25,
    deadline=None,  # each input has its own time limit (a hang fails it, a slow one does not)
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("driver", [pytest.param(d, id=d.id) for d in DRIVERS])
@PROPERTY
@given(data=st.data())
def test_every_reader_refuses_hostile_bytes_cleanly_naming_the_file(
    driver: Driver, data: st.DataObject
) -> None:
    kind = data.draw(
        st.sampled_from(driver.kinds) if len(driver.kinds) > 1 else st.just(driver.kinds[0]),
        label="kind",
    )
    content = data.draw(hostile_bytes(driver.seed.encode()), label="content")
    _feed(driver, kind, content if kind == "file" else b"")


@pytest.mark.parametrize("driver", [pytest.param(d, id=d.id) for d in DRIVERS])
def test_every_reader_accepts_its_seed(driver: Driver) -> None:
    # The seeds are sound files: the property test mutates inputs a reader accepts.
    with tempfile.TemporaryDirectory() as name, inside(name):
        folder = Path(name)
        for file, content in FILES.items():
            (folder / file).write_text(content, encoding="utf-8")
        target = folder / driver.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if driver.name.startswith("beir/"):
            (folder / "beir" / "qrels").mkdir(exist_ok=True)
            (folder / "beir" / "queries.jsonl").write_text(
                '{"_id": "q1", "text": "refund window"}\n', encoding="utf-8"
            )
            (folder / "beir" / "qrels" / "test.tsv").write_text("q1\td1\t1\n", encoding="utf-8")
        target.write_text(driver.seed, encoding="utf-8")
        with time_limit(20):
            outcome = driver.run(folder, driver.name)
        assert not outcome.refused, outcome.text
