"""Declared gates as test items, the part without pytest: where each is collected, what it says.

The plugin collects every declared gate and budget (:mod:`.declared`) as a test item of the file
that declares it, as any test file collects its tests (so a path selection, ``--lf``, ``-k`` and
``-m`` see them). Decided here: which file collects each one (:func:`homes`), the JUnit
properties an item carries before it runs (:func:`declared_properties`) and those its outcome
adds, with its failure message (:func:`outcome_properties`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .gates import GateOutcome

if TYPE_CHECKING:
    from .declared import Budget, Threshold
    from .regression import RegressionOutcome

#: The home of declared gates without a file.
NO_FILE = Path("<retrieval-gates>")

#: A JUnit property: ``(name, value)``.
Properties = list[tuple[str, object]]

#: What a regression item reports, in this order (then the interval, then the status).
_REGRESSION_KEYS = (
    "baseline_mean",
    "current_mean",
    "delta",
    "p_value",
    "p_value_raw",
    "multiplicity",
    "family_size",
    "test",
    "detectable",
    "upper_bound",
)


def homes(
    budgets: Sequence[Budget], thresholds: Sequence[Threshold], ini: Path | None
) -> dict[Path, list[Any]]:
    """Each declared gate and budget (budgets first, the order the run always had) by the
    file that collects it: the gates file for its own lines; the ini file (``ini``) for
    ``retrieval_thresholds``, ``retrieval_regression`` and the default regression checks (the
    gates file, when there is no ini file); else no file (:data:`NO_FILE`)."""
    found: dict[Path, list[Any]] = {}
    entries: list[Threshold | Budget] = [*budgets, *thresholds]
    for entry in entries:
        origin = entry.origin
        if origin is not None and origin not in ("retrieval_thresholds", "retrieval_regression"):
            home = Path(os.path.abspath(origin))
        elif ini is not None:
            home = ini
        else:
            files = [e.origin for e in thresholds if e.origin]
            home = Path(os.path.abspath(files[0])) if files else NO_FILE
        found.setdefault(home, []).append(entry)
    return found


def declared_properties(entry: Threshold | Budget) -> Properties:
    """The item's JUnit properties before it runs (the stage, when not given, is the run's
    default stage: filled in when the gate runs)."""
    return [("source", "declared"), ("gate", entry.name), *entry.properties()]


def _set_stage(properties: Properties, stage: str | None) -> None:
    """Replace the ``stage`` property with the stage the gate was scored at."""
    if stage is None:
        return
    for index, (key, _) in enumerate(properties):
        if key == "stage":
            properties[index] = ("stage", stage)
            return
    properties.append(("stage", stage))


def outcome_properties(
    properties: Properties, outcome: GateOutcome | RegressionOutcome
) -> str | None:
    """Add what a declared threshold's or budget's outcome says to its item's JUnit
    ``properties`` (the stage it was scored at, the value or the comparison); return the
    failure message, or None when it passed."""
    _set_stage(properties, outcome.stage)
    if isinstance(outcome, GateOutcome):
        properties.extend([("value", outcome.value), ("passed", outcome.passed)])
        return None if outcome.passed else outcome.message
    for key in _REGRESSION_KEYS:
        properties.append((key, getattr(outcome, key)))
    if outcome.ci is not None:
        properties.extend([("ci_low", outcome.ci[0]), ("ci_high", outcome.ci[1])])
        properties.append(("ci_level", outcome.ci_level))
    properties.append(("status", outcome.status))
    return None if outcome.passed else outcome.message
