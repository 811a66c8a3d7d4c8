"""One scoring path: the rescore mode (under pytest and in ``pytest-retrieval compare``) scores a
run with its own conventions (duplicate groups included), as its artifact does; ``slice=*``
knows what ``min_grade`` leaves without a value.

Hand computation over the standard project (tests/helpers/plugin_helpers.py) with the duplicate
group {shipping, refund-policy} and the invoice query relabelled (faq relevant, pricing not):

=========  ============================  ====================================  =====
query      ranking                       per group                             RR
=========  ============================  ====================================  =====
refund     shipping, refund-policy*,     the group (relevant through refund-   1
           contact                       policy) at 1, its copy at 2 filler
sso        okta*, mfa, sso-setup*        okta at 1                              1
invoice    faq*, pricing, contact        faq at 1 (relabelled relevant)         1
fax        invoices                      no relevant document: skipped          -
=========  ============================  ====================================  =====

MRR@3 per group = 3/3 = 1.0; without the groups refund's RR would be 1/2 and MRR@3 5/6.
"""

from __future__ import annotations

import math

import pytest
from plugin_helpers import GOLDEN, RetrievalProject

RELABELLED = GOLDEN.replace(
    "relevant: [invoices, billing]", "relevant: {invoices: 1, billing: 1, faq: 1, pricing: 0}"
)


def overall(artifact: dict[str, object], metric: str) -> float:
    (row,) = [
        r
        for r in artifact["results"]  # type: ignore[attr-defined]
        if r["stage"] == "retriever" and r["column"] == "overall"
    ]
    value: float = row["metrics"][metric]
    return value


