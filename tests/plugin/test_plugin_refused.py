"""Refused and errored runs say so everywhere, and never write a baseline.

A run is **refused** (exit status 4) when what it would score is meaningless: returned ids that
never match a judged id, a ``retrieval_doc_id`` path no item has, a doc-id map that cannot be
read, a replay the cache cannot serve, a retriever object the plugin cannot call, no retriever
at all, short rankings under ``retrieval_short_rankings = error``. It **errored** (exit status
1) when nothing ran that could be scored: every query failed, or the retriever fixture raised.

Either way the user sees the same thing in every report: the terminal prints the reason and the
fix first, in one block, with no table of zeros and no ``_pytest.outcomes.Exit``; the test that
needed the run fails with it (JUnit shows it); the JSON artifact has ``status``, ``reason``,
``fix`` and no number; the Markdown report and the GitHub step summary say refused (⛔, never
✅); the HTML report's title and verdict say REFUSED (never PASSED); and with
``--retrieval-update-baseline`` the committed baseline is left byte for byte as it was.

Every case starts from the standard project (``plugin_helpers``) with a baseline written by a
good run, then breaks one thing.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from plugin_helpers import CONFTEST, RetrievalProject, conftest_with, esc

from pytest_retrieval.cli import EXIT_OK, EXIT_USAGE, main

USAGE = pytest.ExitCode.USAGE_ERROR
FAILED = pytest.ExitCode.TESTS_FAILED

#: One gate in a test file: the first test that needs the run.
GATE = """
from pytest_retrieval.gates.gate import assert_recall_at

def test_gate():
    assert_recall_at(3) >= 0.0
"""

#: Three generated ids (UUIDs) for every query: no judged id, and the shape of chunk ids.
UUIDS = [
    "0b6f9a1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
    "1b6f9a1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
    "2b6f9a1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
]


def retriever(body: str) -> str:
    """A conftest (RANKINGS in scope) whose session fixture is ``body``, a function body."""
    indented = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return conftest_with(
        f"""
