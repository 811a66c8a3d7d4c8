"""``pytest-retrieval golden``: validate, summarise and convert golden sets.

``golden validate PATH [--corpus IDS]`` exits 0 if the golden set is valid and 1 with the full
problem list otherwise (with a corpus, its access rules are checked as the run checks them:
an unknown or mistyped tenant, groups that are no names, a denied document judged relevant); it
also lists judged documents that are duplicates of each other (from
``--duplicates FILE``, or computed from the corpus' texts: ``--dedup exact`` by default when the
corpus has texts, ``--dedup near[=T]``). ``golden stats PATH`` prints counts per split and slice,
judged docs per query, the grade histogram, the no-answer count and the fingerprint;
``golden convert SRC DST`` rewrites any readable format as YAML, JSON or JSONL. ``golden pool``
and ``golden merge`` (the labelling worksheet, out and back) are registered here too, from
:mod:`pytest_retrieval.cli.labelling`. A missing input file is a usage error (2).
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..errors import GoldenSetError, InputError
from ..formats.golden_io import READ_FORMATS, WRITE_FORMATS, write_golden
from ..golden.model import DEFAULT_HELDOUT_SPLIT, GoldenSet
from ..text import for_terminal
from .golden_input import EXIT_FAILED, EXIT_OK, EXIT_USAGE, load_input
from .labelling import register as register_labelling
from .output import echo, echo_json, error_line

if TYPE_CHECKING:
    from ..scoring.dedup import DuplicateGroups


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``golden`` command with its ``validate``, ``stats`` and ``convert`` subcommands,
    then ``pool`` and ``merge`` (:func:`pytest_retrieval.cli.labelling.register`)."""
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
    register_labelling(commands)


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


def run_validate(args: argparse.Namespace) -> int:
    """``golden validate``: 0 and a one-line summary if valid, else 1 and every problem."""
    golden = load_input(args, args.path, args.corpus)
    if isinstance(golden, int):
        return golden
    if args.corpus:
        try:
            _check_access(golden, args.corpus)
        except GoldenSetError as exc:
            echo(exc, err=True)
            return EXIT_FAILED
    splits = Counter(q.split for q in golden)
    per_split = ", ".join(f"{name} {splits[name]}" for name in golden.splits)
    checked = f", every judged doc is in {args.corpus}" if args.corpus else ""
    try:
        groups = _duplicate_groups(args)
    except InputError as exc:
        echo(exc, err=True)
        return EXIT_USAGE if args.dedup is not None or args.duplicates else EXIT_FAILED
    echo(
        f"ok: {args.path}: {len(golden)} queries ({per_split}){checked}; "
        f"fingerprint {golden.short_fingerprint}"
    )
    if groups is not None:
        for line in duplicate_lines(golden, groups):
            echo(line)
    return EXIT_OK


def _check_access(golden: GoldenSet, corpus: str) -> None:
    """Refuse what the run would refuse of ``golden`` under the access rules of ``corpus``
    (its tenant, groups and superseded_by metadata): the same checks and messages, from their
    one home (:func:`pytest_retrieval.golden.access.access_problems`). A file of bare ids has
    no metadata, so nothing to check."""
    from ..formats.corpus import read_access_rules
    from ..golden.access import access_error, access_problems

    rules = read_access_rules(corpus)
    problems = access_problems(golden.queries, rules, source=golden.source)
    if problems:
        raise access_error(problems, rules)


def _duplicate_groups(args: argparse.Namespace) -> DuplicateGroups | None:
    """The groups ``validate`` checks the judgments against (None: none asked for or possible)."""
    from ..scoring import dedup

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
    from ..scoring.dedup import judged_duplicates

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
    stats = {
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
    keys = Counter(key for q in golden for key in q.context)
    if keys:  # only then: the numbers of a set without contexts are as they were
        stats["contexts"] = {
            "queries": sum(1 for q in golden if q.context),
            "keys": dict(sorted(keys.items())),
        }
    return stats


def _provenance_stats(golden: GoldenSet) -> dict[str, Any]:
    from ..formats.labels import provenance_counts

    counts: dict[str, Any] = provenance_counts(golden)
    by = Counter(label.by for q in golden for label in q.provenance.values())
    counts["by"] = dict(sorted(by.items()))
    return counts


def run_stats(args: argparse.Namespace) -> int:
    """``golden stats``: tables (or ``--json``) describing a valid golden set."""
    golden = load_input(args, args.path, args.corpus)
    if isinstance(golden, int):
        return golden
    data = golden_stats(golden)
    if args.json:
        echo_json(data)
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
    echo(tabulate(about, tablefmt="plain"))
    echo()
    splits = [(name, s["queries"], s["no_answer"]) for name, s in data["splits"].items()]
    echo(tabulate(splits, headers=["split", "queries", "no-answer"], tablefmt="simple"))
    echo()
    slices: list[tuple[str, int]] = list(data["slices"].items())
    slices.append(("(no slice)", data["without_slice"]))
    echo(tabulate(slices, headers=["slice", "queries"], tablefmt="simple"))
    echo()
    per_query = data["judged_per_query"]
    echo(
        f"judged docs per query: min {per_query['min']}, median {per_query['median']:g}, "
        f"mean {per_query['mean']:g}, max {per_query['max']}"
    )
    echo()
    grades = list(data["grades"].items())
    echo(tabulate(grades, headers=["grade", "judgments"], tablefmt="simple"))
    if "contexts" in data:
        keys = ", ".join(f"{for_terminal(k)} {n}" for k, n in data["contexts"]["keys"].items())
        echo()
        echo(f"queries with a context: {data['contexts']['queries']} (keys: {keys})")
    provenance = data["provenance"]
    if provenance["with_provenance"]:
        echo()
        echo(
            f"judgments with provenance: {provenance['with_provenance']} of "
            f"{provenance['judgments']} ({provenance['machine']} machine-made, "
            f"{provenance['human']} by people)"
        )
        rows = [(for_terminal(name), count) for name, count in provenance["by"].items()]
        echo(tabulate(rows, headers=["labeled by", "judgments"], tablefmt="simple"))
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
            error_line(
                "pytest-retrieval golden convert",
                f"cannot tell the output format of {args.dst}; use a .yaml, .json or .jsonl "
                "name, or --to",
            )
            return EXIT_USAGE
    from ..files import clobbered_inputs

    clash = clobbered_inputs(
        [("DST", args.dst)],
        [("SRC", args.src), ("--topics", args.topics), ("--corpus", getattr(args, "corpus", None))],
    )
    if clash:
        error_line("pytest-retrieval golden convert", str(clash[0]))
        return EXIT_USAGE
    golden = load_input(args, args.src)
    if isinstance(golden, int):
        return golden
    try:
        write_golden(golden, args.dst, format=target_format)
    except GoldenSetError as exc:
        echo(exc, err=True)
        return EXIT_FAILED
    except (InputError, OSError) as exc:
        error_line("pytest-retrieval golden convert", str(exc).replace("\n", " "))
        return EXIT_USAGE
    echo(
        f"wrote {len(golden)} queries to {args.dst} ({target_format}); "
        f"fingerprint {golden.short_fingerprint}"
    )
    return EXIT_OK
