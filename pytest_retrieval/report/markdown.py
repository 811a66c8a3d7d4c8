"""The Markdown report: a PR comment / ``$GITHUB_STEP_SUMMARY`` view of the JSON artifact.

:func:`render_markdown` turns the artifact dict into GitHub-flavoured Markdown: a one-line
verdict, the gates table (✅/❌, value, threshold or budget, delta against the baseline with its
confidence interval and significance), the headline metrics overall and per slice for each stage
(every metric in a collapsed block), the per-query regressions in a collapsed ``<details>``
block, and the golden set's fingerprint. Output is deterministic (the artifact's order, fixed
rounding, no clock) and capped: long lists end with "... and N more".

Every string that comes from the user (ids, query texts, slice and stage names, messages) is
escaped, so it renders as text: HTML-significant characters become entities, Markdown
punctuation is backslash-escaped, pipes never split a table cell, newlines never end a row.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from ..golden.scope import Scope
from ..scoring.metrics import Metric, metric_of
from ..text import for_terminal
from ..verdict import Shown, Status, Stop
from . import gaterows, phrases, view
from .gaterows import GateRow
from .view import BaselineLike, Column

#: Per-query rows shown per regression check (and failed queries, notes) before "... and N more".
DEFAULT_MAX_ROWS = 10
#: Gates shown before "... and N more" (failures come first, so they are never the ones cut).
DEFAULT_MAX_GATES = 30
#: The longest report: GitHub accepts PR comments up to 65,536 characters.
DEFAULT_MAX_CHARS = 60_000
#: Characters of a query text shown in a table cell.
TEXT_LIMIT = 60
#: Relevant documents listed per query diff.
MOVES_SHOWN = 3

_CUT_NOTE = "_Report cut at the size limit: the HTML report and the JSON artifact have it all._"
_STATUS = {Shown.PASS: "✅", Shown.FAIL: "❌", Shown.SKIP: "⏭️"}
_MD_SPECIAL = frozenset("\\`*_[]|~")


# --- escaping --------------------------------------------------------------------------------


# A zero-width space (as an entity, so the source shows it) after the character that starts an
# auto-link: "@name" would notify a person, "#12" link an issue, "https://" and "www." a site.
# Dependabot neutralises mentions in its pull requests the same way.
_ZWSP = "&#8203;"
_AUTOLINK = re.compile(r"@|#(?=\d)|:(?=//)|www(?=\.)", re.IGNORECASE)


def _no_autolinks(text: str) -> str:
    return _AUTOLINK.sub(lambda m: m.group(0) + _ZWSP, text)


def md_text(value: object) -> str:
    """User text as inline Markdown that renders literally, on one line, safe in a table cell,
    and that mentions no one and links nothing (``@name``, ``#12``, URLs and e-mail addresses
    get a zero-width space)."""
    out = []
    for char in for_terminal(" ".join(str(value).split())):
        if char == "&":
            out.append("&amp;")
        elif char == "<":
            out.append("&lt;")
        elif char == ">":
            out.append("&gt;")
        elif char in _MD_SPECIAL:
            out.append("\\" + char)
        else:
            out.append(char)
    return _no_autolinks("".join(out))


def md_code(value: object, *, table: bool = True) -> str:
    """User text as a code span (ids, metric names): literal, one line.

    Inside a table cell a pipe is written ``\\|`` (GFM removes the backslash before the code
    span is parsed); a backtick in the text gets a longer fence. Control characters and bidi
    overrides are escaped as in a terminal (``\\x1b``, ``\\u202e``): a code span shows them
    literally, and a reversed id would read as another.
    """
    text = for_terminal(" ".join(str(value).split()))  # no ESC, NUL or bidi override either
    if table:
        text = text.replace("|", "\\|")
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if longest or text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else "—"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    """A GFM table; ``align`` gives each column ``l``/``r``/``c`` (default left)."""
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    separator = [marks.get(align[i] if i < len(align) else "l", "---") for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(separator) + " |"]
    for row in rows:
        cells = [cell if cell else " " for cell in row]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _more(count: int, one: str, many: str | None = None, detail: str = "") -> str:
    """``_... and 3 more queries (all in the JSON artifact)_``."""
    what = one if count == 1 else many or one + "s"
    return f"_... and {count} more {what}{detail} (all in the JSON artifact)_"


# --- sections --------------------------------------------------------------------------------


def _where(stage: str | None, split: str | None, slice_: str | None) -> str:
    parts = [md_text(stage)] if stage else []
    parts.append(md_text(phrases.scope_label(split, slice_)))
    return " · ".join(parts)


def _gate_cells(row: GateRow) -> list[str]:
    if row.kind == "regression":
        gate = f"{md_code(row.metric)} {md_text(row.versus)}"
        if row.delta is None:
            change = md_text(row.note.split(":", 1)[0]) if row.status is not Shown.PASS else "—"
        else:
            change = row.change  # digits, signs, brackets and a level: nothing to escape
        significance = md_text(row.significance) if row.significance else "—"
    else:
        gate = md_code(row.metric)
        change = "—"
        significance = "—"
    value = "n/a" if row.status is Shown.SKIP and row.value is None else phrases.fmt(row.value)
    return [
        _STATUS.get(row.status, "❔"),
        gate,
        row.source,
        _where(row.stage_shown, row.split, row.slice),
        value,
        md_text(row.target),
        change,
        significance,
    ]


def _gates_section(artifact: Mapping[str, Any], max_gates: int, max_rows: int) -> list[str]:
    rows = gaterows.gate_rows(artifact)
    if not rows:
        return [
            "No gates: add thresholds or regression budgets (retrieval-gates.yaml) to fail "
            "the build when quality drops."
        ]
    if any(r.ci_level is not None for r in rows):
        change_header = "Δ vs baseline (bound; interval)"
    else:  # an artifact from before the intervals matched the test: its bootstrap CI
        from ..settings.options import DEFAULT_CONFIDENCE

        confidence = (artifact.get("settings") or {}).get("confidence", DEFAULT_CONFIDENCE)
        if not isinstance(confidence, (int, float)):
            confidence = DEFAULT_CONFIDENCE
        level = f"{float(confidence) * 100:g}%"
        change_header = f"Δ vs baseline [{level} CI]"
    headers = [
        " ",
        "Gate",
        "Source",
        "Where",
        "Value",
        "Threshold / budget",
        change_header,
        "Significance",
    ]
    shown = rows[:max_gates]
    cells = [_gate_cells(r) for r in shown]
    align = "clllrlll"
    if not gaterows.has_regressions(rows):  # no baseline compared: no columns of its own
        headers, cells, align = headers[:-2], [c[:-2] for c in cells], align[:-2]
    lines = []
    family = gaterows.family_line(artifact)
    if family:
        lines += [f"_{md_text(family)}_", ""]
    lines += _table(headers, cells, align)
    if len(rows) > len(shown):
        hidden = rows[len(shown) :]
        kinds = sorted({r.status for r in hidden})
        lines.append("")
        lines.append(_more(len(hidden), "gate", detail=" (" + ", ".join(kinds) + ")"))
    # A check's note, then the queries it left out (each a line of its own under the check).
    notes = [(r, text) for r in rows for text in (r.note, r.left_out) if text]
    if notes:
        lines.append("")
        for row, text in notes[:max_rows]:
            lines.append(
                f"- {_STATUS.get(row.status, '❔')} {md_code(row.label, table=False)} "
                f"({_where(row.stage_shown, row.split, row.slice)}): {md_text(text)}"
            )
        if len(notes) > max_rows:
            lines.append(f"- {_more(len(notes) - max_rows, 'note')}")
    failed = [r for r in shown if r.worst]
    for row in failed[:max_rows]:
        lines.append("")
        lines.append(
            f"{_STATUS[Shown.FAIL]} {md_code(row.label, table=False)} "
            f"({_where(row.stage_shown, row.split, row.slice)}), worst queries:"
        )
        lines.append("")
        lines.extend(f"- {md_text(item)}" for item in row.worst[:max_rows])
    return lines


def _metric_cell(
    column: Column, metric: str, stage: str, baseline: Mapping[str, Any] | None
) -> str:
    value = column.metrics.get(metric)
    cell = phrases.fmt(value)
    key = column.baseline_key
    if baseline is not None and key is not None and value is not None:
        before = view.baseline_mean(baseline, stage, key, metric)
        if before is not None:
            cell += f" ({phrases.fmt_signed(value - before)})"
    return cell


def _metric_table(
    stage: str,
    cols: Sequence[Column],
    metrics: Sequence[str],
    baseline: Mapping[str, Any] | None,
) -> list[str]:
    headers = ["Metric", *(f"{md_text(c.label)} (n={c.evaluated})" for c in cols)]
    rows = [
        [md_code(m), *(_metric_cell(c, m, stage, baseline) for c in cols)]
        for m in metrics
        if any(m in c.metrics for c in cols)
    ]
    return _table(headers, rows, "l" + "r" * len(cols))


def _metrics_section(
    artifact: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    max_metrics: int,
    *,
    full: bool = True,
) -> list[str]:
    lines: list[str] = []
    headline = view.headline_metrics(artifact)
    every = view.metric_names(artifact)
    from .terminal import sparkline

    for stage in view.stage_list(artifact):
        cols = view.columns(artifact, stage)
        if not cols:
            continue
        lines.append("")
        title = f"#### Metrics · stage {md_text(stage)}"
        points = view.curve(artifact, stage, "recall")
        if len(points) > 1:
            ks = ",".join(str(k) for k, _v in points)
            title += f" · recall@K (K={ks}) {sparkline(v for _k, v in points)}"
        lines.append(title)
        lines.append("")
        lines.extend(_metric_table(stage, cols, headline, baseline))
        if full and len(every) > len(headline):
            shown = every[:max_metrics]
            lines.append("")
            lines.append(f"<details><summary>All {len(every)} metrics</summary>")
            lines.append("")
            lines.extend(_metric_table(stage, cols, shown, baseline))
            if len(every) > len(shown):
                lines.append("")
                lines.append(_more(len(every) - len(shown), "metric"))
            lines.append("")
            lines.append("</details>")
    if baseline is not None and lines:
        lines.append("")
        lines.append("_In parentheses: the change against the baseline's mean._")
    return lines


def _moves(diff: Mapping[str, Any]) -> str:
    def rank(value: Any) -> str:
        return "—" if value is None else str(value)

    moves = list(diff.get("moves") or ())
    text = "; ".join(
        f"{md_code(m.get('doc'))} {rank(m.get('before'))} → {rank(m.get('after'))}"
        for m in moves[:MOVES_SHOWN]
    )
    if len(moves) > MOVES_SHOWN:
        text += f"; +{len(moves) - MOVES_SHOWN} more"
    return text or "—"


def _drop_order(diff: Mapping[str, Any], row: Metric) -> tuple[float, str]:
    """Worst first (by the change oriented by the metric's direction: the largest drop, or
    the largest rise of a lower-is-better metric), then by query id."""
    before, after = diff.get("before"), diff.get("after")
    delta = after - before if before is not None and after is not None else 0.0
    return row.oriented(delta), str(diff.get("query_id"))


def _regressions_section(artifact: Mapping[str, Any], max_rows: int) -> list[str]:
    every = [r for r in artifact.get("regressions") or () if r.get("status") == Status.REGRESSION]
    if not every:
        return []
    failing = every[:max_rows]
    rows = view.rows_by_id(artifact)
    worse_total = sum(len(r.get("worse") or ()) for r in every)
    lines = [
        "",
        f"<details><summary>Per-query regressions: {len(every)} failing "
        f"check{'s' if len(every) != 1 else ''}, {worse_total} query drops</summary>",
    ]
    for outcome in failing:
        metric = str(outcome.get("metric"))
        worse = sorted(outcome.get("worse") or (), key=partial(_drop_order, row=metric_of(metric)))
        stage = phrases.stage_shown(outcome.get("stage"), outcome.get("baseline_stage"))
        lines.append("")
        against = gaterows.against_text(outcome)
        lines.append(
            f"**{md_code(metric, table=False)}** "
            + (f"{md_text(against)} " if against else "")
            + f"({_where(stage, outcome.get('split'), outcome.get('slice'))}): "
            f"{len(worse)} quer{'y' if len(worse) == 1 else 'ies'} got worse, worst first"
        )
        if not worse:
            continue
        lines.append("")
        table = []
        for diff in worse[:max_rows]:
            qid = str(diff.get("query_id"))
            text = phrases.shorten(view.row_text(rows.get(qid, {})), TEXT_LIMIT)
            before, after = diff.get("before"), diff.get("after")
            delta = after - before if before is not None and after is not None else None
            returned = view.top_returned(rows.get(qid, {}), outcome.get("stage"))
            table.append(
                [
                    md_code(qid) + (f" {md_text(text)}" if text else ""),
                    phrases.fmt(before),
                    phrases.fmt(after),
                    phrases.fmt_signed(delta),
                    _moves(diff),
                    ", ".join(md_code(d) for d in returned) or "—",
                ]
            )
        lines.extend(
            _table(
                [
                    "Query",
                    "Before",
                    "After",
                    "Δ",
                    "Relevant documents (rank before → after)",
                    "Now returns (top 3)",
                ],
                table,
                "lrrrll",
            )
        )
        if len(worse) > max_rows:
            lines.append("")
            lines.append(_more(len(worse) - max_rows, "query", "queries"))
    if len(every) > len(failing):
        lines.append("")
        lines.append(_more(len(every) - len(failing), "failing check"))
    lines.append("")
    lines.append("</details>")
    return lines


def _stop_section(stop: Stop) -> list[str]:
    """A refused or errored run: its reason and fix as a quote block, and that nothing is
    scored."""
    lines = [
        f"> **Reason:** {md_text(line)}" if i == 0 else f"> {md_text(line)}"
        for i, line in enumerate(stop.reason.splitlines() or [""])
    ]
    if stop.fix:
        lines.append(">")
        lines.extend(
            f"> **Fix:** {md_text(line)}" if i == 0 else f"> {md_text(line)}"
            for i, line in enumerate(stop.fix.splitlines())
        )
    lines.extend(["", f"_{md_text(phrases.STOPPED_NOTE[stop.status])}_"])
    return lines


def _errors_section(artifact: Mapping[str, Any], max_rows: int) -> list[str]:
    errors = list(artifact.get("errors") or ())
    if not errors:
        return []
    lines = ["", f"#### Failed queries ({len(errors)})", ""]
    table = [
        [
            md_code(e.get("query_id")),
            md_text(e.get("stage") or "—"),
            md_text(phrases.shorten(f"{e.get('type') or 'Error'}: {e.get('message') or ''}", 120)),
        ]
        for e in errors[:max_rows]
    ]
    lines.extend(_table(["Query", "Stage", "Error"], table))
    if len(errors) > max_rows:
        lines.append("")
        lines.append(_more(len(errors) - max_rows, "failed query", "failed queries"))
    return lines


def _abstention_section(artifact: Mapping[str, Any], *, full: bool = True) -> list[str]:
    """That scores are deduplicated, why abstention cannot be measured, and the score-floor
    sweeps (in a collapsed block; left out of a report that must be shortened)."""
    lines: list[str] = []
    for note in view.notes(artifact):
        lines.extend(["", f"_{md_text(note)}_"])
    if not full:
        return lines
    for sweep in view.sweeps(artifact):
        lines.append("")
        lines.append(f"<details><summary>Score floor sweep · {md_text(sweep.caption)}</summary>")
        lines.append("")
        rows = [
            [
                md_code(phrases.fmt_floor(row.floor)) + (" (set)" if row.chosen else ""),
                phrases.fmt(row.abstain_rate),
                phrases.fmt(row.answer_rate),
            ]
            for row in sweep.rows
        ]
        lines.extend(_table(["Floor", "`abstain_rate`", "`answer_rate`"], rows, "lrr"))
        lines.append("")
        lines.append(
            "_A query answers at a floor when its top score is at or above it; "
            "`abstain_rate` averages the no-answer queries, `answer_rate` the answerable ones._"
        )
        lines.append("")
        lines.append("</details>")
    return lines


#: How many leaks of one query the Markdown list shows (the artifact has them all).
LEAKS_PER_QUERY = 5


def _leaks_section(artifact: Mapping[str, Any], max_rows: int) -> list[str]:
    """The "Leaks" section of a run that measures ``forbidden@K`` / ``stale@K``: the table
    (documents in the top K, and their share of the top-K positions, per stage), then the
    queries with a leak at the final stage, worst first, capped at ``max_rows``."""
    found = view.leaks(artifact)
    if found is None:
        return []
    lines = ["", "#### Leaks", ""]
    lines.extend(
        _table(
            ["Leak metric", *(f"@{k}" for k in found.cutoffs)],
            [[md_text(row.label), *row.cells] for row in found.rows],
            "l" + "r" * len(found.cutoffs),
        )
    )
    lines.append("")
    lines.append(
        "_Documents in the top K the query must not see (forbidden) or that are outdated "
        "(stale), and their share of the top-K positions (lower is better)._"
    )
    if found.queries:
        largest = found.cutoffs[-1] if found.cutoffs else None
        stage = f" · {md_text(found.stage)}" if found.stage else ""
        lines.extend(["", f"Queries with a leak in the top {largest}{stage}, worst first:", ""])
        rows = []
        for query in found.queries[:max_rows]:
            shown = query.describe(md_code, md_text)
            extra = len(shown) - LEAKS_PER_QUERY
            text = "; ".join(shown[:LEAKS_PER_QUERY])
            rows.append(
                [
                    md_code(query.query_id),
                    str(len(query.leaks)),
                    text + (f"; +{extra} more" if extra > 0 else ""),
                ]
            )
        lines.extend(_table(["Query", "Leaks", "Documents"], rows, "lrl"))
        if len(found.queries) > max_rows:
            lines.append("")
            lines.append(
                _more(len(found.queries) - max_rows, "query with a leak", "queries with a leak")
            )
    if found.heldout:
        lines.extend(["", f"_{found.heldout} leaked documents in held-out queries, not named._"])
    return lines


def _footer(artifact: Mapping[str, Any]) -> list[str]:
    golden = artifact.get("golden") or {}
    name = golden.get("name") or os.path.basename(str(golden.get("path") or "")) or "—"
    fingerprint = str(golden.get("fingerprint") or "")
    splits = golden.get("splits") or {}
    split_text = ", ".join(f"{md_text(s)} {n}" for s, n in sorted(splits.items()))
    corpus = golden.get("corpus_version")
    scope = Scope.from_dict(artifact.get("heldout") or {})
    held = scope.describe(md_text(scope.heldout))
    facts = [
        f"Golden set {md_text(name)}"
        + (f" (corpus {md_text(corpus)})" if corpus else "")
        + f": {golden.get('queries', 0)} queries"
        + (f" ({split_text})" if split_text else ""),
        f"fingerprint {md_code(fingerprint[:12], table=False)} (all "
        f"{golden.get('queries', 0)} queries)"
        if fingerprint
        else "",
        held,
    ]
    redacted = int(artifact.get("redacted_queries") or 0)
    if redacted:
        facts.append(f"{redacted} held-out queries redacted")
    version = artifact.get("plugin_version")
    if version:
        facts.append(f"pytest-retrieval {md_text(version)}")
    lines = ["", " · ".join(f for f in facts if f)]
    latency = artifact.get("latency_ms") or {}
    if latency:
        parts = [
            f"{md_text(stage)} p50 {float(v.get('p50', 0.0)):.1f} ms, "
            f"p95 {float(v.get('p95', 0.0)):.1f} ms"
            for stage, v in latency.items()
        ]
        lines.append("")
        lines.append("Latency: " + " · ".join(parts))
    return lines


# --- the report ------------------------------------------------------------------------------


def render_markdown(
    artifact: Mapping[str, Any],
    *,
    baseline: BaselineLike | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_gates: int = DEFAULT_MAX_GATES,
    max_metrics: int = 60,
    max_chars: int = DEFAULT_MAX_CHARS,
    title: str = "Retrieval quality",
) -> str:
    """The Markdown report of a JSON artifact (ends with a newline).

    ``baseline`` (the baseline document or a Snapshot) adds each metric's change against the
    baseline's mean to the metric tables. ``max_rows`` caps every per-query list (and the notes,
    failed queries and failing checks detailed), ``max_gates`` the gates table, ``max_metrics``
    the full metric tables. Above ``max_chars`` (GitHub refuses comments over 65,536) the full
    metric tables go first, then the lists get shorter; the last resort is a cut with a note.
    """
    if max_rows < 1 or max_gates < 1 or max_metrics < 1 or max_chars < 1000:
        raise ValueError("max_rows, max_gates and max_metrics must be at least 1, max_chars 1000")
    document = view.baseline_document(baseline)
    full = True
    text = _render(artifact, document, max_rows, max_gates, max_metrics, title, full=full)
    # Too long for a PR comment: drop the full metric tables first, then halve the lists.
    while len(text) > max_chars:
        if full:
            full = False
        elif max_rows > 1 or max_gates > 1:
            max_rows, max_gates = max(1, max_rows // 2), max(1, max_gates // 2)
        else:
            break
        text = _render(artifact, document, max_rows, max_gates, max_metrics, title, full=full)
    if len(text) > max_chars:
        cut = text[: max_chars - 200].rsplit("\n", 1)[0]
        if cut.count("<details>") > cut.count("</details>"):
            cut += "\n\n</details>"
        text = f"{cut}\n\n{_CUT_NOTE}\n"
    return text


def _render(
    artifact: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    max_rows: int,
    max_gates: int,
    max_metrics: int,
    title: str,
    *,
    full: bool,
) -> str:
    verdict = gaterows.verdict(artifact)
    lines = [f"### {verdict.icon} {md_text(title)}: {verdict.headline}", ""]
    if verdict.stop is not None:  # no number to show: the reason, the fix, the failed queries
        lines.extend(_stop_section(verdict.stop))
        lines.extend(_errors_section(artifact, max_rows))
        lines.extend(_footer(artifact))
        return "\n".join(lines).rstrip("\n") + "\n"
    for warning in view.warnings(artifact):
        lines.extend([f"> ⚠️ {md_text(warning)}", ""])
    lines.extend(_gates_section(artifact, max_gates, max_rows))
    noise = gaterows.noise_lines(artifact)
    if noise:
        lines.append("")
        lines.extend(f"> {md_text(line)}" for line in noise)
    lines.extend(_errors_section(artifact, max_rows))
    lines.extend(_metrics_section(artifact, baseline, max_metrics, full=full))
    lines.extend(_abstention_section(artifact, full=full))
    lines.extend(_leaks_section(artifact, max_rows))
    lines.extend(_regressions_section(artifact, max_rows))
    lines.extend(_footer(artifact))
    return "\n".join(lines).rstrip("\n") + "\n"


def append_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Append ``markdown`` to the file ``$GITHUB_STEP_SUMMARY`` names; return its path.

    Returns None (and writes nothing) when the variable is unset or empty. The append is all or
    nothing (:func:`~pytest_retrieval.files.append_text`); an OSError is left to the caller
    (the plugin turns it into a warning).
    """
    path = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY", "")
    if not path:
        return None
    from ..files import append_text

    # All or nothing: a full disk leaves the summary as it was, never with a cut report.
    append_text(path, markdown if markdown.endswith("\n") else markdown + "\n")
    return path
