"""``pytest-retrieval compare`` and ``pytest-retrieval gate``: a stored run judged again, offline.

Most artifacts here are written by hand in the shape ``report.build_artifact`` gives them (see
``baseline_helpers.artifact``); one test runs the plugin and checks that the CLI reaches the very
same verdict, with the same message, from the artifact the run wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from baseline_helpers import Project, artifact, query, snapshot, write_json

from pytest_retrieval.cli import main
from pytest_retrieval.regression.baseline import dump_baseline

# Slice "a": six queries that drop 1.0 -> 0.5 (p = 1/64); slice "b": six that stay at 0.8.
BEFORE = {f"a{i}": query(1.0, slices=["a"]) for i in range(6)} | {
    f"b{i}": query(0.8, slices=["b"]) for i in range(6)
}
AFTER = {f"a{i}": query(0.5, slices=["a"]) for i in range(6)} | {
    f"b{i}": query(0.8, slices=["b"]) for i in range(6)
}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """A baseline, the same run stored as an artifact, and a degraded run's artifact."""
    baseline = tmp_path / "baseline.json"
    baseline.write_text(dump_baseline(snapshot(BEFORE)), encoding="utf-8")
    return {
        "baseline": str(baseline),
        "same": write_json(tmp_path / "same.json", artifact(snapshot(BEFORE))),
        "worse": write_json(
            tmp_path / "worse.json",
            artifact(snapshot(AFTER), thresholds=["ndcg@10 >= 0.7"], regressions=["ndcg@10 0.02"]),
        ),
    }


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the CLI; earlier output (a pytester run) is dropped."""
    capsys.readouterr()
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_compare_passes_an_unchanged_run_with_exit_0(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "compare", files["baseline"], files["same"], "-b", "ndcg@10 0.02")
    assert status == 0
    # Mean ndcg@10 (6 * 1.0 + 6 * 0.8) / 12 = 0.9, unchanged.
    # The family is named first (one check: its adjusted p-value is its raw one).
    assert out.startswith(
        "1 regression check, family-wise alpha 0.05, maxT (Westfall-Young, joint sign flips)\n"
        "PASS ndcg@10[budget=0.02]: no regression: ndcg@10 0.9000 → 0.9000 (Δ +0.0000, "
    )


def test_compare_fails_a_regression_with_exit_1_and_the_per_query_diff(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # No --budget: the run's declared budget (ndcg@10 0.02) is used.
    status, out, _ = run(capsys, "compare", files["baseline"], files["worse"])
    assert status == 1
    lines = out.splitlines()[1:]
    # Mean 0.9 -> (6 * 0.5 + 6 * 0.8) / 12 = 0.65; six deltas of -0.5 and six zeros: p = 1/64.
    assert lines[0].startswith(
        "FAIL ndcg@10[budget=0.02]: regression: ndcg@10 0.9000 → 0.6500 (Δ -0.2500, "
    )
    assert "one-sided p = 0.01562, n = 12" in lines[0]
    # The six changed queries all dropped by 0.5: no spread to size a detectable drop from.
    assert lines[0].endswith(
        "; smallest detectable drop not estimated (the 6 changed queries all moved by the same "
        "amount: no spread to size it from)"
    )
    assert "    queries that got worse (6), worst first:" in lines
    assert "      a0: ndcg@10 1.0000 → 0.5000" in lines


def test_a_stricter_alpha_given_offline_turns_the_same_drop_into_noise(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # p = 1/64 = 0.0156 is not <= 0.01. Six changed queries are also the most a test at alpha
    # 0.01 cannot use: it needs 2**-m <= 0.01, so at least m = 7 changed queries.
    status, out, _ = run(capsys, "compare", files["baseline"], files["worse"], "--alpha", "0.01")
    assert status == 0
    assert (
        "the drop exceeds the budget, but only 6 queries changed and the sign-flip test needs at "
        "least 7 changed queries to reach alpha 0.01"
    ) in out


def test_a_wider_budget_given_offline_passes_without_rerunning(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # The drop is 0.25: over 0.2, within 0.3 and within 30% of 0.9 = 0.27.
    tight, _, _ = run(capsys, "compare", files["baseline"], files["worse"], "-b", "ndcg@10 0.2")
    wide, _, _ = run(capsys, "compare", files["baseline"], files["worse"], "-b", "ndcg@10 0.3")
    relative, out, _ = run(
        capsys, "compare", files["baseline"], files["worse"], "-b", "ndcg@10 30%"
    )
    assert (tight, wide, relative) == (1, 0, 0)
    assert "budget 30% of the baseline = 0.2700" in out


def test_a_slice_star_budget_is_checked_once_per_slice(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(
        capsys, "compare", files["baseline"], files["worse"], "-b", "ndcg@10 0.02 slice=*"
    )
    assert status == 1
    verdicts = [line.split(":")[0] for line in out.splitlines() if not line.startswith(" ")]
    assert verdicts == [
        "2 regression checks, family-wise alpha 0.05, maxT (Westfall-Young, joint sign flips)",
        "FAIL ndcg@10[budget=0.02,slice=a]",
        "PASS ndcg@10[budget=0.02,slice=b]",
    ]


def test_gate_reapplies_new_thresholds_to_a_stored_run(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # The degraded run's mean ndcg@10 is 0.65 (n = 12).
    status, out, _ = run(capsys, "gate", files["worse"], "-t", "ndcg@10 >= 0.6")
    assert status == 0
    assert out == "PASS ndcg@10 >= 0.6: 0.6500 [stage=retriever split=overall] (n=12)\n"
    status, out, _ = run(capsys, "gate", files["worse"], "-t", "ndcg@10 >= 0.66")
    assert status == 1
    assert out == "FAIL ndcg@10 >= 0.66: 0.6500 [stage=retriever split=overall] (n=12)\n"


def test_gate_without_thresholds_uses_the_ones_the_run_declared(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Declared: ndcg@10 >= 0.7, and the run has 0.65.
    status, out, _ = run(capsys, "gate", files["worse"])
    assert status == 1
    assert out.startswith("FAIL ndcg@10 >= 0.7: 0.6500")


def test_gate_expands_slice_star_into_one_line_per_slice(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "gate", files["worse"], "-t", "ndcg@10 >= 0.6 slice=*")
    # Slice a: 0.5 (fails); slice b: 0.8 (passes).
    assert status == 1
    assert out.splitlines() == [
        "FAIL ndcg@10 >= 0.6: 0.5000 [stage=retriever split=overall slice=a] (n=6)",
        "PASS ndcg@10 >= 0.6: 0.8000 [stage=retriever split=overall slice=b] (n=6)",
    ]


def test_a_context_slice_is_skipped_offline_saying_why_and_the_other_lines_still_judge(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # A stored run keeps no contexts: slice=tenant:acme cannot select its queries here.
    status, out, _ = run(
        capsys, "gate", files["worse"], "-t", "ndcg@10 >= 0.6 slice=tenant:acme", "-t",
        "ndcg@10 >= 0.6",
    )  # fmt: skip
    assert status == 0
    assert out.splitlines() == [
        "SKIP ndcg@10 >= 0.6 slice=tenant:acme: slice=tenant:acme selects queries by their "
        "context, which a stored run does not keep: check it in the pytest run, where the "
        "golden set's contexts are at hand",
        "PASS ndcg@10 >= 0.6: 0.6500 [stage=retriever split=overall] (n=12)",
    ]
    status, out, _ = run(
        capsys, "compare", files["baseline"], files["worse"], "-b", "ndcg@10 0.02 slice=tenant:*"
    )
    assert status == 0  # not checkable there, which is no regression
    assert "SKIP ndcg@10[budget=0.02,slice=tenant:*]: slice=tenant:* selects queries by" in out


def test_gate_with_a_baseline_checks_thresholds_and_budgets_together(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gates = tmp_path / "gates.yaml"
    gates.write_text(
        "version: 1\nthresholds:\n  - ndcg@10 >= 0.6\nregressions:\n  - ndcg@10 0.3\n",
        encoding="utf-8",
    )
    status, out, _ = run(
        capsys, "gate", files["worse"], "--gates", str(gates), "--baseline", files["baseline"]
    )
    # 0.65 >= 0.6, and a drop of 0.25 is within 0.3.
    assert status == 0
    assert [line.split(":")[0] for line in out.splitlines() if not line.startswith(" ")] == [
        "PASS ndcg@10 >= 0.6",
        "1 regression check, family-wise alpha 0.05, maxT (Westfall-Young, joint sign flips)",
        "PASS ndcg@10[budget=0.3]",
    ]
    status, _, _ = run(
        capsys, "gate", files["worse"], "-t", "ndcg@10 >= 0.6", "--baseline", files["baseline"]
    )
    # The run's declared budget (0.02) applies when none is given: the regression fails.
    assert status == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["compare", "{baseline}", "{baseline}"],
            "{baseline}: not a pytest-retrieval JSON artifact (pass the file written by pytest "
            "--retrieval-json PATH)",
        ),
        (["compare", "{tmp}/nope.json", "{worse}"], "{tmp}/nope.json: baseline not found"),
        (["compare", "{baseline}", "{tmp}/nope.json"], "{tmp}/nope.json: artifact not found"),
        (["compare", "{worse}", "{worse}"], 'not a pytest-retrieval baseline (no "schema"'),
        (["compare", "{baseline}", "{worse}", "-b", "ndgc@10 0.02"], "unknown metric name"),
        (["gate", "{worse}", "-t", "ndgc@10 >= 0.5"], "unknown metric name"),
        (["gate", "{worse}", "-t", "map@7 >= 0.5"], "the run did not record map@7"),
        (
            ["gate", "{worse}", "-t", "ndcg@10 >= 0.5 split=heldout"],
            "held-out queries are not stored per query",
        ),
        (["gate", "{same}"], "nothing to gate: no threshold given and none recorded in the run"),
        (["gate", "{worse}", "-b", "ndcg@10 0.02"], "--budget needs a baseline to compare against"),
        (
            ["gate", "{worse}", "--gates", "{tmp}/nope.yaml"],
            "{tmp}/nope.yaml: gates file not found",
        ),
        # A gates file given decides: one with no threshold is not replaced by the run's own
        # gates (which judged metrics this file never named, in an error that named no file).
        (
            ["gate", "{worse}", "--gates", "{tmp}/empty.yaml"],
            "{tmp}/empty.yaml: nothing to gate: the gates file declares no threshold",
        ),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_2(
    files: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    names = {**files, "tmp": str(tmp_path)}
    (tmp_path / "empty.yaml").write_text("version: 1\n", encoding="utf-8")
    status, out, err = run(capsys, *(a.format(**names) for a in argv))
    assert status == 2
    assert out == ""
    assert err.startswith(f"pytest-retrieval {argv[0]}: error: ")
    assert message.format(**names) in err
    assert err.count("\n") == 1


def test_a_truncated_artifact_names_the_line_and_column(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "schema": ', encoding="utf-8")
    status, _, err = run(capsys, "compare", files["baseline"], str(broken))
    assert status == 2
    assert f"{broken}:2:13: the artifact is not valid JSON (Expecting value)" in err


def test_the_cli_reaches_the_plugins_verdict_from_the_artifact_the_run_wrote(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Project(pytester).write()
    project.update()
    baseline = str(project.baseline)
    report = str(project.path / "out.json")
    # q01..q06: doc-NN from rank 1 to rank 3, MRR 1 -> 1/3: a regression (p = 1/64).
    project.rank({f"{n:02d}": ["filler-a", "filler-b", f"doc-{n:02d}"] for n in range(1, 7)})
    failed = project.run()
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    plugin = project.regression()
    assert plugin["status"] == "regression"
    status, out, _ = run(capsys, "compare", baseline, report)
    assert status == 1
    family, *lines = out.splitlines()
    assert family == plugin_family_line(plugin)
    message = plugin["message"].splitlines()
    assert lines[0] == f"FAIL mrr[budget=0.02]: {message[0]}"
    assert lines[1:] == [f"    {line}" for line in message[1:]]

    project.rank({})
    passed = project.run()
    assert passed.ret == pytest.ExitCode.OK
    status, out, _ = run(capsys, "compare", baseline, report)
    assert status == 0
    message = project.regression()["message"].splitlines()
    assert out.splitlines()[1:] == [
        f"PASS mrr[budget=0.02]: {message[0]}",
        *(f"    {line}" for line in message[1:]),
    ]
    # The artifact of a run is also a valid input for gate: MRR 1 on all 12 queries.
    status, out, _ = run(capsys, "gate", report, "-t", "mrr >= 0.99")
    assert (status, out) == (0, "PASS mrr >= 0.99: 1.0000 [stage=retriever split=overall] (n=12)\n")
    assert json.loads(Path(report).read_text(encoding="utf-8"))["declared"] == {
        "thresholds": [],
        "regressions": ["mrr 0.02"],
    }


def plugin_family_line(outcome: dict[str, object]) -> str:
    """The family line the plugin's record implies (method, size and alpha it recorded)."""
    assert (outcome["multiplicity"], outcome["family_size"], outcome["alpha"]) == ("maxt", 1, 0.05)
    return "1 regression check, family-wise alpha 0.05, maxT (Westfall-Young, joint sign flips)"


