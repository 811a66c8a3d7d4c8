"""Query contexts as a user sees them: the context reaches the retriever, the cache keeps
tenants and histories apart, run files are keyed by it, and a held-out query's context never
reaches a report.

The retriever here honours the tenant and the conversation's history, and logs every call as
``tenant|history|text``, so "served from the cache" and "called with tenant B" are counted from
outside the plugin.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from plugin_helpers import RetrievalProject

from pytest_retrieval.cli import main
from pytest_retrieval.formats.runs import load_run_file
from pytest_retrieval.golden.context import context_digest
from pytest_retrieval.run.cachekey import CacheKey, request_key
from pytest_retrieval.run.retriever import QueryRequest

REFUND = "How long is the refund window?"
FOLLOW_UP = "And for annual plans?"
SECRET_TENANT = "tenant-of-the-quokka-query"

GOLDEN = f"""\
version: 1
queries:
  - id: acme-refund
    text: {REFUND}
    relevant: [acme-refund-policy]
    context: {{tenant: acme}}
  - id: globex-refund
    text: {REFUND}
    relevant: [globex-refund-policy]
    context: {{tenant: globex}}
  - id: annual-refunds
    text: {FOLLOW_UP}
    relevant: [acme-annual-refunds]
    context: {{tenant: acme, history: ["{REFUND}"]}}
  - id: annual-pricing
    text: {FOLLOW_UP}
    relevant: [acme-annual-pricing]
    context: {{tenant: acme, history: [What do the plans cost?]}}
  - id: zebra-ho
    text: Quokka zebra heldout question
    relevant: [export-data]
    split: heldout
    context: {{tenant: {SECRET_TENANT}}}
"""

RETRIEVER = """
import os

CALLS = os.path.join(os.path.dirname(__file__), "calls.log")


def search(text, k, tenant, history=()):
    with open(CALLS, "a", encoding="utf-8") as out:
        out.write(f"{tenant}|{'/'.join(history)}|{text}\\n")
    if text == "And for annual plans?":
        topic = "refunds" if any("refund" in said for said in history) else "pricing"
        return [f"{tenant}-annual-{topic}", f"{tenant}-faq"][:k]
    if "Quokka" in text:
        return ["export-data"]
    return [f"{tenant}-refund-policy", f"{tenant}-faq"][:k]


def build():
    return search
"""

CONFTEST = (
    RETRIEVER
    + """

import pytest


@pytest.fixture(scope="session")
def retriever_under_test():
    return search
"""
)

#: Every visible query's one relevant document is the first its tenant and history rank:
#: recall@1 = 1 for each of the four, so 1.0 overall. A retriever that ignored the tenant would
#: rank one tenant's page for both refund queries (recall@1 of the other: 0).
TESTS = """
from pytest_retrieval import assert_recall_at

def test_recall():
    assert_recall_at(1) >= 1.0
