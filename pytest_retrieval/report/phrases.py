"""The phrases every report shares: numbers at fixed rounding, scope labels, one-line texts.

Builtins only. Every renderer reads them as ``phrases.fmt`` and so on; the gate rows
(:mod:`.gaterows`) word their changes with them.
"""

from __future__ import annotations

import math

from ..run.stages import stage_change

# --- numbers ---------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 4) -> str:
    """``0.8291`` (fixed decimals); ``—`` for a missing or non-finite value."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{round(value, digits) + 0.0:.{digits}f}"


def fmt_signed(value: float | None, digits: int = 4) -> str:
    """``+0.0120`` / ``-0.0305`` (never ``-0.0000``); ``—`` when missing."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{round(value, digits) + 0.0:+.{digits}f}"


def fmt_p(value: float | None) -> str:
    """``p = 0.0023`` (4 significant digits), ``p < 0.001`` below that; ``—`` when missing."""
    if value is None or not math.isfinite(value):
        return "—"
    if value < 0.001:
        return "p < 0.001"
    return f"p = {value:.4g}"


def fmt_floor(value: float) -> str:
    """A candidate floor as the setting would take it (4 significant digits)."""
    return f"{value:.4g}"


# --- words -----------------------------------------------------------------------------------


def scope_label(split: str | None, slice_: str | None) -> str:
    """``overall``, ``slice paraphrase``, ``split heldout`` or ``split heldout, slice x``."""
    parts = []
    if split:
        parts.append(f"split {split}")
    if slice_:
        parts.append(f"slice {slice_}")
    return ", ".join(parts) or "overall"


def stage_shown(stage: object, baseline_stage: object = None) -> str | None:
    """The stage a gate or check shows (values read from an artifact; anything but text is
    none): ``reranker``; for a check that compared two stages (the final stages, after a stage
    was added or removed), ``final stage: reranker in the baseline, retriever now``
    (:func:`pytest_retrieval.run.stages.stage_change`); for a check on a stage this run lacks (a
    budget's ``stage=reranker`` after the reranker was removed: incomparable), ``reranker (not
    in this run)``."""
    now = stage if isinstance(stage, str) else None
    before = baseline_stage if isinstance(baseline_stage, str) else None
    if now is None and before is not None:
        return f"{before} (not in this run)"
    return stage_change(before, now) or now


def shorten(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)].rstrip() + "…"


# --- a run with no numbers ---------------------------------------------------------------------

#: What a refused or errored run's report says under its reason and fix.
STOPPED_NOTE = {
    "refused": "No scores: this run's numbers would be meaningless, so no report shows them and "
    "no baseline is written from it.",
    "errored": "No scores: nothing ran that could be scored, so no report shows a number and no "
    "baseline is written from it.",
}


def unscored_reason(message: object, metric: object) -> str:
    """Why a gate has no value, in a few words for its one line in a gates section: the first
    clause of its message, without the metric it starts with and without the fix (the
    failure block under it has the whole message). ``recall@10 cannot be scored: every
    ranking [retriever] holds fewer than 10 documents (longest 7); ... Fix: ...`` gives
    ``cannot be scored: every ranking [retriever] holds fewer than 10 documents (longest
    7)``."""
    text = str(message or "").split("\n", 1)[0].split(" Fix: ", 1)[0]
    name = str(metric or "")
    if name and text.startswith(name + " "):
        text = text[len(name) + 1 :]
    text = text.split("; ", 1)[0].rstrip(". ")
    return shorten(text, 110) if text else "no value"
