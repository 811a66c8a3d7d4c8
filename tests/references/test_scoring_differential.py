"""Every scoring path gives the same numbers: a differential property test.

Random golden sets (grades 0-3, queries without any relevant document, queries graded below
``min_grade``), random rankings that repeat ids, duplicate groups, ``min_grade``,
``no_relevant``, the gain and the unjudged convention are drawn, and the same rankings are
scored four ways:

1. a pytest run whose retriever returns the rankings (ids repeated as drawn), its per-query
   values read from the JSON artifact;
2. ``evaluate()`` on the same rankings;
3. ``pytest-retrieval evaluate --json --per-query`` on TREC files (``--duplicates`` for the
   groups);
4. a pytest run gating a run file (``--retrieval-run``, TREC or JSONL).

Run files refuse a repeated id (trec_eval's rule), so paths 3 and 4 get the document ranking
(each id at its first rank) with descending scores; the repeated-id rule says the relevance
metrics are the same, so every path must agree exactly. ``distinct@K`` counts the results as
returned, so paths 1 and 2 agree with each other on it, and paths 3 and 4 with ``evaluate()``
of the document rankings. No expected value comes from a path under test alone: each path is
checked against the others, and ``evaluate()`` against pytrec_eval and hand values elsewhere
(tests/unit/scoring/test_conventions.py, tests/unit/scoring/test_evaluate.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from plugin_helpers import RetrievalProject

from pytest_retrieval.cli import main
from pytest_retrieval.scoring.dedup import DuplicateGroups
from pytest_retrieval.scoring.evaluate import evaluate

DOCS = [f"d{i}" for i in range(8)]
KS = (1, 3, 5)
FAMILIES = ("recall", "precision", "hit_rate", "ndcg", "map", "mrr", "distinct", "judged")
METRICS = [f"{name}@{k}" for name in FAMILIES for k in KS] + ["r_precision"]
DISTINCT = {m for m in METRICS if m.startswith("distinct@")}

#: The retriever of path 1: the drawn rankings, by query text, read when the run starts.
CONFTEST = """\
import json
import pathlib

import pytest

RANKINGS = pathlib.Path(__file__).with_name("rankings.json")


@pytest.fixture(scope="session")
def retriever_under_test():
    rankings = json.loads(RANKINGS.read_text(encoding="utf-8"))

    def search(text, k):
        return rankings[text][:k]

    return search
