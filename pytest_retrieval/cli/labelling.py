"""``pytest-retrieval golden pool`` and ``golden merge``: the labelling worksheet, out and back.

``golden pool RUN... --depth N --output WORKSHEET`` lists the unjudged documents the runs ranked
in their top N; ``golden merge GOLDEN WORKSHEET --output NEW`` adds the graded rows back, with
their provenance (see :mod:`pytest_retrieval.formats.labels`). A missing input file is a usage error
(2).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..formats.golden_io import READ_FORMATS, write_golden
from ..golden.model import DEFAULT_HELDOUT_SPLIT
from ..run.stages import stage_or_final
from ..text import for_terminal, plural
from .golden_input import EXIT_FAILED, EXIT_OK, EXIT_USAGE, load_input, missing_input
from .output import echo, error_line

if TYPE_CHECKING:
    from ..run.factories import UserCodeError


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``golden pool`` and ``golden merge``: the labelling worksheet, out and back."""
    from .args import setting

    pool = commands.add_parser(
        "pool",
        help="list the unjudged documents some run ranked in its top N, as a worksheet",
        description=(
            "Pool runs (JSON artifacts, baselines, TREC or JSONL run files) into a labelling "
            "worksheet: for every query outside the held-out split, the documents ranked in "
            "the top N of any run that have no judgment, each once, most-surfaced and "
            "best-ranked first, with an empty grade column."
        ),
    )
    pool.add_argument("runs", nargs="+", metavar="RUN", help="artifact, baseline or run file")
    pool.add_argument("--depth", type=setting("depth"), required=True, metavar="N", help="top N")
    pool.add_argument(
        "--output", required=True, metavar="WORKSHEET", help="worksheet (.csv, .jsonl, .yaml)"
    )
    pool.add_argument(
        "--golden",
        metavar="GOLDEN",
        help="the golden set (default: the one the first artifact was run on)",
    )
    pool.add_argument(
        "--corpus",
        metavar="CORPUS",
        help="documents' title and text: a BEIR corpus.jsonl (or folder) or id<TAB>text lines",
    )
    pool.add_argument(
        "--stage", metavar="STAGE", help="stage of the artifacts' rankings (default: the last)"
    )
    pool.add_argument(
        "--include-heldout",
        action="store_true",
        help="also pool held-out queries (their documents become visible to labellers)",
    )
    pool.add_argument(
        "--prefill",
        metavar="MODULE:FUNCTION",
        help=(
            "propose a grade per row: FUNCTION(query_id, query_text, doc_id, title, text) -> "
            "int or None; its rows are labelled machine:MODULE:FUNCTION"
        ),
    )
    pool.add_argument("--format", choices=READ_FORMATS, help="format of the golden set")
    pool.add_argument(
        "--heldout-split",
        default=DEFAULT_HELDOUT_SPLIT,
        metavar="NAME",
        help=f"name of the held-out split (default {DEFAULT_HELDOUT_SPLIT})",
    )
    pool.set_defaults(func=run_pool, topics=None)

    merge = commands.add_parser(
        "merge",
        help="add a worksheet's graded rows to a golden set",
        description=(
            "Add the graded rows of a worksheet to a golden set as judgments, with their "
            "provenance; blank grades are skipped. Unknown query ids, bad grades and rows that "
            "contradict a judgment are all listed and nothing is written, unless --overwrite "
            "lets the worksheet win."
        ),
    )
    merge.add_argument("path", metavar="GOLDEN", help="golden-set file to add to")
    merge.add_argument("worksheet", metavar="WORKSHEET", help="graded worksheet")
    merge.add_argument(
        "--output", required=True, metavar="NEW_GOLDEN", help="file to write (.yaml, .json, .jsonl)"
    )
    merge.add_argument(
        "--labeled-by",
        metavar="NAME",
        help="who labelled the rows (default: worksheet:<its file name>); a row's own "
        "labeled_by, such as a machine pre-label, wins",
    )
    merge.add_argument(
        "--overwrite",
        action="store_true",
        help="let the worksheet's grade replace a judgment it contradicts",
    )
    merge.add_argument("--format", choices=READ_FORMATS, help="format of GOLDEN")
    merge.add_argument(
        "--heldout-split",
        default=DEFAULT_HELDOUT_SPLIT,
        metavar="NAME",
        help=f"name of the held-out split (default {DEFAULT_HELDOUT_SPLIT})",
    )
    merge.set_defaults(func=run_merge, topics=None)


def _error(args: argparse.Namespace, message: str) -> int:
    error_line(f"pytest-retrieval golden {args.golden_command}", message.replace("\n", " "))
    return EXIT_USAGE


