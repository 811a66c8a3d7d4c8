"""Gates as test items, the part without pytest: where each declared gate is collected, what
every item says.

The plugin collects every declared gate and budget (:mod:`.declared`) as a test item of the file
that declares it, as any test file collects its tests (so a path selection, ``--lf``, ``-k`` and
``-m`` see them). Decided here: which file collects each one (:func:`homes`, and
:func:`uncollected` for a whole-suite run), the items' names, the JUnit properties an item
carries before it runs (:func:`declared_properties`) and those its outcome adds, with its
failure message (:func:`outcome_properties`); for any other test, the properties of the gates it
asserted (:func:`recorded_properties`, after :func:`end_of_call` settles its Score comparisons)
and the warning for a gate it never compared.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..gates.declared import Threshold
from ..gates.gate import Gate, GateOutcome, GateUsageError, helper_call, is_pytest_outcome

if TYPE_CHECKING:
    from ..gates.declared import Budget
    from ..regression.outcome import RegressionOutcome
    from ..session.session import RetrievalSession

#: The home of declared gates without a file, and the node id they are collected under.
NO_FILE = Path("<retrieval-gates>")
NO_FILE_ID = "retrieval-gates"

#: A JUnit property: ``(name, value)``.
Properties = list[tuple[str, object]]

#: What a regression item reports, in this order (then the interval, then the status).
_REGRESSION_KEYS = (
    "baseline_stage",
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


def __tracebackhide__(excinfo: Any) -> bool:
    """pytest hides this module's frames when a declared gate is misused or skipped (as it
    hides the session's): a skip's location is the item's own test function."""
    return bool(excinfo.errisinstance(GateUsageError)) or is_pytest_outcome(excinfo)


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


def item_names(entries: Sequence[Threshold | Budget]) -> list[tuple[str, Threshold | Budget]]:
    """Each entry with its item's name: valid in ``-k`` and unique in its file (the same line
    twice: both run, each selectable, the second as ``NAME-2``)."""
    named = []
    seen: dict[str, int] = {}
    for entry in entries:
        name = entry.item_name
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}-{seen[name]}"
        named.append((name, entry))
    return named


def report_line(entry: Threshold | Budget | None, *, in_file: bool) -> int | None:
    """The 0-based line an item reports: its line of the gates file; an ini line has none
    (pytest.ini's lines are not ours), nor a gate collected without a file."""
    line = entry.line_number if entry is not None else None
    if not in_file or (entry and entry.origin is None):
        line = None
    return None if line is None else line - 1


def run_declared(
    entry: Threshold | Budget, session: RetrievalSession, properties: Properties
) -> str | None:
    """Run a declared threshold (the session's check) or budget (its regression check) and add
    what the outcome says to the item's ``properties``; the failure message, or None."""
    outcome: GateOutcome | RegressionOutcome
    if isinstance(entry, Threshold):
        outcome = session.check(
            entry.spec, entry.selection, entry.op, entry.value, kind="threshold", name=entry.name
        )
    else:
        outcome = session.regression(entry, baseline_path=str(session.settings.baseline))
    return outcome_properties(properties, outcome)


def whole_suite(args_source: str, invocation_dir: Path, rootpath: Path) -> bool:
    """True when no path was given (``args_source`` is the name of pytest's
    ``Config.ArgsSource``): ``testpaths``, or the rootdir itself. Then every declared gate
    runs, even when its file lies outside ``testpaths``; a path given (or a run from a
    subfolder) selects declared gates as it selects tests: by their file."""
    if args_source == "TESTPATHS":
        return True
    return args_source == "INVOCATION_DIR" and invocation_dir == rootpath


def uncollected(
    homes: dict[Path, list[Any]], collected: set[Path], rootpath: Path
) -> list[tuple[Path, str | None]]:
    """The homes a whole-suite run did not collect (outside ``testpaths``), each with the node
    id to collect it under: :data:`NO_FILE_ID` for :data:`NO_FILE`, a relative id for a file
    outside the rootdir (``retrieval_gates_file = ../x.yaml``), None (pytest's own) inside it."""
    missing: list[tuple[Path, str | None]] = []
    for path in homes:
        if path in collected:
            continue
        if path == NO_FILE:
            missing.append((path, NO_FILE_ID))
            continue
        inside = rootpath in path.parents
        missing.append((path, None if inside else os.path.relpath(path, rootpath)))
    return missing


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
    properties.append(("status", outcome.status.value))
    return None if outcome.passed else outcome.message


def recorded_properties(outcomes: Sequence[GateOutcome], nodeid: str) -> Properties:
    """The JUnit properties of the gates a test asserted (``outcomes`` recorded while it ran;
    a declared gate's item sets its own)."""
    found: Properties = []
    for outcome in outcomes:
        if outcome.nodeid == nodeid:
            found.extend(outcome.properties())
    return found


def end_of_call(
    session: RetrievalSession, nodeid: str, before: int, *, failed: bool
) -> tuple[Properties, list[str]]:
    """A test's call ended (``failed``: it raised, other than a skip): settle its Score
    comparisons by that outcome (:meth:`~.session.RetrievalSession.settle_test`), leave the
    test; return the JUnit properties of the gates it recorded (``before``: how many gate
    records there were when it started) and the warnings for gates it never compared."""
    session.settle_test(failed=failed)
    properties = recorded_properties(session.gate_outcomes[before:], nodeid)
    return properties, [uncompared(nodeid, gate) for gate in session.leave_test()]


def uncompared(nodeid: str, gate: Gate) -> str:
    """The warning for a gate a test created but never compared: that line gates nothing."""
    return (
        f"{nodeid}: the gate {gate!r} was created but never compared, so "
        f"it gates nothing; write e.g. `{helper_call(gate.spec)} >= 0.9`"
    )
