"""``pytest-retrieval ledger``: the run ledger from the command line.

* ``record --at REV [--label NAME] [-- PYTEST ARGS]``: compute a commit's entry: a git worktree
  at REV (detached, in a temporary folder), the test suite run there with pytest in the current
  environment (``--retrieval-ledger`` pointed at this ledger, ``--retrieval-cache=off`` so the
  retriever is really called), then the worktree removed. Faithful when the retriever's code is
  the worktree's: the worktree's folder, and the worktree's counterpart of every
  ``PYTHONPATH`` entry inside the repository, are put first on ``PYTHONPATH``; a package
  installed from elsewhere (site-packages, an editable install of another checkout) is
  imported as installed, and the entry then measures that code at REV's golden set.
* ``merge OTHER``: copy another ledger's entries and labels into this one (every row checked;
  an entry already here is skipped, by its id).
* ``label NAME REV``: name a commit, for ``since=NAME`` budgets.

The ledger is ``--ledger PATH`` (default ``.retrieval-ledger.sqlite3`` in the current folder:
give the path ``retrieval_ledger`` names). Exit status: 0 done, 1 the run was recorded but is
not usable as a baseline (refused, errored, failed queries) or was not recorded, 2 usage error
(not a repository, an unknown revision, a damaged ledger).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from ..errors import InputError, Problem
from ..files import same_file
from ..regression.commitinfo import RECORDED_BRANCH
from ..regression.ledger_baseline import DEFAULT_LEDGER
from ..text import plural
from .args import positive_int
from .output import echo

EXIT_OK = 0
EXIT_FAILED = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``ledger`` command and its actions."""
    parser = subparsers.add_parser(
        "ledger",
        help="the run ledger: record a commit's run, merge ledgers, label commits",
        description="Record, merge and label runs in the run ledger (retrieval_ledger).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    def add(name: str, text: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=text, description=text)
        sub.add_argument(
            "--ledger",
            metavar="PATH",
            default=DEFAULT_LEDGER,
            help=f"the ledger file (retrieval_ledger; default {DEFAULT_LEDGER})",
        )
        return sub

    record = add(
        "record",
        "run the test suite at a commit in a git worktree and record its run in the ledger",
    )
    record.add_argument("--at", required=True, metavar="REV", help="a commit, tag or branch")
    record.add_argument("--label", metavar="NAME", help="also label the commit NAME (since=NAME)")
    record.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        metavar="-- PYTEST ARGS",
        help="arguments for pytest in the worktree (e.g. -- -m retrieval: the declared gates)",
    )
    record.set_defaults(func=record_at)
    merge = add("merge", "copy another ledger's entries and labels into this one")
    merge.add_argument("other", metavar="OTHER", help="the ledger to merge in")
    merge.set_defaults(func=merge_ledgers)
    label = add("label", "name a commit for since=NAME budgets")
    label.add_argument("name", metavar="NAME")
    label.add_argument("rev", metavar="REV", nargs="?", default="HEAD")
    label.set_defaults(func=label_commit)
    show = add("show", "list the recorded runs, newest last, with their headline means")
    show.add_argument("--last", type=positive_int, default=20, metavar="N", help="default 20")
    show.add_argument("--branch", metavar="BRANCH", help="only the runs of this branch")
    show.add_argument(
        "--metric", action="append", metavar="METRIC", help="a metric to show (repeatable)"
    )
    show.set_defaults(func=show_entries)
    trend = add("trend", "per metric and slice: a sparkline, the values and an advisory trend test")
    trend.add_argument("--last", type=positive_int, default=30, metavar="N", help="default 30")
    trend.add_argument("--branch", metavar="BRANCH", help="only the runs of this branch")
    trend.add_argument(
        "--metric",
        action="append",
        metavar="METRIC",
        help="a metric (repeatable; default: the budgeted ones)",
    )
    trend.add_argument("--stage", metavar="STAGE", help="default: each run's final stage")
    trend.add_argument(
        "--slice",
        action="append",
        metavar="NAME",
        help="a slice (repeatable; default: overall and every slice; 'overall' for it alone)",
    )
    trend.add_argument("--format", choices=("terminal", "markdown", "html"), default="terminal")
    trend.add_argument("--output", metavar="PATH", help="write to this file (default: stdout)")
    trend.set_defaults(func=trend_entries)
    prune = add("prune", "keep the newest N entries (and every labelled or tagged anchor)")
    prune.add_argument("--keep", type=positive_int, required=True, metavar="N")
    prune.set_defaults(func=prune_entries)
    parser.set_defaults(func=_no_action)


def _no_action(args: argparse.Namespace) -> int:
    raise InputError(
        Problem(
            "no action given",
            fix="use `pytest-retrieval ledger record|merge|label|show|trend|prune` (see --help)",
        )
    )


