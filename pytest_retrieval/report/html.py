"""The HTML report: one self-contained file (inline CSS, inline SVG, a small inline script).

:func:`render_html` turns the JSON artifact dict into a page with the verdict, a recall@K /
NDCG@K curve per stage (the baseline as a dashed second line when a baseline document is given),
a per-slice bar chart with the gates' thresholds as markers, the gates table, the per-query
regressions, and a searchable, sortable per-query table (rank of the first relevant document,
relevant documents outside the top K, lost ones marked against the baseline). Held-out rows are
absent exactly as in the artifact. The charts are drawn in :mod:`.svg` and the tables built in
:mod:`.html_tables`; this module is the page around them (its head and policy, the style, the
script, the header and the footer).

Nothing is loaded from anywhere: a Content-Security-Policy forbids every network fetch and lets
only this module's own script and style run (by hash). Every string from the artifact is
escaped: markup is built with :func:`el`, which escapes every text child and attribute value, so
no user text is ever formatted into HTML.

The script adds search and sort to the query table and records what the browser sees on
``<body>`` (``data-points``, ``data-bars``, ``data-markers``, ``data-rows``, ``data-visible``,
``data-js="ready"``) so a headless-browser test can check the rendered DOM. The address's
fragment pre-sets them: ``report.html#filter=refund&sort=rank-reranker&order=desc``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from ..golden.scope import Scope
from . import gaterows, phrases, view
from .html_tables import gates_section, leaks_section, queries_section, regressions_section
from .markup import Markup, el
from .svg import abstention_section, curves_section, slices_section
from .view import BaselineLike

# --- constant style and script ----------------------------------------------------------------

_CSS = """
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --pass: #1a7f37; --fail: #cf222e; --skip: #9a6700; --bg-soft: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color: var(--fg); margin: 0 auto; padding: 20px 28px 40px; max-width: 1240px; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 28px 0 10px; border-bottom: 1px solid var(--line);
  padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
