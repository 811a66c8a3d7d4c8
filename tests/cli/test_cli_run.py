"""``pytest-retrieval run``: the retrieval phase outside pytest, into a run file that
``--retrieval-run`` gates with the numbers an in-process run gives, errors and latency kept.

The retriever here is the standard project's (plugin_helpers.RANKINGS), built by a factory in a
module of the test's folder; one query (fax) raises, as in the xdist tests.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import GOLDEN, HELDOUT_ID, RANKINGS, RetrievalProject, conftest_with

from pytest_retrieval.cli import main
from pytest_retrieval.formats.runs import load_run_file

FACTORY = f"""
import time

RANKINGS = {RANKINGS!r}
CALLS = []


def build():
    def search(text, k):
        CALLS.append(text)
        if text == "Can I send invoices by fax?":
            raise RuntimeError("shard 3 offline")
        time.sleep(0.001)
        return RANKINGS[text][:k]

    return search


def build_reranker():
    def rerank(text, candidates):
        return list(reversed(candidates))

    return rerank


def build_nothing_callable():
    return 42
"""

#: The same retriever as a fixture, for the in-process run the run file must agree with.
IN_PROCESS = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text, k):
            if text == "Can I send invoices by fax?":
                raise RuntimeError("shard 3 offline")
            return RANKINGS[text][:k]
        return search
    """
)

#: A conftest whose retriever must never be called (the run file is gated instead).
NEVER = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        raise AssertionError("the retriever was built although a run file is gated")
    """
)

TESTS = """
from pytest_retrieval import assert_recall_at

def test_recall():
    assert_recall_at(3) >= 0.6
