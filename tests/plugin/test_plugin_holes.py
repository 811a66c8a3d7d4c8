"""What users see of judgment holes in a pytest run: coverage in the summary and the artifact,
a judged@K gate, ``retrieval_unjudged = skip``, and a baseline re-scored after new labels.

Hand computation over the standard project (tests/helpers/plugin_helpers.py), top 3, visible
queries:

=========  ==========================  ==============  ===========
query      ranking                     judged          judged@3
=========  ==========================  ==============  ===========
refund     shipping, refund-policy*,   refund-policy   1/3
           contact
sso        okta*, mfa, sso-setup*      okta, sso-setup 2/3
invoice    faq, pricing, contact       (none of them)  0
fax        invoices                    (no judgment)   0 (1 result)
=========  ==========================  ==============  ===========

mean judged@3 = (1/3 + 2/3 + 0 + 0) / 4 = 0.25, every query has a hole.
"""

from __future__ import annotations

import pytest
from plugin_helpers import GOLDEN, RetrievalProject, esc

RUN = """
from pytest_retrieval.gates.gate import assert_recall_at, assert_mrr

def test_run():
    assert_recall_at(3) >= 0.0
"""


def test_the_summary_and_the_artifact_show_coverage_where_the_gates_look(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests=RUN)
    result = retrieval_project.run("--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    # The compact summary: one short line, fitted to the terminal's width.
    compact = " ".join(result.stdout.str().split())
    assert (
        "warning: low judgment coverage [retriever]: judged@3 = 0.2500 (75% of the top 3 "
        "unjudged); label them: golden pool"
    ) in compact
    # The full summary (-v) says it in full.
    flat = " ".join(retrieval_project.run("-v").stdout.str().split())
    assert (
        "warning: low judgment coverage [retriever]: judged@3 = 0.2500: up to 75% of "
        "the top results the gates look at carry no judgment and count as non-relevant "
        "(4 of 4 queries have holes in the top 3); pool and label them "
        "(pytest-retrieval golden pool), or gate judged@3"
    ) in flat
    artifact = retrieval_project.artifact()
    (coverage,) = artifact["coverage"]
    assert (coverage["stage"], coverage["cutoff"], coverage["queries"]) == ("retriever", 3, 4)
    assert coverage["value"] == pytest.approx(0.25)
    assert coverage["with_holes"] == 4
    assert [w["kind"] for w in artifact["warnings"]] == ["low_coverage"]


def test_judged_at_k_is_gateable_and_in_the_table(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        ini={"retrieval_thresholds": "judged@3 >= 0.8", "retrieval_metrics": "recall, judged"},
        tests=RUN,
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(esc(["*judged@3 = 0.2500 < 0.8, expected >= 0.8*"]))
    # The summary's pivot table has a judged row, a column per K: judged@1 = (0 + 1 + 0 + 0) / 4
    # (only okta), judged@3 the same.
    result.stdout.fnmatch_lines(["retriever (n=3) * @1 * @3", "judged * 0.2500 * 0.2500"])


def test_unjudged_skip_scores_the_rankings_without_their_holes(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        tests="""
        from pytest_retrieval.gates.gate import assert_mrr, assert_recall_at

        def test_mrr():
            # skip: refund [refund-policy] RR 1, sso [okta, sso-setup] RR 1, invoice [] RR 0.
            assert_mrr() >= 0.66
            # nonrelevant would give recall@1 (0 + 1/2 + 0) / 3; skip: (1 + 1/2 + 0) / 3 = 0.5.
            assert_recall_at(1) >= 0.5
        """
    )
    assert retrieval_project.run().ret == pytest.ExitCode.TESTS_FAILED
    result = retrieval_project.run("--retrieval-unjudged", "skip", "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    artifact = retrieval_project.artifact()
    assert artifact["settings"]["unjudged"] == "skip"
    assert artifact["snapshot"]["settings"]["unjudged"] == "skip"


def test_a_baseline_survives_new_labels_in_rescore_mode(
    retrieval_project: RetrievalProject,
) -> None:
    ini = {"retrieval_baseline": "baseline.json", "retrieval_regression": "mrr 0.01"}
    retrieval_project.write(ini=ini, tests=RUN)
    # The regression item is skipped while the baseline is written.
    retrieval_project.run("--retrieval-update-baseline").assert_outcomes(passed=1, skipped=1)
    # A worksheet labelled the invoice query's faq (relevant) and pricing (not relevant).
    relabelled = GOLDEN.replace(
        "relevant: [invoices, billing]", "relevant: {invoices: 1, billing: 1, faq: 1, pricing: 0}"
    )
    assert relabelled != GOLDEN
    retrieval_project.write(golden=relabelled, ini=ini)
    strict = retrieval_project.run()
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        ["*incomparable: the golden set changed since*1 changed (invoice)*"]
    )
    rescored = retrieval_project.run(
        "--retrieval-baseline-mode=rescore", "--retrieval-json", "out.json"
    )
    rescored.assert_outcomes(passed=2)
    (outcome,) = retrieval_project.artifact()["regressions"]
    # The same rankings scored on the same (new) labels on both sides: no change at all.
    # The same rankings scored on the same (new) labels on both sides: no change at all. MRR on
    # the new labels: refund 1/2, sso 1, invoice (faq now relevant, rank 1) 1: mean 5/6; fax
    # (no relevant document) is among the 4 shared queries but has no value.
    assert (outcome["status"], outcome["n"], outcome["delta"]) == ("pass", 3, 0.0)
    assert outcome["baseline_mean"] == pytest.approx(5 / 6)
    assert (
        "rescore mode: the baseline's stored rankings and this run's re-scored against the "
        "current labels (1 relabelled queries: invoice); comparing 4 queries"
    ) in outcome["message"]


def test_the_summary_counts_machine_made_judgments(retrieval_project: RetrievalProject) -> None:
    golden = GOLDEN.replace(
        "    relevant: [refund-policy]\n",
        "    relevant: {refund-policy: 1, shipping: 0}\n"
        "    provenance: {shipping: {by: 'machine:judges:llm', at: '2026-05-01'}}\n",
    )
    assert golden != GOLDEN
    retrieval_project.write(golden=golden, tests=RUN)
    result = retrieval_project.run("--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    # refund 2 judgments, sso 2, invoice 2, fax 0, the held-out query 1.
    result.stdout.fnmatch_lines(
        ["judgments: 1 of 7 are machine-made (labeled_by machine:...); review them*"]
    )
    assert retrieval_project.artifact()["golden"]["machine_judgments"] == 1
