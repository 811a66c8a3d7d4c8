"""What a user sees of no-answer queries and duplicate groups: the score floor, abstention gates,
the sweep (terminal -v, Markdown, HTML), "cannot be measured", deduplicated scores, and
``golden validate`` listing judged copies.

The standard project (:mod:`plugin_helpers`) has three answerable queries (refund, sso,
invoice), one no-answer query (fax, slice ``no-answer``) and a sealed held-out one. The scored
retriever below gives them these top scores: refund 0.9, sso 0.8, invoice 0.3, fax 0.2. With the
floor 0.5: fax abstains (abstain_rate 1/1), refund and sso answer and invoice does not
(answer_rate 2/3). With the floor 0.25: fax still abstains, and all three answer (3/3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_helpers import GOLDEN, RetrievalProject, conftest_with, esc
from test_plugin_artifact import schema_errors

from pytest_retrieval.cli import main

SCORED = conftest_with(
    """
    SCORES = {
        "How long is the refund window?": [0.4, 0.9, 0.1],
        "How do I set up SSO with Okta?": [0.8, 0.5, 0.45],
        "Where do I download invoices?": [0.3, 0.2, 0.1],
        "Can I send invoices by fax?": [0.2],
        "Quokka zebra heldout question": [0.99],
    }

    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text, k):
            return list(zip(RANKINGS[text], SCORES[text]))[:k]

        return search
    """
)

GATES = """
from pytest_retrieval import assert_abstain_rate, assert_answer_rate

def test_no_answer_abstains():
    assert_abstain_rate(slice="no-answer") >= 0.8

def test_answerable_answer():
    assert_answer_rate() >= 0.6