"""

SCORABLE_AND_HELDOUT = ["refund", "sso", "invoice", "fax", HELDOUT_ID]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """golden.yaml and a factory module (a unique name: it is imported in this process)."""
    (tmp_path / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    name = f"factory_{abs(hash(str(tmp_path))) % 10**9}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(FACTORY), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # run adds the current folder: undo it
    (tmp_path / "factory.txt").write_text(name, encoding="utf-8")
    return tmp_path


def factory(folder: Path, attribute: str = "build") -> str:
    return f"{(folder / 'factory.txt').read_text(encoding='utf-8')}:{attribute}"


def test_run_writes_every_query_with_its_latency_and_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["run", "golden.yaml", "--retriever", factory(project), "--output", "run.jsonl"])
    captured = capsys.readouterr()
    assert status == 1  # written, and one query failed
    assert "5 queries through local" in captured.out
    assert "1 query failed (fax)" in captured.err
    run = load_run_file(project / "run.jsonl")
    assert list(run.rankings) == SCORABLE_AND_HELDOUT  # golden-set order, held-out included
    assert run.rankings["refund"] == ("shipping", "refund-policy", "contact")
    assert run.rankings[HELDOUT_ID] == ("export-data",)
    assert run.rankings["fax"] == ()
    assert run.errors == {"fax": ("retriever", "RuntimeError", "shard 3 offline")}
    assert sorted(run.latency_ms) == sorted(SCORABLE_AND_HELDOUT)
    assert all(run.latency_ms[q] >= 1.0 for q in ("refund", "sso", "invoice"))  # slept 1 ms


def numbers(artifact: dict[str, Any]) -> list[Any]:
    return [(r["stage"], r["column"], r["metrics"]) for r in artifact["results"]]


def test_the_run_file_gates_with_the_in_process_numbers_and_errors(
    project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)  # pytester moved to its own folder
    main(["run", "golden.yaml", "--retriever", factory(project), "--output", "run.jsonl"])
    monkeypatch.chdir(pytester.path)
    gated = RetrievalProject(pytester)
    gated.write(conftest=NEVER, tests=TESTS, ini={"retrieval_run": str(project / "run.jsonl")})
    stored = gated.run("--retrieval-json", "stored.json")
    stored.assert_outcomes(passed=1)
    assert stored.ret == pytest.ExitCode.TESTS_FAILED  # the fax query failed, as in-process
    stored.stdout.fnmatch_lines(["*fax [[]retriever[]] RuntimeError: shard 3 offline*"])

    live = RetrievalProject(pytester)
    live.write(conftest=IN_PROCESS, tests=TESTS)
    in_process = live.run("--retrieval-json", "live.json")
    in_process.assert_outcomes(passed=1)
    one, two = gated.artifact("stored.json"), live.artifact("live.json")
    assert numbers(one) == numbers(two)
    assert one["errors"] == two["errors"]
    assert [(q["id"], q["rankings"]) for q in one["queries"]] == [
        (q["id"], q["rankings"]) for q in two["queries"]
    ]
    # By hand: recall@3 over refund (1), sso (1) and invoice (0); fax has no relevant document.
    (overall,) = [r for r in one["results"] if r["column"] == "overall"]
    assert overall["metrics"]["recall@3"] == pytest.approx(2 / 3)
    # The latencies are the run file's, not the gating session's.
    assert one["latency_ms"]["retriever"]["p50"] >= 1.0


def test_a_reranked_run_writes_the_final_and_the_candidate_rankings(project: Path) -> None:
    status = main(
        [
            "run", "golden.yaml", "--retriever", factory(project),
            "--reranker", factory(project, "build_reranker"),
            "--output", "final.jsonl", "--retriever-output", "candidates.jsonl",
        ]
    )  # fmt: skip
    assert status == 1
    final, candidates = load_run_file("final.jsonl"), load_run_file("candidates.jsonl")
    assert candidates.rankings["sso"] == ("okta", "mfa", "sso-setup")
    assert final.rankings["sso"] == ("sso-setup", "mfa", "okta")  # reversed by the reranker
    assert (
        final.errors
        == candidates.errors
        == {"fax": ("retriever", "RuntimeError", "shard 3 offline")}
    )
    # fax failed in the retriever: it never reached the reranker, so it has no reranker latency.
    assert sorted(candidates.latency_ms) == sorted(SCORABLE_AND_HELDOUT)
    assert sorted(final.latency_ms) == sorted(q for q in SCORABLE_AND_HELDOUT if q != "fax")
    assert final.rankings["fax"] == candidates.rankings["fax"] == ()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--output", "run.trec"], "--output run.trec: the run file is written as JSONL"),
        (
            ["--output", "run.jsonl", "--ray-address", "auto"],
            "--ray-address: --ray-address names a Ray cluster, and the executor is local",
        ),
        (
            ["--output", "run.jsonl", "--retriever-output", "c.jsonl"],
            "--retriever-output: --retriever-output keeps the candidates of a reranked run",
        ),
        (["--output", "run.jsonl", "--batch-size", "0"], "'0' is not a positive integer"),
        (
            ["--output", "run.jsonl", "--timeout", "soon"],
            "argument --timeout: 'soon' is not a number",
        ),
    ],
)
def test_usage_errors_are_one_line_and_write_nothing(
    project: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    status = main(["run", "golden.yaml", "--retriever", factory(project), *extra])
    err = capsys.readouterr().err
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not list(project.glob("*.jsonl"))
    assert not list(project.glob("*.trec"))


def test_a_factory_that_cannot_be_imported_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["run", "golden.yaml", "--retriever", "nowhere:build", "--output", "r.jsonl"])
    assert status == 2
    assert "--retriever = 'nowhere:build': cannot import 'nowhere'" in capsys.readouterr().err


def test_a_factory_whose_object_cannot_be_called_names_the_factory_not_a_fixture(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = factory(project, "build_nothing_callable")
    status = main(["run", "golden.yaml", "--retriever", spec, "--output", "r.jsonl"])
    assert status == 2
    err = capsys.readouterr().err
    assert (
        "the retriever under test is a int, which is neither callable nor has an "
        "invoke/retrieve/search/retrieve_batch/batch method; return a function "
        "`retrieve(query_text) -> ranked ids` from your --retriever factory"
    ) in err
    assert "fixture" not in err


def test_the_ray_executor_without_ray_says_how_to_install_it(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    status = main(
        ["run", "golden.yaml", "--retriever", factory(project), "--output", "r.jsonl",
         "--executor", "ray"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2
    assert "--executor ray needs Ray, which is not installed" in err
    assert "pip install 'pytest-retrieval[ray]'" in err
    assert not (project / "r.jsonl").exists()


def test_a_run_file_with_a_malformed_latency_or_error_names_the_line(tmp_path: Path) -> None:
    from pytest_retrieval.errors import RunFileError

    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"query_id": "a", "ranking": ["d"], "latency_ms": -1}\n'
        '{"query_id": "b", "ranking": [], "error": "boom"}\n',
        encoding="utf-8",
    )
    with pytest.raises(RunFileError) as caught:
        load_run_file(path)
    text = str(caught.value)
    assert "run.jsonl:1: query 'a': latency_ms -1 is not a number of milliseconds" in text
    assert (
        """run.jsonl:2: query 'b': error "boom" is not an object with a "message" string""" in text
    )
