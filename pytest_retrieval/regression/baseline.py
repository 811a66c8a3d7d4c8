"""The baseline file: a committed snapshot of per-query quality (the format only).

What a snapshot holds (per query and stage: every metric's value, the relevant documents' ranks,
the ranking; the golden-set fingerprint, the labels and the settings that change numbers) and how
one is built from a run is :mod:`pytest_retrieval.regression.snapshot`. Schema version 3 keeps each
query's whole document ranking as scored, its judgments and a hash of its text (what lets
``--retrieval-baseline-mode=rescore`` re-score the stored rankings against new labels, see
:mod:`pytest_retrieval.regression.rescore`). Version 2 baselines (rankings cut at the retrieval
depth) and version 1 (rankings cut at :data:`TOP_KEPT`, no judgments) are still read.

The **baseline file** is a snapshot written as deterministic JSON (sorted keys, indent 2,
rounded floats, trailing newline), only on an explicit update, atomically (:func:`dump_baseline`,
:func:`stamp`), and read back checked (:func:`load_baseline`, :func:`snapshot_problems`). The
JSON artifact carries the same snapshot, so the offline CLI (``pytest-retrieval compare``) and the
plugin run the very same comparison, whose rule lives in :mod:`pytest_retrieval.regression.rule`.

Held-out queries never enter a baseline with per-query detail.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime, timezone

from ..errors import InputError, Problem
from ..reading import load_json, read_text_file
from ..settings.values import MAX_BASELINE_RUNS
from .snapshot import (
    BASELINE_SCHEMA,
    Snapshot,
)

#: Every baseline schema version this release reads (1: no judgments, top 10 ids only; 2:
#: rankings cut at the retrieval depth; 3: whole rankings).
READABLE_VERSIONS = (1, 2, 3)


def dump_baseline(snapshot: Snapshot) -> str:
    """Deterministic text of a baseline: sorted keys, indent 2, rounded floats, final newline."""
    return json.dumps(snapshot.to_dict(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def stamp(snapshot: Snapshot, *, plugin_version: str) -> Snapshot:
    """The snapshot with the plugin version and the current UTC time filled in."""
    return Snapshot(
        fingerprint=snapshot.fingerprint,
        settings=snapshot.settings,
        stages=snapshot.stages,
        metrics=snapshot.metrics,
        queries=snapshot.queries,
        heldout=snapshot.heldout,
        plugin_version=plugin_version,
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        index_version=snapshot.index_version,
        n_runs=snapshot.n_runs,
    )


def load_baseline(path: str | os.PathLike[str]) -> Snapshot:
    """Read and check a baseline file; InputError naming the file and the fix otherwise.

    A missing file raises FileNotFoundError (the caller turns it into a failing regression gate
    with the command that creates the baseline).
    """
    name = os.fspath(path)
    refresh = "recreate it with --retrieval-update-baseline"
    if os.path.isdir(name):
        raise InputError(
            Problem("the baseline path is a directory", fix="name a .json file", source=name)
        )
    # A regular file of bounded size only: a symlink to /dev/zero would be read until memory
    # runs out.
    text = read_text_file(name, what="baseline")
    # The one guarded decoder: depth, digits and syntax errors named by line and column.
    data = load_json(
        text,
        source=name,
        what="baseline",
        expected="a pytest-retrieval baseline",
        fix=f"the file may be truncated: restore it from version control or {refresh}",
        allow_duplicate_keys=True,  # ours, read at scale; checked field by field below
    )
    if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
        raise InputError(
            Problem(
                'not a pytest-retrieval baseline (no "schema": "pytest-retrieval/baseline"); a '
                "JSON artifact (--retrieval-json) is not a baseline",
                fix=refresh,
                source=name,
            )
        )
    version = data.get("schema_version")
    if type(version) is not int or version not in READABLE_VERSIONS:
        raise InputError(
            Problem(
                f"baseline schema version {version!r} is not supported (this plugin reads "
                f"versions {', '.join(map(str, READABLE_VERSIONS))})",
                fix=refresh,
                source=name,
            )
        )
    problems = snapshot_problems(data, source=name, fix=refresh)
    if problems:
        raise InputError(problems, title=f"{name}: not a valid baseline")
    return Snapshot.from_dict(data)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def snapshot_problems(
    data: object,
    *,
    source: str,
    fix: str = "recreate it with --retrieval-update-baseline",
    complete: bool = True,
) -> list[Problem]:
    """Every way ``data`` (a decoded baseline, or an artifact's ``snapshot``) breaks the
    snapshot schema, each naming the file, the query and the field; empty if it is whole.

    Checked: the types of every field the comparison reads; every metric value a finite number
    between 0 and 1 or null (not scored); and equal coverage: every query has every listed
    stage, and every listed metric in each stage, so that no metric is silently compared on
    fewer queries than the others. ``complete=False`` checks the types only (what a report
    needs of an artifact's snapshot: the relevant ranks).
    """

    def problem(message: str, *, query_id: str | None = None, field: str | None = None) -> None:
        problems.append(Problem(message, fix=fix, source=source, query_id=query_id, field=field))

    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        problem(f"expected a JSON object, got {type(data).__name__}")
        return problems
    golden = data.get("golden")
    if not isinstance(golden, Mapping) or not isinstance(golden.get("fingerprint"), str):
        problem('"golden" must be an object with a "fingerprint" string', field="golden")
    if not isinstance(data.get("settings"), Mapping):
        problem('"settings" must be an object', field="settings")
    for key in ("heldout",):
        if key in data and not isinstance(data[key], Mapping):
            problem(f'"{key}" must be an object', field=key)
    runs = data.get("n_runs", 1)
    if type(runs) is not int or not 1 <= runs <= MAX_BASELINE_RUNS:
        problem(
            f'"n_runs" must be the number of runs averaged, 1 to {MAX_BASELINE_RUNS} (not '
            f"{runs!r})",
            field="n_runs",
        )
    stages, metrics = data.get("stages"), data.get("metrics")
    if not _str_list(stages) or not stages:
        problem('"stages" must be a non-empty list of stage names', field="stages")
        stages = None
    if not _str_list(metrics):
        problem('"metrics" must be a list of metric names', field="metrics")
        metrics = None
    queries = data.get("queries")
    if not isinstance(queries, Mapping):
        problem('"queries" must be an object of query id -> entry', field="queries")
        return problems
    for qid, entry in queries.items():
        if not isinstance(entry, Mapping):
            problem(f"expected an object, got {type(entry).__name__}", query_id=qid)
            continue
        if not isinstance(entry.get("split"), str):
            problem('"split" must be a string', query_id=qid, field="split")
        if not isinstance(entry.get("labels"), str):
            problem('"labels" must be a string', query_id=qid, field="labels")
        if "slices" in entry and not _str_list(entry["slices"]):
            problem('"slices" must be a list of names', query_id=qid, field="slices")
        for key in ("relevant_ranks", "top", "returned"):
            if key in entry and not isinstance(entry[key], Mapping):
                problem(f'"{key}" must be an object of stage -> values', query_id=qid, field=key)
        ranks = entry.get("relevant_ranks")
        if isinstance(ranks, Mapping):
            for stage, by_doc in ranks.items():
                if not isinstance(by_doc, Mapping) or not all(
                    r is None or (type(r) is int and r >= 1) for r in by_doc.values()
                ):
                    field = f"relevant_ranks.{stage}"
                    problem("must map doc ids to ranks >= 1 or null", query_id=qid, field=field)
        for key in ("top", "returned"):  # returned: the ids as returned, where they repeated
            rankings = entry.get(key)
            if isinstance(rankings, Mapping):
                for stage, ids in rankings.items():
                    if not _str_list(ids):
                        problem("must be a list of doc ids", query_id=qid, field=f"{key}.{stage}")
        # Version 2: the labels the values were scored with, and the text's hash (rescore).
        judgments = entry.get("judgments")
        if "judgments" in entry and (
            not isinstance(judgments, Mapping)
            or not all(isinstance(d, str) and type(g) is int for d, g in judgments.items())
        ):
            problem(
                '"judgments" must be an object of doc id -> integer grade',
                query_id=qid,
                field="judgments",
            )
        spread = entry.get("spread")
        if "spread" in entry and not (
            isinstance(spread, Mapping)
            and all(
                isinstance(by_metric, Mapping)
                and all(
                    v is None or (_is_number(v) and 0.0 <= v <= 1.0) for v in by_metric.values()
                )
                for by_metric in spread.values()
            )
        ):
            problem(
                '"spread" must be an object of stage -> metric -> a standard deviation between 0 '
                "and 1 (or null)",
                query_id=qid,
                field="spread",
            )
        if "text" in entry and not isinstance(entry["text"], str):
            problem('"text" must be a string (the hash of the query text)', query_id=qid)
        values = entry.get("metrics")
        if not isinstance(values, Mapping):
            problem('"metrics" must be an object of stage -> metric -> value', query_id=qid)
            continue
        for stage in stages if complete and stages else ():
            if stage not in values:
                problem(f"stage {stage!r} is missing", query_id=qid, field="metrics")
        for stage, by_metric in values.items():
            if not isinstance(by_metric, Mapping):
                problem("must be an object of metric -> value", query_id=qid, field=stage)
                continue
            missing = [m for m in metrics or () if m not in by_metric] if complete else []
            if missing:
                problem(
                    f"{', '.join(missing)} missing, so it would be compared on fewer queries "
                    "than the other metrics",
                    query_id=qid,
                    field=f"metrics.{stage}",
                )
            for metric, value in by_metric.items():
                if value is None:
                    continue
                if not _is_number(value) or not 0.0 <= value <= 1.0:  # NaN fails this too
                    problem(
                        f"{metric} = {value!r} is not a number between 0 and 1 (or null)",
                        query_id=qid,
                        field=f"metrics.{stage}",
                    )
    return problems
