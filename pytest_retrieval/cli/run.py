"""``pytest-retrieval run``: the retrieval phase outside pytest, written as a run file.

``pytest-retrieval run GOLDEN --retriever module:factory [--reranker module:factory] --output
RUN.jsonl [--executor local|ray] [--ray-address ADDRESS] [--batch-size N] [--concurrency N]
[--context-filter module:function]`` calls the retriever on every query of the golden set
(held-out ones too: a sealed run ignores them, an unsealed one gates them), each with its
context as in pytest (:mod:`pytest_retrieval.run.retriever.context`), and writes a JSONL run file,
with each query's latency, error and context digest (``context_sha256``), that ``pytest
--retrieval-run RUN.jsonl`` gates inside pytest. With a reranker, the file
holds the final (reranked) rankings and ``--retriever-output`` can keep the candidates too
(gate both with ``--retrieval-run RUN.jsonl``'s ``retriever=`` and ``reranker=`` forms).

Exit status: 0 written, 1 written but some queries failed (their errors are in the file and
fail the gating session too), 2 usage error (a missing file, a factory that cannot be
imported, Ray not installed for ``--executor ray``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..errors import InputError, Problem
from ..text import for_terminal
from .args import setting
from .output import echo

EXIT_OK = 0
EXIT_FAILED = 1

_JSONL = (".jsonl", ".ndjson")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``run`` command."""
    parser = subparsers.add_parser(
        "run",
        help="run the retriever over a golden set (locally or on Ray) into a run file",
        description=(
            "Call the retriever built by a module:factory on every query of a golden set and "
            "write a JSONL run file (rankings, latency, errors) for pytest --retrieval-run."
        ),
    )
    parser.add_argument("golden", metavar="GOLDEN", help="golden-set file or BEIR folder")
    parser.add_argument(
        "--retriever",
        required=True,
        metavar="MODULE:FACTORY",
        help="what builds the retriever, e.g. myapp.search:build (called once per process)",
    )
    parser.add_argument(
        "--reranker", metavar="MODULE:FACTORY", help="what builds an optional second stage"
    )
    parser.add_argument(
        "--output", required=True, metavar="RUN.jsonl", help="the run file to write (JSONL)"
    )
    parser.add_argument(
        "--retriever-output",
        metavar="RUN.jsonl",
        help="with --reranker: also write the retriever's candidates to this run file",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: threads in this process (default); ray: a Ray Data actor pool",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="the Ray cluster to use (auto, ray://host:10001); default: start a local instance",
    )
    parser.add_argument(
        "--batch-size",
        type=setting("batch_size"),
        default=32,
        metavar="N",
        help="queries per batch call, and per Ray batch (default 32)",
    )
    parser.add_argument(
        "--concurrency",
        type=setting("concurrency"),
        default=None,
        metavar="N",
        help="local: queries in flight at once (default 8); ray: actors in the pool, each "
        "building the retriever once (default 2)",
    )
    parser.add_argument(
        "--depth",
        type=setting("depth"),
        default=100,
        metavar="N",
        help="results asked of the retriever per query (default 100); gate no deeper",
    )
    parser.add_argument(
        "--timeout",
        type=setting("timeout"),
        default=60.0,
        metavar="SECONDS",
        help="seconds one query may take before it counts as failed (default 60; 0 = none)",
    )
    parser.add_argument(
        "--context-filter",
        metavar="MODULE:FUNCTION",
        help="builds each query's filter from its context (LangChain filter=, Haystack "
        "filters=), as retrieval_context_filter does in pytest",
    )
    parser.add_argument(
        "--heldout-split",
        default=None,
        metavar="NAME",
        help="name of the held-out split (default heldout); its queries are run too",
    )
    parser.set_defaults(func=run)


def _output(path: str, what: str) -> None:
    if Path(path).suffix.lower() not in _JSONL:
        raise InputError(
            Problem(
                "the run file is written as JSONL, and --retrieval-run reads a file by its suffix",
                fix="name it with .jsonl (e.g. run.jsonl)",
                source=f"{what} {path}",
            )
        )


def run(args: argparse.Namespace) -> int:
    """Run every query, write the run file(s); return the exit status."""
    from ..formats.golden_io import load_golden
    from ..formats.runs import write_run_jsonl
    from ..golden.context import context_digest
    from ..golden.model import DEFAULT_HELDOUT_SPLIT
    from ..run.executors import RunOptions, run_local, run_ray
    from ..run.retriever import RERANKER_STAGE, RETRIEVER_STAGE, QueryRequest
    from ..run.stages import stage_or_final

    _output(args.output, "--output")
    if args.retriever_output:
        if not args.reranker:
            raise InputError(
                Problem(
                    "--retriever-output keeps the candidates of a reranked run, and no "
                    "--reranker was given",
                    fix="drop --retriever-output (--output holds the retriever's rankings)",
                    source="--retriever-output",
                )
            )
        _output(args.retriever_output, "--retriever-output")
    if args.ray_address and args.executor != "ray":
        raise InputError(
            Problem(
                "--ray-address names a Ray cluster, and the executor is local",
                fix="add --executor ray, or drop --ray-address",
                source="--ray-address",
            )
        )
    if args.ray_address:
        from ..run.executors import ray_address_problem

        problem = ray_address_problem(args.ray_address)
        if problem is not None:  # before Ray sees it
            raise InputError(problem)
    from ..files import refuse_clobbering

    refuse_clobbering(
        [("--output", args.output), ("--retriever-output", args.retriever_output)],
        [("the golden set", args.golden)],
    )
    # The factory's module is looked up from the current folder first, as `python -m` and
    # pytest's rootdir do: a console script's sys.path has only its own folder.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    golden = load_golden(args.golden, heldout_split=args.heldout_split or DEFAULT_HELDOUT_SPLIT)
    requests = [QueryRequest.of(q) for q in golden]
    options = RunOptions(
        depth=args.depth,
        timeout=args.timeout or None,
        batch_size=args.batch_size,
        context_keys=golden.context_keys,
        context_filter=args.context_filter,
    )
    start = time.perf_counter()
    if args.executor == "ray":
        outcomes = run_ray(
            requests,
            retriever=args.retriever,
            reranker=args.reranker,
            options=options,
            concurrency=args.concurrency or 2,
            address=args.ray_address,
        )
    else:
        outcomes = run_local(
            requests,
            retriever=args.retriever,
            reranker=args.reranker,
            options=options,
            concurrency=args.concurrency or 8,
            warn=lambda message: echo(f"pytest-retrieval run: warning: {message}", err=True),
        )
    elapsed = time.perf_counter() - start
    ran = (RETRIEVER_STAGE, RERANKER_STAGE) if args.reranker else (RETRIEVER_STAGE,)
    final = stage_or_final(None, ran)
    files = [(final, args.output)]
    if args.retriever_output:
        files.append((RETRIEVER_STAGE, args.retriever_output))
    contexts = {q.id: digest for q in golden if (digest := context_digest(q.context))}
    for stage, path in files:
        write_run_jsonl(
            path,
            {o.query_id: o.rankings.get(stage, ()) for o in outcomes},
            {o.query_id: o.scores.get(stage) for o in outcomes},
            latency_ms={o.query_id: o.latency_ms[stage] for o in outcomes if stage in o.latency_ms},
            errors={
                o.query_id: (o.error_stage or stage, o.error_type or "Error", o.error)
                for o in outcomes
                # The candidates of a query whose reranker failed are sound: no error there.
                if o.error is not None and (stage == final or o.error_stage == stage)
            },
            contexts=contexts,
        )
    failed = [o for o in outcomes if o.error is not None]
    written = " and ".join(path for _stage, path in files)
    echo(
        f"pytest-retrieval run: {len(outcomes)} queries through {args.executor} in "
        f"{elapsed:.1f} s; run written to {for_terminal(written)}"
    )
    if failed:
        named = ", ".join(for_terminal(o.query_id) for o in failed[:10])
        more = f" and {len(failed) - 10} more" if len(failed) > 10 else ""
        echo(
            f"pytest-retrieval run: {len(failed)} quer{'y' if len(failed) == 1 else 'ies'} failed "
            f"({named}{more}); their errors "
            "are in the run file and fail a pytest --retrieval-run session too",
            err=True,
        )
        return EXIT_FAILED
    return EXIT_OK