UNCUT_CONFTEST = """\
import pytest

RANKINGS = {"q1": ["a", "x", "b"], "q2": ["x", "c", "y"]}

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        return RANKINGS[text][:k]
    return search
"""


def test_gate_rejudges_every_threshold_without_a_cutoff_the_run_declared(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # q1: relevant a, b; ranked a, x, b. q2: relevant c; ranked x, c, y.
    # MRR = (1 + 1/2) / 2 = 0.75. MAP = ((1 + 2/3) / 2 + 1/2) / 2 = 2/3.
    # R-precision: q1 top 2 = a, x -> 1/2; q2 top 1 = x -> 0; mean 0.25.
    # NDCG: q1 (1 + 1/log2 4) / (1 + 1/log2 3) = 0.91972, q2 (1/log2 3) / 1 = 0.63093;
    # mean 0.7753 (pytrec_eval agrees on all four). The table holds recall@3 only.
    pytester.makefile(
        ".yaml",
        golden="version: 1\nqueries:\n"
        "  - {id: q1, text: q1, relevant: [a, b]}\n  - {id: q2, text: q2, relevant: [c]}\n",
    )
    pytester.makeconftest(UNCUT_CONFTEST)
    pytester.makeini(
        "[pytest]\nretrieval_golden = golden.yaml\nretrieval_metrics = recall\nretrieval_ks = 3\n"
        "retrieval_short_rankings = off\nretrieval_json = out.json\nretrieval_thresholds =\n"
        "    mrr >= 0.7\n    map >= 0.6\n    ndcg >= 0.7\n    r_precision >= 0.3\n"
    )
    ran = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert ran.ret == pytest.ExitCode.TESTS_FAILED  # r_precision 0.25 < 0.3
    status, out, err = run(capsys, "gate", str(pytester.path / "out.json"))
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        "PASS mrr >= 0.7: 0.7500 [stage=retriever split=overall] (n=2)",
        "PASS map >= 0.6: 0.6667 [stage=retriever split=overall] (n=2)",
        "PASS ndcg >= 0.7: 0.7753 [stage=retriever split=overall] (n=2)",
        "FAIL r_precision >= 0.3: 0.2500 [stage=retriever split=overall] (n=2)",
    ]


def test_gate_reports_a_threshold_the_run_did_not_record_before_any_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The stored run holds ndcg@10 only: mrr cannot be judged, so nothing is judged.
    report = write_json(
        tmp_path / "run.json",
        artifact(snapshot(AFTER), thresholds=["ndcg@10 >= 0.6", "mrr >= 0.5"]),
    )
    status, out, err = run(capsys, "gate", report)
    assert (status, out) == (2, "")
    assert "the run did not record mrr" in err