@pytest.fixture(scope="session")
def retriever_under_test():
{indented}
"""
    )


@dataclass(frozen=True)
class Stopped:
    """One way a run is stopped once it started: what breaks it, and what it must say."""

    id: str
    status: str  # "refused" or "errored"
    #: The JSON artifact's reason matches this pattern followed by anything (``*`` matches
    #: anything, ``[`` is literal), and so does the terminal's block after its prefix.
    reason: str
    #: A fragment of the fix (None: the artifact's fix is null).
    fix: str | None
    conftest: str = CONFTEST
    ini: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)
    #: Query ids the artifact's errors name.
    failed: tuple[str, ...] = ()

    @property
    def exit_status(self) -> int:
        return USAGE if self.status == "refused" else FAILED


CASES = [
    Stopped(
        # The standard set has 3 answerable visible queries (refund, sso, invoice): none of
        # their rankings holds a judged id, and the ids are UUIDs (a recognisable wrong shape).
        "ids-never-match",
        "refused",
        "the returned ids do not match the golden set's: 0 of 3 rankings [retriever] hold an "
        "id of a judged document, so every metric would be 0 for a reason that is not "
        "retrieval quality.",
        "these are generated node/chunk ids (UUIDs)",
        conftest=retriever(f"return lambda text, k: {UUIDS!r}"),
    ),
    Stopped(
        "doc-id-path-no-item-has",
        "refused",
        "retrieval_doc_id = metadata.source: no returned item has it, so every query failed "
        "(query 'refund': ",
        "set it to the key or attribute path where each result keeps its document id",
        conftest=retriever(
            "return lambda text, k: [{'metadata': {'url': d}} for d in RANKINGS[text][:k]]"
        ),
        ini={"retrieval_doc_id": "metadata.source"},
        failed=("refund", "sso", "invoice", "fax"),
    ),
    Stopped(
        "doc-id-map-missing",
        "refused",
        "retrieval_doc_id_map = */chunks.tsv: cannot be read (No such file or directory)",
        None,
        ini={"retrieval_doc_id_map": "chunks.tsv"},
    ),
    Stopped(
        # The é of "café" in Latin-1 (0xE9) on line 2.
        "doc-id-map-not-utf8",
        "refused",
        "*chunks.tsv:2:4: retrieval_doc_id_map: the doc-id map is not valid UTF-8*",
        "save the file as UTF-8",
        ini={"retrieval_doc_id_map": "chunks.tsv"},
        files={"chunks.tsv": b"okta\tokta\ncaf\xe9\tcafe\n"},
    ),
    Stopped(
        # No cache file at all: each of the 4 scorable queries has no entry.
        "replay-the-cache-cannot-serve",
        "refused",
        "--retrieval-cache: replay: 4 of 4 queries have no entry in ",
        "record them first with --retrieval-cache=use (or refresh)",
        args=("--retrieval-cache", "replay"),
    ),
    Stopped(
        "retriever-with-no-usable-method",
        "refused",
        "the retriever under test is a int, which is neither callable nor has an "
        "invoke/retrieve/search/retrieve_batch/batch method",
        "return an object the plugin can call from the retriever_under_test fixture",
        conftest=retriever("return 42"),
    ),
    Stopped(
        # Built by the plugin from retrieval_retriever: the fix names the factory, not a
        # fixture the user never wrote.
        "retriever-factory-with-no-usable-method",
        "refused",
        "the retriever under test is a int, which is neither callable nor has an "
        "invoke/retrieve/search/retrieve_batch/batch method; return a function "
        "`retrieve(query_text) -> ranked ids` from your factory (retrieval_retriever = "
        "shop:build)",
        "return an object the plugin can call from your factory (retrieval_retriever = "
        "shop:build), as said above",
        conftest="",
        ini={"retrieval_retriever": "shop:build"},
        files={"shop.py": b"def build():\n    return 42\n"},
    ),
    Stopped(
        # A reranker the plugin cannot call: the fix names the reranker's fixture.
        "reranker-with-no-usable-method",
        "refused",
        "the reranker under test is a int, which is neither callable nor has an "
        "invoke/rerank/retrieve/search method; return a function "
        "`rerank(query_text, candidates) -> ranked ids` from the reranker_under_test fixture",
        "return an object the plugin can call from the reranker_under_test fixture",
        conftest=CONFTEST
        + textwrap.dedent(
            """

            @pytest.fixture(scope="session")
            def reranker_under_test():
                return 42
            """
        ),
    ),
    Stopped(
        "no-retriever",
        "refused",
        "no retriever to test",
        "define the retriever_under_test fixture:",
        conftest="",
    ),
    Stopped(
        "retriever-spec-that-does-not-import",
        "refused",
        "retrieval_retriever = 'nosuch.search:build': cannot import 'nosuch.search'",
        "check the module path",
        conftest="",
        ini={"retrieval_retriever": "nosuch.search:build"},
    ),
    Stopped(
        # Every ranking holds 1 result; recall@3 is gated, so the cutoff 3 is short. Asked for
        # 3, the first call returns 1: the index may hold no more, or the retriever cuts.
        "short-rankings-under-error",
        "refused",
        "short rankings [retriever]: 4 of 4 rankings hold fewer than 3 documents (longest 1, "
        "median 1); 4 of them came back with fewer results than asked for (up to 3 asked, at "
        "most 1 returned): the index holds no more for them, or the retriever returns fewer "
        "than it is asked for",
        "if the index holds more, make the retriever return as many results as it is asked for; "
        "otherwise the index holds fewer than 3 documents for these queries (at most 1 came "
        "back): gate K of at most 1",
        conftest=retriever("return lambda text, k: RANKINGS[text][:1]"),
        ini={"retrieval_short_rankings": "error"},
    ),
    Stopped(
        "every-query-failed",
        "errored",
        "every query failed in the retriever (4 of 4); the first, query 'refund' "
        "[retriever]: ConnectionError: vector store down",
        "make the retriever answer",
        conftest=retriever(
            """
            def search(text, k):
                raise ConnectionError("vector store down")
            return search
            """
        ),
        failed=("refund", "sso", "invoice", "fax"),
    ),
    Stopped(
        # The retriever answers, the reranker raises for every query: the fix names the
        # reranker (it said "make the retriever answer").
        "every-query-failed-in-the-reranker",
        "errored",
        "every query failed in the reranker (4 of 4); the first, query 'refund' "
        "[reranker]: RuntimeError: cross-encoder down",
        "make the reranker answer (the error quoted is the first",
        conftest=CONFTEST
        + textwrap.dedent(
            """

            @pytest.fixture(scope="session")
            def reranker_under_test():
                def rerank(query, candidates):
                    raise RuntimeError("cross-encoder down")
                return rerank
            """
        ),
        failed=("refund", "sso", "invoice", "fax"),
    ),
    Stopped(
        "retriever-raises-at-build-time",
        "errored",
        "the retriever_under_test fixture raised ConnectionError: index unreachable",
        "fix retriever_under_test (or the factory it calls)",
        conftest=retriever('raise ConnectionError("index unreachable")'),
    ),
    Stopped(
        "reranker-raises-at-build-time",
        "errored",
        "the reranker_under_test fixture raised ValueError: no cross-encoder weights",
        "fix reranker_under_test (or the factory it calls)",
        conftest=CONFTEST
        + textwrap.dedent(
            """

            @pytest.fixture(scope="session")
            def reranker_under_test():
                raise ValueError("no cross-encoder weights")
            """
        ),
    ),
    Stopped(
        # Something around the retriever fails (here the run source's SQLite, as a locked cache
        # or shard file would): the run errored, it does not go missing from the reports.
        "the-run-phase-raises",
        "errored",
        "the run phase raised OperationalError: database is locked",
        "see the traceback of the first test that needed the run",
        conftest=CONFTEST
        + textwrap.dedent(
            """

            import sqlite3
            import pytest_retrieval.run.source


            def locked(*args, **kwargs):
                raise sqlite3.OperationalError("database is locked")


            @pytest.fixture(scope="session", autouse=True)
            def locked_run_source():
                # Undone at the end of the session: the test runs pytest in this process.
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(pytest_retrieval.run.source, "obtain", locked)
                    yield
            """
        ),
    ),
]


def good_baseline(project: RetrievalProject) -> bytes:
    """Write the standard project with a baseline and write the baseline from a good run."""
    project.write(ini={"retrieval_baseline": "baseline.json"}, tests=GATE)
    result = project.run("--retrieval-update-baseline")
    assert result.ret == 0, result.stdout.str()
    return (project.path / "baseline.json").read_bytes()


def stopped_run(
    project: RetrievalProject, case: Stopped, monkeypatch: pytest.MonkeyPatch
) -> pytest.RunResult:
    """The case's broken project, run with every report asked for and the update flag."""
    project.write(
        ini={"retrieval_baseline": "baseline.json", **case.ini},
        conftest=case.conftest,
        tests=GATE,
    )
    for name, data in case.files.items():
        (project.path / name).write_bytes(data)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "summary.md"))
    return project.run(
        "--retrieval-update-baseline",
        "--retrieval-json",
        "out.json",
        "--retrieval-markdown",
        "out.md",
        "--retrieval-html",
        "out.html",
        "--junitxml",
        "junit.xml",
        *case.args,
    )


