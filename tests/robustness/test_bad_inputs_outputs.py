"""The writing and user-code side of the bad-input catalogue: nothing lost, nothing crashes,
nothing injected.

Each case is one bad input (or fault) an adversarial user could give the console script or the
plugin, asserting what the user sees (the message, the exit status) and that nothing was lost
(every seeded file byte for byte, no output written over an input). The kinds:

* **outputs never equal to an input**: ``golden pool|merge|convert``, ``report``, ``run`` and
  the plugin's report paths refuse an output that is an input (the same path, another spelling,
  a symbolic or a hard link, a file inside an input folder) or another output (exit 2; 4 under
  pytest), naming both, writing nothing;
* **ids kept exactly**: ``golden merge`` reads ``z `` as ``z `` (a grade is never written for
  another query or document);
* **formula injection**: every CSV worksheet cell a spreadsheet would run (``=HYPERLINK``,
  ``=cmd|``, ``@SUM``, ``+``, ``-``, tab, CR) is neutralised with a ``'`` and read back exactly;
* **terminal and CI-log injection**: ESC, NUL, BEL, C1 controls, bidi overrides and lines
  starting ``::`` from ids, paths, cache contents and settings are escaped in every line
  printed (:func:`assert_clean`);
* **user code**: a ``module:factory`` (or ``--prefill`` judge, ``retrieval_doc_id`` function)
  that does not import (a syntax error, a leading dot, a missing module or attribute, an
  import that raises) or that raises is a usage error naming the setting and the cause, with
  the user's own traceback and none of our frames; a malformed ``--ray-address`` is refused
  before Ray sees it;
* **the cache**: another program's file in the cache folder is never deleted nor moved, and
  a sound cache in a read-only folder is called read-only (its hits still served), never
  damaged.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import GOLDEN_FILES, PACKAGE
from plugin_helpers import RetrievalProject

from pytest_retrieval.cli import main
from pytest_retrieval.formats.golden_io import load_golden
from pytest_retrieval.formats.worksheet import neutralise_cell, restore_cell
from pytest_retrieval.report.markdown import md_code, md_text
from pytest_retrieval.run.cachekey import CacheEntry, CacheKey
from pytest_retrieval.run.store import RunCache, cache_file
from pytest_retrieval.text import terminal_text

USAGE, FAILED, OK = 2, 1, 0
PYTEST_USAGE = 4

#: What may never reach a terminal or a CI log raw: C0 controls but tab and line feed, DEL,
#: C1 controls, line and paragraph separators, the bidi controls.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
#: Spreadsheet formula starts (OWASP), which no CSV worksheet cell may begin with.
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def assert_clean(output: str) -> None:
    """No raw control character or bidi override, and no line a CI runner reads as a workflow
    command (``::error``, ``##[``)."""
    found = UNSAFE.findall(output)
    assert found == [], f"raw {found!r} in:\n{output!r}"
    commands = [line for line in output.splitlines() if line.lstrip().startswith(("::", "##["))]
    assert commands == [], commands


# --- files the cases seed ------------------------------------------------------------------------

GOLDEN = """\
version: 1
queries:
  - {id: a, text: "=HYPERLINK(\\"http://evil.example\\",\\"click\\")", relevant: [x]}
  - {id: b, text: "'quoted on purpose", relevant: [y]}
"""
GOLDEN_JSONL = (
    '{"id": "a", "text": "alpha", "relevant": ["x"]}\n'
    '{"id": "b", "text": "beta", "relevant": ["y"]}\n'
)
#: A run whose returned ids a spreadsheet would run as formulas.
RUN_JSONL = (
    json.dumps({"query_id": "a", "ranking": ["@SUM(1+1)*cmd|' /C calc'!A0", "x", "-2+3", "+1"]})
    + "\n"
    + json.dumps({"query_id": "b", "ranking": ["=1+1", "\tTAB", "\rCR", "'q", "plain"]})
    + "\n"
)
RUN_TREC = "a Q0 x 1 1.0 t\na Q0 d1 2 0.9 t\nb Q0 d2 1 1.0 t\n"
CORPUS_TSV = "d1\t=cmd|' /C calc'!A0\nd2\t@SUM(A1:A9)\n"
#: A golden set of two queries whose ids differ only in a trailing space.
GOLDEN_SPACES = """\
version: 1
queries:
  - {id: "z", text: "zed", relevant: [d]}
  - {id: "z ", text: "zed with a space", relevant: [d]}
"""

FACTORIES = {
    "uc_syntax.py": "def build(:\n    return None\n",
    "uc_raises.py": ("import uc_helper\n\n\ndef build():\n    return uc_helper.connect()\n"),
    "uc_helper.py": (
        "def connect():\n"
        "    raise ConnectionRefusedError('vector store at localhost:6333 is down')\n"
    ),
    "uc_exits.py": "import sys\n\n\ndef build():\n    sys.exit(3)\n",
    "uc_import_raises.py": "INDEX = 1 / 0\n\n\ndef build():\n    return None\n",
    "uc_deps.py": "import a_module_nobody_installed\n\n\ndef build():\n    return None\n",
    "uc_ok.py": "def build():\n    return lambda text, k: ['x', 'y'][:k]\n",
    "uc_bad_str.py": (
        "class Unprintable(Exception):\n    def __str__(self):\n"
        "        raise RuntimeError('no')\n\n\n"
        "def build():\n    raise Unprintable()\n"
    ),
    "uc_big_grade.py": "def grade(qid, text, doc, title, body):\n    return 10**30\n",
    "uc_judge.py": (
        "def grade(qid, text, doc, title, body):\n"
        "    raise RuntimeError(f'judge model timed out on {doc}')\n"
    ),
}


def _sqlite_of_another_program(path: Path) -> None:
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE notes (body TEXT)")
    other.execute("INSERT INTO notes VALUES ('my own data')")
    other.commit()
    other.close()


def _hostile_cache(folder: Path) -> None:
    """A sound cache whose names (retriever, stage, index version) carry escapes, a bidi
    override and a line that would be a workflow command."""
    key = CacheKey(
        "retriever\u202edesrever",
        "q",
        10,
        "shop.\x1b[31mbm25\x07",
        index_version="v1\n::error file=ci.yml::pwned\x00",
    )
    with RunCache(cache_file(folder)) as cache:
        cache.put(key, CacheEntry(("a",)))


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    status: int
    messages: tuple[str, ...]
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    #: name -> target: a symbolic link (made before the run).
    symlinks: Mapping[str, str] = field(default_factory=dict)
    #: name -> target: a hard link.
    hardlinks: Mapping[str, str] = field(default_factory=dict)
    #: Files the command writes, with fragments their text must hold.
    written: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Files that must not exist afterwards (an output refused).
    not_created: tuple[str, ...] = ()
    #: Fragments that must not be in the output.
    absent: tuple[str, ...] = ()
    #: The user's traceback is shown: these fragments, and none of our frames.
    trace: tuple[str, ...] = ()
    #: Extra seeding (a cache), and extra checks on the folder afterwards.
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path], None] | None = None


