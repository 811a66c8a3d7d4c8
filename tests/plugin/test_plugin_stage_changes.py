"""A stage added or removed since the baseline is measured, never silent.

A budget without ``stage=`` compares this run's final stage with the baseline's final stage,
whatever their names, and every report says so ("final stage: reranker in the baseline,
retriever now"); a budget with ``stage=S`` compares S with S and cannot be compared when either
side lacks S. The same holds for run files and for ``pytest-retrieval compare``.

The project below has 12 queries, q01 .. q12 ("question NN"), each with one relevant document
doc-NN (the fillers are judged not relevant). The retriever answers ``filler-a, doc-NN,
filler-b`` (RR 1/2 on every query: mrr 0.5); the reranker, on when ``reranker.on`` exists,
moves doc-NN first (RR 1: mrr 1.0). So removing the reranker drops what users get by 0.5 on
every query: twelve deltas of -0.5, and of the 2**12 sign patterns only all-minus sums as low,
so the one-sided sign-flip p is 1/4096.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from baseline_helpers import artifact, write_json
from plugin_helpers import QUIET_PLUGINS, esc

from pytest_retrieval.cli import main
from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.regression.family import family
from pytest_retrieval.regression.pairs import setting_differs
from pytest_retrieval.regression.rule import compare, compare_all
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot

BASELINE = "retrieval-baseline.json"
P_ALL_TWELVE = 1 / 4096  # one sign pattern in 2**12

CONFTEST = """\
import os

import pytest

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        number = text.split()[-1]
        return ["filler-a", f"doc-{number}", "filler-b"][:k]

    return search


@pytest.fixture(scope="session")
def reranker_under_test():
    if not os.path.exists(os.path.join(HERE, "reranker.on")):
        return None  # no second stage

    def rerank(query, candidates):
        number = query.split()[-1]
        return sorted(candidates, key=lambda doc: doc != f"doc-{number}")

    return rerank