"""

CALLS_OF_ONE_RUN = sorted(
    [
        f"acme||{REFUND}",
        f"globex||{REFUND}",
        f"acme|{REFUND}|{FOLLOW_UP}",
        f"acme|What do the plans cost?|{FOLLOW_UP}",
    ]
)


def project(p: RetrievalProject, golden: str = GOLDEN, **ini: str) -> RetrievalProject:
    p.write(golden=golden, conftest=CONFTEST, tests=TESTS, ini=ini)
    return p


def entries(p: RetrievalProject) -> int:
    [path] = list((p.path / ".retrieval-cache").glob("*.sqlite3"))
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])


# --- the context reaches the retriever; the cache keeps contexts apart ----------------------


def test_the_context_reaches_the_retriever_and_the_cache_keeps_tenants_and_histories_apart(
    retrieval_project: RetrievalProject,
) -> None:
    p = project(retrieval_project, retrieval_cache="use", retrieval_index_version="v1")
    first = p.run("--retrieval-json", "first.json")
    first.assert_outcomes(passed=1)
    # One call per query: two tenants with one text, one text with two histories.
    assert sorted(p.calls()) == CALLS_OF_ONE_RUN
    assert entries(p) == 4
    second = p.run("--retrieval-json", "second.json")
    second.assert_outcomes(passed=1)
    assert len(p.calls()) == 4  # all four served from the cache, none mixed up
    rows = {q["id"]: q["rankings"]["retriever"] for q in p.artifact("second.json")["queries"]}
    assert rows == {
        "acme-refund": ["acme-refund-policy", "acme-faq"],
        "globex-refund": ["globex-refund-policy", "globex-faq"],
        "annual-refunds": ["acme-annual-refunds", "acme-faq"],
        "annual-pricing": ["acme-annual-pricing", "acme-faq"],
    }


def test_xdist_workers_hand_over_the_context_and_share_the_cache_by_it(
    retrieval_project: RetrievalProject,
) -> None:
    p = project(retrieval_project, retrieval_cache="use", retrieval_index_version="v1")
    p.tests(TESTS.replace("test_recall", "test_recall_again"), name="test_more.py")
    first = p.run_subprocess("-n", "2", "--retrieval-json", "first.json")
    first.assert_outcomes(passed=2)
    assert sorted(p.calls()) == CALLS_OF_ONE_RUN  # each query once in the whole session
    second = p.run_subprocess("-n", "2")
    second.assert_outcomes(passed=2)
    assert len(p.calls()) == 4


def test_a_ranking_cached_for_tenant_a_is_never_served_for_tenant_b(
    retrieval_project: RetrievalProject,
) -> None:
    one = GOLDEN.split("  - id: globex-refund")[0]
    p = project(retrieval_project, one, retrieval_cache="use", retrieval_index_version="v1")
    p.run().assert_outcomes(passed=1)
    assert p.calls() == [f"acme||{REFUND}"]
    # The same query, the same text, now asked for globex: the cache must miss.
    moved = one.replace("context: {tenant: acme}", "context: {tenant: globex}")
    moved = moved.replace("[acme-refund-policy]", "[globex-refund-policy]")
    (p.path / "golden.yaml").write_text(moved, encoding="utf-8")
    result = p.run("--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    assert p.calls() == [f"acme||{REFUND}", f"globex||{REFUND}"]
    [row] = p.artifact()["queries"]
    assert (row["id"], row["rankings"]["retriever"]) == (
        "acme-refund",
        ["globex-refund-policy", "globex-faq"],
    )
    assert row["context"] == {"tenant": "globex"}


def test_a_retriever_that_takes_no_context_is_warned_about_once_and_gated(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = """
import pytest

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        return ["acme-refund-policy", "globex-refund-policy", "acme-annual-refunds"][:k]
    return search
