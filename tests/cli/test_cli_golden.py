"""The ``pytest-retrieval golden`` commands: validate, stats and convert."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from paths import SHARED

from pytest_retrieval.cli import main

GOLDEN = """\
version: 1
name: acme
queries:
  - id: refund-window
    text: How long is the refund window?
    relevant: [refund-policy]
    slices: [exact-lookup]
  - id: export-limits
    text: What are the export limits on the Team plan?
    relevant: {plans-and-limits: 3, export-data: 1, billing-faq: 0}
    split: heldout
  - id: fax-support
    text: Can I send invoices by fax?
    relevant: []
    slices: [no-answer]
  - id: sso-and-audit
    text: Which plans include SSO and do they keep audit logs?
    relevant: [sso, audit-log]
    slices: [multi-hop, exact-lookup]
    split: heldout
"""


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.yaml"
    path.write_text(GOLDEN, encoding="utf-8")
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_validate_prints_a_summary_and_exits_0(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["golden", "validate", str(golden)]) == 0
    out, err = capsys.readouterr()
    assert re.fullmatch(
        rf"ok: {re.escape(str(golden))}: 4 queries \(heldout 2, tune 2\); "
        r"fingerprint [0-9a-f]{12}\n",
        out,
    )
    assert err == ""


def test_validate_lists_every_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path / "bad.yaml",
        """\
        version: 1
        queries:
          - id: a
            text: first
            relevent: [d]
          - id: b
            text: second
            relevant: {d: -1}
        """,
    )
    assert main(["golden", "validate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{path}: golden set has 3 problems:" in err
    assert f"{path}:5:5" in err
    assert "query 'a', field 'relevent'" in err
    assert "did you mean 'relevant'?" in err
    assert f"{path}:8:16" in err
    assert "query 'b', field 'relevant'" in err


def test_validate_of_a_missing_file_prints_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["golden", "validate", str(missing)]) == 2
    _out, err = capsys.readouterr()
    assert err == f"pytest-retrieval golden validate: error: golden set not found: {missing}\n"


def test_validate_with_a_corpus_reports_stale_ids(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _write(tmp_path / "ids.txt", "refund-policy\nplans-and-limits\nexport-data\nsso\n")
    assert main(["golden", "validate", str(golden), "--corpus", str(ids)]) == 1
    _out, err = capsys.readouterr()
    assert f"{golden}:8: query 'export-limits'" in err
    assert "1 judged doc id(s) not in the corpus: 'billing-faq'" in err
    assert f"{golden}:16: query 'sso-and-audit'" in err
    assert "'audit-log'" in err


def test_validate_with_a_complete_corpus_says_so(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _write(
        tmp_path / "ids.txt",
        "refund-policy\nplans-and-limits\nexport-data\nbilling-faq\nsso\naudit-log\nextra\n",
    )
    assert main(["golden", "validate", str(golden), "--corpus", str(ids)]) == 0
    assert f"every judged doc is in {ids}" in capsys.readouterr().out


def test_validate_with_a_missing_corpus_file_exits_2(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["golden", "validate", str(golden), "--corpus", str(tmp_path / "x.txt")]) == 2
    assert "corpus not found" in capsys.readouterr().err


def test_stats_prints_splits_slices_grades_and_the_fingerprint(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["golden", "stats", str(golden)]) == 0
    out = capsys.readouterr().out
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "queries 4" in lines
    assert "no-answer queries 1" in lines
    assert "name acme" in lines
    # split, queries, no-answer
    assert "heldout 2 0" in lines
    assert "tune 2 1" in lines
    # slice, queries
    assert "exact-lookup 2" in lines
    assert "multi-hop 1" in lines
    assert "no-answer 1" in lines
    assert "(no slice) 1" in lines
    # judged docs per query: 1, 3, 0, 2
    assert "judged docs per query: min 0, median 1.5, mean 1.5, max 3" in lines
    # grade, judgments: one 0, four 1s, one 3
    assert "0 1" in lines
    assert "1 4" in lines
    assert "3 1" in lines
    assert re.search(r"^fingerprint\s+[0-9a-f]{12} \(sha256 [0-9a-f]{64}\)$", out, re.MULTILINE)


def test_stats_as_json(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "stats", str(golden), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"] == 4
    assert data["no_answer"] == 1
    assert data["splits"] == {
        "heldout": {"queries": 2, "no_answer": 0},
        "tune": {"queries": 2, "no_answer": 1},
    }
    assert data["slices"] == {"exact-lookup": 2, "multi-hop": 1, "no-answer": 1}
    assert data["without_slice"] == 1
    assert data["judged_per_query"] == {"min": 0, "median": 1.5, "mean": 1.5, "max": 3}
    assert data["grades"] == {"0": 1, "1": 4, "3": 1}
    assert re.fullmatch(r"[0-9a-f]{64}", data["fingerprint"])


def test_stats_of_an_invalid_golden_set_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "bad.jsonl", '{"id": "a", "text": "x"}\n')
    assert main(["golden", "stats", str(path)]) == 1
    assert "query has no 'relevant' list" in capsys.readouterr().err


def test_convert_writes_jsonl_with_the_same_fingerprint(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "golden.jsonl"
    assert main(["golden", "convert", str(golden), str(target)]) == 0
    wrote = capsys.readouterr().out
    assert wrote.startswith(f"wrote 4 queries to {target} (jsonl); fingerprint ")
    assert main(["golden", "validate", str(target)]) == 0
    validated = capsys.readouterr().out
    assert wrote.split("fingerprint ")[1] == validated.split("fingerprint ")[1]


def test_convert_reads_trec_qrels_with_topics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = _write(tmp_path / "qrels.txt", "1 0 d1 1\n2 0 d2 0\n")
    topics = _write(tmp_path / "topics.tsv", "1\tfirst\n2\tsecond\n")
    target = tmp_path / "out.yaml"
    assert main(["golden", "convert", str(qrels), str(target), "--topics", str(topics)]) == 0
    capsys.readouterr()
    text = target.read_text(encoding="utf-8")
    assert "relevant: [d1]" in text
    assert "relevant: {d2: 0}" in text


def test_convert_of_qrels_without_topics_explains_why_it_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = SHARED / "peer-suites" / "trec_eval" / "qrels.test"
    assert main(["golden", "convert", str(qrels), str(tmp_path / "out.yaml")]) == 1
    err = capsys.readouterr().err
    assert "3 queries without text" in err
    assert "topics file" in err


def test_convert_to_an_unknown_format_is_a_usage_error(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["golden", "convert", str(golden), str(tmp_path / "out.csv")]) == 2
    assert "cannot tell the output format" in capsys.readouterr().err
    assert main(["golden", "convert", str(golden), str(tmp_path / "out.txt"), "--to", "yaml"]) == 0


def test_the_console_script_validates_a_golden_set(golden: Path) -> None:
    script = shutil.which("pytest-retrieval")
    assert script is not None, "pytest-retrieval is installed in editable mode"
    ok = subprocess.run(
        [script, "golden", "validate", str(golden)], capture_output=True, text=True, check=False
    )
    assert ok.returncode == 0
    assert ok.stdout.startswith(f"ok: {golden}: 4 queries")
    bad = golden.with_name("bad.yaml")
    bad.write_text(GOLDEN.replace("relevant: []", "relevant:"), encoding="utf-8")
    failed = subprocess.run(
        [script, "golden", "validate", str(bad)], capture_output=True, text=True, check=False
    )
    assert failed.returncode == 1
    assert f"{bad}:14:5" in failed.stderr
    assert "query 'fax-support', field 'relevant': 'relevant' is empty" in failed.stderr