"""


def test_a_floor_fills_the_no_answer_column_and_gates_abstention(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(ini={"retrieval_score_floor": "0.5"}, conftest=SCORED, tests=GATES)
    result = p.run("--retrieval-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        esc(
            [
                "PASS abstain_rate >= 0.8: 1.0000 (CI *) [stage=retriever slice=no-answer] (n=1)*",
                "PASS answer_rate >= 0.6: 0.6667 (CI *) [stage=retriever] (n=3)*",
            ]
        )
    )
    # The slice table (the compact summary): abstain_rate for the no-answer slice, answer_rate
    # where it is defined.
    result.stdout.re_match_lines([r"exact-lookup \(n=2\)\s.*\s—\s+0\.5000\s*$"])
    result.stdout.re_match_lines([r"no-answer \(n=1\)\s.*\s1\.0000\s+—\s*$"])
    # The full table (-v): a column per slice, the no-answer column filled.
    full = p.run("-v")
    full.stdout.re_match_lines([r"abstain_rate\s+1\.0000\s+—\s+—\s+1\.0000\s*$"])
    full.stdout.re_match_lines([r"answer_rate\s+0\.6667\s+0\.5000\s+1\.0000\s+—\s*$"])
    assert "score floor sweep" not in result.stdout.str()  # the sweep is for -v
    document = p.artifact()
    assert schema_errors(document) == []
    no_answer = next(r for r in document["results"] if r["column"] == "no-answer")
    assert no_answer["metrics"]["abstain_rate"] == 1.0
    assert no_answer["metrics"]["answer_rate"] is None
    assert document["abstention"]["floors"] == {"*": 0.5}
    assert document["snapshot"]["settings"]["score_floor"] == {"*": 0.5}


def test_a_floor_per_stage_and_a_failing_abstention_gate_names_the_answered_queries(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(
        ini={
            "retrieval_score_floor": "retriever=0.15, reranker=0.5",
            "retrieval_thresholds": "abstain_rate >= 0.8 slice=no-answer stage=retriever",
        },
        conftest=SCORED,
        tests="def test_nothing():\n    pass\n",
    )
    result = p.run()
    assert result.ret == 1
    out = result.stdout.str()
    assert (
        "abstain_rate = 0.0000 < 0.8, expected >= 0.8 [stage=retriever split=overall "
        "slice=no-answer]" in out
    )
    assert "no-answer queries scored: 1 (abstain_rate is defined on them only)" in out
    # The retriever stage's own floor (0.15), not the reranker's: fax's 0.2 is an answer.
    assert "score floor 0.15: 1 query answered anyway" in out
    assert "  fax: top score 0.2, top result invoices" in out


def test_without_a_floor_abstention_cannot_be_measured(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(
        conftest=SCORED,
        ini={"retrieval_metrics": "recall, abstain_rate"},
        tests=GATES.split("def test_answerable")[0],
    )
    result = p.run()
    assert result.ret == 1
    out = result.stdout.str()
    assert (
        "abstain_rate cannot be measured [retriever]: no score floor: set retrieval_score_floor"
        in out
    )
    assert "abstain_rate, answer_rate [retriever]: cannot be measured: no score floor" in out


def test_a_numeric_floor_without_scores_cannot_be_measured_but_empty_can(
    retrieval_project: RetrievalProject,
) -> None:
    # The standard retriever returns bare ids: no scores.
    p = retrieval_project.write(ini={"retrieval_score_floor": "0.5"}, tests=GATES)
    result = p.run()
    assert result.ret == 1
    assert "the floor 0.5 needs scores, but the ranking of query 'refund' has none" in (
        result.stdout.str()
    )
    # `empty`: only an empty ranking abstains. fax returns ["invoices"]: it answered.
    p.write(ini={"retrieval_score_floor": "empty"}, tests=GATES)
    result = p.run()
    result.stdout.fnmatch_lines(
        esc(["FAIL abstain_rate >= 0.8: 0.0000 (CI *) [stage=retriever slice=no-answer] (n=1)*"])
    )


def test_verbose_shows_the_sweep_and_the_reports_plot_it(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(ini={"retrieval_score_floor": "0.5"}, conftest=SCORED, tests=GATES)
    result = p.run("-v", "--retrieval-markdown", "out.md", "--retrieval-html", "out.html")
    assert result.ret == 0
    # Top scores 0.9, 0.8, 0.3 (answerable) and 0.2 (no-answer), and the floor 0.5.
    result.stdout.fnmatch_lines(
        esc(
            [
                "score floor sweep [retriever] (1 no-answer, 3 answerable queries; floor 0.5, "
                "marked *):"
            ]
        )
    )
    result.stdout.re_match_lines(
        [
            r"floor\s+abstain_rate\s+answer_rate$",
            r"-+\s+-+\s+-+$",
            r"0\.2\s+0\.0000\s+1\.0000$",  # fax's 0.2 is at the floor: it answers
            r"0\.3\s+1\.0000\s+1\.0000$",
            r"0\.5 \*\s+1\.0000\s+0\.6667$",  # the floor set; invoice (0.3) abstains
            r"0\.8\s+1\.0000\s+0\.6667$",
            r"0\.9\s+1\.0000\s+0\.3333$",
        ],
        consecutive=True,
    )
    markdown = (p.path / "out.md").read_text(encoding="utf-8")
    assert "Score floor sweep · stage retriever · 1 no-answer, 3 answerable queries" in markdown
    assert "| `0.5` (set) | 1.0000 | 0.6667 |" in markdown
    html = (p.path / "out.html").read_text(encoding="utf-8")
    assert html.count('class="pt run s-abstain_rate"') == 5
    assert 'data-floor="0.3" data-value="1.0000"' in html
    assert 'class="floor"' in html
    assert " style=" not in html  # the CSP allows no inline style attribute


def test_duplicates_file_scores_per_group_and_says_so(
    retrieval_project: RetrievalProject,
) -> None:
    # refund's ranking is shipping, refund-policy, contact: declare contact a copy of
    # refund-policy and judge it too. Raw precision@3 would count two hits; per group, one.
    p = retrieval_project.write(
        golden=GOLDEN.replace("relevant: [refund-policy]", "relevant: [refund-policy, contact]"),
        ini={"retrieval_duplicates": "dups.tsv", "retrieval_metrics": "precision, distinct"},
        tests="""
from pytest_retrieval import assert_distinct_at, assert_precision_at

def test_precision():
    assert_precision_at(3, slice="exact-lookup") >= 0.0

def test_distinct():
    assert_distinct_at(3) >= 0.99