def _ledger_path(args: argparse.Namespace) -> str:
    return os.path.abspath(str(args.ledger))


def _commit(cwd: str, rev: str) -> str:
    from ..regression.commitinfo import GitError, resolve

    found = resolve(cwd, rev)
    if found is None:
        raise GitError(
            Problem(
                f"unknown revision {rev!r}",
                fix="name a commit, tag or branch of this repository (git log --oneline)",
            )
        )
    return found


def worktree_pythonpath(entries: str | None, top: str, tree: str, project: str) -> str:
    """``PYTHONPATH`` for a run in the worktree ``tree`` of the repository at ``top``: the
    project folder inside the worktree first, then each entry inside the repository as its
    counterpart in the worktree, then every entry as it was."""
    mapped = [project]
    given = [e for e in (entries or "").split(os.pathsep) if e]
    for entry in given:
        absolute = os.path.abspath(entry)
        relative = os.path.relpath(absolute, top)
        if relative == "." or not relative.startswith(".."):
            counterpart = os.path.normpath(os.path.join(tree, relative))
            if counterpart not in mapped:
                mapped.append(counterpart)
    return os.pathsep.join([*mapped, *given])


def recorded_branch(cwd: str, rev: str, commit: str) -> str | None:
    """The branch an entry recorded at ``rev`` is of: the branch ``rev`` names (``--at main``),
    else the first of the target branch (``retrieval_target_branch``'s default: the CI's
    base-ref variable, else ``main``) and the checked-out branch whose first-parent history
    holds the commit; None when neither does (a commit of a merged-in branch)."""
    from ..regression.commitinfo import branch_holding, branch_named, current_branch, target_branch

    named = branch_named(cwd, rev)
    if named is not None:
        return named
    return branch_holding(cwd, commit, [target_branch(None), current_branch(cwd) or ""])


def record_at(args: argparse.Namespace) -> int:
    """Record REV's run (see the module docstring)."""
    from ..regression.commitinfo import git, require_repository
    from ..regression.ledger import Ledger

    cwd = os.getcwd()
    top = require_repository(cwd, needed_by="pytest-retrieval ledger record")
    commit = _commit(cwd, args.at)
    branch = recorded_branch(cwd, args.at, commit)
    path = _ledger_path(args)
    with Ledger(path) as ledger:
        before = {e.uid for e in ledger.entries(commits=[commit])}
    pytest_args = [a for a in args.pytest_args if a != "--"] if args.pytest_args else []
    folder = tempfile.mkdtemp(prefix="pytest-retrieval-record-")
    tree = os.path.join(folder, "tree")
    try:
        git(top, "worktree", "add", "--detach", tree, commit)
        project = os.path.normpath(os.path.join(tree, os.path.relpath(cwd, top)))
        if not os.path.isdir(project):
            raise InputError(
                Problem(
                    f"{os.path.relpath(cwd, top)} does not exist at {commit[:12]}",
                    fix="run the command from a folder the commit has (the project's root)",
                )
            )
        env = {
            **os.environ,
            "PYTHONPATH": worktree_pythonpath(os.environ.get("PYTHONPATH"), top, tree, project),
        }
        # The entry's label is --label's (REV is the commit's name, not a label), its branch
        # REV's (the worktree is detached).
        env.pop("PYTEST_RETRIEVAL_LEDGER_LABEL", None)
        env.pop(RECORDED_BRANCH, None)
        if args.label:
            env["PYTEST_RETRIEVAL_LEDGER_LABEL"] = args.label
        if branch:
            env[RECORDED_BRANCH] = branch
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--retrieval-ledger={path}",
            "--retrieval-cache=off",
            *pytest_args,
        ]
        echo(f"pytest-retrieval ledger: running pytest at {commit[:12]} ({args.at}) in {tree}")
        sys.stdout.flush()
        done = subprocess.run(command, cwd=project, env=env, check=False)
    finally:
        git(top, "worktree", "remove", "--force", tree, check=False)
        shutil.rmtree(folder, ignore_errors=True)
        git(top, "worktree", "prune", check=False)
    with Ledger(path) as ledger:
        new = [e for e in ledger.entries(commits=[commit]) if e.uid not in before]
        if new and new[-1].usable and args.label:
            ledger.set_label(args.label, commit)
    if not new:
        echo(
            f"pytest-retrieval ledger: nothing was recorded for {commit[:12]} (pytest exited "
            f"{done.returncode}): check that the commit configures the golden set and that a "
            "test runs the retriever",
            err=True,
        )
        return EXIT_FAILED
    entry = new[-1]
    if not entry.usable:
        echo(
            f"pytest-retrieval ledger: {commit[:12]} recorded as {entry.status}"
            + (f" ({entry.reason})" if entry.reason else "")
            + ": not usable as a baseline",
            err=True,
        )
        return EXIT_FAILED
    labelled = f", labelled {args.label}" if args.label else ""
    echo(f"pytest-retrieval ledger: recorded {commit[:12]} ({args.at}) in {path}{labelled}")
    return EXIT_OK


