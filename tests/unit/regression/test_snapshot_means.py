"""The snapshot's readable means (``means_by_column``) against a plain per-query, per-metric
reading: rows lacking a stage or a metric, None values, queries in no slice or in several,
and one metric or thirty; the same bits, since the values are summed in the same order."""

from __future__ import annotations

import random

import pytest

from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot

NAMES = [f"{m}@{k}" for m in ("recall", "precision", "ndcg") for k in (1, 5, 10)]
STAGES = ("retriever", "reranker")


def plain_means(snapshot: Snapshot) -> dict[str, dict[str, dict[str, float | None]]]:
    labels: dict[str, list[QuerySnapshot]] = {"overall": list(snapshot.queries.values())}
    for q in snapshot.queries.values():
        for name in q.slices:
            labels.setdefault(f"slice:{name}", []).append(q)
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for stage in snapshot.stages:
        out[stage] = {}
        for label, members in labels.items():
            means: dict[str, float | None] = {}
            for metric in snapshot.metrics:
                values = []
                for q in members:
                    value = q.metrics.get(stage, {}).get(metric)
                    if value is not None:
                        values.append(value)
                means[metric] = round(sum(values) / len(values), 6) if values else None
            out[stage][label] = means
    return out


@pytest.mark.parametrize("seed", range(60))
def test_means_by_column_equal_a_plain_reading(seed: int) -> None:
    rng = random.Random(seed)
    metrics = NAMES[: rng.choice([1, 2, len(NAMES)])]
    queries = {}
    for i in range(rng.choice([0, 1, 4, 40])):
        values = {}
        for stage in STAGES:
            if rng.random() < 0.1:
                continue  # no values at this stage
            values[stage] = {
                m: (None if rng.random() < 0.2 else rng.random())
                for m in metrics
                if rng.random() > 0.1  # a row without this metric
            }
        queries[f"q{i}"] = QuerySnapshot(
            split="test",
            slices=tuple(rng.sample(["a", "b", "c"], rng.randint(0, 2))),
            labels="x",
            metrics=values,
            relevant_ranks={},
            top={},
        )
    snapshot = Snapshot(
        fingerprint="f", settings={}, stages=STAGES, metrics=tuple(metrics), queries=queries
    )
    assert snapshot.means_by_column() == plain_means(snapshot)


def test_a_hand_computed_mean_skips_none() -> None:
    rows = [{"recall@5": 1.0}, {"recall@5": None}, {"recall@5": 0.5}, {}]
    queries = {
        f"q{i}": QuerySnapshot("test", ("hard",) if i else (), "x", {"retriever": r}, {}, {})
        for i, r in enumerate(rows)
    }
    snapshot = Snapshot("f", {}, ("retriever",), ("recall@5",), queries)
    means = snapshot.means_by_column()["retriever"]
    assert means["overall"] == {"recall@5": 0.75}  # (1.0 + 0.5) / 2
    assert means["slice:hard"] == {"recall@5": 0.5}  # q1 None, q2 0.5, q3 nothing
