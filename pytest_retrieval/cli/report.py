"""``pytest-retrieval report``: the Markdown and HTML reports of a stored run (JSON artifact).

The same renderers as the plugin's ``--retrieval-markdown`` / ``--retrieval-html``, from the
artifact a pytest run wrote (``--retrieval-json``). Without ``--markdown`` or ``--html`` the
Markdown goes to stdout. Exit status: 0 reports written, 2 usage error (missing or malformed
artifact or baseline, unwritable output). The report's verdict does not change the exit status:
``pytest-retrieval gate`` is the command that fails on a gate.
"""

from __future__ import annotations

import argparse
import io
from typing import TYPE_CHECKING

from ..errors import InputError, Problem
from ..report.artifact import read_artifact
from .args import positive_int, tampered
from .output import echo

if TYPE_CHECKING:
    from ..regression.snapshot import Snapshot


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` command."""
    parser = subparsers.add_parser(
        "report",
        help="render a stored run (JSON artifact) as Markdown and/or a self-contained HTML page",
        description=(
            "Render the JSON artifact of a pytest run (--retrieval-json) as the Markdown "
            "report (for a PR comment or $GITHUB_STEP_SUMMARY) and/or the self-contained HTML "
            "report. Without --markdown or --html, the Markdown is printed."
        ),
    )
    parser.add_argument("artifact", metavar="ARTIFACT", help="JSON artifact of the run")
    parser.add_argument(
        "--markdown", metavar="PATH", help="write the Markdown report to PATH ('-': stdout)"
    )
    parser.add_argument("--html", metavar="PATH", help="write the HTML report to PATH")
    parser.add_argument(
        "--baseline",
        metavar="PATH",
        help="baseline file: its curves and means are drawn next to the run's",
    )
    parser.add_argument(
        "--max-rows",
        type=positive_int,
        default=None,
        metavar="N",
        help="per-query rows the Markdown lists per regression check (default 10)",
    )
    parser.set_defaults(func=run)


def _read_baseline(path: str) -> Snapshot:
    from ..regression.baseline import load_baseline

    try:
        return load_baseline(path)
    except FileNotFoundError:
        raise InputError(Problem("baseline not found", fix="check the path", source=path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot be read ({exc})", source=path)) from None


def run(args: argparse.Namespace) -> int:
    """Render the reports; 0 when written."""
    from ..files import refuse_clobbering
    from ..report.write import ReportTargets

    markdown_target = args.markdown
    if markdown_target is None and args.html is None:
        markdown_target = "-"
    to_stdout = markdown_target == "-"
    stream = io.StringIO() if to_stdout else None
    targets = ReportTargets(
        markdown=None if to_stdout else markdown_target, html=args.html, markdown_stream=stream
    )
    refuse_clobbering(
        [(f"--{kind.key}", path) for kind, path in targets.files()],
        [("the artifact", args.artifact), ("the baseline", args.baseline)],
    )
    artifact = read_artifact(args.artifact)
    baseline = _read_baseline(args.baseline) if args.baseline else None
    with tampered(args.artifact):
        # the command prints nothing but the Markdown it was asked to print
        targets.write(artifact, baseline=baseline, max_rows=args.max_rows)
    if stream is not None:  # through the one escaping: a CI log reads stdout as commands
        echo(stream.getvalue().removesuffix("\n"))
    return 0
