"""Builders for the baseline tests: a 12-query pytester project, hand-made snapshots, and
artifacts shaped like ``report.build_artifact``'s.

The project has 12 queries, q01 .. q12, each with one relevant document doc-01 .. doc-12. The
retriever ranks it first unless ``rankings.json`` (number -> ranking) says otherwise, so the
baseline run has MRR 1 on every query and a test degrades chosen queries by writing that file.
The one budget is ``mrr 0.02``; every run writes its JSON artifact to ``out.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from plugin_helpers import RetrievalProject

# numpy (through stats) must be imported before any in-process run: pytester restores
# sys.modules after a run, and numpy's C core cannot be loaded twice in one process.
import pytest_retrieval.scoring.stats  # noqa: F401
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot
from pytest_retrieval.report.artifact import ARTIFACT_SCHEMA_VERSION

BASELINE = "retrieval-baseline.json"


def golden(count: int = 12, relabel: dict[str, str] | None = None) -> str:
    relabel = relabel or {}
    lines = ["version: 1", "queries:"]
    for n in range(1, count + 1):
        number = f"{n:02d}"
        lines += [
            f"  - id: q{number}",
            f"    text: question {number}",
            f"    relevant: [{relabel.get(number, f'doc-{number}')}]",
        ]
    return "\n".join(lines) + "\n"


CONFTEST = """\
import json
import os

import pytest

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="session")
def retriever_under_test():
    path = os.path.join(HERE, "rankings.json")
    overrides = json.load(open(path)) if os.path.exists(path) else {}

    def search(text, k):
        number = text.split()[-1]
        return overrides.get(number, [f"doc-{number}", "filler-a", "filler-b"])[:k]

    return search
"""


class Project(RetrievalProject):
    """The 12-query project (module docstring), with its baseline and its artifact."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        super().__init__(pytester)
        self.baseline = self.path / BASELINE

    def write(  # type: ignore[override]  # this project's own files, not the standard set
        self, *, queries: str | None = None, conftest: str = CONFTEST
    ) -> Project:
        super().write(
            golden=queries or golden(),
            ini={
                "retrieval_metrics": "mrr,recall",
                "retrieval_baseline": BASELINE,
                "retrieval_regression": "mrr 0.02",
                "retrieval_json": "out.json",
            },
            conftest=conftest,
        )
        return self

    def rank(self, rankings: dict[str, list[str]]) -> None:
        """From now on the retriever answers these numbers with these rankings."""
        (self.path / "rankings.json").write_text(json.dumps(rankings), encoding="utf-8")

    def update(self) -> pytest.RunResult:
        result = self.run("--retrieval-update-baseline")
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        return result

    def document(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.baseline.read_text(encoding="utf-8"))
        return data

    def regression(self) -> dict[str, Any]:
        """The one regression outcome recorded in the last run's JSON artifact."""
        artifact = json.loads((self.path / "out.json").read_text(encoding="utf-8"))
        (outcome,) = artifact["regressions"]
        assert isinstance(outcome, dict)
        return outcome

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in self.path.iterdir() if p.name.endswith(".tmp"))


# --- hand-made snapshots and artifacts ---------------------------------------------------------

STAGE = "retriever"


def query(
    values: float | Mapping[str, float | None],
    *,
    split: str = "tune",
    slices: Sequence[str] = (),
    labels: str = "labels-v1",
    ranks: Mapping[str, int | None] | None = None,
) -> QuerySnapshot:
    """One query of a snapshot; a bare number is its ndcg@10."""
    metrics = dict(values) if isinstance(values, Mapping) else {"ndcg@10": values}
    return QuerySnapshot(
        split=split,
        slices=tuple(slices),
        labels=labels,
        metrics={STAGE: metrics},
        relevant_ranks={STAGE: dict(ranks or {})},
        top={STAGE: ()},
    )


def snapshot(
    queries: Mapping[str, QuerySnapshot] | Sequence[float],
    *,
    fingerprint: str = "fp-1",
    settings: Mapping[str, Any] | None = None,
    metrics: Sequence[str] = ("ndcg@10",),
    heldout: Mapping[str, Any] | None = None,
) -> Snapshot:
    """A snapshot; a list of numbers becomes queries q1, q2, ... with those ndcg@10 values."""
    if not isinstance(queries, Mapping):
        queries = {f"q{i}": query(v) for i, v in enumerate(queries, start=1)}
    return Snapshot(
        fingerprint=fingerprint,
        settings=dict(settings or {"gain": "exponential"}),
        stages=(STAGE,),
        metrics=tuple(metrics),
        queries=dict(queries),
        heldout=dict(heldout or {}),
        plugin_version="0.0-test",
        created="2026-01-01T00:00:00Z",
    )


def artifact(
    run: Snapshot,
    *,
    thresholds: Sequence[str] = (),
    regressions: Sequence[str] = (),
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A JSON artifact of ``run`` with the keys ``report.build_artifact`` writes (the parts the
    offline CLI does not read are empty)."""
    return {
        "schema": "pytest-retrieval/artifact",
        "schema_version": ARTIFACT_SCHEMA_VERSION,
        "plugin_version": "0.0-test",
        "created": "2026-01-01T00:00:00Z",
        "settings": {
            "ks": [5, 10],
            "alpha": 0.05,
            "confidence": 0.95,
            "seed": 0,
            "resamples": 10_000,
            "baseline_mode": "strict",
            "heldout_split": "heldout",
            "worst": 5,
            **(settings or {}),
        },
        "golden": {"fingerprint": run.fingerprint, "queries": len(run.queries)},
        "heldout": {"split": "heldout", "scored": False, "details": False},
        "retriever": {"name": "test"},
        "stages": list(run.stages),
        "results": [],
        "gates": [],
        "errors": [],
        "latency_ms": {},
        "regressions": [],
        "declared": {"thresholds": list(thresholds), "regressions": list(regressions)},
        "queries": [],
        "redacted_queries": 0,
        "snapshot": run.to_dict(),
    }


def write_json(path: Any, document: Mapping[str, Any]) -> str:
    """Write ``document`` to ``path``; return the path as a string."""
    with open(path, "w", encoding="utf-8") as out:
        json.dump(document, out)
    return str(path)
