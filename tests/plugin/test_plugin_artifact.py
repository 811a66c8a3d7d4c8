"""The JSON artifact (``--retrieval-json PATH``): its documented schema and its numbers.

The schema is ``pytest_retrieval/artifact.schema.json`` (JSON Schema draft 2020-12, shipped as
package data). Numbers are hand-computed from the standard project (see plugin_helpers).
"""

from __future__ import annotations

import dataclasses
import json
from importlib.resources import files
from typing import Any

import jsonschema
import pytest
from plugin_helpers import CONFTEST, HELDOUT_ID, RetrievalProject, conftest_with

from pytest_retrieval.formats.golden_io import load_golden
from pytest_retrieval.settings.resolve import Settings


def load_schema() -> dict[str, Any]:
    text = files("pytest_retrieval").joinpath("artifact.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_errors(document: object) -> list[str]:
    validator = jsonschema.Draft202012Validator(load_schema())
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


GATES = """
from pytest_retrieval.gates.gate import assert_mrr, assert_recall_at

def test_overall():
    assert_recall_at(3) >= 0.6

def test_failing():
    assert_mrr(stage="retriever") >= 0.9

def test_heldout():
    assert_recall_at(3, split="heldout") >= 0.5
"""

# Everything an artifact can hold at once: two stages, a failed query, code and declared gates
# (one failing), the held-out split unsealed (a held-out column, a redacted row).
RICH_CONFTEST = conftest_with(
    """
    @pytest.fixture(scope="session")
    def retriever_under_test():
        def search(text):
            if text == "Where do I download invoices?":
                raise ConnectionError("vector store unreachable")
            return RANKINGS[text]
        return search

    @pytest.fixture(scope="session")
    def reranker_under_test():
        return lambda query, candidates: list(reversed(candidates))
    """
)


@pytest.mark.parametrize(
    ("conftest", "args", "stages"),
    [
        (CONFTEST, (), ["retriever"]),
        (RICH_CONFTEST, ("--retrieval-heldout",), ["retriever", "reranker"]),
    ],
    ids=["sealed, one stage", "unsealed, two stages, a failed query"],
)
def test_the_artifact_validates_against_its_documented_schema(
    retrieval_project: RetrievalProject,
    monkeypatch: pytest.MonkeyPatch,
    conftest: str,
    args: tuple[str, ...],
    stages: list[str],
) -> None:
    monkeypatch.setenv("CI", "true")
    retrieval_project.write(
        conftest=conftest,
        ini={"retrieval_thresholds": "ndcg@3 >= 0.3 slice=*"},
        tests=GATES,
    )
    retrieval_project.run("--retrieval-json", "out.json", *args)
    artifact = retrieval_project.artifact()
    assert schema_errors(artifact) == []
    assert artifact["stages"] == stages
    # Every part the schema allows to be empty is filled in at least one of the two cases.
    assert artifact["gates"]
    assert artifact["results"]
    assert artifact["queries"]


def test_the_schema_is_shipped_and_is_a_valid_draft_2020_12_schema() -> None:
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_schema_rejects_what_the_plugin_must_not_write(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(tests="def test_run(retrieval_run): pass")
    retrieval_project.run("--retrieval-json", "out.json")
    artifact = retrieval_project.artifact()
    assert schema_errors(artifact) == []

    extra = {**artifact, "unexpected": 1}
    assert schema_errors(extra) == [
        "$: Additional properties are not allowed ('unexpected' was unexpected)"
    ]
    missing = {k: v for k, v in artifact.items() if k != "results"}
    assert schema_errors(missing) == ["$: 'results' is a required property"]
    bad_value = json.loads(json.dumps(artifact))
    bad_value["results"][0]["metrics"]["recall@3"] = 1.5
    assert schema_errors(bad_value) == [
        "$.results[0].metrics['recall@3']: 1.5 is greater than the maximum of 1"
    ]
    bad_row = json.loads(json.dumps(artifact))
    bad_row["queries"][0]["rankings"]["retriever"] = [12]
    assert schema_errors(bad_row) == [
        "$.queries[0].rankings.retriever[0]: 12 is not of type 'string'"
    ]


def test_the_schema_lists_every_setting() -> None:
    # The artifact records every resolved setting; a new setting must be added to the schema.
    documented = load_schema()["$defs"]["settings"]["properties"]
    assert set(documented) == {f.name for f in dataclasses.fields(Settings)}


def test_the_artifact_holds_the_hand_computed_numbers(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            def search(text):  # ignores k: the artifact cuts rankings at the largest K
                return RANKINGS[text]
            return search
        """
    )
    retrieval_project.write(
        conftest=conftest,
        ks="1,2",
        ini={"retrieval_metrics": "recall,mrr", "retrieval_thresholds": "recall@2 >= 0.5"},
        tests="""
        from pytest_retrieval.gates.gate import assert_mrr

        def test_mrr():
            assert_mrr() >= 0.5
        """,
    )
    retrieval_project.run("--retrieval-json", "out.json").assert_outcomes(passed=2)
    artifact = retrieval_project.artifact()
    golden = load_golden(retrieval_project.path / "golden.yaml")

    assert artifact["schema"] == "pytest-retrieval/artifact"
    assert artifact["schema_version"] == 1
    assert artifact["golden"] == {
        "path": str(retrieval_project.path / "golden.yaml"),
        "name": "help-centre",
        "corpus_version": None,
        "fingerprint": golden.fingerprint,
        "queries": 5,
        "splits": {"heldout": 1, "tune": 4},
        "slices": {"exact-lookup": 2, "multi-hop": 1, "no-answer": 1},
        "no_answer": 1,
        # refund 1, sso 2, invoice 2, fax 0, the held-out query 1.
        "judgments": 6,
        "machine_judgments": 0,
    }
    assert artifact["retriever"] == {
        "name": "conftest.retriever_under_test.<locals>.search",
        # search(text) takes no cutoff: the artifact says how it would get the depth.
        "depth_hint": "give it a k parameter, search(query_text, k), and it is called with k=2",
        "index_version": None,
    }
    assert artifact["settings"]["ks"] == [1, 2]
    assert artifact["settings"]["json"] == str(retrieval_project.path / "out.json")

    results = {r["column"]: r for r in artifact["results"]}
    assert list(results) == ["overall", "exact-lookup", "multi-hop", "no-answer"]
    # overall: recall@1 (0 + 1/2 + 0) / 3, recall@2 (1 + 1/2 + 0) / 3 (sso-setup is at rank 3),
    # mrr@1 (0 + 1 + 0) / 3, mrr@2 (1/2 + 1 + 0) / 3
    overall = results["overall"]
    assert overall["stage"] == "retriever"
    assert (overall["split"], overall["slice"]) == (None, None)
    assert (overall["queries"], overall["evaluated"], overall["skipped_no_relevant"]) == (4, 3, 1)
    assert overall["metrics"] == pytest.approx(
        {"recall@1": 1 / 6, "recall@2": 0.5, "mrr@1": 1 / 3, "mrr@2": 0.5}
    )
    # exact-lookup: refund and invoice; recall@2 = (1 + 0) / 2, mrr@2 = (1/2 + 0) / 2
    assert results["exact-lookup"]["metrics"] == pytest.approx(
        {"recall@1": 0.0, "recall@2": 0.5, "mrr@1": 0.0, "mrr@2": 0.25}
    )
    assert results["exact-lookup"]["slice"] == "exact-lookup"
    # no-answer: fax only, skipped: no value at all
    assert results["no-answer"]["metrics"] == {
        "recall@1": None,
        "recall@2": None,
        "mrr@1": None,
        "mrr@2": None,
    }
    assert (results["no-answer"]["evaluated"], results["no-answer"]["skipped_no_relevant"]) == (
        0,
        1,
    )

    rows = {q["id"]: q for q in artifact["queries"]}
    assert list(rows) == ["refund", "sso", "invoice", "fax"]
    assert rows["refund"]["text"] == "How long is the refund window?"
    assert rows["refund"]["split"] == "tune"
    assert rows["refund"]["slices"] == ["exact-lookup"]
    assert rows["refund"]["rankings"] == {"retriever": ["shipping", "refund-policy"]}
    assert rows["refund"]["metrics"] == {
        "retriever": {"recall@1": 0.0, "recall@2": 1.0, "mrr@1": 0.0, "mrr@2": 0.5}
    }
    assert rows["sso"]["metrics"]["retriever"]["recall@2"] == pytest.approx(0.5)
    assert rows["fax"]["metrics"] == {
        "retriever": {"recall@1": None, "recall@2": None, "mrr@1": None, "mrr@2": None}
    }
    assert set(rows["refund"]["latency_ms"]) == {"retriever"}
    assert rows["refund"]["error"] is None
    assert artifact["errors"] == []
    assert set(artifact["latency_ms"]) == {"retriever"}
    assert artifact["redacted_queries"] == 0

    gates = {g["nodeid"]: g for g in artifact["gates"]}
    assert gates["test_retrieval.py::test_mrr"] == {
        "name": "mrr>=0.5",
        "metric": "mrr",
        "op": ">=",
        "threshold": 0.5,
        "value": 0.5,  # (1/2 + 1 + 0) / 3
        "passed": True,
        "stage": "retriever",
        "split": None,
        "slice": None,
        "n": 3,
        "skipped": 1,
        "kind": "assert",
        "nodeid": "test_retrieval.py::test_mrr",
        "message": "mrr >= 0.5 holds: 0.5000 (95% CI [0.0000, 1.0000]) "
        "[stage=retriever split=overall]",
        "skipped_reason": None,
        # Percentile bootstrap of the values (1/2, 1, 0): a resample of three zeros has
        # probability 1/27 = 3.7% > 2.5%, and so has one of three ones, so the 95% interval
        # runs from 0 to 1.
        "ci": [0.0, 1.0],
    }
    declared = gates["pytest.ini::recall_at_2_ge_0.5"]
    assert declared["kind"] == "threshold"
    assert declared["value"] == pytest.approx(0.5)
    assert artifact["declared"]["thresholds"] == ["recall@2 >= 0.5"]


def test_failed_queries_are_listed_as_errors(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(conftest=RICH_CONFTEST, tests="def test_run(retrieval_run): pass")
    retrieval_project.run("--retrieval-json", "out.json")
    artifact = retrieval_project.artifact()
    error = {
        "stage": "retriever",
        "type": "ConnectionError",
        "message": "vector store unreachable",
    }
    assert artifact["errors"] == [{"query_id": "invoice", **error}]
    (row,) = [q for q in artifact["queries"] if q["id"] == "invoice"]
    assert row["error"] == error
    # A query that failed at the retriever has no ranking and is not reranked: 0 everywhere.
    assert row["rankings"] == {}
    assert row["metrics"]["reranker"]["recall@3"] == 0.0
    assert HELDOUT_ID not in json.dumps(artifact)


def test_an_unwritable_artifact_path_is_a_usage_error_before_the_retriever_runs(
    retrieval_project: RetrievalProject,
) -> None:
    (retrieval_project.path / "out.json").mkdir()
    retrieval_project.write(tests="def test_run(retrieval_run): pass")
    result = retrieval_project.run("--retrieval-json", "out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: */out.json: cannot write the JSON artifact: the path is a directory (name a file)"]
    )
    assert retrieval_project.calls() == []


def test_the_schema_names_every_metric_of_the_metric_table_and_every_gate_operator() -> None:
    """The schema's metric names and gate operators follow the one metric table and the one
    operator table: a metric or an operator added there and not here would make every artifact
    that uses it invalid (forbidden@K, stale@K and ``==`` once were)."""
    import re

    from pytest_retrieval.gates.gate import OPS
    from pytest_retrieval.scoring.metrics import METRICS

    schema = load_schema()
    pattern = re.compile(schema["$defs"]["metric_name"]["pattern"])
    for metric in METRICS:
        spelling = f"{metric.name}@10" if metric.takes_cutoff else metric.name
        assert pattern.search(spelling), spelling
    assert not pattern.search("unknown@10")
    gate = schema["$defs"]["gate"]["properties"]["op"]["enum"]
    assert sorted(gate) == sorted(OPS)
