"""The readers' bad-input catalogue: hostile files and settings, and what a user is told.

Every case here failed before the one safe reader and the guarded decoders
(``pytest_retrieval.reading``): a traceback (``ValueError``, ``RecursionError``,
``OverflowError``, ``MemoryError``, ``_csv.Error``), an INTERNALERROR (exit 3), a hang (a FIFO),
a wrong or silent number (a byte-order mark, a tampered ranking), a message at the wrong place
(a bad byte at a buffer offset, a ``-o`` typo said to be in pytest.ini). Now each one:

* exits with the documented status: the console script 2 for a usage error (the ``golden``
  commands 1, their "the input is invalid" status, listing every problem), pytest 4; or 0 where
  the input is sound and is now read right (a BOM, a pipe, a TOML array);
* says what is wrong, naming the file and the line and column where it has them, or the
  setting, and what was expected;
* loses nothing: every seeded file is byte-identical afterwards, no temporary file is left,
  and no baseline is written from a refused run.

A case that could hang on a broken reader (a FIFO) runs under a time limit; one that could
exhaust memory (``/dev/zero``, an alias bomb) runs in a subprocess with its memory capped.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import pytest
from plugin_helpers import QUIET_PLUGINS, RetrievalProject
from test_bad_inputs_cli import artifact

from pytest_retrieval.cli import main

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="FIFOs, /dev/fd and /dev/zero are POSIX"
)

USAGE, FAILED, OK = 2, 1, 0
PYTEST_USAGE = pytest.ExitCode.USAGE_ERROR

#: q1 and q2, one relevant document each.
GOLDEN = """\
version: 1
queries:
  - {id: q1, text: refund window, relevant: [d1]}
  - {id: q2, text: shipping, relevant: [d2]}
