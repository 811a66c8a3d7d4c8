"""The terminal: the ``retrieval`` summary tables and the ``retrieval gates`` verdict lines."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..session import RetrievalSession
from ..text import for_terminal

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


def render_summary(session: RetrievalSession, *, quiet: bool = False) -> list[str]:
    """The lines of the ``retrieval`` terminal section."""
    from tabulate import tabulate

    lines: list[str] = []
    golden = session.golden
    failed = session.failed_queries()
    failed_gates = [g for g in session.gate_outcomes if not g.passed and not g.skipped_reason]
    if not quiet:
        heldout = (
            f"held-out split {session.heldout_name!r} scored (aggregates only)"
            if session.unsealed and not session.show_heldout_details
            else f"held-out split {session.heldout_name!r} scored with details"
            if session.unsealed
            else f"held-out split {session.heldout_name!r} sealed"
        )
        lines.append(
            f"golden set {golden.source} · {len(golden)} queries · fingerprint "
            f"{golden.short_fingerprint} · {heldout}"
        )
        for stage in session.stages:
            headers, rows = session.table(stage)
            lines.append("")
            lines.append(f"stage: {stage}")
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
        skipped = 0
        if session.has_run:
            evaluation = session.evaluation(session.default_stage, session.settings.metric_specs)
            skipped = len(evaluation.skipped_no_relevant)
        lines.append("")
        lines.append(
            f"queries: {len(session.scorable_queries())} run, {len(failed)} failed, "
            f"{skipped} skipped in means (no relevant document: "
            f"no_relevant={session.settings.no_relevant})"
        )
        lines.extend(run_source_lines(session))
        for stage in session.stages:
            pair = session.latency_percentiles(stage)
            if pair is not None:
                lines.append(f"latency {stage}: p50 {pair[0]:.1f} ms, p95 {pair[1]:.1f} ms")
    if failed:
        if lines:  # under -q the failures are the whole section: no blank line first
            lines.append("")
        lines.append(f"{len(failed)} queries failed (they score 0 and fail the session):")
        shown = [o for o in failed if not session.is_redacted(golden[o.query_id])]
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
                f"  {len(failed) - len(shown)} held-out queries (details hidden; "
                "--retrieval-heldout-details shows them)"
            )
    warnings = session.short_rankings() if session.has_run else []
    if warnings:
        if lines:
            lines.append("")
        lines.extend(f"warning: {w.message}" for w in warnings)
    coverage = session.coverage() if session.has_run else []
    if not quiet:
        lines.extend(c.line for c in coverage if not c.low)
        machine = session.machine_judgments()
        if machine:
            total = sum(len(q.judgments) for q in golden)
            lines.append(
                f"judgments: {machine} of {total} are machine-made (labeled_by machine:...); "
                "review them before trusting gates that rest on them"
            )
    # A warning, not a failure: -q (only what failed) leaves it to the full summary.
    from ..runchecks import coverage_warnings

    low = coverage_warnings(coverage) if not quiet else []
    lines.extend(f"warning: {w['message']}" for w in low)
    if quiet and not failed and not failed_gates and not warnings and not low:
        return []
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
        f"{version}, {info.called} called, {info.stored} entries stored ({info.cache_path})"
        + ("; latency covers the called queries only" if info.cached and info.called else "")
    )
    lines.extend(f"  cache warning: {warning}" for warning in info.warnings)
    return lines


def render_gates(session: RetrievalSession, *, quiet: bool = False) -> list[str]:
    """The lines of the ``retrieval gates`` section: every gate with its verdict."""
    lines = []
    for gate in session.gate_outcomes:
        verdict = "SKIP" if gate.skipped_reason else "PASS" if gate.passed else "FAIL"
        if quiet and verdict != "FAIL":
            continue
        value = "n/a" if gate.value is None else f"{gate.value:.4f}"
        if gate.value is not None and gate.ci is not None:
            value += f" (CI {gate.ci[0]:.3f}-{gate.ci[1]:.3f})"
        where = " ".join(
            f"{k}={v}"
            for k, v in (("stage", gate.stage), ("split", gate.split), ("slice", gate.slice))
            if v
        )
        origin = gate.nodeid or gate.kind
        lines.append(
            f"{verdict} {gate.metric} {gate.op} {gate.threshold:g}: {value}"
            f"{' [' + where + ']' if where else ''} (n={gate.n}) — {origin}"
        )
    for regression in session.regression_outcomes:
        verdict = {
            "pass": "PASS",
            "improvement": "PASS",
            "skipped": "SKIP",
            "regression": "FAIL",
        }.get(regression.status, "FAIL")
        if quiet and verdict != "FAIL" and regression.status != "improvement":
            continue
        body = regression.message.splitlines()
        if regression.delta is not None and regression.baseline_mean is not None:
            assert regression.current_mean is not None
            where = " ".join(
                f"{k}={v}"
                for k, v in (
                    ("stage", regression.stage),
                    ("split", regression.split),
                    ("slice", regression.slice),
                )
                if v
            )
            p_value = "n/a" if regression.p_value is None else f"{regression.p_value:.3g}"
            detectable = (
                f"; detectable drop {regression.detectable:.4f}"
                if regression.detectable is not None
                else ""
            )
            lines.append(
                f"{verdict} {regression.metric} budget {regression.budget:.4f} [{where}]: "
                f"{regression.baseline_mean:.4f} → {regression.current_mean:.4f} "
                f"(Δ {regression.delta:+.4f}, p = {p_value}, n = {regression.n}{detectable})"
                + (
                    " — improvement: refresh the baseline"
                    if regression.status == "improvement"
                    else ""
                )
            )
            if regression.status == "pass" and regression.over_budget:
                lines[-1] += " — over budget but not significant"
            details = body
        else:  # missing, incomparable or skipped: the message says it all
            lines.append(f"{verdict} {regression.name}: {body[0]}")
            details = body[1:]
        if verdict == "FAIL":
            lines.extend(f"    {line}" for line in details)
        elif regression.warning and not quiet:
            lines.append(f"    warning: {regression.warning}")
    return lines