def _clobbers(
    args: argparse.Namespace,
    outputs: list[tuple[str, str | None]],
    *inputs: list[tuple[str, str | None]],
) -> int | None:
    """The usage error of an output that would replace an input (nothing is written), or None."""
    from ..files import clobbered_inputs

    problems = clobbered_inputs(outputs, [named for group in inputs for named in group])
    return _error(args, str(problems[0])) if problems else None


def _user_code_error(args: argparse.Namespace, exc: UserCodeError) -> int:
    """The one error line of the user's code (``--prefill``), and their traceback under it."""
    error_line(f"pytest-retrieval golden {args.golden_command}", exc.summary)
    if exc.trace:
        echo(exc.trace, err=True)
    return EXIT_USAGE


def _pool_input(
    path: str, stage: str | None
) -> tuple[dict[str, tuple[str, ...]], str | None, str | None]:
    """(rankings, golden path recorded, how to keep deeper rankings) of an artifact, a
    baseline or a run file.

    The last is None when the file keeps whole rankings, else the fix for a file that keeps
    only the top of each ranking (artifacts keep the largest K of ``retrieval_ks``, version-2
    baselines the retrieval depth, version-1 baselines 10; version 3 keeps whole rankings:
    :func:`~pytest_retrieval.regression.snapshot.stored_cut`).
    """
    if path.lower().endswith(".json"):
        from ..errors import InputError
        from ..reading import load_json, read_text_file

        # Which file it is: an artifact or a baseline says so; anything else (not even JSON)
        # is read as a run file, whose reader names what is wrong with it.
        try:
            head = load_json(
                read_text_file(path, what="run"), source=path, what="run", allow_duplicate_keys=True
            )
        except InputError:
            head = None
        schema = head.get("schema") if isinstance(head, dict) else None
        if schema == "pytest-retrieval/artifact":
            from ..report.artifact import read_artifact

            data = read_artifact(path)
            stages = [str(s) for s in data.get("stages") or ()]
            chosen = stage_or_final(stage, stages)
            rankings = {
                str(row["id"]): tuple(str(d) for d in (row.get("rankings") or {}).get(chosen, ()))
                for row in data.get("queries") or ()
            }
            deeper = "add {depth} to retrieval_ks for deeper artifacts"
            return rankings, (data.get("golden") or {}).get("path"), deeper
        if schema == "pytest-retrieval/baseline":
            from ..regression.baseline import load_baseline
            from ..regression.snapshot import stored_cut

            baseline = load_baseline(path)
            chosen = stage_or_final(stage, baseline.stages)
            rankings = {qid: q.top.get(chosen, ()) for qid, q in baseline.queries.items()}
            cut = stored_cut(baseline) is not None
            refresh = "refresh the baseline: one written now keeps whole rankings"
            return rankings, None, refresh if cut else None
    from ..formats.runs import load_run_file

    return dict(load_run_file(path).rankings), None, None