""",
    )
    (p.path / "dups.tsv").write_text("refund-policy\tR\ncontact\tR\n", encoding="utf-8")
    result = p.run("--retrieval-json", "out.json")
    assert result.ret == 1
    out = result.stdout.str()
    assert (
        "scores are deduplicated: 1 duplicate groups (2 documents) from retrieval_duplicates" in out
    )
    assert "scored per duplicate group: 1 duplicate groups (2 documents)" in out
    # distinct@3: refund 2/3 (contact copies refund-policy), the others 1: mean (2/3+3)/4.
    result.stdout.fnmatch_lines(esc([f"FAIL distinct@3 >= 0.99: {(2 / 3 + 3) / 4:.4f}*(n=4)*"]))
    document = p.artifact()
    assert schema_errors(document) == []
    refund = next(r for r in document["queries"] if r["id"] == "refund")
    assert refund["metrics"]["retriever"]["precision@3"] == pytest.approx(1 / 3)
    assert document["dedup"] == {
        "source": f"retrieval_duplicates = {p.path / 'dups.tsv'}",
        "groups": 1,
        "documents": 2,
    }


def test_a_duplicates_file_that_groups_no_two_documents_says_nothing_is_deduplicated(
    retrieval_project: RetrievalProject,
) -> None:
    # Every document in its own group: no number changes, and "scores are deduplicated: 0
    # duplicate groups (0 documents)" said the opposite.
    p = retrieval_project.write(ini={"retrieval_duplicates": "dups.tsv"}, tests=GATES)
    (p.path / "dups.tsv").write_text("refund-policy\tR\ncontact\tC\n", encoding="utf-8")
    result = p.run("--retrieval-markdown=out.md")
    out = result.stdout.str()
    assert "scores are deduplicated" not in out
    assert (
        "scores are not deduplicated: no two documents are copies by retrieval_duplicates = "
        "dups.tsv (documents that share a group are copies)" in out
    ), out
    markdown = (p.path / "out.md").read_text(encoding="utf-8")
    assert "Scores are deduplicated" not in markdown
    assert "Scores are not deduplicated: no two documents are copies by" in markdown


def test_a_bad_duplicates_file_is_a_usage_error(retrieval_project: RetrievalProject) -> None:
    p = retrieval_project.write(ini={"retrieval_duplicates": "dups.tsv"}, tests=GATES)
    (p.path / "dups.tsv").write_text("refund-policy contact\n", encoding="utf-8")
    result = p.run()
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*dups.tsv:1: expected `doc id<TAB>group id`*"])


def test_dedup_exact_from_corpus_texts(retrieval_project: RetrievalProject) -> None:
    p = retrieval_project.write(
        ini={
            "retrieval_corpus": "corpus.tsv",
            "retrieval_dedup": "exact",
            "retrieval_metrics": "distinct",
            "retrieval_id_check": "off",
        },
        tests="""
from pytest_retrieval import assert_distinct_at

def test_distinct():
    assert_distinct_at(3) >= 0.0
