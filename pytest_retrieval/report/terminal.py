"""The terminal: the ``retrieval`` summary tables and the ``retrieval gates`` verdict lines, or
for a refused or errored run its reason and fix (:func:`render_stop`) in their place."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..gates.gate import Selection
from ..golden.model import Query
from ..golden.scope import DETAILS_HINT
from ..regression.outcome import RegressionOutcome, describe_left_out
from ..scoring.metrics import metric_of
from ..session.session import RetrievalSession
from ..settings.options import DEFAULT_ALPHA
from ..text import for_terminal, plural
from ..verdict import Status
from .phrases import unscored_reason

_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Iterable[float | None]) -> str:
    """A unicode sparkline of values in [0, 1] (a space where a value is missing)."""
    out = []
    for value in values:
        if value is None:
            out.append(" ")
        else:
            out.append(_BARS[min(len(_BARS) - 1, max(0, int(value * len(_BARS) - 1e-9)))])
    return "".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


#: The width the summary is fitted to when the caller does not say (a wide terminal).
DEFAULT_WIDTH = 120


def render_summary(
    session: RetrievalSession,
    *,
    quiet: bool = False,
    full: bool = False,
    width: int = DEFAULT_WIDTH,
) -> list[str]:
    """The lines of the ``retrieval`` terminal section, as a list of sections.

    Compact by default: per stage, a pivot table of the overall scores (metric families as rows,
    the cutoffs K as columns) and a small table of the slices with only the headline and gated
    metrics, both fitted to ``width``. ``full`` (``-v`` or ``retrieval_summary = full``) shows
    every metric at every K by slice instead. Under ``quiet`` (``-q``) only what needs
    attention is left: failed queries and warnings (nothing at all when there is none).
    Sections are separated by one blank line; add a new kind of line as a new section.
    """
    sections: list[list[str]] = []
    if not quiet:
        sections.append(_fit(_header(session, relative=not full), 1 << 30 if full else width))
        for stage in session.stages:
            sections.append(
                _stage_full(session, stage) if full else _stage_compact(session, stage, width)
            )
        sections.append(leak_lines(session, width=1 << 30 if full else width))
        sections.append(_run_facts(session, full=full, width=width))
    sections.append(_failed_queries(session))
    # The full table is as wide as it needs to be: its prose is not wrapped either.
    sections.append(_warnings(session, quiet=quiet, width=1 << 30 if full else width))
    failed_gates = [g for g in session.gate_outcomes if not g.passed and not g.skipped_reason]
    if quiet and not any(sections) and not failed_gates:
        return []
    lines: list[str] = []
    for section in sections:
        if not section:
            continue
        if lines:
            lines.append("")
        lines.extend(section)
    return lines


def _fit(text: str, width: int) -> list[str]:
    """One line of prose as lines of at most ``width`` characters (continuations indented)."""
    import textwrap

    if len(text) <= width:
        return [text]
    return textwrap.wrap(
        text,
        width=max(width, 40),
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def fingerprint_label(session: RetrievalSession) -> str:
    """``fingerprint a1b2c3d4e5f6 (all 40 queries)``: the header's fingerprint and what it covers
    (every query of the golden set; the baseline's covers the non-held-out ones)."""
    golden = session.golden
    return f"fingerprint {golden.short_fingerprint} (all {plural(len(golden), 'query', 'queries')})"


def _header(session: RetrievalSession, *, relative: bool = False) -> str:
    golden = session.golden
    source = str(golden.source)
    if relative:  # the compact header names the file as the user would type it
        import os

        try:
            shown = os.path.relpath(source)
        except ValueError:  # another drive (Windows)
            shown = source
        source = source if shown.startswith("..") else shown
    heldout = session.scope.describe(repr(session.scope.heldout))
    return f"golden set {source} · {len(golden)} queries · {fingerprint_label(session)} · {heldout}"


def _stage_full(session: RetrievalSession, stage: str) -> list[str]:
    """Every metric at every K, by overall, slice and held-out (``-v``)."""
    from tabulate import tabulate

    from .summary import refused, table

    specs = session.settings.metric_specs
    no_number = refused(session.ranked_run(), stage, specs)
    headers, rows = table(
        session.evaluation(stage, specs), _scored_columns(session), specs, no_number
    )
    lines = [f"stage: {stage}"]
    lines.extend(
        tabulate(
            [[_cell(v) for v in row] for row in rows],
            headers=headers,
            disable_numparse=True,
        ).splitlines()
    )
    recall = [row for row in rows if str(row[0]).startswith("recall@")]
    if len(recall) > 1:
        curve = sparkline(row[1] for row in recall)
        ks = ",".join(str(row[0]).split("@")[1] for row in recall)
        lines.append(f"recall@K curve (K={ks}): {curve}")
    return lines


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    from tabulate import tabulate

    # "plain": no rule under the header, so that a stage fits on a screen with its slices.
    return tabulate(rows, headers=headers, disable_numparse=True, tablefmt="plain").splitlines()


def _fitted_table(
    headers: list[str], rows: list[list[str]], width: int, keep: int
) -> tuple[list[str], int]:
    """The table with columns dropped from the right (never the first ``keep``) until it fits;
    the lines and how many columns were dropped."""
    dropped = 0
    lines = _table(headers, rows)
    while max(map(len, lines)) > width and len(headers) > keep:
        headers, rows = headers[:-1], [row[:-1] for row in rows]
        dropped += 1
        lines = _table(headers, rows)
    return lines, dropped


def _stage_compact(session: RetrievalSession, stage: str, width: int) -> list[str]:
    """The overall scores as families x K, then the slices on the headline and gated metrics
    (slices with no query to score are left out; :func:`_run_facts` names them)."""
    from ..scoring.metrics import MetricSpec
    from .summary import refused, shown_means

    specs = session.settings.metric_specs
    evaluation = session.evaluation(stage, specs)
    columns = _scored_columns(session)
    overall = evaluation.restrict(q.id for q in columns[0][1])
    run = session.ranked_run()
    overall_means = shown_means(overall, refused(run, stage, specs))
    ks = sorted({s.k for s in specs if s.k is not None})
    families: dict[str, dict[int | None, float | None]] = {}
    for spec in sorted(specs, key=lambda s: s.sort_key):
        families.setdefault(spec.name, {})[spec.k] = overall_means[str(spec)]
    has_plain = any(None in row for row in families.values())
    headers = [
        f"{stage} (n={overall.evaluated})",
        *(f"@{k}" for k in ks),
        *(["(no K)"] if has_plain else []),
    ]
    rows = [
        [
            family,
            *(_cell(values[k]) if k in values else "" for k in ks),
            *([_cell(values[None]) if None in values else ""] if has_plain else []),
        ]
        for family, values in families.items()
    ]
    lines, dropped = _fitted_table(headers, rows, width, keep=2)
    if dropped:
        lines.append(f"({dropped} more cutoffs not shown: -v shows every metric)")
    wanted = summary_metrics(session, stage)
    if not wanted or len(columns) < 2:
        return lines
    wanted_specs = tuple(MetricSpec.parse(name) for name in wanted)
    by_slice = session.evaluation(stage, wanted_specs)
    no_number = refused(run, stage, wanted_specs)
    headers = ["slice", *wanted]
    rows = []
    for label, queries in columns:
        sub = by_slice.restrict(q.id for q in queries)
        means = shown_means(sub, no_number)
        if any(means[m] is not None for m in wanted):  # a row of dashes says nothing
            rows.append(
                [
                    f"{label} (n={sub.evaluated or len(queries)})",
                    *(_cell(means[m]) for m in wanted),
                ]
            )
    table, dropped = _fitted_table(headers, rows, width, keep=2)
    if dropped:  # a row whose shown columns are all dashes says nothing
        kept = len(headers) - dropped
        rows = [row for row in rows if any(cell != "—" for cell in row[1:kept])]
        table, dropped = _fitted_table(headers, rows, width, keep=2)
    lines.extend(table)  # no blank line: its "slice" header sets it apart
    if dropped:
        noun = "metric" if dropped == 1 else "metrics"
        lines.append(f"({dropped} more gated {noun} not shown: -v shows every metric)")
    return lines


def leak_lines(session: RetrievalSession, *, width: int = DEFAULT_WIDTH) -> list[str]:
    """The leak table: per stage, ``forbidden@K`` and ``stale@K`` over the overall queries at
    each leak cutoff (:func:`.artifact.leak_cutoffs`), each cell the count of leaked documents
    in the top K and, in brackets, the metric (their share of the top-K positions), fitted to
    ``width`` (the largest cutoffs dropped first, and said). Nothing when the run can measure
    neither (:func:`.artifact.leak_facts`), so a project without leak data prints what it
    always did."""
    from .artifact import leak_facts

    facts = leak_facts(session) if session.has_run else None
    if facts is None:
        return []
    block = facts.block
    ks = block["cutoffs"]
    cells: dict[tuple[str, str], dict[int, str]] = {}
    for row in block["results"]:
        if row["column"] != "overall":
            continue
        name, _, k = row["metric"].partition("@")
        share = "—" if row["share"] is None else f"{row['share']:.4f}"
        cells.setdefault((row["stage"], name), {})[int(k)] = f"{row['documents']} ({share})"
    several = len(session.stages) > 1
    overall = session.select(Selection())
    headers = [f"leaks (n={len(overall)})", *(f"@{k}" for k in ks)]
    rows = [
        [f"{name} [{stage}]" if several else name, *(values.get(k, "") for k in ks)]
        for (stage, name), values in cells.items()
    ]
    table, dropped = _fitted_table(headers, rows, width, keep=2)
    lines = ["leaks in the top K: documents counted (their share of the top-K positions)", *table]
    if dropped:
        lines.append(f"({dropped} more cutoffs not shown: -v shows every K)")
    return lines


def _scored_columns(session: RetrievalSession) -> list[tuple[str, list[Query]]]:
    """The summary's columns (overall, each slice, held-out when unsealed) and their queries."""
    from .summary import columns

    return [(label, session.select(s)) for label, s in columns(session.golden, session.scope)]


def empty_slices(session: RetrievalSession) -> list[str]:
    """The summary's slices with no query to score (e.g. only no-answer queries under
    ``no_relevant = skip``): the compact summary leaves them out and says so once."""
    if not session.has_run:
        return []
    evaluation = session.evaluation(session.default_stage, session.settings.metric_specs)

    def has_value(queries: list[Any]) -> bool:
        # A no-answer slice has no recall, but it has an abstain_rate when a floor is set.
        sub = evaluation.restrict(q.id for q in queries)
        return sub.evaluated > 0 or any(v is not None for v in sub.means.values())

    return [label for label, queries in _scored_columns(session)[1:] if not has_value(queries)]


def summary_metrics(session: RetrievalSession, stage: str) -> list[str]:
    """The compact slice table's metrics for one stage: the headline ones (recall at the
    largest K, the candidate recall a reranker depends on; NDCG at 10 or the nearest K below;
    MRR) and every metric a gate, declared or asserted, or a regression budget checks at that
    stage; in table order."""
    from ..scoring.metrics import MetricSpec

    families = {s.name for s in session.settings.metric_specs}
    ks = sorted({s.k for s in session.settings.metric_specs if s.k is not None})
    wanted: set[MetricSpec] = set()
    if "recall" in families and ks:
        wanted.add(MetricSpec("recall", ks[-1]))
    if "ndcg" in families and ks:
        below = [k for k in ks if k <= 10]
        wanted.add(MetricSpec("ndcg", below[-1] if below else ks[0]))
    if "mrr" in families:
        wanted.add(MetricSpec("mrr"))
    final = session.default_stage
    for threshold in session.thresholds:
        if (threshold.selection.stage or final) == stage:
            wanted.add(threshold.spec)
    for budget in session.budgets:
        if (budget.selection.stage or final) == stage:
            wanted.add(budget.spec)
    for gate in session.gate_outcomes:
        if (gate.stage or final) == stage and not gate.skipped_reason:
            try:
                wanted.add(MetricSpec.parse(gate.metric))
            except ValueError:  # a recorded name this version cannot parse (InputError): not shown
                continue
    return [str(s) for s in sorted(wanted, key=lambda s: s.sort_key)]


def _run_facts(session: RetrievalSession, *, full: bool, width: int) -> list[str]:
    """How many queries ran, where the run came from, and the latency."""
    skipped = 0
    failed = session.failed_queries()
    if session.has_run:
        evaluation = session.evaluation(session.default_stage, session.settings.metric_specs)
        skipped = len(evaluation.skipped_no_relevant)
    empty = [] if full else empty_slices(session)
    queries = (
        f"queries: {len(session.scorable_queries())} run, {len(failed)} failed, "
        f"{skipped} skipped in means (no relevant document: "
        f"no_relevant={session.settings.no_relevant})"
        + (f"; not shown, no query to score: slice {', '.join(empty)}" if empty else "")
    )
    lines = [queries] if full else _fit(queries, width)
    from .summary import depth_facts, depth_line, latency_percentiles

    facts = depth_facts(session.depth_plan, session.outcomes)
    depth = depth_line(facts, session.effective_depth, full=full)
    if depth is not None:
        lines.extend([depth] if full else _fit(depth, width))
    for line in run_source_lines(session):
        lines.extend(_fit(line, width) if not full else [line])
    lines.extend(abstention_lines(session, verbose=full))
    latencies = []
    for stage in session.stages:
        pair = latency_percentiles(session.outcomes, stage)
        if pair is None:
            continue
        if full:
            lines.append(f"latency {stage}: p50 {pair[0]:.1f} ms, p95 {pair[1]:.1f} ms")
        else:
            latencies.append(f"{stage} p50 {pair[0]:.1f} ms, p95 {pair[1]:.1f} ms")
    if latencies:
        lines.append("latency: " + "; ".join(latencies))
    # One line each, unwrapped (CI logs are grepped for them); a deterministic probe is news only
    # in the full summary (the artifact always has it).
    noise = noise_lines(session)
    if full or (session.probe is not None and session.probe.noisy):
        lines.extend(noise)
    return lines


def render_stop(session: RetrievalSession) -> list[str]:
    """The lines of a stopped run (refused or errored): the reason and the fix as one block,
    first; then, for an errored run, the queries that failed. No table: the run has no
    meaningful number to show."""
    stop = session.stop
    if stop is None:
        return []
    lines = stop.text.splitlines()
    if not stop.is_refusal:
        failed = _failed_queries(session, head="queries that failed:")
        if failed:
            lines.extend(["", *failed])
    return lines


def _failed_queries(session: RetrievalSession, *, head: str | None = None) -> list[str]:
    """The queries whose retriever call failed (they score 0 and fail the session)."""
    failed = session.failed_queries()
    if not failed:
        return []
    golden = session.golden
    n = len(failed)
    lines = [
        head or f"{n} quer{'y' if n == 1 else 'ies'} failed (they score 0 and fail the session):"
    ]
    shown = [o for o in failed if not session.scope.redacted(golden[o.query_id])]
    for outcome in shown[:20]:
        # The id and the exception's message are user text: escaped to one line each.
        lines.append(
            f"  {for_terminal(outcome.query_id)} [{outcome.error_stage}] "
            f"{for_terminal(outcome.error_type)}: {for_terminal(outcome.error)}"
        )
    if len(shown) > 20:
        lines.append(f"  ... and {len(shown) - 20} more (see the JSON artifact)")
    if len(shown) < len(failed):  # counted, never named (the held-out guard)
        lines.append(
            f"  {len(failed) - len(shown)} held-out queries (details hidden; {DETAILS_HINT})"
        )
    return lines


def _warnings(session: RetrievalSession, *, quiet: bool, width: int) -> list[str]:
    """Findings that make numbers meaningless where they apply; shown in every mode (the cache
    warnings are part of the run facts unless ``quiet`` hides those)."""
    lines: list[str] = []
    from ..session import findings

    found = findings.short_rankings(session) if session.has_run else []
    for finding in found:
        lines.extend(_fit(f"warning: {finding.message}", width))
    info = session.run_info
    if quiet and info is not None:
        for warning in info.warnings:
            lines.extend(_fit(f"cache warning: {warning}", width))
    stale = session.probe.stale_warning() if session.probe is not None else None
    if stale is not None:  # the scores are the cache's, not the retriever's
        lines.extend(_fit(f"warning: {stale}", width))
    if not quiet and session.has_run:
        # Low judgment coverage where the gates look: a warning, not a failure (-q, only what
        # failed, leaves it to the full summary).
        from ..run.checks import coverage_warnings

        # Coverage facts one line each; the warning is fitted to the width like the others.
        coverage = findings.coverage(session)
        lines.extend(c.line for c in coverage if not c.low)
        machine = session.machine_judgments()
        if machine:
            total = sum(len(q.judgments) for q in session.golden)
            lines.append(
                f"judgments: {machine} of {total} are machine-made (labeled_by machine:...); "
                "review them before trusting gates that rest on them"
            )
        for low in coverage_warnings(coverage):
            text = low["message"] if width >= 1 << 20 else low["short"]  # full: every cutoff
            lines.extend(_fit(f"warning: {text}", width))
    return lines


def noise_lines(session: RetrievalSession) -> list[str]:
    """The determinism probe's finding, and the advice when a noisy pipeline meets a
    single-run baseline."""
    probe = session.probe
    if probe is None:
        return []
    lines = [probe.describe()]
    baseline = session.baseline
    if probe.noisy and baseline is not None and baseline.n_runs < 2:
        lines.append(
            "the baseline is a single run of a nondeterministic pipeline: its own noise is "
            "compared as if it were quality, and a lucky run makes later builds look worse; "
            "rebuild it from several runs (--retrieval-update-baseline --retrieval-baseline-runs 5)"
        )
    return lines


def family_line(outcomes: Iterable[Any]) -> str | None:
    """``7 regression checks, family-wise alpha 0.05, maxT (...)`` from the checks' records."""
    from ..regression.family import describe

    for outcome in outcomes:
        if outcome.multiplicity is not None and outcome.family_size:
            alpha = outcome.alpha if outcome.alpha is not None else DEFAULT_ALPHA
            return describe(outcome.family_size, alpha, outcome.multiplicity, outcome.test)
    return None


def abstention_lines(session: RetrievalSession, *, verbose: bool = False) -> list[str]:
    """That scores are deduplicated, why abstention cannot be measured, and (``verbose``) the
    sweep of candidate score floors per stage."""
    from tabulate import tabulate

    lines: list[str] = []
    if not session.has_run:
        return lines
    if session.duplicates is not None:
        import os

        source = session.duplicates.source.replace(os.getcwd() + os.sep, "")
        if len(session.duplicates):
            described = session.duplicates.describe().replace(os.getcwd() + os.sep, "")
            lines.append(f"scores are deduplicated: {described}")
        else:  # a file whose every document has its own group, say: it changes nothing
            lines.append(
                f"scores are not deduplicated: no two documents are copies by {source} "
                "(documents that share a group are copies)"
            )
    specs = session.settings.metric_specs
    for stage in session.stages:
        evaluation = session.evaluation(stage, specs)
        reason = evaluation.unmeasured.get("abstain_rate") or evaluation.unmeasured.get(
            "answer_rate"
        )
        if reason is not None:
            lines.append(f"abstain_rate, answer_rate [{stage}]: cannot be measured: {reason}")
    if not verbose:
        return lines
    from ..scoring import abstention

    for stage in session.stages:
        found = session.abstention_sweep(stage)
        if found is None or not found.no_answer:
            continue
        floor = abstention.describe_floor(found.floor)
        lines.append("")
        lines.append(
            f"score floor sweep [{stage}] ({found.no_answer} no-answer, {found.answerable} "
            f"answerable queries; floor {floor}{', marked *' if found.floor is not None else ''}):"
        )
        rows = [
            [
                f"{point.floor:.4g}" + (" *" if point.floor == found.floor else ""),
                _cell(point.abstain_rate),
                _cell(point.answer_rate),
            ]
            for point in found.points
        ]
        lines.extend(
            tabulate(
                rows, headers=["floor", "abstain_rate", "answer_rate"], disable_numparse=True
            ).splitlines()
        )
    return lines


def run_source_lines(session: RetrievalSession) -> list[str]:
    """Where the run came from: how many queries the cache served, or which run files were
    gated and what they lacked."""
    info = session.run_info
    if info is None:
        return []
    lines: list[str] = []
    version = f", index version {info.index_version}" if info.index_version else ""
    if info.source == "run files":
        for stage, path in info.run_files:
            lines.append(f"run file ({stage}): {path}{version}; the retriever was not called")
            missing, hidden = info.missing.get(stage, ()), info.missing_hidden.get(stage, 0)
            if missing or hidden:
                named = ", ".join(missing[:10]) + (
                    f" and {len(missing) - 10} more" if len(missing) > 10 else ""
                )
                extra = f"{', ' if named else ''}{hidden} held-out (not named)" if hidden else ""
                lines.append(
                    f"  {len(missing) + hidden} judged queries missing from the run, scored "
                    f"as empty rankings: {named}{extra}"
                )
            unknown = info.unknown.get(stage, ())
            if unknown:
                named = ", ".join(unknown[:10]) + (
                    f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
                )
                lines.append(
                    f"  {len(unknown)} query ids in the run are not in the golden set "
                    f"(ignored): {named}"
                )
        return lines
    if info.cache_mode == "off":
        return []
    total = info.cached + info.called
    lines.append(
        f"cache {info.cache_mode}: {info.cached} of {total} queries served from the cache"
        f"{version}, {info.called} called, {info.stored} stored"
        + ("; latency covers the called queries only" if info.cached and info.called else "")
    )
    lines.extend(f"  cache warning: {warning}" for warning in info.warnings)
    return lines


def _bound_and_detectable(regression: RegressionOutcome) -> tuple[str, str]:
    """The one-sided bound and the detectable change of a check's summary line, worded by its
    metric's direction: ``, 95% upper bound -0.0040`` and ``; detectable drop 0.0120`` (for a
    lower-is-better metric, ``lower bound`` and ``detectable rise``). A detectable change of 0
    (every changed query moved by the same amount: nothing to size it from, the check's message
    says so) is not shown."""
    row, level = metric_of(regression.metric), regression.upper_level
    bound = (
        f", {level:.0%} {row.bound_side} bound {regression.upper_bound:+.4f}"
        if regression.upper_bound is not None and level is not None
        else ""
    )
    if regression.detectable == 0.0:
        return bound, ""
    if regression.detectable is not None:
        return bound, f"; detectable {row.worsening} {regression.detectable:.4f}"
    return bound, "; none detectable" if regression.detectable_reason else ""


def render_gates(session: RetrievalSession, *, quiet: bool = False) -> list[str]:
    """The lines of the ``retrieval gates`` section: every gate with its verdict."""
    lines = []
    for gate in session.gate_outcomes:
        verdict = gate.status.shown.word
        if quiet and verdict != "FAIL":
            continue
        value = "n/a" if gate.value is None else f"{gate.value:.4f}"
        if gate.value is None and not gate.skipped_reason and not gate.passed:
            # Why there is no number, in short (the failure block has the whole message).
            value += f" ({unscored_reason(gate.message, gate.metric)})"
        if gate.value is not None and gate.ci is not None:
            value += f" (CI {gate.ci[0]:.3f}-{gate.ci[1]:.3f})"
        where = " ".join(
            f"{k}={v}"
            for k, v in (("stage", gate.stage), ("split", gate.split), ("slice", gate.slice))
            if v
        )
        origin = gate.nodeid or gate.kind
        count = f" (n={gate.n})" if gate.value is not None or gate.skipped_reason else ""
        lines.append(
            f"{verdict} {gate.metric} {gate.op} {gate.threshold:g}: {value}"
            f"{' [' + where + ']' if where else ''}{count} — {origin}"
        )
    family = family_line(session.regression_outcomes)
    if family is not None and not quiet:
        lines.append(family)
    for regression in session.regression_outcomes:
        verdict = regression.status.shown.word
        if quiet and verdict != "FAIL" and regression.status is not Status.IMPROVEMENT:
            if regression.warning:  # noise the budget cannot see through: said under -q too
                lines.append(f"warning: {regression.name}: {regression.warning}")
            continue
        body = regression.message.splitlines()
        if regression.delta is not None and regression.baseline_mean is not None:
            assert regression.current_mean is not None
            change = regression.stage_change
            where = " ".join(
                f"{k}={v}"
                for k, v in (
                    ("stage", None if change else regression.stage),
                    ("split", regression.split),
                    ("slice", regression.slice),
                )
                if v
            )
            ref = regression.baseline
            # Which ledger entry it was judged against, after the scope (the baseline file is
            # one per run: named once in the summary).
            against = f" {ref.describe()}" if ref is not None and ref.source != "file" else ""
            if regression.since and not against:  # an anchored budget: judged since its anchor
                where = (
                    f"{where}, since={regression.since}" if where else f"since={regression.since}"
                )
            if change:  # a stage was added or removed: say which two were compared
                where = f"{change}; {where}" if where else change
            p_value = "n/a" if regression.p_value is None else f"{regression.p_value:.3g}"
            adjusted = regression.family_size > 1 and regression.multiplicity != "none"
            if regression.p_value_raw is not None and adjusted:
                p_value += f" adjusted, raw {regression.p_value_raw:.3g}"
            bound, detectable = _bound_and_detectable(regression)
            lines.append(
                f"{verdict} {regression.metric} budget {regression.budget:.4f} [{where}]{against}: "
                f"{regression.baseline_mean:.4f} → {regression.current_mean:.4f} "
                f"(Δ {regression.delta:+.4f}{bound}, p = {p_value}, n = {regression.n}"
                f"{detectable})"
                + (
                    " — improvement: refresh the baseline"
                    if regression.status is Status.IMPROVEMENT
                    else ""
                )
            )
            if regression.status is Status.PASS and regression.over_budget:
                lines[-1] += " — over budget but not significant"
            details = body
        else:  # missing, incomparable or skipped: the message says it all
            lines.append(f"{verdict} {regression.name}: {body[0]}")
            details = body[1:]
        if verdict == "FAIL":
            lines.extend(f"    {line}" for line in details)
            show_left_out = False  # the message's intersect line names them in full
        else:
            if regression.warning and not quiet:
                lines.append(f"    warning: {regression.warning}")
            show_left_out = not quiet
        left_out = describe_left_out(regression.left_out, regression.n)
        if left_out and show_left_out:
            lines.append(f"    {left_out}")
    return lines
