"""Gates: ``Selection``, ``Score``, ``GateOutcome``, the ``assert_*_at`` helpers (``gate``), the
declared-gate grammar and gates file (``declared``), a threshold's judgement (``judge``) and the
explanation under a failed gate (``explain``).

``from pytest_retrieval.gates import assert_recall_at`` is a documented old path: every public
name of :mod:`pytest_retrieval.gates.gate` resolves here on first use (PEP 562), so importing
this package costs nothing until a name is used.
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
