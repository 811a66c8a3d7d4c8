"""Declared gates: threshold and regression-budget lines from the ini file and the gates file.

Ini keys ``retrieval_thresholds`` and ``retrieval_regression`` hold one line each; the gates
file (``retrieval-gates.yaml`` in the rootdir, or ``retrieval_gates_file``) holds::

    version: 1
    thresholds:
      - recall@50 >= 0.90
      - ndcg@10 >= 0.60 slice=*
    regressions:
      - ndcg@10 0.02

Lines are parsed with :func:`~pytest_retrieval.gates.parse_threshold` and
:func:`~pytest_retrieval.baseline.parse_budget`; every problem (with its file and line) is
reported at once. ``slice=*`` expands to one line per slice that has a query to score.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .errors import InputError, Problem
from .gates import Selection, Threshold, parse_threshold
from .retriever import RERANKER_STAGE, RETRIEVER_STAGE

__all__ = [
    "GATES_FILE_NAME",
    "gates_file_entries",
    "gates_file_path",
    "load_budgets",
    "load_declared_gates",
]

Declared = TypeVar("Declared", bound=Any)
Entry = tuple[str, "str | None", "int | None"]


GATES_FILE_NAME = "retrieval-gates.yaml"
#: Every stage a run can have.
STAGES = (RETRIEVER_STAGE, RERANKER_STAGE)


def gates_file_entries(
    path: str,
) -> tuple[list[tuple[str, int | None]], list[tuple[str, int | None]]]:
    """The threshold and regression lines of a gates file, each with its line number."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise InputError(
            Problem("gates file not found", fix="check retrieval_gates_file", source=path)
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot read the gates file: {exc}", source=path)) from None
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            Problem(
                f"YAML syntax error: {getattr(exc, 'problem', exc)}",
                fix="fix the YAML syntax",
                source=path,
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
            )
        ) from None
    expected = "a mapping with 'version: 1' and a 'thresholds:' list of gate lines"
    if not isinstance(root, yaml.MappingNode):
        raise InputError(Problem(f"expected {expected}", source=path, line=1))
    entries: list[tuple[str, int | None]] = []
    budgets: list[tuple[str, int | None]] = []
    problems: list[Problem] = []
    known = ("version", "thresholds", "regressions")
    for key_node, value_node in root.value:
        key = key_node.value
        line = key_node.start_mark.line + 1
        if key not in known:
            import difflib

            close = difflib.get_close_matches(str(key), known, n=1)
            problems.append(
                Problem(
                    f"unknown key {key!r}",
                    source=path,
                    line=line,
                    fix=f"did you mean {close[0]!r}?"
                    if close
                    else f"known keys: {', '.join(known)}",
                )
            )
        elif key == "version" and value_node.value != "1":
            problems.append(
                Problem(
                    f"unknown version {value_node.value!r}",
                    fix="write version: 1",
                    source=path,
                    line=line,
                )
            )
        elif key in ("thresholds", "regressions"):
            target = entries if key == "thresholds" else budgets
            example = "- recall@50 >= 0.9" if key == "thresholds" else "- ndcg@10 0.02"
            if not isinstance(value_node, yaml.SequenceNode):
                problems.append(
                    Problem(
                        f"{key} must be a list of lines",
                        source=path,
                        line=line,
                        fix=f"write one '{example}' per line",
                    )
                )
                continue
            for item in value_node.value:
                if not isinstance(item, yaml.ScalarNode):
                    problems.append(
                        Problem(
                            "a gate must be one line of text",
                            source=path,
                            line=item.start_mark.line + 1,
                            fix="write e.g. - ndcg@10 >= 0.6 slice=multi-hop",
                        )
                    )
                    continue
                target.append((item.value, item.start_mark.line + 1))
    if problems:
        raise InputError(problems, title=f"{path}: {len(problems)} problem(s) in the gates file")
    return entries, budgets


def gates_file_path(settings: Any, rootdir: Any) -> str | None:
    """The gates file in use: the configured one, else retrieval-gates.yaml in the rootdir."""
    import os

    if settings.gates_file is not None:
        return str(settings.gates_file)
    candidate = os.path.join(str(rootdir), GATES_FILE_NAME)
    return candidate if os.path.isfile(candidate) else None


