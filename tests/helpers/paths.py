"""Where the tests find the repository: the one home of every path a test computes.

The tests sit in folders by kind (``tests/unit/<package>/``, ``tests/plugin/``, ...), so a test
never derives the repository root from its own ``__file__``: it imports these.
"""

from __future__ import annotations

from pathlib import Path

#: The helpers folder (this file's), on ``sys.path`` through pyproject's ``pythonpath``.
HELPERS = Path(__file__).resolve().parent
#: The repository root.
ROOT = HELPERS.parent.parent
#: The package's source folder.
PACKAGE = ROOT / "pytest_retrieval"
#: ``../shared`` beside the repository: peer suites and datasets (never copied in).
SHARED = ROOT.parent / "shared"
#: The report golden files (``report-pass.json``, ``report-fail.md``, ...).
GOLDEN_FILES = HELPERS / "golden"
