"""The ledger's history: per metric and slice, the values over the last entries, a sparkline,
an advisory trend test; for ``pytest-retrieval ledger show|trend``.

:func:`series` reads the means of the usable entries (``ok`` runs on a clean tree, oldest
first) for a metric, a stage (default: each entry's final stage) and a column (``overall`` or
``slice:<name>``). :func:`trend_test` is the Mann-Kendall test of a monotonic trend (the sign of
every later-minus-earlier pair, ties counted as no sign, the normal approximation with the tie
correction of the variance) with Sen's slope (the median of the pairwise slopes, per entry): it
is **advisory**, never a gate (successive entries are different commits, not samples of one
pipeline, and a regression check is what gates). :func:`render` writes the terminal table,
Markdown, or a self-contained HTML page with one line plot per series.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..run.stages import final_stage, pipeline_order
from .ledger import LedgerEntry

#: The sparkline's eight levels, lowest first.
SPARKS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True)
class Series:
    """One metric of one column over the entries that have it."""

    metric: str
    column: str
    stage: str
    commits: tuple[str, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Trend:
    """The Mann-Kendall test of one series (advisory)."""

    s: int
    p_value: float | None  # two-sided; None below 3 values
    slope: float | None  # Sen's slope, per entry

    def describe(self) -> str:
        if self.p_value is None or self.slope is None:
            return "trend: too few entries"
        direction = "falling" if self.slope < 0 else "rising" if self.slope > 0 else "flat"
        marked = " (significant at 0.05)" if self.p_value <= 0.05 and self.slope != 0 else ""
        return f"{direction} {self.slope:+.4f}/entry, Mann-Kendall p = {self.p_value:.3g}{marked}"


def sparkline(values: Sequence[float]) -> str:
    """``▁▃▅█``: each value's level between the series' minimum and maximum (all equal: a flat
    middle line)."""
    if not values:
        return ""
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return SPARKS[3] * len(values)
    span = high - low
    # The level nearest to the value's place in the range; 1e-9 keeps a value exactly half-way
    # (0.84 of 0.80..0.88) from falling a level on float noise.
    return "".join(SPARKS[min(7, int((v - low) / span * 7 + 0.5 + 1e-9))] for v in values)


def trend_test(values: Sequence[float]) -> Trend:
    """Mann-Kendall S, its two-sided p-value (normal approximation, tie-corrected variance,
    continuity correction) and Sen's slope."""
    n = len(values)
    if n < 3:
        return Trend(0, None, None)
    s = 0
    slopes = []
    for i in range(n):
        for j in range(i + 1, n):
            diff = values[j] - values[i]
            if abs(diff) > 1e-12:
                s += 1 if diff > 0 else -1
            slopes.append(diff / (j - i))
    ties: dict[float, int] = {}
    for v in values:
        key = round(v, 9)
        ties[key] = ties.get(key, 0) + 1
    variance = (
        n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in ties.values())
    ) / 18
    if variance <= 0:
        return Trend(s, 1.0, 0.0)
    z = (s - 1) / math.sqrt(variance) if s > 0 else (s + 1) / math.sqrt(variance) if s < 0 else 0.0
    p = math.erfc(abs(z) / math.sqrt(2))
    slopes.sort()
    middle = len(slopes) // 2
    slope = slopes[middle] if len(slopes) % 2 else (slopes[middle - 1] + slopes[middle]) / 2
    return Trend(s, min(1.0, p), slope)


def _stage_of(entry: LedgerEntry, stage: str | None) -> str | None:
    stages = pipeline_order(entry.means)
    if stage is None:
        return final_stage(stages)
    return stage if stage in entry.means else None


def columns_of(entries: Sequence[LedgerEntry], stage: str | None = None) -> list[str]:
    """Every column (``overall`` first, then the slices) the entries' means have."""
    found: set[str] = set()
    for entry in entries:
        chosen = _stage_of(entry, stage)
        if chosen is not None:
            found.update(entry.means.get(chosen, {}))
    return sorted(found, key=lambda c: (c != "overall", c))


def default_metrics(entries: Sequence[LedgerEntry]) -> list[str]:
    """The metrics the newest entry's regression checks budgeted; else ndcg@10 and mrr (those
    recorded), else the first three recorded."""
    for entry in reversed(entries):
        budgeted = [str(c.get("name", "")).split("[", 1)[0] for c in entry.checks]
        if budgeted:
            return list(dict.fromkeys(m for m in budgeted if m))
    recorded: list[str] = []
    for entry in reversed(entries):
        for by_column in entry.means.values():
            for means in by_column.values():
                recorded.extend(m for m in means if m not in recorded)
        if recorded:
            break
    preferred: list[str] = [m for m in ("ndcg@10", "mrr") if m in recorded]
    return preferred or recorded[:3]


