"""Baselines through the plugin: creating one, passing, failing with a per-query diff, noise,
a changed golden set, and writing the file (atomically, from the xdist controller only).

The project (see ``baseline_helpers``) has 12 queries, q01 .. q12, each with one relevant
document doc-01 .. doc-12 ranked first unless a test degrades it; the one budget is
``mrr 0.02``.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator

import pytest
from baseline_helpers import BASELINE, CONFTEST, Project, golden
from plugin_helpers import esc

from pytest_retrieval.phases.finish import finish

# Every atomic write (text or JSON: both go through files.atomic_write), logged with the process
# that made it (for the xdist test).
LOGGED_WRITES = """
import pytest_retrieval.files as files

_real_write = files.atomic_write


def _logged_write(path, write, *, what="file"):
    with open(os.path.join(HERE, "writes.log"), "a", encoding="utf-8") as out:
        out.write(f"{what}\\t{os.environ.get('PYTEST_XDIST_WORKER', 'controller')}\\n")
    return _real_write(path, write, what=what)


files.atomic_write = _logged_write
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> Project:
    return Project(pytester).write()


def test_an_empty_baseline_flag_turns_the_ini_baseline_off_for_one_run(project: Project) -> None:
    # The ini names a baseline that does not exist yet and a budget (mrr 0.02): a run checks it
    # and fails. `--retrieval-baseline=` (empty) was a usage error; it now turns the baseline
    # off for this run, as `--retrieval-gates-file=` does the gates file: no budget is checked.
    project.pytester.makepyfile(test_run="def test_run(retrieval_run):\n    pass\n")
    project.run().assert_outcomes(passed=1, failed=1)
    off = project.run("--retrieval-baseline=")
    assert off.ret == pytest.ExitCode.OK, off.stdout.str()
    off.assert_outcomes(passed=1)
    off.stdout.no_fnmatch_line("*mrr*budget*")
    artifact = json.loads((project.path / "out.json").read_text(encoding="utf-8"))
    assert artifact["regressions"] == []
    # Updating needs a path, so an update with the baseline off says so (exit 4).
    refused = project.run("--retrieval-baseline=", "--retrieval-update-baseline")
    assert "Traceback" not in refused.stdout.str()
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            "ERROR: --retrieval-update-baseline needs to know where the baseline lives (pass "
            "--retrieval-baseline=PATH or set retrieval_baseline = PATH)"
        ]
    )
    assert not project.baseline.exists()


def test_without_a_baseline_the_check_fails_and_the_update_creates_one_that_then_passes(
    project: Project,
) -> None:
    missing = project.run()
    assert missing.ret == pytest.ExitCode.TESTS_FAILED
    missing.assert_outcomes(failed=1)
    path = str(project.baseline)
    missing.stdout.fnmatch_lines(
        [
            "*_ retrieval gate mrr[[]budget=0.02] _*",
            f"no baseline at {path}: create it with `pytest --retrieval-baseline={path} "
            "--retrieval-update-baseline`, review it and commit it",
        ]
    )
    assert not project.baseline.exists()

    updated = project.update()
    # The check is skipped on the run that writes the baseline.
    updated.assert_outcomes(skipped=1)
    updated.stdout.fnmatch_lines(
        [
            f"retrieval: baseline written to {path} (12 queries, golden fingerprint * of the 12 "
            "non-held-out queries): review the diff and commit it"
        ]
    )
    document = project.document()
    assert document["schema"] == "pytest-retrieval/baseline"
    assert sorted(document["queries"]) == [f"q{n:02d}" for n in range(1, 13)]
    q05 = document["queries"]["q05"]
    # doc-05 first of (doc-05, filler-a, filler-b): MRR 1, recall@1 1, its rank 1.
    assert q05["metrics"]["retriever"]["mrr"] == 1.0
    assert q05["metrics"]["retriever"]["recall@1"] == 1.0
    assert q05["relevant_ranks"] == {"retriever": {"doc-05": 1}}
    assert q05["top"] == {"retriever": ["doc-05", "filler-a", "filler-b"]}
    assert document["means"]["retriever"]["overall"]["mrr"] == 1.0

    unchanged = project.run()
    assert unchanged.ret == pytest.ExitCode.OK
    unchanged.assert_outcomes(passed=1)
    outcome = project.regression()
    assert (outcome["status"], outcome["n"], outcome["delta"]) == ("pass", 12, 0.0)
    assert outcome["message"] == (
        "no regression: mrr 1.0000 → 1.0000 (Δ +0.0000, one-sided 95% upper bound +0.0000, "
        "90% two-sided interval [+0.0000, +0.0000], one-sided p = 1, n = 12) "
        "[stage=retriever split=overall]; budget 0.02 = 0.0200\n"
        "interval: no query changed: the interval collapses onto 0"
    )


HOLES = (
    "; 2 unjudged documents now rank above the lost one ({}): label them before trusting this drop"
)


