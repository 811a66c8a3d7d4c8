"""The bad-input catalogue: every way a team's inputs go wrong, and what the plugin says.

One table, one test. Each case is the standard user project (``plugin_helpers``) with one thing
broken: the golden set, a setting, a gate, the retriever, the baseline or an output path. The run
(in process, or under xdist in a subprocess; with ``--retrieval-json out.json`` over a seeded old
artifact) must:

* exit with the status a polished plugin gives: 4 (usage error) for inputs that are wrong before
  anything runs or that refuse the run once it started, 1 (failed session) for a failed gate,
  test or query, 0 where the input is accepted and scored by the documented convention; never 3
  (internal error), never a traceback;
* say what is wrong, naming the source (file and line, option, query id) and the fix;
* leave files whole: after a usage error found before the run the old artifact and baseline are
  byte-identical; a run refused or errored once it started rewrites the artifact with its
  status (refused, errored) and no number, and leaves the baseline byte-identical; after a run
  the artifact is a complete document naming the failed queries; no temporary file stays.

Expected numbers are worked out by hand in each case's comment.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from plugin_helpers import CONFTEST, GOLDEN, QUIET_PLUGINS, RetrievalProject, conftest_with

USAGE = pytest.ExitCode.USAGE_ERROR
FAILED = pytest.ExitCode.TESTS_FAILED
OK = pytest.ExitCode.OK

RUN = "def test_run(retrieval_run): pass\n"

#: The artifact every case starts with: a usage error must leave it byte for byte.
OLD_ARTIFACT = b'{"schema": "pytest-retrieval/artifact", "seeded": "before the run"}\n'

#: A golden set of two queries for the cases that score odd rankings by hand: q1 has two
#: relevant documents ("12" and "b"), q2 one ("c").
TWO_QUERIES = """\
version: 1
queries:
  - {id: q1, text: first, relevant: ["12", b]}
  - {id: q2, text: second, relevant: [c]}
"""

#: A syntactically valid baseline of another golden set (one query, "other").
FOREIGN_BASELINE = json.dumps(
    {
        "schema": "pytest-retrieval/baseline",
        "schema_version": 1,
        "plugin_version": "0.1.0",
        "created": "2026-01-01T00:00:00Z",
        "golden": {"fingerprint": "f" * 64, "queries": 1},
        "settings": {"gain": "exponential", "min_grade": 1, "no_relevant": "skip", "depth": 3},
        "stages": ["retriever"],
        "metrics": ["recall@3", "ndcg@3", "mrr"],
        "means": {},
        "heldout": {},
        "queries": {
            "other": {
                "split": "tune",
                "slices": [],
                "labels": "0" * 16,
                "metrics": {"retriever": {"recall@3": 1.0, "ndcg@3": 1.0, "mrr": 1.0}},
                "relevant_ranks": {"retriever": {"d": 1}},
                "top": {"retriever": ["d"]},
            }
        },
    },
    indent=2,
)


def retriever(body: str) -> str:
    """A conftest (RANKINGS and log_call in scope) whose session fixture returns what ``body``,
    a function body, builds."""
    indented = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return conftest_with(
        f"""
import asyncio
import time


class Boom(BaseException):
    pass