def schema_errors(document: object) -> list[str]:
    text = files("pytest_retrieval").joinpath("artifact.schema.json").read_text(encoding="utf-8")
    validator = jsonschema.Draft202012Validator(json.loads(text))
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


def assert_reports_say_stopped(path: Path, case: Stopped) -> dict[str, Any]:
    """Every report file says the case's status, reason and fix, and shows no number."""
    word, icon = ("REFUSED", "⛔") if case.status == "refused" else ("ERRORED", "❌")
    exit_status = 4 if case.status == "refused" else 1
    # The JSON artifact: status, reason, fix; no metric table, no per-query rows, no snapshot.
    document: dict[str, Any] = json.loads((path / "out.json").read_text(encoding="utf-8"))
    assert schema_errors(document) == []
    assert document["status"] == case.status
    assert fnmatchcase(document["reason"], esc([case.reason + "*"])[0]), document["reason"]
    if case.fix is None:
        assert document["fix"] is None
    else:
        assert case.fix in document["fix"]
        assert case.fix not in document["reason"]  # the two apart
    assert document["results"] == []
    assert document["queries"] == []
    assert document["snapshot"] is None
    assert document["latency_ms"] == {}
    assert sorted(e["query_id"] for e in document["errors"]) == sorted(case.failed)
    # The Markdown report and the step summary: the status in the title, never a ✅.
    headline = f"### {icon} Retrieval quality: run {case.status}, nothing scored (exit status "
    for name in ("out.md", "summary.md"):
        markdown = (path / name).read_text(encoding="utf-8")
        assert markdown.startswith(headline + f"{exit_status})\n"), markdown
        assert "✅" not in markdown
        assert "0.0000" not in markdown
        assert "| Metric |" not in markdown
        assert "> **Reason:** " in markdown
        assert ("> **Fix:** " in markdown) is (case.fix is not None)
    # The HTML report: its title and verdict say the status, never PASSED.
    page = (path / "out.html").read_text(encoding="utf-8")
    assert f"<title>{word} · Retrieval report · " in page
    assert f'id="verdict">{word}: run {case.status}, nothing scored' in page
    assert f'data-verdict="{case.status}"' in page
    assert "PASSED" not in page
    assert "0.0000" not in page
    # JUnit: the test that needed the run failed with the reason.
    reasons = [
        node.get("message", "")
        for node in ET.parse(path / "junit.xml").iter()
        if node.tag in ("failure", "error")
    ]
    head = "refused the run: " if case.status == "refused" else "the run errored"
    assert any(head in message for message in reasons), reasons
    return document


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_stopped_run_says_so_everywhere_and_leaves_the_baseline_byte_identical(
    retrieval_project: RetrievalProject, case: Stopped, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = good_baseline(retrieval_project)
    result = stopped_run(retrieval_project, case, monkeypatch)
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == case.exit_status, output

    # The terminal: the section says the status, the reason comes first (the section's first
    # line, the test's failure too), and the session's last lines say it again.
    prefix = (
        "pytest-retrieval refused the run: "
        if case.status == "refused"
        else "pytest-retrieval: the run errored, nothing was scored: "
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                f"*= retrieval: run {case.status} (exit status {case.exit_status}) =*",
                prefix + case.reason + "*",
            ]
        ),
        consecutive=True,
    )
    closing = (
        "pytest-retrieval refused the run (exit status 4)"
        if case.status == "refused"
        else "pytest-retrieval: the run errored, nothing was scored"
    )
    assert result.outlines[-2].strip("! ") == closing, result.outlines[-2:]
    assert "_pytest.outcomes.Exit" not in output
    assert "0.0000" not in output  # no table of zeros
    assert "retrieval gates" not in output

    # Never a baseline from it: the good one is left byte for byte.
    assert (retrieval_project.path / "baseline.json").read_bytes() == baseline
    assert "baseline written" not in output
    assert (
        f"baseline not written to {retrieval_project.path / 'baseline.json'}: the run was "
        f"{case.status}, so it has no scores to record (the file is left as it was)"
    ) in output

    assert_reports_say_stopped(retrieval_project.path, case)


