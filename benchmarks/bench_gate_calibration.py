"""Calibrate the regression gate: false alarms without a change, detection of true drops.

Plain script, no assertions: ``python benchmarks/bench_gate_calibration.py [--trials N]
[--quick]``. It simulates golden sets of 30, 100, 300 and 1,000 queries and judges each
simulated run against its baseline with the plugin's own rule, ``pytest_retrieval.regression.rule.compare``
(budget 0.01, alpha 0.05), beside the naive rule "fail when the mean drops by more than the
budget". It prints:

* A/A trials (no true change): the false-alarm rate, which for our rule must stay at or below
  alpha, whatever the size of the golden set;
* A/B trials with true mean drops of 1, 2, 5 and 10 points (0.01 .. 0.10 of NDCG@10): the
  detection rate;
* the time of the bootstrap and of the randomization (sign-flip) test for 7,000 queries x
  10,000 resamples, the largest golden set the plugin is meant for.

The per-query model (what a golden set and a code change look like):

* Each query has a true quality ``q ~ Beta(2, 1)``: the chance that the retriever puts its one
  relevant document first, and again at each later rank, so the rank is geometric in ``q``.
  The metric is NDCG@10 with one relevant document, ``1 / log2(rank + 1)`` inside the top 10 and
  0 below, so values are graded and discrete (1, 0.631, 0.5, ... 0.289, 0), as in real runs.
* A code change touches the ranking of 30% of the queries (each independently). A touched
  query's rank is drawn again: from the same quality in A/A trials (so its value may move either
  way, or not at all), from a lower quality ``q * (1 - s)`` in A/B trials. The other 70% keep
  their rank exactly, so most per-query deltas are exactly zero, as in real before/after runs.
* ``s`` is solved (bisection) so that the expected mean drop over the population is exactly the
  stated number of points: a "true drop of 2 points" is 0.02 of mean NDCG@10.

Everything is seeded: the same arguments print the same tables.
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from pytest_retrieval.gates.declared import parse_budget
from pytest_retrieval.regression.pairs import CompareOptions
from pytest_retrieval.regression.rule import compare
from pytest_retrieval.regression.snapshot import QuerySnapshot, Snapshot
from pytest_retrieval.scoring import stats
from pytest_retrieval.scoring.stats.multiplicity import FamilyItem, adjust_family, holm

SIZES = (30, 100, 300, 1000)
DROPS = (0.01, 0.02, 0.05, 0.10)
BUDGET = 0.01
ALPHA = 0.05
CUTOFF = 10
BETA = (2.0, 1.0)
TOUCHED = 0.3
STAGE = "retriever"
METRIC = f"ndcg@{CUTOFF}"

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")

#: NDCG@10 of one relevant document at rank r (index r - 1); 0 below the cutoff.
GAIN = np.array([1.0 / math.log2(r + 1) for r in range(1, CUTOFF + 1)])


def values(ranks: npt.NDArray[np.int64]) -> FloatArray:
    """Per-query NDCG@10 of the ranks of each query's relevant document."""
    out = np.zeros(ranks.shape, dtype=np.float64)
    inside = ranks <= CUTOFF
    out[inside] = GAIN[ranks[inside] - 1]
    return out


def expected_value(q: FloatArray) -> FloatArray:
    """E[NDCG@10 | q] = sum over r <= 10 of q (1 - q)^(r - 1) / log2(r + 1)."""
    r = np.arange(1, CUTOFF + 1)
    expected: FloatArray = np.sum(q[:, None] * (1.0 - q[:, None]) ** (r - 1) * GAIN, axis=1)
    return expected


def solve_shrink(drop: float, population: FloatArray) -> float:
    """The s for which touching 30% of queries with quality q * (1 - s) drops the mean by drop."""
    before = expected_value(population)

    def mean_drop(s: float) -> float:
        return TOUCHED * float(np.mean(before - expected_value(population * (1.0 - s))))

    low, high = 0.0, 1.0
    if mean_drop(high) < drop:
        raise SystemExit(f"a true drop of {drop} is not reachable in this model")
    for _ in range(60):
        middle = (low + high) / 2
        if mean_drop(middle) < drop:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def snapshot(per_query: FloatArray) -> Snapshot:
    return Snapshot(
        fingerprint="simulated",
        settings={},
        stages=(STAGE,),
        metrics=(METRIC,),
        queries={
            f"q{i}": QuerySnapshot("tune", (), "l", {STAGE: {METRIC: float(v)}}, {STAGE: {}}, {})
            for i, v in enumerate(per_query)
        },
    )


