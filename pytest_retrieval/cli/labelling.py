"""``pytest-retrieval golden pool`` and ``golden merge``: the labelling worksheet, out and back.

``golden pool RUN... --depth N --output WORKSHEET`` lists the unjudged documents the runs ranked
in their top N; ``golden merge GOLDEN WORKSHEET --output NEW`` adds the graded rows back, with
their provenance (see :mod:`pytest_retrieval.labels`). A missing input file is a usage error
(2).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import InputError
from ..formats.golden_io import READ_FORMATS, write_golden
from ..golden import DEFAULT_HELDOUT_SPLIT
from ..stages import RETRIEVER_STAGE, final_stage
from ..text import for_terminal, guard_lines
from .golden_input import EXIT_FAILED, EXIT_OK, EXIT_USAGE, load_input, missing_input


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
    text = for_terminal(message.replace("\n", " "))
    print(f"pytest-retrieval golden {args.golden_command}: error: {text}", file=sys.stderr)
    return EXIT_USAGE


def _pool_input(
    path: str, stage: str | None
) -> tuple[dict[str, tuple[str, ...]], str | None, bool]:
    """(rankings, golden path recorded, cut short) of an artifact, a baseline or a run file.

    ``cut short``: the file keeps only the top of each ranking (artifacts keep the largest K of
    ``retrieval_ks``, version-1 baselines 10).
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
            chosen = stage or final_stage(stages) or RETRIEVER_STAGE
            rankings = {
                str(row["id"]): tuple(str(d) for d in (row.get("rankings") or {}).get(chosen, ()))
                for row in data.get("queries") or ()
            }
            return rankings, (data.get("golden") or {}).get("path"), True
        if schema == "pytest-retrieval/baseline":
            from ..baseline import load_baseline

            baseline = load_baseline(path)
            chosen = stage or final_stage(baseline.stages) or RETRIEVER_STAGE
            rankings = {qid: q.top.get(chosen, ()) for qid, q in baseline.queries.items()}
            return rankings, None, baseline.schema_version < 2
    from ..formats.runs import load_run_file

    return dict(load_run_file(path).rankings), None, False


def run_pool(args: argparse.Namespace) -> int:
    """``golden pool``: write the worksheet of unjudged top-N documents of the runs."""
    from ..errors import RunFileError
    from ..formats.worksheet import read_corpus_texts, write_worksheet
    from ..labels import pool

    if missing_input(args, *(("run", path) for path in args.runs), ("corpus", args.corpus)):
        return EXIT_USAGE
    runs: list[tuple[str, dict[str, tuple[str, ...]]]] = []
    golden_path = args.golden
    notes: list[str] = []
    names: set[str] = set()
    try:
        for path in args.runs:
            rankings, recorded, cut = _pool_input(path, args.stage)
            golden_path = golden_path or recorded
            name = os.path.splitext(os.path.basename(path))[0]
            name = path if name in names else name
            names.add(name)
            longest = max((len(r) for r in rankings.values()), default=0)
            if cut and longest < args.depth:
                notes.append(
                    f"note: {path} keeps rankings to depth {longest} only, so it is pooled to "
                    f"{longest}, not {args.depth} (add {args.depth} to retrieval_ks for deeper "
                    "artifacts)"
                )
            runs.append((name, rankings))
    except (InputError, RunFileError) as exc:
        print(guard_lines(str(exc)), file=sys.stderr)
        return EXIT_FAILED
    if golden_path is None:
        return _error(args, "no golden set: pass --golden GOLDEN (no artifact names one)")
    golden = load_input(args, golden_path)
    if isinstance(golden, int):
        return golden
    prefill = None
    if args.prefill:
        from ..specs import import_object

        # The console script's sys.path lacks the current folder: the user's module is there.
        sys.path.insert(0, os.getcwd())
        try:
            prefill = import_object(args.prefill, "--prefill")
        except InputError as exc:
            return _error(args, str(exc))
        if not callable(prefill):
            return _error(args, f"--prefill {args.prefill} is not a function")
    try:
        corpus = read_corpus_texts(args.corpus) if args.corpus else None
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
    except InputError as exc:
        print(guard_lines(str(exc)), file=sys.stderr)
        return EXIT_FAILED
    for note in notes:
        print(for_terminal(note))
    if found.unknown_queries:
        shown = ", ".join(found.unknown_queries[:10])
        print(
            f"note: {len(found.unknown_queries)} query ids of the runs are not in the golden "
            f"set (ignored): {for_terminal(shown)}"
        )
    if found.heldout_left_out:
        print(
            f"note: {found.heldout_left_out} held-out queries left out (--include-heldout "
            "pools them)"
        )
    prefilled = sum(1 for row in found.rows if row.grade is not None)
    machine = f", {prefilled} pre-graded by {args.prefill}" if args.prefill else ""
    print(
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
    from ..formats.worksheet import read_worksheet
    from ..labels import merge

    if missing_input(args, ("golden set", args.path), ("worksheet", args.worksheet)):
        return EXIT_USAGE
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
        print(guard_lines(str(exc)), file=sys.stderr)
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
            title=f"{args.worksheet}: {len(problems)} problem(s), nothing merged",
        )
        print(guard_lines(str(error)), file=sys.stderr)
        return EXIT_FAILED
    try:
        write_golden(result.golden, args.output, format=target)
    except (InputError, OSError) as exc:
        return _error(args, str(exc))
    merged = result.added + result.changed
    changed = ", ".join(result.changed_queries[:10]) + (
        f" (+{len(result.changed_queries) - 10} more)" if len(result.changed_queries) > 10 else ""
    )
    print(
        f"merged {merged} judgments into {for_terminal(args.output)} ({result.added} added, "
        f"{result.changed} changed, {result.unchanged} already there, {result.blank} blank "
        f"rows skipped; {result.machine} machine-made); labeled by {for_terminal(labeled_by)}"
    )
    print(
        f"fingerprint {golden.short_fingerprint} → {result.golden.short_fingerprint}; "
        f"{len(result.changed_queries)} queries changed"
        + (f": {for_terminal(changed)}" if changed else "")
    )
    return EXIT_OK
