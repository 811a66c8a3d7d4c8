"""``pytest-retrieval golden``: validate, summarise and convert golden sets.

``golden validate PATH [--corpus IDS]`` exits 0 if the golden set is valid and 1 with the full
problem list otherwise; it also lists judged documents that are duplicates of each other (from
``--duplicates FILE``, or computed from the corpus' texts: ``--dedup exact`` by default when the
corpus has texts, ``--dedup near[=T]``). ``golden stats PATH`` prints counts per split and slice,
judged docs per query, the grade histogram, the no-answer count and the fingerprint;
``golden convert SRC DST`` rewrites any readable format as YAML, JSON or JSONL; ``golden pool
RUN... --depth N --output WORKSHEET`` lists the unjudged documents the runs ranked in their top
N, and ``golden merge GOLDEN WORKSHEET --output NEW`` adds the graded rows back (see
:mod:`pytest_retrieval.labels`). A missing input file is a usage error (2).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..errors import GoldenSetError, InputError
from ..formats.golden_io import READ_FORMATS, WRITE_FORMATS, load_golden, write_golden
from ..golden import DEFAULT_HELDOUT_SPLIT, GoldenSet
from ..text import for_terminal, guard_lines

if TYPE_CHECKING:
    from ..dedup import DuplicateGroups

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``golden`` command with its ``validate``, ``stats`` and ``convert`` subcommands."""
    golden = subparsers.add_parser(
        "golden",
        help="validate, summarise and convert golden sets",
        description="Validate, summarise and convert golden sets (labelled queries).",
    )
    commands = golden.add_subparsers(dest="golden_command", metavar="SUBCOMMAND", required=True)

    validate = commands.add_parser(
        "validate",
        help="check a golden set and list every problem (exit 1 if any)",
        description="Check a golden set and list every problem found; exit 0 if there is none.",
    )
    validate.add_argument("path", metavar="PATH", help="golden-set file or BEIR folder")
    _input_options(validate)
    validate.add_argument(
        "--duplicates",
        metavar="FILE",
        help="duplicate groups (TSV doc<TAB>group, or JSON): list judged documents that are "
        "copies of each other",
    )
    validate.add_argument(
        "--dedup",
        metavar="MODE",
        help="compute duplicate groups from the --corpus texts: exact (default when the corpus "
        "has texts), near or near=JACCARD (needs pytest-retrieval[dedup]), or off",
    )
    validate.set_defaults(func=run_validate)

    stats = commands.add_parser(
        "stats",
        help="print counts per split and slice, grades and the fingerprint",
        description=(
            "Print queries per split and slice, judged docs per query, the grade histogram, "
            "the no-answer count and the fingerprint."
        ),
    )
    stats.add_argument("path", metavar="PATH", help="golden-set file or BEIR folder")
    _input_options(stats)
    stats.add_argument("--json", action="store_true", help="print JSON instead of tables")
    stats.set_defaults(func=run_stats)

    convert = commands.add_parser(
        "convert",
        help="convert a golden set to YAML, JSON or JSONL",
        description=(
            "Read a golden set in any supported format and write it as YAML (canonical), JSON "
            "or JSONL. The fingerprint is unchanged."
        ),
    )
    convert.add_argument("src", metavar="SRC", help="golden-set file or BEIR folder to read")
    convert.add_argument("dst", metavar="DST", help="file to write (.yaml, .json or .jsonl)")
    convert.add_argument(
        "--from",
        dest="format",
        choices=READ_FORMATS,
        help="format of SRC (default: from its name)",
    )
    convert.add_argument(
        "--to",
        dest="to_format",
        choices=WRITE_FORMATS,
        help="format of DST (default: from its suffix)",
    )
    convert.add_argument("--topics", metavar="FILE", help="query texts for TREC qrels")
    convert.set_defaults(func=run_convert)
    _register_labelling(commands)


