"""The HTML report's inline SVG charts: the recall@K / NDCG@K curves and the per-slice bars.

Built with the escaping builder (:mod:`.markup`) from the view (:mod:`.view`); nothing here
formats user text into markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..verdict import Shown
from . import phrases, view
from .markup import Markup, el
from .markup import num as _num
from .view import Column

#: Bar charts drawn at most (one per stage and metric that a slice gate names).
MAX_BAR_CHARTS = 6

_SERIES = (("recall", "#2563eb"), ("ndcg", "#ea580c"))


def _axis(left: float, right: float, y: float) -> Markup:
    """The horizontal axis line of a chart, from ``left`` to ``right`` at height ``y``."""
    return el(
        "line",
        {"class": "axis", "x1": _num(left), "x2": _num(right), "y1": _num(y), "y2": _num(y)},
    )


def _value_grid(left: float, right: float, y: Callable[[float], float]) -> list[Markup]:
    """Horizontal grid lines and labels at 0, 0.25, ..., 1 of a metric axis."""
    parts: list[Markup] = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            el(
                "line",
                {
                    "class": "grid",
                    "x1": _num(left),
                    "x2": _num(right),
                    "y1": _num(y(tick)),
                    "y2": _num(y(tick)),
                },
            )
        )
        parts.append(
            el(
                "text",
                {"x": _num(left - 6), "y": _num(y(tick) + 4), "text-anchor": "end"},
                f"{tick:g}",
            )
        )
    return parts


@dataclass(frozen=True, slots=True)
class _Series:
    family: str
    color: str
    points: Sequence[tuple[int, float]]
    baseline: bool


def _curve_series(
    artifact: Mapping[str, Any], stage: str, baseline: Mapping[str, Any] | None
) -> list[_Series]:
    runs, bases = [], []
    for family, color in _SERIES:
        points = [(k, v) for k, v in view.curve(artifact, stage, family) if v is not None]
        if points:
            runs.append(_Series(family, color, points, False))
        if baseline is not None:
            base = []
            for k, _value in view.curve(artifact, stage, family):
                mean = view.baseline_mean(baseline, stage, "overall", f"{family}@{k}")
                if mean is not None:
                    base.append((k, mean))
            if base:
                bases.append(_Series(family, color, base, True))
    return bases + runs  # the run drawn last, on top of an equal baseline


def _curve_chart(stage: str, series: Sequence[_Series]) -> Markup:
    width, height = 460.0, 250.0
    left, right, top, bottom = 42.0, 16.0, 12.0, 40.0
    plot_w, plot_h = width - left - right, height - top - bottom
    ks = sorted({k for s in series for k, _v in s.points})
    low, high = math.log(ks[0]), math.log(ks[-1])

    def x(k: int) -> float:
        if high == low:
            return left + plot_w / 2
        return left + (math.log(k) - low) / (high - low) * plot_w

    def y(v: float) -> float:
        return top + (1.0 - min(1.0, max(0.0, v))) * plot_h

    parts: list[Markup] = _value_grid(left, width - right, y)
    parts.append(_axis(left, width - right, top + plot_h))
    for k in ks:
        parts.append(
            el(
                "text",
                {"x": _num(x(k)), "y": _num(top + plot_h + 15), "text-anchor": "middle"},
                str(k),
            )
        )
    parts.append(
        el(
            "text",
            {"x": _num(left + plot_w / 2), "y": _num(height - 4), "text-anchor": "middle"},
            "K (log scale)",
        )
    )
    for s in series:
        kind = "base" if s.baseline else "run"
        coords = " ".join(f"{_num(x(k))},{_num(y(v))}" for k, v in s.points)
        parts.append(
            el(
                "polyline",
                {"class": f"line {kind} s-{s.family}", "points": coords, "stroke": s.color},
            )
        )
        for k, v in s.points:
            label = ("baseline " if s.baseline else "") + f"{s.family}@{k} = {phrases.fmt(v)}"
            parts.append(
                el(
                    "circle",
                    {
                        "class": f"pt {kind} s-{s.family}",
                        "cx": _num(x(k)),
                        "cy": _num(y(v)),
                        "r": "3" if s.baseline else "3.5",
                        "fill": None if s.baseline else s.color,
                        "stroke": s.color,
                        "data-k": str(k),
                        "data-value": phrases.fmt(v),
                    },
                    el("title", None, f"{label} (stage {stage})"),
                )
            )
    svg = el(
        "svg",
        {
            "class": "curve",
            "data-stage": stage,
            "width": _num(width),
            "height": _num(height),
            "viewBox": f"0 0 {_num(width)} {_num(height)}",
            "role": "img",
            "aria-label": f"recall@K and NDCG@K, stage {stage}",
        },
        parts,
    )
    return el("figure", None, el("figcaption", None, "stage ", el("code", None, stage)), svg)


def curves_section(artifact: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> Markup:
    figures = []
    for stage in view.stage_list(artifact):
        series = _curve_series(artifact, stage, baseline)
        if series:
            figures.append(_curve_chart(stage, series))
    if not figures:
        return el(
            "section",
            {"id": "curves"},
            el("h2", None, "Recall@K and NDCG@K"),
            el("p", {"class": "note"}, "No recall@K or NDCG@K in this run's metrics."),
        )
    legend = [
        el("span", None, el("span", {"class": "swatch recall"}), "recall@K"),
        el("span", None, el("span", {"class": "swatch ndcg"}), "NDCG@K"),
    ]
    if baseline is not None:
        legend.append(el("span", None, el("span", {"class": "swatch dashed"}), "baseline"))
    return el(
        "section",
        {"id": "curves"},
        el("h2", None, "Recall@K and NDCG@K"),
        el("div", {"class": "charts"}, figures),
        el("div", {"class": "legend"}, legend),
    )


def _gate_stage(gate: Mapping[str, Any], artifact: Mapping[str, Any]) -> str | None:
    stage = gate.get("stage")
    return str(stage) if stage else view.default_stage(artifact)


def _bar_groups(artifact: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(stage, metric) of each bar chart: those slice (or split) gates name, else a default."""
    groups: dict[tuple[str, str], None] = {}
    for gate in artifact.get("gates") or ():
        if not (gate.get("slice") or gate.get("split")) or gate.get("skipped_reason"):
            continue
        stage = _gate_stage(gate, artifact)
        metric = str(gate.get("metric"))
        if stage and any(
            metric in c.metrics and (c.split, c.slice) == (gate.get("split"), gate.get("slice"))
            for c in view.columns(artifact, stage)
        ):
            groups.setdefault((stage, metric), None)
    if groups:
        return list(groups)[:MAX_BAR_CHARTS]
    stage = view.default_stage(artifact)
    if stage is None:
        return []
    name = view.metric_near_ten(artifact, "ndcg") or next(iter(view.metric_names(artifact)), None)
    return [(stage, name)] if name else []


