"""The HTML report's tables: the gates, the per-query changes against the baseline, the queries.

Built with the escaping builder (:mod:`.markup`) from the view (:mod:`.view`); nothing here
formats user text into markup. The page (:mod:`.html`) places them; its script sorts and
filters the query table by the ids given here (``q-table``, ``q-search``, ``q-count``).
The query table has a row per query, so each row is written as one string, escaped exactly as
``el`` escapes (``_query_row``; a test compares the bytes with the ``el``-built rows).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..golden.scope import DETAILS_HINT
from ..verdict import Shown, Status
from . import gaterows, phrases, view
from .markup import Markup, el, escape

#: Query diffs listed per regression check (the artifact holds them all).
MAX_DIFFS = 200


def _badge(status: Shown) -> Markup:
    return el("span", {"class": f"badge {status}"}, status.word)


def _td(text: object, *, num: bool = False, sort: object = None, cls: str = "") -> Markup:
    classes = " ".join(c for c in ("num" if num else "", cls) if c)
    return el(
        "td",
        {"class": classes or None, "data-sort": None if sort is None else str(sort)},
        text,
    )


def gates_section(artifact: Mapping[str, Any]) -> Markup:
    rows = gaterows.gate_rows(artifact)
    if not rows:
        return el(
            "section",
            {"id": "gates"},
            el("h2", None, "Gates"),
            el("p", {"class": "note"}, "No gates were checked in this run."),
        )
    compared = gaterows.has_regressions(rows)  # a baseline's columns only when one was compared
    head = el(
        "tr",
        None,
        [
            el("th", None, ""),
            el("th", None, "Gate"),
            el("th", None, "Source"),
            el("th", None, "Stage"),
            el("th", None, "Scope"),
            el("th", {"class": "num"}, "Value"),
            el("th", None, "Threshold / budget"),
            *(
                [
                    el(
                        "th",
                        {"class": "num"},
                        "Δ vs baseline (bound; interval)"
                        if any(r.ci_level is not None for r in rows)
                        else "Δ vs baseline [CI]",
                    ),
                    el("th", None, "Significance"),
                ]
                if compared
                else []
            ),
            el("th", {"class": "num"}, "n"),
            el("th", None, "Note"),
        ],
    )
    body = []
    for row in rows:
        change = row.change
        body.append(
            el(
                "tr",
                {"class": row.status, "data-status": row.status},
                [
                    _td(_badge(row.status)),
                    _td(
                        [
                            el("code", None, row.metric),
                            f" {row.versus}" if row.versus else "",
                        ]
                    ),
                    _td(row.source),
                    _td(row.stage_shown or "—"),
                    _td(row.scope),
                    _td(phrases.fmt(row.value), num=True),
                    _td(row.target),
                    *([_td(change, num=True), _td(row.significance or "—")] if compared else []),
                    _td(str(row.n), num=True),
                    _td("; ".join(t for t in (row.note, row.left_out) if t), cls="note"),
                ],
            )
        )
    family = gaterows.family_line(artifact)
    return el(
        "section",
        {"id": "gates"},
        el("h2", None, "Gates"),
        el("p", {"class": "note"}, family) if family else "",
        *(el("p", {"class": "note"}, line) for line in gaterows.noise_lines(artifact)),
        el("table", {"class": "gates"}, el("thead", None, head), el("tbody", None, body)),
    )


def _moves(diff: Mapping[str, Any]) -> list[Markup]:
    def rank(value: Any) -> str:
        return "—" if value is None else str(value)

    out: list[Markup] = []
    for move in diff.get("moves") or ():
        if out:
            out.append(escape("; "))
        out.append(el("code", None, str(move.get("doc"))))
        out.append(escape(f" {rank(move.get('before'))} → {rank(move.get('after'))}"))
    return out or [escape("—")]


def regressions_section(artifact: Mapping[str, Any]) -> Markup | None:
    outcomes = [r for r in artifact.get("regressions") or () if r.get("worse") or r.get("better")]
    if not outcomes:
        return None
    texts = view.rows_by_id(artifact)
    blocks = []
    for outcome in outcomes:
        status = str(outcome.get("status"))
        metric = str(outcome.get("metric"))
        stage = outcome.get("stage")
        shown = phrases.stage_shown(stage, outcome.get("baseline_stage"))
        where = (f"stage {shown or '—'}" if shown == stage else str(shown)) + ", "
        where += phrases.scope_label(outcome.get("split"), outcome.get("slice"))
        worse = list(outcome.get("worse") or ())
        better = list(outcome.get("better") or ())
        rows = []
        for label, diffs in (("worse", worse), ("better", better)):
            for diff in diffs[:MAX_DIFFS]:
                qid = str(diff.get("query_id"))
                before, after = diff.get("before"), diff.get("after")
                delta = after - before if before is not None and after is not None else None
                rows.append(
                    el(
                        "tr",
                        {"class": "fail" if label == "worse" else None},
                        [
                            _td(el("code", None, qid)),
                            _td(phrases.shorten(view.row_text(texts.get(qid, {})), 100)),
                            _td(phrases.fmt(before), num=True),
                            _td(phrases.fmt(after), num=True),
                            _td(phrases.fmt_signed(delta), num=True),
                            _td(_moves(diff)),
                        ],
                    )
                )
        hidden = max(0, len(worse) - MAX_DIFFS) + max(0, len(better) - MAX_DIFFS)
        table = el(
            "table",
            None,
            el(
                "thead",
                None,
                el(
                    "tr",
                    None,
                    [
                        el("th", None, "Query"),
                        el("th", None, "Text"),
                        el("th", {"class": "num"}, "Before"),
                        el("th", {"class": "num"}, "After"),
                        el("th", {"class": "num"}, "Δ"),
                        el("th", None, "Relevant documents (rank before → after)"),
                    ],
                ),
            ),
            el("tbody", None, rows),
        )
        blocks.append(
            el(
                "details",
                {"open": status == Status.REGRESSION, "data-status": status},
                el(
                    "summary",
                    None,
                    _badge(Shown.FAIL if status == Status.REGRESSION else Shown.PASS),
                    " ",
                    el("code", None, metric),
                    f" {gaterows.against_text(outcome)}" if gaterows.against_text(outcome) else "",
                    f" ({where}): {status}; {len(worse)} worse, {len(better)} better",
                ),
                table,
                el("p", {"class": "note"}, f"... and {hidden} more (all in the JSON artifact)")
                if hidden
                else None,
            )
        )
    return el(
        "section",
        {"id": "regressions"},
        el("h2", None, "Per-query changes against the baseline"),
        blocks,
    )


#: Queries the HTML leak table lists (the artifact has them all).
MAX_LEAK_QUERIES = 200


def leaks_section(artifact: Mapping[str, Any]) -> Markup | None:
    """The leak table of a run that measures ``forbidden@K`` / ``stale@K`` (documents in the
    top K and their share, per stage), and the queries with a leak at the final stage, worst
    first; None for a run without leak data."""
    found = view.leaks(artifact)
    if found is None:
        return None
    table = el(
        "table",
        {"id": "leak-table"},
        el(
            "thead",
            None,
            el(
                "tr",
                None,
                [
                    el("th", None, "Leak metric"),
                    *(el("th", {"class": "num"}, f"@{k}") for k in found.cutoffs),
                ],
            ),
        ),
        el(
            "tbody",
            None,
            [
                el("tr", None, [_td(row.label), *(_td(cell, num=True) for cell in row.cells)])
                for row in found.rows
            ],
        ),
    )
    rows = [
        el(
            "tr",
            {"class": "fail"},
            [
                _td(el("code", None, query.query_id)),
                _td(len(query.leaks), num=True),
                _td([el("div", None, line) for line in query.describe()]),
            ],
        )
        for query in found.queries[:MAX_LEAK_QUERIES]
    ]
    queries = (
        el(
            "table",
            {"id": "leak-queries"},
            el(
                "thead",
                None,
                el(
                    "tr",
                    None,
                    [
                        el("th", None, "Query"),
                        el("th", {"class": "num"}, "Leaks"),
                        el("th", None, f"Documents ({found.stage or 'final stage'})"),
                    ],
                ),
            ),
            el("tbody", None, rows),
        )
        if rows
        else None
    )
    hidden = len(found.queries) - len(rows)
    return el(
        "section",
        {"id": "leaks"},
        el("h2", None, "Leaks"),
        el(
            "p",
            {"class": "note"},
            "Documents in the top K the query must not see (forbidden) or that are outdated "
            "(stale), and their share of the top-K positions (lower is better).",
        ),
        table,
        queries,
        el("p", {"class": "note"}, f"... and {hidden} more (all in the JSON artifact)")
        if hidden
        else None,
        el(
            "p",
            {"class": "note"},
            f"{found.heldout} leaked documents in held-out queries, not named ({DETAILS_HINT}).",
        )
        if found.heldout
        else None,
    )


def _query_metrics(artifact: Mapping[str, Any]) -> list[str]:
    k = view.largest_k(artifact)
    names = view.metric_names(artifact)
    wanted = []
    ndcg = view.metric_near_ten(artifact, "ndcg")
    if ndcg is not None:
        wanted.append(ndcg)
    if k is not None and f"recall@{k}" in names:
        wanted.append(f"recall@{k}")
    return wanted


def queries_section(artifact: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> Markup:
    stages = view.stage_list(artifact)
    final = view.default_stage(artifact)
    metrics = _query_metrics(artifact)
    k = view.largest_k(artifact)
    heads = [
        el("th", {"data-key": "id"}, "Query"),
        el("th", {"data-key": "text"}, "Text"),
        el("th", {"data-key": "split"}, "Split"),
        el("th", {"data-key": "slices"}, "Slices"),
    ]
    for stage in stages:
        heads.append(
            el(
                "th",
                {"class": "num", "data-type": "number", "data-key": f"rank-{stage}"},
                "1st relevant ",
                el("code", None, stage),
            )
        )
    for metric in metrics:
        heads.append(
            el(
                "th",
                {"class": "num", "data-type": "number", "data-key": metric},
                metric,
                " ",
                el("code", None, final) if final else "",
            )
        )
    heads.append(el("th", {"data-key": "missed"}, f"Relevant not in top {k}" if k else "Missed"))
    heads.append(el("th", {"data-key": "returned"}, f"Top {view.RETURNED_SHOWN} returned"))
    heads.append(
        el("th", {"class": "num", "data-type": "number", "data-key": "latency"}, "Latency ms")
    )
    heads.append(el("th", {"data-key": "error"}, "Error"))
    rows = [
        _query_row(artifact, row, stages, final, metrics, baseline)
        for row in artifact.get("queries") or ()
    ]
    # One Markup of every row, joined once: the table's body as el() would have built it.
    body = Markup("".join(rows))
    redacted = int(artifact.get("redacted_queries") or 0)
    notes = []
    if redacted:
        notes.append(
            el(
                "p",
                {"class": "note", "id": "redacted"},
                f"{redacted} held-out queries are not listed (aggregates only; {DETAILS_HINT}).",
            )
        )
    if baseline is None:
        notes.append(
            el(
                "p",
                {"class": "note"},
                "Without a baseline, documents the baseline had found cannot be marked as lost.",
            )
        )
    return el(
        "section",
        {"id": "queries"},
        el("h2", None, "Queries"),
        el(
            "div",
            {"class": "search"},
            el(
                "input",
                {
                    "id": "q-search",
                    "type": "search",
                    "placeholder": "Filter: id, text, slice, document…",
                    "aria-label": "filter the queries",
                },
            ),
            " ",
            el("span", {"id": "q-count", "class": "note"}, f"{len(rows)} queries"),
            el("span", {"class": "note"}, " · click a column header to sort"),
        ),
        el(
            "div",
            {"class": "scroll"},
            el(
                "table",
                {"id": "q-table", "class": "sortable"},
                el("thead", None, el("tr", None, heads)),
                el("tbody", None, body),
            ),
        ),
        notes,
    )


def _attr(value: object) -> str:
    return html.escape(str(value), quote=True)


def _cell(content: str, classes: str | None, sort: object = None) -> str:
    """``_td`` of already escaped ``content``, as text: ``<td class=".." data-sort="..">``."""
    head = "<td"
    if classes:
        head += f' class="{classes}"'
    if sort is not None:
        head += f' data-sort="{_attr(sort)}"'
    return f"{head}>{content}</td>"


def _query_row(
    artifact: Mapping[str, Any],
    row: Mapping[str, Any],
    stages: Sequence[str],
    final: str | None,
    metrics: list[str],
    baseline: Mapping[str, Any] | None,
) -> str:
    """One row of the query table, the bytes ``el`` builds (``tr`` of ``_td`` cells), written
    as one string: the table has a row per query, and a tree of ``el`` calls per row cost
    seconds at 100,000 queries. Every text and attribute value is escaped here as ``el``
    escapes it (a test compares the two)."""
    escape_text = html.escape
    qid = str(row.get("id"))
    code_id = f"<code>{escape_text(qid)}</code>"
    slices = ", ".join(str(s) for s in row.get("slices") or ())
    cells = [
        f"<td>{code_id}</td>",
        f"<td>{escape_text(view.row_text(row))}</td>",
        f"<td>{escape_text(str(row.get('split') or ''))}</td>",
        f"<td>{escape_text(slices)}</td>",
    ]
    for stage in stages:
        rank, text = view.first_relevant_rank(artifact, row, stage)
        cells.append(_cell(escape_text(text), "num", "" if rank is None else rank))
    values = (row.get("metrics") or {}).get(final) or {}
    for metric in metrics:
        value = values.get(metric)
        cells.append(_cell(escape_text(phrases.fmt(value)), "num", "" if value is None else value))
    missed = view.missed_relevant(artifact, qid, final, baseline) if final else []
    parts = []
    for doc in missed:
        code = f"<code>{escape_text(doc.doc)}</code>"
        if doc.lost:
            title = _attr(f"the baseline ranked it {doc.baseline_rank}")
            note = escape_text(f" (lost; baseline #{doc.baseline_rank})")
            code = f'<span class="lost" title="{title}">{code}{note}</span>'
        parts.append(code)
    cells.append(_cell(escape_text(", ").join(parts), None, len(missed)))
    returned = view.top_returned(row, final)
    shown = ", ".join(f"<code>{escape_text(r)}</code>" for r in returned) if returned else "—"
    cells.append(_cell(shown, None))
    latency = [v for v in (row.get("latency_ms") or {}).values() if isinstance(v, (int, float))]
    total = sum(latency) if latency else None
    cells.append(
        _cell("—" if total is None else f"{total:.1f}", "num", "" if total is None else total)
    )
    error = row.get("error")
    error_text = (
        f"[{error.get('stage')}] {error.get('type')}: {error.get('message')}" if error else ""
    )
    cells.append(_cell(escape_text(error_text), "err" if error else None))
    head = f'<tr data-id="{_attr(qid)}"'
    if error:
        head += ' class="fail"'
    if any(d.lost for d in missed):
        head += ' data-lost="1"'
    return head + ">" + "".join(cells) + "</tr>"
