"""How fast is the metric core? Prints figures; asserts nothing.

Data: seeded, MS MARCO-dev-shaped: 6,980 queries x 1,000 ranked ids, 1-4 graded relevant docs per
query, most of them ranked inside the top 100. Work: the full family (recall, precision, hit_rate,
ndcg, map at K = 1, 3, 5, 10, 20, 50, 100, 1000; mrr) from Python dicts.

Timed in one process, each the best of a few repeats:
* the bare label pass: one dict lookup per retrieved id, nothing else (the floor);
* pytest_retrieval.scoring.evaluate;
* pytest_retrieval.scoring.evaluate with duplicate groups (every 100th corpus id paired with the next):
  the cost of ``retrieval_duplicates`` (the rows above run without groups, as by default);
* pytrec_eval and ranx when installed (``pip install -e ".[benchmark]"``); ranx both on its first
  call (numba compiles) and warm.

Run: ``python benchmarks/bench_metrics.py [--queries N] [--depth D] [--repeat R]``
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from pytest_retrieval.scoring.evaluate import evaluate

KS = (1, 3, 5, 10, 20, 50, 100, 1000)
FAMILY = ("recall", "precision", "hit_rate", "ndcg", "map")


def make_data(
    n_queries: int, depth: int, seed: int = 7
) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    rng = random.Random(seed)
    corpus = [f"D{i}" for i in range(8_841_823 // 100)]  # MS MARCO passage ids, thinned
    run: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(n_queries):
        qid = str(1_000_000 + q)
        ranking = rng.sample(corpus, depth)
        judged: dict[str, int] = {}
        for _ in range(rng.randint(1, 4)):
            grade = rng.choice((1, 1, 2, 3))
            roll = rng.random()
            if roll < 0.7:  # most relevant docs are ranked inside the top 100
                doc = ranking[min(int(rng.expovariate(1 / 12)), 99)]
            elif roll < 0.85:
                doc = ranking[rng.randrange(100, depth)]
            else:  # never retrieved
                doc = f"U{q}-{len(judged)}"
            judged[doc] = grade
        qrels[qid] = judged
        run[qid] = ranking
    return run, qrels


def bare_pass(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> int:
    """The floor: one dict lookup per retrieved id, keeping nothing but a count."""
    found = 0
    for qid, ranking in run.items():
        get = qrels[qid].get
        for doc in ranking:
            if get(doc) is not None:
                found += 1
    return found


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=6980)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    metrics = [f"{name}@{k}" for name in FAMILY for k in KS] + ["mrr"]
    run, qrels = make_data(args.queries, args.depth)
    print(f"data: {len(run):,} queries x {args.depth:,} ranked ids, {len(metrics)} metrics")
    print(f"peak RSS after building the data: {peak_rss_mb():.0f} MB")

    rows: list[tuple[str, float]] = []
    bare = best_of(args.repeat, lambda: bare_pass(run, qrels))
    rows.append(("bare label pass (floor)", bare))
    ours = best_of(args.repeat, lambda: evaluate(run, qrels, metrics))
    rows.append(("pytest_retrieval.scoring.evaluate", ours))
    rss_ours = peak_rss_mb()
    from pytest_retrieval.scoring.dedup import DuplicateGroups

    ids = sorted({doc for ranking in run.values() for doc in ranking})
    groups = DuplicateGroups.from_groups([ids[i : i + 2] for i in range(0, len(ids) - 1, 100)])
    rows.append(
        (
            f"evaluate, {len(groups):,} duplicate groups",
            best_of(args.repeat, lambda: evaluate(run, qrels, metrics, duplicates=groups)),
        )
    )

    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval: not installed (pip install pytrec-eval-terrier)")
    else:
        measures = {
            f"{m}.{','.join(map(str, KS))}"
            for m in ("P", "recall", "ndcg_cut", "map_cut", "success")
        }
        measures.add("recip_rank")

        # trec_eval wants scores; conversion from ranked lists is part of its cost in a plugin.
        def run_pytrec() -> None:
            scored = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in run.items()}
            pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(scored)

        rows.append(("pytrec_eval (incl. list->scores)", best_of(args.repeat, run_pytrec)))

    try:
        import ranx
    except ImportError:
        print("ranx: not installed (pip install ranx)")
    else:
        ranx_metrics = [
            f"{m}@{k}"
            for m in ("recall", "precision", "hit_rate", "ndcg_burges", "map")
            for k in KS
        ] + ["mrr"]

        def run_ranx() -> None:
            scored = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in run.items()}
            ranx.evaluate(ranx.Qrels(qrels), ranx.Run(scored), ranx_metrics)

        rows.append(("ranx, first call (numba compiles)", best_of(1, run_ranx)))
        rows.append(("ranx, warm", best_of(args.repeat, run_ranx)))

    width = max(len(name) for name, _ in rows)
    print()
    print(f"{'':{width}}  {'seconds':>8}  {'x bare':>7}")
    for name, seconds in rows:
        print(f"{name:{width}}  {seconds:8.3f}  {seconds / bare:7.2f}")
    print()
    print(
        f"peak RSS of this process: {peak_rss_mb():.0f} MB (after our evaluate: {rss_ours:.0f} MB)"
    )


if __name__ == "__main__":
    main()