def rates(
    n: int, shrinks: Sequence[float], trials: int, resamples: int, rng: np.random.Generator
) -> list[tuple[float, float]]:
    """(our rate, naive rate) of failing, per shrink (0 = A/A), over ``trials`` golden sets."""
    budget = parse_budget(f"{METRIC} {BUDGET}")
    ours = [0] * len(shrinks)
    naive = [0] * len(shrinks)
    for trial in range(trials):
        q = rng.beta(*BETA, size=n)
        before_ranks = rng.geometric(q)
        baseline = snapshot(values(before_ranks))
        for column, s in enumerate(shrinks):
            touched = rng.random(n) < TOUCHED
            after_ranks = np.where(touched, rng.geometric(q * (1.0 - s)), before_ranks)
            outcome = compare(
                baseline,
                snapshot(values(after_ranks)),
                budget,
                stage=STAGE,
                options=CompareOptions(alpha=ALPHA, resamples=resamples, seed=trial),
            )
            assert outcome.delta is not None
            ours[column] += outcome.status == "regression"
            naive[column] += -outcome.delta > BUDGET
    return [(o / trials, v / trials) for o, v in zip(ours, naive)]


def best_of(repeats: int, function: Callable[[], T]) -> tuple[float, T]:
    best = math.inf
    result: T | None = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def timing(queries: int, resamples: int, repeats: int) -> None:
    rng = np.random.default_rng(7)
    q = rng.beta(*BETA, size=queries)
    ranks = rng.geometric(q)
    touched = rng.random(queries) < TOUCHED
    before = values(ranks)
    after = values(np.where(touched, rng.geometric(q * 0.9), ranks))
    deltas = after - before
    sparse = deltas[deltas != 0.0]
    # The worst case for the test: every query moved (continuous scores), all deltas non-zero.
    dense = rng.normal(-0.003, 0.1, size=queries)
    print(f"\nTiming: {queries:,} queries x {resamples:,} resamples, best of {repeats}")
    rows: list[tuple[str, Callable[[], object]]] = [
        ("bootstrap CI of the mean delta", lambda: stats.bootstrap_ci(deltas, resamples=resamples)),
        # The Monte Carlo sign-flip test alone (private: paired_comparison adds the bootstrap).
        (
            f"sign-flip test, {dense.size:,} non-zero deltas",
            lambda: stats.monte_carlo_sign_flip_p_value(
                dense, "less", resamples, np.random.default_rng(0)
            ),
        ),
        (
            f"sign-flip test, {sparse.size:,} non-zero deltas (model)",
            lambda: stats.monte_carlo_sign_flip_p_value(
                sparse, "less", resamples, np.random.default_rng(0)
            ),
        ),
        (
            "paired_comparison (test + bootstrap)",
            lambda: stats.paired_comparison(before, after, resamples=resamples),
        ),
    ]
    base, current = snapshot(before), snapshot(after)
    budget = parse_budget(f"{METRIC} {BUDGET}")
    options = CompareOptions(resamples=resamples)
    rows.append(
        (
            "compare(), one budget (2 tests, 2 bootstraps)",
            lambda: compare(base, current, budget, stage=STAGE, options=options),
        )
    )
    for label, function in rows:
        seconds, _ = best_of(repeats, function)
        print(f"  {label:<48} {seconds:6.2f} s")