def test_the_reason_and_the_fix_are_one_block_at_the_top_of_the_retrieval_section(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    good_baseline(retrieval_project)
    result = stopped_run(retrieval_project, CASES[0], monkeypatch)
    # The whole refusal, line after line, straight under the section title; then the notes.
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval: run refused (exit status 4) =*",
                "pytest-retrieval refused the run: the returned ids do not match the golden "
                "set's: 0 of 3 rankings [retriever] hold an id of a judged document, so every "
                "metric would be 0 for a reason that is not retrieval quality.",
                f"  returned ids, e.g.: {', '.join(repr(u) for u in UUIDS)}",
                "  judged ids, e.g.:   'billing', 'export-data', 'invoices', 'okta'",
                "Fix: these are generated node/chunk ids (UUIDs). LlamaIndex: set "
                "retrieval_doc_id = node.ref_doc_id*",
                "(If the retriever really finds none of them, set retrieval_id_check = off.)",
                "pytest-retrieval: baseline not written to *",
            ]
        ),
        consecutive=True,
    )
    # The test that needed the run is the one reported (as an error at its setup: the gate
    # items' fixture ran it), with the same text and no traceback; the session ends there.
    result.assert_outcomes(errors=1)
    assert "Traceback" not in result.stdout.str()


def test_an_errored_run_lists_its_failed_queries_after_the_reason(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    good_baseline(retrieval_project)
    case = next(c for c in CASES if c.id == "every-query-failed")
    result = stopped_run(retrieval_project, case, monkeypatch)
    result.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval: run errored (exit status 1) =*",
                "pytest-retrieval: the run errored, nothing was scored: every query failed in "
                "the retriever (4 of 4); the first, query 'refund' [retriever]: "
                "ConnectionError: vector store down",
                "Fix: make the retriever answer (the error quoted is the first; the JSON "
                "artifact lists every one), then run again",
                "",
                "queries that failed:",
                "  refund [retriever] ConnectionError: vector store down",
                "  sso [retriever] ConnectionError: vector store down",
                "  invoice [retriever] ConnectionError: vector store down",
                "  fax [retriever] ConnectionError: vector store down",
            ]
        ),
        consecutive=True,
    )
    # Never the held-out query (sealed: it did not run, and is not named).
    assert "zebra" not in result.stdout.str().lower()