code, .mono { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.verdict { font-size: 18px; font-weight: 600; padding: 10px 14px; border-radius: 6px;
  margin: 8px 0; }
.verdict.pass { background: #dafbe1; color: #116329; border: 1px solid #a6e9b6; }
.verdict.fail { background: #ffebe9; color: #a40e26; border: 1px solid #ffc1bc; }
.facts { color: var(--muted); margin: 4px 0; }
.warning { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 10px; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
figcaption { font-weight: 600; margin: 0 0 4px 4px; }
svg text { font: 11px -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  fill: var(--muted); }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .axis { stroke: #8c959f; stroke-width: 1; }
svg .line { fill: none; stroke-width: 2; }
svg .line.base { stroke-dasharray: 5 4; stroke-width: 1.5; }
svg .pt.base { fill: #fff; stroke-width: 1.5; }
svg .floor { stroke: #59636e; stroke-width: 1.5; stroke-dasharray: 4 3; }
.swatch.s-abstain_rate { background: #2563eb; }
.swatch.s-answer_rate { background: #ea580c; }
svg .bar { fill: #54aeff; }
svg .bar.below { fill: #ff8182; }
svg .marker { stroke-width: 2.5; }
svg .marker.pass { stroke: #1f2328; }
svg .marker.fail { stroke: var(--fail); }
svg .value { fill: var(--fg); }
.legend { color: var(--muted); margin: 6px 2px; }
.legend span { margin-right: 14px; white-space: nowrap; }
.swatch { display: inline-block; width: 18px; height: 3px; vertical-align: middle;
  margin-right: 5px; }
.swatch.recall { background: #2563eb; } .swatch.ndcg { background: #ea580c; }
.swatch.dashed { background: repeating-linear-gradient(90deg, #59636e 0 5px, transparent 5px 9px); }
.swatch.marker { background: #1f2328; height: 3px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; }
th, td { border: 1px solid var(--line); padding: 4px 7px; text-align: left;
  vertical-align: top; }
th { background: var(--bg-soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
.scroll { overflow-x: auto; }
.badge { display: inline-block; font-size: 11px; font-weight: 700; padding: 1px 6px;
  border-radius: 10px; color: #fff; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.badge.skip { background: var(--skip); }
tr.fail td { background: #fff5f5; }
tr.skip td { color: var(--muted); }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " ▲"; }
table.sortable th[aria-sort="descending"]::after { content: " ▼"; }
.lost { color: var(--fail); font-weight: 600; }
.err { color: var(--fail); }
.note { color: var(--muted); }
.search { margin: 4px 0 8px; }
.search input { font: inherit; padding: 5px 8px; width: 320px; border: 1px solid var(--line);
  border-radius: 6px; }
details { margin: 6px 0; }
summary { cursor: pointer; }
footer { margin-top: 30px; color: var(--muted); font-size: 12px; }
""".strip()

_SCRIPT = """
(function () {
  "use strict";
  var body = document.body;
  function count(selector) { return document.querySelectorAll(selector).length; }
  body.setAttribute("data-points", String(count("svg .pt")));
  body.setAttribute("data-bars", String(count("svg .bar")));
  body.setAttribute("data-markers", String(count("svg .marker")));
  var table = document.getElementById("q-table");
  var input = document.getElementById("q-search");
  var counter = document.getElementById("q-count");
  if (table && table.tBodies.length && table.tHead) {
    var tbody = table.tBodies[0];
    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var rows = Array.prototype.slice.call(tbody.rows);
    body.setAttribute("data-rows", String(rows.length));
    var filter = function () {
      var needle = input ? input.value.toLowerCase() : "";
      var visible = 0;
      rows.forEach(function (row) {
        var hit = row.textContent.toLowerCase().indexOf(needle) !== -1;
        row.hidden = !hit;
        if (hit) { visible += 1; }
      });
      if (counter) { counter.textContent = visible + " of " + rows.length + " queries"; }
      body.setAttribute("data-visible", String(visible));
      var first = rows.filter(function (row) { return !row.hidden; })[0];
      body.setAttribute("data-first-row", first ? first.getAttribute("data-id") : "");
    };
    var sortBy = function (th, descending) {
      var index = heads.indexOf(th);
      var numeric = th.getAttribute("data-type") === "number";
      var direction = descending ? -1 : 1;
      heads.forEach(function (cell) { cell.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var key = function (row) {
        var cell = row.cells[index];
        var raw = cell.getAttribute("data-sort");
        if (raw === null) { raw = cell.textContent; }
        if (!numeric) { return raw.toLowerCase(); }
        return raw === "" ? Infinity : parseFloat(raw);
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === y) { return 0; }
        if (x === Infinity) { return 1; }
        if (y === Infinity) { return -1; }
        return x < y ? -direction : direction;
      });
      rows.forEach(function (row) { tbody.appendChild(row); });
      filter();
    };
    heads.forEach(function (th) {
      th.addEventListener("click", function () {
        sortBy(th, th.getAttribute("aria-sort") === "ascending");
      });
    });
    if (input) { input.addEventListener("input", filter); }
    var params = new URLSearchParams(window.location.hash.slice(1));
    if (input && params.has("filter")) { input.value = params.get("filter"); }
    var wanted = params.get("sort");
    var target = heads.filter(function (th) { return th.getAttribute("data-key") === wanted; })[0];
    if (target) { sortBy(target, params.get("order") === "desc"); } else { filter(); }
  }
  body.setAttribute("data-js", "ready");
}());
""".strip()


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


#: No fetch of any kind; only this module's script and style run.
CSP = (
    "default-src 'none'; "
    f"script-src '{_sha256(_SCRIPT)}'; "
    f"style-src '{_sha256(_CSS)}'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


# --- header and footer ------------------------------------------------------------------------


def _header(artifact: Mapping[str, Any]) -> Markup:
    verdict = gaterows.verdict(artifact)
    golden = artifact.get("golden") or {}
    name = golden.get("name") or golden.get("path") or "golden set"
    scope = Scope.from_dict(artifact.get("heldout") or {})
    held_text = scope.describe(scope.heldout)
    fingerprint = str(golden.get("fingerprint") or "")
    facts = [
        el("span", None, "golden set ", el("strong", None, str(name))),
        f" · {golden.get('queries', 0)} queries",
        " · fingerprint ",
        el("code", {"title": fingerprint}, fingerprint[:12]),
        f" (all {golden.get('queries', 0)} queries) · {held_text}",
    ]
    if golden.get("corpus_version"):
        facts.append(f" · corpus {golden['corpus_version']}")
    return el(
        "header",
        None,
        el("h1", None, "Retrieval report"),
        el(
            "p",
            {"class": f"verdict {'pass' if verdict.passed else 'fail'}", "id": "verdict"},
            f"{verdict.word}: {verdict.headline}",
        ),
        el("p", {"class": "facts"}, facts),
        *(el("p", {"class": "warning"}, "⚠️ ", w) for w in view.warnings(artifact)),
    )


def _stop_section(artifact: Mapping[str, Any]) -> Markup:
    """A refused or errored run: the reason, the fix, that nothing is scored, and the first
    failed queries (an empty string for a run with numbers)."""
    stop = gaterows.verdict(artifact).stop
    if stop is None:
        return Markup("")
    errors = list(artifact.get("errors") or ())
    shown = [
        el(
            "li",
            None,
            el("code", None, str(e.get("query_id"))),
            f" [{e.get('stage') or '—'}] {e.get('type') or 'Error'}: {e.get('message') or ''}",
        )
        for e in errors[:20]
    ]
    if len(errors) > 20:
        shown.append(el("li", None, f"... and {len(errors) - 20} more (the JSON artifact)"))
    return el(
        "section",
        {"id": "stop"},
        el("h2", None, f"Why the run was {stop.status}"),
        el("pre", {"class": "mono", "id": "reason"}, stop.reason),
        el("p", None, el("strong", None, "Fix: "), stop.fix) if stop.fix else None,
        el("p", {"class": "facts"}, phrases.STOPPED_NOTE[stop.status]),
        el("h3", None, f"Failed queries ({len(errors)})") if errors else None,
        el("ul", None, *shown) if errors else None,
    )


def _footer(artifact: Mapping[str, Any]) -> Markup:
    settings = artifact.get("settings") or {}
    retriever = (artifact.get("retriever") or {}).get("name")
    parts = [
        f"pytest-retrieval {artifact.get('plugin_version') or ''}".strip(),
        f"created {artifact.get('created')}" if artifact.get("created") else "",
        f"retriever {retriever}" if retriever else "",
        "K = " + ", ".join(str(k) for k in settings.get("ks") or ()),
        f"gain {settings.get('gain')}" if settings.get("gain") else "",
        f"min grade {settings.get('min_grade')}" if settings.get("min_grade") else "",
        f"no relevant: {settings.get('no_relevant')}" if settings.get("no_relevant") else "",
    ]
    latency = artifact.get("latency_ms") or {}
    for stage, pair in latency.items():
        parts.append(
            f"latency {stage} p50 {float(pair.get('p50', 0.0)):.1f} ms, "
            f"p95 {float(pair.get('p95', 0.0)):.1f} ms"
        )
    return el("footer", None, " · ".join(p for p in parts if p))


# --- the page ---------------------------------------------------------------------------------


def render_html(
    artifact: Mapping[str, Any],
    *,
    baseline: BaselineLike | None = None,
    title: str = "Retrieval report",
) -> str:
    """The HTML report of a JSON artifact: one self-contained document (ends with a newline).

    ``baseline`` (the baseline document or a Snapshot) draws the baseline's recall@K / NDCG@K
    as dashed lines and marks relevant documents the baseline ranked inside the top K and this
    run lost.
    """
    document = view.baseline_document(baseline)
    verdict = gaterows.verdict(artifact)
    golden = artifact.get("golden") or {}
    name = golden.get("name") or golden.get("path") or ""
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("title", None, f"{verdict.word} · {title}" + (f" · {name}" if name else "")),
        el("style", None, Markup(_CSS)),
    )
    if verdict.stop is not None:  # no number to draw: the reason, the fix, the failed queries
        body = el(
            "body",
            {"data-verdict": verdict.stop.status},
            _header(artifact),
            _stop_section(artifact),
            _footer(artifact),
            el("script", None, Markup(_SCRIPT)),
        )
        return "<!DOCTYPE html>\n" + el("html", {"lang": "en"}, head, body) + "\n"
    body = el(
        "body",
        {"data-verdict": "pass" if verdict.passed else "fail"},
        _header(artifact),
        curves_section(artifact, document),
        slices_section(artifact),
        abstention_section(artifact),
        gates_section(artifact),
        leaks_section(artifact),
        regressions_section(artifact),
        queries_section(artifact, document),
        _footer(artifact),
        el("script", None, Markup(_SCRIPT)),
    )
    return "<!DOCTYPE html>\n" + el("html", {"lang": "en"}, head, body) + "\n"