def _register_labelling(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``golden pool`` and ``golden merge``: the labelling worksheet, out and back."""
    from .args import positive_int

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
    pool.add_argument("--depth", type=positive_int, required=True, metavar="N", help="top N")
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


def _input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=READ_FORMATS, help="format of PATH (default: from its name)"
    )
    parser.add_argument(
        "--corpus",
        metavar="IDS",
        help="check judged doc ids against a file of ids (one per line), a BEIR corpus.jsonl "
        "or a BEIR folder",
    )
    parser.add_argument(
        "--topics", metavar="FILE", help="query texts for TREC qrels (TSV or TREC topics)"
    )
    parser.add_argument(
        "--heldout-split",
        default=DEFAULT_HELDOUT_SPLIT,
        metavar="NAME",
        help=f"name of the held-out split (default {DEFAULT_HELDOUT_SPLIT})",
    )


def _missing(args: argparse.Namespace, *paths: tuple[str, str | None]) -> bool:
    """Print one line for the first input that does not exist; True if there was one."""
    for what, path in paths:
        if path is not None and not os.path.exists(path):
            print(
                f"pytest-retrieval golden {args.golden_command}: error: {what} not found: "
                f"{for_terminal(path)}",
                file=sys.stderr,
            )
            return True
    return False


def _load(args: argparse.Namespace, path: str, corpus: str | None = None) -> GoldenSet | int:
    """The golden set, or the exit status after printing why it could not be loaded."""
    if _missing(args, ("golden set", path), ("corpus", corpus), ("topics file", args.topics)):
        return EXIT_USAGE
    try:
        return load_golden(
            path,
            format=args.format,
            corpus=corpus,
            topics=args.topics,
            heldout_split=getattr(args, "heldout_split", DEFAULT_HELDOUT_SPLIT),
        )
    except GoldenSetError as exc:
        print(guard_lines(str(exc)), file=sys.stderr)
        return EXIT_FAILED


def run_validate(args: argparse.Namespace) -> int:
    """``golden validate``: 0 and a one-line summary if valid, else 1 and every problem."""
    golden = _load(args, args.path, args.corpus)
    if isinstance(golden, int):
        return golden
    splits = Counter(q.split for q in golden)
    per_split = ", ".join(f"{name} {splits[name]}" for name in golden.splits)
    checked = f", every judged doc is in {args.corpus}" if args.corpus else ""
    try:
        groups = _duplicate_groups(args)
    except InputError as exc:
        print(guard_lines(str(exc)), file=sys.stderr)
        return EXIT_USAGE if args.dedup is not None or args.duplicates else EXIT_FAILED
    print(
        f"ok: {args.path}: {len(golden)} queries ({per_split}){checked}; "
        f"fingerprint {golden.short_fingerprint}"
    )
    if groups is not None:
        for line in duplicate_lines(golden, groups):
            print(guard_lines(line))
    return EXIT_OK


def _duplicate_groups(args: argparse.Namespace) -> DuplicateGroups | None:
    """The groups ``validate`` checks the judgments against (None: none asked for or possible)."""
    from .. import dedup

    if args.duplicates:
        return dedup.load_duplicates(args.duplicates, setting="--duplicates")
    mode = (args.dedup or "").strip().lower()
    if mode == "off" or not args.corpus:
        if args.dedup is not None and mode != "off":
            raise InputError(
                f"--dedup {args.dedup} computes duplicates from --corpus texts; pass --corpus"
            )
        return None
    from ..formats.corpus import read_corpus_texts

    try:
        texts = read_corpus_texts(args.corpus)
    except GoldenSetError:
        if args.dedup is None:
            return None  # a file of bare ids: nothing to compare, and nobody asked
        raise
    source = f"--dedup {mode or 'exact'} over {args.corpus}"
    if mode in ("", "exact"):
        return dedup.exact_groups(texts, source=source)
    head, _equals, threshold = mode.partition("=")
    if head != "near":
        raise InputError(f"--dedup {args.dedup}: not one of off, exact, near, near=JACCARD")
    try:
        value = float(threshold) if threshold else dedup.DEFAULT_NEAR_THRESHOLD
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise InputError(f"--dedup {args.dedup}: the Jaccard threshold must be in (0, 1]")
    return dedup.near_groups(texts, value, source=source)


def duplicate_lines(golden: GoldenSet, groups: DuplicateGroups) -> list[str]:
    """The judged documents that are copies of each other, one group a line, with the queries
    that judge them (and a warning where one query grades copies differently)."""
    from ..dedup import judged_duplicates

    found = judged_duplicates({q.id: q.judgments for q in golden}, groups)
    if not found:
        return [f"duplicates: no two judged documents are copies ({groups.describe()})"]
    lines = [
        f"duplicates: {len(found)} group(s) of judged documents are copies of each other "
        f"({groups.describe()}); scored per group, each counts once:"
    ]
    for _key, members, per_query in found:
        shown = []
        differ = []
        for qid, grades in sorted(per_query.items()):
            shown.append(f"{qid} ({', '.join(f'{d} {g}' for d, g in sorted(grades.items()))})")
            if len(set(grades.values())) > 1:
                differ.append(qid)
        more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
        lines.append(f"  {', '.join(members)}: judged in {'; '.join(shown[:5])}{more}")
        if differ:
            lines.append(
                f"    warning: graded differently within {', '.join(differ[:5])}: copies usually "
                "deserve one grade (a group takes its best member's)"
            )
    return lines


def golden_stats(golden: GoldenSet) -> dict[str, Any]:
    """The numbers ``golden stats`` prints, as plain data."""
    judged = [len(q.judgments) for q in golden]
    grades = Counter(grade for q in golden for grade in q.judgments.values())
    no_slice = sum(1 for q in golden if not q.slices)
    return {
        "source": golden.source,
        "name": golden.name,
        "corpus_version": golden.corpus_version,
        "queries": len(golden),
        "no_answer": sum(1 for q in golden if q.is_no_answer),
        "splits": {
            split: {
                "queries": sum(1 for q in golden if q.split == split),
                "no_answer": sum(1 for q in golden if q.split == split and q.is_no_answer),
            }
            for split in golden.splits
        },
        "slices": {name: len(golden.in_slice(name)) for name in golden.slices},
        "without_slice": no_slice,
        "judged_per_query": {
            "min": min(judged, default=0),
            "median": statistics.median(judged) if judged else 0,
            "mean": round(statistics.fmean(judged), 2) if judged else 0,
            "max": max(judged, default=0),
        },
        "grades": {str(grade): grades[grade] for grade in sorted(grades)},
        "provenance": _provenance_stats(golden),
        "fingerprint": golden.fingerprint,
    }


def _provenance_stats(golden: GoldenSet) -> dict[str, Any]:
    from ..labels import provenance_counts

    counts: dict[str, Any] = provenance_counts(golden)
    by = Counter(label.by for q in golden for label in q.provenance.values())
    counts["by"] = dict(sorted(by.items()))
    return counts


def run_stats(args: argparse.Namespace) -> int:
    """``golden stats``: tables (or ``--json``) describing a valid golden set."""
    golden = _load(args, args.path, args.corpus)
    if isinstance(golden, int):
        return golden
    data = golden_stats(golden)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return EXIT_OK
    from tabulate import tabulate

    about = [("source", args.path)]
    if golden.name:
        about.append(("name", golden.name))
    if golden.corpus_version:
        about.append(("corpus_version", golden.corpus_version))
    about += [
        ("queries", str(data["queries"])),
        ("no-answer queries", str(data["no_answer"])),
        ("fingerprint", f"{golden.short_fingerprint} (sha256 {golden.fingerprint})"),
    ]
    print(tabulate(about, tablefmt="plain"))
    print()
    splits = [(name, s["queries"], s["no_answer"]) for name, s in data["splits"].items()]
    print(tabulate(splits, headers=["split", "queries", "no-answer"], tablefmt="simple"))
    print()
    slices: list[tuple[str, int]] = list(data["slices"].items())
    slices.append(("(no slice)", data["without_slice"]))
    print(tabulate(slices, headers=["slice", "queries"], tablefmt="simple"))
    print()
    per_query = data["judged_per_query"]
    print(
        f"judged docs per query: min {per_query['min']}, median {per_query['median']:g}, "
        f"mean {per_query['mean']:g}, max {per_query['max']}"
    )
    print()
    grades = list(data["grades"].items())
    print(tabulate(grades, headers=["grade", "judgments"], tablefmt="simple"))
    provenance = data["provenance"]
    if provenance["with_provenance"]:
        print()
        print(
            f"judgments with provenance: {provenance['with_provenance']} of "
            f"{provenance['judgments']} ({provenance['machine']} machine-made, "
            f"{provenance['human']} by people)"
        )
        rows = [(for_terminal(name), count) for name, count in provenance["by"].items()]
        print(tabulate(rows, headers=["labeled by", "judgments"], tablefmt="simple"))
    return EXIT_OK


def run_convert(args: argparse.Namespace) -> int:
    """``golden convert``: read SRC in any format, write DST as YAML, JSON or JSONL."""
    target_format = args.to_format
    if target_format is None:
        suffix = os.path.splitext(args.dst)[1].lower()
        target_format = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}.get(
            suffix
        )
        if target_format is None:
            print(
                f"pytest-retrieval golden convert: error: cannot tell the output format of "
                f"{args.dst}; use a .yaml, .json or .jsonl name, or --to",
                file=sys.stderr,
            )
            return EXIT_USAGE
    golden = _load(args, args.src)
    if isinstance(golden, int):
        return golden
    try:
        write_golden(golden, args.dst, format=target_format)
    except GoldenSetError as exc:
        print(guard_lines(str(exc)), file=sys.stderr)
        return EXIT_FAILED
    except (InputError, OSError) as exc:
        message = for_terminal(str(exc).replace("\n", " "))
        print(f"pytest-retrieval golden convert: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"wrote {len(golden)} queries to {args.dst} ({target_format}); "
        f"fingerprint {golden.short_fingerprint}"
    )
    return EXIT_OK


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
        from ..files import read_text_file

        try:
            head = json.loads(read_text_file(path, what="run"))
        except (json.JSONDecodeError, RecursionError, ValueError):
            head = None
        schema = head.get("schema") if isinstance(head, dict) else None
        if schema == "pytest-retrieval/artifact":
            from ..report.artifact import read_artifact

            data = read_artifact(path)
            stages = [str(s) for s in data.get("stages") or ()]
            chosen = stage or (stages[-1] if stages else "retriever")
            rankings = {
                str(row["id"]): tuple(str(d) for d in (row.get("rankings") or {}).get(chosen, ()))
                for row in data.get("queries") or ()
            }
            return rankings, (data.get("golden") or {}).get("path"), True
        if schema == "pytest-retrieval/baseline":
            from ..baseline import load_baseline

            baseline = load_baseline(path)
            chosen = stage or (baseline.stages[-1] if baseline.stages else "retriever")
            rankings = {qid: q.top.get(chosen, ()) for qid, q in baseline.queries.items()}
            return rankings, None, baseline.schema_version < 2
    from ..formats.runs import load_run_file

    return dict(load_run_file(path).rankings), None, False


def run_pool(args: argparse.Namespace) -> int:
    """``golden pool``: write the worksheet of unjudged top-N documents of the runs."""
    from ..errors import RunFileError
    from ..formats.worksheet import read_corpus_texts, write_worksheet
    from ..labels import pool

    if _missing(args, *(("run", path) for path in args.runs), ("corpus", args.corpus)):
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
    golden = _load(args, golden_path)
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

    if _missing(args, ("golden set", args.path), ("worksheet", args.worksheet)):
        return EXIT_USAGE
    suffix = os.path.splitext(args.output)[1].lower()
    target = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}.get(suffix)
    if target is None:
        return _error(args, f"cannot tell the format of {args.output}: use .yaml, .json or .jsonl")
    golden = _load(args, args.path)
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
