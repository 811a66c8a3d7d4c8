"""Under pytest-xdist (``-n 2``): one retriever run in total, the same artifact as ``-n 0``.

The retriever appends one line per call to calls.log (plugin_helpers.CONFTEST), so calls are
counted across worker processes. One query raises, so both runs also fail the session the same
way while every test passes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from baseline_helpers import BASELINE, golden
from baseline_helpers import CONFTEST as BASELINE_CONFTEST
from plugin_helpers import QUIET_PLUGINS, RetrievalProject, conftest_with, esc

CONFTEST = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text, k):
            log_call(text)
            if text == "Can I send invoices by fax?":
                raise RuntimeError("shard 3 offline")
            return RANKINGS[text][:k]
        return search
    """
)

# Several files and tests, so that both workers run gates; each file uses a different entry point
# to the run (fixtures, assert_* gates, Score twins).
TEST_FILES = {
    "test_fixtures.py": """
        def test_run(retrieval_run):
            assert len(retrieval_run) == 4

        def test_evaluation(retrieval_evaluation):
            assert retrieval_evaluation.evaluated == 3
    """,
    "test_gates.py": """
        from pytest_retrieval.gates.gate import assert_mrr, assert_recall_at

        def test_recall():
            assert_recall_at(3) >= 0.6

        def test_mrr_multi_hop():
            assert_mrr(slice="multi-hop") >= 1.0
    """,
    "test_scores.py": """
        from pytest_retrieval.gates.gate import ndcg_at, precision_at

        def test_ndcg():
            assert ndcg_at(3) >= 0.4

        def test_precision():
            assert precision_at(3, slice="exact-lookup") >= 0.1
    """,
}


def write(project: RetrievalProject) -> None:
    project.write(
        conftest=CONFTEST, ini={"retrieval_thresholds": "recall@3 >= 0.5 slice=*\nmrr >= 0.4"}
    )
    for name, source in TEST_FILES.items():
        project.tests(source, name=name)


def comparable(artifact: dict[str, Any]) -> dict[str, Any]:
    """The artifact without what legitimately differs between two runs: time, latency, the
    artifact's own path, and the order gates ran in (workers interleave them)."""
    queries = [{k: v for k, v in q.items() if k != "latency_ms"} for q in artifact["queries"]]
    settings = {k: v for k, v in artifact["settings"].items() if k != "json"}
    gates = sorted(artifact["gates"], key=lambda g: (g["nodeid"], g["name"]))
    dropped = {"created", "latency_ms", "queries", "settings", "gates"}
    rest = {k: v for k, v in artifact.items() if k not in dropped}
    return {**rest, "queries": queries, "settings": settings, "gates": gates}