def test_a_degraded_retriever_fails_naming_the_lost_documents_and_their_ranks(
    project: Project,
) -> None:
    project.update()
    # q01..q08: doc moves from rank 1 to 3 (MRR 1 -> 1/3); q09: doc gone (MRR 1 -> 0).
    project.rank(
        {f"{n:02d}": ["filler-a", "filler-b", f"doc-{n:02d}"] for n in range(1, 9)}
        | {"09": ["filler-a", "filler-b"]}
    )
    result = project.run()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    # Mean MRR: q10..q12 keep 1, so (3 + 8 * 1/3 + 0) / 12 = 17/36 = 0.4722; delta -19/36 =
    # -0.5278.
    # Nine negative deltas and three zeros: only the all-minus pattern of 2**9 is as extreme,
    # p = 1/512 = 0.001953.
    result.stdout.fnmatch_lines(
        esc(
            [
                "*_ retrieval gate mrr[budget=0.02] _*",
                "regression: mrr 1.0000 → 0.4722 (Δ -0.5278, one-sided 95% upper bound -*, 90% "
                "two-sided interval *, one-sided p = 0.001953, "
                "n = 12) [stage=retriever split=overall]; budget 0.02 = 0.0200*",
                # The fillers are unjudged and now rank above the lost documents: holes.
                "unjudged documents: 9 of the 9 queries that got worse have unjudged documents "
                "ranked above a relevant one they lost; their drops make -0.5278 of the mean "
                "change -0.5278 (100% of it): label them (pytest-retrieval golden pool) before "
                "trusting this drop",
                "queries that got worse (9), worst first:",
                "  q09: mrr 1.0000 → 0.0000; doc-09: rank 1 → —" + HOLES.format("doc-09"),
                "  q01: mrr 1.0000 → 0.3333; doc-01: rank 1 → 3" + HOLES.format("doc-01"),
                "  q02: mrr 1.0000 → 0.3333; doc-02: rank 1 → 3" + HOLES.format("doc-02"),
                "  q03: mrr 1.0000 → 0.3333; doc-03: rank 1 → 3" + HOLES.format("doc-03"),
                "  q04: mrr 1.0000 → 0.3333; doc-04: rank 1 → 3" + HOLES.format("doc-04"),
                "  ... and 4 more (all in the JSON artifact)",
            ]
        )
    )


def test_two_queries_slipping_on_a_small_golden_set_is_noise_not_a_regression(
    project: Project,
) -> None:
    project.update()
    # q03: rank 1 -> 2 (MRR -0.5); q07: rank 1 -> 3 (MRR -2/3). Mean drop (1/2 + 2/3) / 12 =
    # 7/72 = 0.0972, far over the budget of 0.02; but two negative deltas out of 2**2 sign
    # patterns: p = 1/4.
    project.rank({"03": ["filler-a", "doc-03"], "07": ["filler-a", "filler-b", "doc-07"]})
    result = project.run()
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    outcome = project.regression()
    assert (outcome["status"], outcome["p_value"]) == ("pass", 0.25)
    # Compared at the baseline's 6 decimals: (0.5 + 0.666667) / 12 = 0.09722225 (7/72 unrounded).
    assert outcome["delta"] == pytest.approx(-0.09722225, abs=1e-12)
    # The bound: for theta > 0 only the empty flipped set has a mean >= theta (both changed
    # deltas are negative, the zeros' mean is 0), weight 2**-12: rejected; at theta = 0 every
    # set without q03 and q07 counts, weight 1/4 > 0.05: kept. So it is exactly 0.
    assert outcome["message"].startswith(
        "no regression: mrr 1.0000 → 0.9028 (Δ -0.0972, one-sided 95% upper bound +0.0000, 90% "
        "two-sided interval ["
    )
    assert outcome["upper_bound"] == 0.0
    assert (
        "interval: only 2 of 12 queries changed: the sign-flip test needs at least 5 changed "
        "queries to reach alpha 0.05, so the bound cannot exclude 0"
    ) in outcome["message"]
    # Only 2 of the 12 queries changed: the sign-flip test could reach at best 1/2**2 = 0.25, and
    # needs 5 changed queries (1/32 <= 0.05) to call anything significant. The message says so.
    assert (
        "one-sided p = 0.25, n = 12) [stage=retriever split=overall]; budget 0.02 = 0.0200; the "
        "drop exceeds the budget, but only 2 queries changed and the sign-flip test needs at "
        "least 5 changed queries to reach alpha 0.05"
    ) in outcome["message"]
    assert [d["query_id"] for d in outcome["worse"]] == ["q07", "q03"]


