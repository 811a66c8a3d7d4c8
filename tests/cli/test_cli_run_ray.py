"""``pytest-retrieval run --executor ray`` on a local Ray instance: the same run file as the local
executor (rankings, scores, errors, order), each query's latency kept, then gated by
``--retrieval-run`` with the hand-computed numbers.

Ray runs in a child process (started with ``ray.init(num_cpus=2, include_dashboard=False)``,
no network), so its start-up and its threads stay out of the rest of the suite. The test extra
installs Ray; this module is skipped only where Ray cannot be installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from plugin_helpers import GOLDEN, HELDOUT_ID, RANKINGS, RetrievalProject, conftest_with

from pytest_retrieval.cli import main
from pytest_retrieval.formats.runs import load_run_file

pytest.importorskip("ray", reason="Ray is not installed (pip install 'pytest-retrieval[ray]')")

FACTORY = f"""
import os

RANKINGS = {RANKINGS!r}


def build():
    # Built once per actor: each build leaves a mark, so the test counts them.
    open(os.path.join(os.environ["MARKS"], f"built-{{os.getpid()}}"), "a").close()

    def search(text, k):
        if text == "Can I send invoices by fax?":
            raise RuntimeError("shard 3 offline")
        return [(doc, 1.0 / (rank + 1)) for rank, doc in enumerate(RANKINGS[text][:k])]

    return search
"""

DRIVER = """
import sys

import ray

ray.init(num_cpus=2, include_dashboard=False)
from pytest_retrieval.cli import main

sys.exit(main(sys.argv[1:]))
"""

NEVER = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        raise AssertionError("the retriever was built although a run file is gated")
    """
)


def python_path(folder: Path) -> str:
    """``folder`` first, then the PYTHONPATH the suite runs with: the driver must import the
    pytest_retrieval under test (a worktree's), not whichever one is installed."""
    return os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)


def test_the_ray_executor_writes_the_local_run_file_and_it_gates(
    tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    (tmp_path / "ray_factory.py").write_text(textwrap.dedent(FACTORY), encoding="utf-8")
    (tmp_path / "driver.py").write_text(textwrap.dedent(DRIVER), encoding="utf-8")
    marks = tmp_path / "marks"
    marks.mkdir()
    common = ["run", "golden.yaml", "--retriever", "ray_factory:build", "--batch-size", "2"]
    env = {
        **os.environ,
        "MARKS": str(marks),
        "PYTHONPATH": python_path(tmp_path),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    child = subprocess.run(
        [sys.executable, "driver.py", *common, "--output", "ray.jsonl", "--executor", "ray",
         "--concurrency", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert child.returncode == 1, child.stderr[-3000:]  # written; the fax query failed
    assert "5 queries through ray" in child.stdout
    # At most two actors, each built the retriever once (not once per batch: 3 batches of 2
    # queries). Under load Ray may hand every batch to the first actor before the second has
    # started, so one build is as right as two; three would mean a build per batch.
    assert 1 <= len(list(marks.iterdir())) <= 2

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MARKS", str(marks))
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main([*common, "--output", "local.jsonl"]) == 1

    ray_run, local = load_run_file(tmp_path / "ray.jsonl"), load_run_file(tmp_path / "local.jsonl")
    assert (
        list(ray_run.rankings)
        == list(local.rankings)
        == ["refund", "sso", "invoice", "fax", HELDOUT_ID]
    )
    assert ray_run.rankings == local.rankings
    assert ray_run.scores == local.scores
    assert ray_run.scores["sso"] == (1.0, 0.5, 1 / 3)
    assert (
        ray_run.errors == local.errors == {"fax": ("retriever", "RuntimeError", "shard 3 offline")}
    )
    assert sorted(ray_run.latency_ms) == sorted(local.latency_ms) == sorted(local.rankings)

    monkeypatch.chdir(pytester.path)
    project = RetrievalProject(pytester)
    project.write(
        conftest=NEVER,
        ini={"retrieval_run": str(tmp_path / "ray.jsonl")},
        tests="from pytest_retrieval import assert_recall_at, assert_mrr\n\n"
        "def test_gates():\n    assert_recall_at(3) >= 0.6\n    assert_mrr() >= 0.5\n",
    )
    gated = project.run("--retrieval-json", "out.json")
    gated.assert_outcomes(passed=1)
    assert gated.ret == pytest.ExitCode.TESTS_FAILED  # the recorded error fails the session
    artifact = project.artifact()
    (overall,) = [r for r in artifact["results"] if r["column"] == "overall"]
    # By hand over refund, sso, invoice (fax has no relevant document, held-out is sealed):
    # recall@3 (1 + 1 + 0) / 3; MRR@3 (1/2 + 1 + 0) / 3.
    assert overall["metrics"]["recall@3"] == pytest.approx(2 / 3)
    assert overall["metrics"]["mrr@3"] == pytest.approx(0.5)
    assert artifact["errors"] == [
        {
            "query_id": "fax",
            "stage": "retriever",
            "type": "RuntimeError",
            "message": "shard 3 offline",
        }
    ]
    assert artifact["run"]["source"] == "run files"


SCOPED_GOLDEN = """\
version: 1
queries:
  - id: acme-refund
    text: How long is the refund window?
    relevant: [acme-refund-policy]
    context: {tenant: acme}
  - id: globex-refund
    text: How long is the refund window?
    relevant: [globex-refund-policy]
    context: {tenant: globex, groups: [billing]}
  - id: public
    text: Where is the status page?
    relevant: [status]
"""

SCOPED_FACTORY = """
def build():
    def search(text, k, tenant=None):
        if tenant is None:
            return ["status"]
        return [f"{tenant}-refund-policy", f"{tenant}-faq"][:k]

    return search
"""


def test_the_ray_executor_hands_each_query_its_context_as_the_local_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "golden.yaml").write_text(SCOPED_GOLDEN, encoding="utf-8")
    (tmp_path / "scoped_factory.py").write_text(textwrap.dedent(SCOPED_FACTORY), encoding="utf-8")
    (tmp_path / "driver.py").write_text(textwrap.dedent(DRIVER), encoding="utf-8")
    common = ["run", "golden.yaml", "--retriever", "scoped_factory:build", "--batch-size", "2"]
    env = {**os.environ, "PYTHONPATH": python_path(tmp_path), "RAY_USAGE_STATS_ENABLED": "0"}
    child = subprocess.run(
        [sys.executable, "driver.py", *common, "--output", "ray.jsonl", "--executor", "ray",
         "--concurrency", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-3000:]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main([*common, "--output", "local.jsonl"]) == 0
    ray_run, local = load_run_file(tmp_path / "ray.jsonl"), load_run_file(tmp_path / "local.jsonl")
    # Each actor's batch is planned for every context key of the golden set (tenant, groups):
    # the query without a context in a batch of its own is still called without a tenant.
    assert (
        ray_run.rankings
        == local.rankings
        == {
            "acme-refund": ("acme-refund-policy", "acme-faq"),
            "globex-refund": ("globex-refund-policy", "globex-faq"),
            "public": ("status",),
        }
    )
    assert ray_run.contexts == local.contexts
    assert sorted(ray_run.contexts) == ["acme-refund", "globex-refund"]