"""
    retrieval_project.write(
        golden=GOLDEN,
        conftest=conftest,
        tests="from pytest_retrieval import assert_recall_at\n\n"
        "def test_recall():\n    assert_recall_at(3) >= 0.5\n",
    )
    result = retrieval_project.run("-W", "default")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK  # not refused: the leak gates judge what it ranks
    out = result.stdout.str()
    warning = (
        "pytest-retrieval: 4 queries of the golden set have a context (history, tenant), and "
        "none of it reaches the retriever, called as search(text, k=3); take it:"
    )
    assert out.count(warning) == 1


def test_a_context_filter_that_does_not_import_is_a_usage_error(
    retrieval_project: RetrievalProject,
) -> None:
    project(retrieval_project, retrieval_context_filter="nowhere_at_all:tenant_filter")
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*retrieval_context_filter = 'nowhere_at_all:tenant_filter'*"])
    assert retrieval_project.calls() == []


# --- held-out redaction ---------------------------------------------------------------------


def reports(p: RetrievalProject, *args: str) -> tuple[pytest.RunResult, str]:
    result = p.run(
        *args,
        "--retrieval-json",
        "out.json",
        "--retrieval-markdown",
        "out.md",
        "--retrieval-html",
        "out.html",
    )
    written = "".join(
        (p.path / name).read_text(encoding="utf-8") for name in ("out.json", "out.md", "out.html")
    )
    return result, written + result.stdout.str() + result.stderr.str()


def test_a_heldout_querys_context_never_reaches_a_report(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project(retrieval_project)
    result, everything = reports(p)  # sealed
    result.assert_outcomes(passed=1)
    assert SECRET_TENANT not in everything
    contexts = {q["id"]: q.get("context") for q in p.artifact()["queries"]}
    assert contexts["globex-refund"] == {"tenant": "globex"}
    assert contexts["annual-pricing"] == {"tenant": "acme", "history": ["What do the plans cost?"]}
    monkeypatch.setenv("CI", "true")
    result, everything = reports(p, "--retrieval-heldout")  # scored, details hidden
    result.assert_outcomes(passed=1)
    assert f"{SECRET_TENANT}||Quokka zebra heldout question" in p.calls()  # it was handed over
    assert SECRET_TENANT not in everything
    result, everything = reports(p, "--retrieval-heldout", "--retrieval-heldout-details")
    [row] = [q for q in p.artifact()["queries"] if q["id"] == "zebra-ho"]
    assert row["context"] == {"tenant": SECRET_TENANT}  # shown only when details are asked for


# --- run files: the context is part of the key ----------------------------------------------


@pytest.fixture
def made_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """golden.yaml and run.jsonl from ``pytest-retrieval run`` over the scoped retriever."""
    (tmp_path / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    name = f"scoped_{abs(hash(str(tmp_path))) % 10**9}"
    (tmp_path / f"{name}.py").write_text(RETRIEVER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert (
        main(["run", "golden.yaml", "--retriever", f"{name}:build", "--output", "run.jsonl"]) == 0
    )
    return tmp_path


def test_pytest_retrieval_run_hands_over_the_context_and_records_its_digest(
    made_run: Path,
) -> None:
    run = load_run_file(made_run / "run.jsonl")
    assert run.rankings["globex-refund"] == ("globex-refund-policy", "globex-faq")
    assert run.rankings["annual-pricing"] == ("acme-annual-pricing", "acme-faq")
    # The sha256 of each canonical context, written out by hand: never the context itself.
    assert run.contexts["annual-refunds"] == context_digest({"tenant": "acme", "history": [REFUND]})
    by_hand = '{"history":["How long is the refund window?"],"tenant":"acme"}'
    assert run.contexts["annual-refunds"] == hashlib.sha256(by_hand.encode()).hexdigest()
    assert SECRET_TENANT not in (made_run / "run.jsonl").read_text(encoding="utf-8")


def test_a_run_made_for_another_context_is_refused_naming_the_query(
    made_run: Path, retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    never = (
        "import pytest\n\n@pytest.fixture(scope='session')\ndef retriever_under_test():\n"
        "    raise AssertionError('a run file is gated')\n"
    )
    ini = {"retrieval_run": str(made_run / "run.jsonl")}
    retrieval_project.write(golden=GOLDEN, conftest=never, tests=TESTS, ini=ini)
    retrieval_project.run().assert_outcomes(passed=1)  # the same contexts: gated as recorded
    changed = GOLDEN.replace("[What do the plans cost?]", "[What does SSO cost?]")
    changed = changed.replace(f"tenant: {SECRET_TENANT}", "tenant: another-secret-tenant")
    (retrieval_project.path / "golden.yaml").write_text(changed, encoding="utf-8")
    monkeypatch.setenv("CI", "true")
    result = retrieval_project.run("--retrieval-heldout")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str()
    assert (
        f"the run file {made_run / 'run.jsonl'} (retriever) ranked 2 queries for another context "
        "than the golden set gives them now: annual-pricing, 1 held-out (not named)"
    ) in " ".join(out.split())
    assert "zebra-ho" not in out
    assert SECRET_TENANT not in out
    assert "another-secret-tenant" not in out
    assert "run pytest-retrieval run again against this golden set" in out


def test_a_run_file_that_records_no_context_is_gated_as_given_with_a_warning(
    retrieval_project: RetrievalProject,
) -> None:
    trec = "\n".join(
        f"{qid} Q0 {doc} 1 1.0 x"
        for qid, doc in [
            ("acme-refund", "acme-refund-policy"),
            ("globex-refund", "globex-refund-policy"),
            ("annual-refunds", "acme-annual-refunds"),
            ("annual-pricing", "acme-annual-pricing"),
        ]
    )
    (retrieval_project.path / "run.trec").write_text(trec + "\n", encoding="utf-8")
    never = (
        "import pytest\n\n@pytest.fixture(scope='session')\ndef retriever_under_test():\n"
        "    raise AssertionError('a run file is gated')\n"
    )
    retrieval_project.write(
        golden=GOLDEN, conftest=never, tests=TESTS, ini={"retrieval_run": "run.trec"}
    )
    result = retrieval_project.run("-W", "default")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*the run file *run.trec records no context (no context_sha256) for 4 queries that "
            "have one: which context each was ranked for cannot be checked*"
        ]
    )


# --- the cache key of a query without a context is the one it always had --------------------


def test_the_key_of_a_query_without_a_context_is_unchanged_so_old_caches_stay_valid() -> None:
    template = CacheKey(
        "retriever", "", 20, "shop.search.bm25", factory="shop.search:make", index_version="v1"
    )
    key = request_key(template, QueryRequest("q", REFUND))
    # Computed by pytest-retrieval before query contexts existed (main at 59b5283), for
    # CacheKey("retriever", REFUND, 20, "shop.search.bm25", factory=..., index_version="v1").
    assert key.digest == "20b60e061fbf9b649ebd65f2b5d6f0ef6b77df67a741c22c1e6b422d379b0779"
    assert "context" not in key.to_dict()
    assert "context_filter" not in key.to_dict()
    reranked = request_key(
        replace(template, stage="reranker", retriever="shop.rerank", candidates=()),
        QueryRequest("q", REFUND),
        candidates=("a", "b"),
    )
    assert reranked.digest == "95ddb44513afd3302d9653eaefc4e1866723e209f7205b35f3a21c6dd5058d1f"
    # With the filter setting, a query without a context is filtered too (built from {}): its
    # key holds the spec, so a ranking cached without the filter is never served to it.
    filtered = replace(template, context_filter="shop.scope:tenant_filter")
    filtered_key = request_key(filtered, QueryRequest("q", REFUND))
    assert filtered_key.digest != key.digest
    assert filtered_key.to_dict()["context_filter"] == "shop.scope:tenant_filter"
    assert "context" not in filtered_key.to_dict()


def test_the_shard_run_key_and_baseline_hashes_of_queries_without_contexts_are_unchanged() -> None:
    from pytest_retrieval.regression.snapshot import label_hash, text_hash
    from pytest_retrieval.run.shards import run_key

    # Computed by pytest-retrieval before query contexts existed (main at 59b5283).
    plain = [QueryRequest("a", "x"), QueryRequest("b", "y")]
    assert run_key(plain, "use depth=20") == (
        "9454dfd89065fe0188a430cfe9296e8f93706a8dbeea8da4b7e2bb2e33f38e2b"
    )
    assert label_hash("Hi?", {"b": 2, "a": 0}, ["x"], "tune") == "9850cb89be7305a9"
    assert text_hash("Hi?") == "81c135b7c6feef23"
    # With a context, each changes: a ranking made for another tenant is not this query's.
    scoped = [QueryRequest("a", "x", context={"tenant": "acme"}), QueryRequest("b", "y")]
    assert run_key(scoped, "use depth=20") != run_key(plain, "use depth=20")
    context = '{"tenant":"acme"}'
    assert label_hash("Hi?", {"b": 2, "a": 0}, ["x"], "tune", context) != "9850cb89be7305a9"
    assert text_hash("Hi?", context) != text_hash("Hi?")


def test_a_context_makes_its_own_key_and_each_tenant_and_history_another() -> None:
    template = CacheKey("retriever", "", 20, "shop.search.bm25", context_filter="shop:f")
    acme = request_key(template, QueryRequest("a", REFUND, context={"tenant": "acme"}))
    globex = request_key(template, QueryRequest("b", REFUND, context={"tenant": "globex"}))
    one = request_key(template, QueryRequest("c", FOLLOW_UP, context={"history": ["hi"]}))
    two = request_key(template, QueryRequest("d", FOLLOW_UP, context={"history": ["hello"]}))
    assert len({acme.digest, globex.digest, one.digest, two.digest}) == 4
    assert acme.context == '{"tenant":"acme"}'
    assert acme.context_filter == "shop:f"
    # Key order does not matter: the canonical text sorts it.
    both = request_key(template, QueryRequest("e", REFUND, context={"b": 1, "a": 2}))
    same = request_key(template, QueryRequest("f", REFUND, context={"a": 2, "b": 1}))
    assert both.digest == same.digest