# --- the family: every regression check of a session at once ------------------------------------
#
# A two-stage pipeline per query: 1-3 relevant documents; the retriever ranks each at
# Geometric(0.03 + 0.3 q) (recall@50 near 0.9, as in the example project), the reranker orders
# those inside the top 50 at increasing gaps Geometric(q). Metrics per query: recall@50 of the
# retriever; NDCG@10, NDCG@5 and MRR of the reranker. Queries belong to one of four slices
# (shares of the example's exact-lookup, paraphrase, acronym, multi-hop).
#
# "deterministic": a run is a fixed function of the query; a change (A/A or A/B) redraws 30% of
# the queries, as in the single-check model above. "noisy": in addition every run redraws the
# reranker's order of 30% of the queries and the retriever's ranks of 10% (run-to-run noise:
# nondeterministic ANN search, float ties), so baseline and current differ even without a change.
# A/B: touched queries get quality q * (1 - s), s solved so that NDCG@10 drops by d points.
#
# Is the noisy A/A truly null? Yes: given the queries (quality, relevant documents, slices),
# baseline and current are two independent draws of the same run, so each query's vector of
# deltas (one per check) is symmetric about 0 and independent of the other queries': exactly
# what the joint sign flips assume, and maxT is exact conditionally on the queries. (It would not
# be for a FIXED baseline reused by many runs: see the lucky-baseline table.) An earlier run with
# 250 trials printed 0.108 / 0.092 for maxT in the noisy n = 30 cells; that was the first 250
# trials of this seed's stream: 4,000 trials of that cell give 0.0525 (+-0.0035), its 16 blocks of
# 250 range from 0.012 to 0.108 (the first one), and re-drawing the noise 400 times for four of
# the query sets that failed gives 0.025-0.060. Neither the model nor the method was wrong; the
# cells now use 1,000 trials (+-0.007 at alpha).

FAMILY_DROPS = (0.02, 0.05, 0.10)
SLICE_SHARES = (0.37, 0.27, 0.21, 0.15)
FAMILY_METHODS = ("maxt", "minp", "holm", "none")
LOG_GAIN = 1.0 / np.log2(np.arange(2, 200))


def pipeline_metrics(
    q: FloatArray, relevant: npt.NDArray[np.int64], u_ret: FloatArray, u_rer: FloatArray
) -> dict[str, FloatArray]:
    """Per-query metrics from uniforms (queries x 3 documents): same uniforms, same run."""
    p_ret = np.clip(0.03 + 0.3 * q, 1e-6, 1.0)[:, None]
    ret_rank = np.ceil(np.log1p(-u_ret) / np.log1p(-p_ret)).clip(1)
    mask = np.arange(3)[None, :] < relevant[:, None]
    inside = mask & (ret_rank <= 50)
    recall = inside.sum(axis=1) / relevant
    gaps = np.ceil(np.log1p(-u_rer) / np.log1p(-np.clip(q, 1e-6, 1 - 1e-9))[:, None]).clip(1)
    gaps = np.where(inside, gaps, 0)
    ranks = np.where(inside, np.cumsum(gaps, axis=1), 10_000).astype(np.int64)
    gain = np.where(ranks < 199, LOG_GAIN[np.minimum(ranks, 198) - 1], 0.0)
    ideal = np.cumsum(LOG_GAIN[:3])
    out = {
        "recall@50": recall,
        "mrr": np.where(ranks.min(axis=1) < 10_000, 1.0 / ranks.min(axis=1), 0.0),
    }
    for k in (5, 10):
        dcg = np.where(ranks <= k, gain, 0.0).sum(axis=1)
        out[f"ndcg@{k}"] = dcg / ideal[np.minimum(relevant, k) - 1]
    return {name: np.round(v, 6) for name, v in out.items()}


def family_run(
    rng: np.random.Generator, state: dict[str, FloatArray], shrink: float, noisy: bool
) -> dict[str, FloatArray]:
    """The current run: 30% of queries touched (quality shrunk by `shrink`), noise if noisy."""
    n = state["q"].size
    touched = rng.random(n) < TOUCHED
    q = np.where(touched, state["q"] * (1.0 - shrink), state["q"])
    u_ret = np.where(touched[:, None], rng.random((n, 3)), state["u_ret"])
    u_rer = np.where(touched[:, None], rng.random((n, 3)), state["u_rer"])
    if noisy:
        u_ret = np.where((rng.random(n) < 0.1)[:, None], rng.random((n, 3)), u_ret)
        u_rer = np.where((rng.random(n) < 0.3)[:, None], rng.random((n, 3)), u_rer)
    return pipeline_metrics(q, state["relevant"], u_ret, u_rer)


