"""The shared mechanisms behind the second bad-input catalogue, unit by unit.

* ``files``: the all-or-nothing append (a full disk never leaves a cut report in
  ``$GITHUB_STEP_SUMMARY``), the atomic writer interrupted mid-write, the bounded reader (regular
  files only, a size cap).
* ``text``: the ASCII integer parser, the leakage key, the escaping of user text for terminals
  and CI logs.
* the Markdown report's neutralised mentions and auto-links;
* NDCG gains that never overflow, with values worked out by hand;
* the fingerprint: still the sha256 of the documented serialisation, in plain UTF-8;
* a real Ctrl-C (SIGINT) during a run: exit 2, one "interrupted" line, nothing written.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from paths import GOLDEN_FILES
from plugin_helpers import GOLDEN, RetrievalProject, conftest_with

from pytest_retrieval import files, reading
from pytest_retrieval.errors import InputError
from pytest_retrieval.golden.leakage import normalise_text
from pytest_retrieval.golden.model import GoldenSet, Query
from pytest_retrieval.report.markdown import append_step_summary, md_text
from pytest_retrieval.report.write import ReportTargets
from pytest_retrieval.scoring.evaluate import evaluate
from pytest_retrieval.scoring.metrics import ndcg_at_k
from pytest_retrieval.text import for_terminal, guard_line, guard_lines, leakage_key, parse_int

# --- the all-or-nothing append -----------------------------------------------------------------


def _short_writes(monkeypatch: pytest.MonkeyPatch, *, fail: bool) -> None:
    """Make the next os.write in files.py write half its bytes, then stop short (a full disk):
    return the short count, or raise ENOSPC after writing them (``fail``)."""
    real = os.write

    def half(fd: int, data: bytes) -> int:
        written = real(fd, bytes(data[: len(data) // 2]))
        if fail:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return written

    monkeypatch.setattr(files.os, "write", half)


@pytest.mark.parametrize("fail", [False, True], ids=["short-write", "enospc"])
def test_an_append_that_runs_out_of_space_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_bytes(b"# earlier step\n")
    _short_writes(monkeypatch, fail=fail)
    with pytest.raises(OSError) as raised:
        files.append_text(summary, "## retrieval\n" + "row\n" * 1000)
    assert raised.value.errno == errno.ENOSPC
    assert summary.read_bytes() == b"# earlier step\n"


def test_an_append_adds_the_whole_text_after_what_was_there(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_bytes(b"# earlier step\n")
    files.append_text(summary, "## retrieval\n")
    files.append_text(summary, "caf\u00e9\n")
    assert summary.read_bytes() == "# earlier step\n## retrieval\ncafé\n".encode()


def test_a_full_disk_under_the_step_summary_is_a_warning_and_no_cut_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_bytes(b"before\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    _short_writes(monkeypatch, fail=True)
    document = json.loads((GOLDEN_FILES / "report-pass.json").read_text())
    lines = ReportTargets(step_summary=True).write(document)
    assert lines == ["warning: could not append to $GITHUB_STEP_SUMMARY (No space left on device)"]
    assert summary.read_bytes() == b"before\n"


def test_the_step_summary_gets_a_final_newline(tmp_path: Path) -> None:
    summary = tmp_path / "s.md"
    assert append_step_summary("x", {"GITHUB_STEP_SUMMARY": str(summary)}) == str(summary)
    assert summary.read_text() == "x\n"


# --- the atomic writer ---------------------------------------------------------------------------


def test_ctrl_c_in_the_middle_of_a_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path,
) -> None:
    target = tmp_path / "baseline.json"
    target.write_text("old\n")

    def write(out: object) -> None:
        out.write("half of the new")  # type: ignore[attr-defined]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        files.atomic_write(target, write)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]


def test_the_writer_never_touches_a_file_named_like_a_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    (tmp_path / "out.json.tmp").write_text("mine\n")
    (tmp_path / ".out.json.tmp").write_text("mine too\n")
    files.atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert (tmp_path / "out.json.tmp").read_text() == "mine\n"
    assert (tmp_path / ".out.json.tmp").read_text() == "mine too\n"


def test_a_lone_surrogate_in_written_json_becomes_its_escape(tmp_path: Path) -> None:
    # A retriever may return any str as an id: the artifact stays valid JSON, the same id.
    target = tmp_path / "a.json"
    files.atomic_write_json(target, {"top": ["d\udc80"]})
    assert json.loads(target.read_text(encoding="utf-8")) == {"top": ["d\udc80"]}


# --- the bounded reader ----------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "baseline.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="the baseline is not a regular file"):
        reading.read_text_file(fifo, what="baseline")


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="the artifact is 101 bytes, more than the 100"):
        reading.read_text_file(path, what="artifact", limit=100)
    assert reading.read_text_file(path, limit=101) == "x" * 101


def test_a_missing_file_is_left_to_the_caller(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        reading.read_text_file(tmp_path / "nope.json")


# --- text -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "signed", "expected"),
    [
        ("10", False, 10),
        (" 7 ", False, 7),
        ("007", False, 7),
        ("-3", True, -3),
        ("+3", True, 3),
        ("-3", False, None),
        ("\u00b2", False, None),  # str.isdigit() says yes; int() refuses
        ("\u0661\u0662", False, None),  # int() reads Arabic-Indic digits as 12
        ("1_000", False, None),  # int() reads 1000
        ("1e3", False, None),
        ("", False, None),
        ("9" * 18, False, 10**18 - 1),
        ("9" * 19, False, None),  # no setting or grade is that large
        ("9" * 5000, False, None),  # Python's integer-string limit is never reached
    ],
)
def test_integers_are_ascii_digits_only(text: str, signed: bool, expected: int | None) -> None:
    assert parse_int(text, signed=signed) == expected


def test_the_leakage_key_joins_nfc_nfd_case_and_compatibility_forms() -> None:
    nfc = "Caf\u00e9 menu"
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfc != nfd
    assert leakage_key(nfc) == leakage_key(nfd) == leakage_key("CAF\u00c9 MENU") == "café menu"
    assert leakage_key("\ufb01le") == "file"  # the ligature
    assert normalise_text("\uff32\uff25\uff26\uff35\uff2e\uff24!") == "refund"  # full width
    assert normalise_text("STRASSE") == normalise_text("stra\u00dfe")  # ß case-folds to ss


def test_the_leakage_guard_catches_the_same_text_in_nfc_and_nfd() -> None:
    with pytest.raises(InputError, match="leakage"):
        GoldenSet(
            (
                Query("a", "caf\u00e9", ["x"]),
                Query("b", unicodedata.normalize("NFD", "CAF\u00c9"), ["y"], split="heldout"),
            )
        )


def test_the_fingerprint_still_hashes_the_text_as_written_in_plain_utf8() -> None:
    # The documented serialisation, hashed here independently: stored baselines keep matching.
    queries = (Query("b", "caf\u00e9", {"x": 2}, ["s"]), Query("a", "CAFE\u0301", ["y"]))
    payload = json.dumps(
        [
            {"id": "a", "judgments": {"y": 1}, "slices": [], "split": "tune", "text": "CAFE\u0301"},
            {"id": "b", "judgments": {"x": 2}, "slices": ["s"], "split": "tune", "text": "café"},
        ],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    expected = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    assert GoldenSet(queries).fingerprint == expected


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain id", "plain id"),
        ("a\n::add-mask::x", "a\\n::add-mask::x"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("cr\rlf", "cr\\rlf"),
        ("line\u2028sep", "line\\u2028sep"),
        ("rtl\u202eevil", "rtl\\u202eevil"),
        ("tab\tok", "tab\tok"),
        ("café ✓", "café ✓"),
        ("half\ud800", "half\\ud800"),
    ],
)
def test_user_text_for_a_terminal_is_one_line_with_controls_escaped(text: str, shown: str) -> None:
    assert for_terminal(text) == shown
    assert "\n" not in for_terminal(text)


@pytest.mark.parametrize(
    ("line", "guarded"),
    [
        ("::error::pwned", "\\x3a:error::pwned"),
        ("   ::add-mask::x", "   \\x3a:add-mask::x"),
        ("##[set-output name=x]y", "\\x23#[set-output name=x]y"),
        ("retrieval: ok :: fine", "retrieval: ok :: fine"),
    ],
)
def test_no_line_we_print_can_be_a_workflow_command(line: str, guarded: str) -> None:
    assert guard_line(line) == guarded
    assert guard_lines(f"first\n{line}") == f"first\n{guarded}"


# --- Markdown ----------------------------------------------------------------------------------


def test_markdown_user_text_mentions_no_one_and_links_nothing() -> None:
    shown = md_text("ping @octocat about #12, see https://evil.example or www.evil.example")
    assert shown == (
        "ping @&#8203;octocat about #&#8203;12, see https:&#8203;//evil.example or "
        "www&#8203;.evil.example"
    )
    assert md_text("a@b.example") == "a@&#8203;b.example"  # an e-mail address auto-links too
    assert md_text("#tag and C#") == "#tag and C#"  # only "#" before a digit links an issue


# --- NDCG gains ---------------------------------------------------------------------------------


def test_ndcg_of_grades_past_1023_is_computed_without_overflow() -> None:
    # Grades 1024 (a, ranked 1st) and 1025 (b, 2nd). The gains 2**g - 1 overflow a float, but
    # NDCG is a ratio: (2**1024 + 2**1025/log2 3) / (2**1025 + 2**1024/log2 3)
    # = (1 + 2/log2 3) / (2 + 1/log2 3); at K=1, 2**1024 / 2**1025 = 1/2.
    grades = {"a": 1024, "b": 1025}
    at_2 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    means = evaluate({"q": ["a", "b"]}, {"q": grades}, ["ndcg@1", "ndcg@2"]).means
    assert means["ndcg@1"] == pytest.approx(0.5, rel=1e-12)
    assert means["ndcg@2"] == pytest.approx(at_2, rel=1e-12)
    assert ndcg_at_k(["a", "b"], grades, 2) == pytest.approx(at_2, rel=1e-12)
    # A grade of 5,000 dominates: the doc graded 1 contributes 2**-4999 of it, i.e. nothing.
    assert evaluate({"q": ["b", "a"]}, {"q": {"a": 5000, "b": 1}}, ["ndcg@1"]).means[
        "ndcg@1"
    ] == pytest.approx(0.0, abs=1e-300)


def test_linear_ndcg_of_a_grade_beyond_a_float_is_computed() -> None:
    # Linear gains 10**400 (a, 1st) and 10**400 (b, 2nd): the ideal is the same order, NDCG 1.
    grades = {"a": 10**400, "b": 10**400}
    means = evaluate({"q": ["a", "b"]}, {"q": grades}, ["ndcg@2"], gain="linear").means
    assert means["ndcg@2"] == pytest.approx(1.0)


def test_small_grades_score_exactly_as_before() -> None:
    # Grades 3 (a, 2nd) and 1 (b, 1st): DCG = 1 + 7/log2 3, IDCG = 7 + 1/log2 3.
    grades = {"a": 3, "b": 1}
    expected = (1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3))
    assert evaluate({"q": ["b", "a"]}, {"q": grades}, ["ndcg@2"]).means["ndcg@2"] == expected


# --- a real Ctrl-C --------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_a_real_ctrl_c_during_the_run_exits_2_writes_nothing_and_says_so(
    retrieval_project: RetrievalProject,
) -> None:
    started = retrieval_project.path / "started"
    conftest = conftest_with(
        f"""
        import time

        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text, k):
                open({str(started)!r}, "w").close()
                time.sleep(60)
                return []
            return search
        """
    )
    retrieval_project.write(
        golden=GOLDEN, conftest=conftest, tests="def test_run(retrieval_run): pass\n"
    )
    baseline = retrieval_project.path / "baseline.json"
    baseline.write_text('{"kept": true}\n')
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--retrieval-baseline",
            "baseline.json",
            "--retrieval-update-baseline",
            "--retrieval-json",
            "out.json",
            "--retrieval-markdown",
            "out.md",
        ],
        cwd=retrieval_project.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, "the retriever never started"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 2, output
    assert "pytest-retrieval: interrupted (Ctrl-C or a collection error)" in output
    assert "no test ran the retriever" not in output
    # pytest names the line the interrupt landed on (in our wait loop); no traceback.
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output
    assert baseline.read_text() == '{"kept": true}\n'
    assert not (retrieval_project.path / "out.json").exists()
    assert not (retrieval_project.path / "out.md").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_after_ctrl_c_no_further_query_is_sent_to_the_retriever(
    retrieval_project: RetrievalProject,
) -> None:
    # 40 queries, two at a time; the third call interrupts the run. Before the fix, the worker
    # threads kept taking queries until the process ended (30 of 40 calls, all billed).
    golden = "version: 1\nqueries:\n" + "".join(
        f"  - id: q{i}\n    text: question {i}\n    relevant: [d{i}]\n" for i in range(40)
    )
    conftest = conftest_with(
        """
        import os, signal, time

        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text, k):
                log_call(text)
                if text == "question 2":
                    os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
                return ["x"]
            return search
        """
    )
    retrieval_project.write(
        golden=golden,
        conftest=conftest,
        ini={"retrieval_concurrency": "2"},
        tests="def test_run(retrieval_run): pass\n",
    )
    result = retrieval_project.run_subprocess()
    assert result.ret == 2
    # The calls under way when the interrupt came (at most the two workers' next ones) may
    # finish; none starts after it.
    assert len(retrieval_project.calls()) <= 5
