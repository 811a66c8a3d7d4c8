"""``pytest-retrieval evaluate``: tables, JSON, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from pytest_retrieval.cli import main

QRELS = ROOT / "examples" / "qrels.txt"
RUN = ROOT / "examples" / "run.txt"


def test_json_has_exactly_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        ["evaluate", "--qrels", str(QRELS), "--run", str(RUN), "-m", "recall@5", "mrr", "--json"]
    )
    assert status == 0
    document = json.loads(capsys.readouterr().out)
    assert list(document) == ["metrics", "queries"]
    # By hand from examples/: refund-window (rel refund-policy, refund-policy-2024) finds 1 of 2
    # at rank 2; reset-password 2 of 2 from rank 1; export-csv 1 of 2 at rank 2; sso-okta 3 of 3
    # from rank 1; fax-invoices has no relevant document and is skipped.
    assert document["metrics"] == {
        "recall@5": pytest.approx((0.5 + 1 + 0.5 + 1) / 4),
        "mrr": pytest.approx((0.5 + 1 + 0.5 + 1) / 4),
    }
    assert document["queries"] == {
        "evaluated": 4,
        "skipped_no_relevant": 1,
        "missing_from_run": 0,
        "without_judgments": 0,
    }


def test_per_query_json_has_null_where_undefined(capsys: pytest.CaptureFixture[str]) -> None:
    main(
        [
            "evaluate",
            "--qrels",
            str(QRELS),
            "--run",
            str(RUN),
            "-m",
            "ndcg@3",
            "--json",
            "--per-query",
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert list(document) == ["metrics", "per_query", "queries"]
    assert document["per_query"]["fax-invoices"] == {"ndcg@3": None}
    assert document["per_query"]["reset-password"]["ndcg@3"] == pytest.approx(
        # grades: reset-password 2 at rank 1, mfa-recovery 1 at rank 3 (exponential gain)
        (3 + 1 / 2) / (3 + 1 / 1.584962500721156)
    )


def test_the_table_lists_each_metric_and_the_query_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["evaluate", "--qrels", str(QRELS), "--run", str(RUN), "-m", "P@5,map"]) == 0
    out = capsys.readouterr().out
    assert "precision@5" in out
    assert "0.3500" in out
    assert "map" in out
    assert "4 evaluated, 1 skipped (no relevant document)" in out


def test_gain_and_min_grade_options_change_the_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["evaluate", "--qrels", str(QRELS), "--run", str(RUN), "-m", "recall@5", "--json"]
    main([*args, "--min-grade", "2"])
    strict = json.loads(capsys.readouterr().out)
    # At grade >= 2: refund-window 1/1, reset-password 1/1, export-csv 0/1, sso-okta 2/2.
    assert strict["metrics"]["recall@5"] == pytest.approx(3 / 4)


def test_no_relevant_zero_counts_the_no_answer_query(capsys: pytest.CaptureFixture[str]) -> None:
    main(
        [
            "evaluate",
            "--qrels",
            str(QRELS),
            "--run",
            str(RUN),
            "-m",
            "mrr",
            "--json",
            "--no-relevant",
            "zero",
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert document["queries"]["evaluated"] == 5
    assert document["metrics"]["mrr"] == pytest.approx(3 / 5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--qrels", "missing.txt", "--run", str(RUN)], "missing.txt: file not found"),
        (["--qrels", str(QRELS), "--run", str(RUN), "-m", "recal@5"], "did you mean 'recall@5'"),
        (["--qrels", str(RUN), "--run", str(RUN)], f"{RUN}:2: expected 4 fields"),
    ],
)
def test_errors_exit_2_with_one_clear_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["evaluate", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_a_malformed_run_line_is_named_with_its_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run.txt"
    run.write_text("q Q0 a 1 1.0 t\nq Q0 b 2 oops t\n")
    assert main(["evaluate", "--qrels", str(QRELS), "--run", str(run)]) == 2
    assert f"{run}:2: query 'q': score 'oops' is not a number" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        [str(Path(sys.executable).parent / "pytest-retrieval")],
        [sys.executable, "-m", "pytest_retrieval.cli"],
    ],
    ids=["console-script", "python-m"],
)
def test_the_installed_command_scores_the_example(command: list[str]) -> None:
    result = subprocess.run(
        [*command, "evaluate", "--qrels", str(QRELS), "--run", str(RUN), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["queries"]["evaluated"] == 4


def _files(tmp_path: Path, qrels: str, run: str) -> list[str]:
    (tmp_path / "qrels.txt").write_text(qrels, encoding="utf-8")
    (tmp_path / "run.txt").write_text(run, encoding="utf-8")
    return ["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt")]


def test_a_run_whose_ids_never_match_the_qrels_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 25 queries, each judging D<i>; the run ranks x<i>: recall would be 0 for every query.
    args = _files(
        tmp_path,
        "".join(f"q{i} 0 D{i} 1\n" for i in range(25)),
        "".join(f"q{i} Q0 x{i} 1 9.0 r\n" for i in range(25)),
    )
    assert main([*args, "-m", "recall@5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no number printed
    assert captured.err.count("\n") == 1
    assert (
        "the run's ids do not match the qrels': 0 of 25 rankings of topics with a relevant "
        "document hold a judged id, so every metric would be 0" in captured.err
    )
    assert "(run ids, e.g. 'x0', 'x1', 'x2'; judged ids, e.g. 'D0', 'D1', 'D10')" in captured.err
    assert "or pass --no-id-check" in captured.err
    # Asked for, the number is printed: 0.
    assert main([*args, "-m", "recall@5", "--json", "--no-id-check"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == {"recall@5": 0.0}


def test_a_small_run_without_any_judged_id_is_scored_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _files(tmp_path, "q1 0 A 1\nq2 0 C 1\n", "q1 Q0 a#1 1 9 r\nq2 Q0 c#1 1 9 r\n")
    assert main([*args, "-m", "recall@5", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["metrics"] == {"recall@5": 0.0}
    assert (
        "warning: 0 of 2 rankings of topics with a relevant document hold a judged id, so none "
        "finds a relevant document" in captured.err
    )
    assert "(run ids, e.g. 'a#1', 'c#1'; judged ids, e.g. 'A', 'C')" in captured.err


def test_run_ids_that_differ_from_judged_ids_only_in_unicode_form_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    args = _files(tmp_path, f"q1 0 {nfc} 1\nq2 0 tea 1\n", f"q1 Q0 {nfd} 1 9 r\nq2 Q0 tea 1 9 r\n")
    assert main([*args, "-m", "mrr"]) == 2
    err = capsys.readouterr().err
    assert "1 run id(s) differ from judged ids only in their Unicode normal form" in err
    assert "(run 'cafe\\u0301', qrels 'caf\\xe9')" in err
    # Scored as given when asked: q1 misses (0), q2 finds tea at rank 1 (1): MRR 1/2.
    assert main([*args, "-m", "mrr", "--json", "--no-id-check"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == {"mrr": 0.5}


def test_a_wholly_decomposed_run_gets_the_normal_form_message_not_the_generic_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An index built from macOS file names: every id decomposed, so no ranking matches at all.
    nfc = [f"r\u00e9sum\u00e9-{i}" for i in range(25)]
    nfd = [f"re\u0301sume\u0301-{i}" for i in range(25)]
    args = _files(
        tmp_path,
        "".join(f"q{i} 0 {d} 1\n" for i, d in enumerate(nfc)),
        "".join(f"q{i} Q0 {d} 1 2.0 t\n" for i, d in enumerate(nfd)),
    )
    assert main([*args, "-m", "mrr"]) == 2
    err = capsys.readouterr().err
    assert "25 run id(s) differ from judged ids only in their Unicode normal form" in err
    assert "do not match the qrels'" not in err


def test_no_answer_topics_do_not_count_against_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 24 no-answer topics (one judged non-relevant document each) ranking unjudged documents, and
    # one answerable topic that finds its document at rank 1: a fine run, MRR 1 over 1 topic.
    qrels = "".join(f"na{i} 0 pooled-{i} 0\n" for i in range(24)) + "a1 0 doc-a 1\n"
    run = "".join(f"na{i} Q0 other-{i} 1 1.0 t\n" for i in range(24)) + "a1 Q0 doc-a 1 1.0 t\n"
    assert main([*_files(tmp_path, qrels, run), "-m", "mrr", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["metrics"] == {"mrr": 1.0}
    assert captured.err == ""


def test_run_ids_that_match_judged_ids_but_for_their_spelling_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two topics (too few for the share rule); the run names the files the documents came from.
    args = _files(
        tmp_path,
        "q1 0 refund 1\nq2 0 sso 1\n",
        "q1 Q0 docs/Refund.md 1 9 r\nq2 Q0 docs/SSO.md 1 9 r\n",
    )
    assert main([*args, "-m", "recall@5"]) == 2
    err = capsys.readouterr().err
    assert (
        "the run's ids do not match the qrels': 0 of 2 rankings of topics with a relevant "
        "document hold a judged id, but 2 run id(s) equal judged ids once case, separators (-, "
        "_, white space), a path or a file extension is ignored (run 'docs/Refund.md', qrels "
        "'refund'; run 'docs/SSO.md', qrels 'sso'), so every metric would be 0" in err
    )
    assert main([*args, "-m", "recall@5", "--json", "--no-id-check"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == {"recall@5": 0.0}


def test_a_run_whose_one_word_ids_alone_match_is_refused_for_the_spelling_of_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Underscores for hyphens: okta matches as given, two topics hold their document spelled
    # otherwise. It was scored (recall@5 1/3) without a word.
    args = _files(
        tmp_path,
        "q1 0 refund-policy 1\nq2 0 sso-setup 1\nq3 0 okta 1\n",
        "q1 Q0 refund_policy 1 9 r\nq2 Q0 sso_setup 1 9 r\nq3 Q0 okta 1 9 r\n",
    )
    assert main([*args, "-m", "recall@5"]) == 2
    err = capsys.readouterr().err
    assert (
        "the run's ids do not match the qrels': 1 of 3 rankings of topics with a relevant "
        "document hold a judged id, but 2 run id(s) equal judged ids once case, separators (-, "
        "_, white space), a path or a file extension is ignored (run 'refund_policy', qrels "
        "'refund-policy'; run 'sso_setup', qrels 'sso-setup'), so the metrics would be near 0"
        in err
    ), err


def test_duplicates_score_every_metric_per_group_as_a_pytest_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 a 1\n", encoding="utf-8")
    run = tmp_path / "run.txt"
    run.write_text("q Q0 b 1 3 t\nq Q0 a 2 2 t\nq Q0 c 3 1 t\n", encoding="utf-8")
    groups = tmp_path / "dups.tsv"
    groups.write_text("a\tG\nb\tG\n", encoding="utf-8")
    args = ["evaluate", "--qrels", str(qrels), "--run", str(run), "--json"]
    args += ["-m", "mrr", "precision@3", "recall@3", "distinct@3"]
    assert main(args) == 0
    # Without groups: b, a, c with a relevant: RR 1/2, P@3 1/3, every result distinct.
    plain = json.loads(capsys.readouterr().out)["metrics"]
    assert plain == {"mrr": 0.5, "precision@3": 1 / 3, "recall@3": 1.0, "distinct@3": 1.0}
    assert main([*args, "--duplicates", str(groups)]) == 0
    # Per group: b stands for {a, b}, relevant through a, at rank 1 (RR 1); a at rank 2 is its
    # copy, filler (P@3 still 1/3); 2 groups among 3 results: distinct@3 = 2/3.
    grouped = json.loads(capsys.readouterr().out)["metrics"]
    assert grouped == {
        "mrr": 1.0,
        "precision@3": pytest.approx(1 / 3),
        "recall@3": 1.0,
        "distinct@3": pytest.approx(2 / 3),
    }


def test_a_run_of_copies_of_the_judged_documents_is_scored_with_duplicates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 25 topics, each judged on d<n>; the run ranks only their copies c<n> (and a filler).
    # Without groups no ranking holds a judged id: refused. With the groups a copy stands for
    # its group, as in a pytest run: scored, every topic's group at rank 1 (recall@2 = 1).
    qrels = "".join(f"q{n} 0 d{n} 1\n" for n in range(25))
    run = "".join(f"q{n} Q0 c{n} 1 2 t\nq{n} Q0 x{n} 2 1 t\n" for n in range(25))
    args = _files(tmp_path, qrels, run)
    groups = tmp_path / "copies.tsv"
    groups.write_text("".join(f"d{n}\tG{n}\nc{n}\tG{n}\n" for n in range(25)), encoding="utf-8")
    assert main([*args, "-m", "recall@2"]) == 2
    assert "hold a judged id" in capsys.readouterr().err
    assert main([*args, "-m", "recall@2", "--json", "--duplicates", str(groups)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["metrics"] == {"recall@2": 1.0}
    assert captured.err == ""


def test_a_missing_duplicates_file_is_one_line_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "dups.tsv"
    args = ["evaluate", "--qrels", str(QRELS), "--run", str(RUN), "--duplicates", str(missing)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{missing}: duplicates file not found" in err
    assert "check --duplicates" in err
    assert "ini file" not in err