def family_items(
    before: dict[str, FloatArray],
    after: dict[str, FloatArray],
    slices: npt.NDArray[np.int64],
    example: bool,
) -> tuple[list[FamilyItem], list[float]]:
    """The checks of the default budgets (3) or of the example project (7), and their budgets."""
    n = slices.size
    ids = tuple(f"q{i}" for i in range(n))
    amount = 0.02 if example else BUDGET
    checks = [("recall@50", None), ("ndcg@10", None), ("mrr", None)]
    if example:
        checks += [("ndcg@5", s) for s in range(len(SLICE_SHARES))]
    items, budgets = [], []
    for metric, where in checks:
        keep = np.ones(n, dtype=bool) if where is None else slices == where
        if not keep.any():
            continue
        delta = (after[metric] - before[metric])[keep]
        chosen = tuple(i for i, k in zip(ids, keep) if k)
        items.append(FamilyItem(f"{metric}/{where}", chosen, tuple(delta.tolist())))
        budgets.append(0.05 * float(np.mean(before[metric][keep])) if where is not None else amount)
    return items, budgets


def family_rates(
    n: int, shrinks: Sequence[float], noisy: bool, trials: int, resamples: int, seed: int
) -> dict[bool, list[dict[str, float]]]:
    """Per family (default / example), per shrink: share of builds failed, per method."""
    rng = np.random.default_rng([seed, n, int(noisy)])
    failed = {ex: [dict.fromkeys(FAMILY_METHODS, 0) for _ in shrinks] for ex in (False, True)}
    for trial in range(trials):
        state = {
            "q": rng.beta(*BETA, size=n),
            "relevant": 1 + rng.binomial(2, 0.3, size=n),
            "u_ret": rng.random((n, 3)),
            "u_rer": rng.random((n, 3)),
        }
        slices = rng.choice(len(SLICE_SHARES), size=n, p=SLICE_SHARES)
        # The baseline is one run too: under noise it is itself a noisy draw.
        before = (
            family_run(rng, state, 0.0, noisy)
            if noisy
            else pipeline_metrics(state["q"], state["relevant"], state["u_ret"], state["u_rer"])
        )
        for column, shrink in enumerate(shrinks):
            after = family_run(rng, state, shrink, noisy)
            for example in (False, True):
                items, budgets = family_items(before, after, slices, example)
                over = [-float(np.mean(it.deltas)) - b > 1e-10 for it, b in zip(items, budgets)]
                results = {
                    m: adjust_family(
                        items, m, alpha=ALPHA, seed=trial, resamples=resamples, exact_cutoff=12
                    )
                    for m in ("maxt", "minp")
                }
                raw = [r.raw_p_value for r in results["maxt"]]
                p_values = {
                    "maxt": [r.p_value for r in results["maxt"]],
                    "minp": [r.p_value for r in results["minp"]],
                    "holm": holm(raw),
                    "none": raw,
                }
                for m, ps in p_values.items():
                    failed[example][column][m] += any(o and p <= ALPHA for o, p in zip(over, ps))
    return {
        ex: [{m: c / trials for m, c in row.items()} for row in rows] for ex, rows in failed.items()
    }


def solve_family_shrink(drop: float, seed: int) -> float:
    """s such that touching 30% of queries with quality q (1 - s) drops mean NDCG@10 by drop."""
    rng = np.random.default_rng(seed)
    size = 200_000
    q, relevant = rng.beta(*BETA, size=size), 1 + rng.binomial(2, 0.3, size=size)
    u_ret, u_rer = rng.random((size, 3)), rng.random((size, 3))
    touched = rng.random(size) < TOUCHED
    fresh_ret, fresh_rer = rng.random((size, 3)), rng.random((size, 3))
    base = pipeline_metrics(
        q,
        relevant,
        np.where(touched[:, None], fresh_ret, u_ret),
        np.where(touched[:, None], fresh_rer, u_rer),
    )["ndcg@10"].mean()

    def mean_drop(s: float) -> float:
        shrunk = np.where(touched, q * (1.0 - s), q)
        after = pipeline_metrics(
            shrunk,
            relevant,
            np.where(touched[:, None], fresh_ret, u_ret),
            np.where(touched[:, None], fresh_rer, u_rer),
        )
        return float(base - after["ndcg@10"].mean())

    low, high = 0.0, 1.0
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (middle, high) if mean_drop(middle) < drop else (low, middle)
    return (low + high) / 2