def _worksheet_cells(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def _no_formula_cells(name: str) -> Callable[[Path], None]:
    def check(root: Path) -> None:
        cells = [c for row in _worksheet_cells(root / name) for c in row]
        assert cells, "empty worksheet"
        assert [c for c in cells if c.startswith(FORMULA)] == []

    return check


def _merged_into(
    name: str, query: str, doc: str, grade: int, untouched: str
) -> Callable[[Path], None]:
    def check(root: Path) -> None:
        golden = load_golden(str(root / name))
        assert golden[query].judgments[doc] == grade
        assert (
            golden[untouched].judgments
            == load_golden(str(root / "golden.yaml"))[untouched].judgments
        )

    return check


def _foreign_rows(path: Path) -> None:
    rows = sqlite3.connect(path).execute("SELECT body FROM notes").fetchall()
    assert rows == [("my own data",)]


def _cache_kept(name: str = "runs.sqlite3") -> Callable[[Path], None]:
    def check(root: Path) -> None:
        assert not (root / "cache" / f"{name}.corrupt").exists()
        rows = sqlite3.connect(root / "cache" / name).execute("SELECT body FROM notes")
        assert rows.fetchall() == [("my own data",)]

    return check


POOL = ("golden", "pool", "run.jsonl", "--depth", "5", "--golden", "golden.yaml")
MERGE = ("golden", "merge", "golden.yaml", "ws.csv")
RUN = ("run", "golden.jsonl", "--retriever")

CASES = [
    # --- outputs never equal to an input (data loss) ------------------------------------------
    Case(
        "pool-output-is-the-golden-set",
        (*POOL, "--output", "golden.yaml"),
        USAGE,
        (
            "pytest-retrieval golden pool: error: --output golden.yaml is the golden set "
            "golden.yaml (the same file): writing it would replace an input; nothing was "
            "written (name a new file for --output)",
        ),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL},
    ),
    Case(
        "pool-output-is-one-of-the-runs",
        (
            "golden",
            "pool",
            "run.txt",
            "run.jsonl",
            "--depth",
            "5",
            "--golden",
            "golden.yaml",
            "--output",
            "run.jsonl",
        ),
        USAGE,
        ("--output run.jsonl is the run run.jsonl (the same file)",),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL, "run.txt": RUN_TREC},
    ),
    Case(
        "pool-output-is-the-golden-set-spelled-another-way",
        (*POOL, "--output", "./nowhere/../golden.yaml"),
        USAGE,
        ("--output ./nowhere/../golden.yaml is the golden set golden.yaml (the same file)",),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL},
    ),
    Case(
        "pool-output-is-a-hard-link-to-the-golden-set",
        (*POOL, "--output", "labels.csv"),
        USAGE,
        ("--output labels.csv is the golden set golden.yaml (a hard link to it)",),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL},
        hardlinks={"labels.csv": "golden.yaml"},
    ),
    Case(
        "pool-output-is-a-symlink-to-a-run",
        (*POOL, "--output", "ws.jsonl"),
        USAGE,
        ("--output ws.jsonl is the run run.jsonl (a symbolic link to it)",),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL},
        symlinks={"ws.jsonl": "run.jsonl"},
    ),
    Case(
        "merge-output-is-the-worksheet",
        (*MERGE, "--output", "ws.csv"),
        USAGE,
        ("golden merge: error: --output ws.csv is the worksheet ws.csv (the same file)",),
        files={"golden.yaml": GOLDEN, "ws.csv": "query_id,doc_id,grade\na,d,1\n"},
    ),
    Case(
        # Merging in place would drop the file's comments and formatting: a new file, always.
        "merge-output-is-the-golden-set",
        (*MERGE, "--output", "golden.yaml"),
        USAGE,
        ("--output golden.yaml is the golden set golden.yaml (the same file)",),
        files={
            "golden.yaml": "# our labels, reviewed\n" + GOLDEN,
            "ws.csv": "query_id,doc_id,grade\na,d,1\n",
        },
    ),
    Case(
        "merge-output-is-a-hard-link-to-the-golden-set",
        (*MERGE, "--output", "new.yaml"),
        USAGE,
        ("--output new.yaml is the golden set golden.yaml (a hard link to it)",),
        files={"golden.yaml": GOLDEN, "ws.csv": "query_id,doc_id,grade\na,d,1\n"},
        hardlinks={"new.yaml": "golden.yaml"},
    ),
    Case(
        "convert-over-its-own-source",
        ("golden", "convert", "golden.yaml", "golden.yaml"),
        USAGE,
        (
            "pytest-retrieval golden convert: error: DST golden.yaml is SRC golden.yaml (the "
            "same file): writing it would replace an input",
        ),
        files={"golden.yaml": "# hand-written comments\n" + GOLDEN},
    ),
    Case(
        "convert-over-a-file-of-the-beir-folder-it-reads",
        ("golden", "convert", "beir", "beir/queries.jsonl"),
        USAGE,
        ("DST beir/queries.jsonl is SRC beir (a file inside it)",),
        files={
            "beir/corpus.jsonl": '{"_id": "d1", "text": "one"}\n',
            "beir/queries.jsonl": '{"_id": "q1", "text": "what"}\n',
            "beir/qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
        },
    ),
    Case(
        "report-markdown-over-the-artifact",
        ("report", "run.json", "--markdown", "run.json"),
        USAGE,
        (
            "pytest-retrieval report: error: --markdown run.json is the artifact run.json (the "
            "same file)",
        ),
        files={"run.json": (GOLDEN_FILES / "report-pass.json").read_text()},
    ),
    Case(
        "report-html-over-the-baseline",
        ("report", "run.json", "--baseline", "base.json", "--html", "base.json"),
        USAGE,
        ("--html base.json is the baseline base.json (the same file)",),
        files={
            "run.json": (GOLDEN_FILES / "report-pass.json").read_text(),
            "base.json": '{"schema": "pytest-retrieval/baseline"}',
        },
    ),
    Case(
        "report-markdown-and-html-into-one-file",
        ("report", "run.json", "--markdown", "r.md", "--html", "./r.md"),
        USAGE,
        (
            "--html ./r.md is --markdown r.md (the same file): writing it would replace an "
            "output too",
        ),
        files={"run.json": (GOLDEN_FILES / "report-pass.json").read_text()},
        not_created=("r.md",),
    ),
    Case(
        "run-output-over-the-golden-set",
        (*RUN, "uc_ok:build", "--output", "golden.jsonl"),
        USAGE,
        (
            "pytest-retrieval run: error: --output golden.jsonl is the golden set golden.jsonl "
            "(the same file)",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
    ),
    Case(
        "run-retriever-output-is-the-output",
        (
            *RUN,
            "uc_ok:build",
            "--reranker",
            "uc_ok:build",
            "--output",
            "run.jsonl",
            "--retriever-output",
            "run.jsonl",
        ),
        USAGE,
        ("--retriever-output run.jsonl is --output run.jsonl (the same file)",),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
    ),
    # --- ids kept exactly ---------------------------------------------------------------------
    Case(
        "merge-keeps-a-trailing-space-in-a-query-id",
        ("golden", "merge", "golden.yaml", "ws.csv", "--output", "new.yaml"),
        OK,
        ("merged 1 judgments into new.yaml (1 added",),
        files={"golden.yaml": GOLDEN_SPACES, "ws.csv": "query_id,doc_id,grade\nz ,e,2\n"},
        written={"new.yaml": ("id: 'z '",)},
        check=_merged_into("new.yaml", "z ", "e", 2, untouched="z"),
    ),
    Case(
        "merge-keeps-a-leading-space-in-a-doc-id",
        ("golden", "merge", "golden.yaml", "ws.csv", "--output", "new.yaml"),
        OK,
        ("merged 1 judgments",),
        files={"golden.yaml": GOLDEN_SPACES, "ws.csv": "query_id,doc_id,grade\nz, d,2\n"},
        check=_merged_into("new.yaml", "z", " d", 2, untouched="z "),
    ),
    # --- formula injection in worksheets ------------------------------------------------------
    Case(
        "pool-neutralises-formulas-in-query-texts-and-returned-ids",
        (*POOL, "--output", "ws.csv"),
        OK,
        ("wrote 8 unjudged documents of 2 queries",),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL},
        written={
            "ws.csv": (
                '"\'=HYPERLINK(""http://evil.example"",""click"")"',
                "'@SUM(1+1)*cmd|' /C calc'!A0",
                "'-2+3",
                "'+1",
                "'=1+1",
                "''quoted on purpose",
                "''q",
            )
        },
        check=_no_formula_cells("ws.csv"),
    ),
    Case(
        "pool-neutralises-formulas-in-corpus-texts",
        (
            "golden",
            "pool",
            "run.txt",
            "--depth",
            "5",
            "--golden",
            "golden.yaml",
            "--corpus",
            "corpus.tsv",
            "--output",
            "ws.csv",
        ),
        OK,
        ("wrote 2 unjudged documents",),
        files={"golden.yaml": GOLDEN, "run.txt": RUN_TREC, "corpus.tsv": CORPUS_TSV},
        written={"ws.csv": ("'=cmd|' /C calc'!A0", "'@SUM(A1:A9)")},
        check=_no_formula_cells("ws.csv"),
    ),
    Case(
        "pool-neutralises-a-run-named-like-a-formula",
        (
            "golden",
            "pool",
            "=cmd.txt",
            "--depth",
            "5",
            "--golden",
            "golden.yaml",
            "--output",
            "ws.csv",
        ),
        OK,
        ("wrote 2 unjudged documents",),
        files={"golden.yaml": GOLDEN, "=cmd.txt": RUN_TREC},
        written={"ws.csv": ("'=cmd:2",)},
        check=_no_formula_cells("ws.csv"),
    ),
    # --- terminal and CI-log injection --------------------------------------------------------
    Case(
        "cache-show-escapes-what-the-cache-file-holds",
        ("cache", "show", "--cache-dir", "cache"),
        OK,
        (
            "retriever\\u202edesrever  1",
            "shop.\\x1b[31mbm25\\x07  1",
            "v1\\n::error file=ci.yml::pwned\\x00  1",
        ),
        setup=lambda root: _hostile_cache(root / "cache"),
    ),
    Case(
        "golden-stats-escapes-the-path-the-name-and-the-corpus-version",
        ("golden", "stats", "g\x1b[2J\u202e.yaml"),
        OK,
        ("g\\x1b[2J\\u202e.yaml", "evil\\x07nametext", "v\\x1b[31m"),
        files={
            "g\x1b[2J\u202e.yaml": (
                'version: 1\nname: "evil\\anametext"\ncorpus_version: "v\\e[31m"\nqueries:\n'
                "  - {id: a, text: t, relevant: [x]}\n"
            )
        },
    ),
    Case(
        "golden-stats-json-escapes-c1-controls-and-bidi-overrides-as-json",
        ("golden", "stats", "g.yaml", "--json"),
        OK,
        ('"name": "a\\u0085b\\u202ec"',),
        files={
            "g.yaml": (
                'version: 1\nname: "a\\x85b\\u202ec"\n'
                "queries:\n  - {id: a, text: t, relevant: [x]}\n"
            )
        },
    ),
    Case(
        "golden-validate-escapes-duplicate-ids",
        ("golden", "validate", "g.yaml", "--duplicates", "dups.json"),
        OK,
        ("x\\x1b[31m", "y\\u202e"),
        files={
            "g.yaml": (
                'version: 1\nqueries:\n  - {id: "q\\x1b]0;title\\x07", text: t, '
                'relevant: ["x\\e[31m", "y\\u202e"]}\n'
            ),
            "dups.json": json.dumps([["x\x1b[31m", "y\u202e"]]),
        },
    ),
    Case(
        "golden-convert-escapes-the-output-path",
        ("golden", "convert", "golden.yaml", "out\x1b[2J\u202e.yaml"),
        OK,
        ("wrote 2 queries to out\\x1b[2J\\u202e.yaml",),
        files={"golden.yaml": GOLDEN},
    ),
    Case(
        "report-on-stdout-escapes-ids-in-code-spans",
        ("report", "run.json"),
        OK,
        (
            "| `q09\\x1b[31m\\u202e\\|\\x07` | 1.0000 | 0.5500 | -0.4500 | "
            "`doc-09\\x1b]8;;http://evil\\x07` 1 → 10 |",
        ),
        setup=lambda root: _hostile_artifact(root / "run.json"),
    ),
    # --- user code: one guarded loader --------------------------------------------------------
    Case(
        "run-factory-with-a-syntax-error",
        (*RUN, "uc_syntax:build", "--output", "run.jsonl"),
        USAGE,
        (
            "pytest-retrieval run: error: --retriever = 'uc_syntax:build': importing "
            "'uc_syntax' raised SyntaxError: invalid syntax",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
        trace=('uc_syntax.py", line 1', "def build(:", "SyntaxError: invalid syntax"),
    ),
    Case(
        "run-factory-with-a-leading-dot",
        (*RUN, ".uc_ok:build", "--output", "run.jsonl"),
        USAGE,
        (
            "--retriever = '.uc_ok:build': '.uc_ok' is a relative module name, and a setting "
            "has no package to be relative to (write the module's full dotted name",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
    ),
    Case(
        "run-factory-that-raises",
        (*RUN, "uc_raises:build", "--output", "run.jsonl"),
        USAGE,
        (
            "--retriever = 'uc_raises:build': build() raised ConnectionRefusedError: vector "
            "store at localhost:6333 is down",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
        trace=(
            'uc_raises.py", line 5, in build',
            'uc_helper.py", line 2, in connect',
            "ConnectionRefusedError: vector store at localhost:6333 is down",
        ),
    ),
    Case(
        "run-factory-that-calls-sys-exit",
        (*RUN, "uc_exits:build", "--output", "run.jsonl"),
        USAGE,
        ("--retriever = 'uc_exits:build': build() raised SystemExit: 3",),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
        trace=('uc_exits.py", line 5, in build',),
    ),
    Case(
        "run-factory-whose-module-raises-on-import",
        (*RUN, "uc_import_raises:build", "--output", "run.jsonl"),
        USAGE,
        (
            "--retriever = 'uc_import_raises:build': importing 'uc_import_raises' raised "
            "ZeroDivisionError: division by zero",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
        trace=('uc_import_raises.py", line 1, in <module>',),
    ),
    Case(
        "run-factory-whose-module-misses-a-dependency",
        (*RUN, "uc_deps:build", "--output", "run.jsonl"),
        USAGE,
        (
            "--retriever = 'uc_deps:build': importing 'uc_deps' failed: ModuleNotFoundError: "
            "No module named 'a_module_nobody_installed' (install "
            "'a_module_nobody_installed', or fix the import in your module)",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
        trace=('uc_deps.py", line 1, in <module>',),
    ),
    Case(
        "run-reranker-that-raises",
        (*RUN, "uc_ok:build", "--reranker", "uc_raises:build", "--output", "run.jsonl"),
        USAGE,
        ("--reranker = 'uc_raises:build': build() raised ConnectionRefusedError",),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
        trace=('uc_helper.py", line 2, in connect',),
    ),
    Case(
        "pool-prefill-judge-that-raises",
        (*POOL, "--prefill", "uc_judge:grade", "--output", "ws.csv"),
        USAGE,
        (
            "pytest-retrieval golden pool: error: --prefill = 'uc_judge:grade': grade() raised "
            "RuntimeError: judge model timed out on",
        ),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL, **FACTORIES},
        not_created=("ws.csv",),
        trace=('uc_judge.py", line 2, in grade',),
    ),
    Case(
        "pool-prefill-judge-with-a-syntax-error",
        (*POOL, "--prefill", "uc_syntax:build", "--output", "ws.csv"),
        USAGE,
        ("--prefill = 'uc_syntax:build': importing 'uc_syntax' raised SyntaxError",),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL, **FACTORIES},
        not_created=("ws.csv",),
        trace=("def build(:",),
    ),
    Case(
        "run-malformed-ray-address",
        (
            *RUN,
            "uc_ok:build",
            "--output",
            "run.jsonl",
            "--executor",
            "ray",
            "--ray-address",
            "::::",
        ),
        USAGE,
        (
            "pytest-retrieval run: error: --ray-address: '::::': not a Ray address (give auto, "
            "local, HOST:PORT or ray://HOST[:PORT]",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
    ),
    Case(
        # Ray retries such a port for minutes, then exits the process.
        "run-ray-address-with-a-port-out-of-range",
        (
            *RUN,
            "uc_ok:build",
            "--output",
            "run.jsonl",
            "--executor",
            "ray",
            "--ray-address",
            "localhost:99999",
        ),
        USAGE,
        ("--ray-address: 'localhost:99999': port 99999 is not in 1..65535",),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
    ),
    Case(
        "run-factory-whose-exception-cannot-be-printed",
        (*RUN, "uc_bad_str:build", "--output", "run.jsonl"),
        USAGE,
        (
            "--retriever = 'uc_bad_str:build': build() raised Unprintable: <its message could "
            "not be shown>",
        ),
        files={"golden.jsonl": GOLDEN_JSONL, **FACTORIES},
        not_created=("run.jsonl",),
        trace=('uc_bad_str.py", line 7, in build',),
    ),
    Case(
        "pool-prefill-judge-returning-a-grade-beyond-the-maximum",
        (*POOL, "--prefill", "uc_big_grade:grade", "--output", "ws.csv"),
        FAILED,
        ("expected an integer grade from 0 to 1000, or None",),
        files={"golden.yaml": GOLDEN, "run.jsonl": RUN_JSONL, **FACTORIES},
        not_created=("ws.csv",),
    ),
    Case(
        "merge-refuses-a-yaml-boolean-as-a-query-id",
        ("golden", "merge", "golden.yaml", "ws.yaml", "--output", "new.yaml"),
        FAILED,
        (
            "ws.yaml:1: query_id must be a string, got the boolean True (quote it: YAML reads "
            "unquoted yes/no/on/off/true/false as booleans)",
        ),
        files={
            "golden.yaml": "version: 1\nqueries:\n  - {id: 'True', text: t, relevant: [d]}\n",
            "ws.yaml": "- {query_id: yes, doc_id: e, grade: 1}\n",
        },
        not_created=("new.yaml",),
    ),
    # --- the cache never deletes what it did not create --------------------------------------
    Case(
        "cache-clear-leaves-another-programs-sqlite-file",
        ("cache", "clear", "--cache-dir", "cache"),
        USAGE,
        (
            "pytest-retrieval cache: error: cache/runs.sqlite3: is an SQLite database of another "
            "program (tables: notes), not a pytest-retrieval cache; nothing was cleared (it is "
            "not a file pytest-retrieval wrote, so it was left as it is: move it out of the "
            "folder, or set retrieval_cache_dir (--cache-dir) to another folder)",
        ),
        setup=lambda root: (
            (root / "cache").mkdir() or _sqlite_of_another_program(root / "cache" / "runs.sqlite3")
        ),
        check=_cache_kept(),
    ),
    Case(
        "cache-show-never-advises-clearing-another-programs-file",
        ("cache", "show", "--cache-dir", "cache"),
        FAILED,
        ("is an SQLite database of another program (tables: notes)", "left as it is"),
        absent=("cache clear", "delete the file"),
        setup=lambda root: (
            (root / "cache").mkdir() or _sqlite_of_another_program(root / "cache" / "runs.sqlite3")
        ),
        check=_cache_kept(),
    ),
    Case(
        "cache-clear-leaves-a-file-that-is-not-sqlite",
        ("cache", "clear", "--cache-dir", "cache"),
        USAGE,
        (
            "cache/runs.sqlite3: is not an SQLite database, so not a cache pytest-retrieval "
            "wrote; nothing was cleared",
        ),
        files={"cache/runs.sqlite3": "my notes, not a database\n" * 200},
    ),
    Case(
        "cache-clear-leaves-a-fifo-in-the-cache-files-place",
        ("cache", "clear", "--cache-dir", "cache"),
        USAGE,
        ("cache/runs.sqlite3: is not a regular file but a FIFO (named pipe); nothing was cleared",),
        setup=lambda root: (root / "cache").mkdir() or os.mkfifo(root / "cache" / "runs.sqlite3"),
        check=lambda root: _assert_fifo(root / "cache" / "runs.sqlite3"),
    ),
]


def _assert_fifo(path: Path) -> None:
    import stat

    assert stat.S_ISFIFO(path.lstat().st_mode)


def _damaged_cache_and_a_foreign_corrupt(folder: Path) -> None:
    folder.mkdir()
    path = cache_file(folder)
    with RunCache(path) as cache:
        cache.put(CacheKey("retriever", "q", 10, "m.f"), CacheEntry(tuple("a" * 3000)))
    path.write_bytes(path.read_bytes()[:-100])  # ours (its header), cut mid-page
    _sqlite_of_another_program(folder / "runs.sqlite3.corrupt")


def _hostile_artifact(path: Path) -> None:
    """The reference failing artifact with the query id ``q09`` and the document ``doc-09``
    (both listed in its regression table's code spans) carrying ESC, BEL, a bidi override and
    a pipe."""
    text = (GOLDEN_FILES / "report-fail.json").read_text(encoding="utf-8")
    text = text.replace('"q09"', json.dumps("q09\x1b[31m\u202e|\x07"))
    text = text.replace('"doc-09"', json.dumps("doc-09\x1b]8;;http://evil\x07"))
    path.write_text(text, encoding="utf-8")


def _seed(root: Path, case: Case) -> dict[Path, bytes]:
    seeded = {}
    for name, content in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        path.write_bytes(data)
        seeded[path] = data
    for name, target in case.symlinks.items():
        (root / name).symlink_to(target)
    for name, target in case.hardlinks.items():
        os.link(root / target, root / name)
    if case.setup is not None:
        case.setup(root)
    for path in root.rglob("*"):  # what setup made too
        if path.is_file() and not path.is_symlink():
            seeded.setdefault(path, path.read_bytes())
    return seeded


@pytest.fixture
def fresh_modules() -> Iterator[None]:
    """Forget the user modules a case imported (each case's folder has its own)."""
    before = set(sys.modules)
    path = list(sys.path)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("uc_"):
            del sys.modules[name]
    sys.path[:] = path


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks and hard links need privileges")
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_an_output_a_worksheet_a_printed_line_or_user_code_loses_nothing_and_injects_nothing(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fresh_modules: None,
) -> None:
    monkeypatch.chdir(tmp_path)
    seeded = _seed(tmp_path, case)

    status = main(list(case.argv))  # raising here is the failure: a traceback for the user

    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert status == case.status, output
    for fragment in case.messages:
        assert fragment in output, f"{fragment!r} not in {output!r}"
    for fragment in case.absent:
        assert fragment not in output, f"{fragment!r} in {output!r}"
    assert_clean(output)
    if case.status == USAGE:
        # One line: the error; then, for the user's code, their traceback and nothing of ours.
        first, *rest = captured.err.splitlines()
        assert first.startswith("pytest-retrieval "), captured.err
        assert bool(rest) == bool(case.trace), captured.err
    if case.trace:
        assert "Traceback of your code (most recent call last):" in captured.err
        for fragment in case.trace:
            assert fragment in captured.err, f"{fragment!r} not in {captured.err!r}"
        assert "pytest_retrieval" not in captured.err.split("\n", 1)[1]
        assert "importlib" not in captured.err
    for path, data in seeded.items():
        if path.name in case.written:
            continue
        assert path.read_bytes() == data, f"{path.name} changed"
    for name in case.symlinks:
        assert (tmp_path / name).is_symlink()
    for name, fragments in case.written.items():
        text = (tmp_path / name).read_text(encoding="utf-8")
        for fragment in fragments:
            assert fragment in text, f"{fragment!r} not in {name}:\n{text}"
    for name in case.not_created:
        assert not (tmp_path / name).exists(), f"{name} was written"
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []
    if case.check is not None:
        case.check(tmp_path)


def test_the_catalogue_covers_every_kind_of_bad_input() -> None:
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.status for c in CASES} == {USAGE, FAILED, OK}
    assert sum(1 for c in CASES if c.trace) >= 5


# --- the worksheet round trip --------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_a_neutralised_cell_never_starts_a_formula_and_reads_back_exactly(value: str) -> None:
    cell = neutralise_cell(value)
    assert not cell.startswith(FORMULA)
    assert restore_cell(cell) == value


def test_a_graded_worksheet_of_formula_like_ids_merges_them_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    ids = ["=1+1", "@SUM(A1)", "-2", "+3", "\ttab", "'quote", "''two", "plain", " lead"]
    (tmp_path / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    (tmp_path / "run.jsonl").write_text(
        json.dumps({"query_id": "a", "ranking": ids}) + "\n", encoding="utf-8"
    )
    assert main([*POOL, "--depth", "20", "--output", "ws.csv"]) == OK
    rows = _worksheet_cells(tmp_path / "ws.csv")
    header = rows[0]
    for row in rows[1:]:  # a labeller grades every row in a spreadsheet
        row[header.index("grade")] = "1"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    (tmp_path / "ws.csv").write_text(out.getvalue(), encoding="utf-8")

    assert main([*MERGE, "--output", "new.yaml"]) == OK, capsys.readouterr().err

    merged = load_golden(str(tmp_path / "new.yaml"))["a"].judgments
    assert {doc: merged[doc] for doc in ids} == dict.fromkeys(ids, 1)
    assert set(merged) == {"x", *ids}  # nothing else: no id rewritten, none stripped


# --- every printed line goes through the one escaping --------------------------------------------

#: Calls that write to a terminal: print, the streams' write, the terminal reporter's writes.
_WRITES = ("write", "write_line", "write_sep", "line")
_STREAMS = ("sys.stdout", "sys.stderr", "stream", "writer")


def _writes(path: Path) -> list[tuple[str, str, str]]:
    """``(module, enclosing function, first argument)`` of every call of a module that writes to
    a terminal: ``print(...)``, ``sys.stdout/stderr.write(...)``, a terminal reporter's
    ``write_line``/``write_sep``."""
    import ast

    name = path.relative_to(PACKAGE).as_posix()
    found: list[tuple[str, str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                else function
            )
            if isinstance(child, ast.Call):
                func = child.func
                writes = isinstance(func, ast.Name) and func.id == "print"
                if isinstance(func, ast.Attribute) and func.attr in _WRITES:
                    owner = ast.unparse(func.value)
                    writes = owner in _STREAMS or "terminal" in owner
                if writes:
                    first = child.args[-1] if child.args else None
                    found.append((name, function, "" if first is None else ast.unparse(first)))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def test_every_line_the_package_prints_goes_through_the_one_escaping() -> None:
    found = [w for p in sorted(PACKAGE.rglob("*.py")) for w in _writes(p)]
    # The console script's one print helper; the plugin's terminal summary, every line through
    # _safe (terminal_text); the run phase's progress line (digits and our words only).
    assert sorted({(module, function) for module, function, _arg in found}) == [
        ("cli/output.py", "echo"),
        ("phases/retrieve.py", "write"),
        ("plugin.py", "pytest_terminal_summary"),
    ]
    summary = [arg for module, function, arg in found if function == "pytest_terminal_summary"]
    assert summary == ["_safe(text)", "_safe(text)"]
    echo = [arg for module, function, arg in found if function == "echo"]
    assert echo == ["terminal_text(text) + '\\n'"]


HOSTILE = st.text(
    alphabet=st.sampled_from(
        [
            "a",
            "b",
            " ",
            ":",
            "#",
            "[",
            "\x1b",
            "\x00",
            "\x07",
            "\x85",
            "\x9b",
            "\r",
            "\n",
            "\u202e",
            "\u2066",
            "\u200f",
            "\u2028",
            "|",
            "`",
            "<",
            "=",
            "@",
        ]
    ),
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() and "\n" not in s.strip())


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(HOSTILE)
def test_no_hostile_text_survives_any_output_line(text: str) -> None:
    escaped = terminal_text(f"{text}\n::{text}\nok {text}")
    assert_clean(escaped)
    assert terminal_text(escaped) == escaped  # idempotent: escaping twice changes nothing
    assert UNSAFE.search(md_text(text)) is None
    assert UNSAFE.search(md_code(text)) is None
    assert "|" not in md_code(text).replace("\\|", "")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(HOSTILE, HOSTILE)
def test_hostile_ids_texts_and_names_print_clean_through_every_golden_command(
    tmp_path_factory: pytest.TempPathFactory, query_id: str, name: str
) -> None:
    folder = tmp_path_factory.mktemp("hostile")
    document = {
        "version": 1,
        "name": name,
        "corpus_version": query_id,
        "queries": [
            {"id": query_id, "text": "question", "relevant": [name], "slices": ["s"]},
            {"id": "other", "text": name, "relevant": ["d"], "split": "test"},
        ],
    }
    golden = folder / "g.json"
    golden.write_text(json.dumps(document), encoding="utf-8")
    (folder / "dups.json").write_text(json.dumps([[name, "d"]]), encoding="utf-8")
    (folder / "run.txt").write_text("", encoding="utf-8")
    for argv in (
        ["golden", "stats", str(golden)],
        ["golden", "stats", str(golden), "--json"],
        ["golden", "validate", str(golden), "--duplicates", str(folder / "dups.json")],
        ["golden", "convert", str(golden), str(folder / f"{query_id}.yaml")],
    ):
        out, err = io.StringIO(), io.StringIO()
        with _captured(out, err):
            status = main(argv)
        assert status in (OK, FAILED, USAGE)
        assert_clean(out.getvalue() + err.getvalue())
        if "--json" in argv and status == OK:
            assert json.loads(out.getvalue())["name"] == name


@contextmanager
def _captured(out: io.StringIO, err: io.StringIO) -> Iterator[None]:
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


# --- the plugin: the same promises under pytest --------------------------------------------------

RUN_TEST = "def test_run(retrieval_run):\n    pass\n"
#: Every golden query of plugin_helpers.GOLDEN but the held-out one, answered.
RUN_ROWS = {
    "refund": ["refund-policy"],
    "sso": ["sso-setup"],
    "invoice": ["invoices"],
    "fax": ["nothing"],
}


def _run_jsonl(rows: Mapping[str, list[str]]) -> str:
    return "".join(json.dumps({"query_id": q, "ranking": r}) + "\n" for q, r in rows.items())


GATES = "thresholds:\n  - recall@3 >= 0.1\n"


@dataclass(frozen=True)
class PluginCase:
    id: str
    args: tuple[str, ...]
    status: int
    messages: tuple[str, ...]
    ini: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    hardlinks: Mapping[str, str] = field(default_factory=dict)
    conftest: str | None = None
    absent: tuple[str, ...] = ()
    trace: tuple[str, ...] = ()
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path], None] | None = None


PLUGIN_CASES = [
    # --- every line through the plugin's one writer -------------------------------------------
    PluginCase(
        "run-file-ids-with-bel-and-a-bidi-override",
        ("--retrieval-run", "run.jsonl"),
        OK,
        ("query ids in the run are not in the golden set (ignored): c\\x07\\u202ed\\x1b[2K",),
        files={"run.jsonl": _run_jsonl({**RUN_ROWS, "c\x07\u202ed\x1b[2K": ["x"]})},
    ),
    PluginCase(
        "index-version-with-escapes",
        (),
        OK,
        ("index version v1\\x1b[2J\\u202eevil",),
        ini={"retrieval_cache": "use", "retrieval_index_version": "v1\x1b[2J\u202eevil"},
    ),
    PluginCase(
        "golden-ids-missing-from-the-run-file",
        ("--retrieval-run", "run.jsonl"),
        OK,
        ("1 judged queries missing from the run, scored as empty rankings: q\\x1b]0;pwned\\x07",),
        files={
            "golden.yaml": (
                "version: 1\nqueries:\n"
                '  - {id: "q\\e]0;pwned\\a", text: one, relevant: [a]}\n'
                "  - {id: r, text: two, relevant: [b]}\n"
            ),
            "run.jsonl": _run_jsonl({"r": ["b"]}),
        },
    ),
    # --- user code: a usage error, exit 4, the user's frames only ----------------------------
    PluginCase(
        "retriever-factory-with-a-syntax-error",
        (),
        PYTEST_USAGE,
        (
            "pytest-retrieval refused the run: retrieval_retriever = 'uc_syntax:build': "
            "importing 'uc_syntax' raised SyntaxError: invalid syntax",
        ),
        ini={"retrieval_retriever": "uc_syntax:build"},
        files=FACTORIES,
        conftest="",
        trace=('uc_syntax.py", line 1', "def build(:"),
    ),
    PluginCase(
        "retriever-factory-with-a-leading-dot",
        (),
        PYTEST_USAGE,
        ("retrieval_retriever = '.uc_ok:build': '.uc_ok' is a relative module name",),
        ini={"retrieval_retriever": ".uc_ok:build"},
        files=FACTORIES,
        conftest="",
    ),
    PluginCase(
        "retriever-factory-that-raises",
        (),
        PYTEST_USAGE,
        (
            "retrieval_retriever = 'uc_raises:build': build() raised ConnectionRefusedError: "
            "vector store at localhost:6333 is down",
        ),
        ini={"retrieval_retriever": "uc_raises:build"},
        files=FACTORIES,
        conftest="",
        trace=('uc_raises.py", line 5, in build', 'uc_helper.py", line 2, in connect'),
    ),
    PluginCase(
        "reranker-factory-whose-module-raises-on-import",
        (),
        PYTEST_USAGE,
        (
            "retrieval_reranker = 'uc_import_raises:build': importing 'uc_import_raises' "
            "raised ZeroDivisionError: division by zero",
        ),
        ini={"retrieval_reranker": "uc_import_raises:build"},
        files=FACTORIES,
        trace=('uc_import_raises.py", line 1, in <module>',),
    ),
    PluginCase(
        "doc-id-function-with-a-syntax-error",
        (),
        PYTEST_USAGE,
        ("retrieval_doc_id = 'uc_syntax:build': importing 'uc_syntax' raised SyntaxError",),
        ini={"retrieval_doc_id": "uc_syntax:build"},
        files=FACTORIES,
        trace=("def build(:",),
    ),
    # --- report paths never equal to an input -------------------------------------------------
    PluginCase(
        "json-artifact-over-the-golden-set",
        ("--retrieval-json", "golden.yaml"),
        PYTEST_USAGE,
        (
            "the JSON artifact (retrieval_json) */golden.yaml is the golden set */golden.yaml "
            "(the same file): writing it would replace an input; nothing was written",
        ),
    ),
    PluginCase(
        "markdown-report-over-the-gates-file",
        ("--retrieval-markdown", "gates.yaml"),
        PYTEST_USAGE,
        ("the Markdown report (retrieval_markdown) */gates.yaml is retrieval_gates_file",),
        ini={"retrieval_gates_file": "gates.yaml"},
        files={"gates.yaml": GATES},
    ),
    PluginCase(
        "html-report-over-a-hard-link-of-the-run-file",
        ("--retrieval-run", "run.jsonl", "--retrieval-html", "report.html"),
        PYTEST_USAGE,
        (
            "the HTML report (retrieval_html) */report.html is the retriever run file */run.jsonl "
            "(a hard link to it)",
        ),
        files={"run.jsonl": _run_jsonl(RUN_ROWS)},
        hardlinks={"report.html": "run.jsonl"},
    ),
    PluginCase(
        "json-artifact-over-the-ini-file",
        ("--retrieval-json", "pytest.ini"),
        PYTEST_USAGE,
        (
            "the JSON artifact (retrieval_json) */pytest.ini is the pytest configuration file "
            "*/pytest.ini (the same file)",
        ),
    ),
    PluginCase(
        "baseline-to-update-is-the-golden-set",
        ("--retrieval-baseline", "golden.yaml", "--retrieval-update-baseline"),
        PYTEST_USAGE,
        ("the baseline to update */golden.yaml is the golden set */golden.yaml (the same file)",),
    ),
    # --- the cache never deletes nor moves another program's file ------------------------------
    PluginCase(
        "refresh-leaves-another-programs-sqlite-file",
        (),
        OK,
        ("*is an SQLite database of another program (tables: notes)*left as it is*",),
        ini={"retrieval_cache": "refresh", "retrieval_cache_dir": "cache"},
        absent=("moved it aside", "cache clear"),
        setup=lambda root: (
            (root / "cache").mkdir() or _sqlite_of_another_program(root / "cache" / "runs.sqlite3")
        ),
        check=_cache_kept(),
    ),
    PluginCase(
        # A damaged cache of ours would be moved aside over runs.sqlite3.corrupt: that name is
        # taken by a file that is not ours, so nothing is moved and nothing replaced.
        "refresh-never-replaces-a-foreign-file-in-the-way-of-the-damaged-one",
        (),
        OK,
        (
            "*refresh could not move it aside (retrieval cache */runs.sqlite3.corrupt: is in the "
            "way of the damaged cache it would keep*",
        ),
        ini={"retrieval_cache": "refresh", "retrieval_cache_dir": "cache"},
        absent=("moved it aside to",),
        setup=lambda root: _damaged_cache_and_a_foreign_corrupt(root / "cache"),
        check=lambda root: _foreign_rows(root / "cache" / "runs.sqlite3.corrupt"),
    ),
    PluginCase(
        "use-never-advises-clearing-another-programs-file",
        (),
        OK,
        ("*is an SQLite database of another program*move it out of the folder*",),
        ini={"retrieval_cache": "use", "retrieval_cache_dir": "cache"},
        absent=("cache clear", "delete the file"),
        setup=lambda root: (
            (root / "cache").mkdir() or _sqlite_of_another_program(root / "cache" / "runs.sqlite3")
        ),
        check=_cache_kept(),
    ),
]


@pytest.mark.skipif(sys.platform == "win32", reason="hard links need privileges on Windows")
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PLUGIN_CASES])
def test_under_pytest_nothing_is_lost_nothing_crashes_and_nothing_is_injected(
    retrieval_project: RetrievalProject, case: PluginCase
) -> None:
    from plugin_helpers import CONFTEST
    from plugin_helpers import GOLDEN as PLUGIN_GOLDEN

    root = retrieval_project.path
    retrieval_project.write(
        golden=PLUGIN_GOLDEN,
        ini=dict(case.ini),
        conftest=CONFTEST if case.conftest is None else case.conftest,
        tests=RUN_TEST,
    )
    for name, content in case.files.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        (root / name).write_bytes(data)
    for name, target in case.hardlinks.items():
        os.link(root / target, root / name)
    if case.setup is not None:
        case.setup(root)
    seeded = {
        p: p.read_bytes() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    }

    result = retrieval_project.run(*case.args)

    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == case.status, output
    lines = output.splitlines()
    for fragment in case.messages:  # a "*" stands for a path (or the text between two parts)
        found = any(fnmatch(line, f"*{fragment}*") for line in lines)
        assert found, f"{fragment!r} not in:\n{output}"
    for fragment in case.absent:
        assert fragment not in output, f"{fragment!r} in:\n{output}"
    assert_clean(output)
    assert "Traceback (most recent call last)" not in output
    assert "INTERNALERROR" not in output
    if case.trace:  # the user's traceback, and never a frame of ours
        assert re.search(r"pytest_retrieval[/\\]\w+\.py", output) is None, output
        assert "Traceback of your code (most recent call last):" in output
        for fragment in case.trace:
            assert fragment in output, f"{fragment!r} not in:\n{output}"
    for path, data in seeded.items():
        if path.name in ("calls.log",) or path.suffix in (".sqlite3-wal", ".sqlite3-shm"):
            continue
        if path.parent.name == "cache" and path.name != "runs.sqlite3":
            continue
        assert path.exists(), f"{path.name} is gone"
        assert path.read_bytes() == data, f"{path.name} changed"
    if case.check is not None:
        case.check(root)