def series(
    entries: Sequence[LedgerEntry], metric: str, column: str, stage: str | None = None
) -> Series:
    """``metric`` in ``column`` over the usable ``entries`` that recorded it, oldest first."""
    commits: list[str] = []
    values: list[float] = []
    used = stage
    for entry in entries:
        if not entry.usable:
            continue
        chosen = _stage_of(entry, stage)
        if chosen is None:
            continue
        value = entry.means.get(chosen, {}).get(column, {}).get(metric)
        if value is None:
            continue
        used = used or chosen
        commits.append(entry.short)
        values.append(float(value))
    return Series(metric, column, used or "final", tuple(commits), tuple(values))


def _rows(all_series: Sequence[Series]) -> list[tuple[Series, Trend]]:
    return [(s, trend_test(s.values)) for s in all_series if s.values]


def render(all_series: Sequence[Series], fmt: str = "terminal") -> str:
    """The series as a terminal table, Markdown or an HTML page."""
    rows = _rows(all_series)
    if fmt == "markdown":
        lines = [
            "| metric | column | stage | history | first | last | values (oldest first) "
            "| trend (advisory) |",
            "|---|---|---|---|---:|---:|---|---|",
        ]
        for s, t in rows:
            values = " ".join(f"{v:.4f}" for v in s.values)
            cells = (str(v).replace("|", "\\|") for v in (s.metric, s.column, s.stage))
            metric, column, stage = cells  # a slice name holding | would split the row
            lines.append(
                f"| {metric} | {column} | {stage} | {sparkline(s.values)} | "
                f"{s.values[0]:.4f} | {s.values[-1]:.4f} | {values} | {t.describe()} |"
            )
        return "\n".join(lines) + "\n"
    if fmt == "html":
        return _html(rows)
    lines = []
    for s, t in rows:
        lines.append(
            f"{s.metric} [{s.column}, {s.stage}] {sparkline(s.values)}  {s.values[0]:.4f} → "
            f"{s.values[-1]:.4f} over {len(s.values)} entries; {t.describe()}"
        )
        lines.append("  " + " ".join(f"{c[:7]}={v:.4f}" for c, v in zip(s.commits, s.values)))
    return "\n".join(lines) + ("\n" if lines else "")


def _plot(s: Series, width: int = 480, height: int = 120) -> str:
    low, high = min(s.values), max(s.values)
    span = (high - low) or 1.0
    n = len(s.values)
    points = []
    for i, v in enumerate(s.values):
        x = 10 + (width - 20) * (i / (n - 1) if n > 1 else 0.5)
        y = height - 10 - (height - 20) * ((v - low) / span if high > low else 0.5)
        points.append((x, y, v, s.commits[i]))
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _v, _c in points)
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3"><title>{html.escape(c)}: {v:.4f}</title></circle>'
        for x, y, v, c in points
    )
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{html.escape(s.metric)} {html.escape(s.column)}">'
        f'<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="{path}"/>{dots}</svg>'
    )


def _html(rows: Sequence[tuple[Series, Trend]]) -> str:
    sections = []
    for s, t in rows:
        sections.append(
            f"<section><h2>{html.escape(s.metric)} <small>{html.escape(s.column)}, "
            f"{html.escape(s.stage)}</small></h2>{_plot(s)}<p>{s.values[0]:.4f} → "
            f"{s.values[-1]:.4f} over {len(s.values)} entries; {html.escape(t.describe())}</p>"
            "</section>"
        )
    body = "".join(sections) or "<p>No usable entries.</p>"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>pytest-retrieval: ledger trend</title><style>body{font-family:system-ui,"
        "sans-serif;margin:2em}circle{fill:#1f6feb}small{color:#57606a;font-weight:normal}"
        "</style></head><body><h1>Retrieval quality over the ledger</h1>"
        f"<p>The trend test is advisory (Mann-Kendall): regression checks gate.</p>{body}"
        "</body></html>\n"
    )


def show_rows(entries: Sequence[LedgerEntry], metrics: Sequence[str]) -> list[list[str]]:
    """One row per entry for ``ledger show``: position, when, commit, branch, status, and the
    overall value of each metric on the final stage."""
    rows = []
    for entry in entries:
        stage = _stage_of(entry, None)
        overall: Mapping[str, float | None] = (
            entry.means.get(stage, {}).get("overall", {}) if stage else {}
        )
        flags = entry.status + (" dirty" if entry.commit.dirty else "")
        values = [
            f"{v:.4f}" if isinstance(v := overall.get(m), (int, float)) else "—" for m in metrics
        ]
        rows.append(
            [
                str(entry.seq),
                entry.created,
                entry.short,
                entry.commit.branch or "—",
                flags,
                entry.label or "",
                *values,
            ]
        )
    return rows