def merge_ledgers(args: argparse.Namespace) -> int:
    """Copy OTHER's entries and labels into the ledger."""
    from ..regression.ledger import Ledger

    path = _ledger_path(args)
    other_path = os.path.abspath(args.other)
    if same_file(other_path, path) is not None:  # a symlink or a hard link to it too
        raise InputError(Problem("a ledger cannot be merged into itself", source=other_path))
    with Ledger(other_path, create=False) as other:
        other.check()
        with Ledger(path) as ledger:
            added, present, conflicts = ledger.merge_from(other)
    echo(
        f"merged {other_path} into {path}: {plural(added, 'entry', 'entries')} added, "
        f"{present} already there"
        + (
            f"; labels kept as they were here (they name another commit there): "
            f"{', '.join(conflicts)}"
            if conflicts
            else ""
        )
    )
    return EXIT_OK


def label_commit(args: argparse.Namespace) -> int:
    """Name REV's commit NAME in the ledger."""
    from ..regression.commitinfo import require_repository
    from ..regression.ledger import Ledger

    cwd = os.getcwd()
    require_repository(cwd, needed_by="pytest-retrieval ledger label")
    commit = _commit(cwd, args.rev)
    with Ledger(_ledger_path(args)) as ledger:
        ledger.set_label(args.name, commit)
        recorded = ledger.latest_usable(commit) is not None
    hint = (
        ""
        if recorded
        else f" (no usable run of it is recorded yet: pytest-retrieval ledger record --at "
        f"{commit[:12]})"
    )
    echo(f"labelled {commit[:12]} {args.name}{hint}")
    return EXIT_OK


def _existing(args: argparse.Namespace) -> str:
    path = _ledger_path(args)
    if not os.path.exists(path):
        raise InputError(
            Problem(
                "no ledger here",
                fix="pass --ledger PATH (the file retrieval_ledger names), or record a run first",
                source=path,
            )
        )
    return path


def show_entries(args: argparse.Namespace) -> int:
    """Print the last entries, oldest first."""
    from tabulate import tabulate

    from ..regression.history import default_metrics, show_rows
    from ..regression.ledger import Ledger

    with Ledger(_existing(args), create=False) as ledger:
        entries = ledger.entries(branch=args.branch, last=args.last)
        labels = ledger.labels()
    if not entries:
        echo(f"the ledger {args.ledger} has no entries")
        return EXIT_OK
    metrics = args.metric or default_metrics([e for e in entries if e.usable]) or []
    headers = ["#", "recorded", "commit", "branch", "status", "label", *metrics]
    echo(tabulate(show_rows(entries, metrics), headers=headers, disable_numparse=True))
    if labels:
        echo("labels: " + ", ".join(f"{n} = {c[:12]}" for n, c in labels.items()))
    return EXIT_OK


def trend_entries(args: argparse.Namespace) -> int:
    """Print (or write) the history of each metric and column."""
    from ..files import atomic_write_text
    from ..regression.history import columns_of, default_metrics, render, series
    from ..regression.ledger import Ledger

    with Ledger(_existing(args), create=False) as ledger:
        entries = [e for e in ledger.entries(usable=True, branch=args.branch, last=args.last)]
    metrics = args.metric or default_metrics(entries)
    columns = columns_of(entries, args.stage)
    if args.slice:
        wanted = {s if s == "overall" else f"slice:{s}" for s in args.slice}
        columns = [c for c in columns if c in wanted]
    found = [series(entries, m, c, args.stage) for m in metrics for c in columns]
    text = render(found, args.format)
    if args.output:
        atomic_write_text(args.output, text, what="trend")
        echo(f"wrote {args.output} ({sum(1 for s in found if s.values)} series)")
    else:
        echo((text or "no usable entries to show\n").removesuffix("\n"))
    return EXIT_OK


def prune_entries(args: argparse.Namespace) -> int:
    """Delete all but the newest entries; labelled and tagged commits keep their entry."""
    from ..regression.commitinfo import git, toplevel
    from ..regression.ledger import Ledger

    protect: list[str] = []
    cwd = os.getcwd()
    if toplevel(cwd) is not None:
        listed = git(cwd, "for-each-ref", "--format=%(objectname) %(*objectname)", "refs/tags")
        for line in (listed or "").splitlines():
            parts = line.split()
            if parts:
                protect.append(parts[-1])  # the commit a tag points to (peeled when annotated)
    with Ledger(_existing(args), create=False) as ledger:
        removed = ledger.prune(args.keep, protect=protect)
        left = len(ledger)
    echo(f"pruned {plural(removed, 'entry', 'entries')} from {args.ledger}; {left} left")
    return EXIT_OK
