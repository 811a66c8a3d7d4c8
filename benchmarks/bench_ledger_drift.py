"""Death by a thousand cuts: per-PR budgets against the merge-base, and an anchored budget.

Plain script, no timing assertions: ``python benchmarks/bench_ledger_drift.py [--streams N]
[--prs N] [--resamples N] [--seed N]``. It simulates streams of pull requests, each merged into
main after its run, each costing a true 0.8 points of NDCG@10, under a budget of 1 point, and
judges every pull request's run the way ``retrieval_baseline = merge-base`` with an anchored
``since=`` budget does: with :func:`pytest_retrieval.regression.rule.family` and
:func:`~pytest_retrieval.regression.rule.compare` themselves, the two checks in one family (maxT).

* **per-PR**: ``ndcg@10 0.01`` against the merge-base's recorded run (main's run after the
  previous pull request merged);
* **anchored**: ``ndcg@10 0.01 since=release`` against the run recorded at the release, before
  the stream's first pull request.

The model (what a golden set, a run and a pull request look like):

* ~120 queries per stream, each query's true NDCG@10 drawn from the example project's committed
  baseline (``example_project/retrieval-baseline.json``, the reranker's per-query values).
* **Per-query noise like the example's**: every run (the release's, each main run, each PR run)
  moves a random 30% of the queries by one rank step, +0.1 or -0.1 with equal chance (a ranked
  relevant document one place up or down costs 0.05-0.37 of NDCG@10 in the example; 0.1 is
  its typical step), independently per run. Runs of the same code are therefore exchangeable,
  as real noisy runs are. Values are not clipped to [0, 1]: the rule sees per-query deltas, and
  clipping would bend the true shift.
* **A pull request** lowers the true value of 12 random queries (10%) by 0.08 each: exactly -0.8
  points of the mean. Noiseless streams drop the noise; A/A streams drop the shift.

It prints, for A/B, A/A and noiseless streams, per rule the share of pull requests whose check
fails, the share whose family fails, the distribution of the first pull request at which the
anchored budget fails, and for A/A the per-stream false-alarm rate (the share of a stream's
pull requests that fail), whose mean must stay at or below alpha.

Everything is seeded: the same arguments print the same tables.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.regression.family import Against, family
from pytest_retrieval.regression.pairs import CompareOptions
from pytest_retrieval.regression.rule import compare
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "example_project" / "retrieval-baseline.json"
STAGE = "reranker"
METRIC = "ndcg@10"
QUERIES = 120
TOUCHED = 0.3
STEP = 0.1
SHIFT_QUERIES = 12
SHIFT = 0.08  # 12 x 0.08 / 120 = 0.008: 0.8 points of the mean
BUDGET = 0.01
ALPHA = 0.05


def example_values() -> np.ndarray:
    data = json.loads(BASELINE.read_text(encoding="utf-8"))
    values = [
        q["metrics"][STAGE][METRIC]
        for q in data["queries"].values()
        if q["metrics"].get(STAGE, {}).get(METRIC) is not None
    ]
    return np.array(values, dtype=np.float64)


def snapshot(values: np.ndarray) -> Snapshot:
    return Snapshot(
        fingerprint="simulated",
        settings={},
        stages=(STAGE,),
        metrics=(METRIC,),
        queries={
            f"q{i:03d}": QuerySnapshot(
                "tune", (), "l", {STAGE: {METRIC: float(v)}}, {STAGE: {}}, {}
            )
            for i, v in enumerate(values)
        },
    )


def measure(truth: np.ndarray, rng: np.random.Generator, noisy: bool) -> np.ndarray:
    if not noisy:
        return truth.copy()
    moved = rng.random(truth.size) < TOUCHED
    steps = np.where(rng.random(truth.size) < 0.5, STEP, -STEP)
    return truth + np.where(moved, steps, 0.0)


def stream(
    base: np.ndarray,
    prs: int,
    rng: np.random.Generator,
    *,
    shift: bool,
    noisy: bool,
    resamples: int,
) -> list[tuple[bool, bool, bool]]:
    """(per-PR failed, anchored failed, family failed) for each pull request of one stream."""
    truth = rng.choice(base, size=QUERIES, replace=True)
    options = CompareOptions(alpha=ALPHA, resamples=resamples, seed=int(rng.integers(1 << 30)))
    per_pr = parse_budget(f"{METRIC} {BUDGET}")
    anchored = parse_budget(f"{METRIC} {BUDGET} since=release")
    release = snapshot(measure(truth, rng, noisy))
    main = release
    out = []
    for _ in range(prs):
        if shift:
            chosen = rng.choice(QUERIES, size=SHIFT_QUERIES, replace=False)
            truth = truth.copy()
            truth[chosen] -= SHIFT
        run = snapshot(measure(truth, rng, noisy))
        against = {anchored.name: Against(release, options, "the release")}
        members = family(
            main,
            run,
            [per_pr, anchored],
            options=options,
            baseline_path="merge-base",
            against=against,
        )
        a = compare(main, run, per_pr, options=options, family_result=members)
        b = compare(release, run, anchored, options=options, family_result=members)
        out.append(
            (a.status == "regression", b.status == "regression", not (a.passed and b.passed))
        )
        main = snapshot(measure(truth, rng, noisy))  # merged: main's run is recorded
    return out


def report(name: str, results: list[list[tuple[bool, bool, bool]]], prs: int) -> None:
    flat = [r for s in results for r in s]
    n = len(flat)
    print(f"\n{name}: {len(results)} streams x {prs} pull requests")
    print(f"  per-PR budget fails   {sum(r[0] for r in flat) / n:.3f} of pull requests")
    print(f"  anchored budget fails {sum(r[1] for r in flat) / n:.3f} of pull requests")
    print(f"  the family fails      {sum(r[2] for r in flat) / n:.3f} of pull requests")
    first = Counter(next((i + 1 for i, r in enumerate(s) if r[1]), None) for s in results)
    never = first.pop(None, 0)
    cumulative = 0
    print("  first pull request at which the anchored budget fails:")
    for pr in range(1, prs + 1):
        cumulative += first.get(pr, 0)
        print(
            f"    PR {pr:>2}: {first.get(pr, 0) / len(results):.3f}  (by then {cumulative / len(results):.3f})"
        )
    print(f"    never: {never / len(results):.3f}")
    per_stream = np.array([sum(r[2] for r in s) / len(s) for s in results])
    what = "false-alarm rate" if "A/A" in name else "share of pull requests failing"
    print(
        f"  per-stream family {what}: mean {per_stream.mean():.4f}, "
        f"median {np.median(per_stream):.3f}, 90th percentile {np.quantile(per_stream, 0.9):.3f}, "
        f"max {per_stream.max():.3f} (Monte Carlo error of the mean about "
        f"±{2 * per_stream.std(ddof=1) / np.sqrt(len(results)):.4f})"
    )


def main(argv: list[str] | None = None) -> dict[str, list[list[tuple[bool, bool, bool]]]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--prs", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    base = example_values()
    print(
        f"{QUERIES} queries from {len(base)} example NDCG@10 values; noise: {TOUCHED:.0%} of "
        f"queries move ±{STEP} per run; shift per PR {SHIFT_QUERIES} x -{SHIFT} = "
        f"{-SHIFT_QUERIES * SHIFT / QUERIES:+.4f}; budget {BUDGET}; alpha {ALPHA}; maxT over "
        f"2 checks; {args.resamples} resamples"
    )
    out = {}
    started = time.perf_counter()
    for name, shift, noisy, seed in (
        ("A/B (true -0.8 points per PR, noisy)", True, True, 1),
        ("A/A (no change, noisy)", False, True, 2),
        ("noiseless A/B (true -0.8 points per PR)", True, False, 3),
    ):
        rng = np.random.default_rng([args.seed, seed])
        # Noiseless streams differ only in which queries each pull request touches (and the
        # exact sign-flip test over <= 20 moved queries is the slow path): 20 show it.
        streams = args.streams if noisy else min(args.streams, 20)
        results = [
            stream(base, args.prs, rng, shift=shift, noisy=noisy, resamples=args.resamples)
            for _ in range(streams)
        ]
        report(name, results, args.prs)
        out[name] = results
    print(f"\n{time.perf_counter() - started:.1f} s")
    return out


if __name__ == "__main__":
    main()