def test_a_later_test_that_needs_a_stopped_run_fails_with_its_reason_not_a_score(
    retrieval_project: RetrievalProject,
) -> None:
    # An errored run does not end the session: every later test that needs the run fails with
    # the same text (it used to be scored as 0 on every metric and pass a >= 0 gate).
    retrieval_project.write(
        conftest=retriever(
            """
            def search(text, k):
                raise ConnectionError("vector store down")
            return search
            """
        ),
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at, recall_at

        def test_first():
            assert_recall_at(3) >= 0.0

        def test_second():
            assert recall_at(3) >= 0.0

        def test_unrelated():
            pass
        """,
    )
    result = retrieval_project.run()
    assert result.ret == FAILED
    result.assert_outcomes(failed=2, passed=1)
    errored = "pytest-retrieval: the run errored, nothing was scored: every query failed*"
    result.stdout.fnmatch_lines(["*_ test_first _*", errored, "*_ test_second _*", errored])
    assert "0.0000" not in result.stdout.str()


def test_a_session_failed_only_by_failed_queries_says_how_many_in_its_last_lines(
    retrieval_project: RetrievalProject,
) -> None:
    # sso fails; refund, invoice and fax run: 1 of the 4 scorable queries failed (the held-out
    # one is sealed). The gate passes (recall@3 >= 0), so every test passes and pytest's own
    # line reads "1 passed": the line above it, and the gates' title, say the session failed.
    retrieval_project.write(
        conftest=retriever(
            """
            def search(text, k):
                if "SSO" in text:
                    raise ConnectionError("down")
                return RANKINGS[text][:k]
            return search
            """
        ),
        tests=GATE,
    )
    result = retrieval_project.run()
    assert result.ret == FAILED
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= retrieval gates: 1 passed; 1 of 4 queries failed to run =*"])
    assert result.outlines[-2].strip("! ") == (
        "pytest-retrieval: 1 of 4 queries failed in the retriever (exit status 1)"
    )
    assert "passed in" in result.outlines[-1]
    assert "all passed" not in result.stdout.str()


def test_the_report_command_renders_a_refused_artifact_as_refused(
    retrieval_project: RetrievalProject,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    good_baseline(retrieval_project)
    case = CASES[0]
    stopped_run(retrieval_project, case, monkeypatch)
    path = retrieval_project.path
    for name in ("out.md", "out.html", "summary.md"):
        (path / name).unlink()
    (path / "summary.md").write_text("", encoding="utf-8")
    artifact = str(path / "out.json")
    status = main(
        ["report", artifact, "--markdown", str(path / "out.md"), "--html", str(path / "out.html")]
    )
    assert status == EXIT_OK
    # The same words as the plugin's own reports (the step summary copied from the Markdown).
    (path / "summary.md").write_text((path / "out.md").read_text(encoding="utf-8"))
    assert_reports_say_stopped(path, case)
    # Gating or comparing it offline is refused too: it has no scores.
    capsys.readouterr()
    assert main(["gate", artifact, "-t", "recall@3 >= 0.5"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "the artifact is of a run that was refused, so it has no scores: the returned ids" in err


def test_a_refusal_under_xdist_is_written_as_refused_and_leaves_the_baseline(
    retrieval_project: RetrievalProject,
) -> None:
    baseline = good_baseline(retrieval_project)
    retrieval_project.write(
        ini={"retrieval_baseline": "baseline.json"},
        conftest=CASES[0].conftest,
        tests=GATE + "\n\ndef test_more():\n    assert_recall_at(1) >= 0.0\n",
    )
    result = retrieval_project.run_subprocess(
        "-n", "2", "--retrieval-update-baseline", "--retrieval-json", "out.json"
    )
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == USAGE, output
    assert (retrieval_project.path / "baseline.json").read_bytes() == baseline
    assert "baseline written" not in output
    assert "_pytest.outcomes.Exit" not in output
    document = json.loads((retrieval_project.path / "out.json").read_text(encoding="utf-8"))
    assert document["status"] == "refused"
    assert fnmatchcase(document["reason"], esc([CASES[0].reason + "*"])[0])
    assert document["results"] == []
    assert document["snapshot"] is None
    result.stdout.fnmatch_lines(["*= retrieval: run refused (exit status 4) =*"])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"status": "skipped"}, '"status" must be "refused" or "errored" (not \'skipped\')'),
        ({"reason": None}, '"reason" must be a string'),
        ({"fix": 3}, '"fix" must be a string or null'),
    ],
)
def test_a_tampered_stop_in_an_artifact_is_a_usage_error_naming_the_field(
    retrieval_project: RetrievalProject,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    message: str,
) -> None:
    # An unknown status would otherwise be read as a run with numbers: a refusal reported as a
    # pass by the report command.
    good_baseline(retrieval_project)
    stopped_run(retrieval_project, CASES[0], monkeypatch)
    path = retrieval_project.path / "out.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**document, **changes}), encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(path)]) == EXIT_USAGE
    assert message in capsys.readouterr().err
