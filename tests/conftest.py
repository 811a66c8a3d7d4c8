"""Shared fixtures for the test suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings as _hypothesis_settings
from paths import SHARED
from plugin_helpers import RetrievalProject

# Speed is measured in benchmarks/, never asserted: no Hypothesis example has a deadline (its
# default, 200 ms, failed property tests on a loaded CI machine with nothing wrong).

_hypothesis_settings.register_profile("pytest-retrieval", deadline=None)
_hypothesis_settings.load_profile("pytest-retrieval")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the repository: peer suites and datasets (never copied in)."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the peer suites and datasets live beside the repository")
    return SHARED


@pytest.fixture(scope="session")
def trec_eval_dir(shared_dir: Path) -> Path:
    """trec_eval's own test files (qrels, runs and expected outputs)."""
    return shared_dir / "peer-suites" / "trec_eval"


@pytest.fixture
def retrieval_project(pytester: pytest.Pytester) -> RetrievalProject:
    """A user project (golden set, ini, conftest, tests) in a pytester folder; see
    ``plugin_helpers``."""
    return RetrievalProject(pytester)
