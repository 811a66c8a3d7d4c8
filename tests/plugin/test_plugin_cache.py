"""The retriever-output cache as a user sees it: calls counted, misses by key field, replay,
xdist, two processes at once, damaged files.

Every project here logs one line per retriever (and reranker) call, so "served from the cache"
is counted from outside the plugin, never from its own numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from plugin_helpers import GOLDEN, QUIET_PLUGINS, RetrievalProject, conftest_with
from test_plugin_artifact import load_schema

TESTS = """
from pytest_retrieval import assert_recall_at

def test_recall():
    assert_recall_at(3) >= 0.1
"""

#: The four scorable queries of the standard golden set (the held-out one is sealed).
SCORABLE = 4
SCORABLE_TEXTS = [
    "How long is the refund window?",
    "How do I set up SSO with Okta?",
    "Where do I download invoices?",
    "Can I send invoices by fax?",
]

#: A retriever that logs each call; unknown texts get a fixed answer (for edited golden sets).
CONFTEST = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text, k):
            log_call(text)
            return RANKINGS.get(text, ["refund-policy", "contact"])[:k]

        return search
    """
)

RERANK_LOG = "rerank.log"


def conftest_with_reranker(name: str) -> str:
    """CONFTEST plus a reranker called ``name`` that reverses the candidates, logging calls."""
    return CONFTEST + (
        f"""

RERANK_CALLS = os.path.join(os.path.dirname(__file__), "{RERANK_LOG}")


@pytest.fixture(scope="session")
def reranker_under_test():
    def {name}(text, candidates):
        with open(RERANK_CALLS, "a", encoding="utf-8") as out:
            out.write(text + "\\n")
        return list(reversed(candidates))

    return {name}
"""
    )


def project(retrieval_project: RetrievalProject, **ini: str) -> RetrievalProject:
    settings = {"retrieval_cache": "use", "retrieval_index_version": "v1", **ini}
    return retrieval_project.write(ini=settings, conftest=CONFTEST, tests=TESTS)


def calls_between(project: RetrievalProject, run: Any) -> list[str]:
    """The retriever calls made by ``run()`` (the log is shared by every run)."""
    before = len(project.calls())
    run()
    return project.calls()[before:]


def numbers(document: dict[str, Any]) -> str:
    """Every number a run reports about quality, as text (latency left out: it is timing)."""
    queries = [{k: v for k, v in row.items() if k != "latency_ms"} for row in document["queries"]]
    return json.dumps([document["results"], queries], sort_keys=True)


def rerank_calls(project: RetrievalProject) -> list[str]:
    log = project.path / RERANK_LOG
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


# --- hits ---------------------------------------------------------------------------------


def test_a_second_run_calls_the_retriever_zero_times_and_gives_identical_numbers(
    retrieval_project: RetrievalProject,
) -> None:
    p = project(retrieval_project)
    first = p.run("-v", "--retrieval-json", "first.json")
    first.assert_outcomes(passed=1)
    assert sorted(p.calls()) == sorted(
        [
            "How long is the refund window?",
            "How do I set up SSO with Okta?",
            "Where do I download invoices?",
            "Can I send invoices by fax?",
        ]
    )
    second = p.run("-v", "--retrieval-json", "second.json")
    second.assert_outcomes(passed=1)
    assert len(p.calls()) == SCORABLE  # not one more call
    assert numbers(p.artifact("second.json")) == numbers(p.artifact("first.json"))
    # The summary table is the same text, and the summary says where the answers came from.
    table = lambda out: [l for l in out if l.startswith(("recall@", "ndcg@", "mrr@"))]  # noqa: E731,E741
    assert table(second.outlines) == table(first.outlines) != []
    second.stdout.fnmatch_lines(
        ["cache use: 4 of 4 queries served from the cache, index version v1, 0 called, *"]
    )
    first.stdout.fnmatch_lines(["cache use: 0 of 4 queries served from the cache*4 called*"])