"""
QRELS = "q1 0 d1 1\nq2 0 d2 1\n"
#: q1 ranks its relevant d1 first, q2 its d2 first: every metric 1.0.
RUN = "q1 Q0 d1 1 9 t\nq1 Q0 d3 2 8 t\nq2 Q0 d2 1 9 t\n"
BOM = b"\xef\xbb\xbf"
JSONL_RUN = '{"query_id": "q1", "ranking": ["d1", "d3"]}\n{"query_id": "q2", "ranking": ["d2"]}\n'
DEEP = "[" * 100_000 + "]" * 100_000
DIGITS = "9" * 5000


def yaml_bomb(key: str, row: str) -> str:
    """A billion laughs: nine levels of nine aliases (9**9 values) in a few hundred bytes,
    the anchors inside worksheet rows (``row`` formats one with its ``key``'s value)."""
    lines = [row.format(id="b0", value="&b0 [x, x, x, x, x, x, x, x, x]")]
    for level in range(1, 9):
        refs = ", ".join([f"*b{level - 1}"] * 9)
        lines.append(row.format(id=f"b{level}", value=f"&b{level} [{refs}]"))
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail instead of hanging: a reader that waits on a FIFO is interrupted."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"no answer within {seconds:g} s: the reader hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _cap_memory() -> None:
    limit = 1536 * 1024 * 1024  # /dev/zero read whole, or an alias bomb built, ends here
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


# --- the console script ------------------------------------------------------------------------


@dataclass(frozen=True)
class Cli:
    """One console-script case: files seeded in a fresh folder, then ``pytest-retrieval
    ARGV``. ``{pipe}`` in ARGV is a pipe (``/dev/fd/N``, as ``<(command)`` gives) carrying
    ``pipe``."""

    id: str
    argv: tuple[str, ...]
    status: int
    messages: tuple[str, ...] = ()
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    fifos: tuple[str, ...] = ()
    symlinks: Mapping[str, str] = field(default_factory=dict)
    pipe: bytes | None = None
    #: Fragments of stdout (the numbers of a sound input now read right).
    out: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    #: Files the command writes, with a fragment each must hold.
    written: Mapping[str, str] = field(default_factory=dict)
    #: Run in a subprocess with memory capped (a broken reader would exhaust it).
    isolated: bool = False


BASE = {"golden.yaml": GOLDEN, "qrels.txt": QRELS, "run.trec": RUN}

CLI_CASES = [
    # --- run files and qrels: TREC ----------------------------------------------------------
    Cli(
        # Before: the BOM became part of "q1", which then missed its judgments: mrr 0.5000 and
        # "1 in the run without judgments". Both queries rank their relevant document first.
        "evaluate-a-run-with-a-byte-order-mark",
        ("evaluate", "--qrels", "qrels.txt", "--run", "bom.trec"),
        OK,
        files={**BASE, "bom.trec": BOM + RUN.encode()},
        out=("mrr          1.0000", "0 in the run without judgments"),
    ),
    Cli(
        "evaluate-qrels-with-a-byte-order-mark",
        ("evaluate", "--qrels", "bom.txt", "--run", "run.trec"),
        OK,
        files={**BASE, "bom.txt": BOM + QRELS.encode()},
        out=("mrr          1.0000", "0 missing from the run"),
    ),
    Cli(
        # Before: open() on a FIFO with no writer waited forever.
        "evaluate-a-run-that-is-a-fifo",
        ("evaluate", "--qrels", "qrels.txt", "--run", "fifo.trec"),
        USAGE,
        (
            "fifo.trec: the run file is not a regular file but a FIFO (named pipe)",
            "to read from a pipe on purpose, pass /dev/stdin",
        ),
        files=BASE,
        fifos=("fifo.trec",),
    ),
    Cli(
        "evaluate-qrels-that-are-a-fifo",
        ("evaluate", "--qrels", "fifo.txt", "--run", "run.trec"),
        USAGE,
        ("fifo.txt: the qrels file is not a regular file but a FIFO",),
        files=BASE,
        fifos=("fifo.txt",),
    ),
    Cli(
        # Before: read line by line until memory ran out (a MemoryError traceback).
        "evaluate-a-run-that-is-a-symlink-to-dev-zero",
        ("evaluate", "--qrels", "qrels.txt", "--run", "zero.trec"),
        USAGE,
        ("zero.trec: the run file is not a regular file but a character device",),
        files=BASE,
        symlinks={"zero.trec": "/dev/zero"},
        isolated=True,
    ),
    Cli(
        # Before: "invalid continuation byte at byte 5618", an offset in a read buffer and no
        # line. The é of "café" (0xE9 in Latin-1) is on line 3003 after "q1 Q0 caf".
        "evaluate-a-bad-byte-deep-in-a-run",
        ("evaluate", "--qrels", "qrels.txt", "--run", "deep.trec"),
        USAGE,
        (
            "deep.trec:3003:10: the run file is not valid UTF-8 (byte 0xe9: invalid "
            "continuation byte) (save the file as UTF-8)",
        ),
        files={
            **BASE,
            "deep.trec": RUN.encode()
            + "".join(f"q{i % 2 + 1} Q0 x{i} 3 {1 / (i + 2)} t\n" for i in range(2999)).encode()
            + b"q1 Q0 caf\xe9 5 0.0001 t\n",
        },
    ),
    Cli(
        # Before: a doc id "d\x003" was scored silently (exit 0).
        "evaluate-a-run-with-a-nul-byte",
        ("evaluate", "--qrels", "qrels.txt", "--run", "nul.trec"),
        USAGE,
        ("nul.trec:2:8: the run file holds a NUL byte, so it is not a text file",),
        files={**BASE, "nul.trec": b"q1 Q0 d1 1 9 t\nq1 Q0 d\x003 2 8 t\nq2 Q0 d2 1 9 t\n"},
    ),
    Cli(
        "evaluate-a-run-saved-as-utf16",
        ("evaluate", "--qrels", "qrels.txt", "--run", "wide.trec"),
        USAGE,
        ("wide.trec:1: the run file is UTF-16 (it starts with a UTF-16 byte-order mark)",),
        files={**BASE, "wide.trec": RUN.encode("utf-16")},
    ),
    Cli(
        # Before: accepted, and no document of any query counted as relevant (every query
        # skipped): numbers that mean nothing. A grade is at most 1000.
        "evaluate-a-min-grade-above-any-grade",
        ("evaluate", "--qrels", "qrels.txt", "--run", "run.trec", "--min-grade", "5000"),
        USAGE,
        ("argument --min-grade: '5000' is more than 1,000, the largest accepted",),
        files=BASE,
    ),
    # --- run files: JSONL and pipes, through `golden pool` -------------------------------------
    Cli(
        # Before: the format was guessed from a first read of the pipe and the run read from a
        # second, empty one: "the run file has no ranked query". d3 is q1's unjudged document.
        "pool-a-run-given-as-a-pipe",
        (
            "golden",
            "pool",
            "{pipe}",
            "--depth",
            "2",
            "--golden",
            "golden.yaml",
            "--output",
            "ws.csv",
        ),
        OK,
        files=BASE,
        pipe=RUN.encode(),
        out=("wrote 1 unjudged documents of 1 queries",),
        written={"ws.csv": "q1,d3,"},
    ),
    Cli(
        # Before: ValueError (Python's 4,300-digit limit) as a traceback.
        "pool-a-jsonl-run-with-a-5000-digit-number",
        (
            "golden",
            "pool",
            "big.jsonl",
            "--depth",
            "2",
            "--golden",
            "golden.yaml",
            "--output",
            "w.csv",
        ),
        FAILED,
        (
            "big.jsonl:1: the run file holds a number of 5,000 digits (at most 300 are read)",
            "quote long ids as strings",
        ),
        files={**BASE, "big.jsonl": '{"query_id": "q1", "ranking": [' + DIGITS + "]}\n"},
    ),
    Cli(
        # Before: RecursionError as a traceback.
        "pool-a-jsonl-run-nested-100000-deep",
        (
            "golden",
            "pool",
            "deep.jsonl",
            "--depth",
            "2",
            "--golden",
            "golden.yaml",
            "--output",
            "w.csv",
        ),
        FAILED,
        ("deep.jsonl:1: the run file nests JSON values more than 100 levels deep",),
        files={**BASE, "deep.jsonl": '{"query_id": "q1", "ranking": ' + DEEP + "}\n"},
    ),
    Cli(
        # Before: OverflowError (a 400-digit integer does not fit a float) as a traceback.
        "pool-a-jsonl-run-with-a-400-digit-latency",
        (
            "golden",
            "pool",
            "slow.jsonl",
            "--depth",
            "2",
            "--golden",
            "golden.yaml",
            "--output",
            "w.csv",
        ),
        FAILED,
        ("slow.jsonl:1: the run file holds a number of 400 digits (at most 300 are read)",),
        files={
            **BASE,
            "slow.jsonl": '{"query_id": "q1", "ranking": ["d1"], "latency_ms": '
            + "1" * 400
            + "}\n",
        },
    ),
    Cli(
        "pool-a-corpus-with-a-5000-digit-id",
        (
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
            "corpus.jsonl",
        ),
        FAILED,
        ("corpus.jsonl:2: the corpus holds a number of 5,000 digits",),
        files={**BASE, "corpus.jsonl": '{"_id": "d1", "text": "a"}\n{"_id": ' + DIGITS + "}\n"},
    ),
    Cli(
        "pool-a-corpus-nested-100000-deep",
        (
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
            "corpus.jsonl",
        ),
        FAILED,
        ("corpus.jsonl:2: the corpus nests JSON values more than 100 levels deep",),
        files={**BASE, "corpus.jsonl": '{"_id": "d1", "text": "a"}\n' + DEEP + "\n"},
    ),
    # --- worksheets, through `golden merge` ------------------------------------------------------
    Cli(
        # Before: str() of a query cell that aliased 9**8 values: hours and gigabytes.
        "merge-a-yaml-worksheet-that-is-an-alias-bomb",
        ("golden", "merge", "golden.yaml", "bomb.yaml", "--output", "new.yaml"),
        FAILED,
        ("bomb.yaml: the worksheet's YAML aliases expand it to", "(an alias bomb?)"),
        files={
            **BASE,
            "bomb.yaml": yaml_bomb(
                "query", "- {{query_id: q1, doc_id: {id}, grade: 1, query: {value}}}"
            ),
        },
        isolated=True,
    ),
    Cli(
        # Before: _csv.Error (a cell over the csv module's field limit) as a traceback.
        "merge-a-csv-worksheet-with-a-200000-character-cell",
        ("golden", "merge", "golden.yaml", "big.csv", "--output", "new.yaml"),
        FAILED,
        ("big.csv:2: the worksheet is not valid CSV (field larger than field limit (131072))",),
        files={**BASE, "big.csv": "query_id,doc_id,grade\nq1," + "x" * 200_000 + ",1\n"},
    ),
    Cli(
        "merge-a-jsonl-worksheet-with-a-5000-digit-grade",
        ("golden", "merge", "golden.yaml", "ws.jsonl", "--output", "new.yaml"),
        FAILED,
        ("ws.jsonl:1: the worksheet holds a number of 5,000 digits",),
        files={**BASE, "ws.jsonl": '{"query_id": "q1", "doc_id": "d9", "grade": ' + DIGITS + "}\n"},
    ),
    Cli(
        "merge-a-jsonl-worksheet-nested-100000-deep",
        ("golden", "merge", "golden.yaml", "ws.jsonl", "--output", "new.yaml"),
        FAILED,
        ("ws.jsonl:1: the worksheet nests JSON values more than 100 levels deep",),
        files={**BASE, "ws.jsonl": DEEP + "\n"},
    ),
    # --- golden sets, corpora and duplicate groups, through `golden validate` ------------------
    Cli(
        # Before: open() on a FIFO waited forever.
        "validate-a-golden-set-that-is-a-fifo",
        ("golden", "validate", "fifo.yaml"),
        FAILED,
        ("fifo.yaml: the golden set is not a regular file but a FIFO",),
        fifos=("fifo.yaml",),
    ),
    Cli(
        "validate-a-golden-set-that-is-a-symlink-to-dev-zero",
        ("golden", "validate", "zero.yaml"),
        FAILED,
        ("zero.yaml: the golden set is not a regular file but a character device",),
        symlinks={"zero.yaml": "/dev/zero"},
        isolated=True,
    ),
    Cli(
        # Before: RecursionError in the YAML builder, a traceback. Named at the first list with
        # more than 100 levels inside it: the 400th of the 500, at line 3, column 31 + 400.
        "validate-a-yaml-golden-set-nested-500-deep",
        ("golden", "validate", "deep.yaml"),
        FAILED,
        ("deep.yaml:3:431: the golden set nests YAML values more than 100 levels deep",),
        files={
            "deep.yaml": "version: 1\nqueries:\n  - {id: a, text: t, relevant: "
            + "[" * 500
            + "x"
            + "]" * 500
            + "}\n"
        },
    ),
    Cli(
        # Two JSONL files joined (`cat a.jsonl b.jsonl`), the second written with a BOM: before,
        # "JSON syntax error: Expecting value" at line 2. Both queries are read.
        "validate-joined-jsonl-files-with-a-byte-order-mark-inside",
        ("golden", "validate", "joined.jsonl"),
        OK,
        files={
            "joined.jsonl": b'{"id": "q1", "text": "refund window", "relevant": ["d1"]}\n'
            + BOM
            + b'{"id": "q2", "text": "shipping", "relevant": ["d2"]}\n'
        },
        out=("ok: joined.jsonl: 2 queries",),
    ),
    Cli(
        # Before: a NUL inside a query text was accepted (exit 0).
        "validate-a-csv-golden-set-with-a-nul-byte",
        ("golden", "validate", "nul.csv"),
        FAILED,
        ("nul.csv:2:10: the golden set holds a NUL byte",),
        files={"nul.csv": b"id,text,relevant\nq1,refund\x00 window,d1\n"},
    ),
    Cli(
        "validate-against-a-corpus-that-is-a-fifo",
        ("golden", "validate", "golden.yaml", "--corpus", "fifo.tsv"),
        FAILED,
        ("fifo.tsv: the corpus is not a regular file but a FIFO",),
        files=BASE,
        fifos=("fifo.tsv",),
    ),
    Cli(
        "validate-against-a-corpus-nested-100000-deep",
        ("golden", "validate", "golden.yaml", "--corpus", "corpus.jsonl"),
        FAILED,
        ("corpus.jsonl:2: the corpus nests JSON values more than 100 levels deep",),
        files={**BASE, "corpus.jsonl": '{"_id": "d1"}\n' + DEEP + "\n"},
    ),
    Cli(
        # Before: "is not valid UTF-8 (invalid continuation byte)", no line. The é is the 7th
        # character of line 3 ("d3<TAB>caf").
        "validate-against-a-corpus-with-a-bad-byte",
        ("golden", "validate", "golden.yaml", "--corpus", "corpus.tsv"),
        FAILED,
        ("corpus.tsv:3:7: the corpus is not valid UTF-8 (byte 0xe9: invalid continuation byte)",),
        files={**BASE, "corpus.tsv": b"d1\tone\nd2\ttwo\nd3\tcaf\xe9\n"},
    ),
    Cli(
        # Before: RecursionError as a traceback.
        "validate-with-duplicate-groups-nested-100000-deep",
        ("golden", "validate", "golden.yaml", "--duplicates", "dup.json"),
        USAGE,
        ("dup.json: the duplicates file nests JSON values more than 100 levels deep",),
        files={**BASE, "dup.json": DEEP},
    ),
    # --- gates files, through `gate` --------------------------------------------------------------
    Cli(
        "gate-with-a-gates-file-that-is-a-fifo",
        ("gate", "run.json", "--gates", "gates.yaml"),
        USAGE,
        ("gates.yaml: the gates file is not a regular file but a FIFO",),
        files={"run.json": artifact()},
        fifos=("gates.yaml",),
    ),
    Cli(
        # Before: "cannot read the gates file: 'utf-8' codec can't decode byte 0xe9 in position
        # 51", no line. The é follows "  - mrr >= 0.5 # caf" on line 3.
        "gate-with-a-gates-file-in-latin-1",
        ("gate", "run.json", "--gates", "gates.yaml"),
        USAGE,
        ("gates.yaml:3:21: the gates file is not valid UTF-8 (byte 0xe9",),
        files={
            "run.json": artifact(),
            "gates.yaml": b"version: 1\nthresholds:\n  - mrr >= 0.5 # caf\xe9\n",
        },
    ),
    # --- the cache --------------------------------------------------------------------------
    Cli(
        # Before: "cannot be read (cannot rollback - no transaction is active)", SQLite's words
        # for reading a device.
        "cache-show-on-a-cache-file-that-is-a-symlink-to-dev-zero",
        ("cache", "show", "--cache-dir", "cache"),
        FAILED,
        ("cache/runs.sqlite3: is not a regular file but a character device",),
        files={"cache/.keep": ""},
        symlinks={"cache/runs.sqlite3": "/dev/zero"},
    ),
    # --- `pytest-retrieval run` ---------------------------------------------------------------
    Cli(
        # Before: OverflowError (a wait too long for the clock) as a traceback.
        "run-with-a-timeout-of-1e300-seconds",
        (
            "run",
            "golden.yaml",
            "--retriever",
            "tiny:build",
            "--output",
            "out.jsonl",
            "--timeout",
            "1e300",
        ),
        USAGE,
        ("argument --timeout: '1e300' is more than 86,400 seconds (a day); 0 means no limit",),
        files={**BASE, "tiny.py": "def build():\n    return lambda text, k: ['d1']\n"},
    ),
]


#: The adversarial pass: what a hostile user tries next (empty files, symlink loops, a folder
#: where a file belongs, keys written twice, old Mac line ends, lone surrogates, NaN). Each of
#: these was accepted silently, misnamed or misread before.
ADVERSARIAL_CLI = [
    Cli(
        # Before: exit 0 and every metric 0.0000 ("2 missing from the run"), where the same
        # file given to pytest, or to `golden pool`, is refused.
        "evaluate-an-empty-run-file",
        ("evaluate", "--qrels", "qrels.txt", "--run", "empty.trec"),
        USAGE,
        (
            "empty.trec: the run file has no ranked query (trec format) (write one line per "
            "ranked document (qid Q0 docid rank score tag))",
        ),
        files={**BASE, "empty.trec": ""},
    ),
    Cli(
        # Before: exit 0, "0 evaluated" and a table of dashes.
        "evaluate-qrels-of-blank-lines-only",
        ("evaluate", "--qrels", "blank.txt", "--run", "run.trec"),
        USAGE,
        ("blank.txt: the qrels file has no judgments (write one 'qid iter docid grade' line",),
        files={**BASE, "blank.txt": "\n  \n\t\n"},
    ),
    Cli(
        # Before: "golden set not found: loop.yaml", of a file that is there.
        "validate-a-golden-set-that-is-a-symlink-loop",
        ("golden", "validate", "loop.yaml"),
        FAILED,
        (
            "loop.yaml: the golden set cannot be read: Too many levels of symbolic links (the "
            "path is a symbolic link loop: point the link at the file)",
        ),
        symlinks={"loop.yaml": "loop.yaml"},
        absent=("not found",),
    ),
    Cli(
        "pool-a-run-that-is-a-symlink-loop",
        (
            "golden",
            "pool",
            "loop.trec",
            "--depth",
            "2",
            "--golden",
            "golden.yaml",
            "--output",
            "w.csv",
        ),
        FAILED,
        ("loop.trec: the run file cannot be read: Too many levels of symbolic links",),
        files=BASE,
        symlinks={"loop.trec": "loop.trec"},
        absent=("not found",),
    ),
    Cli(
        "gate-with-a-gates-file-that-is-a-symlink-loop",
        ("gate", "run.json", "--gates", "loop.yaml"),
        USAGE,
        ("loop.yaml: the gates file cannot be read: Too many levels of symbolic links",),
        files={"run.json": artifact()},
        symlinks={"loop.yaml": "loop.yaml"},
        absent=("not found",),
    ),
    Cli(
        # Before: read as a BEIR folder: "BEIR folder without queries.jsonl", "... without qrels".
        "validate-a-golden-set-that-is-a-folder-named-yaml",
        ("golden", "validate", "golden.yaml"),
        FAILED,
        ("golden.yaml: the golden set path is a directory (name a file)",),
        files={"golden.yaml/.keep": ""},
        absent=("BEIR",),
    ),
    Cli(
        # Old Mac line ends (CR only), as every line reader of run files takes them. Before:
        # one line, "not valid JSON (Extra data)".
        "validate-a-jsonl-golden-set-with-old-mac-line-ends",
        ("golden", "validate", "mac.jsonl"),
        OK,
        files={
            "mac.jsonl": '{"id": "q1", "text": "refund window", "relevant": ["d1"]}\r'
            '{"id": "q2", "text": "shipping", "relevant": ["d2"]}\r'
        },
        out=("ok: mac.jsonl: 2 queries",),
    ),
    Cli(
        # Before: the topics file was one line, so q2 had "no text for this query".
        "validate-trec-qrels-with-topics-in-old-mac-line-ends",
        ("golden", "validate", "qrels.txt", "--format", "trec", "--topics", "topics.tsv"),
        OK,
        files={**BASE, "topics.tsv": "q1\trefund window\rq2\tshipping\r"},
        out=("ok: qrels.txt: 2 queries",),
    ),
    Cli(
        # A U+2028 (LINE SEPARATOR) inside a JSON string is text; str.splitlines cut the row
        # there. Before: "ws.jsonl:1: the worksheet is not valid JSON (Unterminated string".
        "merge-a-jsonl-worksheet-with-a-line-separator-in-a-cell",
        ("golden", "merge", "golden.yaml", "ws.jsonl", "--output", "new.yaml"),
        OK,
        files={
            **BASE,
            "ws.jsonl": '{"query_id": "q1", "doc_id": "d3", "grade": 1, "text": "a\u2028b"}\n',
        },
        out=("merged 1 judgments into new.yaml (1 added",),
        written={"new.yaml": "relevant: [d1, d3]"},
    ),
    Cli(
        # Before: json.loads kept the last grade, 0, silently: a judgment the labeller never
        # gave (merged as "1 added").
        "merge-a-jsonl-worksheet-with-a-grade-written-twice",
        ("golden", "merge", "golden.yaml", "ws.jsonl", "--output", "new.yaml"),
        FAILED,
        (
            "ws.jsonl:1: key 'grade' appears twice in one object (JSON would keep only the "
            "last) (keep one of the two)",
        ),
        files={**BASE, "ws.jsonl": '{"query_id": "q1", "doc_id": "d3", "grade": 2, "grade": 0}\n'},
    ),
    Cli(
        # Before: the safe YAML loader kept the last grade silently.
        "merge-a-yaml-worksheet-with-a-grade-written-twice",
        ("golden", "merge", "golden.yaml", "ws.yaml", "--output", "new.yaml"),
        FAILED,
        ("ws.yaml:1:40: key 'grade' appears twice in one mapping (first on line 1)",),
        files={**BASE, "ws.yaml": "- {query_id: q1, doc_id: d3, grade: 2, grade: 0}\n"},
    ),
    Cli(
        # Before: csv.DictReader kept the last cell, 0, silently.
        "merge-a-csv-worksheet-with-the-grade-column-twice",
        ("golden", "merge", "golden.yaml", "ws.csv", "--output", "new.yaml"),
        FAILED,
        ("ws.csv:1: the worksheet's column 'grade' appears twice in the header (keep one)",),
        files={**BASE, "ws.csv": "query_id,doc_id,grade,grade\nq1,d3,2,0\n"},
    ),
    Cli(
        # Before: d1 was put in group "h" alone (the last key), and no copies were found.
        "validate-with-duplicate-groups-naming-a-doc-twice",
        ("golden", "validate", "golden.yaml", "--duplicates", "dup.json"),
        USAGE,
        ("dup.json: key 'd1' appears twice in one object (JSON would keep only the last)",),
        files={**BASE, "dup.json": '{"d1": "g", "d2": "g", "d1": "h"}'},
    ),
    Cli(
        # Before: both `thresholds:` lists were gated; YAML itself would keep only the last.
        "gate-with-a-gates-file-writing-thresholds-twice",
        ("gate", "run.json", "--gates", "gates.yaml"),
        USAGE,
        ("gates.yaml:4:1: key 'thresholds' appears twice in one mapping (first on line 2)",),
        files={
            "run.json": artifact(),
            "gates.yaml": "version: 1\nthresholds:\n  - mrr >= 0.99\nthresholds:\n  - mrr >= 0\n",
        },
    ),
    Cli(
        # Before: "d\ud800" never matched a judged id (the golden set refuses it), and the
        # worksheet wrote it back as the six characters \ud800, another id.
        "pool-a-jsonl-run-with-a-lone-surrogate-doc-id",
        (
            "golden",
            "pool",
            "run.jsonl",
            "--depth",
            "2",
            "--golden",
            "golden.yaml",
            "--output",
            "w.csv",
        ),
        FAILED,
        (
            "run.jsonl:1: query 'q1': ranking item 1: the doc id contains a lone surrogate "
            "(U+D800), which is not a character",
        ),
        files={**BASE, "run.jsonl": '{"query_id": "q1", "ranking": ["d\\ud800", "d3"]}\n'},
    ),
    Cli(
        # Before: a worksheet written without a single text (the context columns blank), where
        # `golden validate --corpus` and pytest refuse the same file.
        "pool-with-an-empty-corpus",
        (
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
            "corpus.jsonl",
        ),
        FAILED,
        ("corpus.jsonl: the corpus holds no document id",),
        files={**BASE, "corpus.jsonl": "\n\n"},
    ),
    Cli(
        # Before: a line that is no document was skipped silently.
        "pool-with-a-corpus-line-that-is-no-document",
        (
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
            "corpus.jsonl",
        ),
        FAILED,
        ("corpus.jsonl:2: not a JSON object with an '_id' (or 'id') string",),
        files={**BASE, "corpus.jsonl": '{"_id": "d3", "text": "x"}\n["d1", "refunds"]\n'},
    ),
    Cli(
        # Before: rendered (exit 0) with recall@1 = NaN; 7.5 and Infinity the same.
        "report-an-artifact-with-a-nan-mean",
        ("report", "run.json"),
        USAGE,
        (
            "run.json: field 'results[0].metrics': recall@1 = nan is not a number between 0 "
            "and 1 (or null)",
        ),
        files={"run.json": artifact().replace('"recall@1": 0.5', '"recall@1": NaN', 1)},
    ),
]
CLI_CASES += ADVERSARIAL_CLI


def _seed(root: Path, case: Cli) -> dict[Path, bytes]:
    seeded = {}
    for name, content in case.files.items():
        data = content.encode() if isinstance(content, str) else content
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
        seeded[root / name] = data
    for name in case.fifos:
        os.mkfifo(root / name)
    for name, target in case.symlinks.items():
        (root / name).symlink_to(target)
    return seeded


def _run_isolated(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_retrieval.cli", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_cap_memory,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CLI_CASES])
def test_a_hostile_file_given_to_the_console_script_fails_cleanly_and_loses_nothing(
    case: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # `run --retriever tiny:build`
    seeded = _seed(tmp_path, case)
    argv = list(case.argv)
    read_end: int | None = None
    if case.pipe is not None:
        read_end, write_end = os.pipe()
        payload = case.pipe

        def feed() -> None:
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)

        threading.Thread(target=feed, daemon=True).start()
        argv = [f"/dev/fd/{read_end}" if a == "{pipe}" else a for a in argv]
    try:
        if case.isolated:
            status, out, err = _run_isolated(argv, tmp_path)
        else:
            with time_limit(30):
                status = main(argv)  # raising here is the failure: a traceback for the user
            captured = capsys.readouterr()
            out, err = captured.out, captured.err
    finally:
        if read_end is not None:
            os.close(read_end)

    assert status == case.status, err
    assert "Traceback" not in err
    if case.status == USAGE:
        assert len(err.splitlines()) == 1, err
    for fragment in case.messages:
        assert fragment in err, f"{fragment!r} not in {err!r}"
    for fragment in case.out:
        assert fragment in out, f"{fragment!r} not in {out!r}"
    for fragment in case.absent:
        assert fragment not in out + err
    for path, data in seeded.items():
        assert path.read_bytes() == data, f"{path.name} changed"
    for name in case.fifos:
        assert (tmp_path / name).is_fifo()
    for name in case.symlinks:
        assert (tmp_path / name).is_symlink()
    for name, fragment in case.written.items():
        assert fragment in (tmp_path / name).read_text(encoding="utf-8")
    given = {name.split("/")[0] for name in [*case.files, *case.fifos, *case.symlinks]}
    made = {p.name for p in tmp_path.iterdir()} - given
    assert made - set(case.written) - {"__pycache__"} == set()


# --- the plugin ----------------------------------------------------------------------------------

CONFTEST = """\
import pytest

RANKINGS = {"refund window": ["d1", "d3"], "shipping": ["d9", "d2"]}


@pytest.fixture(scope="session")
def retriever_under_test():
    return lambda text, k: RANKINGS[text][:k]
"""
TESTS = "def test_run(retrieval_run):\n    pass\n"


@dataclass(frozen=True)
class Plugin:
    """One pytest case: the project (golden set, conftest above, ``ini`` as pytest.ini or
    ``pyproject`` as pyproject.toml), then ``pytest ARGS --retrieval-json out.json``."""

    id: str
    status: int
    messages: tuple[str, ...] = ()
    ini: Mapping[str, str] = field(default_factory=dict)
    pyproject: str | None = None
    args: tuple[str, ...] = ()
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    fifos: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    #: Overall metric values the artifact must hold (a sound input now read right).
    metrics: Mapping[str, float] = field(default_factory=dict)
    #: A first run (its args) and what is done to its output before the case runs.
    before: tuple[str, ...] | None = None
    tamper: Callable[[Path], None] | None = None
    #: In a subprocess under a time limit (a broken reader would hang the test run).
    subprocess: bool = False
    #: Refused once the run started: the artifact is rewritten with the status "refused".
    stopped: bool = False
    #: Environment variables; ``{root}`` is the project's folder.
    env: Mapping[str, str] = field(default_factory=dict)
    #: Symbolic links made in the project: name -> target.
    symlinks: Mapping[str, str] = field(default_factory=dict)


def _deep_cache_row(root: Path) -> None:
    """Edit one cached ranking to nest 100,000 lists deep, its checksum made to match (the
    formula is in the code: checksums catch damage, not an adversary)."""
    from pytest_retrieval.run.cachekey import row_checksum

    db = sqlite3.connect(root / ".retrieval-cache" / "runs.sqlite3", isolation_level=None)
    try:
        key = db.execute("SELECT key FROM entries ORDER BY key").fetchone()[0]
        value = '{"ranking": ' + DEEP + "}"
        db.execute(
            "UPDATE entries SET value = ?, checksum = ? WHERE key = ?",
            (value, row_checksum(key, value), key),
        )
    finally:
        db.close()


BASELINE_SEED = b'{"seeded": "a baseline a refused run must leave alone"}\n'

PLUGIN_CASES = [
    # --- settings -----------------------------------------------------------------------------
    Plugin(
        # Before: TypeError joining the integers pytest hands through: INTERNALERROR, exit 3.
        # q1 ranks d1 first, q2 ranks d2 second: recall@1 = (1 + 0) / 2, recall@2 = 1. (Each
        # ranking holds two documents: a K of 3 would have no number, @K means K documents.)
        "pyproject-retrieval-ks-as-a-toml-array",
        pytest.ExitCode.OK,
        pyproject='[tool.pytest.ini_options]\nretrieval_golden = "golden.yaml"\n'
        "retrieval_ks = [1, 2]\n",
        metrics={"recall@1": 0.5, "recall@2": 1.0},
    ),
    Plugin(
        "pyproject-retrieval-timeout-as-a-toml-array",
        PYTEST_USAGE,
        ("`retrieval_timeout = [5, 6]` in pyproject.toml: is a list, and this setting takes one",),
        pyproject='[tool.pytest.ini_options]\nretrieval_golden = "golden.yaml"\n'
        "retrieval_ks = [1, 2]\nretrieval_timeout = [5, 6]\n",
    ),
    Plugin(
        # Before: OverflowError inside the run: the run errored (exit 1).
        "a-timeout-of-1e300-seconds",
        PYTEST_USAGE,
        ("--retrieval-timeout 1e300: '1e300' is more than 86,400 seconds (a day)",),
        args=("--retrieval-timeout", "1e300"),
    ),
    Plugin(
        # Before: "pytest.ini: unknown ini key retrieval_threshold", a file that never had it.
        "an-unknown-key-given-with-o",
        PYTEST_USAGE,
        (
            "-o/--override-ini retrieval_threshold=...: unknown ini key retrieval_threshold "
            "(did you mean retrieval_thresholds?)",
        ),
        args=("-o", "retrieval_threshold=mrr >= 0.5"),
        absent=("pytest.ini: unknown ini key",),
    ),
    Plugin(
        "a-bad-value-given-with-o",
        PYTEST_USAGE,
        ("`-o retrieval_ks=ten`: 'ten' is not a positive integer",),
        args=("-o", "retrieval_ks=ten"),
        absent=("in pytest.ini",),
    ),
    Plugin(
        # Before: exit 0 and a baseline claiming five runs' spread from one stored run.
        "baseline-runs-over-a-run-file",
        PYTEST_USAGE,
        ("retrieval_baseline_runs = 5 averages 5 calls of the retriever", "retrieval_run"),
        args=(
            "--retrieval-run=run.jsonl",
            "--retrieval-update-baseline",
            "--retrieval-baseline=base.json",
            "--retrieval-baseline-runs=5",
        ),
        files={"run.jsonl": JSONL_RUN, "base.json": BASELINE_SEED},
    ),
    Plugin(
        "baseline-runs-over-a-replayed-cache",
        PYTEST_USAGE,
        ("retrieval_baseline_runs = 3 averages 3 calls", "retrieval_cache = replay"),
        args=(
            "--retrieval-cache=replay",
            "--retrieval-update-baseline",
            "--retrieval-baseline=base.json",
            "--retrieval-baseline-runs=3",
        ),
        files={"base.json": BASELINE_SEED},
        before=("--retrieval-cache=use",),
    ),
    # --- run files -----------------------------------------------------------------------------
    Plugin(
        "a-run-file-that-is-a-fifo",
        PYTEST_USAGE,
        ("fifo.trec: the run file is not a regular file but a FIFO",),
        args=("--retrieval-run=fifo.trec",),
        fifos=("fifo.trec",),
        subprocess=True,
    ),
    Plugin(
        # Before: "\ufeffq1" was an unknown query and q1 scored as an empty ranking: mrr 0.5.
        # Both queries rank their relevant document first: mrr 1.
        "a-trec-run-file-with-a-byte-order-mark",
        pytest.ExitCode.OK,
        args=("--retrieval-run=bom.trec",),
        files={"bom.trec": BOM + RUN.encode()},
        metrics={"mrr@2": 1.0, "recall@1": 1.0},
    ),
    Plugin(
        # Before: ValueError in configure: INTERNALERROR, exit 3.
        "a-jsonl-run-file-with-a-5000-digit-number",
        PYTEST_USAGE,
        ("run.jsonl:1: the run file holds a number of 5,000 digits (at most 300 are read)",),
        args=("--retrieval-run=run.jsonl",),
        files={
            "run.jsonl": '{"query_id": "q1", "ranking": ["d1"], "latency_ms": ' + DIGITS + "}\n"
        },
    ),
    Plugin(
        # Before: accepted, and the artifact then held `Infinity`, which is not JSON.
        "a-jsonl-run-file-with-an-infinite-latency",
        PYTEST_USAGE,
        (
            "run.jsonl:1: query 'q1': latency_ms Infinity is not a number of milliseconds "
            "(finite, >= 0)",
        ),
        args=("--retrieval-run=run.jsonl",),
        files={"run.jsonl": '{"query_id": "q1", "ranking": ["d1"], "latency_ms": 1e999}\n'},
    ),
    Plugin(
        # A TOML string can hold a NUL; before, os.open's ValueError was an INTERNALERROR.
        "a-run-file-path-holding-a-nul",
        PYTEST_USAGE,
        ("the run file path holds a NUL character",),
        pyproject='[tool.pytest.ini_options]\nretrieval_golden = "golden.yaml"\n'
        'retrieval_ks = "1,2"\nretrieval_run = "run\\u0000.jsonl"\n',
    ),
    # --- side files ------------------------------------------------------------------------------
    Plugin(
        # Before: RecursionError in configure: INTERNALERROR, exit 3.
        "duplicate-groups-nested-100000-deep",
        PYTEST_USAGE,
        ("dup.json: the duplicates file nests JSON values more than 100 levels deep",),
        ini={"retrieval_duplicates": "dup.json"},
        files={"dup.json": DEEP},
    ),
    Plugin(
        # Before: ValueError in the run: the run errored (exit 1).
        "a-json-doc-id-map-with-a-5000-digit-number",
        PYTEST_USAGE,
        ("map.json: retrieval_doc_id_map: the doc-id map holds a number of 5,000 digits",),
        ini={"retrieval_doc_id_map": "map.json"},
        files={"map.json": '{"d1#0": ' + DIGITS + "}"},
        stopped=True,
    ),
    Plugin(
        "a-gates-file-that-is-a-fifo",
        PYTEST_USAGE,
        ("gates.yaml: the gates file is not a regular file but a FIFO",),
        ini={"retrieval_gates_file": "gates.yaml"},
        fifos=("gates.yaml",),
        subprocess=True,
    ),
    Plugin(
        # Before: opening it for writing waited forever for a reader, after the run.
        "a-step-summary-that-is-a-fifo",
        pytest.ExitCode.OK,
        ("warning: could not append to $GITHUB_STEP_SUMMARY (No such device or address)",),
        fifos=("summary.fifo",),
        env={"GITHUB_STEP_SUMMARY": "{root}/summary.fifo"},
        subprocess=True,
    ),
    Plugin(
        "a-corpus-that-is-a-fifo",
        PYTEST_USAGE,
        ("corpus.tsv: the corpus is not a regular file but a FIFO",),
        ini={"retrieval_corpus": "corpus.tsv"},
        fifos=("corpus.tsv",),
        subprocess=True,
    ),
    # --- the cache ----------------------------------------------------------------------------
    Plugin(
        # Before: SQLite's "cannot be opened (disk I/O error)".
        "a-cache-file-that-is-a-fifo",
        pytest.ExitCode.OK,
        ("runs.sqlite3: is not a regular file but a FIFO", "this run calls the retriever"),
        args=("--retrieval-cache=use",),
        files={".retrieval-cache/.keep": ""},
        fifos=(".retrieval-cache/runs.sqlite3",),
        metrics={"mrr@2": 0.75},
    ),
    Plugin(
        # Before: RecursionError reading the row: the run errored (exit 1). Replay reads only
        # the cache, so a damaged one refuses the run.
        "a-cache-row-nested-100000-deep-under-replay",
        PYTEST_USAGE,
        ("runs.sqlite3: is damaged: the entry", "cannot be read", "nests JSON values more than"),
        args=("--retrieval-cache=replay",),
        before=("--retrieval-cache=use",),
        tamper=_deep_cache_row,
    ),
    Plugin(
        # Under use, a damaged cache is said and the retriever answers instead, with the
        # conftest's rankings: q1 [d1, d3] (RR 1), q2 [d9, d2] (RR 1/2): mrr 0.75.
        "a-cache-row-nested-100000-deep-under-use",
        pytest.ExitCode.OK,
        ("runs.sqlite3: is damaged", "this run calls the retriever for every query"),
        args=("--retrieval-cache=use",),
        before=("--retrieval-cache=use",),
        tamper=_deep_cache_row,
        metrics={"mrr@2": 0.75},
    ),
]


ADVERSARIAL_PLUGIN = [
    Plugin(
        # Before: json.loads kept the last "ranking", so q1 was scored on [d3] (mrr 0.5 where
        # the file's first ranking gives 1), exit 0.
        "a-jsonl-run-file-with-a-ranking-written-twice",
        PYTEST_USAGE,
        (
            "run.jsonl:1: key 'ranking' appears twice in one object (JSON would keep only the "
            "last) (keep one of the two)",
        ),
        args=("--retrieval-run=run.jsonl",),
        files={
            "run.jsonl": '{"query_id": "q1", "ranking": ["d1", "d3"], "ranking": ["d3"]}\n'
            '{"query_id": "q2", "ranking": ["d2"]}\n'
        },
    ),
    Plugin(
        # Before: the last line won silently: d3's hits counted for d1.
        "a-tsv-doc-id-map-mapping-a-chunk-to-two-documents",
        PYTEST_USAGE,
        (
            "map.tsv:3: retrieval_doc_id_map: chunk 'd3' maps to 'd3' on line 2 and to 'd1' here",
            "Fix: give each chunk id one document id",
        ),
        ini={"retrieval_doc_id_map": "map.tsv"},
        files={"map.tsv": "d1\td1\nd3\td3\nd3\td1\nd9\td9\nd2\td2\n"},
        stopped=True,
    ),
    Plugin(
        "a-json-doc-id-map-writing-a-chunk-twice",
        PYTEST_USAGE,
        ("map.json: retrieval_doc_id_map: key 'd3' appears twice in one object",),
        ini={"retrieval_doc_id_map": "map.json"},
        files={"map.json": '{"d1": "d1", "d3": "d3", "d9": "d9", "d2": "d2", "d3": "d1"}'},
        stopped=True,
    ),
    Plugin(
        # Before: the last "_id" (d1) was the document, the first (d7) dropped silently.
        "a-corpus-record-writing-its-id-twice",
        PYTEST_USAGE,
        ("corpus.jsonl:1: key '_id' appears twice in one object",),
        ini={"retrieval_corpus": "corpus.jsonl"},
        files={"corpus.jsonl": '{"_id": "d7", "_id": "d1"}\n{"_id": "d2"}\n'},
    ),
    Plugin(
        "duplicate-groups-naming-a-doc-twice",
        PYTEST_USAGE,
        ("dup.json: key 'd1' appears twice in one object",),
        ini={"retrieval_duplicates": "dup.json"},
        files={"dup.json": '{"d1": "g", "d3": "g", "d1": "h"}'},
    ),
    Plugin(
        # Before: "no such file or folder", of a link that is there.
        "a-golden-set-that-is-a-symlink-loop",
        PYTEST_USAGE,
        (
            "loop.yaml: the golden set cannot be read: Too many levels of symbolic links (the "
            "path is a symbolic link loop: point the link at the file)",
        ),
        ini={"retrieval_golden": "loop.yaml"},
        symlinks={"loop.yaml": "loop.yaml"},
        absent=("no such file",),
    ),
]
PLUGIN_CASES += ADVERSARIAL_PLUGIN


def _write_project(root: Path, case: Plugin) -> dict[Path, bytes]:
    (root / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "test_run.py").write_text(TESTS, encoding="utf-8")
    if case.pyproject is not None:
        (root / "pyproject.toml").write_text(case.pyproject, encoding="utf-8")
    else:
        settings = {"retrieval_golden": "golden.yaml", "retrieval_ks": "1,2", **case.ini}
        lines = ["[pytest]", *(f"{key} = {value}" for key, value in settings.items())]
        (root / "pytest.ini").write_text("\n".join(lines) + "\n", encoding="utf-8")
    seeded = {}
    for name, content in case.files.items():
        data = content.encode() if isinstance(content, str) else content
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
        seeded[root / name] = data
    for name in case.fifos:
        os.mkfifo(root / name)
    for name, target in case.symlinks.items():
        (root / name).symlink_to(target)
    return seeded


def _overall(document: dict[str, object]) -> dict[str, float]:
    results = document["results"]
    assert isinstance(results, list)
    overall = [r for r in results if r["column"] == "overall" and r["stage"] == "retriever"]
    metrics: dict[str, float] = overall[0]["metrics"]
    return metrics


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PLUGIN_CASES])
def test_a_hostile_file_or_setting_given_to_pytest_fails_cleanly_and_loses_nothing(
    case: Plugin, retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = retrieval_project.path
    seeded = _write_project(root, case)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value.replace("{root}", str(root)))
    pytester = retrieval_project.pytester
    if case.before is not None:
        assert pytester.runpytest(*QUIET_PLUGINS, *case.before).ret == pytest.ExitCode.OK
    if case.tamper is not None:
        case.tamper(root)
    args = (*QUIET_PLUGINS, *case.args, "--retrieval-json", "out.json")
    if case.subprocess:
        result = pytester.runpytest_subprocess(*args, timeout=60)
    else:
        with time_limit(60):
            result = pytester.runpytest(*args)
    output = "\n".join(result.outlines + result.errlines)

    assert result.ret == case.status, output
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output
    for fragment in case.messages:
        assert fragment in output, f"{fragment!r} not in:\n{output}"
    for fragment in case.absent:
        assert fragment not in output
    for path, data in seeded.items():
        assert path.read_bytes() == data, f"{path.name} changed"
    for name in case.fifos:
        assert (root / name).is_fifo()
    if case.metrics:
        document = json.loads((root / "out.json").read_text(encoding="utf-8"))
        overall = _overall(document)
        for metric, value in case.metrics.items():
            assert overall[metric] == pytest.approx(value), (metric, overall)
    if case.stopped:
        document = json.loads((root / "out.json").read_text(encoding="utf-8"))
        assert document["status"] == "refused"
        assert document["results"] == []  # no number from a refused run
    elif case.status == PYTEST_USAGE and case.before is None:
        assert not (root / "out.json").exists()  # refused before anything ran
    leftovers = [p.name for p in root.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_the_catalogue_has_75_cases_each_with_its_own_id() -> None:
    cases = [c.id for c in CLI_CASES] + [c.id for c in PLUGIN_CASES]
    assert len(cases) >= 75
    assert len(set(cases)) == len(cases)
    statuses = {c.status for c in CLI_CASES}
    assert statuses == {USAGE, FAILED, OK}  # refused, listed as invalid, and now read right