"""


class Pipeline:
    """The 12-query project, with the reranker switched by a file."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.path = pytester.path
        lines = ["version: 1", "queries:"]
        for n in range(1, 13):
            lines += [
                f"  - id: q{n:02d}",
                f"    text: question {n:02d}",
                # The fillers are judged (not relevant): no unjudged holes to talk about.
                f"    relevant: {{doc-{n:02d}: 1, filler-a: 0, filler-b: 0}}",
            ]
        (self.path / "golden.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (self.path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        self.budgets("mrr 0.02")

    def budgets(self, *lines: str) -> None:
        regression = "\n    ".join(lines)
        (self.path / "pytest.ini").write_text(
            "[pytest]\n"
            "retrieval_golden = golden.yaml\n"
            "retrieval_ks = 1,3\n"
            "retrieval_metrics = mrr\n"
            f"retrieval_baseline = {BASELINE}\n"
            f"retrieval_regression =\n    {regression}\n"
            "retrieval_json = out.json\n",
            encoding="utf-8",
        )

    def reranker(self, on: bool) -> None:
        flag = self.path / "reranker.on"
        if on:
            flag.write_text("", encoding="utf-8")
        elif flag.exists():
            flag.unlink()

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest(*QUIET_PLUGINS, *args)

    def baseline(self, *, reranker: bool) -> dict[str, Any]:
        self.reranker(reranker)
        result = self.run("--retrieval-update-baseline")
        assert result.ret == 0, result.stdout.str()
        document: dict[str, Any] = json.loads((self.path / BASELINE).read_text("utf-8"))
        return document

    def regressions(self) -> dict[str, dict[str, Any]]:
        document = json.loads((self.path / "out.json").read_text(encoding="utf-8"))
        return {r["name"]: r for r in document["regressions"]}


@pytest.fixture
def pipeline(pytester: pytest.Pytester) -> Pipeline:
    return Pipeline(pytester)


# --- the plugin ------------------------------------------------------------------------------


def test_removing_the_reranker_fails_on_the_real_drop_of_the_final_stage(
    pipeline: Pipeline,
) -> None:
    baseline = pipeline.baseline(reranker=True)
    assert baseline["stages"] == ["retriever", "reranker"]
    assert baseline["means"]["reranker"]["overall"]["mrr"] == 1.0
    assert baseline["means"]["retriever"]["overall"]["mrr"] == 0.5
    pipeline.reranker(False)
    result = pipeline.run("--retrieval-markdown", "out.md", "--retrieval-html", "out.html")
    assert result.ret == 1, result.stdout.str()
    # What users got (the reranker, 1.0) against what they get now (the retriever, 0.5).
    result.stdout.fnmatch_lines(
        esc(
            [
                "FAIL mrr budget 0.0200 [final stage: reranker in the baseline, retriever now]: "
                "1.0000 → 0.5000 (Δ -0.5000, 95% upper bound -0.5000, p = 0.000244, n = 12*",
                "    regression: mrr 1.0000 → 0.5000 (Δ -0.5000, *) [final stage: reranker in "
                "the baseline, retriever now; split=overall]; budget 0.02 = 0.0200*",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        ["    final stage: reranker in the baseline, retriever now: this budget names no stage*"]
    )
    # Each query's relevant document: rank 1 at the baseline's reranker, 2 at the retriever.
    result.stdout.fnmatch_lines(["      q01: mrr 1.0000 → 0.5000; doc-01: rank 1 → 2"])
    (check,) = pipeline.regressions().values()
    assert (check["status"], check["stage"], check["baseline_stage"]) == (
        "regression",
        "retriever",
        "reranker",
    )
    assert (check["baseline_mean"], check["current_mean"], check["delta"]) == (1.0, 0.5, -0.5)
    assert check["p_value"] == pytest.approx(P_ALL_TWELVE)
    assert check["n"] == 12
    markdown = (pipeline.path / "out.md").read_text(encoding="utf-8")
    where = "final stage: reranker in the baseline, retriever now · overall"
    assert f"| ❌ | `mrr` vs baseline | declared | {where} | 0.5000 |" in markdown
    assert f"**`mrr`** ({where}): 12 queries got worse, worst first" in markdown
    html = (pipeline.path / "out.html").read_text(encoding="utf-8")
    assert "<td>final stage: reranker in the baseline, retriever now</td>" in html
    assert "final stage: reranker in the baseline, retriever now, overall" in html


def test_adding_a_reranker_compares_final_with_final_and_passes_as_an_improvement(
    pipeline: Pipeline,
) -> None:
    assert pipeline.baseline(reranker=False)["stages"] == ["retriever"]
    pipeline.reranker(True)
    result = pipeline.run()
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        esc(
            [
                "PASS mrr budget 0.0200 [final stage: retriever in the baseline, reranker now]: "
                "0.5000 → 1.0000 (Δ +0.5000, *) — improvement: refresh the baseline",
            ]
        )
    )
    (check,) = pipeline.regressions().values()
    assert (check["status"], check["stage"], check["baseline_stage"]) == (
        "improvement",
        "reranker",
        "retriever",
    )
    assert (check["delta"], check["p_value_improvement"]) == (0.5, pytest.approx(P_ALL_TWELVE))


def test_a_budget_on_the_removed_stage_is_incomparable_and_says_why(pipeline: Pipeline) -> None:
    pipeline.budgets("mrr 0.02 stage=reranker", "mrr 0.02 stage=retriever")
    pipeline.baseline(reranker=True)
    pipeline.reranker(False)
    result = pipeline.run("--junitxml", "junit.xml")
    assert result.ret == 1, result.stdout.str()
    reason = (
        "incomparable: stage=reranker compares the reranker stage with itself, but this run has "
        f"no reranker stage (stages: retriever; {pipeline.path / BASELINE} has: retriever, "
        "reranker); drop "
        "stage= to compare the final stages (what users get), or budget a stage this run has; "
        "when removing the reranker stage is deliberate, refresh the baseline "
        "(--retrieval-update-baseline)"
    )
    result.stdout.fnmatch_lines(esc([f"FAIL mrr[budget=0.02,stage=reranker]: {reason}"]))
    # stage=retriever compares the retriever with itself: 0.5 both times.
    result.stdout.fnmatch_lines(
        esc(["PASS mrr budget 0.0200 [stage=retriever]: 0.5000 → 0.5000 (Δ +0.0000*"])
    )
    checks = pipeline.regressions()
    gone = checks["mrr[budget=0.02,stage=reranker]"]
    assert (gone["status"], gone["message"]) == ("incomparable", reason)
    assert (gone["stage"], gone["baseline_stage"]) == (None, "reranker")
    kept = checks["mrr[budget=0.02,stage=retriever]"]
    assert (kept["status"], kept["stage"], kept["baseline_stage"]) == (
        "pass",
        "retriever",
        "retriever",
    )
    junit = (pipeline.path / "junit.xml").read_text(encoding="utf-8")
    assert '<property name="status" value="incomparable"' in junit


def test_a_one_stage_run_file_against_a_two_stage_baseline_fails_on_the_real_drop(
    pipeline: Pipeline,
) -> None:
    pipeline.baseline(reranker=True)
    # The first stage's run, written by a batch job: what the retriever above answers.
    rows = [
        {"query_id": f"q{n:02d}", "ranking": ["filler-a", f"doc-{n:02d}", "filler-b"]}
        for n in range(1, 13)
    ]
    run = pipeline.path / "retriever.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = pipeline.run("--retrieval-run", str(run))
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        esc(
            [
                "FAIL mrr budget 0.0200 [final stage: reranker in the baseline, retriever now]: "
                "1.0000 → 0.5000 (Δ -0.5000, 95% upper bound -0.5000, p = 0.000244, n = 12*",
            ]
        )
    )
    (check,) = pipeline.regressions().values()
    assert (check["status"], check["baseline_stage"], check["stage"]) == (
        "regression",
        "reranker",
        "retriever",
    )
    # A named stage the run file does not have is incomparable, as for a live run.
    pipeline.budgets("mrr 0.02 stage=reranker")
    result = pipeline.run("--retrieval-run", str(run))
    assert result.ret == 1
    (check,) = pipeline.regressions().values()
    assert check["status"] == "incomparable"
    assert "but this run has no reranker stage (stages: retriever;" in check["message"]


def test_the_compare_command_compares_the_final_stages_of_stored_runs(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline.baseline(reranker=True)
    pipeline.reranker(False)
    assert pipeline.run().ret == 1
    capsys.readouterr()
    os.chdir(pipeline.path)
    assert main(["compare", BASELINE, "out.json"]) == 1
    out = capsys.readouterr().out
    assert (
        "FAIL mrr[budget=0.02]: regression: mrr 1.0000 → 0.5000 (Δ -0.5000, one-sided 95% upper "
        "bound -0.5000, 90% two-sided interval [-0.5000, -0.5000], one-sided p = 0.0002441, "
        "n = 12) [final stage: reranker in the baseline, retriever now; split=overall]" in out
    )


# --- the rule, on hand-made snapshots --------------------------------------------------------


def _snapshot(per_stage: dict[str, list[float]], ranks: dict[str, list[int]]) -> Snapshot:
    """Queries q1.. with these mrr values and ranks of their one relevant document d<n>."""
    stages = tuple(per_stage)
    count = len(next(iter(per_stage.values())))
    queries = {
        f"q{i}": QuerySnapshot(
            split="tune",
            slices=(),
            labels="labels-v1",
            metrics={s: {"mrr": per_stage[s][i - 1]} for s in stages},
            relevant_ranks={s: {f"d{i}": ranks[s][i - 1]} for s in stages},
            top={s: () for s in stages},
        )
        for i in range(1, count + 1)
    }
    return Snapshot(
        fingerprint="fp-1",
        settings={"gain": "exponential"},
        stages=stages,
        metrics=("mrr",),
        queries=queries,
    )


# Five queries. The baseline: the retriever ranks each relevant document 2nd (RR 1/2), the
# reranker 1st (RR 1). Without the reranker now: RR 1/2 everywhere.
TWO_STAGES = _snapshot(
    {"retriever": [0.5] * 5, "reranker": [1.0] * 5},
    {"retriever": [2] * 5, "reranker": [1] * 5},
)
RETRIEVER_ONLY = _snapshot({"retriever": [0.5] * 5}, {"retriever": [2] * 5})


def test_the_rule_pairs_the_baselines_final_stage_with_this_runs_final_stage() -> None:
    outcome = compare(TWO_STAGES, RETRIEVER_ONLY, parse_budget("mrr 0.1"))
    # Five deltas of 1/2 - 1 = -0.5: p = 1/2**5 = 0.03125 <= 0.05 and the drop 0.5 > 0.1.
    assert (outcome.status, outcome.delta, outcome.p_value) == ("regression", -0.5, 1 / 32)
    assert (outcome.baseline_stage, outcome.stage) == ("reranker", "retriever")
    assert outcome.stage_change == "final stage: reranker in the baseline, retriever now"
    assert [d.moves for d in outcome.worse] == [((f"d{i}", 1, 2),) for i in range(1, 6)]
    # The other way round: the reranker added, an improvement of the same size.
    added = compare(RETRIEVER_ONLY, TWO_STAGES, parse_budget("mrr 0.1"))
    assert (added.status, added.delta, added.p_value_improvement) == ("improvement", 0.5, 1 / 32)
    assert (added.baseline_stage, added.stage) == ("retriever", "reranker")


def test_the_family_pairs_the_same_stages_as_the_checks() -> None:
    budgets = [parse_budget("mrr 0.1"), parse_budget("mrr 0.1 stage=retriever")]
    members = family(TWO_STAGES, RETRIEVER_ONLY, budgets)
    # The default budget's five deltas of -0.5 (reranker → retriever): raw p 1/32. The
    # retriever with itself: no change, p 1.
    assert members.results["mrr[budget=0.1]"].raw_p_value == 1 / 32
    assert members.results["mrr[budget=0.1,stage=retriever]"].raw_p_value == 1.0
    _, outcomes = compare_all(TWO_STAGES, RETRIEVER_ONLY, budgets)
    assert [(o.status, o.p_value_raw) for o in outcomes] == [("regression", 1 / 32), ("pass", 1.0)]


@pytest.mark.parametrize(
    ("baseline", "current", "reason"),
    [
        (
            TWO_STAGES,
            RETRIEVER_ONLY,
            "but this run has no reranker stage (stages: retriever; base.json has: retriever, "
            "reranker)",
        ),
        (
            RETRIEVER_ONLY,
            TWO_STAGES,
            "but base.json has no reranker stage (stages: retriever; this run has: retriever, "
            "reranker); refresh the baseline (--retrieval-update-baseline) so it records the "
            "reranker stage, or drop stage= to compare the final stages",
        ),
    ],
)
def test_a_named_stage_one_side_lacks_is_incomparable(
    baseline: Snapshot, current: Snapshot, reason: str
) -> None:
    outcome = compare(
        baseline, current, parse_budget("mrr 0.1 stage=reranker"), baseline_path="base.json"
    )
    assert outcome.status == "incomparable"
    assert outcome.message.startswith(
        "incomparable: stage=reranker compares the reranker stage with itself, "
    )
    assert reason in outcome.message


def test_the_compare_command_refuses_a_named_stage_the_run_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_json(tmp_path / "base.json", TWO_STAGES.to_dict())
    run = write_json(tmp_path / "run.json", artifact(RETRIEVER_ONLY))
    assert main(["compare", base, run, "--budget", "mrr 0.1 stage=reranker"]) == 1
    assert "FAIL mrr[budget=0.1,stage=reranker]: incomparable: stage=reranker" in (
        capsys.readouterr().out
    )


# --- duplicate groups: what they are, not where they came from --------------------------------


def test_duplicate_groups_compare_by_their_fingerprint_not_their_source() -> None:
    assert not setting_differs("dedup", "file:3f2a", "exact:3f2a")
    assert not setting_differs("dedup", "file:3f2a", "near=0.9:3f2a")
    assert setting_differs("dedup", "file:3f2a", "exact:9c1d")
    assert setting_differs("dedup", "file:3f2a", None)
    # No groups at all score as no deduplication: sha256 of the empty text, cut to 16.
    assert not setting_differs("dedup", "exact:e3b0c44298fc1c14", None)
    assert setting_differs("gain", "exponential", "linear")


def test_the_same_groups_from_a_file_and_from_dedup_exact_are_comparable(
    pytester: pytest.Pytester,
) -> None:
    # The standard project (plugin_helpers) with contact a word-for-word copy of refund-policy.
    from plugin_helpers import RetrievalProject

    project = RetrievalProject(pytester)
    shared = {
        "retrieval_baseline": "baseline.json",
        "retrieval_regression": "ndcg@3 0.01",
        "retrieval_resamples": "200",
        "retrieval_json": "out.json",
    }
    project.write(
        ini={**shared, "retrieval_duplicates": "dups.tsv"},
        tests="def test_nothing():\n    pass\n",
    )
    (project.path / "dups.tsv").write_text("refund-policy\tR\ncontact\tR\n", encoding="utf-8")
    docs = ["shipping", "refund-policy", "contact", "okta", "mfa", "sso-setup", "faq",
            "pricing", "invoices", "billing", "export-data"]  # fmt: skip
    lines = [f"{d}\tThe {d} page." for d in docs]
    lines[docs.index("contact")] = "contact\tThe refund-policy page."
    (project.path / "corpus.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert project.run("--retrieval-update-baseline").ret == 0
    project.write(
        ini={
            **shared,
            "retrieval_corpus": "corpus.tsv",
            "retrieval_dedup": "exact",
            "retrieval_id_check": "off",
        },
        tests="def test_nothing():\n    pass\n",
    )
    result = project.run()
    assert result.ret == 0, result.stdout.str()
    assert "1 duplicate groups (2 documents) from retrieval_dedup = exact" in result.stdout.str()
    result.stdout.fnmatch_lines(
        esc(["PASS ndcg@3 budget 0.0100 [stage=retriever]: *(Δ +0.0000*, n = 3*"])
    )


def test_the_markdown_and_html_verdicts_count_an_incomparable_check_as_such(
    pipeline: Pipeline,
) -> None:
    # Reranker removed: "mrr 0.02" (final stages) is a regression (0.5 on every query),
    # "mrr 0.02 stage=reranker" is incomparable (no reranker now), "mrr 0.02 stage=retriever"
    # passes. Two of three checks failed: one regression, one incomparable, not 2 regressions.
    pipeline.budgets("mrr 0.02", "mrr 0.02 stage=reranker", "mrr 0.02 stage=retriever")
    pipeline.baseline(reranker=True)
    pipeline.reranker(False)
    result = pipeline.run("--retrieval-markdown=out.md", "--retrieval-html=out.html")
    assert result.ret == 1
    markdown = (pipeline.path / "out.md").read_text(encoding="utf-8")
    assert markdown.splitlines()[0] == (
        "### ❌ Retrieval quality: 2 of 3 gates failed (1 regression, 1 incomparable)"
    )
    html = (pipeline.path / "out.html").read_text(encoding="utf-8")
    assert 'id="verdict">FAILED: 2 of 3 gates failed (1 regression, 1 incomparable)' in html
    # The incomparable row's Where cell names the stage its budget names.
    (row,) = [line for line in markdown.splitlines() if "| incomparable |" in line]
    assert "| reranker (not in this run) · overall |" in row, row
    assert "<td>reranker (not in this run)</td>" in html


# --- the stage of what names none: the final one, the one rule ---------------------------------

from pytest_retrieval.run.stages import stage_or_final  # noqa: E402


@pytest.mark.parametrize(
    ("named", "stages", "expected"),
    [
        (None, ("reranker", "retriever"), "reranker"),  # pipeline order, not the order given
        (None, ("retriever",), "retriever"),
        (None, ("retriever", "colbert", "reranker"), "colbert"),  # other names after the two
        (None, (), "retriever"),  # before the run: the first stage
        ("retriever", ("retriever", "reranker"), "retriever"),  # a named stage is kept
        ("reranker", (), "reranker"),
    ],
)
def test_what_names_no_stage_is_scored_at_the_final_one(
    named: str | None, stages: tuple[str, ...], expected: str
) -> None:
    assert stage_or_final(named, stages) == expected
