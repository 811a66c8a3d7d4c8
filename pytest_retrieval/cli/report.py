"""``pytest-retrieval report``: the Markdown and HTML reports of a stored run (JSON artifact).

The same renderers as the plugin's ``--retrieval-markdown`` / ``--retrieval-html``, from the
artifact a pytest run wrote (``--retrieval-json``). Without ``--markdown`` or ``--html`` the
Markdown goes to stdout. Exit status: 0 reports written, 2 usage error (missing or malformed
artifact or baseline, unwritable output). The report's verdict does not change the exit status:
``pytest-retrieval gate`` is the command that fails on a gate.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from ..report import ARTIFACT_SCHEMA, ARTIFACT_SCHEMA_VERSION
from . import positive_int

if TYPE_CHECKING:
    from ..baseline import Snapshot

#: The artifact schema version these renderers read.


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


def read_artifact(path: str) -> dict[str, Any]:
    """Read and check a JSON artifact; InputError naming the file otherwise."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise InputError(
            Problem(
                "artifact not found",
                fix="pass the file written by pytest --retrieval-json PATH",
                source=path,
            )
        ) from None
    except IsADirectoryError:
        raise InputError(Problem("the artifact path is a directory", source=path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            Problem(f"not valid JSON ({exc.msg})", source=path, line=exc.lineno, column=exc.colno)
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot be read ({exc})", source=path)) from None
    if not isinstance(data, dict) or data.get("schema") != ARTIFACT_SCHEMA:
        raise InputError(
            Problem(
                "not a pytest-retrieval JSON artifact",
                fix="pass the file written by pytest --retrieval-json PATH",
                source=path,
            )
        )
    version = data.get("schema_version")
    if version != ARTIFACT_SCHEMA_VERSION:
        raise InputError(
            Problem(
                f"artifact schema version {version!r} is not supported (this version reads "
                f"{ARTIFACT_SCHEMA_VERSION})",
                fix="render it with the pytest-retrieval version that wrote it",
                source=path,
            )
        )
    return data


def _read_baseline(path: str) -> Snapshot:
    from ..baseline import load_baseline

    try:
        return load_baseline(path)
    except FileNotFoundError:
        raise InputError(Problem("baseline not found", fix="check the path", source=path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot be read ({exc})", source=path)) from None


def run(args: argparse.Namespace) -> int:
    """Render the reports; 0 when written."""
    from ..files import atomic_write_text
    from ..report_markdown import DEFAULT_MAX_ROWS, render_markdown

    artifact = read_artifact(args.artifact)
    baseline = _read_baseline(args.baseline) if args.baseline else None
    markdown_target = args.markdown
    if markdown_target is None and args.html is None:
        markdown_target = "-"
    if args.html is not None:
        from ..report_html import render_html

        atomic_write_text(args.html, render_html(artifact, baseline=baseline), what="HTML report")
    if markdown_target is not None:
        text = render_markdown(
            artifact,
            baseline=baseline,
            max_rows=args.max_rows or DEFAULT_MAX_ROWS,
        )
        if markdown_target == "-":
            sys.stdout.write(text)
        else:
            atomic_write_text(markdown_target, text, what="Markdown report")
    return 0