def test_n2_calls_the_retriever_once_per_query_and_writes_the_n0_artifact(
    retrieval_project: RetrievalProject,
) -> None:
    write(retrieval_project)
    serial = retrieval_project.run("-n", "0", "--retrieval-json", "serial.json")
    serial.assert_outcomes(passed=9)
    assert serial.ret == pytest.ExitCode.TESTS_FAILED  # the fax query failed
    serial_calls = retrieval_project.calls()
    (retrieval_project.path / "calls.log").unlink()

    parallel = retrieval_project.run_subprocess("-n", "2", "--retrieval-json", "parallel.json")
    parallel.assert_outcomes(passed=9)
    assert parallel.ret == pytest.ExitCode.TESTS_FAILED
    parallel.stdout.fnmatch_lines(["created: 2/2 workers*"])

    # 4 scorable queries (the held-out one is sealed): one call each, in each mode.
    scorable = [
        "How long is the refund window?",
        "How do I set up SSO with Okta?",
        "Where do I download invoices?",
        "Can I send invoices by fax?",
    ]
    assert sorted(serial_calls) == sorted(scorable)
    assert sorted(retrieval_project.calls()) == sorted(scorable)

    one = retrieval_project.artifact("serial.json")
    two = retrieval_project.artifact("parallel.json")
    assert two["results"] == one["results"]
    assert [(q["id"], q["rankings"], q["metrics"]) for q in two["queries"]] == [
        (q["id"], q["rankings"], q["metrics"]) for q in one["queries"]
    ]
    assert comparable(two) == comparable(one)
    # Hand-computed anchors, so that "equal" cannot mean "equally empty": overall recall@3 =
    # (1 + 1 + 0) / 3 over refund, sso, invoice (fax failed but has no relevant document).
    (overall,) = [r for r in two["results"] if r["column"] == "overall"]
    assert overall["metrics"]["recall@3"] == pytest.approx(2 / 3)
    assert two["retriever"]["name"] == "conftest.retriever_under_test.<locals>.search"
    assert two["errors"] == [
        {
            "query_id": "fax",
            "stage": "retriever",
            "type": "RuntimeError",
            "message": "shard 3 offline",
        }
    ]
    # 2 assert_* gates + 3 declared (slice=* gives exact-lookup and multi-hop, plus mrr) + the
    # 2 Score twins compared with a number, merged from the workers like the others.
    assert len(two["gates"]) == 7
    assert sorted(g["nodeid"] for g in two["gates"] if g["kind"] == "score") == [
        "test_scores.py::test_ndcg",
        "test_scores.py::test_precision",
    ]

    # The controller prints the merged section and every gate, once.
    parallel.stdout.fnmatch_lines(
        esc(
            [
                "*= retrieval =*",
                # the compact summary: recall@1 = (0 + 1/2 + 0) / 3, recall@3 = 2/3
                "recall * 0.1667 * 0.6667",
                "*",
                "1 query failed (they score 0 and fail the session):",
                "  fax [retriever] RuntimeError: shard 3 offline",
                # 4 scorable queries (the held-out one is sealed), fax failed: never "all passed".
                "*= retrieval gates: 7 passed; 1 of 4 queries failed to run =*",
            ]
        )
    )
    gate_lines = [line for line in parallel.outlines if line.startswith("PASS ")]
    assert len(gate_lines) == 7


# --- a CPU-bound retriever: the workers share the queries ----------------------------------------

#: Queries of the CPU-bound project; query i's relevant document d<i> is at rank (i % 7) + 1.
MANY = 240

CPU_CONFTEST = """
import os
import time

import pytest

HERE = os.path.dirname(__file__)


def barrier():
    # On its first call, a process waits (up to 20 s) until a second process has called too:
    # if the workers did not share the queries, the second one would never call, and the
    # first would go on alone after the wait (the test then sees one process in calls.log).
    mark = os.path.join(HERE, f"started-{os.getpid()}")
    if os.path.exists(mark):
        return
    open(mark, "w").close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if len([n for n in os.listdir(HERE) if n.startswith("started-")]) >= 2:
            return
        time.sleep(0.01)


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        if os.environ.get("BARRIER"):
            barrier()
        start = time.thread_time()
        while time.thread_time() - start < 0.003:  # 3 ms of CPU: threads cannot overlap it
            pass
        i = int(text.split()[-1])
        ranking = [f"x{i}-{j}" for j in range(10)]
        ranking[i % 7] = f"d{i}"
        with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {text}\\n")
        return ranking[:k]

    return search
"""


def cpu_golden() -> str:
    rows = [
        json.dumps({"id": f"q{i}", "text": f"question {i}", "relevant": [f"d{i}"]})
        for i in range(MANY)
    ]
    return "\n".join([json.dumps({"version": 1, "name": "cpu"}), *rows]) + "\n"