def print_family(trials: int, resamples: int, seed: int) -> None:
    shrinks = [0.0, *(solve_family_shrink(d, seed + 2) for d in FAMILY_DROPS)]
    error = math.sqrt(ALPHA * (1 - ALPHA) / trials)
    print(
        f"\nFAMILY: share of builds with at least one failing regression check; {trials} trials "
        f"per cell, {resamples} joint sign patterns (exact up to 12 changed queries); rule: drop "
        f"> budget AND adjusted p <= {ALPHA}. Monte Carlo error at {ALPHA}: +-{error:.3f}"
    )
    print("  default budgets: recall@50 (retriever) 0.01, ndcg@10 0.01, mrr 0.01 (3 checks)")
    print("  example budgets: recall@50 0.02, ndcg@10 0.02, mrr 0.02, ndcg@5 5% x 4 slices (7)")
    print(
        "  true drop -> quality shrink: "
        + ", ".join(f"{d * 100:g} pt -> q x {1 - s:.3f}" for d, s in zip(FAMILY_DROPS, shrinks[1:]))
    )
    names = ["A/A", *(f"{d * 100:g} pt" for d in FAMILY_DROPS)]
    for noisy in (False, True):
        table = {n: family_rates(n, shrinks, noisy, trials, resamples, seed) for n in SIZES}
        for example in (False, True):
            label = "example (7)" if example else "default (3)"
            print(
                f"\n{'noisy' if noisy else 'deterministic'} pipeline, {label} budgets; "
                "cells maxt / minp / holm / none"
            )
            print(f"{'n':>6}" + "".join(f"  {name:>27}" for name in names))
            for n in SIZES:
                cells = "".join(
                    "  " + " / ".join(f"{row[m]:.3f}" for m in FAMILY_METHODS).rjust(27)
                    for row in table[n][example]
                )
                print(f"{n:>6}{cells}")


# --- lucky baselines: one repository, one committed baseline, many pull requests -----------------
#
# The A/A rates above average over baselines: each trial draws a fresh baseline. A repository
# keeps ONE baseline for many pull requests, and with a noisy pipeline that baseline is itself a
# draw: a lucky one (noise that happened to favour it) makes every later run look worse. Per
# repository we fix the queries and the baseline, then judge many A/A pull requests (fresh noisy
# runs of the same pipeline, no change) against it, with maxT over the default budgets. Baselines:
# one run (what --retrieval-update-baseline wrote), the best of five single runs by mean NDCG@10
# (refreshing after a lucky "improvement": the ratchet), and the per-query mean of five runs
# (--retrieval-baseline-runs 5).


