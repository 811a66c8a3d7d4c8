"""``pytest-retrieval compare`` and ``pytest-retrieval gate``: gating a stored run, offline.

Both read the JSON artifact a pytest run wrote (``--retrieval-json``) and apply the very same
code as the plugin: ``compare`` the regression rule against a baseline, ``gate`` the thresholds
(and, with ``--baseline``, the budgets), so a team can change a threshold without running the
retriever again. Exit status: 0 every check passed, 1 a check failed, 2 usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from ..reading import exists
from ..verdict import Stop
from .args import probability, tampered
from .output import echo

if TYPE_CHECKING:
    from ..gates.declared import Budget, Threshold
    from ..regression.snapshot import Snapshot
    from ..scoring.dedup import DuplicateGroups
    from ..scoring.evaluate import Conventions


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compare`` and ``gate`` commands."""
    compare = subparsers.add_parser(
        "compare",
        help="check a stored run (JSON artifact) for regressions against a baseline",
        description=(
            "Apply the regression rule (drop, or rise of forbidden@K / stale@K, larger than the "
            "budget AND significant in a "
            "paired sign-flip test, family-wise over every check as the plugin does) to a "
            "run's JSON artifact against a baseline file, and print the per-query diff. "
            "Exit 0 no regression, 1 regression, 2 usage error."
        ),
    )
    compare.add_argument("baseline", metavar="BASELINE", help="baseline file")
    compare.add_argument("artifact", metavar="ARTIFACT", help="JSON artifact of the run")
    _budget_options(compare)
    compare.set_defaults(func=run_compare)

    gate = subparsers.add_parser(
        "gate",
        help="re-apply thresholds (and budgets) to a stored run, without the retriever",
        description=(
            "Re-apply thresholds such as 'recall@50 >= 0.9 slice=multi-hop' to a run's JSON "
            "artifact; with --baseline, apply the regression budgets too. Without --threshold "
            "or --gates, the thresholds recorded in the artifact's settings are used."
        ),
    )
    gate.add_argument("artifact", metavar="ARTIFACT", help="JSON artifact of the run")
    gate.add_argument(
        "-t",
        "--threshold",
        dest="thresholds",
        action="append",
        metavar="GATE",
        help="a gate line, e.g. 'ndcg@10 >= 0.6 slice=multi-hop' (repeatable)",
    )
    gate.add_argument("--baseline", metavar="BASELINE", help="also check regressions")
    _budget_options(gate)
    gate.set_defaults(func=run_gate)


def _budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-b",
        "--budget",
        dest="budgets",
        action="append",
        metavar="BUDGET",
        help="a regression budget, e.g. 'ndcg@10 0.02' or 'recall@50 2%%' (repeatable; default: "
        "the run's declared budgets, else the default checks)",
    )
    parser.add_argument(
        "--gates", metavar="FILE", help="a retrieval-gates.yaml (thresholds and regressions)"
    )
    parser.add_argument("--alpha", type=probability, help="significance level (default: the run's)")
    parser.add_argument(
        "--mode",
        choices=("strict", "intersect", "rescore"),
        help=(
            "when the golden set changed: strict (incomparable), intersect, or rescore (the "
            "baseline's stored rankings re-scored against the current labels)"
        ),
    )
    parser.add_argument(
        "--duplicates",
        metavar="FILE",
        help=(
            "the duplicate groups the run was scored with, for --mode rescore (default: the "
            "run's own groups file or corpus, when they are still where the run read them)"
        ),
    )
    parser.add_argument(
        "--multiplicity",
        choices=("maxt", "minp", "holm", "none"),
        help="family-wise control over the checks (default: the run's, else maxt)",
    )
    parser.add_argument(
        "--budget-test",
        choices=("drop", "beyond-budget"),
        help="what a check tests (default: the run's, else drop)",
    )


def _read_artifact(path: str) -> dict[str, Any]:
    """An artifact (checked by the ``report`` command's reader) that has a per-query snapshot."""
    from ..report.artifact import read_artifact

    data = read_artifact(path)
    stop = Stop.from_dict(data)
    if stop is not None:  # nothing was scored: nothing to gate or compare
        first = stop.reason.splitlines()[0] if stop.reason else ""
        raise InputError(
            Problem(
                f"the artifact is of a run that was {stop.status}, so it has no scores: {first}",
                fix=stop.fix or "run pytest again once the reason is fixed",
                source=path,
            )
        )
    if not data.get("snapshot"):
        raise InputError(
            Problem(
                "the artifact has no per-query snapshot (did the run score anything?)", source=path
            )
        )
    return data