def test_n2_shares_a_cpu_bound_run_between_workers_with_the_n0_numbers(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = retrieval_project
    (project.path / "golden.jsonl").write_text(cpu_golden(), encoding="utf-8")
    project.write(golden=None, conftest=CPU_CONFTEST, ks="1,3,10")
    ini = (project.path / "pytest.ini").read_text(encoding="utf-8")
    (project.path / "pytest.ini").write_text(ini + "retrieval_golden = golden.jsonl\n")
    for n in range(4):  # several files, so that both workers have tests that need the run
        project.tests(
            f"""
            from pytest_retrieval.gates.gate import assert_mrr, assert_recall_at

            def test_recall_{n}():
                assert_recall_at(3) >= 0.4

            def test_mrr_{n}():
                assert_mrr() >= 0.3
            """,
            name=f"test_cpu_{n}.py",
        )
    log = project.path / "calls.log"

    serial = project.run_subprocess("-n", "0", "--retrieval-json", "serial.json")
    serial.assert_outcomes(passed=8)
    serial_calls = log.read_text(encoding="utf-8").splitlines()
    log.unlink()

    monkeypatch.setenv("BARRIER", "1")
    parallel = project.run_subprocess("-n", "2", "--retrieval-json", "parallel.json")
    parallel.assert_outcomes(passed=8)
    parallel_calls = log.read_text(encoding="utf-8").splitlines()

    texts = sorted(f"question {i}" for i in range(MANY))
    for calls in (serial_calls, parallel_calls):
        assert sorted(line.split(" ", 1)[1] for line in calls) == texts  # once per query
    # Both workers called the retriever: the queries were shared, not run by one of them.
    assert len({line.split(" ", 1)[0] for line in parallel_calls}) == 2

    one, two = project.artifact("serial.json"), project.artifact("parallel.json")
    assert two["results"] == one["results"]
    assert [(q["id"], q["rankings"], q["metrics"]) for q in two["queries"]] == [
        (q["id"], q["rankings"], q["metrics"]) for q in one["queries"]
    ]
    assert [q["id"] for q in two["queries"]] == [f"q{i}" for i in range(MANY)]
    assert two["run"]["cache"]["called"] == MANY
    # By hand: d<i> at rank (i % 7) + 1 (within the top 10), one relevant document per query.
    ranks = [i % 7 + 1 for i in range(MANY)]
    (overall,) = [r for r in two["results"] if r["column"] == "overall"]
    assert overall["metrics"]["mrr@10"] == pytest.approx(sum(1 / r for r in ranks) / MANY)
    assert overall["metrics"]["recall@3"] == pytest.approx(sum(r <= 3 for r in ranks) / MANY)
    assert overall["metrics"]["recall@1"] == pytest.approx(sum(r == 1 for r in ranks) / MANY)


# --- a retriever that kills its worker ----------------------------------------------------------

#: The retriever dies (os._exit, as a crash in a native library would) on the SSO query. With
#: retrieval_batch_size = 1 each of the four scorable queries is a shard of its own.
CRASHING_CONFTEST = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text, k):
            log_call(text)
            if text == "How do I set up SSO with Okta?":
                os._exit(3)
            return RANKINGS[text][:k]
        return search
    """
)


def test_a_retriever_that_kills_its_worker_fails_its_shard_and_the_session_in_seconds(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project
    project.write(conftest=CRASHING_CONFTEST, ini={"retrieval_batch_size": "1"})
    for n in range(3):  # both workers have tests that need the run
        project.tests(
            f"""
            from pytest_retrieval.gates.gate import assert_recall_at

            def test_recall_{n}():
                assert_recall_at(3) >= 0.1
            """,
            name=f"test_crash_{n}.py",
        )
    # It hung (still running after 400 s): the dead worker, a zombie the controller had not
    # reaped, passed the old liveness test, so its shard was never handed on.
    result = project.pytester.runpytest_subprocess(
        *QUIET_PLUGINS, "-n", "2", "--retrieval-json", "out.json", timeout=60
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (crashed,) = set(re.findall(r"worker '(gw\d)' crashed while running", result.stdout.str()))
    artifact = project.artifact()
    message = (
        f"worker crashed: the xdist worker {crashed} died (os._exit, a fatal signal or a native "
        "crash) while the retriever ran its shard of 1 query; they were not run again (run "
        "without -n to see the crash)"
    )
    assert artifact["errors"] == [
        {"query_id": "sso", "stage": "retriever", "type": "WorkerCrashed", "message": message}
    ]
    # The crashing query was sent to the retriever once: no other worker ran it again.
    assert sorted(project.calls()) == sorted(
        [
            "How long is the refund window?",
            "How do I set up SSO with Okta?",
            "Where do I download invoices?",
            "Can I send invoices by fax?",
        ]
    )
    # The other queries were scored as usual. By hand: refund has recall@3 1 and RR 1/2,
    # invoice 0 and 0, sso failed and scores 0 (fax has no relevant document: skipped), so
    # recall@3 = (1 + 0 + 0) / 3 and MRR = (1/2 + 0 + 0) / 3.
    rows = {q["id"]: q for q in artifact["queries"]}
    assert rows["refund"]["rankings"]["retriever"] == ["shipping", "refund-policy", "contact"]
    assert rows["refund"]["metrics"]["retriever"]["recall@3"] == 1.0
    (overall,) = [r for r in artifact["results"] if r["column"] == "overall"]
    assert overall["metrics"]["recall@3"] == pytest.approx(1 / 3)
    assert overall["metrics"]["mrr@3"] == pytest.approx(1 / 6)
    result.stdout.fnmatch_lines(
        esc(
            [
                "1 query failed (they score 0 and fail the session):",
                "  sso [retriever] WorkerCrashed: worker crashed: "
                f"the xdist worker {crashed} died*",
            ]
        )
    )


# --- the determinism probe: once per session, only with a baseline ------------------------------

PROBED_TESTS = {
    f"test_probe_{n}.py": f"""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_recall_{n}():
            assert_recall_at(3) >= 0.1
    """
    for n in range(3)
}

#: The four scorable queries of the standard golden set (the held-out one is sealed).
SCORABLE = [
    "How long is the refund window?",
    "How do I set up SSO with Okta?",
    "Where do I download invoices?",
    "Can I send invoices by fax?",
]


def test_the_determinism_probe_runs_once_per_session_under_n2(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project
    project.write(ini={"retrieval_baseline": "baseline.json"})
    for name, source in PROBED_TESTS.items():
        project.tests(source, name=name)
    # The three default budgets are declared gates: skipped while the baseline is written.
    project.run("--retrieval-update-baseline").assert_outcomes(passed=3, skipped=3)
    (project.path / "calls.log").unlink()

    result = project.run_subprocess("-n", "2", "--retrieval-json", "out.json")
    result.assert_outcomes(passed=6)
    # Each query once for the run and once for the probe (5 asked, 4 non-held-out queries):
    # every worker that needed the run used to probe it too, calling each query once more.
    assert sorted(project.calls()) == sorted(SCORABLE * 2)
    assert project.artifact()["determinism"] == {
        "queries": ["refund", "sso", "invoice", "fax"],
        "changed": [],
        "stale": [],
        "noisy": False,
    }


def test_without_a_baseline_file_the_probe_never_calls_the_retriever(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project
    # A baseline path set before the first baseline is written: nothing to compare against (the
    # three default budgets fail, saying how to write it).
    project.write(
        ini={"retrieval_baseline": "baseline.json"}, tests=PROBED_TESTS["test_probe_0.py"]
    )
    result = project.run("--retrieval-json", "out.json")
    result.assert_outcomes(passed=1, failed=3)
    assert sorted(project.calls()) == sorted(SCORABLE)  # once each: no probe
    assert project.artifact()["determinism"] is None


def test_a_several_run_baseline_under_n2_makes_its_extra_runs_once(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project
    project.write(ini={"retrieval_baseline": "baseline.json"})
    for name, source in PROBED_TESTS.items():
        project.tests(source, name=name)
    result = project.run_subprocess(
        "-n", "2", "--retrieval-update-baseline", "--retrieval-baseline-runs", "3"
    )
    result.assert_outcomes(passed=3, skipped=3)
    # Three runs, each query once per run: every worker that needed the run used to make the
    # two extra runs itself (five calls a query under -n 2).
    assert sorted(project.calls()) == sorted(SCORABLE * 3)
    document = json.loads((project.path / "baseline.json").read_text(encoding="utf-8"))
    assert document["n_runs"] == 3
    # A deterministic retriever: refund's RR is 1/2 in each of the three runs, no spread.
    assert document["queries"]["refund"]["metrics"]["retriever"]["mrr"] == 0.5
    assert document["queries"]["refund"]["spread"]["retriever"]["mrr"] == 0.0


#: Dies (os._exit) on the second call of the refund query: in the first extra run.
DIES_IN_AN_EXTRA_RUN = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text, k):
            log_call(text)
            if text == "How long is the refund window?" and CALLS_OF(text) == 2:
                os._exit(3)
            return RANKINGS[text][:k]
        return search


    def CALLS_OF(text):
        with open(CALLS, encoding="utf-8") as log:
            return sum(1 for line in log if line.rstrip("\\n") == text)
    """
)