@pytest.fixture(scope="session")
def retriever_under_test():
{indented}
"""
    )


def failing_on_sso(statement: str, *, is_async: bool = False) -> str:
    """A retriever giving the standard rankings, except that the sso query runs ``statement``."""
    define = "async def" if is_async else "def"
    return retriever(
        f"""
        {define} search(text, k):
            if "SSO" in text:
                {statement}
            return RANKINGS[text][:k]
        return search
        """
    )


def baseline_with(**changes: object) -> str:
    """FOREIGN_BASELINE with top-level fields replaced (``stages="retriever"``) or, for
    ``metrics_of_other``, the metrics of its one query replaced."""
    document = json.loads(FOREIGN_BASELINE)
    metrics = changes.pop("metrics_of_other", None)
    if metrics is not None:
        document["queries"]["other"]["metrics"]["retriever"] = metrics
    document.update(changes)
    return json.dumps(document, indent=2)


def seeded_baseline(value: str) -> str:
    """FOREIGN_BASELINE with recall@3 of its one query written as the raw JSON ``value``."""
    return FOREIGN_BASELINE.replace('"recall@3": 1.0,', f'"recall@3": {value},', 1)


#: Interrupt the session (as Ctrl-C does) from the test, after the retriever ran.
CTRL_C_AFTER_THE_RUN = "def test_run(retrieval_run):\n    raise KeyboardInterrupt\n"

INTERRUPTED = pytest.ExitCode.INTERRUPTED


@dataclass(frozen=True)
class Case:
    """One bad input: the project to write, the expected exit status and message fragments."""

    id: str
    status: int
    messages: tuple[str, ...]
    golden: str | bytes | None = GOLDEN
    golden_name: str = "golden.yaml"
    ini: Mapping[str, str] = field(default_factory=dict)
    conftest: str = CONFTEST
    tests: str = RUN
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    #: Query ids the artifact's "errors" must name (cases that run the retriever).
    failed_queries: tuple[str, ...] = ()
    #: Output that must not appear (e.g. a held-out query that would leak).
    absent: tuple[str, ...] = ()
    #: Cases that need file permissions to bite (root writes anywhere).
    needs_permissions: bool = False
    #: Whether the retriever runs, so that the artifact is rewritten (None: unless a usage error).
    runs: bool | None = None
    #: The artifact's status when the run was stopped once it started ("refused", "errored"):
    #: the artifact is rewritten with it and no number.
    stopped: str | None = None
    #: Run under xdist (in a subprocess, with two workers).
    xdist: bool = False
    #: Whether pytest.ini names the golden set.
    golden_in_ini: bool = True
    #: Symlinks to create: link name -> target (absolute, or relative to the project).
    symlinks: Mapping[str, str] = field(default_factory=dict)
    #: Environment variables for the run.
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def rewrites_artifact(self) -> bool:
        if self.stopped is not None:
            return True
        return self.status != USAGE if self.runs is None else self.runs


CASES = [
    # --- the golden set: always a usage error, before anything runs ---------------------------
    Case(
        "golden-file-missing",
        USAGE,
        ("nope.yaml: no such file or folder", "check the path"),
        golden=None,
        golden_name="nope.yaml",
    ),
    Case(
        "golden-file-empty",
        USAGE,
        ("golden.yaml: the file is empty", "write 'version: 1' and a 'queries:' list"),
        golden="",
    ),
    Case(
        "golden-file-not-utf8",
        USAGE,
        # The Latin-1 é of "café" is on line 3, column 13 (after the 12 of "  - {id: caf").
        (
            "golden.yaml:3:13: the golden set is not valid UTF-8 (byte 0xe9: invalid "
            "continuation byte)",
            "save the file as UTF-8",
        ),
        golden=b"version: 1\nqueries:\n  - {id: caf\xe9, text: t, relevant: [x]}\n",
    ),
    Case(
        "golden-file-of-unknown-type",
        USAGE,
        ("golden.txt: cannot tell the golden-set format", "use a known suffix (.yaml"),
        golden_name="golden.txt",
    ),
    Case(
        "golden-yaml-syntax-error",
        USAGE,
        # The flow list opened on line 4 is still open at the end of the file (line 5).
        ("golden.yaml:5:1: the golden set is not valid YAML", "a missing ':' or ']'"),
        golden="version: 1\nqueries:\n  - id: a\n    text: [oops\n",
    ),
    Case(
        "golden-json-syntax-error",
        USAGE,
        # Column 28 is the '}' where a value was expected after '['.
        (
            "golden.json:1:28: the golden set is not valid JSON (Expecting value)",
            "look for a missing comma",
        ),
        golden='{"version": 1, "queries": [}',
        golden_name="golden.json",
    ),
    Case(
        "golden-top-level-is-a-list",
        USAGE,
        (
            "golden.yaml:1:1: a golden set must be a mapping with 'version' and 'queries', "
            "got a list",
            "start the file with 'version: 1'",
        ),
        golden="- id: a\n  text: t\n  relevant: [x]\n",
    ),
    Case(
        "golden-duplicate-ids",
        USAGE,
        (
            "golden.yaml:4: query 'a', field 'id': duplicate query id: already used on line 3",
            "give every query a unique id",
        ),
        golden=(
            "version: 1\nqueries:\n  - {id: a, text: t, relevant: [x]}\n"
            "  - {id: a, text: u, relevant: [y]}\n"
        ),
    ),
    Case(
        "golden-grade-is-a-word",
        USAGE,
        # Column 33 is the key x inside {x: high}.
        (
            "golden.yaml:3:33: query 'a', field 'relevant': grade must be an integer, got 'high'",
            "0 = judged not relevant",
        ),
        golden="version: 1\nqueries:\n  - {id: a, text: t, relevant: {x: high}}\n",
    ),
    Case(
        "golden-grade-is-negative",
        USAGE,
        (
            "golden.yaml:3:33: query 'a', field 'relevant': grade must be >= 0, got -1",
            "use 0 for judged not relevant",
        ),
        golden="version: 1\nqueries:\n  - {id: a, text: t, relevant: {x: -1}}\n",
    ),
    Case(
        "golden-unknown-field",
        USAGE,
        (
            "golden.yaml:3:22: query 'a', field 'relevent': unknown field 'relevent'",
            "did you mean 'relevant'?",
        ),
        golden="version: 1\nqueries:\n  - {id: a, text: t, relevent: [x]}\n",
    ),
    # --- settings and metrics --------------------------------------------------------------
    Case(
        "metric-misspelt-in-settings",
        USAGE,
        ("`retrieval_metrics = recal@5` in pytest.ini", "did you mean 'recall@5'?"),
        ini={"retrieval_metrics": "recal@5"},
    ),
    Case(
        "metric-misspelt-in-a-gate",
        USAGE,
        ("retrieval_thresholds: 'recal@5 >= 0.5'", "did you mean 'recall@5'?"),
        ini={"retrieval_thresholds": "recal@5 >= 0.5"},
    ),
    Case(
        "metric-cutoff-zero",
        USAGE,
        (
            "retrieval_thresholds: 'recall@0 >= 0.5'",
            "the cutoff '0' is not a positive integer",
            "write a cutoff such as recall@10",
        ),
        ini={"retrieval_thresholds": "recall@0 >= 0.5"},
    ),
    Case(
        "metric-cutoff-negative",
        USAGE,
        (
            "`retrieval_metrics = recall@-1` in pytest.ini",
            "the cutoff '-1' is not a positive integer",
            "write a cutoff such as recall@10",
        ),
        ini={"retrieval_metrics": "recall@-1"},
        absent=("did you mean",),
    ),
    Case(
        "metric-cutoff-a-word",
        USAGE,
        (
            "retrieval_thresholds: 'recall@ten >= 0.5'",
            "the cutoff 'ten' is not a positive integer",
            "write a cutoff such as recall@10",
        ),
        ini={"retrieval_thresholds": "recall@ten >= 0.5"},
    ),
    Case(
        "cutoffs-a-word",
        USAGE,
        ("`retrieval_ks = 5,ten` in pytest.ini: 'ten' is not a positive integer", "--retrieval-ks"),
        ini={"retrieval_ks": "5,ten"},
    ),
    Case(
        "metric-cutoff-zero-in-code",
        FAILED,
        ("GateUsageError: the cutoff of recall must be a positive integer (1, 5, 10, ...), got 0",),
        runs=False,  # the gate is refused before it asks for the run
        tests=(
            "from pytest_retrieval.gates.gate import assert_recall_at\n"
            "def test_gate():\n    assert_recall_at(0) >= 0.5\n"
        ),
    ),
    Case(
        "threshold-above-one",
        USAGE,
        (
            "'recall@1 >= 1.5': threshold 1.5 is not between 0 and 1",
            "metrics are fractions: write 0.9, not 90",
        ),
        ini={"retrieval_thresholds": "recall@1 >= 1.5"},
    ),
    Case(
        "threshold-negative",
        USAGE,
        (
            "'recall@1 >= -0.1': threshold -0.1 is not between 0 and 1",
            "write a number between 0 and 1, e.g. 0.9",
        ),
        ini={"retrieval_thresholds": "recall@1 >= -0.1"},
    ),
    Case(
        "threshold-nan",
        USAGE,
        (
            "'recall@1 >= nan': threshold nan is not between 0 and 1",
            "write a number between 0 and 1, e.g. 0.9",
        ),
        ini={"retrieval_thresholds": "recall@1 >= nan"},
    ),
    Case(
        "threshold-a-percentage-in-code",
        FAILED,
        (
            "the threshold of recall@1 must be a number between 0 and 1, got 90",
            "metrics are fractions: write 0.9, not 90",
        ),
        runs=False,  # the gate is refused before it asks for the run
        tests=(
            "from pytest_retrieval.gates.gate import assert_recall_at\n"
            "def test_gate():\n    assert_recall_at(1) >= 90\n"
        ),
    ),
    Case(
        "threshold-nan-in-code",
        FAILED,
        (
            "the threshold of recall@1 must be a number between 0 and 1, got nan",
            "write a number between 0 and 1, e.g. 0.9",
        ),
        runs=False,  # the gate is refused before it asks for the run
        tests=(
            "from pytest_retrieval.gates.gate import assert_recall_at\n"
            "def test_gate():\n    assert_recall_at(1) >= float('nan')\n"
        ),
    ),
    # --- gates on names the golden set or the run does not have --------------------------------
    Case(
        "gate-on-unknown-slice",
        USAGE,
        (
            "retrieval_thresholds: 'recall@1 >= 0.5 slice=multihop': unknown slice 'multihop'",
            "the golden set has: exact-lookup, multi-hop, no-answer",
        ),
        ini={"retrieval_thresholds": "recall@1 >= 0.5 slice=multihop"},
    ),
    Case(
        "gate-on-unknown-split",
        USAGE,
        ("'recall@1 >= 0.5 split=tuning': unknown split 'tuning'", "the golden set has: heldout"),
        ini={"retrieval_thresholds": "recall@1 >= 0.5 split=tuning"},
    ),
    Case(
        "gate-on-unknown-stage",
        USAGE,
        (
            "'recall@1 >= 0.5 stage=rerank': unknown stage 'rerank'",
            "the stages are retriever and reranker",
        ),
        ini={"retrieval_thresholds": "recall@1 >= 0.5 stage=rerank"},
    ),
    Case(
        "gate-on-the-reranker-stage-without-a-reranker",
        FAILED,
        ("retrieval gate recall@1>=0.5[stage=reranker]", "unknown stage 'reranker'; this run has"),
        ini={"retrieval_thresholds": "recall@1 >= 0.5 stage=reranker"},
    ),
    Case(
        "gate-on-unknown-slice-in-code",
        FAILED,
        (
            "GateUsageError: unknown slice 'multihop'; the golden set has: exact-lookup, "
            "multi-hop, no-answer",
        ),
        runs=False,  # the gate is refused before it asks for the run
        tests=(
            "from pytest_retrieval.gates.gate import assert_recall_at\n"
            "def test_gate():\n    assert_recall_at(1, slice='multihop') >= 0.5\n"
        ),
    ),
    Case(
        "budget-on-unknown-slice",
        USAGE,
        ("retrieval_regression: 'ndcg@3 0.02 slice=multihop': unknown slice 'multihop'",),
        ini={
            "retrieval_baseline": "baseline.json",
            "retrieval_regression": "ndcg@3 0.02 slice=multihop",
        },
        files={"baseline.json": FOREIGN_BASELINE},
    ),
    Case(
        "budgets-without-a-baseline",
        USAGE,
        (
            "regression budgets are declared but no baseline is set",
            "set retrieval_baseline = PATH",
        ),
        ini={"retrieval_regression": "ndcg@3 0.02"},
    ),
    Case(
        "a-flag-without-a-golden-set",
        USAGE,
        (
            "--retrieval-json is given but no golden set is configured, so pytest-retrieval is off",
            "set retrieval_golden = PATH in the ini file or pass --retrieval-golden PATH",
        ),
        golden_in_ini=False,
    ),
    Case(
        # pytest looks for the ini file from the paths among the arguments it cannot parse yet,
        # plugin flags' values included: an existing artifact outside the project hides
        # pytest.ini, and the plugin, off, would have dropped every gate in silence.
        "an-existing-artifact-outside-the-project-hides-the-ini-file",
        USAGE,
        (
            "--retrieval-json ../outside-the-project/out.json: pytest took "
            "../outside-the-project/out.json for a test path when it looked for the ini file, so "
            "it read no ini file instead of",
            "write --retrieval-json=../outside-the-project/out.json",
        ),
        args=("--retrieval-json", "../outside-the-project/out.json"),
        files={"../outside-the-project/out.json": OLD_ARTIFACT},
    ),
    # --- the held-out split ----------------------------------------------------------------
    Case(
        "heldout-unsealed-but-absent",
        USAGE,
        (
            "--retrieval-heldout: the golden set has no query in the held-out split 'heldout' "
            "(splits: tune)",
            "set retrieval_heldout_split to the split you hold out",
        ),
        golden=GOLDEN.replace("    split: heldout\n", ""),
        args=("--retrieval-heldout",),
    ),
    Case(
        "heldout-split-misnamed",
        USAGE,
        (
            "retrieval_heldout_split = holdout: the golden set has no query in this split "
            "(splits: heldout, tune)",
            "name the split your held-out queries are in",
        ),
        ini={"retrieval_heldout_split": "holdout"},
    ),
    # --- the retriever -----------------------------------------------------------------------
    Case(
        "no-retriever-defined",
        USAGE,
        (
            "pytest-retrieval refused the run: no retriever to test",
            "Fix: define the retriever_under_test fixture",
            "retrieval_retriever = myapp.search:build",
        ),
        conftest="",
        stopped="refused",
    ),
    Case(
        # A worker cannot stop the session as the controller does (pytest.exit there crashed
        # xdist with an INTERNALERROR that lost the message): the test fails with it instead.
        "no-retriever-defined-under-xdist",
        USAGE,
        (
            "pytest-retrieval refused the run: no retriever to test",
            "Fix: define the retriever_under_test fixture",
            "retrieval_retriever = myapp.search:build",
        ),
        conftest="",
        xdist=True,
        stopped="refused",
    ),
    Case(
        "retriever-module-missing",
        USAGE,
        (
            "retrieval_retriever = 'nosuch.search:build': cannot import 'nosuch.search' (No "
            "module named 'nosuch')",
            "check the module path",
        ),
        conftest="",
        ini={"retrieval_retriever": "nosuch.search:build"},
        stopped="refused",
    ),
    Case(
        "retriever-function-missing",
        USAGE,
        (
            "retrieval_retriever = 'os:no_such_factory': module 'os' has no attribute "
            "'no_such_factory'",
            "check the name after the ':'",
        ),
        conftest="",
        ini={"retrieval_retriever": "os:no_such_factory"},
        stopped="refused",
    ),
    Case(
        "retriever-not-module-colon-function",
        USAGE,
        (
            "retrieval_retriever = 'myapp.search': expected module:function, e.g. "
            "myapp.search:build",
        ),
        conftest="",
        ini={"retrieval_retriever": "myapp.search"},
        stopped="refused",
    ),
    Case(
        # A retriever the plugin cannot call is a usage error (it was exit 1, every test failed).
        "retriever-is-not-callable",
        USAGE,
        (
            "pytest-retrieval refused the run: the retriever under test is a int, which is "
            "neither callable nor has",
        ),
        conftest=retriever("return 42"),
        stopped="refused",
    ),
    Case(
        "retriever-returns-none-for-one-query",
        FAILED,
        (
            "1 query failed",
            "sso [retriever] RetrieverOutputError: returned None (NoneType); expected a list of "
            "ids",
        ),
        conftest=failing_on_sso("return None"),
        failed_queries=("sso",),
    ),
    Case(
        # Every query failed: nothing to score, so the run errored (no table of zeros).
        "retriever-returns-a-string",
        FAILED,
        (
            "the run errored, nothing was scored: every query failed in the retriever (4 of 4)",
            "refund [retriever] RetrieverOutputError: returned 'refund-policy' (str); expected "
            "a list of ids",
        ),
        conftest=retriever("return lambda text: 'refund-policy'"),
        failed_queries=("refund", "sso", "invoice", "fax"),
        stopped="errored",
    ),
    Case(
        "retriever-returns-items-without-ids",
        FAILED,
        ("sso [retriever] RetrieverOutputError: dict item", "set retrieval_doc_id"),
        conftest=failing_on_sso("return [{'title': 'Okta'}]"),
        failed_queries=("sso",),
    ),
    Case(
        # Ids compare as strings: 12 is "12". q1 gets [12, x, b]: both relevant in the top 3,
        # recall@3 = 1; q2 gets [y, 7]: 0. Mean 0.5 exactly, so both gates hold.
        "retriever-returns-ints-mixed-with-strs",
        OK,
        ("3 passed",),
        golden=TWO_QUERIES,
        ini={"retrieval_thresholds": "recall@3 >= 0.5\nrecall@3 <= 0.5"},
        conftest=retriever(
            'return lambda text: {"first": [12, "x", "b"], "second": ["y", 7]}[text]'
        ),
    ),
    Case(
        # A repeated id is one document, at its first rank; later copies are removed (the one
        # chunk -> document rule). q1 gets [x, x, x, 12, 12] -> [x, 12]: 12 of {12, b} in the
        # top 3, recall@3 = 1/2; q2 gets [c, c] -> [c]: 1. Mean 0.75. (Both rankings are then
        # shorter than 3, which the short-ranking check would refuse: this case is about
        # duplicates, so the check is off.)
        "retriever-returns-duplicates",
        OK,
        ("3 passed",),
        golden=TWO_QUERIES,
        ini={
            "retrieval_thresholds": "recall@3 >= 0.75\nrecall@3 <= 0.75",
            "retrieval_short_rankings": "off",
        },
        conftest=retriever(
            'return lambda text: {"first": ["x", "x", "x", "12", "12"], "second": ["c", "c"]}[text]'
        ),
    ),
    Case(
        # Both queries get [12, c, filler...]: q1 has 12 of {12, b} in the top 3 (1/2), q2 has c
        # (1). Mean 0.75 exactly; the 100,000 ids cost time, not correctness.
        "retriever-returns-100000-items",
        OK,
        ("3 passed",),
        golden=TWO_QUERIES,
        ini={"retrieval_thresholds": "recall@3 >= 0.75\nrecall@3 <= 0.75"},
        conftest=retriever('return lambda text: ["12", "c"] + [f"f{i}" for i in range(100_000)]'),
    ),
    Case(
        "retriever-raises",
        FAILED,
        ("1 query failed", "sso [retriever] ConnectionError: vector store unreachable"),
        conftest=failing_on_sso("raise ConnectionError('vector store unreachable')"),
        failed_queries=("sso",),
    ),
    Case(
        "retriever-hangs-past-the-timeout",
        FAILED,
        ("1 query failed", "sso [retriever] TimeoutError: no answer within 0.3 s"),
        ini={"retrieval_timeout": "0.3"},
        conftest=failing_on_sso("time.sleep(2)"),
        failed_queries=("sso",),
    ),
    Case(
        "retriever-raises-systemexit-in-one-query",
        FAILED,
        ("1 query failed", "sso [retriever] SystemExit: 3"),
        conftest=failing_on_sso("raise SystemExit(3)"),
        failed_queries=("sso",),
    ),
    Case(
        "retriever-raises-generatorexit-in-one-query",
        FAILED,
        ("1 query failed", "sso [retriever] GeneratorExit: closed"),
        conftest=failing_on_sso("raise GeneratorExit('closed')"),
        failed_queries=("sso",),
    ),
    Case(
        "retriever-raises-a-baseexception-in-one-query",
        FAILED,
        ("1 query failed", "sso [retriever] Boom: not an Exception"),
        conftest=failing_on_sso("raise Boom('not an Exception')"),
        failed_queries=("sso",),
    ),
    Case(
        "async-retriever-raises-systemexit-in-one-query",
        FAILED,
        ("1 query failed", "sso [retriever] SystemExit: 3"),
        conftest=failing_on_sso("raise SystemExit(3)", is_async=True),
        failed_queries=("sso",),
    ),
    Case(
        "async-retriever-raises-a-baseexception-in-one-query",
        FAILED,
        ("1 query failed", "sso [retriever] Boom: not an Exception"),
        conftest=failing_on_sso("raise Boom('not an Exception')", is_async=True),
        failed_queries=("sso",),
    ),
    Case(
        "async-retriever-hangs-past-the-timeout",
        FAILED,
        ("1 query failed", "sso [retriever] TimeoutError: no answer within 0.3 s"),
        ini={"retrieval_timeout": "0.3"},
        conftest=failing_on_sso("await asyncio.sleep(2)", is_async=True),
        failed_queries=("sso",),
    ),
    # --- baselines ------------------------------------------------------------------------------
    Case(
        "baseline-missing",
        FAILED,
        (
            "baseline.json: create it with `pytest --retrieval-baseline=",
            "--retrieval-update-baseline`",
        ),
        ini={"retrieval_baseline": "baseline.json"},
    ),
    Case(
        "baseline-truncated",
        USAGE,
        # Column 41 is the opening quote of the string cut off by the end of the file.
        (
            "baseline.json:1:41: the baseline is not valid JSON",
            "the file may be truncated",
            "restore it from version control or recreate it with --retrieval-update-baseline",
        ),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": '{"schema": "pytest-retrieval/baseline", "schema_ver'},
    ),
    Case(
        "baseline-wrong-schema-version",
        USAGE,
        (
            "baseline.json: baseline schema version 99 is not supported (this plugin reads "
            "versions 1, 2, 3)",
            "recreate it with --retrieval-update-baseline",
        ),
        ini={"retrieval_baseline": "baseline.json"},
        files={
            "baseline.json": json.dumps(
                {"schema": "pytest-retrieval/baseline", "schema_version": 99}
            )
        },
    ),
    Case(
        "baseline-is-an-artifact",
        USAGE,
        ("baseline.json: not a pytest-retrieval baseline", "a JSON artifact"),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": OLD_ARTIFACT},
    ),
    Case(
        "baseline-from-another-golden-set",
        FAILED,
        ("incomparable", "(other)", "--retrieval-update-baseline", "intersect"),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": FOREIGN_BASELINE},
    ),
    Case(
        "baseline-path-is-a-directory",
        USAGE,
        ("baseline.json: the baseline path is a directory", "name a .json file"),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json/keep": "a folder"},
    ),
    Case(
        "baseline-update-after-failed-queries",
        FAILED,
        ("baseline not written to", "1 query failed in the retriever"),
        args=("--retrieval-baseline", "baseline.json", "--retrieval-update-baseline"),
        files={"baseline.json": FOREIGN_BASELINE},
        conftest=failing_on_sso("raise ConnectionError('vector store unreachable')"),
        failed_queries=("sso",),
    ),
    Case(
        "baseline-update-into-a-directory",
        USAGE,
        ("baseline.json: cannot write the baseline: the path is a directory", "name a file"),
        args=("--retrieval-baseline", "baseline.json", "--retrieval-update-baseline"),
        files={"baseline.json/keep": "a folder"},
        runs=True,  # found when the run's baseline is written, after the verdict
    ),
    Case(
        "baseline-update-without-a-path",
        USAGE,
        (
            "--retrieval-update-baseline needs to know where the baseline lives",
            "pass --retrieval-baseline=PATH or set retrieval_baseline = PATH",
        ),
        args=("--retrieval-update-baseline",),
    ),
    # --- artifacts --------------------------------------------------------------------------
    Case(
        "artifact-path-is-a-directory",
        USAGE,
        ("report: cannot write the JSON artifact: the path is a directory", "name a file"),
        args=("--retrieval-json", "report"),
        files={"report/keep": "a folder"},
    ),
    Case(
        "artifact-folder-is-a-file",
        USAGE,
        ("cannot write the JSON artifact:", "blocker is a file, not a folder"),
        args=("--retrieval-json", "blocker/out.json"),
        files={"blocker": "a file"},
    ),
    # === the second catalogue (issue 14) ========================================================
    # --- Unicode -------------------------------------------------------------------------------
    Case(
        # A JSON escape can spell half of a UTF-16 pair; UTF-8 cannot encode it (the fingerprint
        # crashed with exit 3).
        "golden-text-with-a-lone-surrogate",
        USAGE,
        (
            "golden.jsonl:2: query 'a', field 'text': query text contains a lone surrogate "
            "(U+D800), which is not a character",
            "write the character itself",
        ),
        golden='{"version": 1}\n{"id": "a", "text": "caf\\ud800", "relevant": ["x"]}\n',
        golden_name="golden.jsonl",
    ),
    Case(
        "golden-doc-id-with-a-lone-surrogate",
        USAGE,
        ("golden.jsonl:2: query 'a', field 'relevant': doc id contains a lone surrogate (U+DC00)",),
        golden='{"version": 1}\n{"id": "a", "text": "t", "relevant": ["x\\udc00"]}\n',
        golden_name="golden.jsonl",
    ),
    Case(
        "golden-query-id-with-a-lone-surrogate",
        USAGE,
        ("golden.json: field 'queries[0].id': query id contains a lone surrogate (U+DFFF)",),
        golden='{"version": 1, "queries": [{"id": "q\\udfff", "text": "t", "relevant": ["x"]}]}',
        golden_name="golden.json",
    ),
    Case(
        # "café menu" in NFC (é is one code point) and in NFD (e + a combining acute accent).
        "golden-leakage-between-nfc-and-nfd",
        USAGE,
        (
            "golden.yaml:4: query 'b', field 'text': leakage: the same text as query 'a' (on "
            "line 3) is in split 'heldout' and in split 'tune'",
        ),
        golden=(
            'version: 1\nqueries:\n  - {id: a, text: "caf\u00e9 menu", relevant: [x]}\n'
            '  - {id: b, text: "CAFE\u0301 MENU", relevant: [y], split: heldout}\n'
        ),
    ),
    Case(
        # Full-width letters and the "ﬁ" ligature are compatibility forms: NFKC folds them.
        "golden-leakage-between-compatibility-forms",
        USAGE,
        ("query 'b', field 'text': leakage: the same text as query 'a'",),
        golden=(
            'version: 1\nqueries:\n  - {id: a, text: "file refund", relevant: [x]}\n'
            '  - {id: b, text: "\ufb01le \uff32\uff25\uff26\uff35\uff2e\uff24", relevant: [y], '
            "split: heldout}\n"
        ),
    ),
    Case(
        "cutoffs-a-superscript-digit",
        USAGE,
        ("`retrieval_ks = \u00b2` in pytest.ini: '\u00b2' is not a positive integer",),
        ini={"retrieval_ks": "\u00b2"},
    ),
    Case(
        "cutoffs-arabic-indic-digits",
        USAGE,
        ("'\u0661\u0660' is not a positive integer",),
        ini={"retrieval_ks": "\u0661\u0660"},
    ),
    Case(
        # int() reads "1_0" as 10: a typo must not become a cutoff.
        "cutoffs-with-an-underscore",
        USAGE,
        ("`retrieval_ks = 1_0` in pytest.ini: '1_0' is not a positive integer",),
        ini={"retrieval_ks": "1_0"},
    ),
    Case(
        "metric-cutoff-a-superscript-digit-in-a-gate",
        USAGE,
        (
            "retrieval_thresholds: 'recall@\u00b2 >= 0.5'",
            "the cutoff '\u00b2' is not a positive integer",
            "write a cutoff such as recall@10",
        ),
        ini={"retrieval_thresholds": "recall@\u00b2 >= 0.5"},
    ),
    Case(
        "metric-cutoff-a-superscript-digit-in-settings",
        USAGE,
        (
            "`retrieval_metrics = ndcg@\u00b2` in pytest.ini",
            "the cutoff '\u00b2' is not a positive",
        ),
        ini={"retrieval_metrics": "ndcg@\u00b2"},
    ),
    # --- numbers -------------------------------------------------------------------------------
    Case(
        # 2**1024 - 1 does not fit a float: the exponential gain overflowed (a traceback).
        "golden-grade-of-1024",
        USAGE,
        (
            "golden.yaml:3:33: query 'a', field 'relevant': grade 1024 is above the maximum 1000",
            "grades are relevance levels (0 to 1000): rescale the labels",
        ),
        golden="version: 1\nqueries:\n  - {id: a, text: t, relevant: {x: 1024}}\n",
    ),
    Case(
        "golden-grade-of-5000-digits-in-json",
        USAGE,
        (
            "golden.json: the golden set holds a number of 5,000 digits (at most 300 are read)",
            "quote long ids as strings",
        ),
        golden='{"version": 1, "queries": [{"id": "a", "text": "t", "relevant": {"x": '
        + "9" * 5000
        + "}}]}",
        golden_name="golden.json",
    ),
    Case(
        "golden-grade-of-5000-digits-in-csv",
        USAGE,
        (
            "golden.csv:2: query 'a', field 'relevant': grade a number of 5000 digits is above "
            "the maximum 1000",
        ),
        golden="query_id,doc_id,grade,text\na,x," + "9" * 5000 + ",t\n",
        golden_name="golden.csv",
    ),
    Case(
        "golden-grade-a-superscript-digit-in-csv",
        USAGE,
        ("golden.csv:2: query 'a', field 'relevant': grade must be an integer, got '\u00b2'",),
        golden="query_id,doc_id,grade,text\na,x,\u00b2,t\n",
        golden_name="golden.csv",
    ),
    Case(
        "golden-grade-of-2000-in-trec-qrels",
        USAGE,
        ("golden.qrels:1: query 'a': grade 2000 is above the maximum 1000",),
        golden="a 0 x 2000\n",
        golden_name="golden.qrels",
        ini={"retrieval_golden_format": "trec"},
    ),
    Case(
        "timeout-infinite",
        USAGE,
        (
            "`retrieval_timeout = inf` in pytest.ini: 'inf' is not a finite number of seconds; 0 "
            "means no limit",
        ),
        ini={"retrieval_timeout": "inf"},
    ),
    Case(
        "timeout-nan",
        USAGE,
        ("`retrieval_timeout = nan` in pytest.ini: 'nan' is not a number >= 0",),
        ini={"retrieval_timeout": "nan"},
    ),
    Case(
        "seed-of-5000-digits",
        USAGE,
        ("is not an integer >= 0", "--retrieval-seed"),
        ini={"retrieval_seed": "7" * 5000},
    ),
    Case(
        "alpha-infinite",
        USAGE,
        ("`retrieval_alpha = inf` in pytest.ini: 'inf' is not a number strictly between 0 and 1",),
        ini={"retrieval_alpha": "inf"},
    ),
    # --- tampered or foreign baselines ---------------------------------------------------------
    Case(
        "baseline-value-is-a-string",
        USAGE,
        (
            "baseline.json: query 'other', field 'metrics.retriever': recall@3 = 'high' is not a "
            "number between 0 and 1 (or null)",
            "recreate it with --retrieval-update-baseline",
        ),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": seeded_baseline('"high"')},
    ),
    Case(
        "baseline-value-is-nan",
        USAGE,
        ("query 'other', field 'metrics.retriever': recall@3 = nan is not a number between 0",),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": seeded_baseline("NaN")},
    ),
    Case(
        "baseline-value-above-one",
        USAGE,
        ("recall@3 = 7.5 is not a number between 0 and 1",),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": seeded_baseline("7.5")},
    ),
    Case(
        "baseline-stages-is-a-string",
        USAGE,
        ("baseline.json: field 'stages': \"stages\" must be a non-empty list of stage names",),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": baseline_with(stages="retriever")},
    ),
    Case(
        # Silently compared on fewer queries before: recall@3 would have had no value for it.
        "baseline-one-querys-metric-removed",
        USAGE,
        (
            "baseline.json: query 'other', field 'metrics.retriever': recall@3 missing, so it "
            "would be compared on fewer queries than the other metrics",
        ),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": baseline_with(metrics_of_other={"ndcg@3": 1.0, "mrr": 1.0})},
    ),
    Case(
        "baseline-queries-is-a-list",
        USAGE,
        ("baseline.json: field 'queries': \"queries\" must be an object of query id -> entry",),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": baseline_with(queries=[])},
    ),
    Case(
        "baseline-with-a-number-of-5000-digits",
        USAGE,
        ("baseline.json: the baseline holds a number of 5,000 digits (at most 300 are read)",),
        ini={"retrieval_baseline": "baseline.json"},
        files={"baseline.json": seeded_baseline("1" * 5000)},
    ),
    Case(
        # Read until memory ran out before.
        "baseline-is-a-symlink-to-dev-zero",
        USAGE,
        (
            "baseline.json: the baseline is not a regular file but a character device",
            "name a plain file",
        ),
        ini={"retrieval_baseline": "baseline.json"},
        symlinks={"baseline.json": "/dev/zero"},
    ),
    # --- side files ----------------------------------------------------------------------------
    Case(
        # The é of "café" in Latin-1 (0xE9) on line 2: a UnicodeDecodeError (exit 1) before.
        "doc-id-map-in-latin-1",
        USAGE,
        (
            "chunks.tsv:2:4: retrieval_doc_id_map: the doc-id map is not valid UTF-8 (byte "
            "0xe9: invalid continuation byte)",
            "save the file as UTF-8",
        ),
        ini={"retrieval_doc_id_map": "chunks.tsv"},
        files={"chunks.tsv": b"okta\tokta\ncaf\xe9\tcafe\n"},
        stopped="refused",
    ),
    Case(
        "doc-id-map-is-a-symlink-to-dev-zero",
        USAGE,
        ("retrieval_doc_id_map: the doc-id map is not a regular file",),
        ini={"retrieval_doc_id_map": "chunks.tsv"},
        symlinks={"chunks.tsv": "/dev/zero"},
        stopped="refused",
    ),
    # --- BaseException from user code ----------------------------------------------------------
    Case(
        # The doc-id function runs on every returned item, so every query fails with it.
        "doc-id-function-raises-systemexit",
        FAILED,
        ("every query failed in the retriever (4 of 4)", "refund [retriever] SystemExit: 3"),
        ini={"retrieval_doc_id": "docids_exit:to_doc"},
        files={"docids_exit.py": "def to_doc(item):\n    raise SystemExit(3)\n"},
        failed_queries=("refund", "sso", "invoice", "fax"),
        stopped="errored",
    ),
    Case(
        "doc-id-function-raises-generatorexit",
        FAILED,
        ("every query failed in the retriever (4 of 4)", "sso [retriever] GeneratorExit: closed"),
        ini={"retrieval_doc_id": "docids_closed:to_doc"},
        files={"docids_closed.py": "def to_doc(item):\n    raise GeneratorExit('closed')\n"},
        failed_queries=("refund", "sso", "invoice", "fax"),
        stopped="errored",
    ),
    # --- interrupts ----------------------------------------------------------------------------
    Case(
        # Exit 1 and "no test ran the retriever" before; the old baseline must stay.
        "ctrl-c-before-the-run-with-the-update-flag",
        INTERRUPTED,
        (
            "pytest-retrieval: interrupted (Ctrl-C or a collection error): no baseline and no "
            "report written, no verdict",
        ),
        args=("--retrieval-baseline", "baseline.json", "--retrieval-update-baseline"),
        files={"baseline.json": FOREIGN_BASELINE},
        conftest=retriever("raise KeyboardInterrupt"),
        absent=("no test ran the retriever", "baseline written", "baseline not written"),
        runs=False,
    ),
    Case(
        # The run is complete but the session is not: no baseline, no artifact.
        "ctrl-c-after-the-run-with-the-update-flag",
        INTERRUPTED,
        ("pytest-retrieval: interrupted (Ctrl-C or a collection error): no baseline",),
        args=("--retrieval-baseline", "baseline.json", "--retrieval-update-baseline"),
        files={"baseline.json": FOREIGN_BASELINE},
        tests=CTRL_C_AFTER_THE_RUN,
        absent=("baseline written", "JSON artifact written"),
        runs=False,
    ),
    Case(
        "ctrl-c-after-the-run-writes-no-report",
        INTERRUPTED,
        ("pytest-retrieval: interrupted",),
        args=("--retrieval-markdown", "report.md"),
        tests=CTRL_C_AFTER_THE_RUN,
        absent=("JSON artifact written", "Markdown report written", "retrieval gates"),
        runs=False,
    ),
    Case(
        "collection-error-with-the-update-flag",
        INTERRUPTED,
        ("pytest-retrieval: interrupted (Ctrl-C or a collection error)",),
        args=("--retrieval-baseline", "baseline.json", "--retrieval-update-baseline"),
        files={"baseline.json": FOREIGN_BASELINE},
        tests="def test_run(:\n",
        absent=("no test ran the retriever",),
        runs=False,
    ),
    # --- output injection ----------------------------------------------------------------------
    Case(
        # GitHub Actions runs a log line starting with '::' as a workflow command.
        "exception-message-with-a-workflow-command",
        FAILED,
        ("sso [retriever] ConnectionError: down\\n::add-mask::secret\\n::error::pwned",),
        conftest=failing_on_sso(
            r"raise ConnectionError('down\n::add-mask::secret\n::error::pwned')"
        ),
        failed_queries=("sso",),
    ),
    Case(
        "exception-message-with-terminal-escapes",
        FAILED,
        ("sso [retriever] ValueError: \\x1b[2J\\x1b[31mred\\r",),
        conftest=failing_on_sso(r"raise ValueError('\x1b[2J\x1b[31mred\r')"),
        failed_queries=("sso",),
        absent=("\x1b[2J",),
    ),
    Case(
        "query-id-that-is-a-workflow-command",
        FAILED,
        ("\\x3a:error::pwned [retriever] ConnectionError: down",),
        golden=(
            "version: 1\nqueries:\n  - {id: '::error::pwned', text: How do I set up SSO with "
            "Okta?, relevant: [okta]}\n"
        ),
        conftest=failing_on_sso("raise ConnectionError('down')"),
        failed_queries=("::error::pwned",),
        stopped="errored",  # its one query failed: nothing ran
    ),
    Case(
        "query-id-with-a-newline-and-a-workflow-command",
        FAILED,
        ("a\\n::add-mask::x [retriever] ConnectionError: down",),
        golden=(
            'version: 1\nqueries:\n  - {id: "a\\n::add-mask::x", text: How do I set up SSO with '
            "Okta?, relevant: [okta]}\n"
        ),
        conftest=failing_on_sso("raise ConnectionError('down')"),
        failed_queries=("a\n::add-mask::x",),
        stopped="errored",  # its one query failed: nothing ran
    ),
    Case(
        # The failed gate lists what the query missed: a doc id with a newline in it.
        "doc-id-with-a-newline-in-a-failed-gate",
        FAILED,
        ("missed doc\\n::warning::pwned",),
        golden=(
            "version: 1\nqueries:\n  - {id: a, text: How do I set up SSO with Okta?, relevant: "
            '["doc\\n::warning::pwned"]}\n'
        ),
        ini={"retrieval_thresholds": "recall@1 >= 0.5"},
    ),
    # --- writes ----------------------------------------------------------------------------------
    Case(
        # The artifact path is a symlink to a file of the user's: the link is replaced, the
        # file it pointed to is never written through.
        "artifact-path-is-a-symlink-to-another-file",
        OK,
        ("JSON artifact written to ", "out.json"),
        args=("--retrieval-json", "out.json"),
        files={"precious.txt": "do not overwrite me\n"},
        symlinks={"out.json": "precious.txt"},
        runs=True,
    ),
    Case(
        # Found only when writing, after the run: the old artifact must survive it.
        "artifact-folder-unwritable",
        USAGE,
        ("locked/out.json: cannot write the JSON artifact: Permission denied", "writable"),
        args=("--retrieval-json", "locked/out.json"),
        files={"locked/out.json": OLD_ARTIFACT},
        needs_permissions=True,
    ),
]


def _write(project: RetrievalProject, case: Case) -> dict[Path, bytes]:
    """Write the case's project; return the seeded files that must survive, with their bytes."""
    if isinstance(case.golden, bytes):
        (project.path / case.golden_name).write_bytes(case.golden)
    elif case.golden is not None:
        (project.path / case.golden_name).write_text(case.golden, encoding="utf-8")
    golden = {"retrieval_golden": case.golden_name} if case.golden_in_ini else {}
    project.write(
        golden=None,
        ini={**golden, "retrieval_ks": "1,3", **case.ini},
        conftest=case.conftest,
        tests=case.tests,
    )
    seeded = {project.path / "out.json": OLD_ARTIFACT}
    for name, content in case.files.items():
        data = content.encode() if isinstance(content, str) else content
        seeded[project.path / name] = data
    for path, data in seeded.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_bytes(data)
    for name, target in case.symlinks.items():
        link = project.path / name
        if link.exists() or link.is_symlink():
            link.unlink()
        seeded.pop(link, None)
        link.symlink_to(target)
    return seeded