"""


@dataclass(frozen=True)
class Case:
    judgments: dict[str, dict[str, int]]
    rankings: dict[str, list[str]]
    groups: list[list[str]] | None
    min_grade: int
    no_relevant: str
    gain: str
    unjudged: str
    run_format: str

    def documents(self) -> dict[str, list[str]]:
        """Each ranking with every id at its first rank: what a run file holds."""
        return {qid: list(dict.fromkeys(ranking)) for qid, ranking in self.rankings.items()}


@st.composite
def cases(draw: st.DrawFn) -> Case:
    n = draw(st.integers(min_value=3, max_value=6))
    grades = st.integers(min_value=0, max_value=3)
    judgments = {
        f"q{i}": draw(st.dictionaries(st.sampled_from(DOCS), grades, min_size=1, max_size=4))
        for i in range(n)
    }
    # Sampled with replacement, so ids repeat; the first query ranks something (a run file
    # with no ranked query at all is refused, rightly).
    rankings = {
        qid: draw(st.lists(st.sampled_from(DOCS), min_size=int(qid == "q0"), max_size=9))
        for qid in judgments
    }
    groups = draw(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from(DOCS), min_size=2, max_size=6, unique=True).map(
                lambda docs: [docs[: len(docs) // 2 + 1], docs[len(docs) // 2 + 1 :]]
            ),
        )
    )
    if groups is not None:
        groups = [group for group in groups if len(group) >= 2] or None
    return Case(
        judgments=judgments,
        rankings=rankings,
        groups=groups,
        min_grade=draw(st.integers(min_value=1, max_value=3)),
        no_relevant=draw(st.sampled_from(["skip", "zero", "one"])),
        gain=draw(st.sampled_from(["exponential", "linear"])),
        unjudged=draw(st.sampled_from(["nonrelevant", "skip"])),
        run_format=draw(st.sampled_from(["trec", "jsonl"])),
    )


def text(qid: str) -> str:
    return f"question {qid}"


def write_project(project: RetrievalProject, case: Case) -> None:
    golden = {
        "version": 1,
        "queries": [
            {"id": qid, "text": text(qid), "relevant": judged}
            for qid, judged in case.judgments.items()
        ],
    }
    ini = {
        "retrieval_metrics": ", ".join([*FAMILIES, "r_precision"]),
        "retrieval_gain": case.gain,
        "retrieval_min_grade": str(case.min_grade),
        "retrieval_no_relevant": case.no_relevant,
        "retrieval_unjudged": case.unjudged,
        # Deeper than any drawn ranking: the first call returns it whole, never asked again.
        "retrieval_depth": "20",
        "retrieval_id_check": "off",
    }
    if case.groups is not None:
        ini["retrieval_duplicates"] = "dups.tsv"
        lines = "".join(f"{doc}\tg{n}\n" for n, group in enumerate(case.groups) for doc in group)
        (project.path / "dups.tsv").write_text(lines, encoding="utf-8")
    project.write(
        golden=json.dumps(golden),
        ini=ini,
        conftest=CONFTEST,
        tests="def test_run(retrieval_run):\n    pass\n",
        ks=",".join(map(str, KS)),
    )
    (project.path / "rankings.json").write_text(
        json.dumps({text(qid): ranking for qid, ranking in case.rankings.items()}),
        encoding="utf-8",
    )
    documents = case.documents()
    trec = "".join(
        f"{qid} Q0 {doc} {rank} {len(ranking) - rank + 1} run\n"
        for qid, ranking in documents.items()
        for rank, doc in enumerate(ranking, start=1)
    )
    (project.path / "run.trec").write_text(trec, encoding="utf-8")
    jsonl = "".join(
        json.dumps({"query_id": qid, "ranking": ranking}) + "\n"
        for qid, ranking in documents.items()
    )
    (project.path / "run.jsonl").write_text(jsonl, encoding="utf-8")
    qrels = "".join(
        f"{qid} 0 {doc} {grade}\n"
        for qid, judged in case.judgments.items()
        for doc, grade in judged.items()
    )
    (project.path / "qrels.txt").write_text(qrels, encoding="utf-8")


def pytest_values(project: RetrievalProject, *args: str) -> dict[str, dict[str, Any]]:
    """Per query, the metric values of the JSON artifact of a pytest run."""
    result = project.run("--retrieval-json", "out.json", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    rows = project.artifact()["queries"]
    return {row["id"]: row["metrics"]["retriever"] for row in rows}


def cli_values(
    project: RetrievalProject, case: Case, capsys: pytest.CaptureFixture[str]
) -> dict[str, dict[str, Any]]:
    args = ["evaluate", "--qrels", "qrels.txt", "--run", "run.trec", "--json", "--per-query"]
    args += ["--gain", case.gain, "--min-grade", str(case.min_grade)]
    args += ["--no-relevant", case.no_relevant, "--unjudged", case.unjudged, "--no-id-check"]
    if case.groups is not None:
        args += ["--duplicates", "dups.tsv"]
    capsys.readouterr()  # the pytest runs' output
    assert main([*args, "-m", *METRICS]) == 0
    per_query: dict[str, dict[str, Any]] = json.loads(capsys.readouterr().out)["per_query"]
    return per_query


def relevance(values: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {qid: {m: v for m, v in row.items() if m not in DISTINCT} for qid, row in values.items()}


def distinct(values: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {qid: {m: v for m, v in row.items() if m in DISTINCT} for qid, row in values.items()}


#: The issue's ranking (a, a, c, d), a query graded below min_grade only, one with no
#: relevant document, and a duplicate group, together.
ISSUE = Case(
    judgments={"q0": {"c": 1, "d": 2, "a": 0}, "q1": {"b": 1}, "q2": {"a": 0}},
    rankings={"q0": ["a", "a", "c", "d"], "q1": ["b", "e", "b"], "q2": ["a"]},
    groups=[["c", "e"]],
    min_grade=2,
    no_relevant="zero",
    gain="linear",
    unjudged="nonrelevant",
    run_format="trec",
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # No shrinking: each example is two pytest runs (about half a second), and shrinking a
    # failure took minutes; the failing case (at most six queries) is printed as drawn.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(case=cases())
@example(case=ISSUE)
def test_pytest_evaluate_the_cli_and_run_files_give_identical_numbers(
    retrieval_project: RetrievalProject, capsys: pytest.CaptureFixture[str], case: Case
) -> None:
    write_project(retrieval_project, case)
    groups = DuplicateGroups.from_groups(case.groups) if case.groups is not None else None
    conventions = {
        "gain": case.gain,
        "min_grade": case.min_grade,
        "no_relevant": case.no_relevant,
        "unjudged": case.unjudged,
        "duplicates": groups,
    }
    live = pytest_values(retrieval_project)
    python = evaluate(case.rankings, case.judgments, METRICS, **conventions).per_query  # type: ignore[arg-type]
    documents = evaluate(case.documents(), case.judgments, METRICS, **conventions).per_query  # type: ignore[arg-type]
    stored = pytest_values(retrieval_project, "--retrieval-run", f"run.{case.run_format}")
    command = cli_values(retrieval_project, case, capsys)
    assert set(live) == set(python) == set(stored) == set(command) == set(case.judgments)
    # The relevance metrics: one rule, every path (the artifact holds every metric asked for).
    assert all(set(row) == set(METRICS) for row in live.values()), live
    assert live == {qid: {m: row[m] for m in live[qid]} for qid, row in python.items()}
    assert relevance(python) == relevance(documents) == relevance(command)
    assert relevance(stored) == relevance(python)
    # distinct@K counts the results as returned: repeats under pytest and in evaluate(), the
    # document rankings in the run files.
    assert distinct(live) == distinct(python)
    assert distinct(stored) == distinct(command) == distinct(documents)