def test_a_several_run_baseline_whose_extra_runs_died_with_their_worker_is_not_written(
    retrieval_project: RetrievalProject,
) -> None:
    project = retrieval_project
    project.write(ini={"retrieval_baseline": "baseline.json"}, conftest=DIES_IN_AN_EXTRA_RUN)
    for name, source in PROBED_TESTS.items():
        project.tests(source, name=name)
    result = project.pytester.runpytest_subprocess(
        *QUIET_PLUGINS,
        "-n",
        "2",
        "--retrieval-update-baseline",
        "--retrieval-baseline-runs",
        "3",
        timeout=60,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # The main run reached the controller, the extra runs died with the worker making them: a
    # baseline of one run must not be written as the mean of three.
    assert not (project.path / "baseline.json").exists()
    flat = " ".join(result.stdout.str().split())
    assert (
        f"baseline not written to {project.path / 'baseline.json'}: 3 runs were asked for "
        "(--retrieval-baseline-runs) and only the first reached the controller (the xdist "
        "worker that made the others died); run it again"
    ) in flat


def test_n2_writes_the_regression_checks_in_the_serial_order_the_budgets_were_declared(
    pytester: pytest.Pytester,
) -> None:
    project = RetrievalProject(pytester)
    # Declared recall@3, mrr, hit_rate@1: not the names' alphabetical order.
    project.write(
        golden=golden(),
        conftest=BASELINE_CONFTEST,
        ini={
            "retrieval_baseline": BASELINE,
            "retrieval_regression": "recall@3 0.05\nmrr 0.02\nhit_rate@1 0.1",
        },
    )
    # Two test files, so that both workers run a budget.
    project.tests("def test_a(retrieval_run):\n    pass\n", name="test_a.py")
    project.tests("def test_b(retrieval_run):\n    pass\n", name="test_b.py")
    updated = project.run_subprocess("--retrieval-update-baseline")
    assert updated.ret == pytest.ExitCode.OK
    # q01..q06: their document drops from rank 1 to rank 2 (mrr and hit_rate@1 fall).
    (project.path / "rankings.json").write_text(
        json.dumps({f"{n:02d}": ["filler-a", f"doc-{n:02d}"] for n in range(1, 7)}), "utf-8"
    )
    serial = project.run_subprocess("-n", "0", "--retrieval-json", "serial.json")
    parallel = project.run_xdist("--retrieval-json", "parallel.json")
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    one, two = project.artifact("serial.json"), project.artifact("parallel.json")
    names = ["recall@3[budget=0.05]", "mrr[budget=0.02]", "hit_rate@1[budget=0.1]"]
    assert [r["name"] for r in one["regressions"]] == names
    assert json.dumps(one["regressions"]) == json.dumps(two["regressions"])
    assert comparable(one) == comparable(two)