def _markers(
    artifact: Mapping[str, Any], stage: str, metric: str, column: Column
) -> list[Mapping[str, Any]]:
    return [
        gate
        for gate in artifact.get("gates") or ()
        if str(gate.get("metric")) == metric
        and _gate_stage(gate, artifact) == stage
        and gate.get("split") == column.split
        and gate.get("slice") == column.slice
        and not gate.get("skipped_reason")
        and isinstance(gate.get("threshold"), (int, float))
    ]


def _bar_chart(artifact: Mapping[str, Any], stage: str, metric: str) -> Markup:
    cols = view.columns(artifact, stage)
    slot = 70.0
    left, right, top, bottom = 42.0, 12.0, 16.0, 46.0
    width = max(320.0, left + right + slot * len(cols))
    height = 250.0
    plot_h = height - top - bottom

    def y(v: float) -> float:
        return top + (1.0 - min(1.0, max(0.0, v))) * plot_h

    parts: list[Markup] = _value_grid(left, width - right, y)
    for i, column in enumerate(cols):
        center = left + slot * i + slot / 2
        value = column.metrics.get(metric)
        gates = _markers(artifact, stage, metric, column)
        below = any(not g.get("passed") for g in gates)
        if value is not None:
            parts.append(
                el(
                    "rect",
                    {
                        "class": "bar below" if below else "bar",
                        "x": _num(center - 18),
                        "y": _num(y(value)),
                        "width": "36",
                        "height": _num(max(0.0, top + plot_h - y(value))),
                        "data-column": column.label,
                        "data-value": phrases.fmt(value),
                    },
                    el("title", None, f"{column.label}: {metric} = {phrases.fmt(value)}"),
                )
            )
            parts.append(
                el(
                    "text",
                    {
                        "class": "value",
                        "x": _num(center),
                        "y": _num(y(value) - 4),
                        "text-anchor": "middle",
                    },
                    phrases.fmt(value, 2),
                )
            )
        else:
            parts.append(
                el(
                    "text",
                    {"x": _num(center), "y": _num(top + plot_h - 4), "text-anchor": "middle"},
                    "n/a",
                )
            )
        for gate in gates:
            threshold = float(gate["threshold"])
            state = Shown.PASS if gate.get("passed") else Shown.FAIL
            parts.append(
                el(
                    "line",
                    {
                        "class": f"marker {state}",
                        "x1": _num(center - 26),
                        "x2": _num(center + 26),
                        "y1": _num(y(threshold)),
                        "y2": _num(y(threshold)),
                        "data-threshold": f"{threshold:g}",
                    },
                    el(
                        "title",
                        None,
                        f"gate {metric} {gate.get('op', '>=')} {threshold:g}: "
                        + ("passed" if state is Shown.PASS else "failed"),
                    ),
                )
            )
        parts.append(
            el(
                "text",
                {"x": _num(center), "y": _num(top + plot_h + 15), "text-anchor": "middle"},
                el("title", None, column.label),
                phrases.shorten(column.label, 11),
            )
        )
        parts.append(
            el(
                "text",
                {"x": _num(center), "y": _num(top + plot_h + 29), "text-anchor": "middle"},
                f"n={column.evaluated}",
            )
        )
    parts.append(_axis(left, width - right, top + plot_h))
    svg = el(
        "svg",
        {
            "class": "bars",
            "data-stage": stage,
            "data-metric": metric,
            "width": _num(width),
            "height": _num(height),
            "viewBox": f"0 0 {_num(width)} {_num(height)}",
            "role": "img",
            "aria-label": f"{metric} per slice, stage {stage}",
        },
        parts,
    )
    return el(
        "figure",
        None,
        el(
            "figcaption",
            None,
            el("code", None, metric),
            " per slice · stage ",
            el("code", None, stage),
        ),
        svg,
    )


