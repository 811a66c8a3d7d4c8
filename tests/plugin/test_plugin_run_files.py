"""Gating a run produced elsewhere (``--retrieval-run``): evaluate's numbers, the retriever
never called, missing and unknown queries listed, stages, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from plugin_helpers import HELDOUT_ID, RetrievalProject, conftest_with
from test_plugin_artifact import load_schema

from pytest_retrieval.cli import main

#: The retriever fixture fails the test if anything builds it, and logs if anything calls it.
NEVER = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        log_call("built")
        def search(text, k):
            log_call(text)
            return []

        return search
    """
)

# recall@1: the stored rankings here hold one or two ids, and a gate deeper than every
# ranking is refused (the short-ranking check).
TESTS = """
from pytest_retrieval import assert_recall_at

def test_recall():
    assert_recall_at(1) >= 0.1
"""

METRICS = ("recall@5", "recall@10", "precision@5", "ndcg@10", "map@10", "mrr@10")


def test_a_trec_run_gives_evaluates_numbers_without_the_retriever(
    retrieval_project: RetrievalProject,
    trec_eval_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    qrels, run = trec_eval_dir / "qrels.test", trec_eval_dir / "results.test"
    status = main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", *METRICS, "--json"])
    assert status == 0
    expected = json.loads(capsys.readouterr().out)["metrics"]
    p = retrieval_project.write(
        golden=None,
        ini={
            "retrieval_golden": str(qrels),
            "retrieval_metrics": ",".join(METRICS),
        },
        ks=None,
        conftest=NEVER,
        tests="from pytest_retrieval import assert_ndcg_at\n\n"
        "def test_ndcg():\n    assert_ndcg_at(10) >= 0.25\n",
    )
    result = p.run("-v", f"--retrieval-run={run}", "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    assert p.calls() == []  # not built, not called
    document = p.artifact("out.json")
    overall = next(r for r in document["results"] if r["column"] == "overall")
    assert overall["metrics"] == pytest.approx(expected, abs=1e-12)
    assert document["retriever"]["name"] == f"run file retriever={run}"
    assert document["run"]["source"] == "run files"
    jsonschema.Draft202012Validator(load_schema()).validate(document)
    result.stdout.fnmatch_lines([f"run file (retriever): {run}; the retriever was not called"])


def write_jsonl(path: Path, rows: dict[str, list[str]]) -> Path:
    path.write_text(
        "".join(json.dumps({"query_id": q, "ranking": r}) + "\n" for q, r in rows.items()),
        encoding="utf-8",
    )
    return path


def test_missing_queries_score_empty_and_unknown_ids_are_listed(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(conftest=NEVER, tests=TESTS)
    # sso found at rank 1 (recall@1 = 1/2); refund and fax missing; "ghost" is unknown; the
    # held-out query is listed but sealed: ignored without a word.
    write_jsonl(
        p.path / "run.jsonl",
        {"sso": ["sso-setup", "x"], "invoice": ["billing"], "ghost": ["a"], HELDOUT_ID: ["b"]},
    )
    result = p.run("--retrieval-run", "run.jsonl", "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    assert p.calls() == []
    result.stdout.fnmatch_lines(
        [
            "*2 judged queries missing from the run, scored as empty rankings: refund, fax",
            "*1 query ids in the run are not in the golden set (ignored): ghost",
        ]
    )
    assert HELDOUT_ID not in result.stdout.str()
    document = p.artifact("out.json")
    overall = next(r for r in document["results"] if r["column"] == "overall")
    # refund 0 (empty), sso 1/2, invoice 1/2 (billing, of invoices+billing); fax is skipped.
    assert overall["metrics"]["recall@1"] == pytest.approx((0 + 0.5 + 0.5) / 3)
    files = document["run"]["run_files"]
    assert files[0]["missing"] == ["refund", "fax"]
    assert files[0]["unknown"] == ["ghost"]


def test_short_stored_rankings_name_the_run_file_not_a_depth_never_asked_for(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(
        conftest=NEVER,
        tests="from pytest_retrieval import assert_recall_at\n\n"
        "def test_recall():\n    assert_recall_at(3) >= 0.1\n",
    )
    # Every stored ranking holds one or two ids; ks are 1,3.
    write_jsonl(
        p.path / "run.jsonl",
        {"refund": ["refund-policy"], "sso": ["okta", "x"], "invoice": ["billing"], "fax": []},
    )
    result = p.run("-v", "--retrieval-run", "run.jsonl")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "asked for" not in out  # nothing was asked of a retriever
    result.stdout.fnmatch_lines(
        [
            "*recall@3 cannot be scored: every ranking [[]retriever[]] is shorter than 3 (longest "
            "2, as stored in the run file)*Fix: write the run file with at least 3 results*",
            "*short rankings [[]retriever[]]: 4 of 4 rankings are shorter than the cutoff 3 "
            "(longest 2, median 1; as stored in the run file)*Fix: write the run file with 3 "
            "results per query (pytest-retrieval run --depth 3), or lower retrieval_ks*",
        ]
    )


def test_a_run_file_of_chunk_ids_is_refused_with_a_fix_that_applies_to_a_run_file(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(conftest=NEVER, tests=TESTS)
    # The judged documents' chunks ('refund-policy#0'): no ranking holds a judged id, and
    # retrieval_doc_id_separator (set here) never touches a stored run.
    write_jsonl(
        p.path / "run.jsonl",
        {"refund": ["refund-policy#0"], "sso": ["sso-setup#2", "okta#0"], "invoice": ["faq#1"]},
    )
    p.write_ini({"retrieval_doc_id_separator": "#"})
    result = p.run("--retrieval-run", "run.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "Fix: the run file holds chunk ids of the judged documents ('refund-policy#0'), and a "
            "run file is scored as written (retrieval_doc_id, retrieval_doc_id_map and "
            "retrieval_doc_id_separator apply when the plugin calls the retriever, not to a "
            "stored run): write each id cut before its last '#' into the run file (for "
            "pytest-retrieval run: have its retriever return document ids), or gate the "
            "retriever itself, without --retrieval-run, with retrieval_doc_id_separator = #",
        ]
    )
    assert "set retrieval_doc_id_separator = # to score" not in result.stdout.str()
    assert p.calls() == []


def test_a_missing_held_out_query_is_counted_not_named(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(conftest=NEVER, tests=TESTS)
    write_jsonl(p.path / "run.jsonl", {"sso": ["sso-setup"], "refund": [], "invoice": []})
    result = p.run("-v", "--retrieval-run", "run.jsonl", "--retrieval-heldout")
    result.stdout.fnmatch_lines(["*2 judged queries missing*: fax, 1 held-out (not named)"])
    assert HELDOUT_ID not in result.stdout.str()


def test_two_stages_from_two_files(retrieval_project: RetrievalProject) -> None:
    p = retrieval_project.write(conftest=NEVER, tests=TESTS)
    write_jsonl(p.path / "first.jsonl", {"refund": ["refund-policy"], "sso": ["x"]})
    write_jsonl(p.path / "final.jsonl", {"refund": ["x"], "sso": ["okta"]})
    result = p.run(
        "--retrieval-run",
        "first.jsonl",
        "--retrieval-run",
        "reranker=final.jsonl",
        "--retrieval-json",
        "out.json",
    )
    document = p.artifact("out.json")
    assert document["stages"] == ["retriever", "reranker"]
    by_stage = {
        r["stage"]: r["metrics"]["recall@1"]
        for r in document["results"]
        if r["column"] == "overall"
    }
    # retriever: refund 1, sso 0, invoice 0 (missing); reranker: refund 0, sso 1/2, invoice 0.
    assert by_stage == pytest.approx({"retriever": 1 / 3, "reranker": 0.5 / 3})
    assert result.ret == 0
    assert p.calls() == []


def test_a_run_file_with_the_cache_is_refused(retrieval_project: RetrievalProject) -> None:
    p = retrieval_project.write(conftest=NEVER, tests=TESTS, ini={"retrieval_cache": "use"})
    write_jsonl(p.path / "run.jsonl", {"sso": ["okta"]})
    result = p.run("--retrieval-run", "run.jsonl")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*--retrieval-run gates a stored run and never calls the retriever, so "
            "retrieval_cache = use has nothing to cache*--retrieval-cache=off*"
        ]
    )
    # The stated fix works.
    p.run("--retrieval-run", "run.jsonl", "--retrieval-cache=off").assert_outcomes(passed=1)


def test_a_bad_run_file_is_a_usage_error_naming_the_line(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(conftest=NEVER, tests=TESTS)
    (p.path / "run.jsonl").write_text('{"query_id": "sso", "ranking": ["a"]}\nnot json\n')
    result = p.run("--retrieval-run", "run.jsonl")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*run.jsonl:2*not valid JSON*"])
    assert p.calls() == []


def test_a_stored_run_is_gated_against_the_baseline(retrieval_project: RetrievalProject) -> None:
    p = retrieval_project.write(conftest=NEVER, tests=TESTS, ini={"retrieval_baseline": "b.json"})
    good = {"refund": ["refund-policy"], "sso": ["sso-setup", "okta"], "invoice": ["invoices"]}
    write_jsonl(p.path / "good.jsonl", good)
    update = p.run("--retrieval-run", "good.jsonl", "--retrieval-update-baseline")
    update.assert_outcomes(passed=1, skipped=3)  # the default budgets wait for the baseline
    assert json.loads((p.path / "b.json").read_text())["index_version"] is None
    write_jsonl(p.path / "bad.jsonl", {**good, "refund": ["x"], "invoice": ["y"]})
    result = p.run("--retrieval-run", "bad.jsonl")
    # Compared with the stored run's baseline (three queries can never be significant).
    result.stdout.fnmatch_lines(
        ["PASS recall@3 budget 0.0100 *: 0.8333 → 0.3333 *over budget but not significant"]
    )
