"""The console script's bad-input catalogue, and a fuzz test of it.

Each case runs ``pytest-retrieval`` (in process, through :func:`main`) on a project folder with
files seeded: it must exit with the documented status (2 for a usage error, 1 for a failed
check), print the error as ONE line on stderr naming the file or option and the fix, raise
nothing (a traceback from our internals is never the answer to a user mistake), and leave every
seeded file byte for byte, with no temporary file behind.

The fuzz test draws argument lists and file contents: whatever it draws, no exception escapes
:func:`main`, the status is 0, 1 or 2, and a status of 2 comes with exactly one line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import GOLDEN_FILES

from pytest_retrieval.cli import main
from pytest_retrieval.regression.baseline import dump_baseline
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot

GOLDEN_DIR = GOLDEN_FILES
USAGE, FAILED, OK = 2, 1, 0

GOLDEN = "version: 1\nqueries:\n  - {id: a, text: refund window, relevant: [x]}\n"


def _snapshot_doc(**metrics: object) -> dict[str, object]:
    query = QuerySnapshot(
        split="tune",
        slices=(),
        labels="0" * 16,
        metrics={"retriever": {"recall@3": 1.0, "mrr": 1.0}},
        relevant_ranks={"retriever": {"x": 1}},
        top={"retriever": ("x",)},
    )
    snapshot = Snapshot("f" * 64, {}, ("retriever",), ("recall@3", "mrr"), {"a": query})
    document: dict[str, object] = json.loads(dump_baseline(snapshot))
    entry = document["queries"]["a"]  # type: ignore[index]
    if metrics:
        entry["metrics"]["retriever"] = metrics  # type: ignore[index]
    return document


def baseline(**metrics: object) -> str:
    """A one-query baseline (recall@3 and mrr 1.0), with its metrics replaced if given."""
    return json.dumps(_snapshot_doc(**metrics))


def artifact(**changes: object) -> str:
    """A valid artifact of the same one query (the snapshot above), with fields replaced."""
    document = json.loads((GOLDEN_DIR / "report-pass.json").read_text(encoding="utf-8"))
    document["snapshot"] = _snapshot_doc()
    document.update(changes)
    return json.dumps(document)


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    status: int
    messages: tuple[str, ...]
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    symlinks: Mapping[str, str] = field(default_factory=dict)
    #: Files that must exist afterwards with this content (written by the command).
    written: Mapping[str, str] = field(default_factory=dict)


CASES = [
    # --- out-of-range options: one line, exit 2 (a traceback or exit 1 before) ---------------
    Case(
        "compare-alpha-above-one",
        ("compare", "--alpha", "5", "base.json", "run.json"),
        USAGE,
        (
            "pytest-retrieval compare: error: argument --alpha: '5' is not a number strictly "
            "between 0 and 1; see `pytest-retrieval compare --help`",
        ),
    ),
    Case(
        "compare-alpha-nan",
        ("compare", "--alpha", "nan", "base.json", "run.json"),
        USAGE,
        ("argument --alpha: 'nan' is not a number strictly between 0 and 1",),
    ),
    Case(
        "gate-alpha-infinite",
        ("gate", "--alpha", "inf", "run.json"),
        USAGE,
        ("pytest-retrieval gate: error: argument --alpha: 'inf' is not a number strictly",),
    ),
    Case(
        "report-max-rows-superscript",
        ("report", "--max-rows", "\u00b2", "run.json"),
        USAGE,
        ("argument --max-rows: '\u00b2' is not a positive integer",),
    ),
    Case(
        "evaluate-min-grade-with-an-underscore",
        ("evaluate", "--qrels", "q.txt", "--run", "r.txt", "--min-grade", "1_0"),
        USAGE,
        (
            "pytest-retrieval evaluate: error: argument --min-grade: '1_0' is not a positive "
            "integer",
        ),
    ),
    Case(
        "unknown-option",
        ("report", "--colour", "run.json"),
        USAGE,
        ("pytest-retrieval: error: unrecognized arguments: --colour",),
    ),
    Case(
        "no-command",
        (),
        USAGE,
        ("pytest-retrieval: error: no command given; see `pytest-retrieval --help`",),
    ),
    Case(
        "golden-without-a-subcommand",
        ("golden",),
        USAGE,
        ("pytest-retrieval golden: error: the following arguments are required: SUBCOMMAND",),
    ),
    # --- tampered or foreign files -------------------------------------------------------------
    Case(
        "report-on-a-symlink-to-dev-zero",
        ("report", "run.json"),
        USAGE,
        ("run.json: the artifact is not a regular file but a character device",),
        symlinks={"run.json": "/dev/zero"},
    ),
    Case(
        "report-on-an-artifact-whose-results-is-a-string",
        ("report", "run.json"),
        USAGE,
        ("run.json: field 'results': \"results\" must be a list",),
        files={"run.json": artifact(results="tampered")},
    ),
    Case(
        "report-on-an-artifact-whose-queries-hold-a-number",
        ("report", "run.json"),
        USAGE,
        ("run.json: field 'queries': every item of \"queries\" must be an object",),
        files={"run.json": artifact(queries=[1, 2])},
    ),
    Case(
        "report-on-an-artifact-with-ks-of-words",
        ("report", "run.json"),
        USAGE,
        ("run.json: field 'settings.ks': \"ks\" must be a list of positive integers",),
        files={"run.json": artifact(settings={"ks": ["ten"]})},
    ),
    Case(
        # Deep inside what only the plugin writes: a backstop names the file, never a traceback.
        "report-on-an-artifact-with-a-hand-edited-result",
        ("report", "run.json", "--html", "out.html"),
        USAGE,
        (
            "run.json: not a valid artifact:",
            "run.json: field 'results[0].metrics': \"metrics\" must be an object of metric -> "
            "value (write it again with pytest --retrieval-json PATH; do not edit it by hand)",
        ),
        files={"run.json": artifact(results=[{"stage": "retriever", "metrics": 5}])},
    ),
    Case(
        "report-on-an-artifact-with-hand-edited-latencies",
        ("report", "run.json", "--html", "out.html"),
        USAGE,
        ("run.json: the artifact does not match its schema (",),
        files={"run.json": artifact(latency_ms={"retriever": {"p50": "fast", "p95": None}})},
    ),
    Case(
        "report-on-a-deeply-nested-artifact",
        ("report", "run.json"),
        USAGE,
        ("run.json: the artifact nests JSON values more than 100 levels deep",),
        files={"run.json": "[" * 100_000 + "]" * 100_000},
    ),
    Case(
        "report-on-an-artifact-with-a-number-of-5000-digits",
        ("report", "run.json"),
        USAGE,
        ("run.json: the artifact holds a number of 5,000 digits (at most 300 are read)",),
        files={"run.json": '{"schema": ' + "1" * 5000 + "}"},
    ),
    Case(
        "compare-with-a-baseline-value-that-is-a-string",
        ("compare", "base.json", "run.json"),
        USAGE,
        (
            "base.json: query 'a', field 'metrics.retriever': recall@3 = 'high' is not a number "
            "between 0 and 1 (or null)",
        ),
        files={"base.json": baseline(**{"recall@3": "high", "mrr": 1.0}), "run.json": artifact()},
    ),
    Case(
        "compare-with-a-baseline-missing-one-metric",
        ("compare", "base.json", "run.json"),
        USAGE,
        ("query 'a', field 'metrics.retriever': recall@3 missing, so it would be compared",),
        files={"base.json": baseline(mrr=1.0), "run.json": artifact()},
    ),
    Case(
        "compare-with-a-baseline-whose-stages-is-a-string",
        ("compare", "base.json", "run.json"),
        USAGE,
        ("base.json: field 'stages': \"stages\" must be a non-empty list of stage names",),
        files={
            "base.json": json.dumps({**_snapshot_doc(), "stages": "retriever"}),
            "run.json": artifact(),
        },
    ),
    Case(
        "compare-with-an-artifact-whose-snapshot-lacks-a-metric",
        ("compare", "base.json", "run.json"),
        USAGE,
        (
            "run.json (snapshot): query 'a', field 'metrics.retriever': mrr missing",
            "write it again with pytest --retrieval-json PATH",
        ),
        files={
            "base.json": baseline(),
            "run.json": artifact(snapshot=_snapshot_doc(**{"recall@3": 1.0})),
        },
    ),
    Case(
        "compare-with-a-baseline-that-is-a-folder",
        ("compare", "base.json", "run.json"),
        USAGE,
        ("base.json: the baseline path is a directory",),
        files={"base.json/keep": "a folder", "run.json": artifact()},
    ),
    Case(
        "evaluate-with-a-grade-of-1024",
        ("evaluate", "--qrels", "q.txt", "--run", "r.txt"),
        USAGE,
        ("q.txt:1: query 'a': grade 1024 is above the maximum 1000",),
        files={"q.txt": "a 0 x 1024\n", "r.txt": "a Q0 x 1 1.0 t\n"},
    ),
    Case(
        "evaluate-with-a-grade-of-5000-digits",
        ("evaluate", "--qrels", "q.txt", "--run", "r.txt"),
        USAGE,
        ("q.txt:1: query 'a': grade of 5000 digits is above the maximum 1000",),
        files={"q.txt": "a 0 x " + "9" * 5000 + "\n", "r.txt": "a Q0 x 1 1.0 t\n"},
    ),
    Case(
        "evaluate-with-a-superscript-grade",
        ("evaluate", "--qrels", "q.txt", "--run", "r.txt"),
        USAGE,
        ("q.txt:1: query 'a': grade '\u00b2' is not an integer",),
        files={"q.txt": "a 0 x \u00b2\n", "r.txt": "a Q0 x 1 1.0 t\n"},
    ),
    # --- writes: nothing clobbered, nothing written through ------------------------------------
    Case(
        # `golden convert` wrote a fixed DST.tmp: this file was overwritten, then deleted.
        "convert-next-to-a-file-named-dst-tmp",
        ("golden", "convert", "golden.yaml", "out.json"),
        OK,
        (),
        files={"golden.yaml": GOLDEN, "out.json.tmp": "someone's notes\n"},
        written={"out.json": '"text": "refund window"'},
    ),
    Case(
        # ... and written through a symlink of that name.
        "convert-next-to-a-symlink-named-dst-tmp",
        ("golden", "convert", "golden.yaml", "out.json"),
        OK,
        (),
        files={"golden.yaml": GOLDEN, "precious.txt": "keep me\n"},
        symlinks={"out.json.tmp": "precious.txt"},
        written={"out.json": '"text": "refund window"'},
    ),
    Case(
        "convert-onto-a-symlink",
        ("golden", "convert", "golden.yaml", "out.json"),
        OK,
        (),
        files={"golden.yaml": GOLDEN, "precious.txt": "keep me\n"},
        symlinks={"out.json": "precious.txt"},
        written={"out.json": '"text": "refund window"'},
    ),
    Case(
        "convert-into-a-folder",
        ("golden", "convert", "golden.yaml", "out"),
        USAGE,
        ("cannot tell the output format of out",),
        files={"golden.yaml": GOLDEN, "out/keep": "a folder"},
    ),
    Case(
        "convert-onto-a-directory",
        ("golden", "convert", "golden.yaml", "out.json", "--to", "json"),
        USAGE,
        (
            "pytest-retrieval golden convert: error: ",
            "out.json: cannot write the golden set: the path is a directory",
        ),
        files={"golden.yaml": GOLDEN, "out.json/keep": "a folder"},
    ),
    # --- Unicode ---------------------------------------------------------------------------------
    Case(
        "validate-leakage-between-nfc-and-nfd",
        ("golden", "validate", "golden.yaml"),
        FAILED,
        ("leakage: the same text as query 'a'",),
        files={
            "golden.yaml": "version: 1\nqueries:\n  - {id: a, text: caf\u00e9, relevant: [x]}\n"
            "  - {id: b, text: cafe\u0301, relevant: [y], split: heldout}\n"
        },
    ),
    Case(
        "validate-a-lone-surrogate",
        ("golden", "validate", "golden.jsonl"),
        FAILED,
        ("golden.jsonl:1: query 'a', field 'text': query text contains a lone surrogate",),
        files={"golden.jsonl": '{"id": "a", "text": "\\ud83d", "relevant": ["x"]}\n'},
    ),
    Case(
        # A control character in a path the user named is shown escaped, on the one line.
        "missing-file-with-an-escape-in-its-name",
        ("golden", "validate", "no\x1b[2Jfile.yaml"),
        USAGE,
        ("golden set not found: no\\x1b[2Jfile.yaml",),
    ),
]


def _seed(root: Path, case: Case) -> dict[Path, bytes]:
    seeded: dict[Path, bytes] = {}
    for name, content in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        path.write_bytes(data)
        seeded[path] = data
    for name, target in case.symlinks.items():
        (root / name).symlink_to(target)
    return seeded


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_a_bad_input_to_the_console_script_is_one_line_and_the_right_status(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    seeded = _seed(tmp_path, case)

    status = main(list(case.argv))  # raising here is the failure: a traceback for the user

    captured = capsys.readouterr()
    assert status == case.status, captured.err
    if case.status == USAGE:
        assert len(captured.err.splitlines()) == 1, captured.err
    for fragment in case.messages:
        assert fragment in captured.err, f"{fragment!r} not in {captured.err!r}"
    assert "Traceback" not in captured.err
    for path, data in seeded.items():
        if path.name in case.written:
            continue
        assert path.read_bytes() == data, f"{path.name} changed"
    for name in case.symlinks:
        if name in case.written:
            assert not (tmp_path / name).is_symlink()  # replaced, not written through
        else:
            assert (tmp_path / name).is_symlink()
    for name, fragment in case.written.items():
        assert fragment in (tmp_path / name).read_text(encoding="utf-8")
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == [n for n in case.files if n.endswith(".tmp")] + [
        n for n in case.symlinks if n.endswith(".tmp")
    ]


def test_the_cli_catalogue_covers_usage_errors_failures_and_writes() -> None:
    assert {c.status for c in CASES} == {USAGE, FAILED, OK}
    assert len({c.id for c in CASES}) == len(CASES)


# --- fuzz ----------------------------------------------------------------------------------------

COMMANDS = [
    ["evaluate", "--qrels", "a.txt", "--run", "b.txt"],
    ["golden", "validate", "a.txt"],
    ["golden", "stats", "a.txt"],
    ["golden", "convert", "a.txt", "out.json"],
    ["compare", "a.txt", "b.txt"],
    ["gate", "b.txt"],
    ["report", "b.txt"],
    [],
]
OPTIONS = [
    "--alpha",
    "--mode",
    "--budget",
    "--threshold",
    "--gates",
    "--baseline",
    "--max-rows",
    "--markdown",
    "--html",
    "-m",
    "--min-grade",
    "--gain",
    "--no-relevant",
    "--format",
    "--from",
    "--to",
    "--topics",
    "--corpus",
    "--json",
    "--per-query",
    "--version",
    "--bogus",
]
VALUES = st.one_of(
    st.sampled_from(
        [
            "5",
            "0",
            "-1",
            "nan",
            "inf",
            "\u00b2",
            "1_0",
            "0.5",
            "a.txt",
            "b.txt",
            "trec",
            "json",
            "ndcg@10",
            "recall@\u00b2",
            "recall@0",
            "mrr",
            "x >= 2",
            "ndcg@10 0.02",
            "out.md",
            "-",
        ]
    ),
    # No path separators: the fuzz must not write outside its folder.
    st.text(st.characters(blacklist_characters="/\\\x00."), max_size=8),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "schema",
                    "schema_version",
                    "queries",
                    "snapshot",
                    "stages",
                    "metrics",
                    "golden",
                    "settings",
                    "results",
                    "gates",
                    "id",
                    "text",
                    "relevant",
                    "version",
                    "ks",
                    "x",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)
CONTENTS = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=64),
    JSONISH.map(json.dumps),
    st.just(artifact()),
    st.just(baseline()),
    st.just(GOLDEN),
    st.just("a 0 x 1\n"),
    st.just("a Q0 x 1 1.0 t\n"),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    command=st.sampled_from(COMMANDS),
    extra=st.lists(st.one_of(st.sampled_from(OPTIONS), VALUES), max_size=4),
    first=CONTENTS,
    second=CONTENTS,
)
def test_no_argument_list_or_file_content_makes_the_console_script_raise(
    command: list[str],
    extra: list[str],
    first: str | bytes,
    second: str | bytes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        for name, content in (("a.txt", first), ("b.txt", second)):
            data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
            Path(name).write_bytes(data)
        for leftover in ("out.json", "out.md"):
            if os.path.isfile(leftover):
                os.remove(leftover)
        status = main([*command, *extra])
    finally:
        os.chdir(old)
    captured = capsys.readouterr()
    assert status in (OK, FAILED, USAGE), captured.err
    assert "Traceback" not in captured.err
    if status == USAGE and "--help" not in extra:
        assert len(captured.err.splitlines()) == 1, captured.err