def _artifact_path(case: Case) -> str:
    args = list(case.args)
    return args[args.index("--retrieval-json") + 1] if "--retrieval-json" in args else "out.json"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_a_bad_input_fails_cleanly_naming_its_source_and_fix(
    retrieval_project: RetrievalProject, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.needs_permissions and (sys.platform == "win32" or os.geteuid() == 0):
        pytest.skip("permissions cannot bite: root (or Windows) writes into read-only folders")
    if case.symlinks and sys.platform == "win32":  # pragma: no cover
        pytest.skip("symlinks need privileges on Windows")
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    seeded = _write(retrieval_project, case)
    locked = retrieval_project.path / "locked"
    if case.needs_permissions:
        locked.chmod(0o555)
    try:
        run = retrieval_project.run_subprocess if case.xdist else retrieval_project.run
        workers = ("-n", "2") if case.xdist else ()
        json_args = () if "--retrieval-json" in case.args else ("--retrieval-json", "out.json")
        if case.status == INTERRUPTED:  # in process, pytester would re-raise the Ctrl-C
            result = retrieval_project.pytester.runpytest(
                *QUIET_PLUGINS, *json_args, *case.args, no_reraise_ctrlc=True
            )
        else:
            result = run(*json_args, *workers, *case.args)
    finally:
        if locked.exists():
            locked.chmod(0o755)
    output = "\n".join(result.outlines + result.errlines)

    assert result.ret == case.status, output
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output
    # Nor a failure shown through the plugin's own frames: the message is the whole story.
    assert re.search(r"pytest_retrieval[/\\]\w+\.py", output) is None, output
    for fragment in case.messages:
        assert fragment in output, f"{fragment!r} not in:\n{output}"
    for fragment in case.absent:
        assert fragment not in output
    # No line can be a GitHub Actions workflow command because of user data.
    commands = [line for line in output.splitlines() if line.lstrip().startswith(("::", "##["))]
    assert commands == [], commands

    artifact = retrieval_project.path / _artifact_path(case)
    for path, data in seeded.items():
        if path == artifact and case.rewrites_artifact:
            continue  # rewritten by the run: checked below
        assert path.read_bytes() == data, f"{path.name} changed"
    for name in case.symlinks:
        if (retrieval_project.path / name) == artifact and case.rewrites_artifact:
            assert not artifact.is_symlink()  # the link was replaced, not written through
    if case.rewrites_artifact:
        document = json.loads(artifact.read_text(encoding="utf-8"))
        assert document["schema"] == "pytest-retrieval/artifact"
        assert "queries" in document  # a whole artifact, not the seeded one
        assert sorted(e["query_id"] for e in document["errors"]) == sorted(case.failed_queries)
        # A stopped run says so, with its reason, and has no number (no table of zeros).
        assert document.get("status") == case.stopped
        if case.stopped is not None:
            assert document["reason"]
            assert document["results"] == [] == document["queries"]
            assert document["snapshot"] is None
    leftovers = [p.name for p in retrieval_project.path.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_the_catalogue_covers_every_exit_status_it_promises() -> None:
    # A catalogue of only usage errors would not show that a failed query is a failed session.
    assert {c.status for c in CASES} == {USAGE, FAILED, OK, INTERRUPTED}
    assert len({c.id for c in CASES}) == len(CASES)
