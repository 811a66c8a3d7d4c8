"""``python -m pytest_retrieval.cli``: the same as the ``pytest-retrieval`` console script."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