""",
    )
    docs = ["shipping", "refund-policy", "contact", "okta", "mfa", "sso-setup", "faq",
            "pricing", "invoices", "billing", "export-data"]  # fmt: skip
    lines = [f"{d}\tThe {d} page." for d in docs]
    lines[docs.index("contact")] = "contact\tThe REFUND-policy page!"  # a copy of refund-policy
    (p.path / "corpus.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = p.run("--retrieval-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    assert (
        "1 duplicate groups (2 documents) from retrieval_dedup = exact over" in result.stdout.str()
    )
    overall = next(r for r in p.artifact()["results"] if r["column"] == "overall")
    assert overall["metrics"]["distinct@3"] == pytest.approx((2 / 3 + 3) / 4)


def test_run_file_scores_measure_abstention(
    retrieval_project: RetrievalProject, tmp_path: Path
) -> None:
    run = tmp_path / "run.jsonl"
    rows = [
        {"query_id": "refund", "ranking": [["refund-policy", 0.9]]},
        {"query_id": "sso", "ranking": [["okta", 0.7]]},
        {"query_id": "invoice", "ranking": [["faq", 0.1]]},
        {"query_id": "fax", "ranking": [["invoices", 0.6]]},
    ]
    run.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    p = retrieval_project.write(
        ini={"retrieval_score_floor": "0.5", "retrieval_ks": "1"},
        ks=None,
        tests=GATES,
    )
    result = p.run(f"--retrieval-run={run}")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        esc(
            [
                "FAIL abstain_rate >= 0.8: 0.0000 (CI *) [stage=retriever slice=no-answer] (n=1)*",
                "PASS answer_rate >= 0.6: 0.6667*",
            ]
        )
    )


def test_abstain_rate_enters_the_baseline_and_regresses(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(
        ini={
            "retrieval_score_floor": "0.25",
            "retrieval_baseline": "baseline.json",
            "retrieval_regression": "answer_rate 0.01",
            "retrieval_resamples": "200",
        },
        conftest=SCORED,
        tests="def test_nothing():\n    pass\n",
    )
    assert p.run("--retrieval-update-baseline").ret == 0
    baseline = json.loads((p.path / "baseline.json").read_text(encoding="utf-8"))
    assert baseline["means"]["retriever"]["overall"]["answer_rate"] == 1.0
    assert baseline["queries"]["fax"]["metrics"]["retriever"]["abstain_rate"] == 1.0
    assert baseline["queries"]["fax"]["metrics"]["retriever"]["answer_rate"] is None
    assert baseline["settings"]["score_floor"] == {"*": 0.25}
    # The same floor, same run: comparable, no drop.
    result = p.run()
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        esc(["PASS answer_rate budget 0.0100 [stage=retriever]: 1.0000 → 1.0000*"])
    )
    # A new floor changes what the numbers mean: incomparable, with the fix.
    p.write(
        ini={
            "retrieval_score_floor": "0.5",
            "retrieval_baseline": "baseline.json",
            "retrieval_regression": "answer_rate 0.01",
        },
        conftest=SCORED,
    )
    result = p.run()
    assert result.ret == 1
    assert "incomparable: setting 'score_floor'" in result.stdout.str()


def test_golden_validate_lists_judged_copies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text(
        "version: 1\nqueries:\n"
        "  - {id: q1, text: refunds, relevant: {refund: 3, refund-copy: 1}}\n"
        "  - {id: q2, text: shipping, relevant: [shipping]}\n",
        encoding="utf-8",
    )
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(d) + "\n"
            for d in [
                {"_id": "refund", "title": "Refunds", "text": "Within 30 days."},
                {"_id": "refund-copy", "title": "refunds", "text": "within 30 days"},
                {"_id": "shipping", "title": "Shipping", "text": "Two days."},
            ]
        ),
        encoding="utf-8",
    )
    assert main(["golden", "validate", str(golden), "--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "duplicates: 1 group(s) of judged documents are copies of each other" in out
    assert "  refund, refund-copy: judged in q1 (refund 3, refund-copy 1)" in out
    assert "warning: graded differently within q1" in out
    assert main(["golden", "validate", str(golden), "--corpus", str(corpus), "--dedup", "off"]) == 0
    assert "duplicates" not in capsys.readouterr().out
    ids = tmp_path / "ids.txt"
    ids.write_text("refund\nrefund-copy\nshipping\n", encoding="utf-8")
    assert main(["golden", "validate", str(golden), "--corpus", str(ids)]) == 0  # no texts: quiet
    assert main(["golden", "validate", str(golden), "--corpus", str(ids), "--dedup", "exact"]) == 2
    assert "no texts" in capsys.readouterr().err


def test_changed_duplicate_groups_make_the_baseline_incomparable(
    retrieval_project: RetrievalProject,
) -> None:
    ini = {
        "retrieval_duplicates": "dups.tsv",
        "retrieval_baseline": "baseline.json",
        "retrieval_regression": "ndcg@3 0.01",
        "retrieval_resamples": "200",
    }
    p = retrieval_project.write(ini=ini, tests="def test_nothing():\n    pass\n")
    (p.path / "dups.tsv").write_text("refund-policy\tR\ncontact\tR\n", encoding="utf-8")
    assert p.run("--retrieval-update-baseline").ret == 0
    assert p.run().ret == 0
    # Other groups give other numbers: never compared silently.
    (p.path / "dups.tsv").write_text("okta\tO\nmfa\tO\n", encoding="utf-8")
    result = p.run()
    assert result.ret == 1
    assert "incomparable: the duplicate groups are not the ones" in result.stdout.str()
    assert "('file:" in result.stdout.str()