def run_pool(args: argparse.Namespace) -> int:
    """``golden pool``: write the worksheet of unjudged top-N documents of the runs."""
    from ..errors import RunFileError
    from ..formats.labels import pool
    from ..formats.worksheet import corpus_columns, write_worksheet

    if missing_input(args, *(("run", path) for path in args.runs), ("corpus", args.corpus)):
        return EXIT_USAGE
    clash = _clobbers(
        args,
        [("--output", args.output)],
        [*(("the run", path) for path in args.runs), ("the golden set", args.golden)],
        [("--corpus", args.corpus)],
    )
    if clash is not None:
        return clash
    runs: list[tuple[str, dict[str, tuple[str, ...]]]] = []
    golden_path = args.golden
    notes: list[str] = []
    names: set[str] = set()
    try:
        for path in args.runs:
            rankings, recorded, deeper = _pool_input(path, args.stage)
            golden_path = golden_path or recorded
            name = os.path.splitext(os.path.basename(path))[0]
            name = path if name in names else name
            names.add(name)
            longest = max((len(r) for r in rankings.values()), default=0)
            if deeper is not None and longest < args.depth:
                notes.append(
                    f"note: {path} keeps rankings to depth {longest} only, so it is pooled to "
                    f"{longest}, not {args.depth} ({deeper.format(depth=args.depth)})"
                )
            runs.append((name, rankings))
    except (InputError, RunFileError) as exc:
        echo(exc, err=True)
        return EXIT_FAILED
    if golden_path is None:
        return _error(args, "no golden set: pass --golden GOLDEN (no artifact names one)")
    clash = _clobbers(args, [("--output", args.output)], [("the golden set", golden_path)])
    if clash is not None:  # the golden set an artifact recorded
        return clash
    golden = load_input(args, golden_path)
    if isinstance(golden, int):
        return golden
    prefill = None
    if args.prefill:
        from ..run.factories import UserCodeError, call_user, import_object

        # The console script's sys.path lacks the current folder: the user's module is there.
        sys.path.insert(0, os.getcwd())
        try:
            judge = import_object(args.prefill, "--prefill")
        except UserCodeError as exc:
            return _user_code_error(args, exc)
        if not callable(judge):
            return _error(args, f"--prefill {args.prefill} is not a function")

        def prefill(*row: str | None) -> Any:  # the judge, guarded: what it raises is theirs
            return call_user(judge, *row, what="--prefill", spec=args.prefill)

    from ..run.factories import UserCodeError

    try:
        corpus = corpus_columns(args.corpus) if args.corpus else None
        found = pool(
            golden,
            runs,
            depth=args.depth,
            include_heldout=args.include_heldout,
            corpus=corpus,
            prefill=prefill,
            prefill_name=args.prefill,
        )
        write_worksheet(found.rows, args.output)
    except UserCodeError as exc:  # the --prefill judge raised: nothing was written
        return _user_code_error(args, exc)
    except InputError as exc:
        echo(exc, err=True)
        return EXIT_FAILED
    for note in notes:
        echo(note)
    if found.unknown_queries:
        shown = ", ".join(found.unknown_queries[:10])
        echo(
            f"note: {len(found.unknown_queries)} query ids of the runs are not in the golden "
            f"set (ignored): {for_terminal(shown)}"
        )
    if found.heldout_left_out:
        echo(
            f"note: {found.heldout_left_out} held-out queries left out (--include-heldout "
            "pools them)"
        )
    prefilled = sum(1 for row in found.rows if row.grade is not None)
    machine = f", {prefilled} pre-graded by {args.prefill}" if args.prefill else ""
    echo(
        f"wrote {len(found.rows)} unjudged documents of {found.queries} queries "
        f"({len(runs)} runs, top {args.depth}{machine}) to {for_terminal(args.output)}; fill "
        f"in the grade column, then: pytest-retrieval golden merge "
        f"{for_terminal(str(golden_path))} {for_terminal(args.output)} --output NEW_GOLDEN"
    )
    return EXIT_OK


def run_merge(args: argparse.Namespace) -> int:
    """``golden merge``: add a worksheet's graded rows to a golden set, with provenance."""
    from datetime import datetime, timezone

    from ..errors import Problem
    from ..formats.labels import merge
    from ..formats.worksheet import read_worksheet

    if missing_input(args, ("golden set", args.path), ("worksheet", args.worksheet)):
        return EXIT_USAGE
    clash = _clobbers(
        args,
        [("--output", args.output)],
        [("the golden set", args.path), ("the worksheet", args.worksheet)],
    )
    if clash is not None:
        return clash
    suffix = os.path.splitext(args.output)[1].lower()
    target = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}.get(suffix)
    if target is None:
        return _error(args, f"cannot tell the format of {args.output}: use .yaml, .json or .jsonl")
    golden = load_input(args, args.path)
    if isinstance(golden, int):
        return golden
    try:
        rows, problems = read_worksheet(args.worksheet)
    except InputError as exc:
        echo(exc, err=True)
        return EXIT_FAILED
    labeled_by = args.labeled_by or f"worksheet:{os.path.basename(args.worksheet)}"
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    result = None
    try:
        result = merge(
            golden,
            rows,
            labeled_by=labeled_by,
            labeled_at=now,
            overwrite=args.overwrite,
            source=args.worksheet,
        )
    except InputError as exc:
        problems = problems + list(exc.problems)
    if problems or result is None:
        error = InputError(
            problems or [Problem("nothing to merge")],
            title=f"{args.worksheet}: {plural(len(problems), 'problem')}, nothing merged",
        )
        echo(error, err=True)
        return EXIT_FAILED
    try:
        write_golden(result.golden, args.output, format=target)
    except (InputError, OSError) as exc:
        return _error(args, str(exc))
    merged = result.added + result.changed
    changed = ", ".join(result.changed_queries[:10]) + (
        f" (+{len(result.changed_queries) - 10} more)" if len(result.changed_queries) > 10 else ""
    )
    echo(
        f"merged {merged} judgments into {for_terminal(args.output)} ({result.added} added, "
        f"{result.changed} changed, {result.unchanged} already there, {result.blank} blank "
        f"rows skipped; {result.machine} machine-made); labeled by {for_terminal(labeled_by)}"
    )
    echo(
        f"fingerprint {golden.short_fingerprint} → {result.golden.short_fingerprint}; "
        f"{len(result.changed_queries)} queries changed"
        + (f": {for_terminal(changed)}" if changed else "")
    )
    return EXIT_OK