# --- a read-only cache is read-only, not damaged -------------------------------------------------


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` read-only for this process: ``chmod`` for a user; for root, whom permission
    bits do not stop, the immutable attribute (``chattr +i``: nothing can be created, renamed or
    deleted in the folder). Skipped, saying why, where neither can make it so."""
    if sys.platform == "win32":  # pragma: no cover
        pytest.skip("POSIX permissions")
    undo: Callable[[], None]
    if os.geteuid() != 0:
        folder.chmod(0o555)
        undo = lambda: folder.chmod(0o755)  # noqa: E731
    else:
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(
                "running as root, where chmod does not stop writes, and chattr +i (the one way "
                f"left to make a folder read-only) failed: {done.stderr.strip()}"
            )
        undo = lambda: subprocess.run(["chattr", "-i", str(folder)], check=True)  # noqa: E731
    try:
        probe = folder / "probe.tmp"
        try:
            probe.write_bytes(b"")
        except OSError:
            pass
        else:  # pragma: no cover - a file system that ignores both
            probe.unlink()
            pytest.skip(f"{folder} stayed writable (the file system ignores chmod and chattr)")
        yield
    finally:
        undo()


def _sound_cache(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    key = CacheKey("retriever", "q", 10, "shop.bm25", index_version="v2")
    with RunCache(cache_file(folder)) as cache:
        cache.put(key, CacheEntry(("a", "b")))
    return cache_file(folder)


DAMAGE_WORDS = ("damaged", "delete", "cannot be read", "cannot be opened", "corrupt")


def test_cache_show_calls_a_cache_in_a_read_only_folder_read_only_and_lists_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sound_cache(tmp_path / "cache")
    before = path.read_bytes()
    with read_only(tmp_path / "cache"):
        status = main(["cache", "show", "--cache-dir", str(tmp_path / "cache")])
    captured = capsys.readouterr()
    assert status == OK, captured.err
    assert captured.out.splitlines()[:2] == [
        f"retrieval cache {path}: 1 entries, 12.0 KiB",
        "read-only (its folder or the file cannot be written): pytest reads hits from it and "
        "stores nothing new; `cache clear` cannot empty it",
    ]
    assert "  shop.bm25  1" in captured.out
    assert not any(word in captured.out + captured.err for word in DAMAGE_WORDS)
    assert path.read_bytes() == before


def test_cache_clear_refuses_a_read_only_cache_and_keeps_every_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sound_cache(tmp_path / "cache")
    before = path.read_bytes()
    with read_only(tmp_path / "cache"):
        status = main(["cache", "clear", "--cache-dir", str(tmp_path / "cache")])
    captured = capsys.readouterr()
    assert status == USAGE
    assert captured.err == (
        f"pytest-retrieval cache: error: {path}: is read-only (its folder {path.parent} or the "
        "file cannot be written); nothing was cleared (make the folder and the file writable "
        "to clear it)\n"
    )
    assert path.read_bytes() == before
    with RunCache(path) as cache:
        assert len(cache) == 1


def _cached_project(retrieval_project: RetrievalProject) -> Path:
    retrieval_project.write(
        ini={"retrieval_cache": "use", "retrieval_cache_dir": "cache"}, tests=RUN_TEST
    )
    assert retrieval_project.run().ret == OK
    assert len(retrieval_project.calls()) == 4  # every non-held-out query, once, recorded
    return retrieval_project.path / "cache" / "runs.sqlite3"


def test_a_read_only_cache_serves_its_hits_and_says_read_only(
    retrieval_project: RetrievalProject,
) -> None:
    path = _cached_project(retrieval_project)
    before = path.read_bytes()
    with read_only(path.parent):
        result = retrieval_project.run()
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == OK, output
    assert len(retrieval_project.calls()) == 4  # no call: all four served from the cache
    assert "cache use: 4 of 4 queries served from the cache" in output
    flat = " ".join(output.split())  # the summary wraps long lines
    assert (
        f"retrieval cache {path}: read-only (its folder or the file cannot be written): hits "
        "are served from it, this run's answers are not stored" in flat
    )
    assert not any(word in output for word in DAMAGE_WORDS), output
    assert_clean(output)
    assert path.read_bytes() == before


def test_refresh_on_a_read_only_cache_moves_nothing_and_says_so(
    retrieval_project: RetrievalProject,
) -> None:
    path = _cached_project(retrieval_project)
    before = path.read_bytes()
    with read_only(path.parent):
        result = retrieval_project.run("--retrieval-cache", "refresh")
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == OK, output
    assert len(retrieval_project.calls()) == 8  # refresh calls the retriever for every query
    assert "this run's answers are not stored" in output
    assert "moved it aside" not in output
    assert "starts a new cache" not in output
    assert not any(word in output for word in DAMAGE_WORDS), output
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["runs.sqlite3"]


def test_a_cache_that_cannot_be_created_in_a_read_only_folder_says_read_only(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        ini={"retrieval_cache": "use", "retrieval_cache_dir": "cache"}, tests=RUN_TEST
    )
    folder = retrieval_project.path / "cache"
    folder.mkdir()
    with read_only(folder):
        result = retrieval_project.run()
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == OK, output
    assert len(retrieval_project.calls()) == 4
    assert (
        f"retrieval cache {folder / 'runs.sqlite3'}: does not exist, and its folder {folder} is "
        "read-only, so it cannot be created; it was not used (make the folder writable, or set "
        "retrieval_cache_dir to a writable folder" in " ".join(output.split())
    )
    assert not any(word in output for word in DAMAGE_WORDS), output
    assert list(folder.iterdir()) == []


def test_an_address_ray_refuses_is_a_usage_error_naming_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fresh_modules: None,
) -> None:
    pytest.importorskip("ray")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "golden.jsonl").write_text(GOLDEN_JSONL, encoding="utf-8")
    (tmp_path / "uc_ok.py").write_text(FACTORIES["uc_ok.py"], encoding="utf-8")
    # Well formed, so Ray is asked; Ray refuses a ray:// address without its client package
    # (and cannot reach port 1 with it): its error is the message, not a traceback.
    status = main(
        [
            *RUN,
            "uc_ok:build",
            "--output",
            "run.jsonl",
            "--executor",
            "ray",
            "--ray-address",
            "ray://127.0.0.1:1",
        ]
    )
    err = capsys.readouterr().err
    assert status == USAGE, err
    assert err.startswith(
        "pytest-retrieval run: error: --ray-address: cannot connect to the Ray cluster at "
        "'ray://127.0.0.1:1': "
    )
    assert err.rstrip().endswith(
        "(check that the cluster is up and the address is its head node's (ray status), or "
        "drop --ray-address to start a local Ray instance)"
    )
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "run.jsonl").exists()


def test_a_factory_that_raises_in_a_ray_actor_is_the_same_usage_error(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    (tmp_path / "golden.jsonl").write_text(GOLDEN_JSONL, encoding="utf-8")
    (tmp_path / "uc_actor.py").write_text(
        "def build():\n    raise ValueError('no index on this node')\n", encoding="utf-8"
    )
    # Ray in a child process (its start-up and threads stay out of the suite), no network.
    driver = (
        "import sys\nimport ray\nray.init(num_cpus=1, include_dashboard=False)\n"
        "from pytest_retrieval.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    (tmp_path / "driver.py").write_text(driver, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
           "RAY_USAGE_STATS_ENABLED": "0"}  # fmt: skip
    child = subprocess.run(
        [sys.executable, "driver.py", *RUN, "uc_actor:build", "--output", "run.jsonl",
         "--executor", "ray", "--concurrency", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert child.returncode == USAGE, child.stderr[-3000:]
    ours = child.stderr[child.stderr.index("pytest-retrieval run: error:") :]
    assert ours.splitlines() == [
        "pytest-retrieval run: error: --retriever = 'uc_actor:build': build() raised "
        "ValueError: no index on this node (fix it: its traceback follows)",
        "Traceback of your code (most recent call last):",
        f'  File "{tmp_path / "uc_actor.py"}", line 2, in build',
        "    raise ValueError('no index on this node')",
        "ValueError: no index on this node",
    ]
    assert "ActorDiedError" not in child.stderr
    assert not (tmp_path / "run.jsonl").exists()


def test_ray_addresses_are_checked_by_their_form() -> None:
    from pytest_retrieval.run.executors import ray_address_problem

    good = ["auto", "local", "ray://head:10001", "ray://ray_head", "10.0.0.1:6379", "[::1]:6379"]
    assert [a for a in good if ray_address_problem(a) is not None] == []
    bad = {
        "::::": "not a Ray address",
        "localhost:99999": "port 99999 is not in 1..65535",
        "head:0": "port 0 is not in 1..65535",
        "ray://": "not a Ray address",
        "http://head:8265": "not a Ray address",
        "head": "not a Ray address",
        "head:6379\n::error::x": "not a Ray address",
    }
    found = {a: ray_address_problem(a) for a in bad}
    assert {a: p.message.split(": ", 1)[1] for a, p in found.items() if p} == bad


def test_a_malformed_ray_address_environment_variable_is_refused_before_ray(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fresh_modules: None,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAY_ADDRESS", "not an address")
    (tmp_path / "golden.jsonl").write_text(GOLDEN_JSONL, encoding="utf-8")
    (tmp_path / "uc_ok.py").write_text(FACTORIES["uc_ok.py"], encoding="utf-8")
    status = main([*RUN, "uc_ok:build", "--output", "run.jsonl", "--executor", "ray"])
    err = capsys.readouterr().err
    assert status == USAGE, err
    assert err == (
        "pytest-retrieval run: error: RAY_ADDRESS: 'not an address': not a Ray address (give "
        "auto, local, HOST:PORT or ray://HOST[:PORT], e.g. ray://head-node:10001; or drop it "
        "to start a local Ray instance)\n"
    )
    assert not (tmp_path / "run.jsonl").exists()