def test_cached_queries_are_left_out_of_latency(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run("-v", "--retrieval-json", "first.json").assert_outcomes(passed=1)
    assert set(p.artifact("first.json")["latency_ms"]) == {"retriever"}
    # One query is new (its text changed): only its latency is measured.
    golden = GOLDEN.replace("Where do I download invoices?", "Where are my invoices?")
    (p.path / "golden.yaml").write_text(golden, encoding="utf-8")
    result = p.run("-v", "--retrieval-json", "second.json")
    result.assert_outcomes(passed=1)
    rows = {row["id"]: row["latency_ms"] for row in p.artifact("second.json")["queries"]}
    assert [qid for qid, latency in rows.items() if latency] == ["invoice"]
    result.stdout.fnmatch_lines(["*3 of 4 queries served*; latency covers the called queries only"])
    # Everything cached: no latency at all, rather than a percentile of nothing.
    p.run("-v", "--retrieval-json", "third.json").assert_outcomes(passed=1)
    assert p.artifact("third.json")["latency_ms"] == {}


def test_the_artifact_records_the_source_and_validates(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run("--retrieval-json", "first.json").assert_outcomes(passed=1)
    p.run("--retrieval-json", "second.json").assert_outcomes(passed=1)
    document = p.artifact("second.json")
    jsonschema.Draft202012Validator(load_schema()).validate(document)
    assert document["retriever"]["index_version"] == "v1"
    assert document["settings"]["index_version"] == "v1"
    cache = document["run"]["cache"]
    assert (cache["mode"], cache["cached"], cache["called"], cache["stored"]) == ("use", 4, 0, 0)
    assert Path(cache["path"]) == p.path / ".retrieval-cache" / "runs.sqlite3"
    assert p.artifact("first.json")["run"]["cache"]["stored"] == SCORABLE


# --- each key field is a miss ---------------------------------------------------------------


def test_a_new_index_version_misses_every_query(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    made = calls_between(p, lambda: p.run("--retrieval-index-version", "v2"))
    assert len(made) == SCORABLE
    # Both versions are now cached side by side: going back is a hit.
    assert calls_between(p, lambda: p.run("--retrieval-index-version", "v1")) == []
    assert calls_between(p, lambda: p.run("--retrieval-index-version", "v2")) == []


def test_a_new_depth_misses_every_query(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    assert len(calls_between(p, lambda: p.run("--retrieval-depth", "5"))) == SCORABLE
    assert calls_between(p, lambda: p.run("--retrieval-depth", "5")) == []


def test_an_edited_doc_id_map_misses_every_query(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project, retrieval_doc_id_map="map.json")
    (p.path / "map.json").write_text('{"unused#0": "unused"}', encoding="utf-8")
    p.run().assert_outcomes(passed=1)
    assert calls_between(p, p.run) == []
    (p.path / "map.json").write_text('{"unused#0": "other"}', encoding="utf-8")
    assert len(calls_between(p, p.run)) == SCORABLE


def test_editing_one_query_text_misses_only_that_query(
    retrieval_project: RetrievalProject,
) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    golden = GOLDEN.replace("Where do I download invoices?", "Where are my invoices?")
    (p.path / "golden.yaml").write_text(golden, encoding="utf-8")
    assert calls_between(p, p.run) == ["Where are my invoices?"]


def test_a_failed_query_is_not_stored_and_is_retried(retrieval_project: RetrievalProject) -> None:
    failing = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text, k):
                log_call(text)
                if "fax" in text and os.environ.get("FAIL_FAX"):
                    raise RuntimeError("backend down")
                return RANKINGS[text][:k]

            return search
        """
    )
    p = retrieval_project.write(ini={"retrieval_cache": "use"}, conftest=failing, tests=TESTS)
    import os

    os.environ["FAIL_FAX"] = "1"
    try:
        assert p.run().ret == 1  # a failed query fails the session
    finally:
        del os.environ["FAIL_FAX"]
    assert calls_between(p, p.run) == ["Can I send invoices by fax?"]


def test_the_reranker_stage_is_served_whole_and_a_new_reranker_misses_it(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(
        ini={"retrieval_cache": "use"}, conftest=conftest_with_reranker("rerank_v1"), tests=TESTS
    )
    p.run("--retrieval-json", "first.json").assert_outcomes(passed=1)
    assert (len(p.calls()), len(rerank_calls(p))) == (SCORABLE, SCORABLE)
    p.run("--retrieval-json", "second.json").assert_outcomes(passed=1)
    assert (len(p.calls()), len(rerank_calls(p))) == (SCORABLE, SCORABLE)  # nothing called
    assert p.artifact("second.json")["stages"] == ["retriever", "reranker"]
    assert numbers(p.artifact("second.json")) == numbers(p.artifact("first.json"))
    # A different reranker: its stage misses for every query. The query runs through both
    # stages again, because a reranker is handed the retriever's own return values.
    (p.path / "conftest.py").write_text(conftest_with_reranker("rerank_v2"), encoding="utf-8")
    p.run().assert_outcomes(passed=1)
    assert (len(p.calls()), len(rerank_calls(p))) == (2 * SCORABLE, 2 * SCORABLE)
    p.run().assert_outcomes(passed=1)
    assert (len(p.calls()), len(rerank_calls(p))) == (2 * SCORABLE, 2 * SCORABLE)


def test_refresh_calls_every_query_and_overwrites(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    assert len(calls_between(p, lambda: p.run("--retrieval-cache", "refresh"))) == SCORABLE
    assert calls_between(p, p.run) == []


def test_off_neither_reads_nor_writes(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project, retrieval_cache="off")
    p.run().assert_outcomes(passed=1)
    p.run().assert_outcomes(passed=1)
    assert len(p.calls()) == 2 * SCORABLE
    assert not (p.path / ".retrieval-cache").exists()


# --- replay ---------------------------------------------------------------------------------


def test_replay_serves_a_complete_cache_without_calls(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run("--retrieval-json", "first.json").assert_outcomes(passed=1)
    result = p.run("--retrieval-cache", "replay", "--retrieval-json", "replay.json")
    result.assert_outcomes(passed=1)
    assert len(p.calls()) == SCORABLE
    assert numbers(p.artifact("replay.json")) == numbers(p.artifact("first.json"))


def test_replay_with_a_missing_entry_exits_4_naming_it(
    retrieval_project: RetrievalProject,
) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    golden = GOLDEN.replace("Where do I download invoices?", "Where are my invoices?")
    (p.path / "golden.yaml").write_text(golden, encoding="utf-8")
    result = p.run("--retrieval-cache", "replay")
    assert result.ret == 4
    result.stdout.fnmatch_lines(
        ["*replay: 1 of 4 queries have no entry in *runs.sqlite3: invoice;*"]
    )
    assert "retrieval gates" not in result.stdout.str()  # stopped before any gate
    assert len(p.calls()) == SCORABLE


def test_replay_without_a_cache_file_exits_4_and_creates_none(
    retrieval_project: RetrievalProject,
) -> None:
    p = project(retrieval_project, retrieval_cache="replay")
    result = p.run()
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*4 of 4 queries have no entry*: refund, sso, invoice, fax;*"])
    assert p.calls() == []
    assert not (p.path / ".retrieval-cache" / "runs.sqlite3").exists()


def test_replay_never_names_a_held_out_query(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    result = p.run("--retrieval-cache", "replay", "--retrieval-heldout")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*1 of 5 queries have no entry*: 1 held-out (not named);*"])
    assert "zebra" not in result.stdout.str().lower()


# --- damaged files --------------------------------------------------------------------------


def truncate_cache(p: RetrievalProject) -> Path:
    path = p.path / ".retrieval-cache" / "runs.sqlite3"
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.unlink()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 100])
    return path


def test_a_truncated_cache_is_reported_and_ignored(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run("-v", "--retrieval-json", "first.json").assert_outcomes(passed=1)
    path = truncate_cache(p)
    damaged = path.read_bytes()
    result = p.run("-v", "--retrieval-json", "second.json", "-W", "default")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*PytestWarning: pytest-retrieval: retrieval cache *runs.sqlite3: is damaged*"
            "this run calls the retriever for every query*",
            "*cache warning: retrieval cache *runs.sqlite3: is damaged*",
        ]
    )
    assert len(p.calls()) == 2 * SCORABLE  # nothing was read from it
    assert numbers(p.artifact("second.json")) == numbers(p.artifact("first.json"))
    assert path.read_bytes() == damaged  # `use` leaves the file for the user to look at


def test_refresh_rebuilds_a_truncated_cache(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    path = truncate_cache(p)
    result = p.run("--retrieval-cache", "refresh")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*moved it aside to runs.sqlite3.corrupt*"])
    assert path.with_name("runs.sqlite3.corrupt").exists()
    assert calls_between(p, p.run) == []  # the rebuilt cache serves the next run


def test_replay_of_a_damaged_cache_exits_4(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    p.run().assert_outcomes(passed=1)
    truncate_cache(p)
    result = p.run("--retrieval-cache", "replay")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*replay: retrieval cache *runs.sqlite3: is damaged*"])


def test_a_foreign_file_is_reported_and_left_alone(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    folder = p.path / ".retrieval-cache"
    folder.mkdir()
    (folder / "runs.sqlite3").write_bytes(b"not a database at all " * 300)
    result = p.run()
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*is not an SQLite database*"])
    assert (folder / "runs.sqlite3").read_bytes() == b"not a database at all " * 300


# --- a stale cache and the determinism probe -------------------------------------------------

#: The retriever changed without a new index version: with RETRIEVER_VERSION=2 it finds the
#: refund policy first (deterministically); every other answer is as before.
CHANGED_CONFTEST = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        changed = os.environ.get("RETRIEVER_VERSION") == "2"

        def search(text, k):
            log_call(text)
            if changed and text == "How long is the refund window?":
                return ["refund-policy", "shipping", "contact"][:k]
            return RANKINGS[text][:k]

        return search
    """
)

#: The stale warning, as every report words it (one line; the terminal may wrap it).
STALE = (
    "the cache is stale: 1 of the 4 queries re-run live (refund) came back the same on two "
    "live runs but not as cached, so this run scored rankings the retriever no longer returns; "
    "refresh the cache (--retrieval-cache=refresh) or bump the index version "
    "(retrieval_index_version)"
)


def flat(result: Any) -> str:
    """The output with every run of whitespace one space (wrapped lines joined)."""
    return " ".join(result.stdout.str().split())


def test_a_retriever_changed_under_the_same_index_version_is_a_stale_cache_not_noise(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = retrieval_project.write(
        ini={
            "retrieval_cache": "use",
            "retrieval_index_version": "v1",
            "retrieval_baseline": "baseline.json",
        },
        conftest=CHANGED_CONFTEST,
        tests=TESTS,
    )
    p.run("--retrieval-update-baseline").assert_outcomes(passed=1, skipped=3)
    monkeypatch.setenv("RETRIEVER_VERSION", "2")
    run = lambda *args: p.run("--retrieval-json", "out.json", *args)  # noqa: E731
    result: Any = None

    def stale_run() -> None:
        nonlocal result
        result = run("--retrieval-markdown", "out.md")

    calls = calls_between(p, stale_run)
    # Served from the cache; the probe re-runs the four non-held-out queries live, and the one
    # whose live ranking differs from the cache once more: refund twice, the others once.
    assert sorted(calls) == sorted([*SCORABLE_TEXTS, "How long is the refund window?"])
    # Every gate passes on the stale rankings (refund's cached RR is 1/2, live it is 1), but the
    # run says its scores are the cache's, and how to fix it; never that the pipeline is noisy.
    result.assert_outcomes(passed=4)
    assert f"warning: {STALE}" in flat(result)
    assert "nondeterministic" not in result.stdout.str()
    assert p.artifact()["determinism"] == {
        "queries": ["refund", "sso", "invoice", "fax"],
        "changed": [],
        "stale": ["refund"],
        "noisy": False,
    }
    # The Markdown report warns of it above the gates (its escaping of "_" undone).
    markdown = (p.path / "out.md").read_text(encoding="utf-8").replace("\\_", "_")
    assert f"> ⚠️ {STALE}" in markdown
    # Under -q too: it makes the numbers meaningless.
    assert f"warning: {STALE}" in flat(run("-q"))

    # A baseline written from it would record the cache's rankings as the pipeline's: refused.
    baseline = p.path / "baseline.json"
    before = baseline.read_bytes()
    refused = p.run("--retrieval-update-baseline")
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    assert f"baseline not written to {baseline}: {STALE}" in flat(refused)
    assert baseline.read_bytes() == before

    # The fix the warning names: refreshed, the cache holds the new ranking; no warning.
    p.run("--retrieval-cache=refresh").assert_outcomes(passed=4)
    fixed = run()
    assert "the cache is stale" not in fixed.stdout.str()
    assert p.artifact()["determinism"]["stale"] == []
    rows = {q["id"]: q for q in p.artifact()["queries"]}
    assert rows["refund"]["rankings"]["retriever"] == ["refund-policy", "shipping", "contact"]


#: A truly nondeterministic retriever: the n-th call of a query puts noise-<n mod 3> first.
NOISY_CONFTEST = conftest_with(
    """
    import hashlib

    @pytest.fixture(scope="session")
    def retriever_under_test():
        here = os.path.dirname(__file__)

        def search(text, k):
            log_call(text)
            counter = os.path.join(here, "count-" + hashlib.sha256(text.encode()).hexdigest())
            n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
            with open(counter, "w") as out:
                out.write(str(n))
            return [f"noise-{n % 3}", *RANKINGS[text]][:k]

        return search
    """
)


def test_a_nondeterministic_retriever_behind_the_cache_is_still_reported_as_noise(
    retrieval_project: RetrievalProject,
) -> None:
    p = retrieval_project.write(
        ini={
            "retrieval_cache": "use",
            "retrieval_index_version": "v1",
            "retrieval_baseline": "baseline.json",
        },
        conftest=NOISY_CONFTEST,
        tests=TESTS,
    )
    p.run("--retrieval-update-baseline")  # call 1 is cached (noise-1), call 2 probes (noise-2)
    result: Any = None

    def noisy_run() -> None:
        nonlocal result
        result = p.run("--retrieval-json", "out.json")

    calls = calls_between(p, noisy_run)
    # Served from the cache (noise-1); live, call 3 gives noise-0, so each query is asked once
    # more, and call 4 (noise-1) disagrees with call 3: noise, not a stale cache.
    assert sorted(calls) == sorted(SCORABLE_TEXTS * 2)
    result.stdout.fnmatch_lines(
        [
            "determinism probe: 4 queries re-run, 4 rankings changed (refund, sso, invoice, fax): "
            "the pipeline is nondeterministic",
        ]
    )
    assert "the cache is stale" not in result.stdout.str()
    determinism = p.artifact()["determinism"]
    assert (determinism["changed"], determinism["stale"]) == (
        ["refund", "sso", "invoice", "fax"],
        [],
    )


# --- processes ------------------------------------------------------------------------------


def test_two_workers_call_each_query_once(retrieval_project: RetrievalProject) -> None:
    p = project(retrieval_project)
    first = p.run_subprocess("-n", "2", "--retrieval-json", "first.json")
    first.assert_outcomes(passed=1)
    assert len(p.calls()) == SCORABLE
    second = p.run_subprocess("-n", "2", "--retrieval-json", "second.json")
    second.assert_outcomes(passed=1)
    assert len(p.calls()) == SCORABLE
    second.stdout.fnmatch_lines(["cache use: 4 of 4 queries served from the cache*"])
    assert numbers(p.artifact("second.json")) == numbers(p.artifact("first.json"))


def many_queries(prefix: str, n: int) -> str:
    lines = ["version: 1", "queries:"]
    for i in range(n):
        lines += [f"  - id: {prefix}{i}", f"    text: {prefix} question {i}", "    relevant: [d1]"]
    return "\n".join(lines) + "\n"


def test_two_processes_writing_one_cache_lose_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    conftest = conftest_with(
        """
        import time

        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text, k):
                log_call(text)
                time.sleep(0.002)
                return ["d1", "d2", "d3"]  # as deep as the recall@3 gate looks

            return search
        """
    )
    projects = []
    for name in ("alpha", "beta"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "golden.yaml").write_text(many_queries(name, 150), encoding="utf-8")
        (folder / "conftest.py").write_text(conftest, encoding="utf-8")
        (folder / "test_r.py").write_text(TESTS, encoding="utf-8")
        (folder / "pytest.ini").write_text(
            "[pytest]\nretrieval_golden = golden.yaml\nretrieval_ks = 1,3\n"
            f"retrieval_cache = use\nretrieval_cache_dir = {cache}\nretrieval_concurrency = 4\n",
            encoding="utf-8",
        )
        projects.append(folder)

    def start(folder: Path, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "pytest", *QUIET_PLUGINS, "-p", "no:randomly", *args],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    running = [start(folder) for folder in projects]  # both at once, on one file
    for process in running:
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0, out
    for folder in projects:
        assert len((folder / "calls.log").read_text().splitlines()) == 150
        # Every answer of both processes is there: a replay of each needs no call.
        process = start(folder, "--retrieval-cache", "replay")
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0, out
        assert len((folder / "calls.log").read_text().splitlines()) == 150
    from pytest_retrieval.run.store import RunCache

    with RunCache(cache / "runs.sqlite3") as store:
        assert len(store) == 300