def test_a_changed_golden_set_is_incomparable_unless_the_unchanged_queries_are_compared(
    project: Project,
) -> None:
    project.update()
    # q05 relabelled (doc-99, which the retriever never returns) and q13 added.
    project.write(queries=golden(13, relabel={"05": "doc-99"}))
    strict = project.run()
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        esc(
            [
                f"incomparable: the golden set changed since {project.baseline} was made: "
                "queries 1 added (q13), 0 removed, 1 changed (q05). Refresh the baseline "
                "(--retrieval-update-baseline), compare the unchanged queries with "
                "--retrieval-baseline-mode=intersect, or, when only judgments changed, re-score "
                "the baseline's rankings against the current labels with "
                "--retrieval-baseline-mode=rescore"
            ]
        )
    )

    # Intersect: the 11 unchanged queries (q05 now scores 0 and stays out), all unmoved.
    intersect = project.run("--retrieval-baseline-mode=intersect")
    assert intersect.ret == pytest.ExitCode.OK
    outcome = project.regression()
    assert (outcome["status"], outcome["n"], outcome["delta"]) == ("pass", 11, 0.0)
    assert (
        "intersect mode: comparing the 11 unchanged queries only (1 added (q13), 0 removed, "
        "1 changed (q05))"
    ) in outcome["message"]

    # Intersect still catches a regression among the unchanged queries, and says what it did.
    # q01..q06 without q05 and q07: six drops to 1/3 among 11 queries: p = 1/64.
    project.rank(
        {n: ["filler-a", "filler-b", f"doc-{n}"] for n in ("01", "02", "03", "04", "06", "07")}
    )
    degraded = project.run("--retrieval-baseline-mode=intersect")
    assert degraded.ret == pytest.ExitCode.TESTS_FAILED
    degraded.stdout.fnmatch_lines(
        esc(
            [
                "regression: mrr 1.0000 → 0.6364 (Δ -0.3636, * one-sided p = 0.01562, n = 11) *",
                "intersect mode: comparing the 11 unchanged queries only (1 added (q13), "
                "0 removed, 1 changed (q05))",
            ]
        )
    )


def test_a_corrupt_baseline_is_a_usage_error_naming_the_line(project: Project) -> None:
    project.baseline.write_text('{\n  "schema": \n', encoding="utf-8")
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*{project.baseline}:3:1: the baseline is not valid JSON (Expecting value) (the file "
            "may be truncated*"
        ]
    )


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("umask_022")
def test_a_new_baseline_is_readable_by_everyone_and_an_old_one_keeps_its_mode(
    project: Project,
) -> None:
    project.update()
    # A temp file from mkstemp is 0600; a new baseline gets 0666 & ~umask = 0644.
    assert project.baseline.stat().st_mode & 0o777 == 0o644
    project.baseline.chmod(0o664)
    project.update()
    assert project.baseline.stat().st_mode & 0o777 == 0o664
    assert project.leftovers() == []


def test_a_failed_write_leaves_the_old_baseline_intact_and_exits_4(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.baseline.write_text("the committed baseline\n", encoding="utf-8")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    result = project.run("--retrieval-update-baseline")
    monkeypatch.undo()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            f"pytest-retrieval: {project.baseline}: cannot write the baseline: No space left on "
            "device; the previous file, if any, is unchanged (check the free space and "
            "permissions of the folder)"
        ]
    )
    assert project.baseline.read_text(encoding="utf-8") == "the committed baseline\n"
    assert project.leftovers() == []


def test_a_baseline_in_an_unwritable_place_exits_4_with_a_message(project: Project) -> None:
    # A file where the baseline's folder should be: no folder can be made there (even as root,
    # whom a read-only folder would not stop).
    (project.path / "blocker").write_text("", encoding="utf-8")
    target = project.path / "blocker" / BASELINE
    result = project.run("--retrieval-update-baseline", "--retrieval-baseline", str(target))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([f"pytest-retrieval: {target}: cannot write the baseline: *"])


def test_the_update_refuses_to_run_in_an_xdist_worker() -> None:
    with pytest.raises(RuntimeError, match="written by the controller, never by a worker"):
        finish(
            None,  # type: ignore[arg-type]
            exit_status=0,
            quiet=False,
            plugin_version="0",
            is_worker=True,
        )


def test_under_xdist_the_controller_alone_writes_the_baseline_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # When this suite itself runs under xdist, its worker's variables must not leak into the
    # inner run, whose controller would then log itself as a worker.
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    project = Project(pytester).write(conftest=CONFTEST + LOGGED_WRITES)
    updated = project.run_xdist("--retrieval-update-baseline")
    assert updated.ret == pytest.ExitCode.OK, updated.stdout.str()
    writes = (project.path / "writes.log").read_text(encoding="utf-8").splitlines()
    # The controller writes the baseline, once; no worker writes it (they may write other files,
    # e.g. the shared run cache).
    assert [w for w in writes if w.startswith("baseline\t")] == ["baseline\tcontroller"]
    document = project.document()
    assert sorted(document["queries"]) == [f"q{n:02d}" for n in range(1, 13)]
    assert {q["metrics"]["retriever"]["mrr"] for q in document["queries"].values()} == {1.0}
    assert project.leftovers() == []

    checked = project.run_xdist()
    assert checked.ret == pytest.ExitCode.OK, checked.stdout.str()
    checked.assert_outcomes(passed=1)
    writes = (project.path / "writes.log").read_text(encoding="utf-8").splitlines()
    assert sum(w.startswith("baseline\t") for w in writes) == 1