def slices_section(artifact: Mapping[str, Any]) -> Markup:
    groups = _bar_groups(artifact)
    figures = [_bar_chart(artifact, stage, metric) for stage, metric in groups]
    return el(
        "section",
        {"id": "slices"},
        el("h2", None, "Per slice"),
        el("div", {"class": "charts"}, figures)
        if figures
        else el("p", {"class": "note"}, "No results to chart."),
        el(
            "div",
            {"class": "legend"},
            el("span", None, el("span", {"class": "swatch marker"}), "threshold of a gate"),
            el("span", None, "red bar: a gate on it failed"),
        )
        if figures
        else None,
    )


# --- the score-floor sweep ----------------------------------------------------------------------

_SWEEP_SERIES = (("abstain_rate", "#2563eb"), ("answer_rate", "#ea580c"))


def _sweep_chart(sweep: view.SweepView) -> Markup:
    """``abstain_rate`` and ``answer_rate`` against the candidate floor, the set floor marked."""
    width, height = 460.0, 250.0
    left, right, top, bottom = 42.0, 16.0, 12.0, 40.0
    plot_w, plot_h = width - left - right, height - top - bottom
    floors = [row.floor for row in sweep.rows]
    low, high = min(floors), max(floors)

    def x(value: float) -> float:
        if high == low:
            return left + plot_w / 2
        return left + (value - low) / (high - low) * plot_w

    def y(v: float) -> float:
        return top + (1.0 - min(1.0, max(0.0, v))) * plot_h

    parts: list[Markup] = _value_grid(left, width - right, y)
    axis_y = _num(top + plot_h)
    parts.append(_axis(left, width - right, top + plot_h))
    for value in sorted({low, high}):
        parts.append(
            el(
                "text",
                {"x": _num(x(value)), "y": _num(top + plot_h + 15), "text-anchor": "middle"},
                phrases.fmt_floor(value),
            )
        )
    parts.append(
        el(
            "text",
            {"x": _num(left + plot_w / 2), "y": _num(height - 4), "text-anchor": "middle"},
            "score floor",
        )
    )
    if sweep.floor is not None and low <= sweep.floor <= high:
        parts.append(
            el(
                "line",
                {
                    "class": "floor",
                    "x1": _num(x(sweep.floor)),
                    "x2": _num(x(sweep.floor)),
                    "y1": _num(top),
                    "y2": axis_y,
                },
                el("title", None, f"retrieval_score_floor = {phrases.fmt_floor(sweep.floor)}"),
            )
        )
    for name, color in _SWEEP_SERIES:
        points = [
            (row.floor, value) for row in sweep.rows if (value := getattr(row, name)) is not None
        ]
        if not points:
            continue
        coords = " ".join(f"{_num(x(f))},{_num(y(v))}" for f, v in points)
        parts.append(
            el("polyline", {"class": f"line run s-{name}", "points": coords, "stroke": color})
        )
        for f, v in points:
            parts.append(
                el(
                    "circle",
                    {
                        "class": f"pt run s-{name}",
                        "cx": _num(x(f)),
                        "cy": _num(y(v)),
                        "r": "3.5",
                        "fill": color,
                        "stroke": color,
                        "data-floor": phrases.fmt_floor(f),
                        "data-value": phrases.fmt(v),
                    },
                    el("title", None, f"{name} = {phrases.fmt(v)} at floor {phrases.fmt_floor(f)}"),
                )
            )
    svg = el(
        "svg",
        {
            "class": "sweep",
            "data-stage": sweep.stage,
            "width": _num(width),
            "height": _num(height),
            "viewBox": f"0 0 {_num(width)} {_num(height)}",
            "role": "img",
            "aria-label": f"abstain_rate and answer_rate by score floor, stage {sweep.stage}",
        },
        parts,
    )
    return el("figure", None, el("figcaption", None, sweep.caption), svg)


def abstention_section(artifact: Mapping[str, Any]) -> Markup | None:
    """The notes (deduplicated scores, abstention not measurable) and the sweep charts."""
    notes = view.notes(artifact)
    sweeps = [s for s in view.sweeps(artifact) if s.rows]
    if not notes and not sweeps:
        return None
    return el(
        "section",
        {"id": "abstention"},
        el("h2", None, "No-answer queries and duplicates"),
        [el("p", {"class": "note"}, note) for note in notes],
        el("div", {"class": "charts"}, [_sweep_chart(s) for s in sweeps]) if sweeps else None,
        el(
            "div",
            {"class": "legend"},
            el(
                "span",
                None,
                el("span", {"class": "swatch s-abstain_rate"}),
                "abstain_rate (no-answer queries)",
            ),
            el(
                "span",
                None,
                el("span", {"class": "swatch s-answer_rate"}),
                "answer_rate (answerable queries)",
            ),
            el("span", None, "dashed: the floor set"),
        )
        if sweeps
        else None,
    )