def _snapshot(document: dict[str, Any], source: str) -> Snapshot:
    from ..regression.baseline import snapshot_problems
    from ..regression.snapshot import Snapshot

    problems = snapshot_problems(
        document["snapshot"],
        source=f"{source} (snapshot)",
        fix="write it again with pytest --retrieval-json PATH; do not edit it by hand",
    )
    if problems:
        raise InputError(problems, title=f"{source}: the run's snapshot is not whole")
    try:
        return Snapshot.from_dict(document["snapshot"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(
            Problem(f"malformed snapshot in the artifact ({exc!r})", source=source)
        ) from None


def _gates_file(
    path: str | None,
) -> tuple[list[tuple[str, int | None]], list[tuple[str, int | None]]]:
    from ..gates.declared import gates_file_entries

    if path is None:
        return [], []
    if not exists(path):  # a FIFO, a folder or a symlink loop: the reader names what it is
        raise InputError(Problem("gates file not found", fix="check the path", source=path))
    return gates_file_entries(path)


def _scorable_slices(snapshot: Snapshot) -> list[str]:
    """Slices with at least one query that has a value (what ``slice=*`` expands to)."""
    names: set[str] = set()
    for query in snapshot.queries.values():
        if any(v is not None for stage in query.metrics.values() for v in stage.values()):
            names.update(query.slices)
    return sorted(names)


def _budgets(
    args: argparse.Namespace, document: dict[str, Any], snapshot: Snapshot
) -> list[Budget]:
    from ..gates.declared import default_budgets, expand_slices, parse_budget

    lines: list[tuple[str, str | None, int | None]] = [
        (line, "--budget", None) for line in args.budgets or ()
    ]
    lines += [(line, args.gates, n) for line, n in _gates_file(args.gates)[1]]
    settings = document.get("settings", {})
    if not lines:
        lines = [
            (line, "the run's declared budgets", None)
            for line in document.get("declared", {}).get("regressions", ())
        ]
    if not lines:
        return default_budgets(settings.get("ks") or [10])
    budgets: list[Budget] = []
    slices = _scorable_slices(snapshot)
    for line, source, number in lines:
        budget = parse_budget(line, source=source, line_number=number)
        budgets.extend(expand_slices(budget, slices))
    return budgets


def _conventions(
    args: argparse.Namespace, document: dict[str, Any], snapshot: Snapshot
) -> Conventions | None:
    """What the rescore mode scores the stored rankings with: the conventions the run's
    snapshot recorded, and the duplicate groups it was scored with (``--duplicates``, else
    the run's own groups read again from where it read them). None when the recorded settings
    cannot make conventions: the comparison then says so."""
    from ..scoring.evaluate import Conventions

    duplicates = _duplicate_groups(args, document) if "dedup" in snapshot.settings else None
    try:
        return Conventions.from_recorded(snapshot.settings, duplicates=duplicates)
    except ValueError:
        return None


def _duplicate_groups(args: argparse.Namespace, document: dict[str, Any]) -> DuplicateGroups | None:
    """``--duplicates FILE``, else the groups the run recorded where they came from, when that
    file (or corpus) is still there; None otherwise (the rescore mode then names the fix). The
    groups' fingerprint decides whether they are the run's (:func:`.rescore.why_not_rescorable`)."""
    from ..scoring.dedup import load_duplicates

    if args.duplicates is not None:
        return load_duplicates(args.duplicates, setting="--duplicates")
    from ..phases.start import load_duplicate_groups
    from ..settings.resolve import Settings

    recorded = document.get("settings", {})
    groups, dedup, corpus = (recorded.get(k) for k in ("duplicates", "dedup", "corpus"))
    try:
        if isinstance(groups, str) and os.path.isfile(groups):
            return load_duplicates(groups)
        computed = isinstance(dedup, str) and dedup != "off"
        if computed and isinstance(corpus, str) and os.path.isfile(corpus):
            return load_duplicate_groups(Settings(dedup=str(dedup), corpus=corpus))
    except (InputError, ValueError):
        return None  # changed since the run: the fingerprint check could not pass anyway
    return None


def _options(args: argparse.Namespace, document: dict[str, Any], snapshot: Snapshot) -> Any:
    from ..regression.pairs import CompareOptions

    # Artifacts written before family-wise control (or any other setting) default to it too:
    # the same rule as the plugin applies today.
    options = CompareOptions.from_recorded(
        document.get("settings", {}),
        alpha=args.alpha,
        mode=args.mode,
        multiplicity=args.multiplicity,
        budget_test=args.budget_test,
    )
    if options.mode != "rescore":
        return options
    # Only the rescore mode scores anything: the groups are read for it alone.
    return dataclasses.replace(options, conventions=_conventions(args, document, snapshot))


def _check_regressions(
    baseline_path: str, args: argparse.Namespace, document: dict[str, Any], snapshot: Snapshot
) -> bool:
    from ..regression.baseline import load_baseline
    from ..regression.rule import compare_all

    try:
        baseline: Snapshot | None = load_baseline(baseline_path)
    except FileNotFoundError:
        raise InputError(
            Problem("baseline not found", fix="check the path", source=baseline_path)
        ) from None
    ok = True
    options = _options(args, document, snapshot)
    family, outcomes = compare_all(
        baseline,
        snapshot,
        _budgets(args, document, snapshot),
        options=options,
        baseline_path=baseline_path,
    )
    if family.size:
        echo(family.describe())
    for outcome in outcomes:
        verdict = outcome.status.shown.word
        lines = outcome.message.splitlines()
        echo(f"{verdict} {outcome.name}: {lines[0]}")
        for line in lines[1:]:
            echo(f"    {line}")
        ok = ok and outcome.passed
    return ok


def run_compare(args: argparse.Namespace) -> int:
    """Check the artifact's run against the baseline; 0 pass, 1 regression."""
    document = _read_artifact(args.artifact)
    snapshot = _snapshot(document, args.artifact)
    with tampered(args.artifact):
        return 0 if _check_regressions(args.baseline, args, document, snapshot) else 1


def _thresholds(args: argparse.Namespace, document: dict[str, Any]) -> list[Threshold]:
    from ..gates.declared import parse_threshold

    lines: list[tuple[str, str | None, int | None]] = [
        (line, "--threshold", None) for line in args.thresholds or ()
    ]
    lines += [(line, args.gates, n) for line, n in _gates_file(args.gates)[0]]
    if not lines and not args.gates:  # a gates file given decides, even with no threshold
        lines = [
            (line, "the run's declared gates", None)
            for line in document.get("declared", {}).get("thresholds", ())
        ]
    return [parse_threshold(line, source=source, line_number=n) for line, source, n in lines]


def run_gate(args: argparse.Namespace) -> int:
    """Re-apply thresholds (and budgets with --baseline) to the artifact's run."""
    with tampered(args.artifact):
        return _run_gate(args)


def _run_gate(args: argparse.Namespace) -> int:
    from ..gates.declared import expand_slices
    from ..gates.gate import OPS, Selection
    from ..regression.snapshot import snapshot_mean, unstored_context

    if args.budgets and not args.baseline:
        raise InputError(
            Problem(
                "--budget needs a baseline to compare against",
                fix="add --baseline BASELINE, or use --threshold for a fixed floor",
            )
        )
    document = _read_artifact(args.artifact)
    snapshot = _snapshot(document, args.artifact)
    heldout = document.get("settings", {}).get("heldout_split", "heldout")
    thresholds = _thresholds(args, document)
    if not thresholds and not args.baseline:
        if args.gates:
            raise InputError(
                Problem(
                    "nothing to gate: the gates file declares no threshold",
                    fix="add a thresholds: list (- recall@50 >= 0.9), or pass --threshold",
                    source=args.gates,
                )
            )
        raise InputError(
            Problem(
                "nothing to gate: no threshold given and none recorded in the run",
                fix="pass --threshold 'recall@50 >= 0.9' or --gates FILE",
            )
        )
    slices = _scorable_slices(snapshot)
    ok = True
    # Every threshold is judged before any verdict is printed: a threshold the run cannot
    # answer is an error (exit 2) before a partial list of verdicts, never after one.
    verdicts: list[str] = []
    for declared in thresholds:
        for threshold in expand_slices(declared, slices):
            selection = threshold.selection
            unstored = unstored_context(selection)
            if unstored is not None:  # a run's own context-slice gate: not checkable here
                verdicts.append(f"SKIP {threshold}: {unstored}")
                continue
            value, n, stage = snapshot_mean(
                snapshot, str(threshold.spec), selection, heldout_split=heldout
            )
            passed = value is not None and OPS[threshold.op](value, threshold.value)
            shown = "n/a" if value is None else f"{value:.4f}"
            where = Selection(stage, selection.split or "overall", selection.slice).label()
            verdicts.append(
                f"{'PASS' if passed else 'FAIL'} {threshold.spec} {threshold.op} "
                f"{threshold.value:g}: {shown} [{where}] (n={n})"
            )
            ok = ok and passed
    for line in verdicts:
        echo(line)
    if args.baseline:
        ok = _check_regressions(args.baseline, args, document, snapshot) and ok
    return 0 if ok else 1
