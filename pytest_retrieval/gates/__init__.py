"""Gates: ``Selection``, ``Score``, ``GateOutcome``, the ``assert_*_at`` helpers (``gate``), the
declared-gate grammar and gates file (``declared``), a threshold's judgement (``judge``) and the
explanation under a failed gate (``explain``).

``from pytest_retrieval.gates import assert_recall_at`` is a documented old path: every public
name of :mod:`pytest_retrieval.gates.gate` resolves here on first use (PEP 562), so importing
this package costs nothing until a name is used.

Modules:

* ``gate``: ``Selection`` (``Selection.matches``: which queries a selection covers), ``Score``,
  ``GateOutcome`` (``GateOutcome.of``: the one way a gate's record is made), the assertion and
  score helpers (``helper_call``: how a message names one), a gate's source (``gate_source``).
* ``declared``: the one line grammar for thresholds and budgets (``parse_threshold``,
  ``parse_budget``), the gates file, the one ``slice=*`` expansion, the default budgets.
* ``judge``: a threshold gate's outcome from its score (passed or not, its message); the record
  of a gate without a value (sealed, unscorable).
* ``explain``: the worst queries of a selection and what they missed; the explanation under a
  failed gate (``explain_score``); the leaks of a ranking (``find_leaks``: what the
  zero-tolerance gate names and every report counts).

Decisions that live here:

* which queries a selection covers: ``gate.Selection.matches``;
* a gate's record: ``gate.GateOutcome.of`` (through ``judge.judge`` and ``judge.unscored``);
* the line grammar of gates and budgets, ``slice=*``: ``declared``;
* a threshold gate's pass or fail, and its message: ``judge``;
* which forbidden or stale documents a stage's rankings hold, with rank, kind and cache:
  ``explain.find_leaks`` (the gate's message, the summary and the reports read it).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from importlib import import_module

    gate = import_module(f"{__name__}.gate")
    if name.startswith("_") or not hasattr(gate, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(gate, name)
    globals()[name] = value  # resolved once; later lookups skip this function
    return value