def noisy_run(rng: np.random.Generator, state: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """One run of an unchanged noisy pipeline: only the run-to-run noise is redrawn."""
    n = state["q"].size
    u_ret = np.where((rng.random(n) < 0.1)[:, None], rng.random((n, 3)), state["u_ret"])
    u_rer = np.where((rng.random(n) < 0.3)[:, None], rng.random((n, 3)), state["u_rer"])
    return pipeline_metrics(state["q"], state["relevant"], u_ret, u_rer)


def lucky_rates(
    n: int, repositories: int, pulls: int, resamples: int, seed: int
) -> dict[str, list[float]]:
    """Per baseline kind: each repository's share of A/A pull requests that fail (maxT)."""
    rng = np.random.default_rng([seed, n, 7])
    out: dict[str, list[float]] = {"one run": [], "best of 5 runs": [], "mean of 5 runs": []}
    for _repo in range(repositories):
        state = {
            "q": rng.beta(*BETA, size=n),
            "relevant": 1 + rng.binomial(2, 0.3, size=n),
            "u_ret": rng.random((n, 3)),
            "u_rer": rng.random((n, 3)),
        }
        slices = rng.choice(len(SLICE_SHARES), size=n, p=SLICE_SHARES)
        runs = [noisy_run(rng, state) for _ in range(5)]
        best = max(runs, key=lambda r: float(np.mean(r["ndcg@10"])))
        mean = {m: np.round(np.mean([r[m] for r in runs], axis=0), 6) for m in runs[0]}
        baselines = {"one run": runs[0], "best of 5 runs": best, "mean of 5 runs": mean}
        failed = dict.fromkeys(baselines, 0)
        for pull in range(pulls):
            after = noisy_run(rng, state)
            for kind, before in baselines.items():
                items, budgets = family_items(before, after, slices, False)
                over = [-float(np.mean(it.deltas)) - b > 1e-10 for it, b in zip(items, budgets)]
                results = adjust_family(
                    items, "maxt", alpha=ALPHA, seed=pull, resamples=resamples, exact_cutoff=12
                )
                failed[kind] += any(o and r.significant for o, r in zip(over, results))
        for kind, count in failed.items():
            out[kind].append(count / pulls)
    return out


def print_lucky_baselines(repositories: int, pulls: int, resamples: int, seed: int) -> None:
    print(
        f"\nLUCKY BASELINES: noisy pipeline, default budgets, maxT; {repositories} repositories "
        f"x {pulls} A/A pull requests against each one's fixed baseline. Per repository: the "
        "share of pull requests that fail. Columns: mean over repositories, share of "
        "repositories above 0.10, 90th and 99th percentile"
    )
    print(f"{'n':>6}  {'baseline':<16}{'mean':>7}{'> 0.10':>8}{'p90':>7}{'p99':>7}")
    for n in (30, 100, 300):
        table = lucky_rates(n, repositories, pulls, resamples, seed)
        for kind, rates in table.items():
            r = np.array(rates)
            print(
                f"{n:>6}  {kind:<16}{r.mean():7.3f}{np.mean(r > 0.10):8.3f}"
                f"{np.quantile(r, 0.9):7.3f}{np.quantile(r, 0.99):7.3f}"
            )


# --- single checks under other score models ------------------------------------------------------


def other_models() -> dict[str, Callable[[np.random.Generator, int, float], FloatArray]]:
    """Per-query deltas for a true mean drop `drop` (0: A/A), for one check."""

    def hit_rate(rng: np.random.Generator, n: int, drop: float) -> FloatArray:
        p = rng.beta(3, 1.5, size=n)
        before = rng.random(n) < p
        touched = rng.random(n) < TOUCHED
        after = np.where(touched, rng.random(n) < np.clip(p - drop / TOUCHED, 0, 1), before)
        return after.astype(float) - before.astype(float)

    def near_ceiling(rng: np.random.Generator, n: int, drop: float) -> FloatArray:
        # recall@50 with 2 relevant documents, each found with probability ~0.97.
        p = rng.beta(30, 1, size=n)
        before = (rng.random((n, 2)) < p[:, None]).mean(axis=1)
        touched = rng.random(n) < TOUCHED
        lower = np.clip(p - drop / TOUCHED, 0, 1)
        after = (rng.random((n, 2)) < lower[:, None]).mean(axis=1)
        return np.where(touched, after, before) - before

    def five_percent(rng: np.random.Generator, n: int, drop: float) -> FloatArray:
        changed = rng.random(n) < 0.05
        return np.where(changed, rng.normal(-drop / 0.05, 0.3, n).clip(-1, 1), 0.0)

    def skewed(rng: np.random.Generator, n: int, drop: float) -> FloatArray:
        # Many small gains, few large losses, mean exactly -drop (0 in A/A): not symmetric.
        gains = rng.exponential(0.05, n)
        losses = np.where(rng.random(n) < 0.1, -rng.exponential(0.45, n), 0.0)
        return np.round((gains + losses - 0.005) * (rng.random(n) < 0.5) - drop, 6)

    return {
        "hit rate (Bernoulli)": hit_rate,
        "near-ceiling recall": near_ceiling,
        "5% of queries changed": five_percent,
        "zero-mean skewed": skewed,
    }


def print_other_models(trials: int, resamples: int, seed: int) -> None:
    print(
        f"\nSINGLE CHECKS under other score models: share failed (drop > {BUDGET} AND sign-flip p "
        f"<= {ALPHA}); budget mode: shifted test H0 mean >= -{BUDGET}; {trials} trials per cell"
    )
    drops = (0.0, *FAMILY_DROPS)
    print(
        f"{'model':<24}{'n':>6}"
        + "".join(f"  {('A/A' if d == 0 else f'{d * 100:g} pt'):>13}" for d in drops)
        + "   (plain / budget mode)"
    )
    for name, draw in other_models().items():
        for n in SIZES:
            rng = np.random.default_rng([seed, n, len(name)])
            cells = []
            for drop in drops:
                plain = shifted = 0
                for trial in range(trials):
                    d = np.round(draw(rng, n, drop), 6)
                    over = -float(np.mean(d)) - BUDGET > 1e-10
                    item = FamilyItem("x", tuple(f"q{i}" for i in range(n)), tuple(d.tolist()))
                    p = adjust_family([item], "none", seed=trial, resamples=resamples)[0].p_value
                    plain += over and p <= ALPHA
                    shifted += stats.budget_test(d, BUDGET, seed=trial, resamples=resamples)[1]
                cells.append(f"{plain / trials:.3f}/{shifted / trials:.3f}")
            print(f"{name:<24}{n:>6}" + "".join(f"  {c:>13}" for c in cells))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400, help="golden sets per row (400)")
    parser.add_argument(
        "--resamples", type=int, default=2000, help="resamples inside the simulation (2000)"
    )
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument(
        "--quick", action="store_true", help="100 trials, 1000 resamples, one timing repeat"
    )
    parser.add_argument("--no-timing", action="store_true", help="skip the 7,000-query timing")
    parser.add_argument(
        "--family-trials", type=int, default=1000, help="builds per family cell (1000; 0 skips)"
    )
    parser.add_argument("--only-family", action="store_true", help="skip the single-check tables")
    parser.add_argument(
        "--repositories", type=int, default=200, help="repositories per lucky-baseline row (200)"
    )
    parser.add_argument("--pulls", type=int, default=40, help="A/A pull requests per repository")
    args = parser.parse_args(argv)
    trials = 100 if args.quick else args.trials
    resamples = 1000 if args.quick else args.resamples
    started = time.perf_counter()

    population = np.random.default_rng(args.seed + 1).beta(*BETA, size=200_000)
    shrinks = [solve_shrink(d, population) for d in DROPS]
    mean_value = float(np.mean(expected_value(population)))
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(
        f"Model: q ~ Beta{BETA}, rank ~ Geometric(q), value = NDCG@{CUTOFF} of one relevant "
        f"document (population mean {mean_value:.3f}); a change redraws the rank of "
        f"{TOUCHED:.0%} of queries"
    )
    print(
        "  true drop -> quality shrink of touched queries: "
        + ", ".join(f"{d * 100:g} pt -> q x {1 - s:.3f}" for d, s in zip(DROPS, shrinks))
    )
    print(
        f"Rule: ours = drop > {BUDGET} AND one-sided sign-flip p <= {ALPHA} "
        f"(pytest_retrieval.regression.baseline.compare, {resamples:,} resamples); naive = drop > {BUDGET}"
    )
    print(f"{trials} trials per cell, seed {args.seed}")

    if args.family_trials:
        family_started = time.perf_counter()
        print_family(args.family_trials, resamples // 2, args.seed)
        print_other_models(args.family_trials, resamples // 2, args.seed)
        if args.repositories:
            print_lucky_baselines(args.repositories, args.pulls, resamples // 2, args.seed)
        print(f"\nfamily and other models: {time.perf_counter() - family_started:.0f} s")
    if args.only_family:
        return
    rng = np.random.default_rng(args.seed)
    table = {n: rates(n, [0.0, *shrinks], trials, resamples, rng) for n in SIZES}
    error = math.sqrt(ALPHA * (1 - ALPHA) / trials)
    print(
        f"\nFalse alarms, A/A (no true change): ours must stay <= alpha = {ALPHA} "
        f"(Monte Carlo error at {ALPHA}: +-{error:.3f})"
    )
    print(f"{'n':>6}  {'ours':>6}  {'naive':>6}")
    for n in SIZES:
        ours, naive = table[n][0]
        print(f"{n:>6}  {ours:6.3f}  {naive:6.3f}")

    print("\nDetection, A/B (true drop of d points), ours / naive")
    header = "".join(f"  {f'd = {d * 100:g} pt':>15}" for d in DROPS)
    print(f"{'n':>6}{header}")
    for n in SIZES:
        cells = "".join(f"  {f'{o:.3f} / {v:.3f}':>15}" for o, v in table[n][1:])
        print(f"{n:>6}{cells}")
    print(f"\nsimulation: {time.perf_counter() - started:.0f} s")

    if not args.no_timing:
        timing(7_000, 10_000, 1 if args.quick else 3)


if __name__ == "__main__":
    main()
