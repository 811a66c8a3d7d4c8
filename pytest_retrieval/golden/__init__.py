"""The labelled data, without a file format: ``Query``, ``GoldenSet`` and their rules
(``model``), the held-out policy (``scope``) and the leakage guard (``leakage``).

``pytest_retrieval.golden.load_golden`` is a documented old path: it resolves on first use
(PEP 562) from :mod:`pytest_retrieval.formats.golden_io`, where the loader lives with the file
formats (which sit above this package and import it).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name != "load_golden":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = import_module("pytest_retrieval.formats.golden_io").load_golden
    globals()[name] = value  # resolved once; later lookups skip this function
    return value