def _scorable_slices(settings: Any, golden: Any) -> list[str]:
    # A slice of no-answer queries only has no value under no_relevant=skip: left out of "*".
    names = []
    for name in golden.slices:
        members = [q for q in golden if name in q.slices]
        if settings.no_relevant == "skip" and all(q.is_no_answer for q in members):
            continue
        names.append(name)
    return names


def _unknown_names(
    line: str, selection: Selection, golden: Any, source: str | None, number: int | None
) -> Problem | None:
    if selection.split is not None and selection.split not in golden.splits:
        return Problem(
            f"{line.strip()!r}: unknown split {selection.split!r}",
            fix=f"the golden set has: {', '.join(golden.splits)}",
            source=source,
            line=number,
        )
    if selection.slice not in (None, "*") and selection.slice not in golden.slices:
        return Problem(
            f"{line.strip()!r}: unknown slice {selection.slice!r}",
            fix=f"the golden set has: {', '.join(golden.slices) or 'no slices'}",
            source=source,
            line=number,
        )
    # Whether the reranker stage runs is only known once the run starts; a name that is no
    # stage at all is a typo that can be refused now.
    if selection.stage is not None and selection.stage not in STAGES:
        return Problem(
            f"{line.strip()!r}: unknown stage {selection.stage!r}",
            fix=f"the stages are {' and '.join(STAGES)}",
            source=source,
            line=number,
        )
    return None


def _expand(
    entries: Sequence[tuple[str, str | None, int | None]],
    parse: Callable[..., Declared],
    settings: Any,
    golden: Any,
    what: str,
) -> list[Declared]:
    """Parse every line, check its split and slice names, expand ``slice=*``."""
    items: list[Declared] = []
    problems: list[Problem] = []
    for line, source, number in entries:
        try:
            item = parse(line, source=source, line_number=number)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        selection: Selection = item.selection
        problem = _unknown_names(line, selection, golden, source, number)
        if problem is not None:
            problems.append(problem)
            continue
        if selection.slice == "*":
            items.extend(
                dataclasses.replace(
                    item, selection=Selection(selection.stage, selection.split, name)
                )
                for name in _scorable_slices(settings, golden)
            )
        else:
            items.append(item)
    if problems:
        raise InputError(problems, title=f"pytest-retrieval: {len(problems)} invalid {what}")
    return items


def load_declared_gates(settings: Any, golden: Any, *, rootdir: Any) -> list[Threshold]:
    """Every declared gate: ini ``retrieval_thresholds`` lines, then the gates file.

    ``slice=*`` expands to one gate per slice with a query to score (a slice of no-answer
    queries has no value under no_relevant=skip, so it is left out rather than failed). Unknown
    slice, split or stage names are errors that list the known ones; whether the reranker stage
    ran is checked when the gate runs.
    """
    entries: list[tuple[str, str | None, int | None]] = [
        (line, "retrieval_thresholds", None) for line in settings.thresholds
    ]
    path = gates_file_path(settings, rootdir)
    if path is not None:
        entries += [(line, path, number) for line, number in gates_file_entries(path)[0]]
    return _expand(entries, parse_threshold, settings, golden, "gate(s)")


def load_budgets(settings: Any, golden: Any, *, rootdir: Any) -> list[Any]:
    """Every regression budget: ini ``retrieval_regression`` lines, then the gates file's
    ``regressions:``; the default checks when a baseline is set and none is declared.

    Budgets without a baseline are a usage error (they could never be checked).
    """
    from .baseline import default_budgets, parse_budget

    entries: list[tuple[str, str | None, int | None]] = [
        (line, "retrieval_regression", None) for line in settings.regression
    ]
    path = gates_file_path(settings, rootdir)
    if path is not None:
        entries += [(line, path, number) for line, number in gates_file_entries(path)[1]]
    if entries and not settings.baseline:
        raise InputError(
            Problem(
                "regression budgets are declared but no baseline is set",
                fix="set retrieval_baseline = PATH (or pass --retrieval-baseline PATH)",
                source=entries[0][1],
                line=entries[0][2],
            )
        )
    if not settings.baseline:
        return []
    if not entries:
        return list(default_budgets(settings.ks))
    return _expand(entries, parse_budget, settings, golden, "budget(s)")