def test_rescore_scores_both_sides_per_duplicate_group_as_the_run_does(
    retrieval_project: RetrievalProject,
) -> None:
    ini = {
        "retrieval_duplicates": "dups.tsv",
        "retrieval_baseline": "baseline.json",
        "retrieval_regression": "mrr@3 0.01",
        "retrieval_resamples": "200",
        "retrieval_metrics": "recall, mrr",
    }
    p = retrieval_project.write(ini=ini, tests="def test_nothing():\n    pass\n")
    (p.path / "dups.tsv").write_text("shipping\tR\nrefund-policy\tR\n", encoding="utf-8")
    assert p.run("--retrieval-update-baseline").ret == 0
    assert RELABELLED != GOLDEN
    p.write(golden=RELABELLED, ini=ini)
    result = p.run("--retrieval-baseline-mode=rescore", "--retrieval-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    artifact = p.artifact()
    (outcome,) = artifact["regressions"]
    assert overall(artifact, "mrr@3") == pytest.approx(1.0)
    assert (outcome["status"], outcome["n"]) == ("pass", 3)
    assert outcome["current_mean"] == pytest.approx(1.0)
    assert outcome["baseline_mean"] == pytest.approx(1.0)


def test_compare_rescores_a_stored_run_per_duplicate_group_or_says_what_it_needs(
    retrieval_project: RetrievalProject, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_retrieval.cli import main

    ini = {"retrieval_duplicates": "dups.tsv", "retrieval_metrics": "recall, mrr"}
    p = retrieval_project.write(ini=ini, tests="def test_run(retrieval_run):\n    pass\n")
    (p.path / "dups.tsv").write_text("shipping\tR\nrefund-policy\tR\n", encoding="utf-8")
    assert p.run("--retrieval-baseline", "baseline.json", "--retrieval-update-baseline").ret == 0
    p.write(golden=RELABELLED, ini=ini)
    assert p.run("--retrieval-json", "out.json").ret == 0
    capsys.readouterr()  # the pytest runs' output
    args = ["compare", "baseline.json", "out.json", "--mode", "rescore", "-b", "mrr@3 0.01"]
    # The run's own groups file, read again from where the run read it: per group, 1.0 (the
    # module docstring's hand values) on both sides.
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "PASS mrr@3[budget=0.01]: no regression: mrr@3 1.0000 → 1.0000" in out, out
    # Moved away: never re-scored without them, and the fix is named.
    (p.path / "dups.tsv").rename(p.path / "groups.tsv")
    assert main(args) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "incomparable in rescore mode: the run was scored per duplicate group" in out
    assert "pass the groups (pytest-retrieval compare/gate --duplicates FILE)" in out
    assert main([*args, "--duplicates", "groups.tsv"]) == 0
    assert "1.0000 → 1.0000" in capsys.readouterr().out
    # Other groups are not the run's: refused, not scored with the wrong ones.
    (p.path / "other.tsv").write_text("okta\tO\nmfa\tO\n", encoding="utf-8")
    assert main([*args, "--duplicates", "other.tsv"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "are not the ones the run was scored with" in out


def test_slice_star_leaves_out_a_slice_whose_grades_are_all_below_min_grade(
    retrieval_project: RetrievalProject,
) -> None:
    # min_grade 2: refund and invoice (exact-lookup) have grade-1 documents only, so under
    # no_relevant=skip they have no value (docs/metrics.md, min_grade) and their slice gets no
    # gate; multi-hop (sso: sso-setup graded 2, at rank 3) has recall@3 = 1.
    retrieval_project.write(
        ini={"retrieval_thresholds": "recall@3 >= 0.5 slice=*", "retrieval_min_grade": "2"}
    )
    result = retrieval_project.run("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pytest.ini::recall_at_3_ge_0.5-slice_multi-hop PASSED*"])
    result.stdout.no_fnmatch_line("*slice_exact-lookup*")


#: Eight queries, each with two relevant documents: a-i at rank 1 and b-i at rank 10 (version
#: 1) or 11 (version 2) of twelve results; the retriever returns all twelve whatever k is.
DEEP_GOLDEN = "version: 1\nqueries:\n" + "".join(
    f"  - id: q{i}\n    text: question number {i}\n    relevant: [a{i}, b{i}]\n"
    for i in range(1, 9)
)
DEEP_CONFTEST = """\
import pathlib

import math

import pytest

VERSION = pathlib.Path(__file__).with_name("version.txt")


@pytest.fixture(scope="session")
def retriever_under_test():
    version = VERSION.read_text(encoding="utf-8").strip()

    def search(text, k):
        i = text.rsplit(" ", 1)[1]
        fillers = [f"x{i}-{n}" for n in range(1, 12)]
        at = 9 if version == "1" else 10  # b-i at rank 10, or 11
        return [f"a{i}", *fillers[:at - 1], f"b{i}", *fillers[at - 1 : 10]]

    return search
"""


def test_rescore_scores_whole_ranking_metrics_on_the_whole_ranking_a_fresh_baseline_would(
    retrieval_project: RetrievalProject,
) -> None:
    # By hand. AP with a-i at 1 and b-i at 10: (1/1 + 2/10) / 2 = 0.6; at 11: (1 + 2/11) / 2 =
    # 0.590909. NDCG (binary): (1 + 1/log2(11)) / (1 + 1/log2(3)) = 0.790382, and with b-i at
    # 11, (1 + 1/log2(12)) / (1 + 1/log2(3)) = 0.784177. The depth is 10 (the largest K): a
    # ranking cut there loses b-i at 11, which gave AP 0.5 and NDCG 0.6131 in the rescore mode.
    ini = {
        "retrieval_baseline": "baseline.json",
        "retrieval_regression": "map 0.02\nndcg 0.02",
        "retrieval_thresholds": "map >= 0.5\nndcg >= 0.5",
        "retrieval_resamples": "200",
    }
    p = retrieval_project.write(
        golden=DEEP_GOLDEN, conftest=DEEP_CONFTEST, ini=ini, ks="1,5,10", tests=None
    )
    (p.path / "version.txt").write_text("1", encoding="utf-8")
    assert p.run("--retrieval-update-baseline").ret == 0
    (p.path / "version.txt").write_text("2", encoding="utf-8")
    p.write(
        golden=DEEP_GOLDEN.replace("relevant: [a1, b1]", "relevant: {a1: 1, b1: 1, x1-1: 0}"),
        conftest=DEEP_CONFTEST,
        ini=ini,
        ks="1,5,10",
        tests=None,
    )
    result = p.run("--retrieval-baseline-mode=rescore", "--retrieval-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    artifact = p.artifact()
    gates = {g["metric"]: g["value"] for g in artifact["gates"]}
    checks = {r["metric"]: r for r in artifact["regressions"]}
    before, after = 0.6, (1 + 2 / 11) / 2
    ideal = 1 + 1 / math.log2(3)
    assert gates["map"] == pytest.approx(after)
    assert checks["map"]["baseline_mean"] == pytest.approx(before, abs=1e-6)
    assert checks["map"]["current_mean"] == pytest.approx(after, abs=1e-6)
    assert gates["ndcg"] == pytest.approx((1 + 1 / math.log2(12)) / ideal)
    assert checks["ndcg"]["baseline_mean"] == pytest.approx((1 + 1 / math.log2(11)) / ideal)
    assert checks["ndcg"]["current_mean"] == pytest.approx(gates["ndcg"], abs=1e-6)
    assert {r["status"] for r in artifact["regressions"]} == {"pass"}
